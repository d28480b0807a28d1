package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"

	"latchkey/pkg/account"
)

// eventResponse is an event as GET /v1/events returns it, and as the
// stores keep it: encoded once, when the change is written, so that the
// feed, the table's stream and EventBridge carry the same bytes.
type eventResponse struct {
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	CreatedAt timestamp       `json:"created_at"`
	Actor     actorResponse   `json:"actor"`
	RequestID string          `json:"request_id"`
	Data      json.RawMessage `json:"data"`
}

type actorResponse struct {
	KeyID   string  `json:"key_id"`
	TokenID *string `json:"token_id,omitempty"`
}

// EncodeEvent is the account.EventSource.Encode of every request: the
// event as GET /v1/events returns it, its object as the API returns it
// (toUser, toAPIKey, …), never a secret or a hash of one. Exported for the
// tests of what reads the stored events (the EventBridge publisher).
func EncodeEvent(e account.Event) ([]byte, error) {
	var data any
	switch d := e.Data.(type) {
	case account.User:
		data = toUser(d)
	case account.Organization:
		data = toOrganization(d)
	case account.Membership:
		data = toMembership(d)
	case account.APIKey:
		data = toAPIKey(d)
	case account.Revocation:
		data = revocationResponse{TokenID: d.TokenID, Revoked: true, RevokedAt: timestamp(d.RevokedAt)}
	default:
		return nil, fmt.Errorf("httpapi: no representation for an event about %T", e.Data)
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return nil, err
	}
	out := eventResponse{ID: e.ID, Type: e.Type, CreatedAt: timestamp(e.CreatedAt), Actor: actorResponse{KeyID: e.Actor.KeyID}, RequestID: e.RequestID, Data: raw}
	if e.Actor.TokenID != "" {
		out.Actor.TokenID = &e.Actor.TokenID
	}
	return json.Marshal(out)
}

// WithEvents is withEvents, for a Mount's handler (the console), whose
// changes record their events as the API's do.
func WithEvents(r *http.Request, p account.Principal) account.Principal {
	return withEvents(r, p)
}

// withEvents returns p with the account.EventSource of the changes it
// makes in the request r (Principal.Write). Only a request that may change
// something needs one: a GET or HEAD changes nothing (a key's last use
// records no event), so its principal is returned as it came.
func withEvents(r *http.Request, p account.Principal) account.Principal {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return p
	}
	p.Write.Events = &account.EventSource{
		Actor:     account.Actor{KeyID: p.KeyID, TokenID: p.TokenID},
		RequestID: info(r).id,
		Encode:    EncodeEvent,

		OrganizationID: p.KeyOrganizationID,
	}
	return p
}

func (s *server) listEvents(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	q := r.URL.Query()
	l, err := s.svc.ListEvents(r.Context(), p, account.EventListParams{
		PageRequest: pageRequest(r), After: q.Get("after"), Before: q.Get("before"), Types: q.Get("types"),
	})
	if err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusOK, toListResponse(l, func(e account.StoredEvent) json.RawMessage { return e.JSON }))
	return nil
}

package console

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"latchkey/pkg/account"
)

// event is an event as the feed shows it, decoded from the JSON the API
// returns for it.
type event struct {
	ID        string    `json:"id"`
	Type      string    `json:"type"`
	CreatedAt time.Time `json:"created_at"`
	Actor     struct {
		KeyID   string `json:"key_id"`
		TokenID string `json:"token_id"`
	} `json:"actor"`
	RequestID string `json:"request_id"`
	Data      struct {
		ID             string `json:"id"`
		Name           string `json:"name"`
		Email          string `json:"email"`
		Slug           string `json:"slug"`
		OrganizationID string `json:"organization_id"`
		UserID         string `json:"user_id"`
		Role           string `json:"role"`
		TokenID        string `json:"token_id"`
	} `json:"data"`
}

// Object is the id of what the event is about: a user, organization or
// key, a membership's organization, a revocation's token.
func (e event) Object() string {
	switch {
	case strings.HasPrefix(e.Type, "organization_membership."):
		return e.Data.OrganizationID
	case e.Type == account.EventTokenRevoked:
		return e.Data.TokenID
	}
	return e.Data.ID
}

// Link is the console page of the event's object; "" for one without a
// page (a token), or one deleted since.
func (e event) Link() string {
	if strings.HasSuffix(e.Type, ".deleted") && !strings.HasPrefix(e.Type, "organization_membership.") {
		return ""
	}
	switch id := e.Object(); {
	case strings.HasPrefix(id, account.PrefixUser):
		return "/console/users/" + id
	case strings.HasPrefix(id, account.PrefixOrganization):
		return "/console/organizations/" + id
	case strings.HasPrefix(id, account.PrefixAPIKey):
		return "/console/api-keys/" + id
	}
	return ""
}

// Label is what the event's object is called: its name, e-mail or slug.
func (e event) Label() string {
	switch {
	case strings.HasPrefix(e.Type, "organization_membership."):
		return e.Data.UserID + " as " + e.Data.Role
	case e.Data.Email != "":
		return e.Data.Email
	case e.Data.Slug != "":
		return e.Data.Slug
	}
	return e.Data.Name
}

// about reports whether the event concerns the object id: is about it, or
// about a membership of it.
func (e event) about(id string) bool {
	return e.Data.ID == id || e.Data.OrganizationID == id || e.Data.UserID == id || e.Data.TokenID == id
}

type eventsData struct {
	Items []event
	// Actors name the keys that made the events, by id, where the
	// session can read them and they still exist.
	Actors       map[string]string
	Type, Object string
	Next         string
	// Scanned is set when the object filter read its most pages without
	// filling one: Next goes on from there.
	Scanned bool
}

// Event feed bounds: a page shows eventsPage events; with an object
// filter, which the service does not apply, the feed reads at most
// eventScanPages pages of events to fill it.
const (
	eventsPage     = 50
	eventScanPages = 10
)

// events shows the feed, newest first, of one type and one object when the
// filter names them.
func (c *console) events(w http.ResponseWriter, r *http.Request, s *session) {
	v := newView(r, s, "Events", "events")
	q := r.URL.Query()
	d := eventsData{Type: q.Get("type"), Object: strings.TrimSpace(q.Get("object"))}
	cursor := q.Get("cursor")
	limit := "50"
	if d.Object != "" {
		limit = "100"
	}
	for i := 0; ; i++ {
		l, err := c.svc.ListEvents(r.Context(), s.p, account.EventListParams{PageRequest: account.PageRequest{Limit: limit, Cursor: cursor}, Types: d.Type})
		if err != nil {
			v.Problem = problemView(err)
			v.Data = d
			c.render(w, r, v.Problem.Status, "events", v)
			return
		}
		for _, se := range l.Items {
			var e event
			if err := json.Unmarshal(se.JSON, &e); err != nil {
				continue
			}
			if d.Object == "" || e.about(d.Object) {
				d.Items = append(d.Items, e)
			}
		}
		cursor = l.NextCursor
		if d.Object == "" || len(d.Items) >= eventsPage || cursor == "" {
			break
		}
		if i+1 == eventScanPages {
			d.Scanned = true
			break
		}
	}
	d.Next = cursor
	d.Actors = c.keyNames(r, s, d.Items)
	v.Data = d
	c.render(w, r, http.StatusOK, "events", v)
}

// keyNames reads the names of the keys that made events, once each.
func (c *console) keyNames(r *http.Request, s *session, events []event) map[string]string {
	names := map[string]string{}
	if !s.Can(account.ScopeReadAPIKeys) {
		return names
	}
	tried := map[string]bool{}
	for _, e := range events {
		id := e.Actor.KeyID
		if id == "" || tried[id] {
			continue
		}
		tried[id] = true
		if k, err := c.svc.GetAPIKey(r.Context(), s.p, id); err == nil {
			names[id] = k.Name
		}
	}
	return names
}

package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"latchkey/pkg/account"
)

// writeJSON writes v with status. Marshalling the response types cannot
// fail, so an error here would be a bug: it is logged, not hidden.
func (s *server) writeJSON(w http.ResponseWriter, r *http.Request, status int, v any) {
	b := getJSONBuffer()
	defer putJSONBuffer(b)
	if err := b.enc.Encode(v); err != nil {
		s.writeError(w, r, account.Internal(err))
		return
	}
	w.Header()["Content-Type"] = headerJSON
	w.WriteHeader(status)
	w.Write(b.Bytes())
}

// Header values of most responses, one slice each for all of them, set
// with canonical keys straight into the map: Header.Set allocates a slice
// per call. Sharing is safe because nothing changes a value in place:
// net/http copies the values when it snapshots and writes the header, and
// Set or Add on the same key replace or reallocate the slice.
var (
	headerJSON    = []string{"application/json"}
	headerNoStore = []string{"no-store"}
)

// jsonBuffer is an encoder with the buffer it writes to. Responses are
// encoded into a pooled one: a new buffer and encoder for each response
// were two allocations and the buffer's growth.
type jsonBuffer struct {
	bytes.Buffer
	enc *json.Encoder
}

var jsonBuffers = sync.Pool{New: func() any {
	b := &jsonBuffer{}
	b.enc = json.NewEncoder(&b.Buffer)
	// One line of JSON. HTML escaping is off: the API is not HTML, and
	// "\u003c" in a message only confuses a reader.
	b.enc.SetEscapeHTML(false)
	return b
}}

// maxPooledJSON is the largest buffer put back in the pool, so that one
// large list does not pin its buffer for the life of the process.
const maxPooledJSON = 64 << 10

func getJSONBuffer() *jsonBuffer { return jsonBuffers.Get().(*jsonBuffer) }

func putJSONBuffer(b *jsonBuffer) {
	if b.Cap() > maxPooledJSON {
		return
	}
	b.Reset()
	jsonBuffers.Put(b)
}

// timestamp formats t as RFC 3339 in UTC with millisecond precision, the
// precision the service keeps. It is a TextMarshaler, not a Marshaler:
// encoding/json quotes the text itself, where it would parse and compact
// what MarshalJSON returns.
type timestamp time.Time

func (t timestamp) MarshalText() ([]byte, error) {
	return time.Time(t).UTC().AppendFormat(make([]byte, 0, len(timestampLayout)), timestampLayout), nil
}

const timestampLayout = "2006-01-02T15:04:05.000Z07:00"

// optionalTime is a timestamp that may be absent: JSON null.
func optionalTime(t time.Time) *timestamp {
	if t.IsZero() {
		return nil
	}
	ts := timestamp(t)
	return &ts
}

// listResponse is the envelope of every list.
type listResponse[T any] struct {
	Data       []T     `json:"data"`
	HasMore    bool    `json:"has_more"`
	NextCursor *string `json:"next_cursor"`
}

func toListResponse[S, T any](l account.List[S], conv func(S) T) listResponse[T] {
	out := listResponse[T]{Data: make([]T, len(l.Items)), HasMore: l.HasMore}
	for i, item := range l.Items {
		out.Data[i] = conv(item)
	}
	if l.NextCursor != "" {
		out.NextCursor = &l.NextCursor
	}
	return out
}

type organizationResponse struct {
	ID         string            `json:"id"`
	Name       string            `json:"name"`
	Slug       string            `json:"slug"`
	Plan       string            `json:"plan"`
	ExternalID *string           `json:"external_id"`
	Metadata   map[string]string `json:"metadata"`
	RateLimits []rateLimitJSON   `json:"rate_limits"`
	Credits    *creditsJSON      `json:"credits"`
	CreatedAt  timestamp         `json:"created_at"`
	UpdatedAt  timestamp         `json:"updated_at"`
}

func toOrganization(o account.Organization) organizationResponse {
	return organizationResponse{o.ID, o.Name, o.Slug, o.Plan, optionalString(o.ExternalID), metadataResponse(o.Metadata), toRateLimits(o.RateLimits), toCredits(o.Credits), timestamp(o.CreatedAt), timestamp(o.UpdatedAt)}
}

type membershipResponse struct {
	OrganizationID string    `json:"organization_id"`
	UserID         string    `json:"user_id"`
	Role           string    `json:"role"`
	CreatedAt      timestamp `json:"created_at"`
	UpdatedAt      timestamp `json:"updated_at"`
}

func toMembership(m account.Membership) membershipResponse {
	return membershipResponse{m.OrganizationID, m.UserID, m.Role, timestamp(m.CreatedAt), timestamp(m.UpdatedAt)}
}

// userMembershipResponse is a membership in a user's list: the membership's
// fields and the organization's id, name and slug.
type userMembershipResponse struct {
	membershipResponse
	Organization organizationRef `json:"organization"`
}

type organizationRef struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Slug string `json:"slug"`
}

func toUserMembership(m account.UserMembership) userMembershipResponse {
	return userMembershipResponse{toMembership(m.Membership), organizationRef{m.OrganizationID, m.OrganizationName, m.OrganizationSlug}}
}

// apiKeyResponse never carries the hash. The secret appears only in the
// create response, in Key.
type apiKeyResponse struct {
	ID        string   `json:"id"`
	Name      string   `json:"name"`
	MaskedKey string   `json:"masked_key"`
	Scopes    []string `json:"scopes"`
	CreatedBy *string  `json:"created_by"`
	Bootstrap bool     `json:"bootstrap"`
	// OrganizationID and OwnerID are null when the key has none.
	OrganizationID *string          `json:"organization_id"`
	OwnerID        *string          `json:"owner_id"`
	Enabled        bool             `json:"enabled"`
	Metadata       account.Metadata `json:"metadata"`
	CreatedAt      timestamp        `json:"created_at"`
	ExpiresAt      *timestamp       `json:"expires_at"`
	// PreviousKeyExpiresAt is when the secret a rotation replaced stops;
	// null when there is none that still works.
	PreviousKeyExpiresAt *timestamp `json:"previous_key_expires_at"`
	LastUsedAt           *timestamp `json:"last_used_at"`
	// TokensRevokedBefore: every token of the key issued until then is
	// revoked (POST /v1/api-keys/{id}/tokens/revoke); null if none were.
	TokensRevokedBefore *timestamp `json:"tokens_revoked_before"`
	// RateLimits is [] and Credits null for a key without them.
	RateLimits []rateLimitJSON `json:"rate_limits"`
	Credits    *creditsJSON    `json:"credits"`
	Key        string          `json:"key,omitempty"`
}

func toAPIKey(k account.APIKey) apiKeyResponse {
	out := apiKeyResponse{
		ID:        k.ID,
		Name:      k.Name,
		MaskedKey: maskKey(k),
		Scopes:    k.Scopes,
		Bootstrap: k.Bootstrap,
		Enabled:   !k.Disabled,
		Metadata:  k.Metadata,
		CreatedAt: timestamp(k.CreatedAt),
		ExpiresAt: optionalTime(k.ExpiresAt),

		PreviousKeyExpiresAt: optionalTime(k.PreviousExpiresAt),
		LastUsedAt:           optionalTime(k.LastUsedAt),
		TokensRevokedBefore:  optionalTime(k.TokensRevokedBefore),
		RateLimits:           toRateLimits(k.RateLimits),
		Credits:              toCredits(k.Credits),
	}
	if out.Scopes == nil {
		out.Scopes = []string{}
	}
	if out.Metadata == nil {
		out.Metadata = account.Metadata{}
	}
	if k.CreatedBy != "" {
		out.CreatedBy = &k.CreatedBy
	}
	out.OrganizationID, out.OwnerID = optionalString(k.OrganizationID), optionalString(k.OwnerID)
	return out
}

// maskKey shows enough of a key to recognise it and nothing to use. A
// bootstrap or probe key comes from configuration and need not carry our
// prefix.
func maskKey(k account.APIKey) string {
	if k.Bootstrap || k.Probe {
		return "…" + k.Last4
	}
	return account.APIKeyPrefix + "…" + k.Last4
}

// tokenRecordResponse describes an issued token, never the token itself.
type tokenRecordResponse struct {
	ID        string    `json:"id"`
	KeyID     string    `json:"key_id"`
	Scopes    []string  `json:"scopes"`
	Audience  string    `json:"audience"`
	IssuedAt  timestamp `json:"issued_at"`
	ExpiresAt timestamp `json:"expires_at"`
}

func toTokenRecord(t account.TokenRecord) tokenRecordResponse {
	out := tokenRecordResponse{ID: t.ID, KeyID: t.KeyID, Scopes: t.Scopes, Audience: t.Audience, IssuedAt: timestamp(t.IssuedAt), ExpiresAt: timestamp(t.ExpiresAt)}
	if out.Scopes == nil {
		out.Scopes = []string{}
	}
	return out
}

type tokenResponse struct {
	AccessToken string    `json:"access_token"`
	TokenType   string    `json:"token_type"`
	TokenID     string    `json:"token_id"`
	Scopes      []string  `json:"scopes"`
	Audience    string    `json:"audience"`
	IssuedAt    timestamp `json:"issued_at"`
	ExpiresAt   timestamp `json:"expires_at"`
	ExpiresIn   int64     `json:"expires_in"`
}

type revocationResponse struct {
	TokenID   string    `json:"token_id"`
	Revoked   bool      `json:"revoked"`
	RevokedAt timestamp `json:"revoked_at"`
}

type verifyValidResponse struct {
	Valid     bool      `json:"valid"`
	TokenID   string    `json:"token_id"`
	KeyID     string    `json:"key_id"`
	Scopes    []string  `json:"scopes"`
	Audience  string    `json:"audience"`
	IssuedAt  timestamp `json:"issued_at"`
	ExpiresAt timestamp `json:"expires_at"`
	ExpiresIn int64     `json:"expires_in"`
	// OrganizationID and OwnerID are the key's (the token's org_id and
	// owner_id): null when it has none.
	OrganizationID *string `json:"organization_id"`
	OwnerID        *string `json:"owner_id"`
	limitsState
}

type verifyInvalidResponse struct {
	Valid  bool   `json:"valid"`
	Reason string `json:"reason"`
	limitsState
}

// limitsState is where the limits a verification counted against stand
// after it, the tightest of the key's, the keys' above it and its
// organization's (account.KeyUsage), for a resource server that shows
// them without reading the RateLimit fields: left out when it counted
// against none.
type limitsState struct {
	Credits    *creditsStateJSON `json:"credits,omitempty"`
	RateLimits []limitStateJSON  `json:"rate_limits,omitempty"`
}

type creditsStateJSON struct {
	Remaining int64 `json:"remaining"`
}

// limitStateJSON is a rate limit after a use: reset in whole seconds, as
// the RateLimit field's t.
type limitStateJSON struct {
	Name      string `json:"name"`
	Limit     int64  `json:"limit"`
	Remaining int64  `json:"remaining"`
	Reset     int64  `json:"reset"`
}

func toLimitsState(u *account.KeyUsage) limitsState {
	var out limitsState
	if u == nil {
		return out
	}
	if u.Credits != nil {
		out.Credits = &creditsStateJSON{Remaining: u.Credits.Remaining}
	}
	for _, l := range u.Limits {
		out.RateLimits = append(out.RateLimits, limitStateJSON{Name: l.Name, Limit: l.Limit, Remaining: l.Remaining, Reset: seconds(l.Reset)})
	}
	return out
}

// secondsUntil is the whole seconds from now to t, never negative.
func secondsUntil(t, now time.Time) int64 {
	return max(0, int64(t.Sub(now)/time.Second))
}

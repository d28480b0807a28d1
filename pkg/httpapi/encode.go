package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"time"

	"latchkey/pkg/account"
	"latchkey/pkg/jsonstr"
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

// writeAppended is writeJSON for a response type that encodes itself:
// without reflection, and without boxing v into an interface.
func writeAppended[T jsonAppender](w http.ResponseWriter, status int, v T) {
	b := getJSONBuffer()
	defer putJSONBuffer(b)
	b.Write(v.appendJSON(b.AvailableBuffer()))
	w.Header()["Content-Type"] = headerJSON
	w.WriteHeader(status)
	w.Write(b.Bytes())
}

// jsonAppender is a response type that encodes itself, without reflection,
// to exactly what the encoder in writeJSON would write (TestAppendJSON
// holds each to that). Only the verify responses do: verify is the hot path
// of every resource server. Of the hand-written pieces measured in issue 20
// it is one of two kept (with boltstore's key memo): encoding/json costs a
// verify 8% more instructions, and without it the local server's verify
// would lose over 10% of its throughput in all (docs/performance.md).
type jsonAppender interface {
	appendJSON(b []byte) []byte
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
	return t.appendText(make([]byte, 0, len(timestampLayout))), nil
}

// appendText appends what AppendFormat(timestampLayout) gives for t in
// UTC, written digit by digit: the general formatter, which interprets its
// layout on every call, took most of a verify body's encoding time.
func (t timestamp) appendText(b []byte) []byte {
	u := time.Time(t).UTC()
	year, month, day := u.Date()
	if year < 0 || year > 9999 {
		return u.AppendFormat(b, timestampLayout) // five digits or a sign: rare, and Format knows them
	}
	hour, minute, second := u.Clock()
	b = appendDigits(b, year, 4)
	b = append(b, '-')
	b = appendDigits(b, int(month), 2)
	b = append(b, '-')
	b = appendDigits(b, day, 2)
	b = append(b, 'T')
	b = appendDigits(b, hour, 2)
	b = append(b, ':')
	b = appendDigits(b, minute, 2)
	b = append(b, ':')
	b = appendDigits(b, second, 2)
	b = append(b, '.')
	b = appendDigits(b, u.Nanosecond()/int(time.Millisecond), 3)
	return append(b, 'Z')
}

// appendDigits appends n, 0 <= n < 10^width, in exactly width digits.
func appendDigits(b []byte, n, width int) []byte {
	for i := width - 1; i >= 0; i-- {
		d := n
		for range i {
			d /= 10
		}
		b = append(b, byte('0'+d%10))
	}
	return b
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
	CreatedAt  timestamp         `json:"created_at"`
	UpdatedAt  timestamp         `json:"updated_at"`
}

func toOrganization(o account.Organization) organizationResponse {
	return organizationResponse{o.ID, o.Name, o.Slug, o.Plan, optionalString(o.ExternalID), metadataResponse(o.Metadata), timestamp(o.CreatedAt), timestamp(o.UpdatedAt)}
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
// bootstrap key comes from configuration and need not carry our prefix.
func maskKey(k account.APIKey) string {
	if k.Bootstrap {
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
}

type verifyInvalidResponse struct {
	Valid  bool   `json:"valid"`
	Reason string `json:"reason"`
}

// appendJSON implements jsonAppender. A field added to the struct must be
// added here too: TestAppendJSON fails until it is.
func (v verifyValidResponse) appendJSON(b []byte) []byte {
	b = append(b, `{"valid":`...)
	b = strconv.AppendBool(b, v.Valid)
	b = append(b, `,"token_id":`...)
	b = jsonstr.Append(b, v.TokenID)
	b = append(b, `,"key_id":`...)
	b = jsonstr.Append(b, v.KeyID)
	b = append(b, `,"scopes":`...)
	b = appendJSONStrings(b, v.Scopes)
	b = append(b, `,"audience":`...)
	b = jsonstr.Append(b, v.Audience)
	b = append(b, `,"issued_at":"`...)
	b = v.IssuedAt.appendText(b)
	b = append(b, `","expires_at":"`...)
	b = v.ExpiresAt.appendText(b)
	b = append(b, `","expires_in":`...)
	b = strconv.AppendInt(b, v.ExpiresIn, 10)
	b = append(b, `,"organization_id":`...)
	b = appendJSONOptionalString(b, v.OrganizationID)
	b = append(b, `,"owner_id":`...)
	b = appendJSONOptionalString(b, v.OwnerID)
	return append(b, "}\n"...)
}

// appendJSON implements jsonAppender.
func (v verifyInvalidResponse) appendJSON(b []byte) []byte {
	b = append(b, `{"valid":`...)
	b = strconv.AppendBool(b, v.Valid)
	b = append(b, `,"reason":`...)
	b = jsonstr.Append(b, v.Reason)
	return append(b, "}\n"...)
}

// appendJSONOptionalString appends *s as a JSON string, or null if s is
// nil, as encoding/json does.
func appendJSONOptionalString(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return jsonstr.Append(b, *s)
}

// appendJSONStrings appends list as a JSON array, or null if it is nil, as
// encoding/json does.
func appendJSONStrings(b []byte, list []string) []byte {
	if list == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, s := range list {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonstr.Append(b, s)
	}
	return append(b, ']')
}

// secondsUntil is the whole seconds from now to t, never negative.
func secondsUntil(t, now time.Time) int64 {
	return max(0, int64(t.Sub(now)/time.Second))
}

package verifier

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
)

type claimsKey struct{}

// ClaimsFrom returns the claims of the token Require verified for the
// request whose context ctx is; false outside Require.
func ClaimsFrom(ctx context.Context) (*Claims, bool) {
	c, ok := ctx.Value(claimsKey{}).(*Claims)
	return c, ok
}

// Require returns a middleware that passes a request on only with a valid
// Bearer token holding every one of scopes (none: any valid token), with
// the token's claims in its context (ClaimsFrom). It answers, with a
// problem+json body whose code is the reason:
//
//   - 401 with WWW-Authenticate: Bearer realm="<Audience>" when there is no
//     Bearer token (RFC 6750, section 3.1: no error code then);
//   - 401 with error="invalid_token" and error_description="<reason>" when
//     the token is refused (invalid, expired, wrong_audience, revoked,
//     disabled);
//   - 403 with error="insufficient_scope" and scope="<scopes>" when it
//     lacks a scope;
//   - 429 for rate_limited and usage_exceeded (Online: the key's limits);
//   - 503 with Retry-After: 1 when its status cannot be known
//     (unavailable): the service fails closed.
func (v *Verifier) Require(scopes ...string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			token, ok := bearer(r)
			if !ok {
				v.refuse(w, &Error{Reason: ReasonNoToken}, scopes)
				return
			}
			c, err := v.Verify(r.Context(), token)
			if err != nil {
				var e *Error
				if !errors.As(err, &e) {
					e = &Error{Reason: ReasonUnavailable}
				}
				v.refuse(w, e, scopes)
				return
			}
			for _, s := range scopes {
				if !c.HasScope(s) {
					v.refuse(w, &Error{Reason: ReasonInsufficientScope, Scope: s}, scopes)
					return
				}
			}
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), claimsKey{}, c)))
		})
	}
}

// bearer returns the request's Bearer token (RFC 6750, section 2.1; the
// scheme is case-insensitive).
func bearer(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	token = strings.TrimSpace(token)
	return token, ok && strings.EqualFold(scheme, "Bearer") && token != ""
}

// problem is an RFC 9457 body.
type problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Code   string `json:"code"`
	Detail string `json:"detail"`
}

// refusals are the status and the public sentence of each reason; the
// Error's own Detail may name internals and is never sent.
var refusals = map[string]struct {
	status int
	detail string
}{
	ReasonNoToken:           {http.StatusUnauthorized, "This request needs an access token: Authorization: Bearer <token>."},
	ReasonInvalid:           {http.StatusUnauthorized, "The access token is not valid."},
	ReasonExpired:           {http.StatusUnauthorized, "The access token has expired."},
	ReasonWrongAudience:     {http.StatusUnauthorized, "The access token was issued for another audience."},
	ReasonRevoked:           {http.StatusUnauthorized, "The access token has been revoked."},
	ReasonDisabled:          {http.StatusUnauthorized, "The access token's API key is disabled."},
	ReasonInsufficientScope: {http.StatusForbidden, "The access token lacks a scope this request needs."},
	ReasonRateLimited:       {http.StatusTooManyRequests, "The access token's API key is over its rate limit."},
	ReasonUsageExceeded:     {http.StatusTooManyRequests, "The access token's API key has spent its credits."},
	ReasonUnavailable:       {http.StatusServiceUnavailable, "The access token cannot be checked right now; try again shortly."},
}

func (v *Verifier) refuse(w http.ResponseWriter, e *Error, scopes []string) {
	rf, ok := refusals[e.Reason]
	if !ok {
		rf = refusals[ReasonInvalid]
	}
	challenge := `Bearer realm="` + quoteSafe(v.cfg.Audience) + `"`
	switch rf.status {
	case http.StatusUnauthorized:
		if e.Reason != ReasonNoToken {
			challenge += `, error="invalid_token", error_description="` + e.Reason + `"`
		}
		w.Header().Set("WWW-Authenticate", challenge)
	case http.StatusForbidden:
		challenge += `, error="insufficient_scope", scope="` + quoteSafe(strings.Join(scopes, " ")) + `"`
		w.Header().Set("WWW-Authenticate", challenge)
	case http.StatusServiceUnavailable, http.StatusTooManyRequests:
		w.Header().Set("Retry-After", "1")
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(rf.status)
	json.NewEncoder(w).Encode(problem{Type: "about:blank", Title: http.StatusText(rf.status), Status: rf.status, Code: e.Reason, Detail: rf.detail})
}

// quoteSafe drops the characters a quoted-string cannot hold unescaped
// (RFC 6750, section 3: " and \).
func quoteSafe(s string) string {
	return strings.NewReplacer(`"`, "", `\`, "").Replace(s)
}

package verifier

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// verifyAnswer is the body of GET /v1/auth/verify (openapi.yaml,
// VerificationValid and VerificationInvalid).
type verifyAnswer struct {
	Valid   bool   `json:"valid"`
	Reason  string `json:"reason"`
	TokenID string `json:"token_id"`
	Credits *struct {
		Remaining int64 `json:"remaining"`
	} `json:"credits"`
	RateLimits []struct {
		Name      string `json:"name"`
		Limit     int64  `json:"limit"`
		Remaining int64  `json:"remaining"`
		Reset     int64  `json:"reset"`
	} `json:"rate_limits"`
}

// Limits is where the limits a verification counted a token against
// stand after it: of the token's API key, the keys above it and its
// organization, the tightest (verify's credits and rate_limits), for a
// resource server to show its client how much is left.
type Limits struct {
	// Credits is the credits left, nil when the verification spent none.
	Credits *int64
	// RateLimits holds, for each period, the rate limit with the fewest
	// uses left.
	RateLimits []RateLimitState
}

// RateLimitState is a rate limit after a verification.
type RateLimitState struct {
	Name      string
	Limit     int64
	Remaining int64
	// Reset is the time until the window ends, in whole seconds.
	Reset time.Duration
}

// limits returns the Limits of the answer, nil when it has none.
func (a verifyAnswer) limits() *Limits {
	if a.Credits == nil && len(a.RateLimits) == 0 {
		return nil
	}
	l := &Limits{}
	if a.Credits != nil {
		l.Credits = &a.Credits.Remaining
	}
	for _, r := range a.RateLimits {
		l.RateLimits = append(l.RateLimits, RateLimitState{Name: r.Name, Limit: r.Limit, Remaining: r.Remaining, Reset: time.Duration(r.Reset) * time.Second})
	}
	return l
}

// verifyOnline asks Latchkey's verify endpoint about token, whose offline
// checks c has passed: a forged or expired token, or one for another
// audience, costs no request. Anything but a 200 with a verdict refuses
// the token (ReasonUnavailable): the online mode never falls back to a
// weaker check.
func (v *Verifier) verifyOnline(ctx context.Context, token string, c *Claims) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, v.cfg.VerifyURL, nil)
	if err != nil {
		return refuse(ReasonUnavailable, "verify", err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := v.client.Do(req)
	if err != nil {
		return refuse(ReasonUnavailable, "verify cannot be reached", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		// The 429 of a function URL over its reserved concurrency, a 5xx.
		return refuse(ReasonUnavailable, fmt.Sprintf("verify answered %s", res.Status), nil)
	}
	var a verifyAnswer
	if err := json.NewDecoder(io.LimitReader(res.Body, maxDocumentBytes)).Decode(&a); err != nil {
		return refuse(ReasonUnavailable, "verify's answer cannot be read", err)
	}
	switch {
	case a.Valid && a.TokenID == c.TokenID:
		c.Limits = a.limits()
		return nil
	case a.Valid:
		return refuse(ReasonUnavailable, "verify answered about another token", nil)
	}
	switch a.Reason {
	case ReasonRevoked, ReasonDisabled, ReasonExpired, ReasonInvalid, ReasonRateLimited, ReasonUsageExceeded:
		return refuse(a.Reason, "verify", nil)
	}
	return refuse(ReasonInvalid, fmt.Sprintf("verify: %q", a.Reason), nil)
}

package verifier

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// verifyAnswer is the body of GET /v1/auth/verify (openapi.yaml,
// VerificationValid and VerificationInvalid).
type verifyAnswer struct {
	Valid   bool   `json:"valid"`
	Reason  string `json:"reason"`
	TokenID string `json:"token_id"`
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

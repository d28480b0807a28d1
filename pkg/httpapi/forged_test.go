package httpapi_test

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
	"time"

	"latchkey/pkg/httpapi/httpapitest"
	"latchkey/pkg/token"
)

// handMade signs header and payload, marshalled as they are, with the
// service's real signing key: what a holder of the key, or a bug in a
// signer, could produce.
func handMade(tb testing.TB, key ed25519.PrivateKey, header, payload map[string]any) string {
	tb.Helper()
	h, err := json.Marshal(header)
	if err != nil {
		tb.Fatal(err)
	}
	p, err := json.Marshal(payload)
	if err != nil {
		tb.Fatal(err)
	}
	enc := base64.RawURLEncoding
	input := enc.EncodeToString(h) + "." + enc.EncodeToString(p)
	return input + "." + enc.EncodeToString(ed25519.Sign(key, []byte(input)))
}

// TestRuleBreakingTokens sends tokens signed with the real key, for a real
// token record of a live key, that break one rule of JWT each: verify says
// invalid and every other route answers 401. Unchanged, the same hand-made
// token is valid, so each rule alone makes the difference.
func TestRuleBreakingTokens(t *testing.T) {
	a := newAPI(t)
	_, c := a.IssueToken(t, a.AdminKey, "1h", "read:users")
	header := func() map[string]any { return map[string]any{"alg": "EdDSA", "typ": "at+jwt", "kid": a.Signer.KeyID()} }
	payload := func() map[string]any {
		return map[string]any{"jti": c.ID, "sub": c.KeyID, "client_id": c.KeyID, "aud": c.Audience, "iss": httpapitest.Issuer, "scope": "read:users",
			"iat": c.IssuedAt.Unix(), "exp": c.ExpiresAt.Unix()}
	}
	with := func(m map[string]any, k string, v any) map[string]any { m[k] = v; return m }
	now := a.Clock.Now()

	verify := func(t *testing.T, tok string) map[string]any {
		t.Helper()
		res := a.do(http.MethodGet, "/v1/auth/verify", tok, nil)
		want(t, res, http.StatusOK)
		return res.Map(t)
	}
	wantInvalid := func(t *testing.T, tok string) {
		t.Helper()
		if got := verify(t, tok); got["valid"] != false || got["reason"] != "invalid" {
			t.Errorf("verify: got %v, want valid false, reason invalid", got)
		}
		wantProblem(t, a.do(http.MethodGet, "/v1/users", tok, nil), http.StatusUnauthorized, "unauthorized")
	}
	wantValid := func(t *testing.T, tok string) {
		t.Helper()
		if got := verify(t, tok); got["valid"] != true {
			t.Errorf("verify: got %v, want valid", got)
		}
		want(t, a.do(http.MethodGet, "/v1/users", tok, nil), http.StatusOK)
	}

	t.Run("Unchanged", func(t *testing.T) {
		wantValid(t, handMade(t, a.PrivateKey, header(), payload()))
	})
	for name, tok := range map[string]string{
		"CritHeader":      handMade(t, a.PrivateKey, with(header(), "crit", []string{"exp"}), payload()),
		"NotBeforeFuture": handMade(t, a.PrivateKey, header(), with(payload(), "nbf", now.Add(time.Minute).Unix())),
		"IssuedAtFuture":  handMade(t, a.PrivateKey, header(), with(payload(), "iat", now.Add(time.Hour).Unix())),
		"ExpString":       handMade(t, a.PrivateKey, header(), with(payload(), "exp", strconv.FormatInt(c.ExpiresAt.Unix(), 10))),
		"ExpString123":    handMade(t, a.PrivateKey, header(), with(payload(), "exp", "123")),
		"IatString":       handMade(t, a.PrivateKey, header(), with(payload(), "iat", strconv.FormatInt(c.IssuedAt.Unix(), 10))),
		"NbfBool":         handMade(t, a.PrivateKey, header(), with(payload(), "nbf", true)),
	} {
		t.Run(name, func(t *testing.T) { wantInvalid(t, tok) })
	}

	t.Run("ServiceClock", func(t *testing.T) {
		// The times are checked against the service's clock, not the
		// machine's: tokens from the future become valid when the
		// service's clock reaches them, while the machine's has not moved.
		iat := handMade(t, a.PrivateKey, header(), with(payload(), "iat", now.Add(token.ClockSkew+10*time.Second).Unix()))
		nbf := handMade(t, a.PrivateKey, header(), with(payload(), "nbf", now.Add(10*time.Second).Unix()))
		wantInvalid(t, iat)
		wantInvalid(t, nbf)
		a.Clock.Advance(10 * time.Second)
		wantValid(t, iat)
		wantValid(t, nbf)
	})
}

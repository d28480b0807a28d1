package httpapi_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"latchkey/pkg/account"
	"latchkey/pkg/httpapi/httpapitest"
)

// TestVerify_HeadCountsNothing: HEAD /v1/auth/verify is 405 with Allow:
// GET, before the token is read: it counts no use against the key's rate
// limits and spends none of its credits, which a verdict it never gets
// would have cost. Every other method on verify names GET alone too.
func TestVerify_HeadCountsNothing(t *testing.T) {
	env := httpapitest.NewServer(t)
	admin, err := env.Service.Authenticate(t.Context(), env.AdminKey)
	if err != nil {
		t.Fatal(err)
	}
	k, secret, err := env.Service.CreateAPIKey(t.Context(), admin, account.NewAPIKey{
		Name: "metered", Scopes: []string{account.ScopeReadUsers},
		// Two uses a minute: the token's issuance takes one.
		RateLimits: []account.RateLimitRequest{{Name: "minute", Limit: 2, Period: "1m"}},
		Credits:    &account.CreditsRequest{Remaining: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	tok, _ := env.IssueToken(t, secret, "", account.ScopeReadUsers)
	bearer := http.Header{"Authorization": {"Bearer " + tok}}

	for range 3 {
		res := env.DoRaw(t, env.Handler, http.MethodHead, "/v1/auth/verify", bearer, nil)
		env.CheckResponse(t, res)
		if res.StatusCode != http.StatusMethodNotAllowed || res.Header.Get("Allow") != http.MethodGet ||
			res.Header.Get("RateLimit") != "" {
			t.Fatalf("HEAD verify: %d, Allow %q, RateLimit %q; want 405, Allow GET, no RateLimit", res.StatusCode, res.Header.Get("Allow"), res.Header.Get("RateLimit"))
		}
	}
	got, err := env.Service.GetAPIKey(t.Context(), admin, k.ID)
	if err != nil || got.Credits == nil || got.Credits.Remaining != 1 {
		t.Fatalf("the key after three HEADs: credits %+v, %v; want 1 left", got.Credits, err)
	}
	// The one use and the one credit are still there for a GET.
	verdicts := []bool{}
	for range 2 {
		res := env.DoRaw(t, env.Handler, http.MethodGet, "/v1/auth/verify", bearer, nil)
		env.CheckResponse(t, res)
		var v struct {
			Valid bool `json:"valid"`
		}
		if err := json.Unmarshal(res.Body, &v); err != nil {
			t.Fatal(err)
		}
		verdicts = append(verdicts, v.Valid)
	}
	if !verdicts[0] || verdicts[1] {
		t.Errorf("two GETs after the HEADs: valid %v, want the first only", verdicts)
	}

	res := env.DoRaw(t, env.Handler, http.MethodPut, "/v1/auth/verify", bearer, nil)
	env.CheckResponse(t, res)
	if res.StatusCode != http.StatusMethodNotAllowed || res.Header.Get("Allow") != http.MethodGet {
		t.Errorf("PUT verify: %d, Allow %q; want 405, Allow GET", res.StatusCode, res.Header.Get("Allow"))
	}
}

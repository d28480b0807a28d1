package httpapi_test

import (
	"net/http"
	"testing"

	"latchkey/pkg/httpapi/httpapitest"
)

// verifyLimitsJSON is a verify answer with the state of its limits.
type verifyLimitsJSON struct {
	Valid   bool   `json:"valid"`
	Reason  string `json:"reason"`
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

// limitedOrg creates an organization with the limits of body (a JSON
// fragment of the create request) and n keys bound to it, and returns its
// id and a token of each key.
func (a api) limitedOrg(t *testing.T, body map[string]any, n int) (string, []string) {
	t.Helper()
	req := map[string]any{"name": "Customer", "slug": unique("customer")}
	for k, v := range body {
		req[k] = v
	}
	res := a.do(http.MethodPost, "/v1/organizations", a.AdminKey, req)
	want(t, res, http.StatusCreated)
	var org keyJSON // id, rate_limits and credits, as a key's
	res.Decode(t, &org)
	var toks []string
	for range n {
		k := a.createLimitedKey(t, map[string]any{"organization_id": org.ID})
		toks = append(toks, a.token(t, k.Key))
	}
	return org.ID, toks
}

// TestOrganizationLimits_Exact: 30 simultaneous verifications over two
// keys of an organization with 10 credits give exactly 10 valid answers and
// 20 usage_exceeded, each refusal saying so in its body (credits 0) and
// its RateLimit field; GET of the organization shows 0 left.
func TestOrganizationLimits_Exact(t *testing.T) {
	onLimitStores(t, func(t *testing.T, a api) {
		id, toks := a.limitedOrg(t, map[string]any{"credits": map[string]any{"remaining": 10}}, 2)
		reasons := a.verifyAll(t, 30, toks, func(v verifyLimitsJSON, res *httpapitest.Response) {
			if v.Credits == nil || v.Credits.Remaining != 0 || res.Header.Get("RateLimit") != `"credits";r=0` || res.Header.Get("RateLimit-Policy") != `"credits";q=10` {
				t.Errorf("a refusal: credits %+v, RateLimit %q, RateLimit-Policy %q; want 0 left, in the body and the fields", v.Credits, res.Header.Get("RateLimit"), res.Header.Get("RateLimit-Policy"))
			}
		})
		if reasons["valid"] != 10 || reasons["usage_exceeded"] != 20 {
			t.Fatalf("30 simultaneous verifications over two keys of an organization with 10 credits: %v, want 10 valid, 20 usage_exceeded", reasons)
		}
		res := a.do(http.MethodGet, "/v1/organizations/"+id, a.AdminKey, nil)
		want(t, res, http.StatusOK)
		var org keyJSON
		if res.Decode(t, &org); org.Credits == nil || org.Credits.Remaining != 0 {
			t.Fatalf("the organization after: credits %+v, want 0 remaining", org.Credits)
		}
	})
}

// TestOrganizationLimits_RateLimitExact: the same for a rate limit of the
// organization, 10 a minute: 10 valid, 20 rate_limited.
func TestOrganizationLimits_RateLimitExact(t *testing.T) {
	onLimitStores(t, func(t *testing.T, a api) {
		id, toks := a.limitedOrg(t, nil, 2)
		want(t, a.do(http.MethodPatch, "/v1/organizations/"+id, a.AdminKey, perMinute(10)), http.StatusOK)
		reasons := a.verifyAll(t, 30, toks, nil)
		if reasons["valid"] != 10 || reasons["rate_limited"] != 20 {
			t.Fatalf("30 simultaneous verifications over two keys of an organization allowed 10 a minute: %v, want 10 valid, 20 rate_limited", reasons)
		}
	})
}

// TestOrganizationLimits_Change: PATCH sets an organization's rate limits
// and credits, GET and the list show them, null removes them, they are
// checked as a key's ("credits" names no rate limit), and a key bound to
// the organization changes none of them.
func TestOrganizationLimits_Change(t *testing.T) {
	onLimitStores(t, func(t *testing.T, a api) {
		id, _ := a.limitedOrg(t, nil, 0)
		res := a.do(http.MethodPatch, "/v1/organizations/"+id, a.AdminKey, map[string]any{
			"rate_limits": []map[string]any{{"name": "minute", "limit": 100, "period": "1m"}},
			"credits":     map[string]any{"remaining": 500, "refill": map[string]any{"amount": 500, "interval": "monthly"}},
		})
		want(t, res, http.StatusOK)
		var org keyJSON
		res.Decode(t, &org)
		if len(org.RateLimits) != 1 || org.Credits == nil || org.Credits.Remaining != 500 || org.Credits.Refill == nil {
			t.Fatalf("after PATCH: %+v", org)
		}
		p := wantProblem(t, a.do(http.MethodPatch, "/v1/organizations/"+id, a.AdminKey, map[string]any{
			"rate_limits": []map[string]any{{"name": "credits", "limit": 1, "period": "1m"}},
		}), http.StatusBadRequest, "invalid_request")
		if len(p.Errors) != 1 || p.Errors[0].Field != "rate_limits[0].name" {
			t.Errorf("a rate limit named credits: %+v, want rate_limits[0].name", p.Errors)
		}
		tenant := a.do(http.MethodPost, "/v1/api-keys", a.AdminKey, map[string]any{"name": "tenant", "scopes": []string{"write:organizations"}, "organization_id": id})
		want(t, tenant, http.StatusCreated)
		var tk keyJSON
		tenant.Decode(t, &tk)
		wantProblem(t, a.do(http.MethodPatch, "/v1/organizations/"+id, tk.Key, map[string]any{"credits": nil}), http.StatusForbidden, "outside_organization")

		res = a.do(http.MethodPatch, "/v1/organizations/"+id, a.AdminKey, map[string]any{"rate_limits": nil, "credits": nil})
		want(t, res, http.StatusOK)
		if res.Decode(t, &org); len(org.RateLimits) != 0 || org.Credits != nil {
			t.Fatalf("after PATCH with nulls: %+v", org)
		}
	})
}

// TestVerify_LimitsState: the verify answer carries the tightest limits
// of the key and its organization, in its body as in its RateLimit
// fields; once the credits are spent, both say 0.
func TestVerify_LimitsState(t *testing.T) {
	onLimitStores(t, func(t *testing.T, a api) {
		id, toks := a.limitedOrg(t, nil, 1)
		want(t, a.do(http.MethodPatch, "/v1/organizations/"+id, a.AdminKey, map[string]any{
			"rate_limits": []map[string]any{{"name": "org-minute", "limit": 10, "period": "1m"}},
			"credits":     map[string]any{"remaining": 1},
		}), http.StatusOK)
		res := a.do(http.MethodGet, "/v1/auth/verify", toks[0], nil)
		want(t, res, http.StatusOK)
		var v verifyLimitsJSON
		res.Decode(t, &v)
		if !v.Valid || v.Credits == nil || v.Credits.Remaining != 0 || len(v.RateLimits) != 1 {
			t.Fatalf("the first verification: %+v", v)
		}
		if l := v.RateLimits[0]; l.Name != "org-minute" || l.Limit != 10 || l.Remaining != 9 || l.Reset != 60 {
			t.Errorf("its rate limit: %+v, want org-minute, 10, 9 left, 60 s", l)
		}
		if got, want := res.Header.Get("RateLimit"), `"org-minute";r=9;t=60, "credits";r=0`; got != want {
			t.Errorf("RateLimit: %q, want %q", got, want)
		}
		if got, want := res.Header.Get("RateLimit-Policy"), `"org-minute";q=10;w=60, "credits";q=1`; got != want {
			t.Errorf("RateLimit-Policy: %q, want %q", got, want)
		}
		res = a.do(http.MethodGet, "/v1/auth/verify", toks[0], nil)
		res.Decode(t, &v)
		if v.Valid || v.Reason != "usage_exceeded" || v.Credits == nil || v.Credits.Remaining != 0 {
			t.Fatalf("the second verification: %+v, want usage_exceeded with 0 credits", v)
		}
		if got := res.Header.Get("RateLimit"); got != `"org-minute";r=9;t=60, "credits";r=0` {
			t.Errorf("RateLimit of the refusal: %q", got)
		}
	})
}

// TestLimits_CreditsSpentHeader: once a key's credits are spent, its
// RateLimit fields say so (a "credits" policy with r=0, t to the next
// refill, w for a daily one), where they showed only the uses left in
// the rate limit's window.
func TestLimits_CreditsSpentHeader(t *testing.T) {
	onLimitStores(t, func(t *testing.T, a api) {
		k := a.createLimitedKey(t, map[string]any{
			"credits":     map[string]any{"remaining": 1, "refill": map[string]any{"amount": 1, "interval": "daily"}},
			"rate_limits": []map[string]any{{"name": "minute", "limit": 10, "period": "1m"}},
		})
		tok := a.token(t, k.Key)
		a.verify(t, tok)
		v, res := a.verify(t, tok)
		if v.Valid || v.Reason != "usage_exceeded" {
			t.Fatalf("the second verification: %+v, want usage_exceeded", v)
		}
		// The clock is at the start of a UTC day: the refill is a day away.
		if got, want := res.Header.Get("RateLimit"), `"minute";r=8;t=60, "credits";r=0;t=86400`; got != want {
			t.Errorf("RateLimit: %q, want %q", got, want)
		}
		if got, want := res.Header.Get("RateLimit-Policy"), `"minute";q=10;w=60, "credits";q=1;w=86400`; got != want {
			t.Errorf("RateLimit-Policy: %q, want %q", got, want)
		}
		if got := res.Header.Get("Retry-After"); got != "86400" {
			t.Errorf("Retry-After: %q, want 86400, the refill", got)
		}
	})
}

// TestOrganizationLimits_IntrospectOwn: a key of an organization that
// introspects its own token uses the organization's rate limit once per
// request, as its own (the verification spends the organization's credit
// but counts no second use).
func TestOrganizationLimits_IntrospectOwn(t *testing.T) {
	onLimitStores(t, func(t *testing.T, a api) {
		id, _ := a.limitedOrg(t, nil, 0)
		k := a.createLimitedKey(t, map[string]any{"organization_id": id})
		want(t, a.do(http.MethodPatch, "/v1/organizations/"+id, a.AdminKey, map[string]any{
			"rate_limits": []map[string]any{{"name": "minute", "limit": 3, "period": "1m"}},
			"credits":     map[string]any{"remaining": 5},
		}), http.StatusOK)
		tok := a.token(t, k.Key)                                               // use 1
		for i, r := range []string{`"minute";r=1;t=60`, `"minute";r=0;t=60`} { // uses 2 and 3
			res := a.introspectAs(t, k.Key, tok)
			want(t, res, http.StatusOK)
			if got := res.Map(t); got["active"] != true {
				t.Fatalf("introspection %d of its own token: got %v, want active", i+1, got)
			}
			if got := res.Header.Get("RateLimit"); got != r {
				t.Errorf("introspection %d: RateLimit %q, want %q", i+1, got, r)
			}
		}
		res := a.do(http.MethodGet, "/v1/organizations/"+id, a.AdminKey, nil)
		want(t, res, http.StatusOK)
		var org keyJSON
		if res.Decode(t, &org); org.Credits == nil || org.Credits.Remaining != 3 {
			t.Fatalf("the organization's credits: %+v, want 3 left (one per introspection)", org.Credits)
		}
	})
}

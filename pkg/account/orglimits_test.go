package account_test

import (
	"context"
	"sync"
	"testing"

	"latchkey/pkg/account"
)

// orgWithLimits creates an organization and two keys bound to it, each
// with the limits of key, issues a token of each, then gives the
// organization the limits of req (so that the issuances count against
// none of them), and returns it with its keys and their tokens.
func (e limitsEnv) orgWithLimits(req account.NewOrganization, key account.NewAPIKey) (account.Organization, [2]account.APIKey, [2]string) {
	e.t.Helper()
	admin := e.as(e.secret)
	o, err := e.svc.CreateOrganization(e.ctx, admin, account.NewOrganization{Name: "Limited", Slug: "limited"})
	if err != nil {
		e.t.Fatalf("CreateOrganization: %v", err)
	}
	key.OrganizationID = o.ID
	var keys [2]account.APIKey
	var toks [2]string
	for i := range keys {
		k, s := e.create(e.secret, key)
		keys[i], toks[i] = k, e.token(s)
	}
	o, err = e.svc.UpdateOrganization(e.ctx, admin, o.ID, account.OrganizationUpdate{RateLimits: &req.RateLimits, SetCredits: req.Credits != nil, Credits: req.Credits})
	if err != nil {
		e.t.Fatalf("UpdateOrganization: %v", err)
	}
	return o, keys, toks
}

// verifyAll verifies n tokens at once, toks in turn, and counts the
// answers by reason ("valid" for a valid one).
func (e limitsEnv) verifyAll(n int, toks []string) map[string]int {
	e.t.Helper()
	var wg sync.WaitGroup
	var mu sync.Mutex
	reasons := map[string]int{}
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := e.svc.VerifyToken(context.Background(), toks[i%len(toks)])
			if err != nil {
				e.t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if v.Valid {
				reasons["valid"]++
			} else {
				reasons[v.Reason]++
			}
		}()
	}
	wg.Wait()
	return reasons
}

// TestLimits_OrganizationExact: an organization's credits bound the
// verifications of all its keys together, exactly: 30 simultaneous
// verifications over two keys of an organization with 10 credits give 10
// valid answers and 20 usage_exceeded, and a use the organization refuses
// spends nothing of the key's own credits (100 each: 190 left in all).
func TestLimits_OrganizationExact(t *testing.T) {
	onEachStore(t, nil, func(t *testing.T, e limitsEnv) {
		o, keys, toks := e.orgWithLimits(account.NewOrganization{Credits: credits(10)}, account.NewAPIKey{Credits: credits(100)})
		reasons := e.verifyAll(30, toks[:])
		if reasons["valid"] != 10 || reasons[account.ReasonUsageExceeded] != 20 {
			t.Fatalf("30 simultaneous verifications over two keys of an organization with 10 credits: %v, want 10 valid, 20 usage_exceeded", reasons)
		}
		admin := e.as(e.secret)
		left := int64(0)
		for _, k := range keys {
			got, err := e.svc.GetAPIKey(e.ctx, admin, k.ID)
			if err != nil {
				t.Fatal(err)
			}
			left += got.Credits.Remaining
		}
		if left != 190 {
			t.Errorf("the keys' own credits after 10 valid verifications: %d left in all, want 190", left)
		}
		got, err := e.svc.GetOrganization(e.ctx, admin, o.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Credits == nil || got.Credits.Remaining != 0 {
			t.Errorf("the organization's credits after: %+v, want 0 remaining", got.Credits)
		}
	})
}

// TestLimits_OrganizationRateLimit: an organization's rate limit bounds
// the uses of all its keys together, exactly: 30 simultaneous
// verifications over two keys of an organization allowed 10 a minute give
// 10 valid answers and 20 rate_limited.
func TestLimits_OrganizationRateLimit(t *testing.T) {
	onEachStore(t, nil, func(t *testing.T, e limitsEnv) {
		_, _, toks := e.orgWithLimits(account.NewOrganization{RateLimits: perMinute(10)}, account.NewAPIKey{})
		reasons := e.verifyAll(30, toks[:])
		if reasons["valid"] != 10 || reasons[account.ReasonRateLimited] != 20 {
			t.Fatalf("30 simultaneous verifications over two keys of an organization allowed 10 a minute: %v, want 10 valid, 20 rate_limited", reasons)
		}
	})
}

// TestLimits_VerificationTightest: a verification answers the tightest of
// the limits it counted against: per period the rate limit with the
// fewest uses left, the credits with the fewest left, whether they are
// the key's or its organization's.
func TestLimits_VerificationTightest(t *testing.T) {
	onEachStore(t, nil, func(t *testing.T, e limitsEnv) {
		_, _, toks := e.orgWithLimits(
			account.NewOrganization{Credits: credits(3), RateLimits: []account.RateLimitRequest{{Name: "org-minute", Limit: 10, Period: "1m"}, {Name: "org-day", Limit: 1000, Period: "1d"}}},
			account.NewAPIKey{Credits: credits(5), RateLimits: []account.RateLimitRequest{{Name: "minute", Limit: 100, Period: "1m"}, {Name: "day", Limit: 50, Period: "1d"}}})
		v := e.verify(toks[0])
		if !v.Valid || v.Usage == nil || v.Usage.Credits == nil {
			t.Fatalf("the first verification: %+v", v)
		}
		if got := v.Usage.Credits.Remaining; got != 2 {
			t.Errorf("credits remaining: %d, want 2 (the organization's 3, less one)", got)
		}
		// The key's own limits count its token's issuance too.
		want := map[string]int64{"org-minute": 9, "day": 48}
		if len(v.Usage.Limits) != len(want) {
			t.Fatalf("rate limits: %+v, want one per period: %v", v.Usage.Limits, want)
		}
		for _, l := range v.Usage.Limits {
			if r, ok := want[l.Name]; !ok || l.Remaining != r {
				t.Errorf("rate limit %s: %d remaining, want %v", l.Name, l.Remaining, want)
			}
		}
		e.verify(toks[1])
		e.verify(toks[0])
		v = e.verify(toks[1])
		if v.Valid || v.Reason != account.ReasonUsageExceeded || v.Usage == nil || v.Usage.Credits == nil || v.Usage.Credits.Remaining != 0 {
			t.Fatalf("the fourth verification, the organization's credits spent: %+v; want usage_exceeded with 0 credits remaining", v)
		}
	})
}

// TestService_UpdateOrganization_Limits: an organization takes rate limits
// and credits as a key does: set by create or PATCH, checked by the same
// rules, removed by null (SetCredits without credits, an empty list); a
// key bound to the organization changes none of them.
func TestService_UpdateOrganization_Limits(t *testing.T) {
	onEachStore(t, nil, func(t *testing.T, e limitsEnv) {
		admin := e.as(e.secret)
		o, _, toks := e.orgWithLimits(account.NewOrganization{}, account.NewAPIKey{})
		limits := perMinute(5)
		got, err := e.svc.UpdateOrganization(e.ctx, admin, o.ID, account.OrganizationUpdate{RateLimits: &limits, SetCredits: true, Credits: credits(1)})
		if err != nil {
			t.Fatalf("UpdateOrganization: %v", err)
		}
		if len(got.RateLimits) != 1 || got.RateLimits[0].Limit != 5 || got.Credits == nil || got.Credits.Remaining != 1 {
			t.Fatalf("the organization after PATCH: %+v, %+v", got.RateLimits, got.Credits)
		}
		if v := e.verify(toks[0]); !v.Valid {
			t.Fatalf("a verification within the organization's new limits: %+v", v)
		}
		if v := e.verify(toks[1]); v.Reason != account.ReasonUsageExceeded {
			t.Fatalf("a verification past the organization's 1 credit: %+v, want usage_exceeded", v)
		}
		got, err = e.svc.GetOrganization(e.ctx, admin, o.ID)
		if err != nil || got.Credits == nil || got.Credits.Remaining != 0 {
			t.Fatalf("GetOrganization after the credit is spent: %+v, %v; want 0 remaining", got.Credits, err)
		}

		bad := []account.RateLimitRequest{{Name: "a b", Limit: 0, Period: "1y"}}
		_, err = e.svc.UpdateOrganization(e.ctx, admin, o.ID, account.OrganizationUpdate{RateLimits: &bad, SetCredits: true, Credits: credits(-1)})
		wantFields(t, err, "rate_limits[0].name", "rate_limits[0].limit", "rate_limits[0].period", "credits.remaining")

		_, s, err := e.svc.CreateAPIKey(e.ctx, admin, account.NewAPIKey{Name: "tenant", Scopes: []string{"write:organizations"}, OrganizationID: o.ID})
		if err != nil {
			t.Fatal(err)
		}
		_, err = e.svc.UpdateOrganization(e.ctx, e.as(s), o.ID, account.OrganizationUpdate{SetCredits: true, Credits: credits(100)})
		wantCode(t, err, account.CodeOutsideOrganization)

		none := []account.RateLimitRequest{}
		got, err = e.svc.UpdateOrganization(e.ctx, admin, o.ID, account.OrganizationUpdate{RateLimits: &none, SetCredits: true})
		if err != nil || got.RateLimits != nil || got.Credits != nil {
			t.Fatalf("removing the limits: %+v, %+v, %v", got.RateLimits, got.Credits, err)
		}
		if v := e.verify(toks[1]); !v.Valid {
			t.Fatalf("a verification once the organization's limits are gone: %+v", v)
		}
	})
}

// TestService_CreateOrganization_Limits: limits given at creation bound
// the organization's keys from the first use, as those set by PATCH.
func TestService_CreateOrganization_Limits(t *testing.T) {
	onEachStore(t, nil, func(t *testing.T, e limitsEnv) {
		o, err := e.svc.CreateOrganization(e.ctx, e.as(e.secret), account.NewOrganization{Name: "Plan", Slug: "plan", Credits: credits(1)})
		if err != nil {
			t.Fatalf("CreateOrganization: %v", err)
		}
		if o.Credits == nil || o.Credits.Remaining != 1 {
			t.Fatalf("the organization created: credits %+v, want 1 remaining", o.Credits)
		}
		_, s := e.create(e.secret, account.NewAPIKey{OrganizationID: o.ID})
		tok := e.token(s)
		if v := e.verify(tok); !v.Valid {
			t.Fatalf("the first verification: %+v", v)
		}
		if v := e.verify(tok); v.Reason != account.ReasonUsageExceeded {
			t.Fatalf("the second verification: %+v, want usage_exceeded", v)
		}
	})
}

package console_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"latchkey/pkg/account"
	"latchkey/pkg/console"
)

// usageFake is a console.UsageSource of function fields.
type usageFake struct {
	keyUsage func(ctx context.Context, p account.Principal, id string, from, to time.Time, interval string) ([]console.UsageBucket, error)
	orgUsage func(ctx context.Context, p account.Principal, id string, from, to time.Time, interval string) ([]console.UsageBucket, error)
	topKeys  func(ctx context.Context, p account.Principal, id string, from, to time.Time, n int) ([]console.KeyUsageTotal, error)
}

func (f usageFake) KeyUsage(ctx context.Context, p account.Principal, k account.APIKey, from, to time.Time, interval string) ([]console.UsageBucket, error) {
	return f.keyUsage(ctx, p, k.ID, from, to, interval)
}

func (f usageFake) OrganizationUsage(ctx context.Context, p account.Principal, o account.Organization, from, to time.Time, interval string) ([]console.UsageBucket, error) {
	return f.orgUsage(ctx, p, o.ID, from, to, interval)
}

func (f usageFake) TopKeys(ctx context.Context, p account.Principal, o account.Organization, from, to time.Time, n int) ([]console.KeyUsageTotal, error) {
	return f.topKeys(ctx, p, o.ID, from, to, n)
}

var _ console.UsageSource = usageFake{}

// withUsage returns the stack with its console over usage instead of the
// one the stack mounts, which counts none.
func (s *stack) withUsage(usage console.UsageSource) *stack {
	env := *s.Env
	env.Handler = console.New(console.Config{Service: s.Service, Usage: usage})
	c := *s
	c.Env = &env
	return &c
}

// TestConsole_Usage: a key's and an organization's pages chart their
// usage over the last 24 hours and 30 days, and rank the organization's
// keys, from the console's UsageSource; without one they say usage is not
// available, and a source's error shows on the section, not the page.
func TestConsole_Usage(t *testing.T) {
	s := newStack(t)

	t.Run("NotAvailable", func(t *testing.T) {
		u := s.withUsage(nil)
		admin := u.signIn(t, u.AdminKey)
		for _, p := range []string{"/console/api-keys/" + s.key.ID, "/console/organizations/" + s.org.ID} {
			res := u.send(t, http.MethodGet, p, admin, nil, nil)
			if res.StatusCode != http.StatusOK || !strings.Contains(res.body, "Usage is not available") {
				t.Errorf("%s without a usage source: %d, want 200 saying usage is not available", p, res.StatusCode)
			}
		}
	})

	t.Run("OK", func(t *testing.T) {
		now := s.Clock.Now().UTC()
		hour := now.Truncate(time.Hour)
		today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
		type call struct {
			id       string
			from, to time.Time
			interval string
		}
		var calls []call
		buckets := func(id string, from, to time.Time, interval string) []console.UsageBucket {
			calls = append(calls, call{id, from, to, interval})
			return []console.UsageBucket{
				{Start: from, Verifications: map[string]int64{"valid": 7, "revoked": 3}, TokensIssued: 2},
				{Start: to.Add(-time.Hour), Verifications: map[string]int64{"usage_exceeded": 4}},
			}
		}
		u := s.withUsage(usageFake{
			keyUsage: func(_ context.Context, _ account.Principal, id string, from, to time.Time, interval string) ([]console.UsageBucket, error) {
				return buckets(id, from, to, interval), nil
			},
			orgUsage: func(_ context.Context, _ account.Principal, id string, from, to time.Time, interval string) ([]console.UsageBucket, error) {
				return buckets(id, from, to, interval), nil
			},
			topKeys: func(_ context.Context, _ account.Principal, id string, from, to time.Time, n int) ([]console.KeyUsageTotal, error) {
				calls = append(calls, call{id, from, to, "top"})
				return []console.KeyUsageTotal{{KeyID: s.key.ID, Name: "worker", Verifications: map[string]int64{"valid": 90, "rate_limited": 10}, TokensIssued: 5}}, nil
			},
		})
		admin := u.signIn(t, u.AdminKey)

		res := u.send(t, http.MethodGet, "/console/api-keys/"+s.key.ID, admin, nil, nil)
		for _, want := range []string{
			`<svg viewBox=`, `role="img"`,
			"by hour: 14 verifications (valid 7, revoked 3, usage_exceeded 4); 2 tokens issued.",
			"by day: 14 verifications (valid 7, revoked 3, usage_exceeded 4); 2 tokens issued.",
		} {
			if !strings.Contains(res.body, want) {
				t.Errorf("the key's page lacks %q", want)
			}
		}
		res = u.send(t, http.MethodGet, "/console/organizations/"+s.org.ID, admin, nil, nil)
		for _, want := range []string{
			`<svg viewBox=`,
			`<td><a href="/console/api-keys/` + s.key.ID + `">worker</a> <code class="small">` + s.key.ID + `</code></td><td>100</td><td>90</td><td>10</td><td>5</td>`,
		} {
			if !strings.Contains(res.body, want) {
				t.Errorf("the organization's page lacks %q", want)
			}
		}
		want := []call{
			{s.key.ID, hour.Add(-23 * time.Hour), hour.Add(time.Hour), "hour"},
			{s.key.ID, today.AddDate(0, 0, -29), today.AddDate(0, 0, 1), "day"},
			{s.org.ID, hour.Add(-23 * time.Hour), hour.Add(time.Hour), "hour"},
			{s.org.ID, today.AddDate(0, 0, -29), today.AddDate(0, 0, 1), "day"},
			{s.org.ID, today.AddDate(0, 0, -29), today.AddDate(0, 0, 1), "top"},
		}
		if len(calls) != len(want) {
			t.Fatalf("usage asked for %+v, want %+v", calls, want)
		}
		for i := range want {
			if calls[i].id != want[i].id || !calls[i].from.Equal(want[i].from) || !calls[i].to.Equal(want[i].to) || calls[i].interval != want[i].interval {
				t.Errorf("usage call %d: %+v, want %+v", i, calls[i], want[i])
			}
		}
	})

	t.Run("ErrInsufficientScope", func(t *testing.T) {
		refuse := func() error { return account.Errorf(account.CodeInsufficientScope, "the key does not hold read:usage") }
		u := s.withUsage(usageFake{
			keyUsage: func(context.Context, account.Principal, string, time.Time, time.Time, string) ([]console.UsageBucket, error) {
				return nil, refuse()
			},
			orgUsage: func(context.Context, account.Principal, string, time.Time, time.Time, string) ([]console.UsageBucket, error) {
				return nil, refuse()
			},
			topKeys: func(context.Context, account.Principal, string, time.Time, time.Time, int) ([]console.KeyUsageTotal, error) {
				return nil, refuse()
			},
		})
		admin := u.signIn(t, u.AdminKey)
		for _, p := range []string{"/console/api-keys/" + s.key.ID, "/console/organizations/" + s.org.ID} {
			res := u.send(t, http.MethodGet, p, admin, nil, nil)
			if res.StatusCode != http.StatusOK || !strings.Contains(res.body, "Usage could not be read") || strings.Contains(res.body, "<svg") {
				t.Errorf("%s when usage is refused: %d, want 200 saying usage could not be read, and no chart", p, res.StatusCode)
			}
		}
	})
}

// TestConsole_UsageCounted: the console the stack mounts charts the
// service's own counts: a bound key's verifications by outcome and its
// token, on its page and its organization's, once the process flushed;
// the organization's page shows its limits, with the credits left.
func TestConsole_UsageCounted(t *testing.T) {
	s := newStack(t)
	ctx := t.Context()
	admin := mustAuth(t, s.Env, s.AdminKey)
	k, secret, err := s.Service.CreateAPIKey(ctx, admin, account.NewAPIKey{Name: "billed", Scopes: []string{account.ScopeReadUsers}, OrganizationID: s.org.ID})
	if err != nil {
		t.Fatal(err)
	}
	limits := []account.RateLimitRequest{{Name: "per_minute", Limit: 100, Period: "1m"}}
	if _, err := s.Service.UpdateOrganization(ctx, admin, s.org.ID, account.OrganizationUpdate{RateLimits: &limits, SetCredits: true, Credits: &account.CreditsRequest{Remaining: 10}}); err != nil {
		t.Fatal(err)
	}
	token, _, err := s.Service.IssueToken(ctx, mustAuth(t, s.Env, secret), account.TokenRequest{Scopes: []string{account.ScopeReadUsers}})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if v, err := s.Service.VerifyToken(ctx, token); err != nil || !v.Valid {
			t.Fatalf("verify: %+v, %v", v, err)
		}
	}
	if _, err := s.Service.RevokeToken(ctx, admin, token); err != nil {
		t.Fatal(err)
	}
	if v, err := s.Service.VerifyToken(ctx, token); err != nil || v.Valid {
		t.Fatalf("verify after revoking: %+v, %v", v, err)
	}
	if err := s.Service.FlushUsage(ctx); err != nil {
		t.Fatal(err)
	}

	cookie := s.signIn(t, s.AdminKey)
	want := "3 verifications (valid 2, revoked 1); 1 token issued."
	res := s.send(t, http.MethodGet, "/console/api-keys/"+k.ID, cookie, nil, nil)
	if !strings.Contains(res.body, want) {
		t.Errorf("the key's page lacks %q", want)
	}
	res = s.send(t, http.MethodGet, "/console/organizations/"+s.org.ID, cookie, nil, nil)
	if !strings.Contains(res.body, want) {
		t.Errorf("the organization's page lacks %q", want)
	}
	// The organization's limits as of now: the token's issuance and two
	// valid verifications used three of the minute's 100, the two
	// verifications two credits.
	for _, want := range []string{"97 of 100 per 1m left until", "8 left"} {
		if !strings.Contains(res.body, want) {
			t.Errorf("the organization's page lacks its limit %q", want)
		}
	}
	row := `<td><a href="/console/api-keys/` + k.ID + `">billed</a> <code class="small">` + k.ID + `</code></td><td>3</td><td>2</td><td>1</td><td>1</td>`
	if !strings.Contains(res.body, row) {
		t.Errorf("the organization's page lacks the key's row %q", row)
	}
}

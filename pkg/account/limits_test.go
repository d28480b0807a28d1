package account_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"latchkey/pkg/account"
	"latchkey/pkg/teststore"
)

// limitsEnv is a service over one store, for the rule that a key's limits
// bound its whole subtree.
type limitsEnv struct {
	*env
	t *testing.T
}

// onEachStore runs f on a fresh service over each store (bbolt, and
// DynamoDB Local under scripts/dynamodb-local.sh), its clock at the start
// of a UTC day so that every window of the test starts with it. wrap,
// unless nil, wraps the store first.
func onEachStore(t *testing.T, wrap func(account.Store) account.Store, f func(t *testing.T, e limitsEnv)) {
	for name, newStore := range teststore.Each(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			store := newStore(t)
			if wrap != nil {
				store = wrap(store)
			}
			e := newEnvOver(t, store)
			e.clock.Set(e.clock.Now().Truncate(24 * time.Hour).Add(24 * time.Hour))
			f(t, limitsEnv{env: e, t: t})
		})
	}
}

// as authenticates a secret.
func (e limitsEnv) as(secret string) account.Principal {
	e.t.Helper()
	p, err := e.svc.Authenticate(e.ctx, secret)
	if err != nil {
		e.t.Fatalf("Authenticate: %v", err)
	}
	return p
}

// create creates a key as the holder of secret, with write:api_keys and
// read:users and the limits of req, and returns it with its secret.
func (e limitsEnv) create(secret string, req account.NewAPIKey) (account.APIKey, string) {
	e.t.Helper()
	req.Name, req.Scopes = "limits", []string{"read:users", "write:api_keys"}
	k, s, err := e.svc.CreateAPIKey(e.ctx, e.as(secret), req)
	if err != nil {
		e.t.Fatalf("CreateAPIKey: %v", err)
	}
	return k, s
}

// token issues an access token for the key of secret.
func (e limitsEnv) token(secret string) string {
	e.t.Helper()
	tok, _, err := e.svc.IssueToken(e.ctx, e.as(secret), account.TokenRequest{Scopes: []string{"read:users"}})
	if err != nil {
		e.t.Fatalf("IssueToken: %v", err)
	}
	return tok
}

// setCredits sets the credits of the key id as the holder of secret.
func (e limitsEnv) setCredits(secret, id string, remaining int64) error {
	e.t.Helper()
	_, err := e.svc.UpdateAPIKey(e.ctx, e.as(secret), id, account.APIKeyUpdate{SetCredits: true, Credits: &account.CreditsRequest{Remaining: remaining}})
	return err
}

func (e limitsEnv) verify(tok string) account.Verification {
	e.t.Helper()
	v, err := e.svc.VerifyToken(e.ctx, tok)
	if err != nil {
		e.t.Fatalf("VerifyToken: %v", err)
	}
	return v
}

func credits(n int64) *account.CreditsRequest { return &account.CreditsRequest{Remaining: n} }

func perMinute(n int64) []account.RateLimitRequest {
	return []account.RateLimitRequest{{Name: "minute", Limit: n, Period: "1m"}}
}

// TestLimits_SubtreeCredits is issue 29's third hole: a key sold 2
// credits creates children with 2 credits each, and sets their credits
// again and again. Every verification below it spends the key's credits
// too, so the subtree verifies 2 tokens in all, not 2 per child and per
// setting; a refused verification spends nothing anywhere.
func TestLimits_SubtreeCredits(t *testing.T) {
	onEachStore(t, nil, func(t *testing.T, e limitsEnv) {
		parent, ps := e.create(e.secret, account.NewAPIKey{Credits: credits(2)})
		c1, s1 := e.create(ps, account.NewAPIKey{Credits: credits(2)})
		c2, s2 := e.create(ps, account.NewAPIKey{Credits: credits(2)})
		toks := []string{e.token(ps), e.token(s1), e.token(s2)}
		valid := 0
		for round := range 3 {
			for _, id := range []string{c1.ID, c2.ID} {
				if err := e.setCredits(ps, id, 2); err != nil {
					t.Fatalf("round %d: the parent sets its child's credits again: %v", round, err)
				}
			}
			for _, tok := range []string{toks[1], toks[1], toks[2], toks[2], toks[0]} {
				v := e.verify(tok)
				switch {
				case v.Valid:
					valid++
				case v.Reason != account.ReasonUsageExceeded:
					t.Fatalf("round %d: a verification refused for %q, want usage_exceeded", round, v.Reason)
				}
			}
		}
		if valid != 2 {
			t.Fatalf("valid verifications across the subtree of a key with 2 credits: %d, want 2", valid)
		}
		admin := e.as(e.secret)
		for _, want := range []struct {
			id   string
			left int64
		}{{parent.ID, 0}, {c1.ID, 2}, {c2.ID, 2}} {
			k, err := e.svc.GetAPIKey(e.ctx, admin, want.id)
			if err != nil {
				t.Fatal(err)
			}
			// The children's credits were set again after the parent's were
			// spent: the refused uses spent none of them.
			if k.Credits == nil || k.Credits.Remaining != want.left {
				t.Errorf("the credits of %s: %+v, want %d left", want.id, k.Credits, want.left)
			}
		}
	})
}

// TestLimits_SubtreeRateLimit: a key's rate limit bounds the requests and
// verifications of the keys below it: with 10 a minute, its own request
// and its two children's token requests leave 7 verifications of the
// children's tokens in the minute (the children allow 10 each), refused
// with the parent's window's Retry-After, and the next minute the count
// starts again.
func TestLimits_SubtreeRateLimit(t *testing.T) {
	onEachStore(t, nil, func(t *testing.T, e limitsEnv) {
		e.clock.Advance(30 * time.Second)
		_, ps := e.create(e.secret, account.NewAPIKey{RateLimits: perMinute(10)})
		p := e.as(ps) // use 1 of the parent
		var secrets []string
		for range 2 {
			_, s, err := e.svc.CreateAPIKey(e.ctx, p, account.NewAPIKey{Name: "child", Scopes: []string{"read:users"}, RateLimits: perMinute(10)})
			if err != nil {
				t.Fatalf("CreateAPIKey below the parent: %v", err)
			}
			secrets = append(secrets, s)
		}
		toks := []string{e.token(secrets[0]), e.token(secrets[1])} // uses 2 and 3
		valid := 0
		for i := range 20 {
			v := e.verify(toks[i%2])
			switch {
			case v.Valid:
				valid++
			case v.Reason != account.ReasonRateLimited:
				t.Fatalf("verify %d: refused for %q, want rate_limited", i, v.Reason)
			case v.Usage == nil || v.Usage.RetryAfter <= 0 || v.Usage.RetryAfter > 30*time.Second:
				t.Fatalf("verify %d: refused with %+v, want a Retry-After to the end of the parent's minute (30 s)", i, v.Usage)
			}
		}
		if valid != 7 {
			t.Fatalf("valid verifications below a key of 10 a minute that used 3: %d, want 7", valid)
		}
		e.clock.Advance(30 * time.Second)
		if v := e.verify(toks[0]); !v.Valid {
			t.Fatalf("a verification the next minute: %+v, want valid", v)
		}
	})
}

// TestLimits_SubtreeExact: counting against the keys above is as exact as
// a key's own count: 30 simultaneous verifications of the tokens of two
// children (10 credits each) of a key with 10 credits give exactly 10
// valid answers and 20 usage_exceeded.
func TestLimits_SubtreeExact(t *testing.T) {
	onEachStore(t, nil, func(t *testing.T, e limitsEnv) {
		_, ps := e.create(e.secret, account.NewAPIKey{Credits: credits(10)})
		_, s1 := e.create(ps, account.NewAPIKey{Credits: credits(10)})
		_, s2 := e.create(ps, account.NewAPIKey{Credits: credits(10)})
		toks := []string{e.token(s1), e.token(s2)}
		reasons := e.verifyAll(30, toks)
		if reasons["valid"] != 10 || reasons[account.ReasonUsageExceeded] != 20 {
			t.Fatalf("30 simultaneous verifications below a key with 10 credits: %v, want 10 valid, 20 usage_exceeded", reasons)
		}
	})
}

// TestLimits_LooserBelow: a key's own limits may be tighter than those of
// every key above it, never looser, on create and on update, whoever asks:
// after the admin cuts the top key's credits to 2, the key below it (which
// kept 5) neither creates a key with 5 nor sets 5 on the key below it;
// within 2 it does both.
func TestLimits_LooserBelow(t *testing.T) {
	onEachStore(t, nil, func(t *testing.T, e limitsEnv) {
		top, ts := e.create(e.secret, account.NewAPIKey{Credits: credits(5)})
		_, ms := e.create(ts, account.NewAPIKey{Credits: credits(5)})
		low, _ := e.create(ms, account.NewAPIKey{Credits: credits(5)})
		if err := e.setCredits(e.secret, top.ID, 2); err != nil {
			t.Fatalf("the admin sets the top key's credits: %v", err)
		}
		_, _, err := e.svc.CreateAPIKey(e.ctx, e.as(ms), account.NewAPIKey{Name: "looser", Scopes: []string{"read:users"}, Credits: credits(5)})
		wantCode(t, err, account.CodeForbidden)
		wantCode(t, e.setCredits(ms, low.ID, 5), account.CodeForbidden)
		_, err = e.svc.UpdateAPIKey(e.ctx, e.as(ms), low.ID, account.APIKeyUpdate{SetCredits: true})
		wantCode(t, err, account.CodeForbidden) // no credits at all
		k, err := e.svc.GetAPIKey(e.ctx, e.as(e.secret), low.ID)
		if err != nil || k.Credits == nil || k.Credits.Remaining != 5 {
			t.Fatalf("the key below after refused changes: %+v, %v; want its 5 credits", k.Credits, err)
		}
		if _, _, err := e.svc.CreateAPIKey(e.ctx, e.as(ms), account.NewAPIKey{Name: "within", Scopes: []string{"read:users"}, Credits: credits(2)}); err != nil {
			t.Fatalf("a key within every key above: %v", err)
		}
		if err := e.setCredits(ms, low.ID, 2); err != nil {
			t.Fatalf("credits within every key above: %v", err)
		}
	})
}

// usageWrites records the usage records each use writes, by key id.
type usageWrites struct {
	account.Store
	mu     sync.Mutex
	writes [][]string
}

func (w *usageWrites) ChangeKeyUsage(ctx context.Context, keyID string, shard int, c account.UsageChange) (map[string]int64, bool, error) {
	if len(c.Steps) > 0 { // not the removal of old windows
		w.mu.Lock()
		w.writes = append(w.writes, []string{keyID})
		w.mu.Unlock()
	}
	return w.Store.ChangeKeyUsage(ctx, keyID, shard, c)
}

func (w *usageWrites) ChangeKeysUsage(ctx context.Context, changes []account.KeyUsageChange) ([]map[string]int64, bool, error) {
	var ids []string
	for _, c := range changes {
		ids = append(ids, c.KeyID)
	}
	w.mu.Lock()
	w.writes = append(w.writes, ids)
	w.mu.Unlock()
	return w.Store.ChangeKeysUsage(ctx, changes)
}

// during returns the writes fn makes, each the records of one step.
func (w *usageWrites) during(fn func()) [][]string {
	w.mu.Lock()
	w.writes = nil
	w.mu.Unlock()
	fn()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.writes
}

// TestLimits_WritesAbove: a use writes one usage record per limited key
// it counts against, in one step, and none for a key without limits: in
// a chain a > b > c > d, a verification of d's token writes nothing while
// no key is limited, d's record alone once d is, d's and a's together
// (not b's or c's) once a is too.
func TestLimits_WritesAbove(t *testing.T) {
	onEachStore(t, func(s account.Store) account.Store { return &usageWrites{Store: s} }, func(t *testing.T, e limitsEnv) {
		w := e.store.(*usageWrites)
		a, as := e.create(e.secret, account.NewAPIKey{})
		_, bs := e.create(as, account.NewAPIKey{})
		_, cs := e.create(bs, account.NewAPIKey{})
		d, ds := e.create(cs, account.NewAPIKey{})
		tok := e.token(ds)
		check := func(what string, want [][]string) {
			t.Helper()
			got := w.during(func() {
				if v := e.verify(tok); !v.Valid {
					t.Fatalf("%s: %+v, want valid", what, v)
				}
			})
			if !slices.EqualFunc(got, want, slices.Equal) {
				t.Errorf("%s: usage records written %v, want %v", what, got, want)
			}
		}
		check("no key limited", nil)
		if err := e.setCredits(cs, d.ID, 10); err != nil {
			t.Fatal(err)
		}
		check("d limited, nothing above it", [][]string{{d.ID}})
		if err := e.setCredits(e.secret, a.ID, 10); err != nil {
			t.Fatal(err)
		}
		check("d and a limited", [][]string{{d.ID, a.ID}})
	})
}

// TestLimits_RateLimitStates: what a key's page shows of its rate limits
// is exact, summed over every usage record its uses spread over (a limit
// of 5,000 a second spreads them over 10), and reading it counts no use.
func TestLimits_RateLimitStates(t *testing.T) {
	onEachStore(t, nil, func(t *testing.T, e limitsEnv) {
		k, secret := e.create(e.secret, account.NewAPIKey{RateLimits: []account.RateLimitRequest{{Name: "per_second", Limit: 5000, Period: "1s"}}})
		tok := e.token(secret)
		states := func() account.LimitState {
			t.Helper()
			s, err := e.svc.APIKeyRateLimits(e.ctx, e.admin, k)
			if err != nil || len(s) != 1 {
				t.Fatalf("APIKeyRateLimits: %+v, %v", s, err)
			}
			return s[0]
		}
		before := states()
		if before.Remaining >= 5000 || before.Remaining < 4990 || before.Reset != time.Second {
			t.Fatalf("after issuing a token: %+v, want a few uses below 5000 left, reset in 1s", before)
		}
		for range 7 {
			if v := e.verify(tok); !v.Valid {
				t.Fatalf("verify: %+v", v)
			}
		}
		if after := states(); after.Remaining != before.Remaining-7 {
			t.Errorf("after 7 verifications: %d left, want %d", after.Remaining, before.Remaining-7)
		}
		if again := states(); again.Remaining != before.Remaining-7 {
			t.Errorf("read again: %d left, want %d (a read counts no use)", again.Remaining, before.Remaining-7)
		}
	})
}

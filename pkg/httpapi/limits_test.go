package httpapi_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"latchkey/pkg/account"
	"latchkey/pkg/authorizer"
	"latchkey/pkg/httpapi/httpapitest"
	"latchkey/pkg/token"
)

// keyJSON is the part of an API key response the limit tests read.
type keyJSON struct {
	ID         string `json:"id"`
	Key        string `json:"key"`
	RateLimits []struct {
		Name   string `json:"name"`
		Limit  int64  `json:"limit"`
		Period string `json:"period"`
	} `json:"rate_limits"`
	Credits *struct {
		Remaining int64 `json:"remaining"`
		Refill    *struct {
			Amount   int64  `json:"amount"`
			Interval string `json:"interval"`
		} `json:"refill"`
	} `json:"credits"`
}

type verifyJSON struct {
	Valid  bool   `json:"valid"`
	Reason string `json:"reason"`
}

// onLimitStores runs f on a fresh stack over each store that keeps the
// limits of keys, its clock at the start of a UTC day, so that every
// window of the test starts with it.
func onLimitStores(t *testing.T, f func(t *testing.T, a api)) {
	for name, newStore := range httpapitest.Stores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			env := httpapitest.NewServerOver(t, newStore(t))
			env.Clock.Set(env.Clock.Now().Truncate(24 * time.Hour).Add(24 * time.Hour))
			f(t, api{Env: env, t: t})
		})
	}
}

// createLimitedKey creates a key with read:users and the given limits
// (a JSON fragment of the create request), as the admin.
func (a api) createLimitedKey(t *testing.T, limits map[string]any) keyJSON {
	t.Helper()
	body := map[string]any{"name": unique("limited"), "scopes": []string{"read:users", "write:api_keys"}}
	for k, v := range limits {
		body[k] = v
	}
	res := a.do(http.MethodPost, "/v1/api-keys", a.AdminKey, body)
	want(t, res, http.StatusCreated)
	var k keyJSON
	res.Decode(t, &k)
	return k
}

func (a api) token(t *testing.T, secret string) string {
	t.Helper()
	res := a.do(http.MethodPost, "/v1/auth/token", secret, map[string]any{"scopes": []string{"read:users"}})
	want(t, res, http.StatusCreated)
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	res.Decode(t, &tok)
	return tok.AccessToken
}

func (a api) verify(t *testing.T, tok string) (verifyJSON, *httpapitest.Response) {
	t.Helper()
	res := a.do(http.MethodGet, "/v1/auth/verify", tok, nil)
	want(t, res, http.StatusOK)
	var v verifyJSON
	res.Decode(t, &v)
	return v, res
}

// verifyAll sends n verifications at once, toks in turn, and counts the
// answers by reason ("valid" for a valid one); check, when given, sees
// each refusal.
func (a api) verifyAll(t *testing.T, n int, toks []string, check func(v verifyLimitsJSON, res *httpapitest.Response)) map[string]int {
	t.Helper()
	var wg sync.WaitGroup
	var mu sync.Mutex
	reasons := map[string]int{}
	for i := range n {
		wg.Go(func() {
			res := a.do(http.MethodGet, "/v1/auth/verify", toks[i%len(toks)], nil)
			var v verifyLimitsJSON
			if err := json.Unmarshal(res.Body, &v); err != nil || res.StatusCode != http.StatusOK {
				t.Errorf("verify: %d %s", res.StatusCode, res.Body)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if v.Valid {
				reasons["valid"]++
				return
			}
			reasons[v.Reason]++
			if check != nil {
				check(v, res)
			}
		})
	}
	wg.Wait()
	return reasons
}

func perMinute(n int) map[string]any {
	return map[string]any{"rate_limits": []map[string]any{{"name": "minute", "limit": n, "period": "1m"}}}
}

// TestLimits_RateLimit: every use counts, token issuance included; over
// the limit a verify is rate_limited with Retry-After and the RateLimit
// fields, a request the key authenticates is 429, and the window's end
// lets the key in again.
func TestLimits_RateLimit(t *testing.T) {
	onLimitStores(t, func(t *testing.T, a api) {
		k := a.createLimitedKey(t, perMinute(3))
		a.Clock.Advance(10 * time.Second)
		tok := a.token(t, k.Key)   // use 1
		v, res := a.verify(t, tok) // use 2
		if !v.Valid {
			t.Fatalf("verify 1: %+v", v)
		}
		if got, want := res.Header.Get("RateLimit-Policy"), `"minute";q=3;w=60`; got != want {
			t.Errorf("RateLimit-Policy: got %q, want %q", got, want)
		}
		if got, want := res.Header.Get("RateLimit"), `"minute";r=1;t=50`; got != want {
			t.Errorf("RateLimit: got %q, want %q", got, want)
		}
		if v, _ := a.verify(t, tok); !v.Valid { // use 3
			t.Fatalf("verify 2: %+v", v)
		}
		v, res = a.verify(t, tok)
		if v.Valid || v.Reason != account.ReasonRateLimited {
			t.Fatalf("verify over the limit: got %+v, want rate_limited", v)
		}
		if got := res.Header.Get("Retry-After"); got != "50" {
			t.Errorf("Retry-After: got %q, want 50", got)
		}
		if got, want := res.Header.Get("RateLimit"), `"minute";r=0;t=50`; got != want {
			t.Errorf("RateLimit: got %q, want %q", got, want)
		}
		res = a.do(http.MethodPost, "/v1/auth/token", k.Key, map[string]any{"scopes": []string{"read:users"}})
		wantProblem(t, res, http.StatusTooManyRequests, "rate_limited")
		if res.Header.Get("Retry-After") != "50" || res.Header.Get("RateLimit-Policy") == "" {
			t.Errorf("429 headers: %v", res.Header)
		}
		// A request the token authenticates is a use too.
		wantProblem(t, a.do(http.MethodGet, "/v1/users", tok, nil), http.StatusTooManyRequests, "rate_limited")

		a.Clock.Advance(50 * time.Second) // the next window
		if v, _ := a.verify(t, tok); !v.Valid {
			t.Fatalf("verify in the next window: %+v", v)
		}
	})
}

// TestLimits_OAuth: /oauth2/token is a use of the client's key, and
// introspection of a rate-limited key's token is inactive. Over the limit,
// the OAuth endpoints answer 429 as RFC 6749 section 5.2 JSON, which OAuth
// clients read (not problem+json), with Retry-After and the RateLimit
// fields.
func TestLimits_OAuth(t *testing.T) {
	onLimitStores(t, func(t *testing.T, a api) {
		k := a.createLimitedKey(t, perMinute(2))
		tok := a.token(t, k.Key) // use 1
		admin := a.createLimitedKey(t, nil)
		form := "token=" + tok + "&token_type_hint=access_token"
		introspect := func() map[string]any {
			res := a.DoRaw(t, a.Handler, http.MethodPost, "/oauth2/introspect", http.Header{
				"Authorization": {"Bearer " + admin.Key}, "Content-Type": {"application/x-www-form-urlencoded"},
			}, form)
			a.CheckResponse(t, res)
			want(t, res, http.StatusOK)
			return res.Map(t)
		}
		if got := introspect(); got["active"] != true { // use 2
			t.Fatalf("introspect: %v", got)
		}
		if got := introspect(); got["active"] != false {
			t.Fatalf("introspect over the limit: got %v, want inactive", got)
		}
		res := a.DoRaw(t, a.Handler, http.MethodPost, "/oauth2/token", http.Header{
			"Content-Type": {"application/x-www-form-urlencoded"},
		}, "grant_type=client_credentials&client_id="+k.ID+"&client_secret="+k.Key)
		wantOAuthRateLimited(t, a, res)
		// The rate-limited key as the client of introspection and revocation.
		for _, path := range []string{"/oauth2/introspect", "/oauth2/revoke"} {
			res := a.DoRaw(t, a.Handler, http.MethodPost, path, http.Header{
				"Authorization": {"Bearer " + k.Key}, "Content-Type": {"application/x-www-form-urlencoded"},
			}, form)
			wantOAuthRateLimited(t, a, res)
		}
	})
}

// wantOAuthRateLimited checks a 429 of an OAuth endpoint: RFC 6749
// section 5.2 JSON with error rate_limited, and the headers a client needs
// to wait.
func wantOAuthRateLimited(t *testing.T, a api, res *httpapitest.Response) {
	t.Helper()
	a.CheckResponse(t, res)
	want(t, res, http.StatusTooManyRequests)
	if ct := res.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	body := res.Map(t)
	if body["error"] != "rate_limited" || body["error_description"] == "" {
		t.Errorf("body %v, want error rate_limited with a description", body)
	}
	h := res.Header
	if h.Get("Retry-After") == "" || h.Get("RateLimit") == "" || h.Get("RateLimit-Policy") == "" || h.Get("Cache-Control") != "no-store" {
		t.Errorf("429 headers: %v", h)
	}
}

// TestLimits_Credits: verifications spend credits, token issuance does
// not; spent, a verify is usage_exceeded; the key shows what is left, and
// PATCH sets it anew.
func TestLimits_Credits(t *testing.T) {
	onLimitStores(t, func(t *testing.T, a api) {
		k := a.createLimitedKey(t, map[string]any{"credits": map[string]any{"remaining": 2}})
		tok := a.token(t, k.Key)
		a.token(t, k.Key)
		for i := range 2 {
			if v, _ := a.verify(t, tok); !v.Valid {
				t.Fatalf("verify %d: %+v", i, v)
			}
		}
		if v, res := a.verify(t, tok); v.Valid || v.Reason != account.ReasonUsageExceeded || res.Header.Get("Retry-After") != "" {
			t.Fatalf("verify with no credits: got %+v, Retry-After %q; want usage_exceeded, none", v, res.Header.Get("Retry-After"))
		}
		var got keyJSON
		a.do(http.MethodGet, "/v1/api-keys/"+k.ID, a.AdminKey, nil).Decode(t, &got)
		if got.Credits == nil || got.Credits.Remaining != 0 {
			t.Fatalf("credits shown: %+v, want 0 remaining", got.Credits)
		}
		var list struct {
			Data []keyJSON `json:"data"`
		}
		a.do(http.MethodGet, "/v1/api-keys?limit=100", a.AdminKey, nil).Decode(t, &list)
		for _, l := range list.Data {
			if l.ID == k.ID && (l.Credits == nil || l.Credits.Remaining != 0) {
				t.Fatalf("credits in the list: %+v, want 0 remaining", l.Credits)
			}
		}
		a.token(t, k.Key) // issuance is not refused for credits
		res := a.do(http.MethodPatch, "/v1/api-keys/"+k.ID, a.AdminKey, map[string]any{"credits": map[string]any{"remaining": 5}})
		want(t, res, http.StatusOK)
		res.Decode(t, &got)
		if got.Credits == nil || got.Credits.Remaining != 5 {
			t.Fatalf("credits after PATCH: %+v, want 5", got.Credits)
		}
		if v, _ := a.verify(t, tok); !v.Valid {
			t.Fatalf("verify after PATCH: %+v", v)
		}
		a.do(http.MethodGet, "/v1/api-keys/"+k.ID, a.AdminKey, nil).Decode(t, &got)
		if got.Credits.Remaining != 4 {
			t.Fatalf("credits shown: %d, want 4", got.Credits.Remaining)
		}
		// null removes them: the key verifies without bound.
		a.do(http.MethodPatch, "/v1/api-keys/"+k.ID, a.AdminKey, map[string]any{"credits": nil}).Decode(t, &got)
		if got.Credits != nil {
			t.Fatalf("credits after null: %+v", got.Credits)
		}
	})
}

// TestLimits_Refill: a daily refill sets the remaining count to its
// amount at 00:00 UTC; until then a spent key says when.
func TestLimits_Refill(t *testing.T) {
	onLimitStores(t, func(t *testing.T, a api) {
		k := a.createLimitedKey(t, map[string]any{"credits": map[string]any{"remaining": 1, "refill": map[string]any{"amount": 2, "interval": "daily"}}})
		a.Clock.Advance(23 * time.Hour)
		res := a.do(http.MethodPost, "/v1/auth/token", k.Key, map[string]any{"scopes": []string{"read:users"}, "expires_in": "2h"})
		want(t, res, http.StatusCreated)
		var issued struct {
			AccessToken string `json:"access_token"`
		}
		res.Decode(t, &issued)
		tok := issued.AccessToken
		if v, _ := a.verify(t, tok); !v.Valid {
			t.Fatalf("verify: %+v", v)
		}
		v, res := a.verify(t, tok)
		if v.Reason != account.ReasonUsageExceeded || res.Header.Get("Retry-After") != "3600" {
			t.Fatalf("spent: got %+v, Retry-After %q; want usage_exceeded, 3600", v, res.Header.Get("Retry-After"))
		}
		a.Clock.Advance(time.Hour)
		for i := range 2 {
			if v, _ := a.verify(t, tok); !v.Valid {
				t.Fatalf("verify %d after the refill: %+v", i, v)
			}
		}
		if v, _ := a.verify(t, tok); v.Reason != account.ReasonUsageExceeded {
			t.Fatalf("third verify after the refill: %+v", v)
		}
	})
}

// TestLimits_Exact: 40 simultaneous verifications against 19 remaining
// uses, of credits or of a rate limit, give exactly 19 valid answers.
func TestLimits_Exact(t *testing.T) {
	for name, limits := range map[string]map[string]any{
		"credits":    {"credits": map[string]any{"remaining": 19}},
		"rate_limit": {"rate_limits": []map[string]any{{"name": "hour", "limit": 20, "period": "1h"}}}, // issuance takes one
	} {
		t.Run(name, func(t *testing.T) {
			onLimitStores(t, func(t *testing.T, a api) {
				k := a.createLimitedKey(t, limits)
				if got := a.verifyAll(t, 40, []string{a.token(t, k.Key)}, nil); got["valid"] != 19 {
					t.Fatalf("answers: got %v, want 19 valid", got)
				}
			})
		})
	}
}

// TestLimits_Sharded: a key allowed 10,000 uses a second spreads its uses
// over 20 usage records (500 a second each, under DynamoDB's 1,000
// writes a second per item), each counting its share of every limit (200
// of a daily 4,000): 40 simultaneous verifications are all valid, spread
// over more than one record, none beyond the 20th.
func TestLimits_Sharded(t *testing.T) {
	onLimitStores(t, func(t *testing.T, a api) {
		k := a.createLimitedKey(t, map[string]any{"rate_limits": []map[string]any{
			{"name": "burst", "limit": 10000, "period": "1s"}, {"name": "day", "limit": 4000, "period": "1d"},
		}})
		if got := a.verifyAll(t, 40, []string{a.token(t, k.Key)}, nil); got["valid"] != 40 {
			t.Fatalf("answers: got %v, want 40 valid", got)
		}
		shards := a.dayCounts(t, k.ID, 21)
		used, total := 0, int64(0)
		for _, n := range shards {
			total += n
			if n > 0 {
				used++
			}
		}
		if total != 41 || used < 2 || shards[20] != 0 {
			t.Fatalf("uses of the daily limit by record: %v; want 41 in all (issuance and 40 verifications), over 2 or more of the first 20", shards)
		}
	})
}

// dayCounts returns the uses of the "day" limit each of the first n usage
// records of the key counted.
func (a api) dayCounts(t *testing.T, keyID string, n int) []int64 {
	t.Helper()
	var shards []int64
	for j := range n {
		usage, err := a.Store.KeyUsage(context.Background(), account.UsageRecord{KeyID: keyID, Shard: j})
		if err != nil {
			t.Fatal(err)
		}
		var day int64
		for name, n := range usage[0] {
			if strings.HasPrefix(name, "r:day:") {
				day += n
			}
		}
		shards = append(shards, day)
	}
	return shards
}

// writeCounter counts the usage record writes of the store it wraps.
type writeCounter struct {
	account.Store
	writes atomic.Int64
}

func (c *writeCounter) ChangeKeyUsage(ctx context.Context, keyID string, shard int, ch account.UsageChange) (map[string]int64, bool, error) {
	c.writes.Add(1)
	return c.Store.ChangeKeyUsage(ctx, keyID, shard, ch)
}

// TestLimits_WritesPerUse: a use writes at most two usage records, a
// key's limits each keep a share of 100 or more per record, and a refused
// use of a full window costs one process at most two writes: a key of
// 10,000 a second but 20 a day has one record (20 is no share for 20),
// exact, one write per allowed use, and refusals of the full day cost one
// write, then none.
func TestLimits_WritesPerUse(t *testing.T) {
	for name, newStore := range httpapitest.Stores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			store := &writeCounter{Store: newStore(t)}
			env := httpapitest.NewServerOver(t, store)
			env.Clock.Set(env.Clock.Now().Truncate(24 * time.Hour).Add(24 * time.Hour))
			a := api{Env: env, t: t}
			k := a.createLimitedKey(t, map[string]any{"rate_limits": []map[string]any{
				{"name": "burst", "limit": 10000, "period": "1s"}, {"name": "day", "limit": 20, "period": "1d"},
			}})
			tok := a.token(t, k.Key)
			valid, refusalWrites := 0, int64(0)
			for i := range 25 {
				before := store.writes.Load()
				v, _ := a.verify(t, tok)
				writes := store.writes.Load() - before
				switch {
				case v.Valid && writes != 1:
					t.Errorf("verify %d, valid: %d usage record writes, want 1", i+1, writes)
				case !v.Valid && v.Reason != account.ReasonRateLimited:
					t.Errorf("verify %d: %+v, want rate_limited", i+1, v)
				case !v.Valid:
					refusalWrites += writes
				}
				if v.Valid {
					valid++
				}
				a.Clock.Advance(time.Second)
			}
			if valid != 19 || refusalWrites > 2 {
				t.Fatalf("valid %d (want 19, one taken by issuance), refusals wrote %d times (want 2 at most)", valid, refusalWrites)
			}
		})
	}
}

// TestLimits_ShardRefusal: a refusal of a sharded key answers the soonest
// a record frees and is remembered per record: with 1,000 a second and
// 1,002 a day over two records, record 0 full for this second and record
// 1 full for the day, a verify is refused with Retry-After 1 (not the
// 12 hours to midnight) and a second later is valid, in record 0.
func TestLimits_ShardRefusal(t *testing.T) {
	onLimitStores(t, func(t *testing.T, a api) {
		a.Clock.Advance(12 * time.Hour)
		sec := account.RateLimit{Name: "sec", Limit: 1000, Period: time.Second}
		day := account.RateLimit{Name: "day", Limit: 1002, Period: 24 * time.Hour}
		// Either record may be tried first: 8 keys make a pass by chance
		// of the code before the fix 1 in 256.
		for range 8 {
			// The token first, so that the limits start with no use.
			k := a.createLimitedKey(t, nil)
			tok := a.token(t, k.Key)
			want(t, a.do(http.MethodPatch, "/v1/api-keys/"+k.ID, a.AdminKey, map[string]any{"rate_limits": []map[string]any{
				{"name": "sec", "limit": 1000, "period": "1s"}, {"name": "day", "limit": 1002, "period": "1d"},
			}}), http.StatusOK)
			a.Clock.Advance(time.Second)
			now := a.Clock.Now()
			step := func(l account.RateLimit, n int64) account.CounterStep {
				return account.CounterStep{Name: account.RateLimitCounter(l, now), Start: 0, Delta: n, Min: 0, Max: 1 << 40}
			}
			for j, steps := range [][]account.CounterStep{{step(sec, 500), step(day, 500)}, {step(day, 501)}} {
				if _, ok, err := a.Store.ChangeKeyUsage(context.Background(), k.ID, j, account.UsageChange{Steps: steps}); err != nil || !ok {
					t.Fatal(err, ok)
				}
			}
			v, res := a.verify(t, tok)
			if v.Valid || res.Header.Get("Retry-After") != "1" {
				t.Fatalf("verify with both records full: got %+v, Retry-After %q; want rate_limited, 1", v, res.Header.Get("Retry-After"))
			}
			a.Clock.Advance(time.Second)
			if v, res := a.verify(t, tok); !v.Valid {
				t.Fatalf("verify a second later: got %+v, Retry-After %q; want valid (record 0 has a use of the day left)", v, res.Header.Get("Retry-After"))
			}
		}
	})
}

// TestLimits_Subtree: a key's limits bound its whole subtree: the uses of
// the keys it created count against its limits too, and once they are
// reached neither it nor they are served. A limited key creates or
// changes only keys limited as tightly: one without limits, or with a
// looser limit, is 403 (and no key is created or changed).
func TestLimits_Subtree(t *testing.T) {
	onLimitStores(t, func(t *testing.T, a api) {
		parent := a.createLimitedKey(t, perMinute(10))
		create := func(limits map[string]any) *httpapitest.Response {
			body := map[string]any{"name": "child", "scopes": []string{"read:users"}}
			for k, v := range limits {
				body[k] = v
			}
			return a.do(http.MethodPost, "/v1/api-keys", parent.Key, body)
		}
		p := wantProblem(t, create(nil), http.StatusForbidden, "forbidden") // use 1
		if !strings.Contains(p.Detail, "rate_limits") {
			t.Errorf("403 for a child without limits: %q does not name rate_limits", p.Detail)
		}
		wantProblem(t, create(perMinute(11)), http.StatusForbidden, "forbidden") // use 2
		res := create(perMinute(10))                                             // use 3
		want(t, res, http.StatusCreated)
		var child keyJSON
		res.Decode(t, &child)
		wantProblem(t, a.do(http.MethodPatch, "/v1/api-keys/"+child.ID, parent.Key, map[string]any{"rate_limits": nil}), http.StatusForbidden, "forbidden") // use 4
		res = a.do(http.MethodGet, "/v1/api-keys/"+child.ID, a.AdminKey, nil)
		want(t, res, http.StatusOK)
		if res.Decode(t, &child); len(child.RateLimits) != 1 {
			t.Fatalf("the child's limits after a refused PATCH: %+v", child.RateLimits)
		}
		for range 5 {
			a.token(t, child.Key) // uses 5 to 9: the child's count against its parent too
		}
		a.token(t, parent.Key) // use 10
		res = a.do(http.MethodPost, "/v1/auth/token", parent.Key, map[string]any{"scopes": []string{"read:users"}})
		wantProblem(t, res, http.StatusTooManyRequests, "rate_limited")
		res = a.do(http.MethodPost, "/v1/auth/token", child.Key, map[string]any{"scopes": []string{"read:users"}})
		wantProblem(t, res, http.StatusTooManyRequests, "rate_limited") // its 6th use, but its parent's 11th
	})
}

// TestLimits_Change: PATCH sets, replaces and removes a key's limits, the
// events feed records each change, no use records an event, and a key
// cannot change its own limits.
func TestLimits_Change(t *testing.T) {
	onLimitStores(t, func(t *testing.T, a api) {
		k := a.createLimitedKey(t, nil)
		if len(k.RateLimits) != 0 || k.Credits != nil {
			t.Fatalf("a key created without limits: %+v", k)
		}
		var got keyJSON
		res := a.do(http.MethodPatch, "/v1/api-keys/"+k.ID, a.AdminKey, perMinute(1))
		want(t, res, http.StatusOK)
		res.Decode(t, &got)
		if len(got.RateLimits) != 1 || got.RateLimits[0].Period != "1m" || got.RateLimits[0].Limit != 1 {
			t.Fatalf("rate limits after PATCH: %+v", got.RateLimits)
		}
		a.token(t, k.Key)
		wantProblem(t, a.do(http.MethodPost, "/v1/auth/token", k.Key, map[string]any{}), http.StatusTooManyRequests, "rate_limited")
		a.do(http.MethodPatch, "/v1/api-keys/"+k.ID, a.AdminKey, map[string]any{"rate_limits": []any{}}).Decode(t, &got)
		if len(got.RateLimits) != 0 {
			t.Fatalf("rate limits after []: %+v", got.RateLimits)
		}
		a.token(t, k.Key)

		res = a.do(http.MethodPatch, "/v1/api-keys/"+k.ID, k.Key, perMinute(100))
		wantProblem(t, res, http.StatusForbidden, "forbidden")

		var limits []int
		for _, e := range a.tail(a.AdminKey, feedStart, 3) {
			if e.Data["id"] != k.ID {
				continue
			}
			if e.Type != account.EventAPIKeyCreated && e.Type != account.EventAPIKeyUpdated {
				t.Errorf("an event %s of the key: uses record none", e.Type)
			}
			if e.Type == account.EventAPIKeyUpdated {
				rl, _ := e.Data["rate_limits"].([]any)
				limits = append(limits, len(rl))
			}
		}
		if strconv.Itoa(len(limits)) != "2" || limits[0]+limits[1] != 1 {
			t.Fatalf("api_key.updated events of the key, by number of limits: %v; want one with 1, one with 0", limits)
		}
	})
}

// TestLimits_Validation: invalid limits are 400, naming the field, on
// create and on PATCH; nothing is created or changed.
func TestLimits_Validation(t *testing.T) {
	a := newAPI(t)
	k, _ := a.CreateAPIKey(t, "read:users")
	limit := func(name string, n any, period string) map[string]any {
		return map[string]any{"name": name, "limit": n, "period": period}
	}
	six := []any{}
	for i := range 6 {
		six = append(six, limit("l"+strconv.Itoa(i), 1, "1s"))
	}
	for _, c := range []struct {
		name  string
		body  map[string]any
		field string
	}{
		{"limit 0", map[string]any{"rate_limits": []any{limit("a", 0, "1s")}}, "rate_limits[0].limit"},
		{"period 0s", map[string]any{"rate_limits": []any{limit("a", 1, "0s")}}, "rate_limits[0].period"},
		{"period 2d", map[string]any{"rate_limits": []any{limit("a", 1, "2d")}}, "rate_limits[0].period"},
		{"period 25h", map[string]any{"rate_limits": []any{limit("a", 1, "25h")}}, "rate_limits[0].period"},
		{"unknown member", map[string]any{"rate_limits": []any{map[string]any{"name": "a", "limit": 1, "period": "1s", "burst": 2}}}, "rate_limits[0].burst"},
		{"duplicate names", map[string]any{"rate_limits": []any{limit("a", 1, "1s"), limit("a", 2, "1m")}}, "rate_limits[1].name"},
		{"bad name", map[string]any{"rate_limits": []any{limit("a b", 1, "1s")}}, "rate_limits[0].name"},
		{"six limits", map[string]any{"rate_limits": six}, "rate_limits"},
		{"more than shards carry", map[string]any{"rate_limits": []any{limit("a", 32001, "1s")}}, "rate_limits[0].limit"},
		{"fractional limit", map[string]any{"rate_limits": []any{limit("a", 1.5, "1s")}}, "rate_limits[0].limit"},
		{"negative credits", map[string]any{"credits": map[string]any{"remaining": -1}}, "credits.remaining"},
		{"credits without remaining", map[string]any{"credits": map[string]any{}}, "credits.remaining"},
		{"unknown credits member", map[string]any{"credits": map[string]any{"remaining": 1, "left": 2}}, "credits.left"},
		{"refill interval", map[string]any{"credits": map[string]any{"remaining": 1, "refill": map[string]any{"amount": 1, "interval": "weekly"}}}, "credits.refill.interval"},
		{"unknown refill member", map[string]any{"credits": map[string]any{"remaining": 1, "refill": map[string]any{"amount": 1, "interval": "daily", "bogus": 1}}}, "credits.refill.bogus"},
		{"refill not an object", map[string]any{"credits": map[string]any{"remaining": 1, "refill": 3}}, "credits.refill"},
		{"refill amount", map[string]any{"credits": map[string]any{"remaining": 1, "refill": map[string]any{"amount": 0, "interval": "daily"}}}, "credits.refill.amount"},
	} {
		t.Run(c.name, func(t *testing.T) {
			create := map[string]any{"name": "k", "scopes": []string{"read:users"}}
			for f, v := range c.body {
				create[f] = v
			}
			wantField(t, wantProblem(t, a.do(http.MethodPost, "/v1/api-keys", a.AdminKey, create), http.StatusBadRequest, "invalid_request"), c.field)
			wantField(t, wantProblem(t, a.do(http.MethodPatch, "/v1/api-keys/"+k.ID, a.AdminKey, c.body), http.StatusBadRequest, "invalid_request"), c.field)
		})
	}
}

// credits returns the remaining credits of the key id, as the admin sees
// them.
func (a api) credits(t *testing.T, id string) int64 {
	t.Helper()
	res := a.do(http.MethodGet, "/v1/api-keys/"+id, a.AdminKey, nil)
	want(t, res, http.StatusOK)
	var k keyJSON
	res.Decode(t, &k)
	if k.Credits == nil {
		t.Fatalf("key %s has no credits", id)
	}
	return k.Credits.Remaining
}

// introspectAs introspects tok with secret as the client's credential.
func (a api) introspectAs(t *testing.T, secret, tok string) *httpapitest.Response {
	t.Helper()
	res := a.DoRaw(t, a.Handler, http.MethodPost, "/oauth2/introspect", http.Header{
		"Authorization": {"Bearer " + secret}, "Content-Type": {"application/x-www-form-urlencoded"},
	}, "token="+tok)
	a.CheckResponse(t, res)
	return res
}

// TestLimits_IntrospectOtherTenant: a client bound to an organization
// that introspects another tenant's token gets {"active": false} and
// nothing of the token's key: no count, no credit spent, none of its
// RateLimit fields.
func TestLimits_IntrospectOtherTenant(t *testing.T) {
	onLimitStores(t, func(t *testing.T, a api) {
		mine, theirs := a.CreateOrganization(t, uniqueSlug()), a.CreateOrganization(t, uniqueSlug())
		victim := a.createLimitedKey(t, map[string]any{"organization_id": theirs.ID,
			"credits": map[string]any{"remaining": 2}, "rate_limits": []map[string]any{{"name": "minute", "limit": 10, "period": "1m"}}})
		tok := a.token(t, victim.Key)
		snoop := a.createLimitedKey(t, map[string]any{"organization_id": mine.ID})
		for range 3 {
			res := a.introspectAs(t, snoop.Key, tok)
			want(t, res, http.StatusOK)
			if got := res.Map(t); got["active"] != false || len(got) != 1 {
				t.Fatalf("introspection of another tenant's token: got %v, want {active: false}", got)
			}
			for _, h := range []string{"RateLimit", "RateLimit-Policy", "Retry-After"} {
				if v := res.Header.Get(h); v != "" {
					t.Errorf("introspection of another tenant's token: %s %q, the other key's", h, v)
				}
			}
		}
		if got := a.credits(t, victim.ID); got != 2 {
			t.Fatalf("the other tenant's key's credits: got %d, want 2 (untouched)", got)
		}
		if v, res := a.verify(t, tok); !v.Valid || res.Header.Get("RateLimit") != `"minute";r=8;t=60, "credits";r=1` {
			t.Fatalf("the owner's verify: got %+v, RateLimit %q; want valid, r=8 (issuance and this verify only), and 1 of its 2 credits left", v, res.Header.Get("RateLimit"))
		}
	})
}

// TestLimits_IntrospectOwn: a client that introspects its own token uses
// its key once per request (the verification spends its credit but counts
// no second use), and the answer carries the client's RateLimit fields.
func TestLimits_IntrospectOwn(t *testing.T) {
	onLimitStores(t, func(t *testing.T, a api) {
		k := a.createLimitedKey(t, map[string]any{"credits": map[string]any{"remaining": 5},
			"rate_limits": []map[string]any{{"name": "minute", "limit": 3, "period": "1m"}}})
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
		if got := a.credits(t, k.ID); got != 3 {
			t.Fatalf("credits: got %d, want 3 (one per introspection)", got)
		}
		wantOAuthRateLimited(t, a, a.introspectAs(t, k.Key, tok))
	})
}

// TestLimits_AuthorizerRule: the authorizer checks the route's rule
// before it counts: a token the rule refuses (a scope it lacks) spends no
// credit; one it allows spends one.
func TestLimits_AuthorizerRule(t *testing.T) {
	onLimitStores(t, func(t *testing.T, a api) {
		const orders = "https://orders.example.com"
		k := a.createLimitedKey(t, map[string]any{"credits": map[string]any{"remaining": 2}})
		res := a.do(http.MethodPost, "/v1/auth/token", k.Key, map[string]any{"scopes": []string{"read:users"}, "audience": orders})
		want(t, res, http.StatusCreated)
		tok := res.Map(t)["access_token"].(string)
		az := authorizer.New(account.NewTokenVerifier(a.Store, token.NewParser(httpapitest.Issuer, a.PublicKey), a.Clock.Now),
			authorizer.Routes{"GET /orders": {Scope: "read:orders", Audience: orders}, "GET /users": {Scope: "read:users", Audience: orders}},
			slog.New(slog.DiscardHandler), nil)
		authorize := func(route string) bool {
			out, err := az.Authorize(context.Background(), events.APIGatewayV2CustomAuthorizerV2Request{
				Version: "2.0", Type: "REQUEST", RouteKey: route, Headers: map[string]string{"authorization": "Bearer " + tok},
			})
			if err != nil {
				t.Fatal(err)
			}
			return out.IsAuthorized
		}
		for range 3 {
			if authorize("GET /orders") {
				t.Fatal("GET /orders without read:orders: authorized")
			}
		}
		if got := a.credits(t, k.ID); got != 2 {
			t.Fatalf("credits after 3 refusals by the route's scope: got %d, want 2", got)
		}
		if !authorize("GET /users") {
			t.Fatal("GET /users with read:users: denied")
		}
		if got := a.credits(t, k.ID); got != 1 {
			t.Fatalf("credits after an allowed request: got %d, want 1", got)
		}
	})
}

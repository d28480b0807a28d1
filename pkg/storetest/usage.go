package storetest

import (
	"maps"
	"reflect"
	"sync"
	"testing"
	"time"

	"latchkey/pkg/account"
)

// keyUsage checks ChangeKeyUsage, the one write that counts the uses of
// a limited key: all steps or none, bounds that hold under concurrency,
// counters removed, records apart by key and shard.
func (s suite) keyUsage(t *testing.T) {
	step := func(name string, start, delta, lo, hi int64) account.CounterStep {
		return account.CounterStep{Name: name, Start: start, Delta: delta, Min: lo, Max: hi}
	}
	t.Run("Exact", func(t *testing.T) {
		// 40 simultaneous uses against a bound of 19 give 19 counted.
		f := s.fix(t)
		var wg sync.WaitGroup
		var mu sync.Mutex
		counted := 0
		for range 40 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, ok, err := f.s.ChangeKeyUsage(f.ctx, "key_exact", 0, account.UsageChange{Steps: []account.CounterStep{
					step("r:w:1000:1", 0, 1, 1, 19), step("c:x:0", 100, -1, 0, 1000),
				}})
				if err != nil {
					t.Error(err)
				}
				if ok {
					mu.Lock()
					counted++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if counted != 19 {
			t.Fatalf("uses counted: got %d, want 19", counted)
		}
		usage, err := f.s.KeyUsage(f.ctx, records("key_exact")...)
		f.ok(err, "KeyUsage")
		if got, want := usage[0], map[string]int64{"r:w:1000:1": 19, "c:x:0": 81}; !maps.Equal(got, want) {
			t.Fatalf("KeyUsage: got %v, want %v", got, want)
		}
	})
	t.Run("AllOrNothing", func(t *testing.T) {
		// A step out of bounds refuses the change whole, and the
		// counters come back as they were.
		f := s.fix(t)
		c := account.UsageChange{Steps: []account.CounterStep{step("r:a:1000:1", 0, 1, 1, 5), step("c:b:0", 1, -1, 0, 10)}, ExpiresAt: time.Now().Add(time.Hour)}
		got, ok, err := f.s.ChangeKeyUsage(f.ctx, "key_all", 0, c)
		f.ok(err, "ChangeKeyUsage")
		if want := map[string]int64{"r:a:1000:1": 1, "c:b:0": 0}; !ok || !maps.Equal(got, want) {
			t.Fatalf("first change: got %v, %v; want %v, applied", got, ok, want)
		}
		got, ok, err = f.s.ChangeKeyUsage(f.ctx, "key_all", 0, c)
		f.ok(err, "ChangeKeyUsage")
		if want := map[string]int64{"r:a:1000:1": 1, "c:b:0": 0}; ok || !maps.Equal(got, want) {
			t.Fatalf("refused change: got %v, %v; want %v, refused", got, ok, want)
		}
		// A missing counter whose start is out of bounds refuses too.
		_, ok, err = f.s.ChangeKeyUsage(f.ctx, "key_all", 0, account.UsageChange{Steps: []account.CounterStep{step("c:none:0", 0, -1, 0, 10)}})
		f.ok(err, "ChangeKeyUsage")
		if ok {
			t.Fatal("a change taking a missing counter below its bound was applied")
		}
		// Other shards and keys are records of their own.
		got, ok, err = f.s.ChangeKeyUsage(f.ctx, "key_all", 1, c)
		f.ok(err, "ChangeKeyUsage")
		if want := map[string]int64{"r:a:1000:1": 1, "c:b:0": 0}; !ok || !maps.Equal(got, want) {
			t.Fatalf("shard 1: got %v, %v; want %v, applied", got, ok, want)
		}
	})
	t.Run("Remove", func(t *testing.T) {
		f := s.fix(t)
		_, _, err := f.s.ChangeKeyUsage(f.ctx, "key_rm", 0, account.UsageChange{Steps: []account.CounterStep{step("r:a:1000:1", 0, 1, 1, 5), step("r:a:1000:2", 0, 1, 1, 5)}})
		f.ok(err, "ChangeKeyUsage")
		got, ok, err := f.s.ChangeKeyUsage(f.ctx, "key_rm", 0, account.UsageChange{Steps: []account.CounterStep{step("r:a:1000:3", 0, 1, 1, 5)}, Remove: []string{"r:a:1000:1", "r:a:1000:0"}})
		f.ok(err, "ChangeKeyUsage")
		if want := map[string]int64{"r:a:1000:2": 1, "r:a:1000:3": 1}; !ok || !maps.Equal(got, want) {
			t.Fatalf("after a remove: got %v, %v; want %v", got, ok, want)
		}
		usage, err := f.s.KeyUsage(f.ctx, records("key_none", "key_rm")...)
		f.ok(err, "KeyUsage")
		if want := map[string]int64{"r:a:1000:2": 1, "r:a:1000:3": 1}; len(usage) != 2 || len(usage[0]) != 0 || usage[0] == nil || !maps.Equal(usage[1], want) {
			t.Fatalf("KeyUsage of a key never used and one used: %v; want [map[] %v]", usage, want)
		}
	})
	t.Run("Records", func(t *testing.T) {
		// The records of one key and another's, each shard its own, come
		// back in the order asked, one never written included.
		f := s.fix(t)
		for shard, n := range []int64{5, 7, 0, 9} {
			if n == 0 {
				continue
			}
			_, _, err := f.s.ChangeKeyUsage(f.ctx, "key_rec", shard, account.UsageChange{Steps: []account.CounterStep{step("c:s:0", n, -1, 0, 100)}})
			f.ok(err, "ChangeKeyUsage")
		}
		_, _, err := f.s.ChangeKeyUsage(f.ctx, "key_other", 1, account.UsageChange{Steps: []account.CounterStep{step("c:s:0", 3, -1, 0, 100)}})
		f.ok(err, "ChangeKeyUsage")
		usage, err := f.s.KeyUsage(f.ctx, account.UsageRecord{KeyID: "key_rec", Shard: 3}, account.UsageRecord{KeyID: "key_other", Shard: 1},
			account.UsageRecord{KeyID: "key_rec", Shard: 2}, account.UsageRecord{KeyID: "key_rec", Shard: 0}, account.UsageRecord{KeyID: "key_rec", Shard: 1})
		f.ok(err, "KeyUsage")
		var got []int64
		for _, u := range usage {
			got = append(got, u["c:s:0"])
		}
		if want := []int64{8, 2, 0, 4, 6}; !reflect.DeepEqual(got, want) || usage[2] == nil {
			t.Fatalf("KeyUsage of shards 3, 1 (another key), 2, 0, 1: got %v (%v), want %v", got, usage, want)
		}
	})
}

// records names record 0 of each key of ids.
func records(ids ...string) []account.UsageRecord {
	out := make([]account.UsageRecord, len(ids))
	for i, id := range ids {
		out[i] = account.UsageRecord{KeyID: id}
	}
	return out
}

// keysUsage checks ChangeKeysUsage, the one step that counts a use of a
// key against its own limits and those of the keys above it: all records
// or none, the refusing ones' counters back, the others read after when
// asked, bounds that hold under concurrency across records.
func (s suite) keysUsage(t *testing.T) {
	step := func(name string, start, delta, lo, hi int64) account.CounterStep {
		return account.CounterStep{Name: name, Start: start, Delta: delta, Min: lo, Max: hi}
	}
	spend := func(keyID string, credits int64, read bool) account.KeyUsageChange {
		return account.KeyUsageChange{KeyID: keyID, UsageChange: account.UsageChange{Steps: []account.CounterStep{step("c:x:0", credits, -1, 0, 1000)}}, ReadAfter: read}
	}
	t.Run("AllOrNothing", func(t *testing.T) {
		f := s.fix(t)
		got, ok, err := f.s.ChangeKeysUsage(f.ctx, []account.KeyUsageChange{spend("key_child", 5, true), spend("key_parent", 1, false)})
		f.ok(err, "ChangeKeysUsage")
		if !ok || len(got) != 2 || !maps.Equal(got[0], map[string]int64{"c:x:0": 4}) || got[1] != nil {
			t.Fatalf("first use: got %v, %v; want [map[c:x:0:4] nil], applied", got, ok)
		}
		// The parent's last credit is spent: the child's are left alone.
		got, ok, err = f.s.ChangeKeysUsage(f.ctx, []account.KeyUsageChange{spend("key_child", 5, true), spend("key_parent", 1, false)})
		f.ok(err, "ChangeKeysUsage")
		if ok || len(got) != 2 || got[0] != nil || !maps.Equal(got[1], map[string]int64{"c:x:0": 0}) {
			t.Fatalf("use past the parent's credits: got %v, %v; want [nil map[c:x:0:0]], refused", got, ok)
		}
		usage, err := f.s.KeyUsage(f.ctx, records("key_child", "key_parent")...)
		f.ok(err, "KeyUsage")
		if want := map[string]int64{"c:x:0": 4}; !maps.Equal(usage[0], want) {
			t.Fatalf("the child's record after a refused use: %v, want %v", usage[0], want)
		}
		// A record that does not exist yet, refused at its start, comes
		// back empty, not nil.
		got, ok, err = f.s.ChangeKeysUsage(f.ctx, []account.KeyUsageChange{spend("key_child", 5, true), spend("key_spent", 0, false)})
		f.ok(err, "ChangeKeysUsage")
		if ok || got[1] == nil || len(got[1]) != 0 {
			t.Fatalf("use past the credits of a key never used: got %v, %v; want refused, an empty record", got, ok)
		}
	})
	t.Run("Exact", func(t *testing.T) {
		// 30 simultaneous uses of two children against a parent's 10
		// credits give 10 counted, in the children's counts too.
		f := s.fix(t)
		var mu sync.Mutex
		counted := 0
		errs := race(30, func(i int) error {
			child := []string{"key_a", "key_b"}[i%2]
			_, ok, err := f.s.ChangeKeysUsage(f.ctx, []account.KeyUsageChange{spend(child, 100, false), spend("key_top", 10, false)})
			if ok {
				mu.Lock()
				counted++
				mu.Unlock()
			}
			return err
		})
		for _, err := range errs {
			f.ok(err, "ChangeKeysUsage")
		}
		usage, err := f.s.KeyUsage(f.ctx, records("key_a", "key_b", "key_top")...)
		f.ok(err, "KeyUsage")
		if spent := 200 - usage[0]["c:x:0"] - usage[1]["c:x:0"]; counted != 10 || usage[2]["c:x:0"] != 0 || spent != 10 {
			t.Fatalf("counted %d, usage %v; want 10 counted, the parent's credits spent, 10 spent by the children", counted, usage)
		}
	})
}

// RunKeyLimits checks that a store keeps the rate limits and credits of
// an API key: on create, on every read that decides a use (GetAPIKey,
// GetAPIKeyByHash, TokenStatus), and as UpdateAPIKey sets, replaces and
// removes them. Apart from Run until every store runs it (the embedded
// store does once it is the table store over bbolt).
func RunKeyLimits(t *testing.T, newStore func(t *testing.T) account.Store) {
	s := suite{newStore: newStore}
	t.Run("KeyLimits", func(t *testing.T) {
		f := s.fix(t)
		k := f.newKey()
		k.RateLimits = []account.RateLimit{{Name: "second", Limit: 10, Period: time.Second}, {Name: "day", Limit: 1000, Period: 24 * time.Hour}}
		k.Credits = &account.Credits{Remaining: 7, SetAt: f.now(), Set: "s1", Refill: &account.CreditRefill{Amount: 100, Interval: account.RefillMonthly}}
		f.ok(f.s.CreateAPIKey(f.ctx, f.opts, k), "CreateAPIKey")
		check := func(what string, want account.APIKey) {
			t.Helper()
			got, err := f.s.GetAPIKey(f.ctx, want.ID)
			f.ok(err, "GetAPIKey")
			byHash, err := f.s.GetAPIKeyByHash(f.ctx, want.Hash)
			f.ok(err, "GetAPIKeyByHash")
			st, err := f.s.TokenStatus(f.ctx, "tok_none", want.ID, nil, "", false)
			f.ok(err, "TokenStatus")
			for name, k := range map[string]account.APIKey{"GetAPIKey": got, "GetAPIKeyByHash": byHash, "TokenStatus": *st.Key} {
				if !reflect.DeepEqual(k.RateLimits, want.RateLimits) || !reflect.DeepEqual(k.Credits, want.Credits) {
					t.Errorf("%s, %s: limits %+v, credits %+v; want %+v, %+v", what, name, k.RateLimits, k.Credits, want.RateLimits, want.Credits)
				}
			}
		}
		k.Credits.SetAt = k.Credits.SetAt.UTC()
		check("created", k)
		limits := []account.RateLimit{{Name: "minute", Limit: 5, Period: time.Minute}}
		credits := &account.Credits{Remaining: 3, SetAt: f.now().UTC(), Set: "s2"}
		_, err := f.s.UpdateAPIKey(f.ctx, f.opts, k.ID, account.APIKeyPatch{RateLimits: &limits, Credits: &account.CreditsChange{Credits: credits}, At: f.now()}, nil)
		f.ok(err, "UpdateAPIKey")
		k.RateLimits, k.Credits = limits, credits
		check("replaced", k)
		none := []account.RateLimit{}
		_, err = f.s.UpdateAPIKey(f.ctx, f.opts, k.ID, account.APIKeyPatch{RateLimits: &none, Credits: &account.CreditsChange{}, At: f.now()}, nil)
		f.ok(err, "UpdateAPIKey")
		k.RateLimits, k.Credits = nil, nil
		check("removed", k)
	})
	t.Run("LimitsAbove", func(t *testing.T) {
		// The reads that decide a use return the limits of the limited
		// keys above the key, root first, and none of the others.
		f := s.fix(t)
		root := f.newKey()
		root.Credits = &account.Credits{Remaining: 2, SetAt: f.now().UTC(), Set: "s1"}
		f.ok(f.s.CreateAPIKey(f.ctx, f.opts, root), "CreateAPIKey")
		mid := f.childKey(root)
		low := f.newChildKey(mid)
		low.RateLimits = []account.RateLimit{{Name: "minute", Limit: 5, Period: time.Minute}}
		low.ExpiresAt = f.now().Add(time.Hour)
		f.ok(f.s.CreateAPIKey(f.ctx, f.opts, low), "CreateAPIKey")
		leaf := f.childKey(low)
		want := []account.KeyLimits{root.Limits(), low.Limits()}
		got, err := f.s.GetAPIKey(f.ctx, leaf.ID)
		f.ok(err, "GetAPIKey")
		byHash, err := f.s.GetAPIKeyByHash(f.ctx, leaf.Hash)
		f.ok(err, "GetAPIKeyByHash")
		st, err := f.s.TokenStatus(f.ctx, "tok_none", leaf.ID, leaf.Ancestors, "", false)
		f.ok(err, "TokenStatus")
		var asked account.APIKey
		_, err = f.s.UpdateAPIKey(f.ctx, f.opts, leaf.ID, account.APIKeyPatch{At: f.now()}, func(k account.APIKey) error {
			asked = k
			return nil
		})
		f.ok(err, "UpdateAPIKey")
		for name, k := range map[string]account.APIKey{"GetAPIKey": got, "GetAPIKeyByHash": byHash, "TokenStatus": *st.Key, "UpdateAPIKey's allow": asked} {
			if diff(account.APIKey{LimitsAbove: k.LimitsAbove}, account.APIKey{LimitsAbove: want}) != "" {
				t.Errorf("%s: LimitsAbove %+v; want %+v", name, k.LimitsAbove, want)
			}
		}
		top, err := f.s.GetAPIKey(f.ctx, mid.ID)
		f.ok(err, "GetAPIKey")
		if len(top.LimitsAbove) != 1 || top.LimitsAbove[0].KeyID != root.ID {
			t.Errorf("the key below the root: LimitsAbove %+v; want the root's only", top.LimitsAbove)
		}
	})
}

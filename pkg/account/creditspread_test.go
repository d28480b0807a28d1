package account_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"latchkey/pkg/account"
)

// usageRecords records the usage records each use writes (the key or
// organization, and the shard) and the reads of usage records.
type usageRecords struct {
	account.Store
	mu     sync.Mutex
	writes []account.UsageRecord
	reads  [][]account.UsageRecord
}

func (u *usageRecords) ChangeKeyUsage(ctx context.Context, keyID string, shard int, c account.UsageChange) (map[string]int64, bool, error) {
	if len(c.Steps) > 0 { // not the removal of old windows
		u.mu.Lock()
		u.writes = append(u.writes, account.UsageRecord{KeyID: keyID, Shard: shard})
		u.mu.Unlock()
	}
	return u.Store.ChangeKeyUsage(ctx, keyID, shard, c)
}

func (u *usageRecords) ChangeKeysUsage(ctx context.Context, changes []account.KeyUsageChange) ([]map[string]int64, bool, error) {
	u.mu.Lock()
	for _, c := range changes {
		u.writes = append(u.writes, account.UsageRecord{KeyID: c.KeyID, Shard: c.Shard})
	}
	u.mu.Unlock()
	return u.Store.ChangeKeysUsage(ctx, changes)
}

func (u *usageRecords) KeyUsage(ctx context.Context, recs ...account.UsageRecord) ([]map[string]int64, error) {
	u.mu.Lock()
	u.reads = append(u.reads, recs)
	u.mu.Unlock()
	return u.Store.KeyUsage(ctx, recs...)
}

// during returns the records fn writes, and the reads of records it makes.
func (u *usageRecords) during(fn func()) ([]account.UsageRecord, [][]account.UsageRecord) {
	u.mu.Lock()
	u.writes, u.reads = nil, nil
	u.mu.Unlock()
	fn()
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.writes, u.reads
}

// shardsOf returns the shards of id among recs, each once.
func shardsOf(recs []account.UsageRecord, id string) map[int]bool {
	out := map[int]bool{}
	for _, r := range recs {
		if r.KeyID == id {
			out[r.Shard] = true
		}
	}
	return out
}

// fastCredits is a rate limit of 5,000 a second, which spreads a key's
// uses over 10 usage records, and 1,000 credits, 100 a record.
var fastCredits = account.NewAPIKey{RateLimits: []account.RateLimitRequest{{Name: "second", Limit: 5000, Period: "1s"}}, Credits: credits(1000)}

// TestLimits_CreditsSpread is issue 34's credits ceiling: a key with
// credits and a rate of 5,000 a second spreads its credits over 10 usage
// records, not one, and stays exact: 300 verifications 16 at a time write all
// 10 records and leave 700 credits (the sum of the records), then 800 at
// once give exactly 700 valid answers and 100 usage_exceeded, and leave
// none on any record.
func TestLimits_CreditsSpread(t *testing.T) {
	onEachStore(t, func(s account.Store) account.Store { return &usageRecords{Store: s} }, func(t *testing.T, e limitsEnv) {
		rec := e.store.(*usageRecords)
		k, secret := e.create(e.secret, fastCredits)
		toks := []string{e.token(secret)}
		var reasons map[string]int
		writes, _ := rec.during(func() { reasons = e.verifyMany(300, toks) })
		if reasons["valid"] != 300 {
			t.Fatalf("300 verifications of a key with 1,000 credits: %v, want 300 valid", reasons)
		}
		if got := len(shardsOf(writes, k.ID)); got != 10 {
			t.Errorf("300 verifications of a key allowed 5,000 a second with 1,000 credits wrote %d of its usage records, want 10", got)
		}
		if left := e.creditsLeft(k.ID); left != 700 {
			t.Errorf("after 300 valid verifications: %d credits left, want 700", left)
		}
		reasons = e.verifyMany(800, toks)
		if reasons["valid"] != 700 || reasons[account.ReasonUsageExceeded] != 100 {
			t.Fatalf("800 simultaneous verifications against 700 credits over 10 records: %v, want 700 valid, 100 usage_exceeded", reasons)
		}
		if left := e.creditsLeft(k.ID); left != 0 {
			t.Errorf("after: %d credits left, want 0", left)
		}
	})
}

// TestLimits_CreditsLastOnOtherRecords: the last credits of a key are
// spent wherever they are, and never twice. With 3 credits left on 3 of
// its 10 records, 40 verifications 16 at a time give exactly 3 valid answers
// (the records they try first are spent: they read the others, in one
// read), and the next verification, refused, writes and reads nothing.
func TestLimits_CreditsLastOnOtherRecords(t *testing.T) {
	onEachStore(t, func(s account.Store) account.Store { return &usageRecords{Store: s} }, func(t *testing.T, e limitsEnv) {
		rec := e.store.(*usageRecords)
		k, secret := e.create(e.secret, fastCredits)
		toks := []string{e.token(secret)}
		// Spend each record's share of 100 but one credit on records 2,
		// 5 and 7.
		counter := "c:" + k.Credits.Set + ":0"
		for j := range 10 {
			spend := int64(100)
			if j == 2 || j == 5 || j == 7 {
				spend = 99
			}
			_, ok, err := e.store.ChangeKeyUsage(e.ctx, k.ID, j, account.UsageChange{Steps: []account.CounterStep{{Name: counter, Start: 100, Delta: -spend, Min: 0, Max: account.MaxCredits}}})
			if err != nil || !ok {
				t.Fatalf("spending record %d: %v, %v", j, ok, err)
			}
		}
		if left := e.creditsLeft(k.ID); left != 3 {
			t.Fatalf("after spending the records: %d credits left, want 3", left)
		}
		var reasons map[string]int
		_, reads := rec.during(func() { reasons = e.verifyMany(40, toks) })
		if reasons["valid"] != 3 || reasons[account.ReasonUsageExceeded] != 37 {
			t.Fatalf("40 simultaneous verifications against 3 credits on 3 of 10 records: %v, want 3 valid, 37 usage_exceeded", reasons)
		}
		if len(reads) == 0 {
			t.Error("no read of the other records")
		}
		for _, r := range reads {
			if len(r) > 8 || len(shardsOf(r, k.ID)) != len(r) {
				t.Errorf("a read of the other records: %v, want at most 8 records of the key", r)
			}
		}
		if left := e.creditsLeft(k.ID); left != 0 {
			t.Errorf("after: %d credits left, want 0", left)
		}
		writes, reads := rec.during(func() {
			if v := e.verify(toks[0]); v.Valid || v.Reason != account.ReasonUsageExceeded || v.Usage == nil || v.Usage.Credits == nil || v.Usage.Credits.Remaining != 0 {
				t.Errorf("a verification once the credits are spent: %+v, want usage_exceeded, 0 credits left", v)
			}
		})
		if len(writes) != 0 || len(reads) != 0 {
			t.Errorf("a verification once this process found the credits spent: writes %v, reads %v, want none", writes, reads)
		}
	})
}

// TestLimits_OrganizationCreditsSpread: an organization's credits spread
// as a key's: an organization allowed 5,000 a second with 1,000 credits
// counts the verifications of its keys over 10 records, exactly: 1,100
// 16 at a time give 1,000 valid answers and 100 usage_exceeded.
func TestLimits_OrganizationCreditsSpread(t *testing.T) {
	onEachStore(t, func(s account.Store) account.Store { return &usageRecords{Store: s} }, func(t *testing.T, e limitsEnv) {
		rec := e.store.(*usageRecords)
		o, _, toks := e.orgWithLimits(account.NewOrganization{RateLimits: fastCredits.RateLimits, Credits: credits(1000)}, account.NewAPIKey{})
		var reasons map[string]int
		writes, _ := rec.during(func() { reasons = e.verifyMany(1100, toks[:]) })
		if reasons["valid"] != 1000 || reasons[account.ReasonUsageExceeded] != 100 {
			t.Fatalf("1,100 simultaneous verifications over two keys of an organization with 1,000 credits: %v, want 1,000 valid, 100 usage_exceeded", reasons)
		}
		if got := len(shardsOf(writes, o.ID)); got != 10 {
			t.Errorf("the verifications wrote %d of the organization's usage records, want 10", got)
		}
		got, err := e.svc.GetOrganization(e.ctx, e.as(e.secret), o.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Credits == nil || got.Credits.Remaining != 0 {
			t.Errorf("the organization's credits after: %+v, want 0 remaining", got.Credits)
		}
	})
}

// TestLimits_CreditsFewKeepOneRecord: credits too few to give each record
// a share of 100 stay on fewer records (199 on one), whatever the rate;
// the records are sized when the credits are set, from the rate limits
// set with them or, in a PATCH of credits alone, the key's.
func TestLimits_CreditsFewKeepOneRecord(t *testing.T) {
	onEachStore(t, func(s account.Store) account.Store { return &usageRecords{Store: s} }, func(t *testing.T, e limitsEnv) {
		rec := e.store.(*usageRecords)
		k, secret := e.create(e.secret, account.NewAPIKey{RateLimits: fastCredits.RateLimits, Credits: credits(199)})
		toks := []string{e.token(secret)}
		spreads := func(what string, n, want int) {
			t.Helper()
			writes, _ := rec.during(func() {
				if reasons := e.verifyMany(n, toks); reasons["valid"] != n {
					t.Fatalf("%s: %v, want %d valid", what, reasons, n)
				}
			})
			if got := len(shardsOf(writes, k.ID)); got != want {
				t.Errorf("%s: %d records written, want %d", what, got, want)
			}
		}
		spreads("199 credits", 100, 1)
		if err := e.setCredits(e.secret, k.ID, 400); err != nil {
			t.Fatal(err)
		}
		spreads("400 credits set by a PATCH of credits alone", 300, 4)
		if left := e.creditsLeft(k.ID); left != 100 {
			t.Errorf("after 300 of 400: %d left, want 100", left)
		}
		// The documented bound: credits without a rate limit stay on one
		// record, however many (docs/limits.md), so their count is exact.
		only, onlySecret := e.create(e.secret, account.NewAPIKey{Credits: credits(100_000)})
		writes, _ := rec.during(func() {
			if reasons := e.verifyMany(50, []string{e.token(onlySecret)}); reasons["valid"] != 50 {
				t.Fatalf("100,000 credits, no rate limit: %v, want 50 valid", reasons)
			}
		})
		if got := len(shardsOf(writes, only.ID)); got != 1 {
			t.Errorf("100,000 credits, no rate limit: %d records written, want 1", got)
		}
		if left := e.creditsLeft(only.ID); left != 100_000-50 {
			t.Errorf("100,000 credits, no rate limit, after 50: %d left, want %d", left, 100_000-50)
		}
	})
}

// verifyMany verifies n tokens, toks in turn, 16 at a time (DynamoDB
// Local times out when many more write one item at once), and
// counts the answers by reason ("valid" for a valid one).
func (e limitsEnv) verifyMany(n int, toks []string) map[string]int {
	e.t.Helper()
	var wg sync.WaitGroup
	var mu sync.Mutex
	reasons := map[string]int{}
	next := make(chan int)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				v, err := e.svc.VerifyToken(context.Background(), toks[i%len(toks)])
				if err != nil {
					e.t.Error(err)
					continue
				}
				mu.Lock()
				if v.Valid {
					reasons["valid"]++
				} else {
					reasons[v.Reason]++
				}
				mu.Unlock()
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return reasons
}

// creditsLeft returns the credits left of the key id, as its page shows.
func (e limitsEnv) creditsLeft(id string) int64 {
	e.t.Helper()
	k, err := e.svc.GetAPIKey(e.ctx, e.as(e.secret), id)
	if err != nil {
		e.t.Fatalf("GetAPIKey: %v", err)
	}
	if k.Credits == nil {
		e.t.Fatalf("GetAPIKey: no credits")
	}
	return k.Credits.Remaining
}

// TestLimits_CreditsPreviousRelease: what docs/deploying.md says of the
// previous release (0.1.0), which counts a key's credits on record 0
// alone, from the count set (if_not_exists(counter, remaining) - 1):
// credits it set (a setting's name without a number of records) count on
// record 0 alone here too, as it counts them, however fast the key; and
// on credits this release spread, once record 0 holds its share, 0.1.0's
// uses spend that share and no more.
func TestLimits_CreditsPreviousRelease(t *testing.T) {
	onEachStore(t, func(s account.Store) account.Store { return &usageRecords{Store: s} }, func(t *testing.T, e limitsEnv) {
		rec := e.store.(*usageRecords)
		// previousUseIn is a use by 0.1.0 in the refill period p (0
		// without a refill).
		previousUseIn := func(p int64, id, set string, remaining int64) bool {
			t.Helper()
			_, ok, err := e.store.ChangeKeyUsage(e.ctx, id, 0, account.UsageChange{Steps: []account.CounterStep{{Name: "c:" + set + ":" + strconv.FormatInt(p, 10), Start: remaining, Delta: -1, Min: 0, Max: account.MaxCredits}}})
			if err != nil {
				t.Fatal(err)
			}
			return ok
		}
		previousUse := func(id, set string, remaining int64) bool {
			t.Helper()
			return previousUseIn(0, id, set, remaining)
		}

		// Credits set by 0.1.0 on a key allowed 5,000 a second.
		k, secret := e.create(e.secret, account.NewAPIKey{RateLimits: fastCredits.RateLimits})
		const legacy = "ABCDEFGHIJKLMNOP"
		_, err := e.store.UpdateAPIKey(e.ctx, account.WriteOptions{}, k.ID, account.APIKeyPatch{At: e.clock.Now(), Credits: &account.CreditsChange{Credits: &account.Credits{Remaining: 1000, SetAt: e.clock.Now(), Set: legacy}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		toks := []string{e.token(secret)}
		writes, _ := rec.during(func() {
			if reasons := e.verifyMany(50, toks); reasons["valid"] != 50 {
				t.Fatalf("50 verifications: %v, want 50 valid", reasons)
			}
		})
		if shards := shardsOf(writes, k.ID); len(shards) != 1 || !shards[0] {
			t.Errorf("credits set by the previous release: records written %v, want record 0 alone", shards)
		}
		for range 10 {
			if !previousUse(k.ID, legacy, 1000) {
				t.Fatal("a use by the previous release refused")
			}
		}
		if left := e.creditsLeft(k.ID); left != 940 {
			t.Errorf("after 50 uses here and 10 by the previous release: %d left, want 940", left)
		}

		// Credits this release spread over 10 records, record 0 holding
		// its share of 100, 1 spent.
		s, _ := e.create(e.secret, fastCredits)
		set := s.Credits.Set
		if !strings.HasSuffix(set, "/10") {
			t.Fatalf("credits of a key allowed 5,000 a second with 1,000: setting %q, want 10 records", set)
		}
		_, ok, err := e.store.ChangeKeyUsage(e.ctx, s.ID, 0, account.UsageChange{Steps: []account.CounterStep{{Name: "c:" + set + ":0", Start: 100, Delta: -1, Min: 0, Max: account.MaxCredits}}})
		if err != nil || !ok {
			t.Fatalf("a use of record 0: %v, %v", ok, err)
		}
		spent := 0
		for previousUse(s.ID, set, 1000) {
			spent++
		}
		if spent != 99 {
			t.Errorf("the previous release on spread credits: %d uses, want 99 (record 0's share left)", spent)
		}
		if left := e.creditsLeft(s.ID); left != 900 {
			t.Errorf("after: %d left, want 900 (the other records' shares)", left)
		}

		// Credits this release spread whose first uses all landed on
		// other records (record 0's rate limit full for the second), then
		// the previous release on record 0: together never more valid
		// answers than the 1,000 credits.
		f, fsecret := e.create(e.secret, fastCredits)
		fset := f.Credits.Set
		second := f.RateLimits[0]
		_, ok, err = e.store.ChangeKeyUsage(e.ctx, f.ID, 0, account.UsageChange{Steps: []account.CounterStep{{Name: account.RateLimitCounter(second, e.clock.Now()), Start: 0, Delta: 500, Min: 0, Max: 500}}})
		if err != nil || !ok {
			t.Fatalf("filling record 0's rate limit: %v, %v", ok, err)
		}
		ftoks := []string{e.token(fsecret)}
		valid := e.verifyMany(300, ftoks)["valid"]
		previous := 0
		for previousUse(f.ID, fset, 1000) {
			previous++
		}
		if previous != 100 {
			t.Errorf("the previous release on spread credits whose record 0 this release never spent from: %d uses, want 100 (record 0's share)", previous)
		}
		e.clock.Advance(time.Second)
		valid += e.verifyMany(1000, ftoks)["valid"]
		if valid+previous != 1000 {
			t.Errorf("1,000 credits: %d valid verifications here and %d uses by the previous release, want 1,000 in all", valid, previous)
		}

		// Credits set here on several records whose first use is the
		// previous release's: a key created with them, a PATCH of them,
		// an organization created with them. Record 0 was started when
		// they were set: 0.1.0 spends its share of 100, not 1,000.
		c, _ := e.create(e.secret, fastCredits)
		patched, err := e.svc.UpdateAPIKey(e.ctx, e.as(e.secret), f.ID, account.APIKeyUpdate{SetCredits: true, Credits: credits(1000)})
		if err != nil {
			t.Fatal(err)
		}
		o, err := e.svc.CreateOrganization(e.ctx, e.as(e.secret), account.NewOrganization{Name: "Spread", Slug: "spread", RateLimits: fastCredits.RateLimits, Credits: credits(1000)})
		if err != nil {
			t.Fatal(err)
		}
		for what, setting := range map[string]struct{ id, set string }{"a key created": {c.ID, c.Credits.Set}, "a PATCH of a key's credits": {f.ID, patched.Credits.Set}, "an organization created": {o.ID, o.Credits.Set}} {
			uses := 0
			for previousUse(setting.id, setting.set, 1000) {
				uses++
			}
			if uses != 100 {
				t.Errorf("%s with 1,000 credits on 10 records, then the previous release first: %d uses, want 100 (record 0's share)", what, uses)
			}
		}

		// Credits refilled daily: a day in which this release served a
		// use starts the next day's count on record 0 too, so the
		// previous release serving that day's first use spends record 0's
		// share of the refill.
		r, rsecret := e.create(e.secret, account.NewAPIKey{RateLimits: fastCredits.RateLimits, Credits: &account.CreditsRequest{Remaining: 1000, Refill: &account.CreditRefill{Amount: 1000, Interval: account.RefillDaily}}})
		for range 2 {
			e.clock.Advance(24 * time.Hour)
			if v := e.verify(e.token(rsecret)); !v.Valid {
				t.Fatalf("a use of credits refilled daily: %+v", v)
			}
		}
		e.clock.Advance(24 * time.Hour)
		uses := 0
		for previousUseIn(e.clock.Now().Unix()/86400, r.ID, r.Credits.Set, 1000) {
			uses++
		}
		if uses != 100 {
			t.Errorf("credits refilled to 1,000 a day on 10 records, the previous release first on a day after one this release served: %d uses, want 100 (record 0's share)", uses)
		}
	})
}

// TestLimits_CreditsSpreadRefill: spread credits start again at a refill
// and at a new setting, as on one record: credits of 300 refilled to
// 1,000 a day spread over 10 records (sized by the refill); 310 uses give
// 300 valid; a day later the refill's 1,000 are there, on every record,
// whatever this process found spent the day before; credits of 50 set
// again then stay on one record and give 50.
func TestLimits_CreditsSpreadRefill(t *testing.T) {
	onEachStore(t, func(s account.Store) account.Store { return &usageRecords{Store: s} }, func(t *testing.T, e limitsEnv) {
		rec := e.store.(*usageRecords)
		k, secret := e.create(e.secret, account.NewAPIKey{RateLimits: fastCredits.RateLimits, Credits: &account.CreditsRequest{Remaining: 300, Refill: &account.CreditRefill{Amount: 1000, Interval: account.RefillDaily}}})
		toks := []string{e.token(secret)}
		var reasons map[string]int
		writes, _ := rec.during(func() { reasons = e.verifyMany(310, toks) })
		if reasons["valid"] != 300 || reasons[account.ReasonUsageExceeded] != 10 {
			t.Fatalf("310 verifications against 300 credits: %v, want 300 valid, 10 usage_exceeded", reasons)
		}
		if got := len(shardsOf(writes, k.ID)); got != 10 {
			t.Errorf("credits refilled to 1,000 a day: %d records written, want 10", got)
		}
		e.clock.Advance(24 * time.Hour)
		toks[0] = e.token(secret)
		if v := e.verify(toks[0]); !v.Valid {
			t.Fatalf("a day later: %+v, want valid", v)
		}
		if left := e.creditsLeft(k.ID); left != 999 {
			t.Errorf("a day later, after one use: %d left, want 999", left)
		}
		if err := e.setCredits(e.secret, k.ID, 50); err != nil {
			t.Fatal(err)
		}
		writes, _ = rec.during(func() { reasons = e.verifyMany(60, toks) })
		if reasons["valid"] != 50 || reasons[account.ReasonUsageExceeded] != 10 {
			t.Fatalf("60 verifications against 50 credits set again: %v, want 50 valid, 10 usage_exceeded", reasons)
		}
		if got := len(shardsOf(writes, k.ID)); got != 1 {
			t.Errorf("50 credits: %d records written, want 1", got)
		}
	})
}

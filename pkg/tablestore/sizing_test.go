package tablestore_test

import (
	"context"
	"encoding/json"
	"math"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"latchkey/pkg/account"
	"latchkey/pkg/boltstore"
	"latchkey/pkg/dynamostore"
	"latchkey/pkg/dynamostore/dynamotest"
	"latchkey/pkg/tablestore"
)

// heat makes the key id look hot: one usage flush of rate verifies a
// second of it, over the last two minutes, which grows its copies.
func heat(t *testing.T, s *tablestore.Store, id string, rate int64) {
	t.Helper()
	now := time.Now().UTC()
	start := now.Truncate(time.Minute)
	n := rate * int64(now.Sub(start.Add(-time.Minute))/time.Second)
	f := account.UsageFlush{Process: account.NewID("", now), Seq: 1, Deltas: []account.UsageDelta{{
		Subject: id, Interval: account.IntervalMinute, Start: start, ExpireAt: now.Add(time.Hour),
		Counts: account.UsageCounts{Verifications: map[string]int64{account.OutcomeValid: n}},
	}}}
	must(t, s.AddUsage(t.Context(), f), "AddUsage")
}

// txMeter keeps the TransactWriteItems a client sends.
type txMeter struct {
	mu  sync.Mutex
	txs []*dynamodb.TransactWriteItemsInput
}

func (m *txMeter) option(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
		return st.Initialize.Add(middleware.InitializeMiddlewareFunc("latchkey-tx-meter",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				if tx, ok := in.Parameters.(*dynamodb.TransactWriteItemsInput); ok {
					m.mu.Lock()
					m.txs = append(m.txs, tx)
					m.mu.Unlock()
				}
				return next.HandleInitialize(ctx, in)
			}), middleware.Before)
	})
}

// wru returns the write units of the transactions sent since the last
// call by AWS's rule: 2 per KB (rounded up) of each item written, as it
// is after the write (read back) or, deleted, 2; and whether any of them
// wrote an item of gsi1.
func (m *txMeter) wru(t *testing.T, client *dynamodb.Client, table string) (units int, items int, gsi bool) {
	t.Helper()
	m.mu.Lock()
	txs := m.txs
	m.txs = nil
	m.mu.Unlock()
	for _, tx := range txs {
		for _, it := range tx.TransactItems {
			var k map[string]types.AttributeValue
			switch {
			case it.Put != nil:
				k = it.Put.Item
			case it.Update != nil:
				k = it.Update.Key
			case it.ConditionCheck != nil:
				k = it.ConditionCheck.Key
			case it.Delete != nil:
				units += 2
				items++
				continue
			}
			out, err := client.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true),
				Key: map[string]types.AttributeValue{"pk": k["pk"], "sk": k["sk"]}})
			must(t, err, "GetItem")
			_, inIndex := out.Item["gsi1pk"]
			gsi = gsi || inIndex && it.ConditionCheck == nil
			units += 2 * max(1, int(math.Ceil(float64(tablestore.ItemBytes(out.Item))/1024)))
			items++
		}
	}
	return units, items, gsi
}

// TestReadCopies_Sized (DynamoDB Local): a key's verify copies follow its
// read rate (see sizing.go). A quiet key has one copy: its revocation is
// 2 requests and no more than 10 WRU (with and without its status list
// flip), and writes no item of gsi1; its key change and its verify read
// one copy, its verify 1 RRU. Driven hot, one transaction grows it to 15;
// not through a store WithoutCopyGrowth.
func TestReadCopies_Sized(t *testing.T) {
	var tx txMeter
	var calls meter
	client := dynamotest.NewClient(t, tx.option, calls.option)
	table := dynamotest.NewTable(t, client)
	s := dynamostore.New(client, table, dynamostore.WithTimeout(dynamotest.Timeout))
	ctx := t.Context()
	// With their events, as the service writes them.
	opts := account.WriteOptions{Events: &account.EventSource{
		Actor: account.Actor{KeyID: "key_caller"}, RequestID: "req-sized", Encode: func(e account.Event) ([]byte, error) { return json.Marshal(e) },
	}}
	now := time.Now().UTC().Truncate(time.Millisecond)
	tick := 0
	next := func() time.Time { tick++; return now.Add(time.Duration(tick) * time.Millisecond) }
	k := newKey(next())
	must(t, s.CreateAPIKey(ctx, account.WriteOptions{}, k), "CreateAPIKey")
	copiesOf := func(what string, want int) { t.Helper(); wantCopies(t, s, k.ID, what, want) }
	copiesOf("a new key", 1)
	tx.wru(t, client, table)

	list := account.StatusListID(now, now, 0)
	revoke := func(status bool) account.Revocation {
		at := next()
		r := account.Revocation{TokenID: account.NewID(account.PrefixToken, at), KeyID: k.ID, RevokedAt: at, ExpiresAt: at.Add(time.Hour), Inline: true}
		if status {
			r.Status = &account.StatusRef{List: list, Index: int64(tick)}
		}
		_, err := s.RevokeToken(ctx, opts, r)
		must(t, err, "RevokeToken")
		return r
	}
	for _, status := range []bool{false, true} {
		got := calls.measure(func() { revoke(status) })
		units, items, gsi := tx.wru(t, client, table)
		t.Logf("a quiet key's revocation (status list flip %v): %d requests %v, %d items, %d WRU", status, len(got), got, items, units)
		if units > 10 || gsi || len(got) != 2 {
			t.Errorf("a quiet key's revocation (status list flip %v): %d requests, %d WRU, gsi1 written %v; want 2, at most 10, false", status, len(got), units, gsi)
		}
	}
	got := calls.measure(func() {
		_, err := s.UpdateAPIKey(ctx, opts, k.ID, account.APIKeyPatch{Name: &k.Name, At: next()}, nil)
		must(t, err, "UpdateAPIKey")
	})
	units, items, _ := tx.wru(t, client, table)
	t.Logf("a quiet key's change: %d requests %v, %d items, %d WRU", len(got), got, items, units)
	tok := account.NewID(account.PrefixToken, next())
	got = calls.measure(func() {
		st, err := s.TokenStatus(ctx, tok, k.ID, nil, "", true)
		must(t, err, "TokenStatus")
		if st.Key == nil || !st.RevokedAt.IsZero() {
			t.Fatalf("TokenStatus of a live token: %+v", st)
		}
	})
	if len(got) != 1 || got[0].capacity != 1 {
		t.Errorf("a quiet key's verify: %v, want one BatchGetItem of 1 RRU", got)
	}

	heat(t, s, k.ID, 30000)
	units, items, _ = tx.wru(t, client, table)
	t.Logf("growth to 15 copies: %d items, %d WRU", items, units)
	if items != tablestore.MaxReadCopies {
		t.Errorf("growth to 15 copies wrote %d items, want %d", items, tablestore.MaxReadCopies)
	}

	// A process whose role may not write the copies (the verify URL, the
	// authorizer) grows none.
	quiet := newKey(next())
	must(t, s.CreateAPIKey(ctx, account.WriteOptions{}, quiet), "CreateAPIKey")
	tx.wru(t, client, table)
	heat(t, dynamostore.New(client, table, dynamostore.WithTimeout(dynamotest.Timeout), dynamostore.WithoutCopyGrowth()), quiet.ID, 30000)
	if units, items, _ := tx.wru(t, client, table); items != 0 {
		t.Errorf("a flush of a store WithoutCopyGrowth wrote %d items (%d WRU), want none", items, units)
	}
	if got, err := s.VerifyCopies(ctx, quiet.ID); err != nil || len(got) != 1 {
		t.Errorf("a key heated through a store WithoutCopyGrowth: copies %v (%v), want 1", got, err)
	}
}

// TestReadCopies_Resized, on DynamoDB Local and bbolt: a key driven hot
// (a usage flush) grows to 15 copies, and verifies spread over them; a
// revocation then shrinks it back (the rate is gone), deleting the copies
// above; a reader of any copy number, gone or not, sees a revocation
// made after the shrink. Copies the previous release wrote (no
// read_copies, all 15) leave no stale copy at the next write.
func TestReadCopies_Resized(t *testing.T) {
	onBothTables(t, func(t *testing.T, _ tablestore.Port, s *tablestore.Store) { testReadCopiesResized(t, s) })
}

func testReadCopiesResized(t *testing.T, s *tablestore.Store) {
	ctx := t.Context()
	now := time.Now().UTC().Truncate(time.Millisecond)
	tick := 0
	next := func() time.Time { tick++; return now.Add(time.Duration(tick) * time.Millisecond) }
	k := newKey(next())
	must(t, s.CreateAPIKey(ctx, account.WriteOptions{}, k), "CreateAPIKey")
	copiesOf := func(what string, want int) { t.Helper(); wantCopies(t, s, k.ID, what, want) }
	revoke := func() account.Revocation {
		at := next()
		r := account.Revocation{TokenID: account.NewID(account.PrefixToken, at), KeyID: k.ID, RevokedAt: at, ExpiresAt: at.Add(time.Hour), Inline: true}
		_, err := s.RevokeToken(ctx, account.WriteOptions{}, r)
		must(t, err, "RevokeToken")
		return r
	}
	early := revoke()
	tok := account.NewID(account.PrefixToken, next())
	copiesOf("a quiet key", 1)

	heat(t, s, k.ID, 30000)
	copiesOf("a hot key", tablestore.MaxReadCopies)
	seen := map[int]bool{}
	for range 200 {
		n := s.PickCopy(k.ID)
		seen[n] = true
		st, err := s.TokenStatusOfCopy(ctx, n, tok, k.ID, nil, "", true)
		must(t, err, "TokenStatus")
		if st.Key == nil || !st.RevokedAt.IsZero() {
			t.Fatalf("TokenStatus of a live token: %+v", st)
		}
		st, err = s.TokenStatusOfCopy(ctx, n, early.TokenID, k.ID, nil, "", true)
		must(t, err, "TokenStatus")
		if !st.RevokedAt.Equal(early.RevokedAt) {
			t.Fatalf("copy %d of a grown key: a token revoked before the growth reads %+v", n, st)
		}
	}
	if len(seen) < tablestore.MaxReadCopies-3 {
		t.Errorf("200 verifies of a hot key read copies %v, want them spread over 1..%d", seen, tablestore.MaxReadCopies)
	}

	// The rate gone, a revocation shrinks it to one copy; a reader that
	// picks a copy that is gone falls back to copy 1, and sees the next
	// revocation.
	must(t, s.ForgetUsage(ctx, k.ID), "ForgetUsage")
	revoke()
	copiesOf("a key gone quiet, after a revocation", 1)
	last := revoke()
	for n := 1; n <= tablestore.MaxReadCopies; n++ {
		for _, tokenID := range []string{last.TokenID, early.TokenID} {
			st, err := s.TokenStatusOfCopy(ctx, n, tokenID, k.ID, nil, "", true)
			must(t, err, "TokenStatus")
			if st.RevokedAt.IsZero() || st.Key == nil {
				t.Errorf("a reader of copy %d after the shrink: %+v, want revoked", n, st)
			}
		}
	}

	// Two copies: kept at 600 verifies a second (hysteresis: a quarter of
	// what grew them), shrunk to one at 200.
	must(t, s.ForgetUsage(ctx, k.ID), "ForgetUsage")
	heat(t, s, k.ID, 1500)
	revoke()
	copiesOf("a key at 1,500 verifies a second, after a revocation", 2)
	must(t, s.ForgetUsage(ctx, k.ID), "ForgetUsage")
	heat(t, s, k.ID, 600)
	revoke()
	copiesOf("a key of 2 copies at 600 verifies a second", 2)
	must(t, s.ForgetUsage(ctx, k.ID), "ForgetUsage")
	heat(t, s, k.ID, 200)
	revoke()
	copiesOf("a key of 2 copies at 200 verifies a second", 1)

	// The previous release's copies: all 15, no read_copies. A write of
	// this release leaves only copies 1..N.
	must(t, s.PutPreviousCopies(ctx, k.ID), "PutPreviousCopies")
	copiesOf("the previous release's copies", tablestore.MaxReadCopies)
	revoke()
	copiesOf("after a revocation over the previous release's copies", 1)
	must(t, s.PutPreviousCopies(ctx, k.ID), "PutPreviousCopies")
	_, err := s.UpdateAPIKey(ctx, account.WriteOptions{}, k.ID, account.APIKeyPatch{Name: &k.Name, At: next()}, nil)
	must(t, err, "UpdateAPIKey")
	copiesOf("after a key change over the previous release's copies", 1)
}

// TestReadCopies_PreviousReleaseReads, on DynamoDB Local and bbolt:
// release 0.1.0, reading any of its 16 copy numbers, finds every token
// this release revoked on the key revoked (docs/deploying.md, Formats in
// force, rule 1), before and after a key change of its own rewrites the
// key's copies from the key's item: for a key 0.1.0 wrote (its item has
// copies_since, so this release writes the entry's copies too), and for
// a key this release changed (no copies_since, no entry copies).
func TestReadCopies_PreviousReleaseReads(t *testing.T) {
	onBothTables(t, func(t *testing.T, _ tablestore.Port, s *tablestore.Store) { testPreviousReleaseReads(t, s) })
}

func testPreviousReleaseReads(t *testing.T, s *tablestore.Store) {
	ctx := t.Context()
	// The real clock, a few milliseconds a step: 0.1.0 stamps copies_since
	// with it, and tokens are issued after one change and before the next.
	next := func() time.Time {
		time.Sleep(3 * time.Millisecond)
		return time.Now().UTC().Truncate(time.Millisecond)
	}
	for _, c := range []struct {
		name    string
		changed bool // by this release, before the revocation
	}{{"a key 0.1.0 wrote", false}, {"a key this release changed", true}} {
		t.Run(c.name, func(t *testing.T) {
			k := newKey(next())
			must(t, s.CreateAPIKey(ctx, account.WriteOptions{}, k), "CreateAPIKey")
			must(t, s.PutPreviousCopies(ctx, k.ID), "a change by 0.1.0")
			if c.changed {
				_, err := s.UpdateAPIKey(ctx, account.WriteOptions{}, k.ID, account.APIKeyPatch{Name: &k.Name, At: next()}, nil)
				must(t, err, "UpdateAPIKey")
			}
			at := next()
			r := account.Revocation{TokenID: account.NewID(account.PrefixToken, at), KeyID: k.ID, RevokedAt: at, ExpiresAt: at.Add(time.Hour), Inline: true}
			_, err := s.RevokeToken(ctx, account.WriteOptions{}, r)
			must(t, err, "RevokeToken")
			check := func(when string) {
				t.Helper()
				for n := range tablestore.ReadShards {
					revoked, err := s.PreviousReleaseRevoked(ctx, r.TokenID, k.ID, n)
					must(t, err, "PreviousReleaseRevoked")
					if !revoked {
						t.Errorf("%s: 0.1.0 reading copy %d finds the token not revoked", when, n)
					}
				}
			}
			check("after the revocation")
			must(t, s.PutPreviousCopies(ctx, k.ID), "a change by 0.1.0")
			check("after a change by 0.1.0")
		})
	}
}

// TestReadCopies_GrowthHandedOff, on DynamoDB Local and bbolt: a store
// WithCopyGrowthBy (the verify URL's, the authorizer's) whose flush shows
// a key busy hands its growth over, once a minute per key, and writes no
// copy itself; not for a quiet key, nor for one it saw at the most
// copies. GrowCopies (what auth does for it) reads the rate itself: it
// grows the busy key to 15, and leaves a quiet key, a key that is not
// there and an id that is no key's as they are.
func TestReadCopies_GrowthHandedOff(t *testing.T) {
	t.Run("DynamoDBLocal", func(t *testing.T) {
		client := dynamotest.NewClient(t)
		table := dynamotest.NewTable(t, client)
		testGrowthHandedOff(t, func(grow func(context.Context, string)) (*tablestore.Store, *tablestore.Store) {
			return dynamostore.New(client, table, dynamostore.WithTimeout(dynamotest.Timeout)),
				dynamostore.New(client, table, dynamostore.WithTimeout(dynamotest.Timeout), dynamostore.WithCopyGrowthBy(grow))
		})
	})
	t.Run("Bolt", func(t *testing.T) {
		tbl, err := boltstore.OpenTable(filepath.Join(t.TempDir(), "table.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { tbl.Close() })
		testGrowthHandedOff(t, func(grow func(context.Context, string)) (*tablestore.Store, *tablestore.Store) {
			return tablestore.New(tbl.Port(), tablestore.WithSerialWrites()), tablestore.New(tbl.Port(), tablestore.WithCopyGrowthBy(grow))
		})
	})
	t.Run("RateLimit", func(t *testing.T) {
		s := tablestore.New(nil, tablestore.WithCopyGrowthBy(func(context.Context, string) {}))
		now := time.Now()
		for _, c := range []struct {
			id    string
			after time.Duration
			want  bool
		}{{"key_a", 0, true}, {"key_a", time.Second, false}, {"key_b", time.Second, true}, {"key_a", 59 * time.Second, false}, {"key_a", time.Minute, true}} {
			if got := s.HandoffDue(c.id, now.Add(c.after)); got != c.want {
				t.Errorf("%s after %v: due %v, want %v", c.id, c.after, got, c.want)
			}
		}
	})
}

func testGrowthHandedOff(t *testing.T, stores func(grow func(context.Context, string)) (owner, handing *tablestore.Store)) {
	ctx := t.Context()
	var mu sync.Mutex
	var asked []string
	s, h := stores(func(_ context.Context, id string) {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, id)
	})
	takeAsked := func() []string {
		mu.Lock()
		defer mu.Unlock()
		a := asked
		asked = nil
		return a
	}
	copiesOf := func(id string) int {
		t.Helper()
		got, err := s.VerifyCopies(ctx, id)
		must(t, err, "VerifyCopies")
		return len(got)
	}
	now := time.Now().UTC()
	hot, quiet := newKey(now), newKey(now.Add(time.Millisecond))
	must(t, s.CreateAPIKey(ctx, account.WriteOptions{}, hot), "CreateAPIKey")
	must(t, s.CreateAPIKey(ctx, account.WriteOptions{}, quiet), "CreateAPIKey")

	heat(t, h, hot.ID, 30000)
	if got := takeAsked(); len(got) != 1 || got[0] != hot.ID {
		t.Fatalf("a flush that shows %s busy asked for %v, want it once", hot.ID, got)
	}
	if n := copiesOf(hot.ID); n != 1 {
		t.Errorf("the store that hands growth over wrote copies: %d, want 1", n)
	}
	heat(t, h, hot.ID, 30000)
	if got := takeAsked(); len(got) != 0 {
		t.Errorf("a second busy flush within the minute asked for %v, want nothing", got)
	}
	heat(t, h, quiet.ID, 1)
	if got := takeAsked(); len(got) != 0 {
		t.Errorf("a flush of a quiet key asked for %v, want nothing", got)
	}

	must(t, s.GrowCopies(ctx, quiet.ID), "GrowCopies of a quiet key")
	if n := copiesOf(quiet.ID); n != 1 {
		t.Errorf("GrowCopies of a quiet key: %d copies, want 1", n)
	}
	must(t, s.GrowCopies(ctx, account.NewID(account.PrefixAPIKey, now)), "GrowCopies of a key that is not there")
	for _, id := range []string{"", "org_01", "key_../../x", "KEY#" + hot.ID} {
		if err := s.GrowCopies(ctx, id); account.ErrorCode(err) != account.CodeInvalidRequest {
			t.Errorf("GrowCopies(%q): %v, want %s", id, err, account.CodeInvalidRequest)
		}
	}
	must(t, s.GrowCopies(ctx, hot.ID), "GrowCopies of a busy key")
	if n := copiesOf(hot.ID); n != tablestore.MaxReadCopies {
		t.Errorf("GrowCopies of a busy key: %d copies, want %d", n, tablestore.MaxReadCopies)
	}

	// A process that read the key at 15 copies asks for no more.
	again := newKey(now.Add(2 * time.Millisecond))
	must(t, s.CreateAPIKey(ctx, account.WriteOptions{}, again), "CreateAPIKey")
	heat(t, s, again.ID, 30000)
	if _, err := h.TokenStatus(ctx, account.NewID(account.PrefixToken, now), again.ID, nil, "", true); err != nil {
		t.Fatal(err)
	}
	heat(t, h, again.ID, 30000)
	if got := takeAsked(); len(got) != 0 {
		t.Errorf("a busy key read at %d copies: asked for %v, want nothing", tablestore.MaxReadCopies, got)
	}
}

// wantCopies checks that the key id has exactly the verify copies 1..want.
func wantCopies(t *testing.T, s *tablestore.Store, id, what string, want int) {
	t.Helper()
	got, err := s.VerifyCopies(t.Context(), id)
	must(t, err, "VerifyCopies")
	if !slices.Equal(got, wantRange(want)) {
		t.Errorf("%s: copies %v, want 1..%d", what, got, want)
	}
}

func wantRange(n int) []int {
	r := make([]int, n)
	for i := range r {
		r[i] = i + 1
	}
	return r
}

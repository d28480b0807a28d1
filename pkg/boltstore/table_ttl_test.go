package boltstore_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"latchkey/pkg/boltstore"
	"latchkey/pkg/tablestore"
)

type avMap = tablestore.Item

func str(v string) tablestore.Value { return tablestore.S(v) }
func num(v int64) tablestore.Value  { return tablestore.N(v) }

func mustPut(tb testing.TB, t *boltstore.Table, it avMap) {
	tb.Helper()
	if _, err := t.Port().Write(context.Background(), tablestore.Write{Kind: tablestore.WritePut, Item: it}, false); err != nil {
		tb.Fatalf("put: %v", err)
	}
}

func exists(tb testing.TB, t *boltstore.Table, pk string) bool {
	tb.Helper()
	it, err := t.Port().Get(context.Background(), tablestore.Key{PK: pk, SK: "S"})
	if err != nil {
		tb.Fatalf("get: %v", err)
	}
	return it != nil
}

// listed counts the items in the index's partition L.
func listed(tb testing.TB, t *boltstore.Table) int {
	tb.Helper()
	page, err := t.Port().Query(context.Background(), tablestore.Query{Index: tablestore.GSI1, Partition: "L"})
	if err != nil {
		tb.Fatalf("query: %v", err)
	}
	return len(page.Items)
}

// TestTable_Sweep: the sweep deletes the items whose TTL has passed, with
// their index entries, and only those; reads return an expired item until
// then, as DynamoDB's may.
func TestTable_Sweep(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	tb := openTable(t, boltstore.WithClock(func() time.Time { return now }), boltstore.WithSweepInterval(0))
	sec := func(d time.Duration) tablestore.Value { return num(now.Add(d).Unix()) }
	items := map[string]tablestore.Value{
		"expired":    sec(-time.Second),
		"fractional": sec(-2 * time.Second), // Latchkey's numbers are integers: no fraction to drop
		"now":        sec(0),
		"future":     sec(time.Hour),
		"ancient":    sec(-6 * 365 * 24 * time.Hour), // past DynamoDB's five years: left alone
		"string":     str(fmt.Sprint(now.Unix() - 10)),
		"negative":   num(-5),
	}
	for pk, ttl := range items {
		mustPut(t, tb, avMap{"pk": str(pk), "sk": str("S"), tablestore.TTLAttribute: ttl, "gsi1pk": str("L"), "gsi1sk": str(pk)})
	}
	mustPut(t, tb, avMap{"pk": str("none"), "sk": str("S")})
	if !exists(t, tb, "expired") {
		t.Fatal("an expired item is gone before any sweep")
	}
	n, err := tb.Sweep(now)
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Errorf("swept %d items, want 2", n)
	}
	for pk, want := range map[string]bool{"expired": false, "fractional": false, "now": true, "future": true, "ancient": true, "string": true, "negative": true, "none": true} {
		if got := exists(t, tb, pk); got != want {
			t.Errorf("%s: exists %v, want %v", pk, got, want)
		}
	}
	if n := listed(t, tb); n != 5 {
		t.Errorf("index holds %d items after the sweep, want 5", n)
	}

	// A TTL moved into the past is swept; one moved out of it is not.
	set := func(pk string, ttl tablestore.Value) {
		_, err := tb.Port().Write(context.Background(), tablestore.Write{
			Kind: tablestore.WriteUpdate, Key: tablestore.Key{PK: pk, SK: "S"},
			Update: tablestore.Update{{Kind: tablestore.ActSet, Name: tablestore.TTLAttribute, Value: ttl}},
		}, false)
		if err != nil {
			t.Fatal(err)
		}
	}
	mustPut(t, tb, avMap{"pk": str("revived"), "sk": str("S"), tablestore.TTLAttribute: sec(-time.Minute)})
	set("revived", sec(time.Hour))
	set("future", sec(-time.Minute))
	if n, err := tb.Sweep(now); err != nil || n != 1 {
		t.Errorf("second sweep: %d, %v; want 1 item", n, err)
	}
	if exists(t, tb, "future") || !exists(t, tb, "revived") {
		t.Error("the second sweep deleted the wrong item")
	}
}

// TestTable_SweepBounded: a backlog larger than one transaction's share
// is swept completely, in several transactions.
func TestTable_SweepBounded(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	tb := openTable(t, boltstore.WithClock(func() time.Time { return now }), boltstore.WithSweepInterval(0))
	boltstore.SetSweepMax(tb, 10)
	for i := range 25 {
		mustPut(t, tb, avMap{"pk": str(fmt.Sprint("k", i)), "sk": str("S"), tablestore.TTLAttribute: num(now.Unix() - int64(i) - 1)})
	}
	if n, err := tb.Sweep(now); err != nil || n != 25 {
		t.Fatalf("swept %d, %v; want 25", n, err)
	}
}

// TestTable_SweepOrphanEntries: an expiry entry whose item is gone is
// deleted by the sweep, so no sweep reads it again; one whose item now
// expires later is deleted without the item.
func TestTable_SweepOrphanEntries(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	tb := openTable(t, boltstore.WithClock(func() time.Time { return now }), boltstore.WithSweepInterval(0))
	past := uint64(now.Unix() - 60)
	for i := range 3 {
		if err := boltstore.PutExpiryEntry(tb, past, boltstore.TableKey([]byte(fmt.Sprint("gone", i)), []byte("S"))); err != nil {
			t.Fatal(err)
		}
	}
	mustPut(t, tb, avMap{"pk": str("later"), "sk": str("S"), tablestore.TTLAttribute: num(now.Unix() + 3600)})
	if err := boltstore.PutExpiryEntry(tb, past, boltstore.TableKey([]byte("later"), []byte("S"))); err != nil {
		t.Fatal(err)
	}
	if n, err := tb.Sweep(now); err != nil || n != 4 {
		t.Fatalf("first sweep: %d, %v; want 4 entries cleared", n, err)
	}
	if !exists(t, tb, "later") {
		t.Error("a stale entry deleted an item that expires in an hour")
	}
	if n, err := boltstore.ExpiryEntries(tb); err != nil || n != 1 {
		t.Errorf("expiry index holds %d entries (%v), want 1: the live item's own", n, err)
	}
	if n, err := tb.Sweep(now); err != nil || n != 0 {
		t.Errorf("second sweep: %d, %v; want 0", n, err)
	}
}

// TestTable_SweepOnOpenAndPeriodically: items that expired while the file
// was closed are gone once OpenTable returns, and the sweeper deletes
// what expires later without being asked.
func TestTable_SweepOnOpenAndPeriodically(t *testing.T) {
	path := filepath.Join(t.TempDir(), "table.db")
	var now atomic.Int64
	now.Store(1_800_000_000)
	clock := boltstore.WithClock(func() time.Time { return time.Unix(now.Load(), 0) })
	tb, err := boltstore.OpenTable(path, boltstore.WithTTL(tablestore.TTLAttribute), clock, boltstore.WithSweepInterval(0))
	if err != nil {
		t.Fatal(err)
	}
	mustPut(t, tb, avMap{"pk": str("a"), "sk": str("S"), tablestore.TTLAttribute: num(1800000100)})
	mustPut(t, tb, avMap{"pk": str("b"), "sk": str("S"), tablestore.TTLAttribute: num(1800000200)})
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	now.Store(1_800_000_150)
	tb, err = boltstore.OpenTable(path, boltstore.WithTTL(tablestore.TTLAttribute), clock, boltstore.WithSweepInterval(5*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	if exists(t, tb, "a") {
		t.Error("an item expired while the file was closed is there after OpenTable")
	}
	if !exists(t, tb, "b") {
		t.Fatal("an item not yet expired is gone")
	}
	now.Store(1_800_000_250)
	deadline := time.Now().Add(time.Minute)
	for exists(t, tb, "b") {
		if time.Now().After(deadline) {
			t.Fatal("the sweeper has not deleted an expired item in a minute")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// lateCancel is a context that is live for its first n Err calls and
// cancelled after: a caller that gives up while its write is running.
type lateCancel struct {
	context.Context
	n atomic.Int32
}

func (c *lateCancel) Err() error {
	if c.n.Add(-1) < 0 {
		return context.Canceled
	}
	return nil
}

// TestTable_WriteChecksContext: a write whose caller has gone, before it
// starts or while it runs, commits nothing.
func TestTable_WriteChecksContext(t *testing.T) {
	tb := openTable(t)
	for _, live := range []int32{0, 1} {
		ctx := &lateCancel{Context: context.Background()}
		ctx.n.Store(live)
		_, err := tb.Port().Write(ctx, tablestore.Write{Kind: tablestore.WritePut, Item: avMap{"pk": str("p"), "sk": str("S")}}, false)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("live for %d checks: got %v, want context.Canceled", live, err)
		}
		err = tb.Port().Transact(ctx, []tablestore.Write{{Kind: tablestore.WritePut, Item: avMap{"pk": str("p"), "sk": str("S")}}})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("transaction live for %d checks: got %v, want context.Canceled", live, err)
		}
		if exists(t, tb, "p") {
			t.Fatalf("live for %d checks: the item was written", live)
		}
	}
}

// TestOpenTable: a file keeps its items across a reopen, and is held by
// one process at a time.
func TestOpenTable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "table.db")
	tb, err := boltstore.OpenTable(path)
	if err != nil {
		t.Fatal(err)
	}
	mustPut(t, tb, avMap{"pk": str("kept"), "sk": str("S")})
	if _, err := boltstore.OpenTable(path); !errors.Is(err, boltstore.ErrInUse) {
		t.Errorf("a second open: got %v, want ErrInUse", err)
	}
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	tb, err = boltstore.OpenTable(path)
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	if !exists(t, tb, "kept") {
		t.Error("an item is gone after a reopen")
	}
}

// TestOpenTable_SchemaChanges: a TTL attribute enabled later finds the
// items that had already expired, as DynamoDB's UpdateTimeToLive does.
func TestOpenTable_SchemaChanges(t *testing.T) {
	path := filepath.Join(t.TempDir(), "table.db")
	reopen := func(opts ...boltstore.TableOption) *boltstore.Table {
		t.Helper()
		tb, err := boltstore.OpenTable(path, append(opts, boltstore.WithSweepInterval(0))...)
		if err != nil {
			t.Fatal(err)
		}
		return tb
	}
	tb := reopen()
	for i := range 3 {
		mustPut(t, tb, avMap{"pk": str(fmt.Sprint("p", i)), "sk": str("S"), "gsi1pk": str("L"), "gsi1sk": str(fmt.Sprint(i)), tablestore.TTLAttribute: num(1000)})
	}
	if n := listed(t, tb); n != 3 {
		t.Errorf("the index lists %d items, want 3", n)
	}
	tb.Close()

	tb = reopen(boltstore.WithTTL(tablestore.TTLAttribute), boltstore.WithClock(func() time.Time { return time.Unix(2000, 0) }))
	defer tb.Close()
	if exists(t, tb, "p0") {
		t.Error("an item expired before TTL was enabled is there after the sweep on open")
	}
}

package boltstore_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"latchkey/pkg/boltstore"
	"latchkey/pkg/tablestore"
)

type avMap = map[string]types.AttributeValue

func str(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func num(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }

func mustPut(tb testing.TB, t *boltstore.Table, name string, it avMap) {
	tb.Helper()
	if _, err := t.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(name), Item: it}); err != nil {
		tb.Fatalf("PutItem: %v", err)
	}
}

func exists(tb testing.TB, t *boltstore.Table, name, pk string) bool {
	tb.Helper()
	out, err := t.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(name), Key: avMap{"pk": str(pk), "sk": str("S")}})
	if err != nil {
		tb.Fatalf("GetItem: %v", err)
	}
	return out.Item != nil
}

// TestTable_Sweep: the sweep deletes the items whose TTL has passed, with
// their index entries, and only those; reads return an expired item until
// then, as DynamoDB's may.
func TestTable_Sweep(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	tb, name := openTable(t, boltstore.WithClock(func() time.Time { return now }), boltstore.WithSweepInterval(0))
	sec := func(d time.Duration) types.AttributeValue { return num(fmt.Sprint(now.Add(d).Unix())) }
	items := map[string]types.AttributeValue{
		"expired":    sec(-time.Second),
		"fractional": num(fmt.Sprint(now.Unix()-1) + ".75"),
		"now":        sec(0),
		"future":     sec(time.Hour),
		"ancient":    sec(-6 * 365 * 24 * time.Hour), // past DynamoDB's five years: left alone
		"string":     str(fmt.Sprint(now.Unix() - 10)),
		"negative":   num("-5"),
	}
	for pk, ttl := range items {
		mustPut(t, tb, name, avMap{"pk": str(pk), "sk": str("S"), tablestore.TTLAttribute: ttl, "gsi1pk": str("L"), "gsi1sk": str(pk)})
	}
	mustPut(t, tb, name, avMap{"pk": str("none"), "sk": str("S")})
	if !exists(t, tb, name, "expired") {
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
		if got := exists(t, tb, name, pk); got != want {
			t.Errorf("%s: exists %v, want %v", pk, got, want)
		}
	}
	out, err := tb.Query(context.Background(), &dynamodb.QueryInput{
		TableName: aws.String(name), IndexName: aws.String(tablestore.GSI1),
		KeyConditionExpression: aws.String("gsi1pk = :l"), ExpressionAttributeValues: avMap{":l": str("L")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if out.Count != 5 {
		t.Errorf("index holds %d items after the sweep, want 5", out.Count)
	}

	// A TTL moved into the past is swept; one moved out of it is not.
	set := func(pk string, ttl types.AttributeValue) {
		_, err := tb.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
			TableName: aws.String(name), Key: avMap{"pk": str(pk), "sk": str("S")},
			UpdateExpression: aws.String("SET #t = :t"), ExpressionAttributeNames: map[string]string{"#t": tablestore.TTLAttribute},
			ExpressionAttributeValues: avMap{":t": ttl},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	mustPut(t, tb, name, avMap{"pk": str("revived"), "sk": str("S"), tablestore.TTLAttribute: sec(-time.Minute)})
	set("revived", sec(time.Hour))
	set("future", sec(-time.Minute))
	if n, err := tb.Sweep(now); err != nil || n != 1 {
		t.Errorf("second sweep: %d, %v; want 1 item", n, err)
	}
	if exists(t, tb, name, "future") || !exists(t, tb, name, "revived") {
		t.Error("the second sweep deleted the wrong item")
	}
}

// TestTable_SweepBounded: a backlog larger than one transaction's share
// is swept completely, in several transactions.
func TestTable_SweepBounded(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	tb, name := openTable(t, boltstore.WithClock(func() time.Time { return now }), boltstore.WithSweepInterval(0))
	boltstore.SetSweepMax(tb, 10)
	for i := range 25 {
		mustPut(t, tb, name, avMap{"pk": str(fmt.Sprint("k", i)), "sk": str("S"), tablestore.TTLAttribute: num(fmt.Sprint(now.Unix() - int64(i) - 1))})
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
	tb, name := openTable(t, boltstore.WithClock(func() time.Time { return now }), boltstore.WithSweepInterval(0))
	past := uint64(now.Unix() - 60)
	for i := range 3 {
		if err := boltstore.PutExpiryEntry(tb, past, boltstore.TableKey([]byte(fmt.Sprint("gone", i)), []byte("S"))); err != nil {
			t.Fatal(err)
		}
	}
	mustPut(t, tb, name, avMap{"pk": str("later"), "sk": str("S"), tablestore.TTLAttribute: num(fmt.Sprint(now.Unix() + 3600))})
	if err := boltstore.PutExpiryEntry(tb, past, boltstore.TableKey([]byte("later"), []byte("S"))); err != nil {
		t.Fatal(err)
	}
	if n, err := tb.Sweep(now); err != nil || n != 4 {
		t.Fatalf("first sweep: %d, %v; want 4 entries cleared", n, err)
	}
	if !exists(t, tb, name, "later") {
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
	def := tablestore.TableDefinition("latchkey")
	var now atomic.Int64
	now.Store(1_800_000_000)
	clock := boltstore.WithClock(func() time.Time { return time.Unix(now.Load(), 0) })
	tb, err := boltstore.OpenTable(path, def, boltstore.WithTTL(tablestore.TTLAttribute), clock, boltstore.WithSweepInterval(0))
	if err != nil {
		t.Fatal(err)
	}
	mustPut(t, tb, "latchkey", avMap{"pk": str("a"), "sk": str("S"), tablestore.TTLAttribute: num("1800000100")})
	mustPut(t, tb, "latchkey", avMap{"pk": str("b"), "sk": str("S"), tablestore.TTLAttribute: num("1800000200")})
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	now.Store(1_800_000_150)
	tb, err = boltstore.OpenTable(path, def, boltstore.WithTTL(tablestore.TTLAttribute), clock, boltstore.WithSweepInterval(5*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	if exists(t, tb, "latchkey", "a") {
		t.Error("an item expired while the file was closed is there after OpenTable")
	}
	if !exists(t, tb, "latchkey", "b") {
		t.Fatal("an item not yet expired is gone")
	}
	now.Store(1_800_000_250)
	deadline := time.Now().Add(time.Minute)
	for exists(t, tb, "latchkey", "b") {
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
	tb, name := openTable(t)
	for _, live := range []int32{0, 1} {
		ctx := &lateCancel{Context: context.Background()}
		ctx.n.Store(live)
		_, err := tb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(name), Item: avMap{"pk": str("p"), "sk": str("S")}})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("live for %d checks: got %v, want context.Canceled", live, err)
		}
		_, err = tb.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			{Put: &types.Put{TableName: aws.String(name), Item: avMap{"pk": str("p"), "sk": str("S")}}},
		}})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("transaction live for %d checks: got %v, want context.Canceled", live, err)
		}
		if exists(t, tb, name, "p") {
			t.Fatalf("live for %d checks: the item was written", live)
		}
	}
}

// TestOpenTable: a file keeps its items across a reopen, holds one
// schema, and one process at a time.
func TestOpenTable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "table.db")
	tb, err := boltstore.OpenTable(path, tablestore.TableDefinition("latchkey"))
	if err != nil {
		t.Fatal(err)
	}
	mustPut(t, tb, "latchkey", avMap{"pk": str("kept"), "sk": str("S")})
	if _, err := boltstore.OpenTable(path, tablestore.TableDefinition("latchkey")); !errors.Is(err, boltstore.ErrInUse) {
		t.Errorf("a second open: got %v, want ErrInUse", err)
	}
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	other := tablestore.TableDefinition("latchkey")
	other.KeySchema[0], other.KeySchema[1] = other.KeySchema[1], other.KeySchema[0]
	other.KeySchema[0].KeyType, other.KeySchema[1].KeyType = types.KeyTypeHash, types.KeyTypeRange
	if _, err := boltstore.OpenTable(path, other); err == nil {
		t.Error("a file opened with another key schema: no error")
	}
	tb, err = boltstore.OpenTable(path, tablestore.TableDefinition("latchkey"))
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	if !exists(t, tb, "latchkey", "kept") {
		t.Error("an item is gone after a reopen")
	}
	if _, err := tb.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String("other"), Key: avMap{"pk": str("kept"), "sk": str("S")}}); !errors.As(err, new(*types.ResourceNotFoundException)) {
		t.Errorf("another table's name: got %v, want ResourceNotFoundException", err)
	}

	for what, def := range map[string]*dynamodb.CreateTableInput{
		"number keys":          withKeyType(types.ScalarAttributeTypeN),
		"projection KEYS_ONLY": withProjection(types.ProjectionTypeKeysOnly),
	} {
		if _, err := boltstore.OpenTable(filepath.Join(t.TempDir(), "x.db"), def); err == nil {
			t.Errorf("%s: no error", what)
		}
	}
}

func withKeyType(typ types.ScalarAttributeType) *dynamodb.CreateTableInput {
	def := tablestore.TableDefinition("latchkey")
	def.AttributeDefinitions[0].AttributeType = typ
	return def
}

func withProjection(p types.ProjectionType) *dynamodb.CreateTableInput {
	def := tablestore.TableDefinition("latchkey")
	def.GlobalSecondaryIndexes[0].Projection = &types.Projection{ProjectionType: p}
	return def
}

// TestOpenTable_SchemaChanges: an index added between opens is built from
// the items already there, one dropped is gone, and a TTL attribute
// enabled later finds the items that had already expired, as DynamoDB's
// UpdateTable and UpdateTimeToLive do.
func TestOpenTable_SchemaChanges(t *testing.T) {
	path := filepath.Join(t.TempDir(), "table.db")
	bare := tablestore.TableDefinition("latchkey")
	bare.GlobalSecondaryIndexes = nil
	reopen := func(def *dynamodb.CreateTableInput, opts ...boltstore.TableOption) *boltstore.Table {
		t.Helper()
		tb, err := boltstore.OpenTable(path, def, append(opts, boltstore.WithSweepInterval(0))...)
		if err != nil {
			t.Fatal(err)
		}
		return tb
	}
	listed := func(tb *boltstore.Table) int32 {
		t.Helper()
		out, err := tb.Query(context.Background(), &dynamodb.QueryInput{
			TableName: aws.String("latchkey"), IndexName: aws.String(tablestore.GSI1),
			KeyConditionExpression: aws.String("gsi1pk = :l"), ExpressionAttributeValues: avMap{":l": str("L")},
		})
		if err != nil {
			t.Fatalf("Query: %v", err)
		}
		return out.Count
	}
	tb := reopen(bare)
	for i := range 3 {
		mustPut(t, tb, "latchkey", avMap{"pk": str(fmt.Sprint("p", i)), "sk": str("S"), "gsi1pk": str("L"), "gsi1sk": str(fmt.Sprint(i)), tablestore.TTLAttribute: num("1000")})
	}
	tb.Close()

	tb = reopen(tablestore.TableDefinition("latchkey"))
	if n := listed(tb); n != 3 {
		t.Errorf("an index added later lists %d items, want 3", n)
	}
	tb.Close()
	tb = reopen(bare)
	tb.Close()
	tb = reopen(tablestore.TableDefinition("latchkey"))
	if n := listed(tb); n != 3 {
		t.Errorf("an index dropped and added again lists %d items, want 3", n)
	}
	tb.Close()

	tb = reopen(bare, boltstore.WithTTL(tablestore.TTLAttribute), boltstore.WithClock(func() time.Time { return time.Unix(2000, 0) }))
	defer tb.Close()
	if exists(t, tb, "latchkey", "p0") {
		t.Error("an item expired before TTL was enabled is there after the sweep on open")
	}
}

package tablestore_test

import (
	"context"
	"encoding/json"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"latchkey/pkg/account"
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

// TestReadCopies_Sized: a key's verify copies follow its read rate (see
// sizing.go). A quiet key has one copy: its revocation writes no more than
// 10 WRU, and no item of gsi1; its verify reads one item. Driven hot
// (a usage flush), it grows to 15 copies, and verifies spread over them;
// a revocation then shrinks it back (the rate is gone), deleting the
// copies above; a reader that still remembers 15 copies falls back to
// copy 1 and sees a revocation made after the shrink. Copies the previous
// release wrote (no read_copies, all 15) leave no stale copy at the next
// write.
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
	copiesOf := func(what string, want int) {
		t.Helper()
		got, err := s.VerifyCopies(ctx, k.ID)
		must(t, err, "VerifyCopies")
		if len(got) != want {
			t.Errorf("%s: copies %v, want 1..%d", what, got, want)
		}
		for i, n := range got {
			if n != i+1 {
				t.Errorf("%s: copies %v, want 1..%d", what, got, want)
				break
			}
		}
	}
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

	// Hot: a flush grows it, in one transaction of the 15 copies.
	heat(t, s, k.ID, 30000)
	units, items, _ = tx.wru(t, client, table)
	t.Logf("growth to 15 copies: %d items, %d WRU", items, units)
	copiesOf("a hot key", tablestore.MaxReadCopies)
	seen := map[int]bool{}
	for range 200 {
		n := s.PickCopy(k.ID)
		seen[n] = true
		st, err := s.TokenStatusOfCopy(ctx, n, tok, k.ID, nil, "", true)
		must(t, err, "TokenStatus")
		if st.Key == nil {
			t.Fatalf("TokenStatus: %+v", st)
		}
	}
	if len(seen) < tablestore.MaxReadCopies-2 {
		t.Errorf("200 verifies of a hot key read copies %v, want them spread over 1..%d", seen, tablestore.MaxReadCopies)
	}

	// The rate gone (a fresh table's usage: none), a revocation shrinks it
	// to one copy. A reader that remembers 15 (this one) reads a copy
	// that is gone, falls back, and sees the next revocation.
	stale := dynamostore.New(client, table, dynamostore.WithTimeout(dynamotest.Timeout))
	_, err := stale.TokenStatusOfCopy(ctx, 7, tok, k.ID, nil, "", true)
	must(t, err, "TokenStatus")
	must(t, s.ForgetUsage(ctx, k.ID), "ForgetUsage")
	revoke(false)
	copiesOf("a key gone quiet, after a revocation", 1)
	last := revoke(false)
	for n := 1; n <= tablestore.MaxReadCopies; n++ {
		st, err := stale.TokenStatusOfCopy(ctx, n, last.TokenID, k.ID, nil, "", true)
		must(t, err, "TokenStatus")
		if !st.RevokedAt.Equal(last.RevokedAt) {
			t.Errorf("a reader of copy %d after the shrink: %+v, want revoked at %v", n, st, last.RevokedAt)
		}
	}

	// The previous release's copies: all 15, no read_copies. A write of
	// this release leaves copy 1 alone, and no stale copy.
	must(t, s.PutPreviousCopies(ctx, k.ID), "PutPreviousCopies")
	copiesOf("the previous release's copies", tablestore.MaxReadCopies)
	revoke(false)
	copiesOf("after a revocation over the previous release's copies", 1)
}

package tablestore_test

import (
	"context"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"latchkey/pkg/account"
	"latchkey/pkg/boltstore"
	"latchkey/pkg/dynamostore"
	"latchkey/pkg/dynamostore/dynamotest"
	"latchkey/pkg/tablestore"
)

// countingPort is a table that records, for each read a store asks of it,
// how many items it asks for.
type countingPort struct {
	tablestore.Port
	mu    sync.Mutex
	reads []int
}

func (p *countingPort) Get(ctx context.Context, k tablestore.Key) (tablestore.Item, error) {
	p.read(1)
	return p.Port.Get(ctx, k)
}

func (p *countingPort) BatchGet(ctx context.Context, keys []tablestore.Key, consistent bool) ([]tablestore.Item, error) {
	p.read(len(keys))
	return p.Port.BatchGet(ctx, keys, consistent)
}

func (p *countingPort) Query(ctx context.Context, q tablestore.Query) (tablestore.Page, error) {
	p.read(q.Limit)
	return p.Port.Query(ctx, q)
}

func (p *countingPort) read(items int) {
	p.mu.Lock()
	p.reads = append(p.reads, items)
	p.mu.Unlock()
}

// measure runs fn and returns the items each of its reads asked for.
func (p *countingPort) measure(fn func()) []int {
	p.mu.Lock()
	p.reads = nil
	p.mu.Unlock()
	fn()
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.reads)
}

// onBothCounted runs fn over a fresh table on DynamoDB Local and one on
// bbolt, each behind a countingPort, with the meter of the DynamoDB
// client (nil on bbolt, which bills no capacity).
func onBothCounted(t *testing.T, fn func(t *testing.T, p *countingPort, m *meter)) {
	t.Run("DynamoDBLocal", func(t *testing.T) {
		var m meter
		client := dynamotest.NewClient(t, m.option)
		fn(t, &countingPort{Port: dynamostore.Port(client, dynamotest.NewTable(t, client))}, &m)
	})
	t.Run("Bolt", func(t *testing.T) {
		table, err := boltstore.OpenTable(filepath.Join(t.TempDir(), "table.db"), boltstore.WithTTL(tablestore.TTLAttribute))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { table.Close() })
		fn(t, &countingPort{Port: table.Port()}, nil)
	})
}

// overflowKey is a key whose item holds as many revocations as it can,
// and the IDs of its tokens, issued one a millisecond apart, in order.
type overflowKey struct {
	key  account.APIKey
	base time.Time
	tick int
}

func newOverflowKey(t *testing.T, s *tablestore.Store) *overflowKey {
	t.Helper()
	o := &overflowKey{base: time.Now().UTC().Truncate(time.Millisecond)}
	o.key = newKey(o.next())
	must(t, s.CreateAPIKey(t.Context(), account.WriteOptions{}, o.key), "CreateAPIKey")
	return o
}

// next is the time of the next token.
func (o *overflowKey) next() time.Time {
	o.tick++
	return o.base.Add(time.Duration(o.tick) * time.Millisecond)
}

// token returns the ID of a new token of the key.
func (o *overflowKey) token() string { return account.NewID(account.PrefixToken, o.next()) }

// revoke revokes the token id, with the claim, at at, the token expiring
// an hour after it was issued.
func (o *overflowKey) revoke(t *testing.T, s *tablestore.Store, id string, at time.Time) account.Revocation {
	t.Helper()
	return o.revokeLiving(t, s, id, at, time.Hour)
}

// revokeLiving is revoke of a token that lives for lifetime.
func (o *overflowKey) revokeLiving(t *testing.T, s *tablestore.Store, id string, at time.Time, lifetime time.Duration) account.Revocation {
	t.Helper()
	issued, _ := account.IDTime(account.PrefixToken, id)
	r := account.Revocation{TokenID: id, KeyID: o.key.ID, RevokedAt: at, ExpiresAt: issued.Add(lifetime), Inline: true}
	_, err := s.RevokeToken(t.Context(), account.WriteOptions{}, r)
	must(t, err, "RevokeToken")
	return r
}

// fill revokes as many tokens as the key's item holds.
func (o *overflowKey) fill(t *testing.T, s *tablestore.Store) {
	t.Helper()
	for range tablestore.MaxInlineRevocations {
		o.revoke(t, s, o.token(), o.next())
	}
}

// verifies checks a verify by s of the token id of the key: revoked or
// not, and reading want items with each of its requests; on DynamoDB, at
// most 1 read unit an item (what AWS bills: DynamoDB Local bills none for
// an item that is not there).
func (o *overflowKey) verifies(t *testing.T, p *countingPort, m *meter, s *tablestore.Store, what, id string, revoked bool, want ...int) {
	t.Helper()
	var st account.TokenStatus
	var err error
	verify := func() { st, err = s.TokenStatus(t.Context(), id, o.key.ID, nil, "", true) }
	var units float64
	got := p.measure(func() {
		if m == nil {
			verify()
			return
		}
		for _, c := range m.measure(verify) {
			units += c.capacity
		}
	})
	must(t, err, what+": TokenStatus")
	if st.Key == nil || st.RevokedAt.IsZero() == revoked {
		t.Errorf("%s: got %+v, want the key, revoked %v", what, st, revoked)
	}
	if !slices.Equal(got, want) {
		t.Errorf("%s: requests reading %v items, want %v", what, got, want)
	}
	items := 0
	for _, n := range want {
		items += n
	}
	if m != nil && (units > float64(items) || units == 0) {
		t.Errorf("%s: %g read units, want 1 to %d", what, units, items)
	}
}

// TestRevocationOverflow_Bound: a key with more live revocations than
// its item holds sends to the revocation entry only the verifies of the
// tokens issued up to the last one revoked outside the item; a token
// issued since reads its key alone (1 request, 1 item). A token issued
// before it is refused if revoked and accepted if not, at 2 requests of
// 1 item in a process that has not seen the overflow, and 1 request of 2
// items (2 RRU) once it has. When a later revocation finds the overflowed
// tokens expired, the overflow ends: 1 item again. On DynamoDB Local and
// bbolt.
func TestRevocationOverflow_Bound(t *testing.T) {
	onBothCounted(t, func(t *testing.T, p *countingPort, m *meter) {
		s := tablestore.New(p).ReadCopy(1)
		o := newOverflowKey(t, s)
		early := o.token()
		o.fill(t, s)
		notRevoked := o.token()
		over := o.revoke(t, s, o.token(), o.next())
		after := o.token()

		// A process that has not verified a token of the key yet.
		v := tablestore.New(p).ReadCopy(1)
		o.verifies(t, p, m, v, "a token issued before the overflowed one, first", early, false, 1, 1)
		o.verifies(t, p, m, v, "the same, the overflow known", early, false, 2)
		o.verifies(t, p, m, v, "another issued before it", notRevoked, false, 2)
		o.verifies(t, p, m, v, "the overflowed token", over.TokenID, true, 2)
		o.verifies(t, p, m, v, "a token issued after it", after, false, 1)
		// Another process: its first verify of the key, of a token issued
		// since, reads the key alone, and teaches it the overflow.
		w := tablestore.New(p).ReadCopy(1)
		o.verifies(t, p, m, w, "a token issued after it, in another process", after, false, 1)
		o.verifies(t, p, m, w, "the overflowed token, in that process", over.TokenID, true, 2)

		// A revocation after the overflowed tokens expired ends it.
		o.revoke(t, s, o.token(), over.ExpiresAt.Add(2*time.Minute))
		item, err := p.Port.Get(t.Context(), tablestore.Key{PK: "KEY#" + o.key.ID, SK: "KEY"})
		must(t, err, "Get the key's item")
		for _, name := range []string{"revoked_overflow_until", "revoked_overflow_issued_before"} {
			if _, ok := item[name]; ok {
				t.Errorf("the key's item holds %s after the overflow ended", name)
			}
		}
		o.verifies(t, p, m, v, "a token issued before it, after the end, in the process that knew", early, false, 2)
		o.verifies(t, p, m, v, "the same again", early, false, 1)
		o.verifies(t, p, m, tablestore.New(p).ReadCopy(1), "a token issued before it, after the end", early, false, 1)
	})
}

// TestRevocationOverflow_WithoutBound: an overflow that a commit before
// revoked_overflow_issued_before began (the key has revoked_overflow_until
// alone) still holds, for a verify, every token issued before its end,
// and a later overflow of a token issued earlier, which moves its end,
// does not narrow it: the first overflowed token, issued after the
// second, is still refused.
func TestRevocationOverflow_WithoutBound(t *testing.T) {
	onBothCounted(t, func(t *testing.T, p *countingPort, m *meter) {
		s := tablestore.New(p).ReadCopy(1)
		o := newOverflowKey(t, s)
		o.fill(t, s)
		early, late := o.token(), o.token()
		first := o.revoke(t, s, late, o.next())
		must(t, s.DropOverflowBound(t.Context(), o.key.ID), "DropOverflowBound")
		second := o.revokeLiving(t, s, early, o.next(), 2*time.Hour)
		newer := o.token()
		v := tablestore.New(p).ReadCopy(1)
		o.verifies(t, p, m, v, "the first overflowed token, issued last", first.TokenID, true, 1, 1)
		o.verifies(t, p, m, v, "the second", second.TokenID, true, 2)
		o.verifies(t, p, m, tablestore.New(p).ReadCopy(1), "a token issued since, before the overflow's end", newer, false, 1, 1)
	})
}

// TestRevocationOverflow_RepeatAfterBound: a token revoked by its entry
// alone (by the release before the claim), issued after the last token
// of its key's overflow and expiring before the overflow's end, is taken
// by the key when revoked again: the overflow's bound moves to cover it,
// so that its verify, which reads the key, refuses it.
func TestRevocationOverflow_RepeatAfterBound(t *testing.T) {
	onBothCounted(t, func(t *testing.T, p *countingPort, m *meter) {
		s := tablestore.New(p).ReadCopy(1)
		o := newOverflowKey(t, s)
		o.fill(t, s)
		o.revokeLiving(t, s, o.token(), o.next(), 2*time.Hour)
		tr := o.token()
		issued, _ := account.IDTime(account.PrefixToken, tr)
		first := account.Revocation{TokenID: tr, KeyID: o.key.ID, RevokedAt: o.next(), ExpiresAt: issued.Add(time.Hour)}
		_, err := s.RevokeToken(t.Context(), account.WriteOptions{}, first)
		must(t, err, "RevokeToken by the earlier version")
		o.revoke(t, s, tr, o.next())
		o.verifies(t, p, m, tablestore.New(p).ReadCopy(1), "the token revoked again", tr, true, 1, 1)
	})
}

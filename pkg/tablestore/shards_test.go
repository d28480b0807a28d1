package tablestore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
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

// itemMeter counts, per item (pk and sk) and per partition (pk), the reads
// and writes a client asks DynamoDB for: what decides whether one item or
// one partition takes more than its share.
type itemMeter struct {
	mu     sync.Mutex
	reads  map[string]int // "pk|sk" and "pk"
	writes map[string]int
}

func (m *itemMeter) option(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
		return st.Initialize.Add(middleware.InitializeMiddlewareFunc("latchkey-item-meter",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				m.count(in.Parameters)
				return next.HandleInitialize(ctx, in)
			}), middleware.Before)
	})
}

func (m *itemMeter) count(params any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.reads == nil {
		m.reads, m.writes = map[string]int{}, map[string]int{}
	}
	add := func(to map[string]int, k map[string]types.AttributeValue) {
		pk, sk := attrS(k["pk"]), attrS(k["sk"])
		to[pk+"|"+sk]++
		to[pk]++
	}
	switch p := params.(type) {
	case *dynamodb.BatchGetItemInput:
		for _, ka := range p.RequestItems {
			for _, k := range ka.Keys {
				add(m.reads, k)
			}
		}
	case *dynamodb.GetItemInput:
		add(m.reads, p.Key)
	case *dynamodb.TransactWriteItemsInput:
		for _, it := range p.TransactItems {
			switch {
			case it.Put != nil:
				add(m.writes, it.Put.Item)
			case it.Update != nil:
				add(m.writes, it.Update.Key)
			case it.Delete != nil:
				add(m.writes, it.Delete.Key)
			}
		}
	case *dynamodb.PutItemInput:
		add(m.writes, p.Item)
	}
}

// reset forgets what was counted.
func (m *itemMeter) reset() {
	m.mu.Lock()
	m.reads, m.writes = map[string]int{}, map[string]int{}
	m.mu.Unlock()
}

// most returns the item or partition counted most in counts among those
// keep accepts, and its count.
func most(counts map[string]int, keep func(string) bool) (string, int) {
	name, n := "", 0
	for _, k := range slices.Sorted(maps.Keys(counts)) {
		if keep(k) && counts[k] > n {
			name, n = k, counts[k]
		}
	}
	return name, n
}

func attrS(av types.AttributeValue) string {
	if s, ok := av.(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}

// TestHotItems_Verify: over 1,000 verifies of one token, of a key bound to
// an organization and below another key, once a usage flush has shown
// the key hot (30,000 verifies a second, which grows its copies), no item and no partition is read
// by more than a tenth of them (DynamoDB serves one about 3,000 strongly
// consistent reads a second: a tenth of 30,000 verifies); nor over 1,000
// verifies spread over the tokens of two keys of one organization. Each
// verify is still one BatchGetItem. For tokens with the claim and without.
func TestHotItems_Verify(t *testing.T) {
	for _, inline := range []bool{false, true} {
		t.Run(fmt.Sprintf("inline=%v", inline), func(t *testing.T) { testHotItemsVerify(t, inline) })
	}
}

func testHotItemsVerify(t *testing.T, inline bool) {
	var m itemMeter
	var calls meter
	client := dynamotest.NewClient(t, m.option, calls.option)
	s := dynamostore.New(client, dynamotest.NewTable(t, client), dynamostore.WithTimeout(dynamotest.Timeout))
	ctx := t.Context()
	now := time.Now().UTC().Truncate(time.Millisecond)
	at := func(i int) time.Time { return now.Add(time.Duration(i) * time.Millisecond) }
	org := newOrg(at(1))
	must(t, s.CreateOrganization(ctx, account.WriteOptions{}, org), "CreateOrganization")
	parent := newKey(at(2))
	parent.OrganizationID = org.ID
	must(t, s.CreateAPIKey(ctx, account.WriteOptions{}, parent), "CreateAPIKey")
	child := newKey(at(3))
	child.OrganizationID, child.CreatedBy, child.Ancestors = org.ID, parent.ID, []string{parent.ID}
	must(t, s.CreateAPIKey(ctx, account.WriteOptions{}, child), "CreateAPIKey below a key")
	// Driven hot: a flush of 30,000 verifies a second of the key below
	// grows its copies, and those of the key above, to the most.
	heat(t, s, child.ID, 30000)
	var tokens []account.TokenRecord
	for i := range 10 {
		k := child
		if i%2 == 1 {
			k = parent
		}
		tokens = append(tokens, account.TokenRecord{ID: account.NewID(account.PrefixToken, at(10+i)), KeyID: k.ID})
	}
	verify := func(tok account.TokenRecord) {
		t.Helper()
		k := child
		if tok.KeyID == parent.ID {
			k = parent
		}
		st, err := s.TokenStatus(ctx, tok.ID, k.ID, k.Ancestors, org.ID, inline)
		must(t, err, "TokenStatus")
		if st.Key == nil || !st.RevokedAt.IsZero() {
			t.Fatalf("TokenStatus of a live token: %+v", st)
		}
	}
	const verifies = 1000
	check := func(what string) {
		t.Helper()
		for _, scope := range []struct {
			name string
			keep func(string) bool
		}{{"item", func(k string) bool { return strings.Contains(k, "|") }}, {"partition", func(k string) bool { return !strings.Contains(k, "|") }}} {
			name, n := most(m.reads, scope.keep)
			t.Logf("%s: the %s read most, %s, by %d of %d verifies", what, scope.name, name, n, verifies)
			if n > verifies/10 {
				t.Errorf("%s: the %s %s is read by %d of %d verifies, more than a tenth", what, scope.name, name, n, verifies)
			}
		}
	}

	m.reset()
	got := calls.measure(func() {
		for range verifies {
			verify(tokens[0])
		}
	})
	check("one token")
	if len(got) != verifies {
		t.Errorf("%d verifies made %d requests, want one BatchGetItem each", verifies, len(got))
	}

	m.reset()
	for i := range verifies {
		verify(tokens[i%len(tokens)])
	}
	check("the tokens of two keys of one organization")
}

// TestReadCopies_SeenAtOnce: every change that a verify must see at once
// (a token revoked, a key disabled, its tokens revoked, a key above it
// deleted, its organization deleted) is seen by a verify that reads any
// of the copies, each read in turn; and a key or token from before the
// copies existed (an item with no copy) is read from its item. For tokens
// with the claim (revoked on their key) and without (with their entry).
func TestReadCopies_SeenAtOnce(t *testing.T) {
	for _, inline := range []bool{false, true} {
		t.Run(fmt.Sprintf("inline=%v", inline), func(t *testing.T) { testReadCopiesSeenAtOnce(t, inline) })
	}
}

func testReadCopiesSeenAtOnce(t *testing.T, inline bool) {
	_, _, s := newTableStore(t)
	ctx := t.Context()
	now := time.Now().UTC().Truncate(time.Millisecond)
	tick := 0
	next := func() time.Time { tick++; return now.Add(time.Duration(tick) * time.Millisecond) }
	org := newOrg(next())
	must(t, s.CreateOrganization(ctx, account.WriteOptions{}, org), "CreateOrganization")
	parent := newKey(next())
	parent.OrganizationID = org.ID
	must(t, s.CreateAPIKey(ctx, account.WriteOptions{}, parent), "CreateAPIKey")
	child := newKey(next())
	child.OrganizationID, child.CreatedBy, child.Ancestors = org.ID, parent.ID, []string{parent.ID}
	must(t, s.CreateAPIKey(ctx, account.WriteOptions{}, child), "CreateAPIKey below a key")
	tok := account.NewID(account.PrefixToken, next())
	other := account.NewID(account.PrefixToken, next())

	// every returns the status of tok as each copy has it.
	every := func(tokenID string) []account.TokenStatus {
		t.Helper()
		out := make([]account.TokenStatus, tablestore.MaxReadCopies)
		for i := range out {
			n := i + 1
			st, err := s.TokenStatusOfCopy(ctx, n, tokenID, child.ID, child.Ancestors, org.ID, inline)
			must(t, err, "TokenStatus")
			out[i] = st
		}
		return out
	}
	expect := func(what string, tokenID string, ok func(account.TokenStatus) bool) {
		t.Helper()
		for n, st := range every(tokenID) {
			if !ok(st) {
				t.Errorf("%s: copy %d reads %+v (key %+v)", what, n, st, st.Key)
			}
		}
	}
	expect("a live token", tok, func(st account.TokenStatus) bool { return st.Key != nil && st.RevokedAt.IsZero() && !st.Key.Paused() })

	revokedAt := next()
	if _, err := s.RevokeToken(ctx, account.WriteOptions{}, account.Revocation{TokenID: tok, KeyID: child.ID, RevokedAt: revokedAt, ExpiresAt: revokedAt.Add(time.Hour), Inline: inline}); err != nil {
		t.Fatal(err)
	}
	expect("a revoked token", tok, func(st account.TokenStatus) bool { return st.RevokedAt.Equal(revokedAt) })
	expect("another token of the key", other, func(st account.TokenStatus) bool { return st.Key != nil && st.RevokedAt.IsZero() })

	disabled := true
	_, err := s.UpdateAPIKey(ctx, account.WriteOptions{}, parent.ID, account.APIKeyPatch{Disabled: &disabled, At: next()}, nil)
	must(t, err, "UpdateAPIKey (disable the key above)")
	expect("a key below a disabled key", other, func(st account.TokenStatus) bool { return st.Key != nil && st.Key.DisabledAbove })
	disabled = false
	_, err = s.UpdateAPIKey(ctx, account.WriteOptions{}, parent.ID, account.APIKeyPatch{Disabled: &disabled, At: next()}, nil)
	must(t, err, "UpdateAPIKey (enable it again)")
	expect("a key below an enabled key", other, func(st account.TokenStatus) bool { return st.Key != nil && !st.Key.Paused() })

	revokeAll := next()
	_, err = s.UpdateAPIKey(ctx, account.WriteOptions{}, child.ID, account.APIKeyPatch{RevokeTokens: true, At: revokeAll}, nil)
	must(t, err, "UpdateAPIKey (revoke every token)")
	expect("tokens revoked with their key's", other, func(st account.TokenStatus) bool {
		return st.Key != nil && !st.Key.TokensRevokedBefore.Before(revokeAll)
	})

	must(t, s.DeleteOrganization(ctx, account.WriteOptions{}, org.ID), "DeleteOrganization")
	expect("a key of a deleted organization", other, func(st account.TokenStatus) bool { return st.Key == nil })
}

// TestEventShards: over many changes, some of them of one organization,
// no event partition takes more than a tenth of the event writes (an
// organization's copies included), and the feed, merged from the shards,
// still lists every event once, in id order, forwards and backwards.
func TestEventShards(t *testing.T) {
	t.Parallel() // it waits out the feed's lag, beside TestDeleteAPIKey_EventsBeyondOneTransaction
	var m itemMeter
	client := dynamotest.NewClient(t, m.option)
	s := dynamostore.New(client, dynamotest.NewTable(t, client), dynamostore.WithTimeout(dynamotest.Timeout))
	ctx, opts := t.Context(), account.WriteOptions{Events: &account.EventSource{
		Actor: account.Actor{KeyID: "key_caller"}, RequestID: "req-shards",
		Encode: func(e account.Event) ([]byte, error) {
			return json.Marshal(map[string]string{"id": e.ID, "type": e.Type})
		},
	}}
	now := time.Now().UTC().Truncate(time.Millisecond)
	from := account.EventIDAt(now.Add(-time.Second))
	org := newOrg(now)
	must(t, s.CreateOrganization(ctx, opts, org), "CreateOrganization")
	const changes = 10 * tablestore.EventShards
	for i := range changes {
		if i%2 == 0 {
			name := fmt.Sprintf("rename %d", i)
			_, err := s.UpdateOrganization(ctx, opts, org.ID, account.OrganizationPatch{Name: &name, UpdatedAt: now.Add(time.Duration(i+1) * time.Millisecond)})
			must(t, err, "UpdateOrganization")
		} else {
			must(t, s.CreateUser(ctx, opts, newUser(now.Add(time.Duration(i+1)*time.Millisecond))), "CreateUser")
		}
	}
	written := time.Now()
	events := 0
	partitions := map[string]int{}
	for k, n := range m.writes {
		if !strings.Contains(k, "|") && strings.HasPrefix(k, "EVENT") {
			events += n
			partitions[k] = n
		}
	}
	name, n := most(partitions, func(string) bool { return true })
	t.Logf("%d event writes over %d partitions; the busiest, %s, took %d", events, len(partitions), name, n)
	if events < changes*3/2 {
		t.Fatalf("%d event writes for %d changes, half of them with an organization's copy", events, changes)
	}
	if n > events/10 {
		t.Errorf("the event partition %s took %d of %d event writes, more than a tenth", name, n, events)
	}

	// The feed, once the lag has passed: every event once, in order.
	time.Sleep(time.Until(written.Add(tablestore.EventLag(dynamotest.Timeout) + time.Second)))
	read := func(q account.EventQuery, step func(*account.EventQuery, string)) []string {
		var ids []string
		for range 1000 {
			q.Since = now.Add(-time.Hour)
			page, err := s.ListEvents(t.Context(), q)
			must(t, err, "ListEvents")
			for _, e := range page.Items {
				ids = append(ids, e.ID)
			}

			if page.Next == "" {
				return ids
			}
			step(&q, page.Next)
		}
		t.Fatal("ListEvents: no end after 1000 pages")
		return nil
	}
	forward := read(account.EventQuery{After: from, Limit: 7}, func(q *account.EventQuery, n string) { q.After = n })
	backward := read(account.EventQuery{Limit: 7}, func(q *account.EventQuery, n string) { q.Before = n })
	slices.Reverse(backward)
	if len(forward) != changes+1 || !slices.IsSorted(forward) || len(slices.Compact(slices.Clone(forward))) != len(forward) {
		t.Errorf("forwards, 7 a page: %d events (want %d), sorted %v", len(forward), changes+1, slices.IsSorted(forward))
	}
	if !slices.Equal(forward, backward) {
		t.Errorf("backwards, 7 a page: %d events, not the %d read forwards", len(backward), len(forward))
	}
	orgFeed := read(account.EventQuery{OrganizationID: org.ID, Limit: 7}, func(q *account.EventQuery, n string) { q.Before = n })
	if len(orgFeed) != changes/2+1 || !slices.IsSortedFunc(orgFeed, func(a, b string) int { return strings.Compare(b, a) }) {
		t.Errorf("the organization's feed, 7 a page: %d events (want %d), newest first %v", len(orgFeed), changes/2+1,
			slices.IsSortedFunc(orgFeed, func(a, b string) int { return strings.Compare(b, a) }))
	}
}

// busyShards is a Table whose event partitions but shard 5 of a day are
// busy: DynamoDB cancels a transaction that puts an event there with
// ThrottlingError on that item, as it does when a partition is past its
// throughput.
type busyShards struct {
	dynamostore.Table
	throttled atomic.Int64
	mu        sync.Mutex
	written   []string // the event partitions of the transactions let through
}

func (b *busyShards) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	reasons := make([]types.CancellationReason, len(in.TransactItems))
	busy := false
	var events []string
	for i, it := range in.TransactItems {
		reasons[i].Code = aws.String("None")
		if it.Put == nil {
			continue
		}
		if pk := attrS(it.Put.Item["pk"]); strings.HasPrefix(pk, "EVENT#") {
			events = append(events, pk)
			if !strings.HasSuffix(pk, "#5") {
				reasons[i].Code = aws.String("ThrottlingError")
				busy = true
			}
		}
	}
	if busy {
		b.throttled.Add(1)
		return nil, &types.TransactionCanceledException{Message: aws.String("Transaction cancelled"), CancellationReasons: reasons}
	}
	out, err := b.Table.TransactWriteItems(ctx, in, opts...)
	if err == nil {
		b.mu.Lock()
		b.written = append(b.written, events...)
		b.mu.Unlock()
	}
	return out, err
}

// TestEventShards_Busy: a revocation whose event's shard is busy is not
// refused for it: it goes again at once, its event in the next shards,
// until one takes it, in the same transaction as the revocation.
func TestEventShards_Busy(t *testing.T) {
	client := dynamotest.NewClient(t)
	busy := &busyShards{Table: client}
	s := tablestore.New(dynamostore.Port(busy, dynamotest.NewTable(t, client)))
	ctx, opts := t.Context(), account.WriteOptions{Events: &account.EventSource{
		Actor: account.Actor{KeyID: "key_caller"}, RequestID: "req-busy",
		Encode: func(e account.Event) ([]byte, error) {
			return json.Marshal(map[string]string{"id": e.ID, "type": e.Type})
		},
	}}
	now := time.Now().UTC()
	for i := range 3 {
		tok := account.NewID(account.PrefixToken, now.Add(time.Duration(i)*time.Millisecond))
		at, err := s.RevokeToken(ctx, opts, account.Revocation{TokenID: tok, KeyID: "key_x", RevokedAt: now, ExpiresAt: now.Add(time.Hour)})
		if err != nil {
			t.Fatalf("RevokeToken with %d of %d event shards busy: %v", tablestore.EventShards-1, tablestore.EventShards, err)
		}
		if !at.Equal(now) {
			t.Errorf("RevokeToken: revoked at %v, want %v", at, now)
		}
		st, err := s.TokenStatus(ctx, tok, "key_x", nil, "", false)
		must(t, err, "TokenStatus")
		if !st.RevokedAt.Equal(now) {
			t.Errorf("TokenStatus of a token revoked while the event log was busy: %+v", st)
		}
	}
	if busy.throttled.Load() == 0 {
		t.Fatal("no transaction met a busy shard")
	}
	if len(busy.written) != 3 {
		t.Errorf("events written in %v, want the 3 revocations' in shard 5", busy.written)
	}
	t.Logf("%d transactions met a busy shard; every revocation went through, its event in %v", busy.throttled.Load(), busy.written)
}

// TestVerify_OneItem: a verify of a token with the claim, of a key with
// no key above it and no organization, asks DynamoDB for one item (copy n
// of the key), in one BatchGetItem; one more per key above and for the
// organization. A token without the claim costs its revocation entry's
// copy as well.
func TestVerify_OneItem(t *testing.T) {
	var m itemMeter
	var calls meter
	client := dynamotest.NewClient(t, m.option, calls.option)
	s := dynamostore.New(client, dynamotest.NewTable(t, client), dynamostore.WithTimeout(dynamotest.Timeout))
	ctx := t.Context()
	now := time.Now().UTC().Truncate(time.Millisecond)
	at := func(i int) time.Time { return now.Add(time.Duration(i) * time.Millisecond) }
	org := newOrg(at(1))
	must(t, s.CreateOrganization(ctx, account.WriteOptions{}, org), "CreateOrganization")
	root := newKey(at(2))
	must(t, s.CreateAPIKey(ctx, account.WriteOptions{}, root), "CreateAPIKey")
	child := newKey(at(3))
	child.CreatedBy, child.Ancestors = root.ID, []string{root.ID}
	must(t, s.CreateAPIKey(ctx, account.WriteOptions{}, child), "CreateAPIKey below a key")
	bound := newKey(at(4))
	bound.OrganizationID = org.ID
	must(t, s.CreateAPIKey(ctx, account.WriteOptions{}, bound), "CreateAPIKey bound to an organization")
	// A key that holds revocations reads no more than one that holds none.
	for i := range 5 {
		_, err := s.RevokeToken(ctx, account.WriteOptions{}, account.Revocation{TokenID: account.NewID(account.PrefixToken, at(10+i)), KeyID: root.ID, RevokedAt: at(20 + i), ExpiresAt: at(20 + i).Add(time.Hour), Inline: true})
		must(t, err, "RevokeToken")
	}
	// Each with all its copies, so that every copy number is there.
	for _, k := range []account.APIKey{child, bound} {
		heat(t, s, k.ID, 30000)
	}
	tok := account.NewID(account.PrefixToken, at(30))
	for _, c := range []struct {
		what   string
		k      account.APIKey
		inline bool
		items  int
	}{
		{"a token with the claim of a key with none above it", root, true, 1},
		{"a token without the claim", root, false, 2},
		{"a token with the claim of a key below a key", child, true, 2},
		{"a token with the claim of a key bound to an organization", bound, true, 2},
	} {
		for n := 1; n <= tablestore.MaxReadCopies; n++ {
			m.reset()
			got := calls.measure(func() {
				st, err := s.TokenStatusOfCopy(ctx, n, tok, c.k.ID, c.k.Ancestors, c.k.OrganizationID, c.inline)
				must(t, err, "TokenStatus")
				if st.Key == nil || !st.RevokedAt.IsZero() {
					t.Fatalf("%s: TokenStatus: got %+v, want the key, not revoked", c.what, st)
				}
			})
			items := 0
			for k, v := range m.reads {
				if strings.Contains(k, "|") {
					items += v
				}
			}
			if len(got) != 1 || got[0].op != "BatchGetItem" || items != c.items {
				t.Errorf("%s, copy %d: %d requests %v reading %d items, want one BatchGetItem of %d", c.what, n, len(got), got, items, c.items)
			}
		}
	}
}

// TestReadCopies_Overflow: a revocation past what its key holds is seen at
// once on every copy, and so is a token of that key that is not revoked.
func TestReadCopies_Overflow(t *testing.T) {
	_, _, s := newTableStore(t)
	ctx := t.Context()
	now := time.Now().UTC().Truncate(time.Millisecond)
	tick := 0
	next := func() time.Time { tick++; return now.Add(time.Duration(tick) * time.Millisecond) }
	k := newKey(next())
	must(t, s.CreateAPIKey(ctx, account.WriteOptions{}, k), "CreateAPIKey")
	live := account.NewID(account.PrefixToken, next())
	var last account.Revocation
	for range 20 {
		at := next()
		last = account.Revocation{TokenID: account.NewID(account.PrefixToken, at), KeyID: k.ID, RevokedAt: at, ExpiresAt: at.Add(time.Hour), Inline: true}
		_, err := s.RevokeToken(ctx, account.WriteOptions{}, last)
		must(t, err, "RevokeToken")
	}
	for n := 1; n <= tablestore.MaxReadCopies; n++ {
		st, err := s.TokenStatusOfCopy(ctx, n, last.TokenID, k.ID, nil, "", true)
		must(t, err, "TokenStatus")
		if !st.RevokedAt.Equal(last.RevokedAt) || st.Key == nil {
			t.Errorf("copy %d: the token revoked past the key's room reads %+v, want revoked at %v", n, st, last.RevokedAt)
		}
		st, err = s.TokenStatusOfCopy(ctx, n, live, k.ID, nil, "", true)
		must(t, err, "TokenStatus")
		if !st.RevokedAt.IsZero() || st.Key == nil {
			t.Errorf("copy %d: a live token reads %+v, want not revoked", n, st)
		}
	}
}

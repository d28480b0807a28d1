package boltstore_test

import (
	"context"
	"testing"
	"time"

	"latchkey/pkg/account"
)

// TestTokenStatus_Allocations: a verify's reads on the embedded store
// allocate no more than the SDK-free read path needs. Through
// BatchGetItem (its request and answer maps, a map per key) TokenStatus
// made 33 allocations; through BatchGetKeys 19, 24 with the read copies
// of branch shards, and 17 since a verify reads keyMemo's items without a
// clone, one cursor seeks all its keys, a copy's key is one string and
// batchGetOnce's ConsistentRead flag is made only for BatchGetItem; 19
// since the key it returns is the caller's own (hash and scopes copied
// out of the memo's shared item).
// It is a count, not a time, so it holds on a loaded machine.
func TestTokenStatus_Allocations(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	k := account.APIKey{ID: account.NewID(account.PrefixAPIKey, now), Name: "bench", Hash: account.HashAPIKey("bench"), Last4: "ench", Scopes: []string{"*:*"}, CreatedAt: now}
	tr := account.TokenRecord{ID: account.NewID(account.PrefixToken, now), KeyID: k.ID, Scopes: []string{"read:users"}, IssuedAt: now, ExpiresAt: now.Add(time.Hour)}
	if err := s.CreateAPIKey(ctx, account.WriteOptions{}, k); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateToken(ctx, account.WriteOptions{}, tr); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(200, func() {
		st, err := s.TokenStatus(ctx, tr.ID, k.ID, nil, "", false)
		if err != nil || st.Key == nil {
			t.Fatalf("TokenStatus: %+v, %v", st, err)
		}
	})
	t.Logf("TokenStatus: %.0f allocations", allocs)
	if allocs > 19 {
		t.Errorf("TokenStatus makes %.0f allocations, want at most 19", allocs)
	}
}

package account_test

import (
	"context"
	"sync/atomic"
	"testing"

	"latchkey/pkg/account"
	"latchkey/pkg/teststore"
)

// countingStore counts the reads of token status (revocation entry and
// issuing key) that the service makes.
type countingStore struct {
	account.Store
	tokenStatus atomic.Int64
}

func (s *countingStore) TokenStatus(ctx context.Context, tokenID, keyID string, ancestors []string, orgID string, inline bool) (account.TokenStatus, error) {
	s.tokenStatus.Add(1)
	return s.Store.TokenStatus(ctx, tokenID, keyID, ancestors, orgID, inline)
}

// TestService_TokenCacheReadsStatusEveryCall: with the token cache on, a
// token whose signature is remembered still costs one read of its
// revocation entry and issuing key on every verify and every
// authentication, so revoking it, or deleting its key, refuses it at once.
func TestService_TokenCacheReadsStatusEveryCall(t *testing.T) {
	store := &countingStore{Store: teststore.Open(t)}
	e := newEnvOver(t, store)
	svc, ctx, adminP, cache := e.svc, e.ctx, e.admin, e.cache
	key, secret, err := svc.CreateAPIKey(ctx, adminP, account.NewAPIKey{Name: "client", Scopes: []string{"read:users"}})
	if err != nil {
		t.Fatal(err)
	}
	keyP, err := svc.Authenticate(ctx, secret)
	if err != nil {
		t.Fatal(err)
	}
	issue := func() string {
		t.Helper()
		tok, _, err := svc.IssueToken(ctx, keyP, account.TokenRequest{Scopes: []string{"read:users"}})
		if err != nil {
			t.Fatalf("IssueToken: %v", err)
		}
		return tok
	}
	reads := func(want int64) {
		t.Helper()
		if got := store.tokenStatus.Swap(0); got != want {
			t.Fatalf("TokenStatus reads: got %d, want %d", got, want)
		}
	}
	verify := func(tok, wantReason string) {
		t.Helper()
		v, err := svc.VerifyToken(ctx, tok)
		if err != nil || v.Valid != (wantReason == "") || v.Reason != wantReason {
			t.Fatalf("VerifyToken: got %+v, %v; want reason %q", v, err, wantReason)
		}
	}

	tok := issue()
	for range 5 {
		verify(tok, "")
	}
	reads(5)
	if n := cache.Len(); n != 1 {
		t.Fatalf("cache Len: got %d, want 1 (the token's signature remembered)", n)
	}
	for range 5 {
		if _, err := svc.Authenticate(ctx, tok); err != nil {
			t.Fatalf("Authenticate: %v", err)
		}
	}
	reads(5)

	t.Run("Revoked", func(t *testing.T) {
		if _, err := svc.RevokeToken(ctx, keyP, tok); err != nil {
			t.Fatal(err)
		}
		store.tokenStatus.Store(0)
		verify(tok, account.ReasonRevoked)
		_, err := svc.Authenticate(ctx, tok)
		wantCode(t, err, account.CodeUnauthorized)
		reads(2)
	})
	t.Run("KeyDeleted", func(t *testing.T) {
		tok := issue()
		verify(tok, "")
		if err := svc.DeleteAPIKey(ctx, adminP, key.ID); err != nil {
			t.Fatal(err)
		}
		store.tokenStatus.Store(0)
		verify(tok, account.ReasonRevoked)
		_, err := svc.Authenticate(ctx, tok)
		wantCode(t, err, account.CodeUnauthorized)
		reads(2)
	})
}

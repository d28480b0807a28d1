package account_test

import (
	"testing"
	"time"

	"latchkey/pkg/account"
)

// TestService_Formats: docs/deploying.md's rule for revocations on the
// key, on each store (teststore: bbolt, or DynamoDB Local).
func TestService_Formats(t *testing.T) {
	// prevRead is a verify that does not rely on the key: its key and its
	// entry's read copy, one of 16 at random, as the previous release
	// reads (which TestMixedVersions checks with that release's build:
	// this store's read also honours the key's own revocations).
	prevRead := func(t *testing.T, e *env, c account.TokenClaims) bool {
		t.Helper()
		for range 32 {
			st, err := e.store.TokenStatus(e.ctx, c.ID, c.KeyID, c.KeyAncestors, c.OrganizationID, false)
			if err != nil {
				t.Fatal(err)
			}
			if st.RevokedAt.IsZero() {
				return false
			}
		}
		return true
	}

	t.Run("NotInForce", func(t *testing.T) {
		// Before the step: no claim, and a token revoked by the previous
		// release is revoked for this one.
		e := newEnv(t)
		p, _ := e.key(t, "", "read:users")
		tok, claims, err := e.svc.IssueToken(e.ctx, p, account.TokenRequest{Scopes: []string{"read:users"}})
		if err != nil {
			t.Fatal(err)
		}
		if claims.InlineRevocation {
			t.Fatal("a token issued before the formats item puts revocations on the key in force carries irv")
		}
		if _, err := e.svc.RevokeToken(e.ctx, p, tok); err != nil {
			t.Fatal(err)
		}
		if !prevRead(t, e, claims) {
			t.Error("the previous release misses the revocation")
		}
	})

	t.Run("InForce", func(t *testing.T) {
		// After the step: the claim, a verify that reads the key alone,
		// and a revocation the previous release still reads (after a
		// rollback).
		e := newEnv(t)
		if _, err := account.PutFormatsInForce(e.ctx, e.store, e.clock.Now(), "test"); err != nil {
			t.Fatal(err)
		}
		p, _ := e.key(t, "", "read:users")
		tok, claims, err := e.svc.IssueToken(e.ctx, p, account.TokenRequest{Scopes: []string{"read:users"}})
		if err != nil {
			t.Fatal(err)
		}
		if !claims.InlineRevocation {
			t.Fatal("a token issued with revocations on the key in force has no irv")
		}
		if _, err := e.svc.RevokeToken(e.ctx, p, tok); err != nil {
			t.Fatal(err)
		}
		if v, err := e.svc.VerifyToken(e.ctx, tok); err != nil || v.Valid || v.Reason != account.ReasonRevoked {
			t.Fatalf("VerifyToken: %+v, %v; want revoked", v, err)
		}
		if !prevRead(t, e, claims) {
			t.Error("the previous release misses a revocation made with revocations on the key in force: a rollback would lose it")
		}
	})

	t.Run("RolledBack", func(t *testing.T) {
		// In force, then out of force (the rollback's first step): a
		// token with the claim that the previous release revokes (its
		// entry and copies, nothing on the key) is revoked for this one
		// once it has read the item again.
		e := newEnv(t)
		if _, err := account.PutFormatsInForce(e.ctx, e.store, e.clock.Now(), "test"); err != nil {
			t.Fatal(err)
		}
		p, _ := e.key(t, "", "read:users")
		tok, claims, err := e.svc.IssueToken(e.ctx, p, account.TokenRequest{Scopes: []string{"read:users"}})
		if err != nil || !claims.InlineRevocation {
			t.Fatalf("IssueToken: irv %v, %v", claims.InlineRevocation, err)
		}
		if err := account.PutFormatsOutOfForce(e.ctx, e.store, "test"); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(account.FormatsRefresh + time.Second)
		if _, err := e.store.RevokeToken(e.ctx, account.WriteOptions{}, account.Revocation{TokenID: claims.ID, KeyID: claims.KeyID, RevokedAt: e.clock.Now(), ExpiresAt: claims.ExpiresAt}); err != nil {
			t.Fatal(err)
		}
		if v, err := e.svc.VerifyToken(e.ctx, tok); err != nil || v.Valid || v.Reason != account.ReasonRevoked {
			t.Fatalf("VerifyToken after the previous release revoked it: %+v, %v; want revoked", v, err)
		}
		// And forward again: a new time, so this token, issued under the
		// earlier one, is still read both ways.
		e.clock.Advance(time.Second)
		if _, err := account.PutFormatsInForce(e.ctx, e.store, e.clock.Now(), "test"); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(account.FormatsRefresh + time.Second)
		if v, err := e.svc.VerifyToken(e.ctx, tok); err != nil || v.Valid || v.Reason != account.ReasonRevoked {
			t.Fatalf("VerifyToken once the formats are in force again: %+v, %v; want revoked", v, err)
		}
	})
}

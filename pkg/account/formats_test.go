package account_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"latchkey/pkg/account"
	"latchkey/pkg/teststore"
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
		if claims.Status != nil {
			t.Fatalf("a token issued before the formats item puts status lists in force carries the claim status (%+v): the previous release would not flip its entry", claims.Status)
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
		if claims.Status == nil {
			t.Fatal("a token issued with status lists in force has no claim status")
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
		if got := listStatus(t, e, claims); got != account.StatusInvalid {
			t.Errorf("the token's status list says %d, want INVALID", got)
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
		// The previous release flipped no entry: the token's list is
		// served no more.
		if _, err := e.svc.StatusListToken(e.ctx, claims.Status.List, time.Minute); account.ErrorCode(err) != account.CodeNotFound {
			t.Fatalf("StatusListToken of a list of a period taken out of force: %v; want %s", err, account.CodeNotFound)
		}
		// And forward again: a new time, so this token, issued under the
		// earlier one, is still read both ways, and its list, which missed
		// the revocation, stays unserved.
		e.clock.Advance(time.Second)
		if _, err := account.PutFormatsInForce(e.ctx, e.store, e.clock.Now(), "test"); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(account.FormatsRefresh + time.Second)
		if v, err := e.svc.VerifyToken(e.ctx, tok); err != nil || v.Valid || v.Reason != account.ReasonRevoked {
			t.Fatalf("VerifyToken once the formats are in force again: %+v, %v; want revoked", v, err)
		}
		if _, err := e.svc.StatusListToken(e.ctx, claims.Status.List, time.Minute); account.ErrorCode(err) != account.CodeNotFound {
			t.Fatalf("StatusListToken of a list of an earlier period once in force again: %v; want %s", err, account.CodeNotFound)
		}
		_, again, err := e.svc.IssueToken(e.ctx, p, account.TokenRequest{Scopes: []string{"read:users"}})
		if err != nil || again.Status == nil || again.Status.List == claims.Status.List {
			t.Fatalf("IssueToken in the new period: status %+v, %v; want a list of its own", again.Status, err)
		}
		if got := listStatus(t, e, again); got != account.StatusValid {
			t.Errorf("a fresh token's list says %d, want VALID", got)
		}
		lists, err := e.svc.StatusLists(e.ctx)
		if err != nil || len(lists) != 1 || !strings.HasSuffix(lists[0], again.Status.List) {
			t.Errorf("StatusLists = %v, %v; want the new period's list alone", lists, err)
		}
	})

	t.Run("ByName", func(t *testing.T) {
		// The step with a list of names (a rollback's Update sends the
		// previous release's): each named one in force, keeping its time,
		// each other out of force.
		e := newEnv(t)
		first, err := account.PutFormatsInForce(e.ctx, e.store, e.clock.Now(), "test")
		if err != nil || first.InlineRevocationSince.IsZero() || !first.StatusListsSince.Equal(first.InlineRevocationSince) {
			t.Fatalf("PutFormatsInForce = %+v, %v", first, err)
		}
		e.clock.Advance(time.Minute)
		f, err := account.PutFormats(e.ctx, e.store, []string{account.FormatInlineRevocation}, e.clock.Now(), "test")
		if err != nil || !f.InlineRevocationSince.Equal(first.InlineRevocationSince) || !f.StatusListsSince.IsZero() {
			t.Fatalf("PutFormats(inline-revocation) = %+v, %v; want its time kept, status lists out of force", f, err)
		}
		if got, err := e.store.Formats(e.ctx); err != nil || !got.InlineRevocationSince.Equal(f.InlineRevocationSince) || !got.StatusListsSince.IsZero() {
			t.Fatalf("stored %+v, %v; want %+v", got, err, f)
		}
		f, err = account.PutFormats(e.ctx, e.store, account.ReleaseFormats, e.clock.Now(), "test")
		if err != nil || !f.InlineRevocationSince.Equal(first.InlineRevocationSince) || !f.StatusListsSince.Equal(e.clock.Now().UTC()) {
			t.Fatalf("PutFormats(all) = %+v, %v; want status lists from now", f, err)
		}
	})
}

// TestService_StatusListFormatsUnread: a list is served or not by the
// formats in force; while they cannot be read, it answers unavailable,
// never not found, which a resource server takes for good, and is served
// again at the next read that works.
func TestService_StatusListFormatsUnread(t *testing.T) {
	store := &formatsFailing{Store: teststore.Open(t)}
	e := newEnvOver(t, store)
	if _, err := account.PutFormatsInForce(e.ctx, e.store, e.clock.Now(), "test"); err != nil {
		t.Fatal(err)
	}
	p, _ := e.key(t, "", "read:users")
	_, claims, err := e.svc.IssueToken(e.ctx, p, account.TokenRequest{Scopes: []string{"read:users"}})
	if err != nil || claims.Status == nil {
		t.Fatalf("IssueToken: status %+v, %v", claims.Status, err)
	}
	store.fail.Store(true)
	e.clock.Advance(account.FormatsRefresh + time.Second)
	if _, err := e.svc.StatusListToken(e.ctx, claims.Status.List, time.Minute); account.ErrorCode(err) != account.CodeUnavailable {
		t.Fatalf("StatusListToken with the formats unread: %v; want %s", err, account.CodeUnavailable)
	}
	store.fail.Store(false)
	if _, err := e.svc.StatusListToken(e.ctx, claims.Status.List, time.Minute); err != nil {
		t.Fatalf("StatusListToken once the formats read again: %v", err)
	}
}

// formatsFailing is a store whose Formats fails while fail is set.
type formatsFailing struct {
	account.Store
	fail atomic.Bool
}

func (s *formatsFailing) Formats(ctx context.Context) (account.Formats, error) {
	if s.fail.Load() {
		return account.Formats{}, account.Unavailable(errors.New("throttled"))
	}
	return s.Store.Formats(ctx)
}

// listStatus returns the status of c's entry in its list, as served.
func listStatus(t *testing.T, e *env, c account.TokenClaims) int {
	t.Helper()
	if _, err := e.svc.StatusListToken(e.ctx, c.Status.List, time.Minute); err != nil {
		t.Fatalf("StatusListToken(%s): %v", c.Status.List, err)
	}
	l, err := e.store.GetStatusList(e.ctx, c.Status.List)
	if err != nil {
		t.Fatal(err)
	}
	return l.Status(c.Status.Index)
}

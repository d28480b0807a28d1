package account_test

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"latchkey/pkg/account"
)

// bootstrapKeys returns the bootstrap keys in the store.
func bootstrapKeys(t *testing.T, e *env) []account.APIKey {
	t.Helper()
	list, err := e.svc.ListAPIKeys(e.ctx, e.admin, account.PageRequest{Limit: "100"})
	if err != nil {
		t.Fatalf("ListAPIKeys: %v", err)
	}
	var out []account.APIKey
	for _, k := range list.Items {
		if k.Bootstrap {
			out = append(out, k)
		}
	}
	return out
}

func TestService_EnsureBootstrapKey(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		e := newEnv(t) // calls EnsureBootstrapKey once
		keys := bootstrapKeys(t, e)
		if len(keys) != 1 {
			t.Fatalf("got %d bootstrap keys, want 1", len(keys))
		}
		k := keys[0]
		if !slices.Equal(k.Scopes, []string{account.ScopeAll}) || k.CreatedBy != "" || !k.ExpiresAt.IsZero() {
			t.Errorf("got %+v; want grant *:*, no creator, no expiry", k)
		}
		if k.Last4 != e.secret[len(e.secret)-4:] {
			t.Errorf("Last4: got %q, want the secret's last four characters", k.Last4)
		}
		if e.admin.KeyID != k.ID {
			t.Errorf("the secret authenticates as %s, want %s", e.admin.KeyID, k.ID)
		}
	})
	t.Run("Idempotent", func(t *testing.T) {
		e := newEnv(t)
		before := bootstrapKeys(t, e)
		for range 2 {
			if err := e.svc.EnsureBootstrapKey(e.ctx, e.secret); err != nil {
				t.Fatalf("EnsureBootstrapKey again: %v", err)
			}
		}
		after := bootstrapKeys(t, e)
		if len(after) != 1 || after[0].ID != before[0].ID {
			t.Errorf("got bootstrap keys %v, want only %s", after, before[0].ID)
		}
	})
	t.Run("NewSecretRetiresOld", func(t *testing.T) {
		e := newEnv(t)
		old := e.admin.KeyID
		secret := strings.Repeat("x", account.MinBootstrapKeyLength)
		if err := e.svc.EnsureBootstrapKey(e.ctx, secret); err != nil {
			t.Fatalf("EnsureBootstrapKey with a new secret: %v", err)
		}
		_, err := e.svc.Authenticate(e.ctx, e.secret)
		wantCode(t, err, account.CodeUnauthorized)
		p := e.auth(t, secret)
		if p.KeyID == old {
			t.Errorf("the new secret authenticates as the old key %s", old)
		}
		keys := bootstrapKeys(t, e)
		if len(keys) != 1 || keys[0].ID != p.KeyID {
			t.Errorf("got bootstrap keys %v, want only %s", keys, p.KeyID)
		}
	})
	t.Run("OlderSecretNeverReplacesNewer", func(t *testing.T) {
		// During a rotation an instance may still hold the old secret: it
		// must neither bring the old key back nor retire the new one.
		e := newEnv(t) // e.secret's key was created at e.clock.Now()
		oldCreated := e.clock.Now()
		newer := account.NewAPIKeySecret()
		if err := e.svc.EnsureBootstrapKeyAt(e.ctx, newer, oldCreated.Add(time.Hour)); err != nil {
			t.Fatalf("EnsureBootstrapKeyAt with the newer secret: %v", err)
		}
		neverSeen := account.NewAPIKeySecret() // older still, and never a key
		for _, old := range []struct {
			secret  string
			created time.Time
		}{{e.secret, oldCreated}, {neverSeen, oldCreated.Add(-time.Hour)}} {
			if err := e.svc.EnsureBootstrapKeyAt(e.ctx, old.secret, old.created); err != nil {
				t.Fatalf("EnsureBootstrapKeyAt with an older secret: %v", err)
			}
			_, err := e.svc.Authenticate(e.ctx, old.secret)
			wantCode(t, err, account.CodeUnauthorized)
		}
		p := e.auth(t, newer)
		if keys := bootstrapKeys(t, e); len(keys) != 1 || keys[0].ID != p.KeyID {
			t.Errorf("got bootstrap keys %v, want only the newer %s", keys, p.KeyID)
		}
	})
	t.Run("ConcurrentRotation", func(t *testing.T) {
		// Two instances ensure two new secrets at once, in whatever order
		// the scheduler picks: only the newer secret's key remains.
		for i := range 20 {
			e := newEnv(t)
			at := e.clock.Now()
			older, newer := account.NewAPIKeySecret(), account.NewAPIKeySecret()
			var wg sync.WaitGroup
			errs := make([]error, 2)
			wg.Go(func() { errs[0] = e.svc.EnsureBootstrapKeyAt(e.ctx, older, at.Add(time.Minute)) })
			wg.Go(func() { errs[1] = e.svc.EnsureBootstrapKeyAt(e.ctx, newer, at.Add(2*time.Minute)) })
			wg.Wait()
			for _, err := range errs {
				if err != nil {
					t.Fatalf("run %d: EnsureBootstrapKeyAt: %v", i, err)
				}
			}
			p := e.auth(t, newer)
			if keys := bootstrapKeys(t, e); len(keys) != 1 || keys[0].ID != p.KeyID {
				t.Fatalf("run %d: got bootstrap keys %v, want only the newer %s", i, keys, p.KeyID)
			}
		}
	})
	t.Run("CreatedAtIsTheSecrets", func(t *testing.T) {
		e := newEnv(t)
		secret := account.NewAPIKeySecret()
		created := e.clock.Now().Add(time.Hour).Truncate(time.Millisecond)
		if err := e.svc.EnsureBootstrapKeyAt(e.ctx, secret, created); err != nil {
			t.Fatalf("EnsureBootstrapKeyAt: %v", err)
		}
		keys := bootstrapKeys(t, e)
		if len(keys) != 1 || !keys[0].CreatedAt.Equal(created) {
			t.Errorf("got bootstrap keys %v, want one created at %v", keys, created)
		}
	})
	t.Run("KeepsOtherKeys", func(t *testing.T) {
		// Rotation replaces the admin credential; what the administrator
		// created with it stays, keys below those included: a bootstrap key
		// is nobody's ancestor.
		e := newEnv(t)
		p, other := e.key(t, "", account.ScopeReadUsers, account.ScopeWriteAPIKeys)
		_, below, err := e.svc.CreateAPIKey(e.ctx, p, account.NewAPIKey{Name: "below", Scopes: []string{account.ScopeReadUsers}})
		if err != nil {
			t.Fatalf("CreateAPIKey: %v", err)
		}
		if err := e.svc.EnsureBootstrapKey(e.ctx, account.NewAPIKeySecret()); err != nil {
			t.Fatalf("EnsureBootstrapKey: %v", err)
		}
		e.auth(t, other)
		e.auth(t, below)
	})
	t.Run("ErrShortSecret", func(t *testing.T) {
		e := newEnv(t)
		err := e.svc.EnsureBootstrapKey(e.ctx, strings.Repeat("x", account.MinBootstrapKeyLength-1))
		wantCode(t, err, account.CodeInvalidRequest)
	})
	t.Run("HasBootstrapKey", func(t *testing.T) {
		e := newEnv(t)
		_, other := e.key(t, "", account.ScopeAll)
		if has, err := e.svc.HasBootstrapKey(e.ctx); err != nil || !has {
			t.Fatalf("HasBootstrapKey with a bootstrap key: got %v, %v; want true", has, err)
		}
		for _, k := range bootstrapKeys(t, e) {
			if err := e.store.DeleteAPIKey(e.ctx, k.ID, nil); err != nil {
				t.Fatal(err)
			}
		}
		// Another key with the grant *:* is not a bootstrap key.
		e.auth(t, other)
		if has, err := e.svc.HasBootstrapKey(e.ctx); err != nil || has {
			t.Fatalf("HasBootstrapKey with only an ordinary key: got %v, %v; want false", has, err)
		}
	})
}

func TestService_CreateAPIKey(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		e := newEnv(t)
		k, secret, err := e.svc.CreateAPIKey(e.ctx, e.admin, account.NewAPIKey{Name: "ci", Scopes: []string{"read:users", "read:users", "deploy:widgets"}, ExpiresIn: "30d"})
		if err != nil {
			t.Fatalf("CreateAPIKey: %v", err)
		}
		if !strings.HasPrefix(secret, account.APIKeyPrefix) || k.Last4 != secret[len(secret)-4:] {
			t.Errorf("secret %q, Last4 %q: want the lk_ prefix and its last four characters", secret, k.Last4)
		}
		if !slices.Equal(k.Scopes, []string{"read:users", "deploy:widgets"}) {
			t.Errorf("Scopes: got %q, want duplicates removed", k.Scopes)
		}
		if want := e.svc.Now().Add(30 * 24 * time.Hour); !k.ExpiresAt.Equal(want) {
			t.Errorf("ExpiresAt: got %v, want %v", k.ExpiresAt, want)
		}
		if k.CreatedBy != e.admin.KeyID {
			t.Errorf("CreatedBy: got %q, want %q", k.CreatedBy, e.admin.KeyID)
		}
		if p := e.auth(t, secret); p.KeyID != k.ID {
			t.Errorf("the secret authenticates as %s, want %s", p.KeyID, k.ID)
		}
	})
	t.Run("NeverOutlivesCreator", func(t *testing.T) {
		e := newEnv(t)
		creator, _ := e.key(t, "1h", account.ScopeWriteAPIKeys, "read:users")
		k, _, err := e.svc.CreateAPIKey(e.ctx, creator, account.NewAPIKey{Name: "child", Scopes: []string{"read:users"}})
		if err != nil {
			t.Fatalf("CreateAPIKey: %v", err)
		}
		if !k.ExpiresAt.Equal(creator.KeyExpiresAt) {
			t.Errorf("ExpiresAt: got %v, want the creator's %v", k.ExpiresAt, creator.KeyExpiresAt)
		}
	})
	t.Run("BelowItsCreator", func(t *testing.T) {
		// The admin key's keys have no ancestors; a key's keys have it and
		// its ancestors, and so do their tokens.
		e := newEnv(t)
		a, _ := e.key(t, "", account.ScopeWriteAPIKeys, "read:users")
		if len(a.KeyAncestors) != 0 || a.KeyBootstrap {
			t.Fatalf("a key of the admin key: ancestors %v, bootstrap %v; want none, false", a.KeyAncestors, a.KeyBootstrap)
		}
		kb, secret, err := e.svc.CreateAPIKey(e.ctx, a, account.NewAPIKey{Name: "b", Scopes: []string{account.ScopeWriteAPIKeys, "read:users"}})
		if err != nil {
			t.Fatalf("CreateAPIKey: %v", err)
		}
		b := e.auth(t, secret)
		kc, _, err := e.svc.CreateAPIKey(e.ctx, b, account.NewAPIKey{Name: "c", Scopes: []string{"read:users"}})
		if err != nil {
			t.Fatalf("CreateAPIKey: %v", err)
		}
		if !slices.Equal(kb.Ancestors, []string{a.KeyID}) || !slices.Equal(kc.Ancestors, []string{a.KeyID, b.KeyID}) || kc.CreatedBy != b.KeyID {
			t.Errorf("Ancestors: got %v and %v (created by %s), want [a] and [a b]", kb.Ancestors, kc.Ancestors, kc.CreatedBy)
		}
		_, c, err := e.svc.IssueToken(e.ctx, b, account.TokenRequest{Scopes: []string{"read:users"}})
		if err != nil {
			t.Fatalf("IssueToken: %v", err)
		}
		if !slices.Equal(c.KeyAncestors, []string{a.KeyID}) {
			t.Errorf("token KeyAncestors: got %v, want [a]", c.KeyAncestors)
		}
	})
	t.Run("ErrTooDeep", func(t *testing.T) {
		e := newEnv(t)
		p, _ := e.key(t, "", account.ScopeWriteAPIKeys)
		for range account.MaxKeyAncestors {
			_, secret, err := e.svc.CreateAPIKey(e.ctx, p, account.NewAPIKey{Name: "deeper", Scopes: []string{account.ScopeWriteAPIKeys}})
			if err != nil {
				t.Fatalf("CreateAPIKey %d levels down: %v", len(p.KeyAncestors)+1, err)
			}
			p = e.auth(t, secret)
		}
		_, _, err := e.svc.CreateAPIKey(e.ctx, p, account.NewAPIKey{Name: "too deep", Scopes: []string{account.ScopeWriteAPIKeys}})
		wantCode(t, err, account.CodeForbidden)
	})
	t.Run("ErrCreatorDeleted", func(t *testing.T) {
		// The caller's key is deleted between authentication and create:
		// nothing is created below it.
		e := newEnv(t)
		p, _ := e.key(t, "", account.ScopeWriteAPIKeys)
		if err := e.svc.DeleteAPIKey(e.ctx, e.admin, p.KeyID); err != nil {
			t.Fatalf("DeleteAPIKey: %v", err)
		}
		_, _, err := e.svc.CreateAPIKey(e.ctx, p, account.NewAPIKey{Name: "orphan", Scopes: []string{account.ScopeWriteAPIKeys}})
		wantCode(t, err, account.CodeUnauthorized)
	})
	t.Run("ErrInsufficientScope", func(t *testing.T) {
		// A key cannot grant what it does not hold.
		e := newEnv(t)
		p, _ := e.key(t, "", account.ScopeWriteAPIKeys, "read:*")
		_, _, err := e.svc.CreateAPIKey(e.ctx, p, account.NewAPIKey{Name: "wider", Scopes: []string{"write:users"}})
		wantCode(t, err, account.CodeInsufficientScope)
		_, _, err = e.svc.CreateAPIKey(e.ctx, p, account.NewAPIKey{Name: "wider", Scopes: []string{"*:users"}})
		wantCode(t, err, account.CodeInsufficientScope)
		if got, want := asError(t, err).Message, "the API key does not hold the requested scope *:users"; !strings.HasPrefix(got, want) {
			t.Errorf("message: got %q, want it to start %q", got, want)
		}
	})
	t.Run("ErrForbiddenForTokens", func(t *testing.T) {
		e := newEnv(t)
		tok, _, err := e.svc.IssueToken(e.ctx, e.admin, account.TokenRequest{Scopes: []string{account.ScopeAll}})
		if err != nil {
			t.Fatalf("IssueToken: %v", err)
		}
		_, _, err = e.svc.CreateAPIKey(e.ctx, e.auth(t, tok), account.NewAPIKey{Name: "k", Scopes: []string{"read:users"}})
		wantCode(t, err, account.CodeForbidden)
	})
	t.Run("ErrInvalidRequest", func(t *testing.T) {
		e := newEnv(t)
		_, _, err := e.svc.CreateAPIKey(e.ctx, e.admin, account.NewAPIKey{Name: "", Scopes: nil, ExpiresIn: "30s"})
		wantFields(t, err, "name", "scopes", "expires_in")
		_, _, err = e.svc.CreateAPIKey(e.ctx, e.admin, account.NewAPIKey{Name: "k", Scopes: []string{"read:users", "bad"}})
		wantFields(t, err, "scopes[1]")
		_, _, err = e.svc.CreateAPIKey(e.ctx, e.admin, account.NewAPIKey{Name: "k", Scopes: slices.Repeat([]string{"read:users"}, 33)})
		wantFields(t, err, "scopes")
		_, _, err = e.svc.CreateAPIKey(e.ctx, e.admin, account.NewAPIKey{Name: "k", Scopes: []string{"read:users", "read:users", "bad"}})
		wantFields(t, err, "scopes[2]")
	})
}

func TestService_DeleteAPIKey(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		e := newEnv(t)
		p, secret := e.key(t, "", "read:users")
		tok, _, err := e.svc.IssueToken(e.ctx, p, account.TokenRequest{Scopes: []string{"read:users"}})
		if err != nil {
			t.Fatalf("IssueToken: %v", err)
		}
		if err := e.svc.DeleteAPIKey(e.ctx, e.admin, p.KeyID); err != nil {
			t.Fatalf("DeleteAPIKey: %v", err)
		}
		_, err = e.svc.Authenticate(e.ctx, secret)
		wantCode(t, err, account.CodeUnauthorized)
		_, err = e.svc.Authenticate(e.ctx, tok)
		wantCode(t, err, account.CodeUnauthorized)
		v, err := e.svc.VerifyToken(e.ctx, tok)
		if err != nil || v.Valid || v.Reason != account.ReasonRevoked {
			t.Errorf("VerifyToken of a deleted key's token: got %+v, %v; want revoked", v, err)
		}
	})
	t.Run("Descendants", func(t *testing.T) {
		// The keys below a deleted key, and their tokens, go with it.
		e := newEnv(t)
		a, _ := e.key(t, "", account.ScopeWriteAPIKeys, "read:users")
		_, bSecret, err := e.svc.CreateAPIKey(e.ctx, a, account.NewAPIKey{Name: "b", Scopes: []string{account.ScopeWriteAPIKeys, "read:users"}})
		if err != nil {
			t.Fatalf("CreateAPIKey: %v", err)
		}
		b := e.auth(t, bSecret)
		_, cSecret, err := e.svc.CreateAPIKey(e.ctx, b, account.NewAPIKey{Name: "c", Scopes: []string{"read:users"}})
		if err != nil {
			t.Fatalf("CreateAPIKey: %v", err)
		}
		c := e.auth(t, cSecret)
		tok, _, err := e.svc.IssueToken(e.ctx, c, account.TokenRequest{Scopes: []string{"read:users"}})
		if err != nil {
			t.Fatalf("IssueToken: %v", err)
		}
		if err := e.svc.DeleteAPIKey(e.ctx, e.admin, a.KeyID); err != nil {
			t.Fatalf("DeleteAPIKey: %v", err)
		}
		for _, cred := range []string{bSecret, cSecret, tok} {
			_, err := e.svc.Authenticate(e.ctx, cred)
			wantCode(t, err, account.CodeUnauthorized)
		}
		if v, err := e.svc.VerifyToken(e.ctx, tok); err != nil || v.Valid || v.Reason != account.ReasonRevoked {
			t.Errorf("VerifyToken of a token two keys below the deleted one: got %+v, %v; want revoked", v, err)
		}
		for _, id := range []string{b.KeyID, c.KeyID} {
			_, err := e.svc.GetAPIKey(e.ctx, e.admin, id)
			wantCode(t, err, account.CodeNotFound)
		}
	})
	t.Run("ErrAncestor", func(t *testing.T) {
		// A key below another, even with the same grants, cannot delete the
		// keys above it: a leaked child would otherwise take down its creator
		// and every sibling with it.
		e := newEnv(t)
		a, _ := e.key(t, "", account.ScopeWriteAPIKeys, account.ScopeReadAPIKeys)
		_, bSecret, err := e.svc.CreateAPIKey(e.ctx, a, account.NewAPIKey{Name: "b", Scopes: []string{account.ScopeWriteAPIKeys, account.ScopeReadAPIKeys}})
		if err != nil {
			t.Fatalf("CreateAPIKey: %v", err)
		}
		b := e.auth(t, bSecret)
		_, cSecret, err := e.svc.CreateAPIKey(e.ctx, b, account.NewAPIKey{Name: "c", Scopes: []string{account.ScopeWriteAPIKeys, account.ScopeReadAPIKeys}})
		if err != nil {
			t.Fatalf("CreateAPIKey: %v", err)
		}
		c := e.auth(t, cSecret)
		for _, id := range []string{a.KeyID, b.KeyID} {
			wantCode(t, e.svc.DeleteAPIKey(e.ctx, c, id), account.CodeForbidden)
		}
		// Nothing was deleted; the keys above may still delete below.
		e.auth(t, bSecret)
		if err := e.svc.DeleteAPIKey(e.ctx, b, c.KeyID); err != nil {
			t.Fatalf("DeleteAPIKey of a key below the caller: %v", err)
		}
	})
	t.Run("ErrOutsideGrants", func(t *testing.T) {
		// A key deletes and reads only keys whose grants are within its own.
		e := newEnv(t)
		p, _ := e.key(t, "", account.ScopeWriteAPIKeys, account.ScopeReadAPIKeys)
		wider, _ := e.key(t, "", account.ScopeAll)
		for _, id := range []string{wider.KeyID, e.admin.KeyID} {
			err := e.svc.DeleteAPIKey(e.ctx, p, id)
			wantCode(t, err, account.CodeInsufficientScope)
			if got := asError(t, err).Scope; got != account.ScopeAll {
				t.Errorf("Scope of the error: got %q, want %q", got, account.ScopeAll)
			}
			_, err = e.svc.GetAPIKey(e.ctx, p, id)
			wantCode(t, err, account.CodeInsufficientScope)
		}
		list, err := e.svc.ListAPIKeys(e.ctx, p, account.PageRequest{Limit: "100"})
		if err != nil {
			t.Fatalf("ListAPIKeys: %v", err)
		}
		if len(list.Items) != 1 || list.Items[0].ID != p.KeyID {
			t.Errorf("ListAPIKeys: got %v, want only the caller's own key", list.Items)
		}
		e.auth(t, e.secret)
	})
	t.Run("ErrForbiddenBootstrap", func(t *testing.T) {
		e := newEnv(t)
		wantCode(t, e.svc.DeleteAPIKey(e.ctx, e.admin, e.admin.KeyID), account.CodeForbidden)
		e.auth(t, e.secret)
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		e := newEnv(t)
		wantCode(t, e.svc.DeleteAPIKey(e.ctx, e.admin, account.NewID(account.PrefixAPIKey, e.svc.Now())), account.CodeNotFound)
		wantCode(t, e.svc.DeleteAPIKey(e.ctx, e.admin, "key_bogus"), account.CodeNotFound)
	})
}

func TestService_Authenticate(t *testing.T) {
	t.Run("ErrUnauthorized", func(t *testing.T) {
		e := newEnv(t)
		for _, c := range []string{"", "lk_unknown", e.secret + "x", "eyJ.eyJ.sig", strings.ToUpper(e.secret)} {
			_, err := e.svc.Authenticate(e.ctx, c)
			if !account.IsCode(err, account.CodeUnauthorized) {
				t.Errorf("Authenticate(%q): got %v, want unauthorized", c, err)
			}
		}
	})
	t.Run("ErrExpiredKey", func(t *testing.T) {
		e := newEnv(t)
		_, secret := e.key(t, "1h", "read:users")
		e.clock.Advance(time.Hour)
		_, err := e.svc.Authenticate(e.ctx, secret)
		wantCode(t, err, account.CodeUnauthorized)
	})
}

func TestService_IssueToken(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		e := newEnv(t)
		p, _ := e.key(t, "", "read:*")
		tok, c, err := e.svc.IssueToken(e.ctx, p, account.TokenRequest{Scopes: []string{"read:users", "read:users", "read:widgets"}, ExpiresIn: "15m"})
		if err != nil {
			t.Fatalf("IssueToken: %v", err)
		}
		if !account.ValidID(account.PrefixToken, c.ID) || c.KeyID != p.KeyID || !slices.Equal(c.Scopes, []string{"read:users", "read:widgets"}) {
			t.Errorf("claims: got %+v", c)
		}
		if got := c.ExpiresAt.Sub(c.IssuedAt); got != 15*time.Minute {
			t.Errorf("lifetime: got %v, want 15m", got)
		}
		v, err := e.svc.VerifyToken(e.ctx, tok)
		if err != nil || !v.Valid || v.Claims.ID != c.ID {
			t.Errorf("VerifyToken: got %+v, %v; want valid", v, err)
		}
		tp := e.auth(t, tok)
		if err := tp.Require("read:users"); err != nil {
			t.Errorf("the token's principal: %v", err)
		}
		wantCode(t, tp.Require("read:organizations"), account.CodeInsufficientScope)
	})
	t.Run("DefaultLifetime", func(t *testing.T) {
		e := newEnv(t)
		_, c, err := e.svc.IssueToken(e.ctx, e.admin, account.TokenRequest{Scopes: []string{"read:users"}})
		if err != nil {
			t.Fatalf("IssueToken: %v", err)
		}
		if got := c.ExpiresAt.Sub(c.IssuedAt); got != account.DefaultTokenLifetime {
			t.Errorf("lifetime: got %v, want %v", got, account.DefaultTokenLifetime)
		}
	})
	t.Run("CappedAtKeyExpiry", func(t *testing.T) {
		e := newEnv(t)
		p, _ := e.key(t, "10m", "read:users")
		_, c, err := e.svc.IssueToken(e.ctx, p, account.TokenRequest{Scopes: []string{"read:users"}, ExpiresIn: "24h"})
		if err != nil {
			t.Fatalf("IssueToken: %v", err)
		}
		if want := p.KeyExpiresAt.Truncate(time.Second); !c.ExpiresAt.Equal(want) {
			t.Errorf("ExpiresAt: got %v, want the key's expiry %v", c.ExpiresAt, want)
		}
		if c.ExpiresAt.After(p.KeyExpiresAt) {
			t.Errorf("the token (%v) outlives its key (%v)", c.ExpiresAt, p.KeyExpiresAt)
		}
	})
	t.Run("ErrInsufficientScope", func(t *testing.T) {
		e := newEnv(t)
		p, _ := e.key(t, "", "read:users")
		for _, scope := range []string{"write:users", "read:*", "*:*"} {
			_, _, err := e.svc.IssueToken(e.ctx, p, account.TokenRequest{Scopes: []string{"read:users", scope}})
			if !account.IsCode(err, account.CodeInsufficientScope) {
				t.Errorf("IssueToken(%q): got %v, want insufficient_scope", scope, err)
			}
		}
	})
	t.Run("ErrInsufficientScopeSaysWhatIsMissing", func(t *testing.T) {
		// The scope is one the key lacks, not one the endpoint needs.
		e := newEnv(t)
		p, _ := e.key(t, "", "read:users")
		_, _, err := e.svc.IssueToken(e.ctx, p, account.TokenRequest{Scopes: []string{"read:users", account.ScopeDeleteUsers}})
		wantCode(t, err, account.CodeInsufficientScope)
		got := asError(t, err)
		if want := "the API key does not hold the requested scope delete:users"; !strings.HasPrefix(got.Message, want) {
			t.Errorf("message: got %q, want it to start %q", got.Message, want)
		}
		if got.Scope != account.ScopeDeleteUsers {
			t.Errorf("Scope: got %q, want %q", got.Scope, account.ScopeDeleteUsers)
		}
	})
	t.Run("ErrTooManyScopesAsSent", func(t *testing.T) {
		// The count is checked on the list as sent, before any work per
		// element: 33 copies of one scope are 33 scopes, not one.
		e := newEnv(t)
		_, _, err := e.svc.IssueToken(e.ctx, e.admin, account.TokenRequest{Scopes: slices.Repeat([]string{"read:users"}, 33)})
		wantFields(t, err, "scopes")
		// And field errors name the index as sent, not in the list without duplicates.
		_, _, err = e.svc.IssueToken(e.ctx, e.admin, account.TokenRequest{Scopes: []string{"read:users", "read:users", "bad"}})
		wantFields(t, err, "scopes[2]")
	})
	t.Run("ErrInvalidRequest", func(t *testing.T) {
		e := newEnv(t)
		tooMany := make([]string, 33)
		for i := range tooMany {
			tooMany[i] = "read:r" + itoa(int64(i))
		}
		for _, req := range []account.TokenRequest{
			{Scopes: nil},
			{Scopes: []string{}},
			{Scopes: tooMany},
			{Scopes: []string{"read users"}},
			{Scopes: []string{"read:users"}, ExpiresIn: "59s"},
			{Scopes: []string{"read:users"}, ExpiresIn: "25h"},
			{Scopes: []string{"read:users"}, ExpiresIn: "1h30m"},
		} {
			_, _, err := e.svc.IssueToken(e.ctx, e.admin, req)
			if !account.IsCode(err, account.CodeInvalidRequest) {
				t.Errorf("IssueToken(%+v): got %v, want invalid_request", req, err)
			}
		}
	})
	t.Run("ErrForbiddenForTokens", func(t *testing.T) {
		e := newEnv(t)
		tok, _, err := e.svc.IssueToken(e.ctx, e.admin, account.TokenRequest{Scopes: []string{"*:*"}})
		if err != nil {
			t.Fatalf("IssueToken: %v", err)
		}
		_, _, err = e.svc.IssueToken(e.ctx, e.auth(t, tok), account.TokenRequest{Scopes: []string{"read:users"}})
		wantCode(t, err, account.CodeForbidden)
	})
}

func TestService_RevokeToken(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		e := newEnv(t)
		p, _ := e.key(t, "", "read:users")
		tok, c, err := e.svc.IssueToken(e.ctx, p, account.TokenRequest{Scopes: []string{"read:users"}})
		if err != nil {
			t.Fatalf("IssueToken: %v", err)
		}
		r, err := e.svc.RevokeToken(e.ctx, p, tok)
		if err != nil {
			t.Fatalf("RevokeToken: %v", err)
		}
		if r.TokenID != c.ID || !r.RevokedAt.Equal(e.svc.Now()) {
			t.Errorf("got %+v; want token %s revoked now", r, c.ID)
		}
		v, err := e.svc.VerifyToken(e.ctx, tok)
		if err != nil || v.Valid || v.Reason != account.ReasonRevoked {
			t.Errorf("VerifyToken: got %+v, %v; want revoked", v, err)
		}
		_, err = e.svc.Authenticate(e.ctx, tok)
		wantCode(t, err, account.CodeUnauthorized)
	})
	t.Run("Idempotent", func(t *testing.T) {
		e := newEnv(t)
		tok, _, err := e.svc.IssueToken(e.ctx, e.admin, account.TokenRequest{Scopes: []string{"read:users"}})
		if err != nil {
			t.Fatalf("IssueToken: %v", err)
		}
		first, err := e.svc.RevokeToken(e.ctx, e.admin, tok)
		if err != nil {
			t.Fatalf("RevokeToken: %v", err)
		}
		e.clock.Advance(time.Minute)
		again, err := e.svc.RevokeToken(e.ctx, e.admin, tok)
		if err != nil || !again.RevokedAt.Equal(first.RevokedAt) {
			t.Errorf("RevokeToken again: got %+v, %v; want the first time %v", again, err, first.RevokedAt)
		}
	})
	t.Run("ExpiredToken", func(t *testing.T) {
		// Revoking an expired token is allowed: a client cleaning up should
		// not have to race the clock.
		e := newEnv(t)
		tok, _, err := e.svc.IssueToken(e.ctx, e.admin, account.TokenRequest{Scopes: []string{"read:users"}, ExpiresIn: "1m"})
		if err != nil {
			t.Fatalf("IssueToken: %v", err)
		}
		e.clock.Advance(2 * time.Minute)
		if _, err := e.svc.RevokeToken(e.ctx, e.admin, tok); err != nil {
			t.Errorf("RevokeToken of an expired token: %v", err)
		}
		v, err := e.svc.VerifyToken(e.ctx, tok)
		if err != nil || v.Reason != account.ReasonExpired {
			t.Errorf("VerifyToken: got %+v, %v; want expired", v, err)
		}
	})
	t.Run("ErrAnotherKeysToken", func(t *testing.T) {
		e := newEnv(t)
		owner, _ := e.key(t, "", "read:users")
		other, _ := e.key(t, "", "read:users")
		revoker, _ := e.key(t, "", account.ScopeRevokeTokens)
		tok, _, err := e.svc.IssueToken(e.ctx, owner, account.TokenRequest{Scopes: []string{"read:users"}})
		if err != nil {
			t.Fatalf("IssueToken: %v", err)
		}
		_, err = e.svc.RevokeToken(e.ctx, other, tok)
		wantCode(t, err, account.CodeInsufficientScope)
		if v, _ := e.svc.VerifyToken(e.ctx, tok); !v.Valid {
			t.Fatalf("the refused revocation revoked the token: %+v", v)
		}
		if _, err := e.svc.RevokeToken(e.ctx, revoker, tok); err != nil {
			t.Fatalf("RevokeToken with revoke:tokens: %v", err)
		}
		if v, _ := e.svc.VerifyToken(e.ctx, tok); v.Valid {
			t.Error("VerifyToken after revocation: got valid")
		}
	})
	t.Run("ByAccessToken", func(t *testing.T) {
		// A token may sign itself out, or revoke a sibling (a token of the
		// same key), without a scope; another key's token needs
		// revoke:tokens, as it does for a key.
		e := newEnv(t)
		owner, _ := e.key(t, "", "read:users")
		other, _ := e.key(t, "", "read:users")
		issue := func(p account.Principal) string {
			t.Helper()
			tok, _, err := e.svc.IssueToken(e.ctx, p, account.TokenRequest{Scopes: []string{"read:users"}})
			if err != nil {
				t.Fatalf("IssueToken: %v", err)
			}
			return tok
		}
		self, sibling, foreign := issue(owner), issue(owner), issue(other)
		caller, err := e.svc.Authenticate(e.ctx, self)
		if err != nil {
			t.Fatalf("Authenticate: %v", err)
		}
		_, err = e.svc.RevokeToken(e.ctx, caller, foreign)
		wantCode(t, err, account.CodeInsufficientScope)
		for _, tok := range []string{sibling, self} {
			if _, err := e.svc.RevokeToken(e.ctx, caller, tok); err != nil {
				t.Fatalf("RevokeToken by a token of the same key: %v", err)
			}
			if v, _ := e.svc.VerifyToken(e.ctx, tok); v.Valid {
				t.Error("VerifyToken after revocation: got valid")
			}
		}
		if v, _ := e.svc.VerifyToken(e.ctx, foreign); !v.Valid {
			t.Errorf("the refused revocation revoked another key's token: %+v", v)
		}
	})
	t.Run("ErrNotAToken", func(t *testing.T) {
		e := newEnv(t)
		tok, _, err := e.svc.IssueToken(e.ctx, e.admin, account.TokenRequest{Scopes: []string{"read:users"}})
		if err != nil {
			t.Fatalf("IssueToken: %v", err)
		}
		for _, s := range []string{"", "abc", e.secret, flipSignatureChar(tok), "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0."} {
			_, err := e.svc.RevokeToken(e.ctx, e.admin, s)
			if !account.IsCode(err, account.CodeInvalidRequest) {
				t.Errorf("RevokeToken(%q): got %v, want invalid_request", s, err)
			}
		}
	})
}

func TestService_VerifyToken(t *testing.T) {
	t.Run("Expired", func(t *testing.T) {
		e := newEnv(t)
		tok, _, err := e.svc.IssueToken(e.ctx, e.admin, account.TokenRequest{Scopes: []string{"read:users"}, ExpiresIn: "1m"})
		if err != nil {
			t.Fatalf("IssueToken: %v", err)
		}
		e.clock.Advance(time.Minute)
		v, err := e.svc.VerifyToken(e.ctx, tok)
		if err != nil || v.Valid || v.Reason != account.ReasonExpired {
			t.Errorf("VerifyToken: got %+v, %v; want expired", v, err)
		}
	})
	t.Run("Invalid", func(t *testing.T) {
		e := newEnv(t)
		for _, s := range []string{"", "abc", e.secret} {
			v, err := e.svc.VerifyToken(e.ctx, s)
			if err != nil || v.Valid || v.Reason != account.ReasonInvalid {
				t.Errorf("VerifyToken(%q): got %+v, %v; want invalid", s, v, err)
			}
		}
	})
}

// flipSignatureChar changes one character in the middle of a token's
// signature, so that the signature is always wrong (never a no-op).
func flipSignatureChar(tok string) string {
	i := strings.LastIndexByte(tok, '.') + 10
	c := byte('A')
	if tok[i] == 'A' {
		c = 'B'
	}
	return tok[:i] + string(c) + tok[i+1:]
}

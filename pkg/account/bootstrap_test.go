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
	list, err := e.svc.ListAPIKeys(e.ctx, e.admin, account.PageRequest{Limit: "100"}, account.APIKeyFilter{})
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
			if err := e.svc.EnsureBootstrapKey(e.ctx, e.secret, time.Time{}); err != nil {
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
		if err := e.svc.EnsureBootstrapKey(e.ctx, secret, time.Time{}); err != nil {
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
		if err := e.svc.EnsureBootstrapKey(e.ctx, newer, oldCreated.Add(time.Hour)); err != nil {
			t.Fatalf("EnsureBootstrapKey with the newer secret: %v", err)
		}
		neverSeen := account.NewAPIKeySecret() // older still, and never a key
		for _, old := range []struct {
			secret  string
			created time.Time
		}{{e.secret, oldCreated}, {neverSeen, oldCreated.Add(-time.Hour)}} {
			if err := e.svc.EnsureBootstrapKey(e.ctx, old.secret, old.created); err != nil {
				t.Fatalf("EnsureBootstrapKey with an older secret: %v", err)
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
			wg.Go(func() { errs[0] = e.svc.EnsureBootstrapKey(e.ctx, older, at.Add(time.Minute)) })
			wg.Go(func() { errs[1] = e.svc.EnsureBootstrapKey(e.ctx, newer, at.Add(2*time.Minute)) })
			wg.Wait()
			for _, err := range errs {
				if err != nil {
					t.Fatalf("run %d: EnsureBootstrapKey: %v", i, err)
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
		if err := e.svc.EnsureBootstrapKey(e.ctx, secret, created); err != nil {
			t.Fatalf("EnsureBootstrapKey: %v", err)
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
		if err := e.svc.EnsureBootstrapKey(e.ctx, account.NewAPIKeySecret(), time.Time{}); err != nil {
			t.Fatalf("EnsureBootstrapKey: %v", err)
		}
		e.auth(t, other)
		e.auth(t, below)
	})
	t.Run("ErrShortSecret", func(t *testing.T) {
		e := newEnv(t)
		err := e.svc.EnsureBootstrapKey(e.ctx, strings.Repeat("x", account.MinBootstrapKeyLength-1), time.Time{})
		wantCode(t, err, account.CodeInvalidRequest)
	})
	t.Run("HasBootstrapKey", func(t *testing.T) {
		e := newEnv(t)
		_, other := e.key(t, "", account.ScopeAll)
		if has, err := e.svc.HasBootstrapKey(e.ctx); err != nil || !has {
			t.Fatalf("HasBootstrapKey with a bootstrap key: got %v, %v; want true", has, err)
		}
		for _, k := range bootstrapKeys(t, e) {
			if err := e.store.DeleteAPIKey(e.ctx, account.WriteOptions{}, k.ID, nil); err != nil {
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

// probeKeys returns the probe keys in the store.
func probeKeys(t *testing.T, e *env) []account.APIKey {
	t.Helper()
	list, err := e.svc.ListAPIKeys(e.ctx, e.admin, account.PageRequest{Limit: "100"}, account.APIKeyFilter{})
	if err != nil {
		t.Fatalf("ListAPIKeys: %v", err)
	}
	var out []account.APIKey
	for _, k := range list.Items {
		if k.Probe {
			out = append(out, k)
		}
	}
	return out
}

// TestService_EnsureProbeKey: the probe key is made from its configured
// secret as the admin key is, with the probe's one grant and owner, and
// each kind of configured key retires only older keys of its own kind.
func TestService_EnsureProbeKey(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		e := newEnv(t)
		secret := account.NewAPIKeySecret()
		if err := e.svc.EnsureProbeKey(e.ctx, secret, time.Time{}); err != nil {
			t.Fatalf("EnsureProbeKey: %v", err)
		}
		keys := probeKeys(t, e)
		if len(keys) != 1 {
			t.Fatalf("got %d probe keys, want 1", len(keys))
		}
		k := keys[0]
		if !slices.Equal(k.Scopes, []string{account.ProbeScope}) || k.OwnerID != account.ProbeOwnerID || k.Bootstrap || k.CreatedBy != "" || len(k.Ancestors) != 0 || !k.ExpiresAt.IsZero() {
			t.Errorf("got %+v; want grant %s, owner %s, not bootstrap, no creator, no expiry", k, account.ProbeScope, account.ProbeOwnerID)
		}
		if p := e.auth(t, secret); p.KeyID != k.ID || p.KeyBootstrap {
			t.Errorf("the secret authenticates as %s (bootstrap %v), want %s", p.KeyID, p.KeyBootstrap, k.ID)
		}
		if keys := bootstrapKeys(t, e); len(keys) != 1 || keys[0].ID != e.admin.KeyID {
			t.Errorf("got bootstrap keys %v, want only the admin key %s", keys, e.admin.KeyID)
		}
	})
	t.Run("NewSecretRetiresOld", func(t *testing.T) {
		e := newEnv(t)
		old, newer := account.NewAPIKeySecret(), account.NewAPIKeySecret()
		at := e.clock.Now()
		if err := e.svc.EnsureProbeKey(e.ctx, old, at); err != nil {
			t.Fatalf("EnsureProbeKey: %v", err)
		}
		if err := e.svc.EnsureProbeKey(e.ctx, newer, at.Add(time.Minute)); err != nil {
			t.Fatalf("EnsureProbeKey with a new secret: %v", err)
		}
		_, err := e.svc.Authenticate(e.ctx, old)
		wantCode(t, err, account.CodeUnauthorized)
		p := e.auth(t, newer)
		if keys := probeKeys(t, e); len(keys) != 1 || keys[0].ID != p.KeyID {
			t.Errorf("got probe keys %v, want only %s", keys, p.KeyID)
		}
		// An instance still holding the old secret brings nothing back.
		if err := e.svc.EnsureProbeKey(e.ctx, old, at); err != nil {
			t.Fatalf("EnsureProbeKey with the older secret: %v", err)
		}
		_, err = e.svc.Authenticate(e.ctx, old)
		wantCode(t, err, account.CodeUnauthorized)
		e.auth(t, e.secret)
	})
	t.Run("KindsRetireOnlyTheirOwn", func(t *testing.T) {
		// A new admin secret keeps the probe key, and a new probe secret
		// the admin key.
		e := newEnv(t)
		probe := account.NewAPIKeySecret()
		if err := e.svc.EnsureProbeKey(e.ctx, probe, e.clock.Now()); err != nil {
			t.Fatalf("EnsureProbeKey: %v", err)
		}
		admin := account.NewAPIKeySecret()
		if err := e.svc.EnsureBootstrapKey(e.ctx, admin, e.clock.Now().Add(time.Minute)); err != nil {
			t.Fatalf("EnsureBootstrapKey: %v", err)
		}
		e.auth(t, probe)
		if err := e.svc.EnsureProbeKey(e.ctx, account.NewAPIKeySecret(), e.clock.Now().Add(2*time.Minute)); err != nil {
			t.Fatalf("EnsureProbeKey: %v", err)
		}
		if p := e.auth(t, admin); !p.KeyBootstrap {
			t.Errorf("the admin secret authenticates a key that is not the bootstrap key")
		}
	})
	t.Run("ErrAnotherKeysSecret", func(t *testing.T) {
		// The admin secret configured as the probe's would let the probe
		// act as the admin: refused, and nothing changes.
		e := newEnv(t)
		wantCode(t, e.svc.EnsureProbeKey(e.ctx, e.secret, time.Time{}), account.CodeInvalidRequest)
		if keys := probeKeys(t, e); len(keys) != 0 {
			t.Errorf("got probe keys %v, want none", keys)
		}
		if p := e.auth(t, e.secret); !p.KeyBootstrap {
			t.Errorf("the admin secret no longer authenticates the bootstrap key")
		}
	})
	t.Run("ErrShortSecret", func(t *testing.T) {
		e := newEnv(t)
		err := e.svc.EnsureProbeKey(e.ctx, strings.Repeat("x", account.MinBootstrapKeyLength-1), time.Time{})
		wantCode(t, err, account.CodeInvalidRequest)
	})
}

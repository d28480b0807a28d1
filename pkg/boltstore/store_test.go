package boltstore_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"latchkey/pkg/account"
	"latchkey/pkg/boltstore"
	"latchkey/pkg/storetest"
)

func open(tb testing.TB, path string) *boltstore.Store {
	tb.Helper()
	s, err := boltstore.Open(path)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	return s
}

// newStore opens a store in a fresh file that is closed when tb ends.
func newStore(tb testing.TB) *boltstore.Store {
	tb.Helper()
	s := open(tb, filepath.Join(tb.TempDir(), "latchkey.db"))
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Errorf("Close: %v", err)
		}
	})
	return s
}

func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) account.Store { return newStore(t) })
	storetest.RunKeyLimits(t, func(t *testing.T) account.Store { return newStore(t) })
}

// TestOpen_InUse: a file another Store holds (bbolt's lock, the same for
// another process) is ErrInUse, naming the file, not bbolt's bare
// "timeout".
func TestOpen_InUse(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "latchkey.db")
	s := open(t, path)
	defer s.Close()
	_, err := boltstore.Open(path)
	if !errors.Is(err, boltstore.ErrInUse) || !strings.Contains(err.Error(), path) || strings.HasSuffix(err.Error(), "timeout") {
		t.Fatalf("got %v, want ErrInUse naming %s", err, path)
	}
}

func TestOpen_KeepsDataAcrossReopen(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "latchkey.db")
	now := time.Now().UTC().Truncate(time.Millisecond)
	u := account.User{ID: account.NewID(account.PrefixUser, now), Email: "ada@example.com", Name: "Ada", Role: "admin", CreatedAt: now, UpdatedAt: now}
	o := account.Organization{ID: account.NewID(account.PrefixOrganization, now), Name: "Engines", Slug: "engines", Plan: "free", CreatedAt: now, UpdatedAt: now}
	m := account.Membership{OrganizationID: o.ID, UserID: u.ID, Role: "owner", CreatedAt: now, UpdatedAt: now}
	k := account.APIKey{ID: account.NewID(account.PrefixAPIKey, now), Name: "admin", Hash: account.HashAPIKey("secret"), Last4: "cret", Scopes: []string{"*:*"}, CreatedAt: now}
	r := account.Revocation{TokenID: account.NewID(account.PrefixToken, now), KeyID: k.ID, RevokedAt: now, ExpiresAt: now.Add(time.Hour)}

	s := open(t, path)
	for _, err := range []error{
		s.CreateUser(ctx, u),
		s.CreateOrganization(ctx, o),
		s.AddMember(ctx, m),
		s.CreateAPIKey(ctx, k),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.RevokeToken(ctx, r); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	s = open(t, path)
	defer s.Close()
	if got, err := s.GetUserByEmail(ctx, u.Email); err != nil || got.ID != u.ID {
		t.Errorf("GetUserByEmail after reopen: got %+v, %v; want user %s", got, err, u.ID)
	}
	if got, err := s.GetOrganization(ctx, o.ID); err != nil || got.Slug != o.Slug {
		t.Errorf("GetOrganization after reopen: got %+v, %v; want slug %s", got, err, o.Slug)
	}
	if got, err := s.GetMember(ctx, o.ID, u.ID); err != nil || got.Role != m.Role {
		t.Errorf("GetMember after reopen: got %+v, %v; want role %s", got, err, m.Role)
	}
	st, err := s.TokenStatus(ctx, r.TokenID, k.ID, nil, "")
	if err != nil || !st.RevokedAt.Equal(r.RevokedAt) || st.Key == nil || st.Key.Last4 != k.Last4 {
		t.Errorf("TokenStatus after reopen: got %+v, %v; want revoked at %v with key %s", st, err, r.RevokedAt, k.ID)
	}
	if err := s.CreateUser(ctx, u); !account.IsCode(err, account.CodeEmailTaken) {
		t.Errorf("CreateUser of the same e-mail after reopen: got %v, want email_taken", err)
	}
}

func TestOpen_PrunesExpired(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "latchkey.db")
	past := time.Now().UTC().Add(-time.Hour).Truncate(time.Millisecond)
	r := account.Revocation{TokenID: account.NewID(account.PrefixToken, past), KeyID: account.NewID(account.PrefixAPIKey, past), RevokedAt: past, ExpiresAt: past.Add(time.Minute)}
	s := open(t, path)
	if _, err := s.RevokeToken(ctx, r); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, path)
	defer s.Close()
	st, err := s.TokenStatus(ctx, r.TokenID, r.KeyID, nil, "")
	if err != nil || !st.RevokedAt.IsZero() {
		t.Errorf("TokenStatus of a token expired before Open: got %+v, %v; want the revocation pruned", st, err)
	}
	if n, err := s.Prune(time.Now()); err != nil || n != 0 {
		t.Errorf("Prune after Open: got %d, %v; want 0, nil (Open pruned already)", n, err)
	}
}

func TestOpen_ErrLockedByAnotherStore(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "latchkey.db")
	s := open(t, path)
	defer s.Close()
	if other, err := boltstore.Open(path); err == nil {
		other.Close()
		t.Fatal("second Open of a file in use: got no error")
	}
}

func TestStore_Prune(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := newStore(t)
	now := time.Now().UTC().Truncate(time.Millisecond)
	k := account.APIKey{ID: account.NewID(account.PrefixAPIKey, now), Name: "k", Hash: account.HashAPIKey("prune"), Last4: "rune", Scopes: []string{"*:*"}, CreatedAt: now}
	if err := s.CreateAPIKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	revoke := func(expires time.Time) account.Revocation {
		tr := account.TokenRecord{ID: account.NewID(account.PrefixToken, now), KeyID: k.ID, Scopes: []string{"read:users"}, IssuedAt: now, ExpiresAt: expires}
		if err := s.CreateToken(ctx, tr); err != nil {
			t.Fatal(err)
		}
		r := account.Revocation{TokenID: tr.ID, KeyID: k.ID, RevokedAt: now, ExpiresAt: expires}
		if _, err := s.RevokeToken(ctx, r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	expired := revoke(now.Add(time.Minute))
	live := revoke(now.Add(time.Hour))

	n, err := s.Prune(now.Add(2 * time.Minute))
	if err != nil {
		t.Fatalf("Prune: %v", err)
	}
	if n != 2 {
		t.Errorf("Prune: got %d entries deleted, want 2 (one token record, one revocation)", n)
	}
	if st, err := s.TokenStatus(ctx, expired.TokenID, k.ID, nil, ""); err != nil || !st.RevokedAt.IsZero() {
		t.Errorf("TokenStatus of the pruned token: got %+v, %v; want no revocation", st, err)
	}
	if st, err := s.TokenStatus(ctx, live.TokenID, k.ID, nil, ""); err != nil || !st.RevokedAt.Equal(now) {
		t.Errorf("TokenStatus of the live token: got %+v, %v; want revoked at %v", st, err, now)
	}
	if n, err := s.Prune(now.Add(2 * time.Minute)); err != nil || n != 0 {
		t.Errorf("second Prune: got %d, %v; want 0, nil", n, err)
	}
}

// TestStore_PruneExpiredAPIKeys: a key that expires is kept, expired, for
// account.ExpiredKeyRetention, then pruned with its hash entry; a key that
// never expires stays, and a key deleted before then leaves nothing behind.
func TestStore_PruneExpiredAPIKeys(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := newStore(t)
	now := time.Now().UTC().Truncate(time.Millisecond)
	key := func(name string, expires time.Time) account.APIKey {
		t.Helper()
		k := account.APIKey{ID: account.NewID(account.PrefixAPIKey, now), Name: name, Hash: account.HashAPIKey(name), Last4: "xxxx", Scopes: []string{"read:users"}, CreatedAt: now, ExpiresAt: expires}
		if err := s.CreateAPIKey(ctx, k); err != nil {
			t.Fatal(err)
		}
		return k
	}
	expiring := key("expiring", now.Add(time.Hour))
	forever := key("forever", time.Time{})
	deleted := key("deleted", now.Add(time.Hour))
	if err := s.DeleteAPIKey(ctx, deleted.ID, nil); err != nil {
		t.Fatal(err)
	}

	dropAt := expiring.ExpiresAt.Add(account.ExpiredKeyRetention)
	if _, err := s.Prune(dropAt.Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	if got, err := s.GetAPIKey(ctx, expiring.ID); err != nil || !got.Expired(dropAt) {
		t.Fatalf("expired key within the retention: got %+v, %v; want it kept", got, err)
	}
	n, err := s.Prune(dropAt.Add(time.Minute))
	if err != nil {
		t.Fatalf("Prune: %v", err)
	}
	if n != 2 {
		t.Errorf("Prune: got %d entries, want 2 (the expired key, the deleted key's leftover index entry)", n)
	}
	if _, err := s.GetAPIKey(ctx, expiring.ID); !account.IsCode(err, account.CodeNotFound) {
		t.Errorf("GetAPIKey after the retention: got %v, want not_found", err)
	}
	if _, err := s.GetAPIKeyByHash(ctx, expiring.Hash); !account.IsCode(err, account.CodeNotFound) {
		t.Errorf("GetAPIKeyByHash after the retention: got %v, want not_found", err)
	}
	if _, err := s.GetAPIKey(ctx, forever.ID); err != nil {
		t.Errorf("a key without expiry was pruned: %v", err)
	}
}

// TestStore_PrunePreviousSecrets: a rotated key's previous secret is
// dropped, from the hash index and from the key, once its grace period has
// ended; a previous secret replaced by a later rotation leaves only an
// index entry that pruning drops without touching the key.
func TestStore_PrunePreviousSecrets(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := newStore(t)
	now := time.Now().UTC().Truncate(time.Millisecond)
	k := account.APIKey{ID: account.NewID(account.PrefixAPIKey, now), Name: "rotated", Hash: account.HashAPIKey("first"), Last4: "irst", Scopes: []string{"read:users"}, CreatedAt: now}
	if err := s.CreateAPIKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	rotate := func(secret string, until time.Time) account.APIKey {
		t.Helper()
		r := &account.KeyRotation{Hash: account.HashAPIKey(secret), Last4: "xxxx", PreviousUntil: until}
		got, err := s.UpdateAPIKey(ctx, k.ID, account.APIKeyPatch{Rotate: r, At: now}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	rotate("second", now.Add(2*time.Hour)) // "first" until then, but:
	rotated := rotate("third", now.Add(time.Hour))
	if n, err := s.Prune(now.Add(time.Hour - time.Minute)); err != nil || n != 0 {
		t.Fatalf("Prune within the grace period: got %d, %v; want 0, nil", n, err)
	}
	if _, err := s.GetAPIKeyByHash(ctx, account.HashAPIKey("second")); err != nil {
		t.Fatalf("the previous secret within its grace period: %v", err)
	}
	n, err := s.Prune(now.Add(3 * time.Hour))
	if err != nil {
		t.Fatalf("Prune: %v", err)
	}
	if n != 2 {
		t.Errorf("Prune: got %d entries, want 2 (the previous secret, the leftover of the one replaced before)", n)
	}
	for _, secret := range []string{"first", "second"} {
		if _, err := s.GetAPIKeyByHash(ctx, account.HashAPIKey(secret)); !account.IsCode(err, account.CodeNotFound) {
			t.Errorf("GetAPIKeyByHash of the stopped secret %q: got %v, want not_found", secret, err)
		}
	}
	got, err := s.GetAPIKeyByHash(ctx, rotated.Hash)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.PreviousHash) != 0 || !got.PreviousExpiresAt.IsZero() {
		t.Errorf("the key after pruning: previous %x until %v, want none", got.PreviousHash, got.PreviousExpiresAt)
	}
}

// BenchmarkCreateUser measures a lone writer, who pays the batch delay and
// an fsync per write, and 32 concurrent writers, who share them.
func BenchmarkCreateUser(b *testing.B) {
	create := func(b *testing.B, s *boltstore.Store) {
		now := time.Now().UTC().Truncate(time.Millisecond)
		id := account.NewID(account.PrefixUser, now)
		u := account.User{ID: id, Email: strings.ToLower(id) + "@example.com", Name: "Bench", Role: "member", CreatedAt: now, UpdatedAt: now}
		if err := s.CreateUser(context.Background(), u); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("Writers1", func(b *testing.B) {
		s := newStore(b)
		b.ReportAllocs()
		for b.Loop() {
			create(b, s)
		}
	})
	b.Run("Writers32", func(b *testing.B) {
		s := newStore(b)
		b.ReportAllocs()
		// RunParallel starts parallelism × GOMAXPROCS goroutines.
		b.SetParallelism(max(1, 32/runtime.GOMAXPROCS(0)))
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				create(b, s)
			}
		})
	})
}

func BenchmarkTokenStatus(b *testing.B) {
	s := newStore(b)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	k := account.APIKey{ID: account.NewID(account.PrefixAPIKey, now), Name: "bench", Hash: account.HashAPIKey("bench"), Last4: "ench", Scopes: []string{"*:*"}, CreatedAt: now}
	tr := account.TokenRecord{ID: account.NewID(account.PrefixToken, now), KeyID: k.ID, Scopes: []string{"read:users"}, IssuedAt: now, ExpiresAt: now.Add(time.Hour)}
	if err := s.CreateAPIKey(ctx, k); err != nil {
		b.Fatal(err)
	}
	if err := s.CreateToken(ctx, tr); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			st, err := s.TokenStatus(ctx, tr.ID, k.ID, nil, "")
			if err != nil || st.Key == nil {
				b.Fatalf("TokenStatus: %+v, %v", st, err)
			}
		}
	})
}

// TestStore_PruneEvents: events older than account.EventRetention are
// deleted by pruning, oldest first, and the rest stay; so are their
// entries in their organization's index.
func TestStore_PruneEvents(t *testing.T) {
	s := newStore(t)
	const org = "org_01KF0EBF000000000000000005"
	ctx := account.WithEventSource(t.Context(), &account.EventSource{
		Actor: account.Actor{KeyID: "key_1"}, RequestID: "req",
		Encode: func(e account.Event) ([]byte, error) { return []byte(`{"id":"` + e.ID + `"}`), nil },
		// A key bound to org: its users' events belong to org.
		OrganizationID: org,
	})
	entries := func() int {
		n, err := s.OrgEventEntries(org)
		if err != nil {
			t.Fatalf("OrgEventEntries: %v", err)
		}
		return n
	}
	for i := range 3 {
		at := time.Now().UTC().Truncate(time.Millisecond).Add(time.Duration(i) * time.Millisecond)
		u := account.User{ID: account.NewID(account.PrefixUser, at), Email: fmt.Sprintf("u%d@example.com", i), Name: "U", Role: "member", CreatedAt: at, UpdatedAt: at}
		if err := s.CreateUser(ctx, u); err != nil {
			t.Fatalf("CreateUser: %v", err)
		}
	}
	count := func(since time.Time) int {
		page, err := s.ListEvents(t.Context(), account.EventQuery{After: account.EventIDAt(time.UnixMilli(0)), Since: since})
		if err != nil {
			t.Fatalf("ListEvents: %v", err)
		}
		return len(page.Items)
	}
	if n := count(time.UnixMilli(0)); n != 3 {
		t.Fatalf("events before pruning: %d, want 3", n)
	}
	if _, err := s.Prune(time.Now().Add(account.EventRetention - time.Minute)); err != nil {
		t.Fatalf("Prune: %v", err)
	}
	if n := count(time.UnixMilli(0)); n != 3 {
		t.Fatalf("events after pruning within the retention: %d, want 3", n)
	}
	if n := entries(); n != 3 {
		t.Fatalf("the organization's index after pruning within the retention: %d entries, want 3", n)
	}
	if _, err := s.Prune(time.Now().Add(account.EventRetention + time.Minute)); err != nil {
		t.Fatalf("Prune: %v", err)
	}
	if n := count(time.UnixMilli(0)); n != 0 {
		t.Errorf("events after pruning past the retention: %d, want 0", n)
	}
	if n := entries(); n != 0 {
		t.Errorf("the organization's index after pruning past the retention: %d entries, want 0", n)
	}
}

package boltstore_test

import (
	"context"
	"errors"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"latchkey/pkg/account"
	"latchkey/pkg/boltstore"
	"latchkey/pkg/storetest"
	"latchkey/pkg/tablestore"
)

func open(tb testing.TB, path string) *tablestore.Store {
	tb.Helper()
	s, err := boltstore.Open(path)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	return s
}

// newStore opens a store in a fresh file that is closed when tb ends.
func newStore(tb testing.TB) *tablestore.Store {
	tb.Helper()
	s := open(tb, filepath.Join(tb.TempDir(), "latchkey.db"))
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Errorf("Close: %v", err)
		}
	})
	return s
}

// TestStore runs the whole store contract, key limits included, on the
// store Open returns: tablestore with serial writes over the bbolt Table.
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
		s.CreateUser(ctx, account.WriteOptions{}, u),
		s.CreateOrganization(ctx, account.WriteOptions{}, o),
		s.AddMember(ctx, account.WriteOptions{}, m),
		s.CreateAPIKey(ctx, account.WriteOptions{}, k),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.RevokeToken(ctx, account.WriteOptions{}, r); err != nil {
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
	st, err := s.TokenStatus(ctx, r.TokenID, k.ID, nil, "", false)
	if err != nil || !st.RevokedAt.Equal(r.RevokedAt) || st.Key == nil || st.Key.Last4 != k.Last4 {
		t.Errorf("TokenStatus after reopen: got %+v, %v; want revoked at %v with key %s", st, err, r.RevokedAt, k.ID)
	}
	if err := s.CreateUser(ctx, account.WriteOptions{}, u); !account.IsCode(err, account.CodeEmailTaken) {
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
	if _, err := s.RevokeToken(ctx, account.WriteOptions{}, r); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, path)
	defer s.Close()
	st, err := s.TokenStatus(ctx, r.TokenID, r.KeyID, nil, "", false)
	if err != nil || !st.RevokedAt.IsZero() {
		t.Errorf("TokenStatus of a token expired before Open: got %+v, %v; want the revocation pruned", st, err)
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

// BenchmarkCreateUser measures a lone writer, who pays the batch delay and
// an fsync per write, and 32 concurrent writers, who share them.
func BenchmarkCreateUser(b *testing.B) {
	create := func(b *testing.B, s *tablestore.Store) {
		now := time.Now().UTC().Truncate(time.Millisecond)
		id := account.NewID(account.PrefixUser, now)
		u := account.User{ID: id, Email: strings.ToLower(id) + "@example.com", Name: "Bench", Role: "member", CreatedAt: now, UpdatedAt: now}
		if err := s.CreateUser(context.Background(), account.WriteOptions{}, u); err != nil {
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
	if err := s.CreateAPIKey(ctx, account.WriteOptions{}, k); err != nil {
		b.Fatal(err)
	}
	if err := s.CreateToken(ctx, account.WriteOptions{}, tr); err != nil {
		b.Fatal(err)
	}
	// inline: a token with the claim (one item read); revocations: its key
	// holds that many (of other tokens).
	for _, c := range []struct {
		name        string
		inline      bool
		revocations int
	}{{"without the claim", false, 0}, {"with the claim", true, 0}, {"with the claim, 16 revoked", true, 16}} {
		// Before b.Run, which may call its function more than once.
		for i := range c.revocations {
			at := now.Add(time.Duration(i+1) * time.Millisecond)
			r := account.Revocation{TokenID: account.NewID(account.PrefixToken, at), KeyID: k.ID, RevokedAt: at, ExpiresAt: at.Add(time.Hour), Inline: true}
			if _, err := s.RevokeToken(ctx, account.WriteOptions{}, r); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					st, err := s.TokenStatus(ctx, tr.ID, k.ID, nil, "", c.inline)
					if err != nil || st.Key == nil || !st.RevokedAt.IsZero() {
						b.Fatalf("TokenStatus: %+v, %v", st, err)
					}
				}
			})
		})
	}
}

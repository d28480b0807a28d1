package boltstore_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"latchkey/pkg/account"
	"latchkey/pkg/boltstore"
	"latchkey/pkg/tablestore"
)

// What Prune did for the store before it was tablestore over a Table is
// the Table's TTL sweep now: the layout puts tablestore.TTLAttribute on
// token records, revocations, API keys that expire (both copies), a
// previous secret's copy, idempotency records and events. These tests
// sweep by hand at chosen times; the store Open returns sweeps on open and
// every minute.

// newSwept returns the store Open would, over a Table it returns too,
// whose sweeper runs only when the test calls Sweep.
func newSwept(tb testing.TB) (*tablestore.Store, func(at time.Time)) {
	tb.Helper()
	t, err := boltstore.OpenTable(filepath.Join(tb.TempDir(), "latchkey.db"),
		boltstore.WithTTL(tablestore.TTLAttribute), boltstore.WithSweepInterval(0))
	if err != nil {
		tb.Fatalf("OpenTable: %v", err)
	}
	s := tablestore.New(t.Port(), tablestore.WithSerialWrites())
	tb.Cleanup(func() { s.Close() })
	return s, func(at time.Time) {
		tb.Helper()
		if _, err := t.Sweep(at); err != nil {
			tb.Fatalf("Sweep: %v", err)
		}
	}
}

// TestSweep_Tokens: a token's record and revocation go once it has
// expired; a live token's stay.
func TestSweep_Tokens(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, sweep := newSwept(t)
	now := time.Now().UTC().Truncate(time.Millisecond)
	k := account.APIKey{ID: account.NewID(account.PrefixAPIKey, now), Name: "k", Hash: account.HashAPIKey("prune"), Last4: "rune", Scopes: []string{"*:*"}, CreatedAt: now}
	if err := s.CreateAPIKey(ctx, account.WriteOptions{}, k); err != nil {
		t.Fatal(err)
	}
	revoke := func(expires time.Time) account.Revocation {
		tr := account.TokenRecord{ID: account.NewID(account.PrefixToken, now), KeyID: k.ID, Scopes: []string{"read:users"}, IssuedAt: now, ExpiresAt: expires}
		if err := s.CreateToken(ctx, account.WriteOptions{}, tr); err != nil {
			t.Fatal(err)
		}
		r := account.Revocation{TokenID: tr.ID, KeyID: k.ID, RevokedAt: now, ExpiresAt: expires}
		if _, err := s.RevokeToken(ctx, account.WriteOptions{}, r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	expired := revoke(now.Add(time.Minute))
	live := revoke(now.Add(time.Hour))

	sweep(now.Add(2 * time.Minute))
	if st, err := s.TokenStatus(ctx, expired.TokenID, k.ID, nil, "", false); err != nil || !st.RevokedAt.IsZero() {
		t.Errorf("TokenStatus of the swept token: got %+v, %v; want no revocation", st, err)
	}
	if st, err := s.TokenStatus(ctx, live.TokenID, k.ID, nil, "", false); err != nil || !st.RevokedAt.Equal(now) {
		t.Errorf("TokenStatus of the live token: got %+v, %v; want revoked at %v", st, err, now)
	}
	page, err := s.ListTokens(ctx, k.ID, now.Add(-time.Hour), account.ListParams{})
	if err != nil || len(page.Items) != 1 || page.Items[0].ID != live.TokenID {
		t.Errorf("ListTokens after the sweep: got %+v, %v; want the live token alone", page.Items, err)
	}
}

// TestSweep_ExpiredAPIKeys: a key that expires is kept, expired, for
// account.ExpiredKeyRetention, then swept with its copy under its hash; a
// key that never expires stays.
func TestSweep_ExpiredAPIKeys(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, sweep := newSwept(t)
	now := time.Now().UTC().Truncate(time.Millisecond)
	key := func(name string, expires time.Time) account.APIKey {
		t.Helper()
		k := account.APIKey{ID: account.NewID(account.PrefixAPIKey, now), Name: name, Hash: account.HashAPIKey(name), Last4: "xxxx", Scopes: []string{"read:users"}, CreatedAt: now, ExpiresAt: expires}
		if err := s.CreateAPIKey(ctx, account.WriteOptions{}, k); err != nil {
			t.Fatal(err)
		}
		return k
	}
	expiring := key("expiring", now.Add(time.Hour))
	forever := key("forever", time.Time{})

	dropAt := expiring.ExpiresAt.Add(account.ExpiredKeyRetention)
	sweep(dropAt.Add(-time.Minute))
	if got, err := s.GetAPIKey(ctx, expiring.ID); err != nil || !got.Expired(dropAt) {
		t.Fatalf("expired key within the retention: got %+v, %v; want it kept", got, err)
	}
	sweep(dropAt.Add(time.Minute))
	if _, err := s.GetAPIKey(ctx, expiring.ID); !account.IsCode(err, account.CodeNotFound) {
		t.Errorf("GetAPIKey after the retention: got %v, want not_found", err)
	}
	if _, err := s.GetAPIKeyByHash(ctx, expiring.Hash); !account.IsCode(err, account.CodeNotFound) {
		t.Errorf("GetAPIKeyByHash after the retention: got %v, want not_found", err)
	}
	if _, err := s.GetAPIKey(ctx, forever.ID); err != nil {
		t.Errorf("a key without expiry was swept: %v", err)
	}
}

// TestSweep_PreviousSecrets: a rotated key's previous secret stops
// finding the key once its grace period has ended, and so does one
// replaced by a later rotation; the key's current secret stays.
func TestSweep_PreviousSecrets(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, sweep := newSwept(t)
	now := time.Now().UTC().Truncate(time.Millisecond)
	k := account.APIKey{ID: account.NewID(account.PrefixAPIKey, now), Name: "rotated", Hash: account.HashAPIKey("first"), Last4: "irst", Scopes: []string{"read:users"}, CreatedAt: now}
	if err := s.CreateAPIKey(ctx, account.WriteOptions{}, k); err != nil {
		t.Fatal(err)
	}
	rotate := func(secret string, until time.Time) account.APIKey {
		t.Helper()
		r := &account.KeyRotation{Hash: account.HashAPIKey(secret), Last4: "xxxx", PreviousUntil: until}
		got, err := s.UpdateAPIKey(ctx, account.WriteOptions{}, k.ID, account.APIKeyPatch{Rotate: r, At: now}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	rotate("second", now.Add(2*time.Hour)) // "first" until then, but:
	rotated := rotate("third", now.Add(time.Hour))
	sweep(now.Add(time.Hour - time.Minute))
	if _, err := s.GetAPIKeyByHash(ctx, account.HashAPIKey("second")); err != nil {
		t.Fatalf("the previous secret within its grace period: %v", err)
	}
	sweep(now.Add(3 * time.Hour))
	for _, secret := range []string{"first", "second"} {
		if _, err := s.GetAPIKeyByHash(ctx, account.HashAPIKey(secret)); !account.IsCode(err, account.CodeNotFound) {
			t.Errorf("GetAPIKeyByHash of the stopped secret %q: got %v, want not_found", secret, err)
		}
	}
	if got, err := s.GetAPIKeyByHash(ctx, rotated.Hash); err != nil || got.ID != k.ID {
		t.Errorf("GetAPIKeyByHash of the current secret: got %+v, %v; want the key", got, err)
	}
}

// TestSweep_Events: events older than account.EventRetention are swept,
// the rest stay; so are their copies in their organization's feed.
func TestSweep_Events(t *testing.T) {
	t.Parallel()
	s, sweep := newSwept(t)
	const org = "org_01KF0EBF000000000000000005"
	ctx, opts := t.Context(), account.WriteOptions{Events: &account.EventSource{
		Actor: account.Actor{KeyID: "key_1"}, RequestID: "req",
		Encode: func(e account.Event) ([]byte, error) { return []byte(`{"id":"` + e.ID + `"}`), nil },
		// A key bound to org: its users' events belong to org.
		OrganizationID: org,
	}}
	for i := range 3 {
		at := time.Now().UTC().Truncate(time.Millisecond).Add(time.Duration(i) * time.Millisecond)
		u := account.User{ID: account.NewID(account.PrefixUser, at), Email: fmt.Sprintf("u%d@example.com", i), Name: "U", Role: "member", CreatedAt: at, UpdatedAt: at}
		if err := s.CreateUser(ctx, opts, u); err != nil {
			t.Fatalf("CreateUser: %v", err)
		}
	}
	count := func(orgID string) int {
		t.Helper()
		page, err := s.ListEvents(t.Context(), account.EventQuery{After: account.EventIDAt(time.UnixMilli(0)), Since: time.UnixMilli(0), OrganizationID: orgID})
		if err != nil {
			t.Fatalf("ListEvents: %v", err)
		}
		return len(page.Items)
	}
	if n, m := count(""), count(org); n != 3 || m != 3 {
		t.Fatalf("events before the sweep: %d, the organization's %d; want 3, 3", n, m)
	}
	sweep(time.Now().Add(account.EventRetention - time.Minute))
	if n, m := count(""), count(org); n != 3 || m != 3 {
		t.Fatalf("events after a sweep within the retention: %d, the organization's %d; want 3, 3", n, m)
	}
	sweep(time.Now().Add(account.EventRetention + time.Minute))
	if n, m := count(""), count(org); n != 0 || m != 0 {
		t.Errorf("events after a sweep past the retention: %d, the organization's %d; want 0, 0", n, m)
	}
}

package boltstore_test

import (
	"bytes"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"latchkey/pkg/account"
	"latchkey/pkg/boltstore"
	"latchkey/pkg/tablestore"
)

func idemRecord(key string, at time.Time) account.IdempotencyRecord {
	return account.IdempotencyRecord{
		KeyID: "key_a", Key: key, Fingerprint: bytes.Repeat([]byte{1}, 32), Owner: "owner-" + key,
		State: account.IdempotencyStarted, LeaseUntil: at.Add(account.IdempotencyLease),
		CreatedAt: at, ExpiresAt: at.Add(account.IdempotencyRetention),
	}
}

// TestIdempotency_FaultBeforeCommit fails the transaction of a change
// after the change and the record's move to applied are written, before
// the commit: neither may be left, and the same request then succeeds.
func TestIdempotency_FaultBeforeCommit(t *testing.T) {
	t.Parallel()
	tb, err := boltstore.OpenTable(filepath.Join(t.TempDir(), "latchkey.db"),
		boltstore.WithTTL(tablestore.TTLAttribute), boltstore.WithSweepInterval(0))
	if err != nil {
		t.Fatal(err)
	}
	s := tablestore.New(tb.Port(), tablestore.WithSerialWrites())
	t.Cleanup(func() { s.Close() })
	ctx := t.Context()
	now := time.Now().UTC().Truncate(time.Millisecond)
	r := idemRecord("fault", now)
	if _, claimed, err := s.ClaimIdempotency(ctx, r, now); err != nil || !claimed {
		t.Fatalf("ClaimIdempotency: claimed %v, %v", claimed, err)
	}
	c := &account.IdempotencyCommit{KeyID: r.KeyID, Key: r.Key, Owner: r.Owner}
	opts := account.WriteOptions{Commit: c}
	u := account.User{ID: account.NewID(account.PrefixUser, now), Email: "fault@example.com", Name: "Ada", Role: "member", CreatedAt: now, UpdatedAt: now}
	injected := errors.New("injected: the disk fails before the commit")
	faults := 0
	boltstore.SetBeforeCommit(tb, func() error { faults++; return injected })
	err = s.CreateUser(ctx, opts, u)
	boltstore.SetBeforeCommit(tb, nil)
	if !errors.Is(err, injected) {
		t.Fatalf("CreateUser with a fault before commit: got %v, want the fault", err)
	}
	if faults == 0 {
		t.Fatal("the fault hook never ran")
	}
	if c.Applied() {
		t.Error("the commit is marked applied")
	}
	if _, err := s.GetUser(ctx, u.ID); !account.IsCode(err, account.CodeNotFound) {
		t.Errorf("GetUser after the fault: got %v, want not_found", err)
	}
	if _, err := s.GetUserByEmail(ctx, u.Email); !account.IsCode(err, account.CodeNotFound) {
		t.Errorf("GetUserByEmail after the fault: got %v, want not_found (the e-mail guard is left)", err)
	}
	probe := r
	probe.Owner = "probe"
	got, claimed, err := s.ClaimIdempotency(ctx, probe, now)
	if err != nil || claimed || got.State != account.IdempotencyStarted || got.Owner != r.Owner {
		t.Fatalf("record after the fault: %s by %s (claimed %v, %v), want started by %s", got.State, got.Owner, claimed, err, r.Owner)
	}

	if err := s.CreateUser(ctx, opts, u); err != nil {
		t.Fatalf("CreateUser without the fault: %v", err)
	}
	if !c.Applied() {
		t.Error("the commit is not marked applied")
	}
	if got, _, _ := s.ClaimIdempotency(ctx, probe, now); got.State != account.IdempotencyApplied {
		t.Errorf("record after the change: state %s, want applied", got.State)
	}
}

// TestSweep_Idempotency: records go once they expire, and only then: a
// key claimed again after its record expired keeps its new record through
// a sweep.
func TestSweep_Idempotency(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, sweep := newSwept(t)
	t0 := time.Now().UTC().Truncate(time.Second)
	old, kept := idemRecord("old", t0), idemRecord("kept", t0)
	for _, r := range []account.IdempotencyRecord{old, kept} {
		if _, _, err := s.ClaimIdempotency(ctx, r, t0); err != nil {
			t.Fatal(err)
		}
	}
	// "kept" is claimed again once expired: a new record, due a day later.
	t1 := t0.Add(account.IdempotencyRetention)
	again := idemRecord("kept", t1)
	again.Owner = "again"
	if _, claimed, err := s.ClaimIdempotency(ctx, again, t1); err != nil || !claimed {
		t.Fatalf("claim after expiry: claimed %v, %v", claimed, err)
	}
	sweep(t1.Add(time.Second))
	// The old record is gone: a claim of another request with its key wins.
	other := idemRecord("old", t1)
	other.Fingerprint = []byte("another request")
	if _, claimed, err := s.ClaimIdempotency(ctx, other, t1); err != nil || !claimed {
		t.Errorf("claim of a swept key: claimed %v, %v; want claimed", claimed, err)
	}
	probe := again
	probe.Owner, probe.Fingerprint = "probe", []byte("another request")
	if got, claimed, err := s.ClaimIdempotency(ctx, probe, t1); err != nil || claimed || got.Owner != "again" {
		t.Errorf("the record claimed again: held by %q (claimed %v, %v), want again", got.Owner, claimed, err)
	}
}

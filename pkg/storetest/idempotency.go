package storetest

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"latchkey/pkg/account"
)

// idemRecord returns a started record of keyID's key for the request whose
// fingerprint is 32 bytes of fp, claimed at at.
func idemRecord(keyID, key string, fp byte, at time.Time) account.IdempotencyRecord {
	owner := make([]byte, 16)
	rand.Read(owner)
	return account.IdempotencyRecord{
		KeyID: keyID, Key: key, Fingerprint: bytes.Repeat([]byte{fp}, 32), Owner: hex.EncodeToString(owner),
		State: account.IdempotencyStarted, LeaseUntil: at.Add(account.IdempotencyLease),
		CreatedAt: at, ExpiresAt: at.Add(account.IdempotencyRetention),
	}
}

// claim claims r at now and fails the test unless the store's answer is
// claimed as want.
func (f *fixture) claim(r account.IdempotencyRecord, now time.Time, want bool) account.IdempotencyRecord {
	f.t.Helper()
	got, claimed, err := f.s.ClaimIdempotency(f.ctx, r, now)
	f.ok(err, "ClaimIdempotency")
	if claimed != want {
		f.t.Fatalf("ClaimIdempotency at %v: claimed %v, want %v (record held: owner %s, state %s)", now, claimed, want, got.Owner, got.State)
	}
	return got
}

// held returns the record in force for r's key and fingerprint at now, read
// with a claim that cannot succeed: the store has no other read of it.
func (f *fixture) held(r account.IdempotencyRecord, now time.Time) account.IdempotencyRecord {
	f.t.Helper()
	probe := r
	probe.Owner = "probe"
	return f.claim(probe, now, false)
}

func assertRecord(tb testing.TB, what string, got, want account.IdempotencyRecord) {
	tb.Helper()
	if d := diff(got, want); d != "" {
		tb.Errorf("%s differs:%s", what, d)
	}
}

func (s suite) idempotency(t *testing.T) {
	t.Run("Claim", s.claimIdempotency)
	t.Run("Finish", s.finishIdempotency)
	t.Run("Release", s.releaseIdempotency)
	t.Run("Commit", s.commitIdempotency)
}

func (s suite) claimIdempotency(t *testing.T) {
	t.Run("New", func(t *testing.T) {
		f := s.fix(t)
		at := f.now()
		r := idemRecord("key_a", "order-1", 1, at)
		assertRecord(t, "the claimed record", f.claim(r, at, true), r)
		assertRecord(t, "the record held", f.held(r, at), r)
	})
	t.Run("HeldWhileLeased", func(t *testing.T) {
		f := s.fix(t)
		at := f.now()
		first := idemRecord("key_a", "order-1", 1, at)
		f.claim(first, at, true)
		again := idemRecord("key_a", "order-1", 1, at.Add(time.Second))
		assertRecord(t, "the record held", f.claim(again, at.Add(time.Second), false), first)
	})
	t.Run("TakenOverAfterLease", func(t *testing.T) {
		// The first request's process died before changing anything.
		f := s.fix(t)
		at := f.now()
		f.claim(idemRecord("key_a", "order-1", 1, at), at, true)
		later := at.Add(account.IdempotencyLease)
		retry := idemRecord("key_a", "order-1", 1, later)
		f.claim(retry, later, true)
		assertRecord(t, "the record held", f.held(retry, later), retry)
	})
	t.Run("OtherRequestAfterLease", func(t *testing.T) {
		// The key stays bound to its first request.
		f := s.fix(t)
		at := f.now()
		first := idemRecord("key_a", "order-1", 1, at)
		f.claim(first, at, true)
		later := at.Add(account.IdempotencyLease + time.Second)
		assertRecord(t, "the record held", f.claim(idemRecord("key_a", "order-1", 2, later), later, false), first)
	})
	t.Run("AppliedAfterLease", func(t *testing.T) {
		// A change was committed: no retry may make it again.
		f := s.fix(t)
		at := f.now()
		r := idemRecord("key_a", "order-1", 1, at)
		f.claim(r, at, true)
		u := f.newUser()
		f.ok(f.s.CreateUser(f.ctx, f.committing(&account.IdempotencyCommit{KeyID: r.KeyID, Key: r.Key, Owner: r.Owner}), u), "CreateUser")
		later := at.Add(2 * account.IdempotencyLease)
		got := f.claim(idemRecord("key_a", "order-1", 1, later), later, false)
		if got.State != account.IdempotencyApplied || got.Owner != r.Owner {
			t.Errorf("record held: state %s, owner %s; want applied, %s", got.State, got.Owner, r.Owner)
		}
	})
	t.Run("Done", func(t *testing.T) {
		f := s.fix(t)
		at := f.now()
		r := idemRecord("key_a", "order-1", 1, at)
		f.claim(r, at, true)
		r.State, r.Response = account.IdempotencyDone, []byte("\x01\x00answer\xff")
		f.ok(f.s.FinishIdempotency(f.ctx, r), "FinishIdempotency")
		later := at.Add(account.IdempotencyRetention - time.Millisecond)
		assertRecord(t, "the record held", f.claim(idemRecord("key_a", "order-1", 1, later), later, false), r)
	})
	t.Run("Expired", func(t *testing.T) {
		// Until DynamoDB's TTL or bbolt's pruning removes it, an expired
		// record is as good as absent.
		f := s.fix(t)
		at := f.now()
		r := idemRecord("key_a", "order-1", 1, at)
		f.claim(r, at, true)
		r.State, r.Response = account.IdempotencyDone, []byte("answer")
		f.ok(f.s.FinishIdempotency(f.ctx, r), "FinishIdempotency")
		later := at.Add(account.IdempotencyRetention)
		f.claim(idemRecord("key_a", "order-1", 2, later), later, true)
	})
	t.Run("PerCallingKey", func(t *testing.T) {
		f := s.fix(t)
		at := f.now()
		f.claim(idemRecord("key_a", "order-1", 1, at), at, true)
		f.claim(idemRecord("key_b", "order-1", 2, at), at, true)
		f.claim(idemRecord("key_a", "order-2", 3, at), at, true)
	})
	t.Run("Concurrent", func(t *testing.T) {
		f := s.fix(t)
		at := f.now()
		rs := make([]account.IdempotencyRecord, concurrency)
		for i := range rs {
			rs[i] = idemRecord("key_a", "race", 1, at)
		}
		claimed := make([]bool, concurrency)
		held := make([]account.IdempotencyRecord, concurrency)
		errs := race(concurrency, func(i int) error {
			var err error
			held[i], claimed[i], err = f.s.ClaimIdempotency(f.ctx, rs[i], at)
			return err
		})
		winner := -1
		for i, err := range errs {
			f.ok(err, "ClaimIdempotency")
			if claimed[i] {
				if winner >= 0 {
					t.Fatalf("claims %d and %d both succeeded", winner, i)
				}
				winner = i
			}
		}
		if winner < 0 {
			t.Fatal("no claim succeeded")
		}
		for i := range held {
			if held[i].Owner != rs[winner].Owner {
				t.Errorf("claim %d: holder %s, want the winner %s", i, held[i].Owner, rs[winner].Owner)
			}
		}
	})
}

func (s suite) finishIdempotency(t *testing.T) {
	t.Run("NotOwner", func(t *testing.T) {
		f := s.fix(t)
		at := f.now()
		first := idemRecord("key_a", "order-1", 1, at)
		f.claim(first, at, true)
		later := at.Add(account.IdempotencyLease)
		retry := idemRecord("key_a", "order-1", 1, later)
		f.claim(retry, later, true)
		first.State, first.Response = account.IdempotencyDone, []byte("late answer")
		wantErr(t, "FinishIdempotency by the request taken over", f.s.FinishIdempotency(f.ctx, first), account.ErrIdempotencyLost())
		assertRecord(t, "the record held", f.held(retry, later), retry)
	})
	t.Run("Absent", func(t *testing.T) {
		f := s.fix(t)
		r := idemRecord("key_a", "order-1", 1, f.now())
		r.State = account.IdempotencyDone
		wantErr(t, "FinishIdempotency of no record", f.s.FinishIdempotency(f.ctx, r), account.ErrIdempotencyLost())
	})
}

func (s suite) releaseIdempotency(t *testing.T) {
	t.Run("Started", func(t *testing.T) {
		f := s.fix(t)
		at := f.now()
		r := idemRecord("key_a", "order-1", 1, at)
		f.claim(r, at, true)
		f.ok(f.s.ReleaseIdempotency(f.ctx, r.KeyID, r.Key, r.Owner), "ReleaseIdempotency")
		// Gone: even another request with the key is carried out.
		f.claim(idemRecord("key_a", "order-1", 2, at), at, true)
	})
	t.Run("NotOwner", func(t *testing.T) {
		f := s.fix(t)
		at := f.now()
		r := idemRecord("key_a", "order-1", 1, at)
		f.claim(r, at, true)
		f.ok(f.s.ReleaseIdempotency(f.ctx, r.KeyID, r.Key, "someone else"), "ReleaseIdempotency")
		assertRecord(t, "the record held", f.held(r, at), r)
	})
	t.Run("Applied", func(t *testing.T) {
		f := s.fix(t)
		at := f.now()
		r := idemRecord("key_a", "order-1", 1, at)
		f.claim(r, at, true)
		f.ok(f.s.CreateUser(f.ctx, f.committing(&account.IdempotencyCommit{KeyID: r.KeyID, Key: r.Key, Owner: r.Owner}), f.newUser()), "CreateUser")
		f.ok(f.s.ReleaseIdempotency(f.ctx, r.KeyID, r.Key, r.Owner), "ReleaseIdempotency")
		if got := f.held(r, at); got.State != account.IdempotencyApplied {
			t.Errorf("record after releasing an applied one: state %s, want applied", got.State)
		}
	})
	t.Run("Absent", func(t *testing.T) {
		f := s.fix(t)
		f.ok(f.s.ReleaseIdempotency(f.ctx, "key_a", "never-claimed", "someone"), "ReleaseIdempotency")
	})
}

// commitCase is one method that changes data: setup prepares what it
// needs and returns the change and a probe that reports whether the change
// is in the store.
type commitCase struct {
	name  string
	setup func(f *fixture) (change func(opts account.WriteOptions) error, made func() bool)
}

// exists reports whether err says found (nil) rather than not found.
func exists(f *fixture, op string, err error) bool {
	f.t.Helper()
	if account.IsCode(err, account.CodeNotFound) {
		return false
	}
	f.ok(err, op)
	return true
}

var commitCases = []commitCase{
	{"CreateUser", func(f *fixture) (func(account.WriteOptions) error, func() bool) {
		u := f.newUser()
		return func(opts account.WriteOptions) error { return f.s.CreateUser(f.ctx, opts, u) },
			func() bool { _, err := f.s.GetUser(f.ctx, u.ID); return exists(f, "GetUser", err) }
	}},
	{"UpdateUser", func(f *fixture) (func(account.WriteOptions) error, func() bool) {
		u := f.user()
		name := "Renamed"
		return func(opts account.WriteOptions) error {
				_, err := f.s.UpdateUser(f.ctx, opts, u.ID, account.UserPatch{Name: &name, UpdatedAt: f.now()})
				return err
			}, func() bool {
				got, err := f.s.GetUser(f.ctx, u.ID)
				f.ok(err, "GetUser")
				return got.Name == name
			}
	}},
	// A delete that cascades may take several writes (see the stores); the
	// record goes with the last, which removes the memberships of a small
	// cascade, so that is what shows whether it was made. The earlier
	// writes (DynamoDB flags the user or organization deleting first) are
	// the state a delete cut off halfway leaves, which the request that
	// took the record over finishes.
	{"DeleteUser", func(f *fixture) (func(account.WriteOptions) error, func() bool) {
		u, o := f.user(), f.org()
		f.member(o.ID, u.ID)
		return func(opts account.WriteOptions) error { return f.s.DeleteUser(f.ctx, opts, u.ID) },
			func() bool { _, err := f.s.GetMember(f.ctx, o.ID, u.ID); return !exists(f, "GetMember", err) }
	}},
	{"CreateOrganization", func(f *fixture) (func(account.WriteOptions) error, func() bool) {
		o := f.newOrg()
		return func(opts account.WriteOptions) error { return f.s.CreateOrganization(f.ctx, opts, o) },
			func() bool { _, err := f.s.GetOrganization(f.ctx, o.ID); return exists(f, "GetOrganization", err) }
	}},
	{"UpdateOrganization", func(f *fixture) (func(account.WriteOptions) error, func() bool) {
		o := f.org()
		plan := "enterprise"
		return func(opts account.WriteOptions) error {
				_, err := f.s.UpdateOrganization(f.ctx, opts, o.ID, account.OrganizationPatch{Plan: &plan, UpdatedAt: f.now()})
				return err
			}, func() bool {
				got, err := f.s.GetOrganization(f.ctx, o.ID)
				f.ok(err, "GetOrganization")
				return got.Plan == plan
			}
	}},
	{"DeleteOrganization", func(f *fixture) (func(account.WriteOptions) error, func() bool) {
		u, o := f.user(), f.org()
		f.member(o.ID, u.ID)
		return func(opts account.WriteOptions) error { return f.s.DeleteOrganization(f.ctx, opts, o.ID) },
			func() bool { _, err := f.s.GetMember(f.ctx, o.ID, u.ID); return !exists(f, "GetMember", err) }
	}},
	{"AddMember", func(f *fixture) (func(account.WriteOptions) error, func() bool) {
		u, o := f.user(), f.org()
		at := f.now()
		m := account.Membership{OrganizationID: o.ID, UserID: u.ID, Role: "admin", CreatedAt: at, UpdatedAt: at}
		return func(opts account.WriteOptions) error { return f.s.AddMember(f.ctx, opts, m) },
			func() bool { _, err := f.s.GetMember(f.ctx, o.ID, u.ID); return exists(f, "GetMember", err) }
	}},
	{"UpdateMember", func(f *fixture) (func(account.WriteOptions) error, func() bool) {
		u, o := f.user(), f.org()
		f.member(o.ID, u.ID)
		return func(opts account.WriteOptions) error {
				_, err := f.s.UpdateMember(f.ctx, opts, o.ID, u.ID, account.MemberPatch{Role: "owner", UpdatedAt: f.now()})
				return err
			}, func() bool {
				got, err := f.s.GetMember(f.ctx, o.ID, u.ID)
				f.ok(err, "GetMember")
				return got.Role == "owner"
			}
	}},
	{"RemoveMember", func(f *fixture) (func(account.WriteOptions) error, func() bool) {
		u, o := f.user(), f.org()
		f.member(o.ID, u.ID)
		return func(opts account.WriteOptions) error { return f.s.RemoveMember(f.ctx, opts, o.ID, u.ID) },
			func() bool { _, err := f.s.GetMember(f.ctx, o.ID, u.ID); return !exists(f, "GetMember", err) }
	}},
	{"CreateAPIKey", func(f *fixture) (func(account.WriteOptions) error, func() bool) {
		parent := f.key()
		k := f.newChildKey(parent)
		return func(opts account.WriteOptions) error { return f.s.CreateAPIKey(f.ctx, opts, k) },
			func() bool { _, err := f.s.GetAPIKey(f.ctx, k.ID); return exists(f, "GetAPIKey", err) }
	}},
	{"DeleteAPIKey", func(f *fixture) (func(account.WriteOptions) error, func() bool) {
		k := f.key()
		f.childKey(k)
		return func(opts account.WriteOptions) error { return f.s.DeleteAPIKey(f.ctx, opts, k.ID, nil) },
			func() bool { _, err := f.s.GetAPIKey(f.ctx, k.ID); return !exists(f, "GetAPIKey", err) }
	}},
	{"UpdateAPIKey", func(f *fixture) (func(account.WriteOptions) error, func() bool) {
		k := f.key()
		name := "renamed"
		return func(opts account.WriteOptions) error {
				_, err := f.s.UpdateAPIKey(f.ctx, opts, k.ID, account.APIKeyPatch{Name: &name, At: f.now()}, nil)
				return err
			}, func() bool {
				got, err := f.s.GetAPIKey(f.ctx, k.ID)
				f.ok(err, "GetAPIKey")
				return got.Name == name
			}
	}},
	{"RotateAPIKey", func(f *fixture) (func(account.WriteOptions) error, func() bool) {
		// UpdateAPIKey with a new secret (POST /v1/api-keys/{id}/rotate).
		k := f.key()
		secret := account.NewAPIKeySecret()
		r := &account.KeyRotation{Hash: account.HashAPIKey(secret), Last4: secret[len(secret)-4:], PreviousUntil: f.now().Add(time.Hour)}
		return func(opts account.WriteOptions) error {
				_, err := f.s.UpdateAPIKey(f.ctx, opts, k.ID, account.APIKeyPatch{Rotate: r, At: f.now()}, nil)
				return err
			}, func() bool {
				_, err := f.s.GetAPIKeyByHash(f.ctx, r.Hash)
				return exists(f, "GetAPIKeyByHash", err)
			}
	}},
	// The keys bound to an organization go before its memberships and
	// itself (DynamoDB: in transactions of their own); the record goes
	// with the last, as for DeleteOrganization.
	{"DeleteOrganizationWithKeys", func(f *fixture) (func(account.WriteOptions) error, func() bool) {
		u, o := f.user(), f.org()
		f.member(o.ID, u.ID)
		k := f.newKey()
		k.OrganizationID = o.ID
		f.ok(f.s.CreateAPIKey(f.ctx, f.opts, k), "CreateAPIKey")
		return func(opts account.WriteOptions) error { return f.s.DeleteOrganization(f.ctx, opts, o.ID) },
			func() bool { _, err := f.s.GetMember(f.ctx, o.ID, u.ID); return !exists(f, "GetMember", err) }
	}},
	// A key tree whose delete, on DynamoDB, would fill a transaction of
	// 100 items without the record: below the root 9 keys of 7 items (a
	// previous secret, an organization and an owner) and 6 of 5 (an
	// organization), 93 items, and the root of 7 (below another key). The
	// record still goes with the root, in the last transaction; the earlier
	// ones flag the root, which hides it from every read: the record and
	// the error are what shows.
	{"DeleteAPIKeyFull", func(f *fixture) (func(account.WriteOptions) error, func() bool) {
		o := f.org()
		rotate := func(k account.APIKey) {
			secret := account.NewAPIKeySecret()
			r := &account.KeyRotation{Hash: account.HashAPIKey(secret), Last4: secret[len(secret)-4:], PreviousUntil: f.now().Add(time.Hour)}
			_, err := f.s.UpdateAPIKey(f.ctx, f.opts, k.ID, account.APIKeyPatch{Rotate: r, At: f.now()}, nil)
			f.ok(err, "UpdateAPIKey rotating")
		}
		root := f.newChildKey(f.key())
		root.OrganizationID, root.OwnerID = o.ID, "ops"
		f.ok(f.s.CreateAPIKey(f.ctx, f.opts, root), "CreateAPIKey")
		rotate(root)
		for i := range 15 {
			k := f.newChildKey(root)
			k.OrganizationID = o.ID
			if i < 9 {
				k.OwnerID = "ops"
			}
			f.ok(f.s.CreateAPIKey(f.ctx, f.opts, k), "CreateAPIKey below the root")
			if i < 9 {
				rotate(k)
			}
		}
		return func(opts account.WriteOptions) error { return f.s.DeleteAPIKey(f.ctx, opts, root.ID, nil) }, nil
	}},
	{"CreateToken", func(f *fixture) (func(account.WriteOptions) error, func() bool) {
		// No Store method reads a token record back: the commit's flag and
		// the record are what shows.
		k := f.key()
		at := f.now()
		tr := account.TokenRecord{ID: account.NewID(account.PrefixToken, at), KeyID: k.ID, Scopes: []string{"read:users"}, IssuedAt: at, ExpiresAt: at.Add(time.Hour)}
		return func(opts account.WriteOptions) error { return f.s.CreateToken(f.ctx, opts, tr) }, nil
	}},
	{"RevokeToken", func(f *fixture) (func(account.WriteOptions) error, func() bool) {
		k := f.key()
		tr := f.token(k.ID)
		return func(opts account.WriteOptions) error {
				_, err := f.s.RevokeToken(f.ctx, opts, account.Revocation{TokenID: tr.ID, KeyID: k.ID, RevokedAt: f.now(), ExpiresAt: tr.ExpiresAt})
				return err
			}, func() bool {
				st, err := f.s.TokenStatus(f.ctx, tr.ID, k.ID, nil, "", false)
				f.ok(err, "TokenStatus")
				return !st.RevokedAt.IsZero()
			}
	}},
}

// commitIdempotency proves that each method that changes data commits the
// idempotency record of its WriteOptions with the change, and that a
// record taken over by another request (the fault between claiming a key
// and committing the change: the first request stalled past its lease)
// stops the change: neither it nor the record's move is left.
func (s suite) commitIdempotency(t *testing.T) {
	for _, tc := range commitCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Run("WithTheChange", func(t *testing.T) {
				f := s.fix(t)
				change, made := tc.setup(f)
				at := f.now()
				r := idemRecord("key_a", "k-"+tc.name, 1, at)
				f.claim(r, at, true)
				c := &account.IdempotencyCommit{KeyID: r.KeyID, Key: r.Key, Owner: r.Owner}
				f.ok(change(f.committing(c)), tc.name)
				if !c.Applied() {
					t.Error("the commit is not marked applied")
				}
				if made != nil && !made() {
					t.Error("the change is not in the store")
				}
				want := r
				want.State = account.IdempotencyApplied
				assertRecord(t, "the record", f.held(r, at), want)
			})
			t.Run("TakenOver", func(t *testing.T) {
				f := s.fix(t)
				change, made := tc.setup(f)
				at := f.now()
				r := idemRecord("key_a", "k-"+tc.name, 1, at)
				f.claim(r, at, true)
				later := at.Add(account.IdempotencyLease)
				retry := idemRecord("key_a", "k-"+tc.name, 1, later)
				f.claim(retry, later, true)
				c := &account.IdempotencyCommit{KeyID: r.KeyID, Key: r.Key, Owner: r.Owner}
				wantErr(t, tc.name+" by the request taken over", change(f.committing(c)), account.ErrIdempotencyLost())
				if c.Applied() {
					t.Error("the commit is marked applied")
				}
				if made != nil && made() {
					t.Error("the change was made")
				}
				assertRecord(t, "the record", f.held(retry, later), retry)
			})
		})
	}
	t.Run("RevokeTokenAgain", func(t *testing.T) {
		// Nothing changes: the record stays started, for Finish.
		f := s.fix(t)
		k := f.key()
		tr := f.token(k.ID)
		first := account.Revocation{TokenID: tr.ID, KeyID: k.ID, RevokedAt: f.now(), ExpiresAt: tr.ExpiresAt}
		_, err := f.s.RevokeToken(f.ctx, f.opts, first)
		f.ok(err, "RevokeToken")
		at := f.now()
		r := idemRecord("key_a", "revoke-again", 1, at)
		f.claim(r, at, true)
		c := &account.IdempotencyCommit{KeyID: r.KeyID, Key: r.Key, Owner: r.Owner}
		got, err := f.s.RevokeToken(f.ctx, f.committing(c), account.Revocation{TokenID: tr.ID, KeyID: k.ID, RevokedAt: f.now(), ExpiresAt: tr.ExpiresAt})
		f.ok(err, "RevokeToken again")
		if !got.Equal(first.RevokedAt) {
			t.Errorf("RevokeToken again: got %v, want the first time %v", got, first.RevokedAt)
		}
		if c.Applied() {
			t.Error("the commit is marked applied, and nothing changed")
		}
		assertRecord(t, "the record", f.held(r, at), r)
	})
	t.Run("RecordAPIKeyUse", func(t *testing.T) {
		// Recording that a key was used is never part of a request's
		// change: the record stays started, and the store takes no
		// WriteOptions for it.
		f := s.fix(t)
		k := f.key()
		at := f.now()
		r := idemRecord("key_a", "record-use", 1, at)
		f.claim(r, at, true)
		c := &account.IdempotencyCommit{KeyID: r.KeyID, Key: r.Key, Owner: r.Owner}
		_, err := f.s.RecordAPIKeyUse(f.ctx, k, at)
		f.ok(err, "RecordAPIKeyUse")
		if c.Applied() {
			t.Error("the commit is marked applied by a last use")
		}
		assertRecord(t, "the record", f.held(r, at), r)
	})
	t.Run("FailedChange", func(t *testing.T) {
		// A change refused (email_taken) leaves the record started.
		f := s.fix(t)
		u := f.user()
		at := f.now()
		r := idemRecord("key_a", "dup", 1, at)
		f.claim(r, at, true)
		c := &account.IdempotencyCommit{KeyID: r.KeyID, Key: r.Key, Owner: r.Owner}
		dup := f.newUser()
		dup.Email = u.Email
		wantErr(t, "CreateUser of a taken e-mail", f.s.CreateUser(f.ctx, f.committing(c), dup), account.ErrEmailTaken())
		if c.Applied() {
			t.Error("the commit is marked applied")
		}
		assertRecord(t, "the record", f.held(r, at), r)
	})
}

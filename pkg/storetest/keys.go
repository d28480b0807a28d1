package storetest

import (
	"testing"
	"time"

	"latchkey/pkg/account"
)

func (s suite) createAPIKey(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		f := s.fix(t)
		want := f.key()
		got, err := f.s.GetAPIKey(f.ctx, want.ID)
		f.ok(err, "GetAPIKey")
		assertSame(t, "GetAPIKey", got, want)
		got, err = f.s.GetAPIKeyByHash(f.ctx, want.Hash)
		f.ok(err, "GetAPIKeyByHash")
		assertSame(t, "GetAPIKeyByHash", got, want)
	})
	t.Run("BootstrapWithoutExpiry", func(t *testing.T) {
		// The zero ExpiresAt (never expires) and the empty CreatedBy must
		// come back as zero and empty, not as the Unix epoch or "null".
		f := s.fix(t)
		want := f.newKey()
		want.Bootstrap, want.CreatedBy, want.ExpiresAt = true, "", time.Time{}
		want.Scopes = []string{account.ScopeAll}
		f.ok(f.s.CreateAPIKey(f.ctx, want), "CreateAPIKey")
		got, err := f.s.GetAPIKeyByHash(f.ctx, want.Hash)
		f.ok(err, "GetAPIKeyByHash")
		assertSame(t, "GetAPIKeyByHash", got, want)
		if !got.ExpiresAt.IsZero() {
			t.Errorf("ExpiresAt: got %v, want the zero time", got.ExpiresAt)
		}
	})
	t.Run("ErrHashExists", func(t *testing.T) {
		// Two keys with one hash would make a secret ambiguous; the second
		// create fails (with any error) and leaves the first in place.
		f := s.fix(t)
		first := f.key()
		second := f.newKey()
		second.Hash = first.Hash
		if err := f.s.CreateAPIKey(f.ctx, second); err == nil {
			t.Fatal("CreateAPIKey with an existing hash: got no error")
		}
		got, err := f.s.GetAPIKeyByHash(f.ctx, first.Hash)
		f.ok(err, "GetAPIKeyByHash")
		assertSame(t, "the first key", got, first)
		_, err = f.s.GetAPIKey(f.ctx, second.ID)
		wantCode(t, "GetAPIKey of the refused key", err, account.CodeNotFound)
	})
}

func (s suite) getAPIKey(t *testing.T) {
	t.Run("ErrNotFound", func(t *testing.T) {
		f := s.fix(t)
		f.key()
		_, err := f.s.GetAPIKey(f.ctx, account.NewID(account.PrefixAPIKey, f.now()))
		wantCode(t, "GetAPIKey", err, account.CodeNotFound)
	})
}

func (s suite) getAPIKeyByHash(t *testing.T) {
	t.Run("ErrNotFound", func(t *testing.T) {
		f := s.fix(t)
		f.key()
		_, err := f.s.GetAPIKeyByHash(f.ctx, account.HashAPIKey(account.NewAPIKeySecret()))
		wantCode(t, "GetAPIKeyByHash", err, account.CodeNotFound)
	})
}

func (s suite) deleteAPIKey(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		f := s.fix(t)
		k, other := f.key(), f.key()
		f.ok(f.s.DeleteAPIKey(f.ctx, k), "DeleteAPIKey")
		_, err := f.s.GetAPIKey(f.ctx, k.ID)
		wantCode(t, "GetAPIKey", err, account.CodeNotFound)
		_, err = f.s.GetAPIKeyByHash(f.ctx, k.Hash)
		wantCode(t, "GetAPIKeyByHash", err, account.CodeNotFound)
		got, err := f.s.GetAPIKeyByHash(f.ctx, other.Hash)
		f.ok(err, "GetAPIKeyByHash of another key")
		assertSame(t, "another key", got, other)
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		f := s.fix(t)
		k := f.key()
		wantCode(t, "DeleteAPIKey of a key never stored", f.s.DeleteAPIKey(f.ctx, f.newKey()), account.CodeNotFound)
		f.ok(f.s.DeleteAPIKey(f.ctx, k), "DeleteAPIKey")
		wantCode(t, "DeleteAPIKey of a deleted key", f.s.DeleteAPIKey(f.ctx, k), account.CodeNotFound)
	})
	t.Run("ErrWrongHash", func(t *testing.T) {
		// The hash names the record that authenticates a secret; a hash
		// that is not the key's must delete nothing, least of all another
		// key's record, rather than leave the key's secret working.
		f := s.fix(t)
		k, other := f.key(), f.key()
		wrong := k
		wrong.Hash = other.Hash
		wantCode(t, "DeleteAPIKey with another key's hash", f.s.DeleteAPIKey(f.ctx, wrong), account.CodeInternal)
		wrong.Hash = account.HashAPIKey(account.NewAPIKeySecret())
		wantCode(t, "DeleteAPIKey with an unknown hash", f.s.DeleteAPIKey(f.ctx, wrong), account.CodeInternal)
		for _, want := range []account.APIKey{k, other} {
			got, err := f.s.GetAPIKeyByHash(f.ctx, want.Hash)
			f.ok(err, "GetAPIKeyByHash after a refused DeleteAPIKey")
			assertSame(t, "the key by hash", got, want)
			got, err = f.s.GetAPIKey(f.ctx, want.ID)
			f.ok(err, "GetAPIKey after a refused DeleteAPIKey")
			assertSame(t, "the key by ID", got, want)
		}
	})
}

func (s suite) createToken(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		// The store has no read of a token record of its own; what a record
		// must not do is make its token look revoked or lose its key.
		f := s.fix(t)
		k := f.key()
		tr := f.token(k.ID)
		st, err := f.s.TokenStatus(f.ctx, tr.ID, k.ID)
		f.ok(err, "TokenStatus")
		if !st.RevokedAt.IsZero() {
			t.Errorf("RevokedAt of a fresh token: got %v, want zero", st.RevokedAt)
		}
		if st.Key == nil {
			t.Fatal("Key: got nil, want the issuing key")
		}
		assertSame(t, "TokenStatus.Key", *st.Key, k)
	})
}

func (s suite) revokeToken(t *testing.T) {
	revocation := func(f *fixture, tr account.TokenRecord) account.Revocation {
		return account.Revocation{TokenID: tr.ID, KeyID: tr.KeyID, RevokedAt: f.now(), ExpiresAt: tr.ExpiresAt}
	}
	t.Run("OK", func(t *testing.T) {
		f := s.fix(t)
		k := f.key()
		tr := f.token(k.ID)
		r := revocation(f, tr)
		at, err := f.s.RevokeToken(f.ctx, r)
		f.ok(err, "RevokeToken")
		if !at.Equal(r.RevokedAt) {
			t.Errorf("RevokeToken: got %v, want %v", at, r.RevokedAt)
		}
		st, err := f.s.TokenStatus(f.ctx, tr.ID, k.ID)
		f.ok(err, "TokenStatus")
		if !st.RevokedAt.Equal(r.RevokedAt) {
			t.Errorf("TokenStatus.RevokedAt: got %v, want %v", st.RevokedAt, r.RevokedAt)
		}
	})
	t.Run("Idempotent", func(t *testing.T) {
		f := s.fix(t)
		k := f.key()
		tr := f.token(k.ID)
		first := revocation(f, tr)
		_, err := f.s.RevokeToken(f.ctx, first)
		f.ok(err, "RevokeToken")
		at, err := f.s.RevokeToken(f.ctx, revocation(f, tr))
		f.ok(err, "RevokeToken again")
		if !at.Equal(first.RevokedAt) {
			t.Errorf("RevokeToken again: got %v, want the first time %v", at, first.RevokedAt)
		}
		st, err := f.s.TokenStatus(f.ctx, tr.ID, k.ID)
		f.ok(err, "TokenStatus")
		if !st.RevokedAt.Equal(first.RevokedAt) {
			t.Errorf("TokenStatus.RevokedAt: got %v, want the first time %v", st.RevokedAt, first.RevokedAt)
		}
	})
	t.Run("Concurrent", func(t *testing.T) {
		// Racing revocations agree on one time: the one that was written.
		f := s.fix(t)
		k := f.key()
		tr := f.token(k.ID)
		rs := make([]account.Revocation, concurrency)
		for i := range rs {
			rs[i] = revocation(f, tr)
		}
		ats := make([]time.Time, concurrency)
		errs := race(concurrency, func(i int) error {
			var err error
			ats[i], err = f.s.RevokeToken(f.ctx, rs[i])
			return err
		})
		st, err := f.s.TokenStatus(f.ctx, tr.ID, k.ID)
		f.ok(err, "TokenStatus")
		for i, err := range errs {
			if err != nil {
				t.Fatalf("RevokeToken %d: %v", i, err)
			}
			if !ats[i].Equal(st.RevokedAt) {
				t.Errorf("RevokeToken %d: got %v, want the time in force %v", i, ats[i], st.RevokedAt)
			}
		}
		if !isOneOf(st.RevokedAt, rs) {
			t.Errorf("TokenStatus.RevokedAt %v is none of the times written", st.RevokedAt)
		}
	})
	t.Run("OnlyThatToken", func(t *testing.T) {
		f := s.fix(t)
		k := f.key()
		tr, other := f.token(k.ID), f.token(k.ID)
		_, err := f.s.RevokeToken(f.ctx, revocation(f, tr))
		f.ok(err, "RevokeToken")
		st, err := f.s.TokenStatus(f.ctx, other.ID, k.ID)
		f.ok(err, "TokenStatus of another token")
		if !st.RevokedAt.IsZero() {
			t.Errorf("RevokedAt of another token: got %v, want zero", st.RevokedAt)
		}
	})
}

func isOneOf(at time.Time, rs []account.Revocation) bool {
	for _, r := range rs {
		if r.RevokedAt.Equal(at) {
			return true
		}
	}
	return false
}

func (s suite) tokenStatus(t *testing.T) {
	t.Run("KeyAsStored", func(t *testing.T) {
		f := s.fix(t)
		k := f.key()
		f.key()
		tr := f.token(k.ID)
		st, err := f.s.TokenStatus(f.ctx, tr.ID, k.ID)
		f.ok(err, "TokenStatus")
		if st.Key == nil {
			t.Fatal("Key: got nil, want the issuing key")
		}
		assertSame(t, "TokenStatus.Key", *st.Key, k)
		if !st.RevokedAt.IsZero() {
			t.Errorf("RevokedAt: got %v, want zero", st.RevokedAt)
		}
	})
	t.Run("KeyDeleted", func(t *testing.T) {
		f := s.fix(t)
		k := f.key()
		tr := f.token(k.ID)
		f.ok(f.s.DeleteAPIKey(f.ctx, k), "DeleteAPIKey")
		st, err := f.s.TokenStatus(f.ctx, tr.ID, k.ID)
		f.ok(err, "TokenStatus")
		if st.Key != nil {
			t.Errorf("Key of a deleted key: got %+v, want nil", *st.Key)
		}
	})
	t.Run("Revoked", func(t *testing.T) {
		f := s.fix(t)
		k := f.key()
		tr := f.token(k.ID)
		r := account.Revocation{TokenID: tr.ID, KeyID: k.ID, RevokedAt: f.now(), ExpiresAt: tr.ExpiresAt}
		_, err := f.s.RevokeToken(f.ctx, r)
		f.ok(err, "RevokeToken")
		st, err := f.s.TokenStatus(f.ctx, tr.ID, k.ID)
		f.ok(err, "TokenStatus")
		if !st.RevokedAt.Equal(r.RevokedAt) {
			t.Errorf("RevokedAt: got %v, want %v", st.RevokedAt, r.RevokedAt)
		}
		if st.Key == nil {
			t.Fatal("Key: got nil, want the issuing key")
		}
		assertSame(t, "TokenStatus.Key", *st.Key, k)
	})
	t.Run("UnknownTokenAndKey", func(t *testing.T) {
		// Unknown IDs are not an error: the answer is "not revoked, no key".
		f := s.fix(t)
		f.token(f.key().ID)
		at := f.now()
		st, err := f.s.TokenStatus(f.ctx, account.NewID(account.PrefixToken, at), account.NewID(account.PrefixAPIKey, at))
		f.ok(err, "TokenStatus")
		if !st.RevokedAt.IsZero() || st.Key != nil {
			t.Errorf("TokenStatus: got %+v, want the zero status", st)
		}
	})
}

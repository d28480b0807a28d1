package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
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
		f.ok(f.s.CreateAPIKey(f.ctx, f.opts, want), "CreateAPIKey")
		got, err := f.s.GetAPIKeyByHash(f.ctx, want.Hash)
		f.ok(err, "GetAPIKeyByHash")
		assertSame(t, "GetAPIKeyByHash", got, want)
		if !got.ExpiresAt.IsZero() {
			t.Errorf("ExpiresAt: got %v, want the zero time", got.ExpiresAt)
		}
	})
	t.Run("BelowParent", func(t *testing.T) {
		f := s.fix(t)
		parent := f.key()
		child := f.childKey(parent)
		grandchild := f.childKey(child)
		if len(grandchild.Ancestors) != 2 {
			t.Fatalf("fixture: grandchild's Ancestors %v", grandchild.Ancestors)
		}
		for _, want := range []account.APIKey{child, grandchild} {
			got, err := f.s.GetAPIKey(f.ctx, want.ID)
			f.ok(err, "GetAPIKey")
			assertSame(t, "GetAPIKey", got, want)
			got, err = f.s.GetAPIKeyByHash(f.ctx, want.Hash)
			f.ok(err, "GetAPIKeyByHash")
			assertSame(t, "GetAPIKeyByHash", got, want)
		}
	})
	t.Run("ErrParentNotFound", func(t *testing.T) {
		// A key is never created below a key that is not there: not one
		// never stored, not one deleted. Nothing of it is stored, so its
		// hash is still free.
		f := s.fix(t)
		deleted := f.key()
		f.ok(f.s.DeleteAPIKey(f.ctx, f.opts, deleted.ID, nil), "DeleteAPIKey")
		for _, parent := range []account.APIKey{f.newKey(), deleted} {
			k := f.newChildKey(parent)
			wantErr(t, "CreateAPIKey below a missing key", f.s.CreateAPIKey(f.ctx, f.opts, k), account.ErrAPIKeyNotFound())
			_, err := f.s.GetAPIKey(f.ctx, k.ID)
			wantErr(t, "GetAPIKey of the refused key", err, account.ErrAPIKeyNotFound())
			_, err = f.s.GetAPIKeyByHash(f.ctx, k.Hash)
			wantErr(t, "GetAPIKeyByHash of the refused key", err, account.ErrAPIKeyNotFound())
			again := f.newKey()
			again.Hash = k.Hash
			f.ok(f.s.CreateAPIKey(f.ctx, f.opts, again), "CreateAPIKey with the refused key's hash")
		}
	})
	t.Run("ErrHashExists", func(t *testing.T) {
		// Two keys with one hash would make a secret ambiguous; the second
		// create fails (with any error) and leaves the first in place.
		f := s.fix(t)
		first := f.key()
		second := f.newKey()
		second.Hash = first.Hash
		if err := f.s.CreateAPIKey(f.ctx, f.opts, second); err == nil {
			t.Fatal("CreateAPIKey with an existing hash: got no error")
		}
		got, err := f.s.GetAPIKeyByHash(f.ctx, first.Hash)
		f.ok(err, "GetAPIKeyByHash")
		assertSame(t, "the first key", got, first)
		_, err = f.s.GetAPIKey(f.ctx, second.ID)
		wantErr(t, "GetAPIKey of the refused key", err, account.ErrAPIKeyNotFound())
	})
}

func (s suite) getAPIKey(t *testing.T) {
	t.Run("ErrNotFound", func(t *testing.T) {
		f := s.fix(t)
		f.key()
		_, err := f.s.GetAPIKey(f.ctx, account.NewID(account.PrefixAPIKey, f.now()))
		wantErr(t, "GetAPIKey", err, account.ErrAPIKeyNotFound())
	})
}

func (s suite) getAPIKeyByHash(t *testing.T) {
	t.Run("ErrNotFound", func(t *testing.T) {
		f := s.fix(t)
		f.key()
		_, err := f.s.GetAPIKeyByHash(f.ctx, account.HashAPIKey(account.NewAPIKeySecret()))
		wantErr(t, "GetAPIKeyByHash", err, account.ErrAPIKeyNotFound())
	})
}

func (s suite) updateAPIKey(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		// Every field of the patch lands on every copy of the key: by ID,
		// by hash, in the list and for a token's verify.
		f := s.fix(t)
		k := f.key()
		tok := f.token(k.ID)
		name, meta, off := "renamed ✓", account.Metadata{"plan": "pro"}, true
		got, err := f.s.UpdateAPIKey(f.ctx, f.opts, k.ID, account.APIKeyPatch{Name: &name, Metadata: &meta, Disabled: &off}, nil)
		f.ok(err, "UpdateAPIKey")
		want := k
		want.Name, want.Metadata, want.Disabled = name, meta, true
		assertSame(t, "UpdateAPIKey's key", got, want)
		f.wantKey("the updated key", want)
		st, err := f.s.TokenStatus(f.ctx, tok.ID, k.ID, nil, "", false)
		f.ok(err, "TokenStatus")
		if st.Key == nil {
			t.Fatal("TokenStatus of a disabled key's token: got no key, want the key, disabled")
		}
		assertSame(t, "TokenStatus's key", *st.Key, want)
	})
	t.Run("NilFieldsStay", func(t *testing.T) {
		f := s.fix(t)
		k := f.key()
		off, on := true, false
		_, err := f.s.UpdateAPIKey(f.ctx, f.opts, k.ID, account.APIKeyPatch{Disabled: &off}, nil)
		f.ok(err, "UpdateAPIKey disabling")
		got, err := f.s.UpdateAPIKey(f.ctx, f.opts, k.ID, account.APIKeyPatch{Disabled: &on}, nil)
		f.ok(err, "UpdateAPIKey enabling")
		assertSame(t, "the key disabled and enabled again", got, k)
		f.wantKey("the key disabled and enabled again", k)
	})
	t.Run("MetadataRemoved", func(t *testing.T) {
		f := s.fix(t)
		k := f.key()
		none := account.Metadata{}
		got, err := f.s.UpdateAPIKey(f.ctx, f.opts, k.ID, account.APIKeyPatch{Metadata: &none}, nil)
		f.ok(err, "UpdateAPIKey")
		k.Metadata = nil
		assertSame(t, "UpdateAPIKey's key", got, k)
		f.wantKey("the key without metadata", k)
	})
	t.Run("Allow", func(t *testing.T) {
		// allow sees the key as stored, DisabledAbove included, and its
		// error is the answer: nothing changes.
		f := s.fix(t)
		parent := f.key()
		k := f.childKey(parent)
		off := true
		_, err := f.s.UpdateAPIKey(f.ctx, f.opts, parent.ID, account.APIKeyPatch{Disabled: &off}, nil)
		f.ok(err, "UpdateAPIKey disabling the parent")
		refused := account.Errorf(account.CodeForbidden, "no")
		var seen []account.APIKey
		name := "not this"
		_, err = f.s.UpdateAPIKey(f.ctx, f.opts, k.ID, account.APIKeyPatch{Name: &name}, func(got account.APIKey) error {
			seen = append(seen, got)
			return refused
		})
		if !errors.Is(err, refused) {
			t.Fatalf("UpdateAPIKey refused by allow: got %v, want allow's error", err)
		}
		if len(seen) == 0 {
			t.Fatal("allow was not called")
		}
		want := k
		want.DisabledAbove = true
		assertSame(t, "the key allow saw", seen[0], want)
		f.wantKey("the key after a refused update", want)
	})
	t.Run("DisabledAbove", func(t *testing.T) {
		// Every key below a disabled key is read with DisabledAbove, by
		// ID, by hash and for a verify, whatever the token's hint; the
		// keys beside and above it are not. Enabling it clears it.
		f := s.fix(t)
		root := f.key()
		k := f.childKey(root)
		child := f.childKey(k)
		grandchild := f.childKey(child)
		sibling := f.childKey(root)
		tok := f.token(grandchild.ID)
		off, on := true, false
		_, err := f.s.UpdateAPIKey(f.ctx, f.opts, k.ID, account.APIKeyPatch{Disabled: &off}, nil)
		f.ok(err, "UpdateAPIKey disabling")
		for _, below := range []account.APIKey{child, grandchild} {
			below.DisabledAbove = true
			f.wantKey("a key below the disabled key", below)
		}
		for _, hint := range [][]string{grandchild.Ancestors, nil} {
			st, err := f.s.TokenStatus(f.ctx, tok.ID, grandchild.ID, hint, "", false)
			f.ok(err, "TokenStatus")
			if st.Key == nil || !st.Key.DisabledAbove || st.Key.Disabled {
				t.Errorf("TokenStatus (hint %v) of a token of a key below a disabled key: got %+v, want the key with DisabledAbove only", hint, st.Key)
			}
		}
		f.wantKey("the key beside it", sibling)
		f.wantKey("the key above it", root)
		_, err = f.s.UpdateAPIKey(f.ctx, f.opts, k.ID, account.APIKeyPatch{Disabled: &on}, nil)
		f.ok(err, "UpdateAPIKey enabling")
		f.wantKey("a key below the enabled key", grandchild)
	})
	t.Run("Concurrently", func(t *testing.T) {
		// Patches of different fields at once all take effect: none is
		// lost to another written from an older read.
		f := s.fix(t)
		k := f.key()
		name, meta, off := "renamed", account.Metadata{"plan": "pro"}, true
		patches := []account.APIKeyPatch{{Name: &name}, {Metadata: &meta}, {Disabled: &off}}
		errs := race(len(patches), func(i int) error {
			_, err := f.s.UpdateAPIKey(f.ctx, f.opts, k.ID, patches[i], nil)
			return err
		})
		for i, err := range errs {
			f.ok(err, fmt.Sprintf("UpdateAPIKey %d", i))
		}
		want := k
		want.Name, want.Metadata, want.Disabled = name, meta, true
		f.wantKey("the key after three concurrent updates", want)
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		f := s.fix(t)
		k := f.key()
		child := f.childKey(k)
		name := "x"
		_, err := f.s.UpdateAPIKey(f.ctx, f.opts, f.newKey().ID, account.APIKeyPatch{Name: &name}, nil)
		wantErr(t, "UpdateAPIKey of a key never stored", err, account.ErrAPIKeyNotFound())
		f.ok(f.s.DeleteAPIKey(f.ctx, f.opts, k.ID, nil), "DeleteAPIKey")
		for _, gone := range []account.APIKey{k, child} {
			_, err = f.s.UpdateAPIKey(f.ctx, f.opts, gone.ID, account.APIKeyPatch{Name: &name}, nil)
			wantErr(t, "UpdateAPIKey of a deleted key", err, account.ErrAPIKeyNotFound())
			f.wantKeyGone("a deleted key after UpdateAPIKey", gone)
		}
	})
}

func (s suite) rotateAPIKey(t *testing.T) {
	rotate := func(f *fixture, k account.APIKey, until time.Time) (account.APIKey, error) {
		secret := account.NewAPIKeySecret()
		r := &account.KeyRotation{Hash: account.HashAPIKey(secret), Last4: secret[len(secret)-4:], PreviousUntil: until}
		return f.s.UpdateAPIKey(f.ctx, f.opts, k.ID, account.APIKeyPatch{Rotate: r, At: f.now()}, nil)
	}
	t.Run("WithGrace", func(t *testing.T) {
		// The new secret finds the key, and so does the old one, with
		// the old one recorded as previous, until when it was given.
		f := s.fix(t)
		k := f.key()
		until := f.now().Add(time.Hour)
		got, err := rotate(f, k, until)
		f.ok(err, "UpdateAPIKey rotating")
		want := k
		want.Hash, want.Last4, want.PreviousHash, want.PreviousExpiresAt = got.Hash, got.Last4, k.Hash, until
		assertSame(t, "the rotated key", got, want)
		if bytes.Equal(got.Hash, k.Hash) {
			t.Fatal("the rotated key kept its hash")
		}
		f.wantKey("the rotated key", want)
		old, err := f.s.GetAPIKeyByHash(f.ctx, k.Hash)
		f.ok(err, "GetAPIKeyByHash of the previous secret")
		assertSame(t, "the key found by its previous secret", old, want)
	})
	t.Run("WithoutGrace", func(t *testing.T) {
		f := s.fix(t)
		k := f.key()
		got, err := rotate(f, k, time.Time{})
		f.ok(err, "UpdateAPIKey rotating")
		if len(got.PreviousHash) != 0 || !got.PreviousExpiresAt.IsZero() {
			t.Errorf("a rotation without grace: got previous %x until %v, want none", got.PreviousHash, got.PreviousExpiresAt)
		}
		f.wantKey("the rotated key", got)
		_, err = f.s.GetAPIKeyByHash(f.ctx, k.Hash)
		wantErr(t, "GetAPIKeyByHash of the replaced secret", err, account.ErrAPIKeyNotFound())
	})
	t.Run("AgainEndsTheOlderGrace", func(t *testing.T) {
		f := s.fix(t)
		k := f.key()
		first, err := rotate(f, k, f.now().Add(time.Hour))
		f.ok(err, "first rotation")
		until := f.now().Add(2 * time.Hour)
		second, err := rotate(f, first, until)
		f.ok(err, "second rotation")
		if !bytes.Equal(second.PreviousHash, first.Hash) || !second.PreviousExpiresAt.Equal(until) {
			t.Errorf("after two rotations: previous %x until %v, want the first rotation's %x until %v", second.PreviousHash, second.PreviousExpiresAt, first.Hash, until)
		}
		_, err = f.s.GetAPIKeyByHash(f.ctx, k.Hash)
		wantErr(t, "GetAPIKeyByHash of the original secret", err, account.ErrAPIKeyNotFound())
		f.wantKey("the key rotated twice", second)
		got, err := f.s.GetAPIKeyByHash(f.ctx, first.Hash)
		f.ok(err, "GetAPIKeyByHash of the previous secret")
		assertSame(t, "the key by its previous secret", got, second)
	})
	t.Run("ChangesReachThePreviousSecret", func(t *testing.T) {
		// Disabling a key disables it whichever secret is presented; a
		// change after the grace period drops the previous secret.
		f := s.fix(t)
		k := f.key()
		until := f.now().Add(time.Minute)
		rotated, err := rotate(f, k, until)
		f.ok(err, "rotation")
		off := true
		got, err := f.s.UpdateAPIKey(f.ctx, f.opts, k.ID, account.APIKeyPatch{Disabled: &off, At: f.now()}, nil)
		f.ok(err, "UpdateAPIKey disabling")
		if !bytes.Equal(got.PreviousHash, k.Hash) {
			t.Errorf("a change during the grace period dropped the previous secret")
		}
		old, err := f.s.GetAPIKeyByHash(f.ctx, k.Hash)
		f.ok(err, "GetAPIKeyByHash of the previous secret")
		if !old.Disabled {
			t.Error("the key found by its previous secret is not disabled")
		}
		on := false
		got, err = f.s.UpdateAPIKey(f.ctx, f.opts, k.ID, account.APIKeyPatch{Disabled: &on, At: until}, nil)
		f.ok(err, "UpdateAPIKey after the grace period")
		want := rotated
		want.PreviousHash, want.PreviousExpiresAt = nil, time.Time{}
		assertSame(t, "the key changed after the grace period", got, want)
		f.wantKey("the key changed after the grace period", want)
		_, err = f.s.GetAPIKeyByHash(f.ctx, k.Hash)
		wantErr(t, "GetAPIKeyByHash of the previous secret after its grace period", err, account.ErrAPIKeyNotFound())
	})
	t.Run("Delete", func(t *testing.T) {
		// Deleting a key, or a key above it, takes both its secrets.
		f := s.fix(t)
		parent := f.key()
		k := f.childKey(parent)
		rotatedParent, err := rotate(f, parent, f.now().Add(time.Hour))
		f.ok(err, "rotation of the parent")
		rotated, err := rotate(f, k, f.now().Add(time.Hour))
		f.ok(err, "rotation of the child")
		f.ok(f.s.DeleteAPIKey(f.ctx, f.opts, parent.ID, nil), "DeleteAPIKey")
		for _, old := range []account.APIKey{parent, k} {
			f.wantKeyGone("a deleted key, by its previous secret", old)
		}
		for _, gone := range []account.APIKey{rotatedParent, rotated} {
			f.wantKeyGone("a deleted key, by its secret", gone)
		}
	})
	t.Run("Concurrently", func(t *testing.T) {
		// Rotations of one key at once: each either takes effect or is
		// CodeConcurrentUpdate, having lost every try to the others; none
		// is CodeUnavailable, which would call a lost race an outage. The
		// key ends with the secret of one that took effect, and the
		// secrets of the others find nothing.
		f := s.fix(t)
		k := f.key()
		const n = 20
		got := make([]account.APIKey, n)
		errs := race(n, func(i int) (err error) {
			got[i], err = rotate(f, k, time.Time{})
			return err
		})
		final, err := f.s.GetAPIKey(f.ctx, k.ID)
		f.ok(err, "GetAPIKey after the rotations")
		applied, current := 0, 0
		for i, err := range errs {
			if err != nil {
				if !account.IsCode(err, account.CodeConcurrentUpdate) {
					t.Errorf("rotation %d: %v, want success or %s", i, err, account.CodeConcurrentUpdate)
				}
				continue
			}
			applied++
			if bytes.Equal(got[i].Hash, final.Hash) {
				current++
				continue
			}
			if _, err := f.s.GetAPIKeyByHash(f.ctx, got[i].Hash); !account.IsCode(err, account.CodeNotFound) {
				t.Errorf("rotation %d, replaced by another: GetAPIKeyByHash got %v, want not found", i, err)
			}
		}
		t.Logf("%d of %d rotations took effect", applied, n)
		if applied == 0 || current != 1 {
			t.Errorf("%d rotations took effect, %d of them hold the key's secret; want at least one, and exactly one", applied, current)
		}
	})
	t.Run("ErrHashExists", func(t *testing.T) {
		// A new secret is never another key's: the rotation fails (with any
		// error) and changes nothing.
		f := s.fix(t)
		k, other := f.key(), f.key()
		r := &account.KeyRotation{Hash: other.Hash, Last4: other.Last4, PreviousUntil: f.now().Add(time.Hour)}
		if _, err := f.s.UpdateAPIKey(f.ctx, f.opts, k.ID, account.APIKeyPatch{Rotate: r, At: f.now()}, nil); err == nil {
			t.Fatal("a rotation to another key's hash: got no error")
		}
		f.wantKey("the key after a refused rotation", k)
		f.wantKey("the other key", other)
	})
}

func (s suite) recordAPIKeyUse(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		// The use recorded comes back by ID, in the list and with the
		// key an update returns; not by hash, which decides validity and
		// reads nothing it does not need.
		f := s.fix(t)
		k := f.key()
		at := f.now()
		last, err := f.s.RecordAPIKeyUse(f.ctx, k, at)
		f.ok(err, "RecordAPIKeyUse")
		if !last.Equal(at) {
			t.Errorf("RecordAPIKeyUse: got %v, want %v", last, at)
		}
		want := k
		want.LastUsedAt = at
		got, err := f.s.GetAPIKey(f.ctx, k.ID)
		f.ok(err, "GetAPIKey")
		assertSame(t, "GetAPIKey", got, want)
		page, err := f.s.ListAPIKeys(f.ctx, account.APIKeyFilter{}, account.ListParams{Limit: 100})
		f.ok(err, "ListAPIKeys")
		assertIDs(t, "ListAPIKeys", page.Items, k)
		assertSame(t, "the key in the list", page.Items[0], want)
		name := "renamed"
		got, err = f.s.UpdateAPIKey(f.ctx, f.opts, k.ID, account.APIKeyPatch{Name: &name, At: f.now()}, nil)
		f.ok(err, "UpdateAPIKey")
		if !got.LastUsedAt.Equal(at) {
			t.Errorf("UpdateAPIKey's key: LastUsedAt %v, want %v", got.LastUsedAt, at)
		}
		byHash, err := f.s.GetAPIKeyByHash(f.ctx, k.Hash)
		f.ok(err, "GetAPIKeyByHash")
		if !byHash.LastUsedAt.IsZero() {
			t.Errorf("GetAPIKeyByHash: LastUsedAt %v, want it left out", byHash.LastUsedAt)
		}
	})
	t.Run("AtMostOnceAMinute", func(t *testing.T) {
		// A use within KeyUseResolution of the one recorded changes
		// nothing, and says which use is kept; a later one is recorded.
		f := s.fix(t)
		k := f.key()
		at := f.now()
		_, err := f.s.RecordAPIKeyUse(f.ctx, k, at)
		f.ok(err, "RecordAPIKeyUse")
		for _, d := range []time.Duration{time.Second, account.KeyUseResolution - time.Millisecond} {
			last, err := f.s.RecordAPIKeyUse(f.ctx, k, at.Add(d))
			f.ok(err, "RecordAPIKeyUse")
			if !last.Equal(at) {
				t.Errorf("RecordAPIKeyUse %v after the recorded use: got %v, want the recorded %v", d, last, at)
			}
		}
		later := at.Add(account.KeyUseResolution)
		last, err := f.s.RecordAPIKeyUse(f.ctx, k, later)
		f.ok(err, "RecordAPIKeyUse")
		got, err := f.s.GetAPIKey(f.ctx, k.ID)
		f.ok(err, "GetAPIKey")
		if !last.Equal(later) || !got.LastUsedAt.Equal(later) {
			t.Errorf("a use more than a minute later: recorded %v, read %v; want %v", last, got.LastUsedAt, later)
		}
	})
	t.Run("Concurrently", func(t *testing.T) {
		// Processes recording the same key's use at once agree on the one
		// kept.
		f := s.fix(t)
		k := f.key()
		at := f.now()
		lasts := make([]time.Time, concurrency)
		errs := race(concurrency, func(i int) error {
			var err error
			lasts[i], err = f.s.RecordAPIKeyUse(f.ctx, k, at.Add(time.Duration(i)*time.Millisecond))
			return err
		})
		got, err := f.s.GetAPIKey(f.ctx, k.ID)
		f.ok(err, "GetAPIKey")
		for i, err := range errs {
			f.ok(err, fmt.Sprintf("RecordAPIKeyUse %d", i))
			if !lasts[i].Equal(got.LastUsedAt) {
				t.Errorf("RecordAPIKeyUse %d: got %v, want the use kept, %v", i, lasts[i], got.LastUsedAt)
			}
		}
	})
	t.Run("NeverUsed", func(t *testing.T) {
		f := s.fix(t)
		k := f.key()
		got, err := f.s.GetAPIKey(f.ctx, k.ID)
		f.ok(err, "GetAPIKey")
		if !got.LastUsedAt.IsZero() {
			t.Errorf("LastUsedAt of a key never used: got %v, want zero", got.LastUsedAt)
		}
	})
}

// wantKey fails unless k reads back as want by ID and by hash, and is in
// the list as want.
func (f *fixture) wantKey(what string, want account.APIKey) {
	f.t.Helper()
	got, err := f.s.GetAPIKey(f.ctx, want.ID)
	f.ok(err, what+": GetAPIKey")
	assertSame(f.t, what+" by ID", got, want)
	byHash := want
	byHash.LastUsedAt = time.Time{} // GetAPIKey reads it, not GetAPIKeyByHash
	got, err = f.s.GetAPIKeyByHash(f.ctx, want.Hash)
	f.ok(err, what+": GetAPIKeyByHash")
	assertSame(f.t, what+" by hash", got, byHash)
	page, err := f.s.ListAPIKeys(f.ctx, account.APIKeyFilter{}, account.ListParams{Limit: 100})
	f.ok(err, what+": ListAPIKeys")
	for _, got := range page.Items {
		if got.ID == want.ID {
			want.DisabledAbove = false // a list does not read the ancestors
			assertSame(f.t, what+" in the list", got, want)
			return
		}
	}
	f.t.Errorf("%s: not in the list", what)
}

func (s suite) deleteAPIKey(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		f := s.fix(t)
		k, other := f.key(), f.key()
		f.ok(f.s.DeleteAPIKey(f.ctx, f.opts, k.ID, nil), "DeleteAPIKey")
		f.wantKeyGone("the deleted key", k)
		got, err := f.s.GetAPIKeyByHash(f.ctx, other.Hash)
		f.ok(err, "GetAPIKeyByHash of another key")
		assertSame(t, "another key", got, other)
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		f := s.fix(t)
		k := f.key()
		wantErr(t, "DeleteAPIKey of a key never stored", f.s.DeleteAPIKey(f.ctx, f.opts, f.newKey().ID, nil), account.ErrAPIKeyNotFound())
		f.ok(f.s.DeleteAPIKey(f.ctx, f.opts, k.ID, nil), "DeleteAPIKey")
		wantErr(t, "DeleteAPIKey of a deleted key", f.s.DeleteAPIKey(f.ctx, f.opts, k.ID, nil), account.ErrAPIKeyNotFound())
	})
	t.Run("Allow", func(t *testing.T) {
		// allow sees the key as stored, and its error is the answer: the
		// key and the keys below it stay.
		f := s.fix(t)
		k := f.key()
		child := f.childKey(k)
		refused := account.Errorf(account.CodeForbidden, "no")
		var seen []account.APIKey
		err := f.s.DeleteAPIKey(f.ctx, f.opts, k.ID, func(got account.APIKey) error {
			seen = append(seen, got)
			return refused
		})
		if !errors.Is(err, refused) {
			t.Fatalf("DeleteAPIKey refused by allow: got %v, want allow's error", err)
		}
		if len(seen) == 0 {
			t.Fatal("allow was not called")
		}
		assertSame(t, "the key allow saw", seen[0], k)
		for _, want := range []account.APIKey{k, child} {
			got, err := f.s.GetAPIKeyByHash(f.ctx, want.Hash)
			f.ok(err, "GetAPIKeyByHash after a refused DeleteAPIKey")
			assertSame(t, "the key", got, want)
		}
	})
	t.Run("Tree", func(t *testing.T) {
		// Every key below the deleted one goes with it, and every token of
		// every one of them stops verifying, whether or not the token names
		// the ancestors. Another tree, and the deleted key's parent, stay.
		f := s.fix(t)
		parent := f.key()
		root := f.childKey(parent)
		a, b := f.childKey(root), f.childKey(root)
		a1, a2 := f.childKey(a), f.childKey(a)
		a11 := f.childKey(a1)
		other := f.key()
		otherChild := f.childKey(other)
		gone := []account.APIKey{root, a, b, a1, a2, a11}
		tokens := make([]account.TokenRecord, len(gone))
		for i, k := range gone {
			tokens[i] = f.token(k.ID)
		}
		f.ok(f.s.DeleteAPIKey(f.ctx, f.opts, root.ID, nil), "DeleteAPIKey")
		for i, k := range gone {
			what := fmt.Sprintf("key %d of the tree", i)
			f.wantKeyGone(what, k)
			for _, hint := range [][]string{k.Ancestors, nil} {
				st, err := f.s.TokenStatus(f.ctx, tokens[i].ID, k.ID, hint, "", false)
				f.ok(err, "TokenStatus")
				if st.Key != nil {
					t.Errorf("%s: TokenStatus with the hint %v: got the key, want nil", what, hint)
				}
			}
		}
		for _, k := range []account.APIKey{parent, other, otherChild} {
			got, err := f.s.GetAPIKeyByHash(f.ctx, k.Hash)
			f.ok(err, "GetAPIKeyByHash of a key outside the deleted tree")
			assertSame(t, "a key outside the deleted tree", got, k)
		}
		page, err := f.s.ListAPIKeys(f.ctx, account.APIKeyFilter{}, account.ListParams{Limit: 100})
		f.ok(err, "ListAPIKeys")
		assertIDs(t, "ListAPIKeys after the delete", page.Items, otherChild, other, parent)
		// The parent's tree index lost its child: deleting it is a plain delete.
		f.ok(f.s.DeleteAPIKey(f.ctx, f.opts, parent.ID, nil), "DeleteAPIKey of the parent")
		f.wantKeyGone("the parent", parent)
	})
	t.Run("Large", func(t *testing.T) {
		// More keys than one DynamoDB transaction holds: a root with 40
		// children, one of which has 30, and a chain as deep as keys go.
		// The root and one key below it have a previous secret, still
		// accepted.
		f := s.fix(t)
		root := f.key()
		defer f.wantKeyGone("the root, by its previous secret", root)
		var gone []account.APIKey
		for range 40 {
			gone = append(gone, f.childKey(root))
		}
		for range 30 {
			gone = append(gone, f.childKey(gone[7]))
		}
		deep := gone[3]
		for range account.MaxKeyAncestors - 1 {
			deep = f.childKey(deep)
			gone = append(gone, deep)
		}
		for i, k := range []account.APIKey{root, gone[7]} {
			secret := account.NewAPIKeySecret()
			r := &account.KeyRotation{Hash: account.HashAPIKey(secret), Last4: secret[len(secret)-4:], PreviousUntil: f.now().Add(time.Hour)}
			rotated, err := f.s.UpdateAPIKey(f.ctx, f.opts, k.ID, account.APIKeyPatch{Rotate: r, At: f.now()}, nil)
			f.ok(err, "UpdateAPIKey rotating")
			if i == 0 {
				root = rotated
			} else {
				gone = append(gone, k) // by its previous secret
				gone[7] = rotated
			}
		}
		if n := len(deep.Ancestors); n != account.MaxKeyAncestors {
			t.Fatalf("the deepest key has %d ancestors, want %d", n, account.MaxKeyAncestors)
		}
		tok := f.token(deep.ID)
		other := f.key()
		f.ok(f.s.DeleteAPIKey(f.ctx, f.opts, root.ID, nil), "DeleteAPIKey")
		f.wantKeyGone("the root", root)
		for i, k := range gone {
			f.wantKeyGone(fmt.Sprintf("key %d below the root", i), k)
		}
		st, err := f.s.TokenStatus(f.ctx, tok.ID, deep.ID, deep.Ancestors, "", false)
		f.ok(err, "TokenStatus")
		if st.Key != nil {
			t.Error("TokenStatus of the deepest key's token: got the key, want nil")
		}
		page, err := f.s.ListAPIKeys(f.ctx, account.APIKeyFilter{}, account.ListParams{Limit: 100})
		f.ok(err, "ListAPIKeys")
		assertIDs(t, "ListAPIKeys after the delete", page.Items, other)
	})
	t.Run("ConcurrentCreate", func(t *testing.T) {
		// Keys created below a tree while it is deleted: each create either
		// fails with not_found or its key goes with the tree. None survives.
		f := s.fix(t)
		root := f.key()
		parents := []account.APIKey{root, f.childKey(root)}
		parents = append(parents, f.childKey(parents[1]))
		created := make([]account.APIKey, concurrency)
		for i := range created {
			created[i] = f.newChildKey(parents[i%len(parents)])
		}
		errs := race(concurrency+1, func(i int) error {
			if i == concurrency {
				return f.s.DeleteAPIKey(f.ctx, f.opts, root.ID, nil)
			}
			return f.s.CreateAPIKey(f.ctx, f.opts, created[i])
		})
		f.ok(errs[concurrency], "DeleteAPIKey")
		for i, k := range created {
			if errs[i] != nil && !isErr(errs[i], account.ErrAPIKeyNotFound()) {
				t.Errorf("CreateAPIKey %d racing the delete: got %v, want success or not_found", i, errs[i])
			}
			f.wantKeyGone(fmt.Sprintf("key %d created during the delete", i), k)
		}
		page, err := f.s.ListAPIKeys(f.ctx, account.APIKeyFilter{}, account.ListParams{Limit: 100})
		f.ok(err, "ListAPIKeys")
		assertIDs(t, "ListAPIKeys after the delete", page.Items)
	})
}

// wantKeyGone fails unless k can be found neither by ID nor by hash, and
// cannot be deleted again.
//
// k's Hash is looked up; to check a previous secret, pass the key as it was
// before the rotation.
func (f *fixture) wantKeyGone(what string, k account.APIKey) {
	f.t.Helper()
	if _, err := f.s.GetAPIKey(f.ctx, k.ID); !isErr(err, account.ErrAPIKeyNotFound()) {
		f.t.Errorf("%s: GetAPIKey: got %v, want not_found", what, err)
	}
	if _, err := f.s.GetAPIKeyByHash(f.ctx, k.Hash); !isErr(err, account.ErrAPIKeyNotFound()) {
		f.t.Errorf("%s: GetAPIKeyByHash: got %v, want not_found", what, err)
	}
	if err := f.s.DeleteAPIKey(f.ctx, f.opts, k.ID, nil); !isErr(err, account.ErrAPIKeyNotFound()) {
		f.t.Errorf("%s: DeleteAPIKey: got %v, want not_found", what, err)
	}
}

// assertIDs fails unless keys are want, by ID, in order.
func assertIDs(tb testing.TB, what string, keys []account.APIKey, want ...account.APIKey) {
	tb.Helper()
	var got, ids []string
	for _, k := range keys {
		got = append(got, k.ID)
	}
	for _, k := range want {
		ids = append(ids, k.ID)
	}
	if !slices.Equal(got, ids) {
		tb.Errorf("%s: got %v, want %v", what, got, ids)
	}
}

func (s suite) createToken(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		// The store has no read of a token record of its own; what a record
		// must not do is make its token look revoked or lose its key.
		f := s.fix(t)
		k := f.key()
		tr := f.token(k.ID)
		st, err := f.s.TokenStatus(f.ctx, tr.ID, k.ID, nil, "", false)
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
		at, err := f.s.RevokeToken(f.ctx, f.opts, r)
		f.ok(err, "RevokeToken")
		if !at.Equal(r.RevokedAt) {
			t.Errorf("RevokeToken: got %v, want %v", at, r.RevokedAt)
		}
		st, err := f.s.TokenStatus(f.ctx, tr.ID, k.ID, nil, "", false)
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
		_, err := f.s.RevokeToken(f.ctx, f.opts, first)
		f.ok(err, "RevokeToken")
		at, err := f.s.RevokeToken(f.ctx, f.opts, revocation(f, tr))
		f.ok(err, "RevokeToken again")
		if !at.Equal(first.RevokedAt) {
			t.Errorf("RevokeToken again: got %v, want the first time %v", at, first.RevokedAt)
		}
		st, err := f.s.TokenStatus(f.ctx, tr.ID, k.ID, nil, "", false)
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
			ats[i], err = f.s.RevokeToken(f.ctx, f.opts, rs[i])
			return err
		})
		st, err := f.s.TokenStatus(f.ctx, tr.ID, k.ID, nil, "", false)
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
		_, err := f.s.RevokeToken(f.ctx, f.opts, revocation(f, tr))
		f.ok(err, "RevokeToken")
		st, err := f.s.TokenStatus(f.ctx, other.ID, k.ID, nil, "", false)
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
		st, err := f.s.TokenStatus(f.ctx, tr.ID, k.ID, nil, "", false)
		f.ok(err, "TokenStatus")
		if st.Key == nil {
			t.Fatal("Key: got nil, want the issuing key")
		}
		assertSame(t, "TokenStatus.Key", *st.Key, k)
		if !st.RevokedAt.IsZero() {
			t.Errorf("RevokedAt: got %v, want zero", st.RevokedAt)
		}
	})
	// A store may remember a key's decoding between reads (every verify
	// reads it); what it returns is still the caller's to change.
	t.Run("KeyIsTheCallers", func(t *testing.T) {
		f := s.fix(t)
		parent := f.key()
		k := f.newChildKey(parent)
		k.Metadata = account.Metadata{"plan": "pro"}
		f.ok(f.s.CreateAPIKey(f.ctx, f.opts, k), "CreateAPIKey")
		tr := f.token(k.ID)
		// Enough reads that each of a key's read copies is read more than
		// once (a verify picks one at random).
		for i := range 64 {
			st, err := f.s.TokenStatus(f.ctx, tr.ID, k.ID, k.Ancestors, "", false)
			f.ok(err, "TokenStatus")
			if st.Key == nil {
				t.Fatalf("read %d: Key: got nil, want the issuing key", i)
			}
			assertSame(t, fmt.Sprintf("read %d: TokenStatus.Key, after the reads before changed theirs", i), *st.Key, k)
			st.Key.Scopes[0] = "changed"
			st.Key.Ancestors[0] = "changed"
			st.Key.Hash[0] ^= 0xff
			st.Key.Metadata["plan"] = "changed"
		}
	})
	t.Run("KeyDeleted", func(t *testing.T) {
		f := s.fix(t)
		k := f.key()
		tr := f.token(k.ID)
		f.ok(f.s.DeleteAPIKey(f.ctx, f.opts, k.ID, nil), "DeleteAPIKey")
		st, err := f.s.TokenStatus(f.ctx, tr.ID, k.ID, nil, "", false)
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
		_, err := f.s.RevokeToken(f.ctx, f.opts, r)
		f.ok(err, "RevokeToken")
		st, err := f.s.TokenStatus(f.ctx, tr.ID, k.ID, nil, "", false)
		f.ok(err, "TokenStatus")
		if !st.RevokedAt.Equal(r.RevokedAt) {
			t.Errorf("RevokedAt: got %v, want %v", st.RevokedAt, r.RevokedAt)
		}
		if st.Key == nil {
			t.Fatal("Key: got nil, want the issuing key")
		}
		assertSame(t, "TokenStatus.Key", *st.Key, k)
	})
	t.Run("AncestorsHint", func(t *testing.T) {
		// The ancestors a token names only save a read: missing, wrong or
		// naming keys that do not exist, they change nothing.
		f := s.fix(t)
		root := f.key()
		k := f.childKey(f.childKey(root))
		tr := f.token(k.ID)
		missing := account.NewID(account.PrefixAPIKey, f.now())
		for _, hint := range [][]string{k.Ancestors, nil, {missing}, {root.ID, missing, root.ID}} {
			st, err := f.s.TokenStatus(f.ctx, tr.ID, k.ID, hint, "", false)
			f.ok(err, "TokenStatus")
			if st.Key == nil {
				t.Fatalf("TokenStatus with the hint %v: got no key, want the live key", hint)
			}
			assertSame(t, "TokenStatus.Key", *st.Key, k)
		}
	})
	t.Run("UnknownTokenAndKey", func(t *testing.T) {
		// Unknown IDs are not an error: the answer is "not revoked, no key".
		f := s.fix(t)
		f.token(f.key().ID)
		at := f.now()
		st, err := f.s.TokenStatus(f.ctx, account.NewID(account.PrefixToken, at), account.NewID(account.PrefixAPIKey, at), nil, "", false)
		f.ok(err, "TokenStatus")
		if !st.RevokedAt.IsZero() || st.Key != nil {
			t.Errorf("TokenStatus: got %+v, want the zero status", st)
		}
	})
}

func (s suite) keyOwners(t *testing.T) {
	t.Run("Stored", func(t *testing.T) {
		// A key's organization and owner come back by ID and by hash, and
		// a key below it is bound to the same organization.
		f := s.fix(t)
		o := f.org()
		k := f.newKey()
		k.OrganizationID, k.OwnerID = o.ID, "crm:user/4711 ✓"
		f.ok(f.s.CreateAPIKey(f.ctx, f.opts, k), "CreateAPIKey")
		f.wantKey("a key with an organization and an owner", k)
		child := f.newChildKey(k)
		child.OrganizationID = o.ID
		f.ok(f.s.CreateAPIKey(f.ctx, f.opts, child), "CreateAPIKey below it")
		f.wantKey("the key below it", child)
	})
	t.Run("ErrOrganizationNotFound", func(t *testing.T) {
		// Never one that does not exist, nor one being deleted or deleted:
		// nothing is stored, the hash stays free.
		f := s.fix(t)
		gone := f.org()
		f.ok(f.s.DeleteOrganization(f.ctx, f.opts, gone.ID), "DeleteOrganization")
		for _, orgID := range []string{f.newOrg().ID, gone.ID} {
			k := f.newKey()
			k.OrganizationID = orgID
			wantErr(t, "CreateAPIKey for a missing organization", f.s.CreateAPIKey(f.ctx, f.opts, k), account.ErrOrganizationNotFound())
			_, err := f.s.GetAPIKey(f.ctx, k.ID)
			wantErr(t, "GetAPIKey of the refused key", err, account.ErrAPIKeyNotFound())
			again := f.newKey()
			again.Hash = k.Hash
			f.ok(f.s.CreateAPIKey(f.ctx, f.opts, again), "CreateAPIKey with the refused key's hash")
		}
	})
	t.Run("List", func(t *testing.T) {
		// By organization, by owner, by both; newest first, paged.
		f := s.fix(t)
		o, other := f.org(), f.org()
		key := func(orgID, owner string) account.APIKey {
			k := f.newKey()
			k.OrganizationID, k.OwnerID = orgID, owner
			f.ok(f.s.CreateAPIKey(f.ctx, f.opts, k), "CreateAPIKey")
			return k
		}
		a := key(o.ID, "ada")
		b := key(o.ID, "bob")
		c := key(other.ID, "ada")
		d := key("", "ada")
		e := key(o.ID, "")
		gone := key(o.ID, "ada")
		f.ok(f.s.DeleteAPIKey(f.ctx, f.opts, gone.ID, nil), "DeleteAPIKey")
		for _, tc := range []struct {
			name   string
			filter account.APIKeyFilter
			want   []account.APIKey
		}{
			{"Organization", account.APIKeyFilter{OrganizationID: o.ID}, []account.APIKey{e, b, a}},
			{"Owner", account.APIKeyFilter{OwnerID: "ada"}, []account.APIKey{d, c, a}},
			{"Both", account.APIKeyFilter{OrganizationID: o.ID, OwnerID: "ada"}, []account.APIKey{a}},
			{"None", account.APIKeyFilter{OwnerID: "nobody"}, nil},
			{"All", account.APIKeyFilter{}, []account.APIKey{e, d, c, b, a}},
		} {
			page, err := f.s.ListAPIKeys(f.ctx, tc.filter, account.ListParams{Limit: 100})
			f.ok(err, "ListAPIKeys")
			assertIDs(t, tc.name, page.Items, tc.want...)
			if page.Next != "" {
				t.Errorf("%s: Next %q on the only page", tc.name, page.Next)
			}
			for i, got := range page.Items {
				assertSame(t, tc.name+" item", got, tc.want[i])
			}
		}
		// Two at a time: the pages join up.
		var ids []account.APIKey
		p := account.ListParams{Limit: 2}
		for range 5 {
			page, err := f.s.ListAPIKeys(f.ctx, account.APIKeyFilter{OrganizationID: o.ID}, p)
			f.ok(err, "ListAPIKeys")
			ids = append(ids, page.Items...)
			if page.Next == "" {
				break
			}
			p.After = page.Next
		}
		assertIDs(t, "by organization, two at a time", ids, e, b, a)
	})
	t.Run("DeleteOrganization", func(t *testing.T) {
		// The organization's keys go with it, and the keys below them,
		// whichever key created them; their tokens stop verifying. A key
		// above them that is not the organization's stays, and so do
		// another organization's keys.
		f := s.fix(t)
		o, other := f.org(), f.org()
		unbound := f.key()
		bind := func(k account.APIKey) account.APIKey {
			k.OrganizationID, k.OwnerID = o.ID, "ada"
			f.ok(f.s.CreateAPIKey(f.ctx, f.opts, k), "CreateAPIKey")
			return k
		}
		top := bind(f.newKey())
		below := bind(f.newChildKey(top))
		ofUnbound := bind(f.newChildKey(unbound))
		belowThat := bind(f.newChildKey(ofUnbound))
		secret := account.NewAPIKeySecret()
		r := &account.KeyRotation{Hash: account.HashAPIKey(secret), Last4: secret[len(secret)-4:], PreviousUntil: f.now().Add(time.Hour)}
		rotated, err := f.s.UpdateAPIKey(f.ctx, f.opts, below.ID, account.APIKeyPatch{Rotate: r, At: f.now()}, nil)
		f.ok(err, "UpdateAPIKey rotating")
		_, err = f.s.RecordAPIKeyUse(f.ctx, top, f.now())
		f.ok(err, "RecordAPIKeyUse")
		kept := f.newKey()
		kept.OrganizationID = other.ID
		f.ok(f.s.CreateAPIKey(f.ctx, f.opts, kept), "CreateAPIKey")
		gone := []account.APIKey{top, below, rotated, ofUnbound, belowThat}
		tokens := make([]account.TokenRecord, len(gone))
		for i, k := range gone {
			tokens[i] = f.token(k.ID)
		}

		f.ok(f.s.DeleteOrganization(f.ctx, f.opts, o.ID), "DeleteOrganization")
		for i, k := range gone {
			f.wantKeyGone(fmt.Sprintf("key %d of the organization", i), k)
			for _, orgHint := range []string{o.ID, ""} {
				st, err := f.s.TokenStatus(f.ctx, tokens[i].ID, k.ID, k.Ancestors, orgHint, false)
				f.ok(err, "TokenStatus")
				if st.Key != nil {
					t.Errorf("TokenStatus of a token of key %d of the deleted organization: got the key, want nil", i)
				}
			}
		}
		f.wantKey("the key above, not bound", unbound)
		f.wantKey("another organization's key", kept)
		for _, filter := range []account.APIKeyFilter{{OrganizationID: o.ID}, {OwnerID: "ada"}} {
			page, err := f.s.ListAPIKeys(f.ctx, filter, account.ListParams{Limit: 100})
			f.ok(err, "ListAPIKeys")
			assertIDs(t, fmt.Sprintf("ListAPIKeys %+v after the delete", filter), page.Items)
		}
		// The unbound key lost its child: deleting it is a plain delete.
		f.ok(f.s.DeleteAPIKey(f.ctx, f.opts, unbound.ID, nil), "DeleteAPIKey of the key above")
	})
	t.Run("DeleteOrganizationMany", func(t *testing.T) {
		// More keys than one DynamoDB transaction holds.
		f := s.fix(t)
		o := f.org()
		root := f.newKey()
		root.OrganizationID = o.ID
		f.ok(f.s.CreateAPIKey(f.ctx, f.opts, root), "CreateAPIKey")
		gone := []account.APIKey{root}
		for i := range 40 {
			k := f.newChildKey(root)
			k.OrganizationID, k.OwnerID = o.ID, fmt.Sprint("owner-", i%3)
			f.ok(f.s.CreateAPIKey(f.ctx, f.opts, k), "CreateAPIKey")
			gone = append(gone, k)
		}
		f.ok(f.s.DeleteOrganization(f.ctx, f.opts, o.ID), "DeleteOrganization")
		for i, k := range gone {
			f.wantKeyGone(fmt.Sprintf("key %d", i), k)
		}
	})
	t.Run("ConcurrentCreate", func(t *testing.T) {
		// Keys created for an organization while it is deleted: each
		// create fails, or its key goes with the organization.
		f := s.fix(t)
		o := f.org()
		parent := f.newKey()
		parent.OrganizationID = o.ID
		f.ok(f.s.CreateAPIKey(f.ctx, f.opts, parent), "CreateAPIKey")
		created := make([]account.APIKey, concurrency)
		for i := range created {
			k := f.newKey()
			if i%2 == 0 {
				k = f.newChildKey(parent)
			}
			k.OrganizationID = o.ID
			created[i] = k
		}
		errs := race(concurrency+1, func(i int) error {
			if i == concurrency {
				return f.s.DeleteOrganization(f.ctx, f.opts, o.ID)
			}
			return f.s.CreateAPIKey(f.ctx, f.opts, created[i])
		})
		f.ok(errs[concurrency], "DeleteOrganization")
		for i, k := range created {
			if errs[i] != nil && !account.IsCode(errs[i], account.CodeNotFound) {
				t.Errorf("CreateAPIKey %d racing the delete: got %v, want success or not_found", i, errs[i])
			}
			f.wantKeyGone(fmt.Sprintf("key %d created during the delete", i), k)
		}
	})
}

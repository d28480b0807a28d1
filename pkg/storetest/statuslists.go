package storetest

import (
	"slices"
	"sync"
	"testing"
	"time"

	"latchkey/pkg/account"
)

// statusLists: leases of one list never overlap, even at once; a list
// reads back its size, and each change of a token or its key is in its
// entry as soon as the store call has returned; live lists are listed until
// they retire.
func (s suite) statusLists(t *testing.T) {
	t.Run("LeaseConcurrently", func(t *testing.T) {
		f := s.fix(t)
		list := account.StatusListID(f.base, f.base, 0)
		ends := make([]int64, concurrency)
		var wg sync.WaitGroup
		for i := range concurrency {
			wg.Add(1)
			go func() {
				defer wg.Done()
				end, err := f.s.LeaseStatusIndexes(f.ctx, list, account.StatusBlock, account.StatusListExpiry(list))
				if err != nil {
					t.Errorf("LeaseStatusIndexes: %v", err)
				}
				ends[i] = end
			}()
		}
		wg.Wait()
		slices.Sort(ends)
		for i, end := range ends {
			if want := int64(i+1) * account.StatusBlock; end != want {
				t.Fatalf("lease %d ends at %d, want %d: blocks overlap or are lost (%v)", i, end, want, ends)
			}
		}
		l, err := f.s.GetStatusList(f.ctx, list)
		f.ok(err, "GetStatusList")
		if l.Size != concurrency*account.StatusBlock || len(l.Statuses) != concurrency*account.StatusBlock/4 {
			t.Errorf("list of %d entries in %d bytes, want %d", l.Size, len(l.Statuses), concurrency*account.StatusBlock)
		}
	})
	t.Run("NotFound", func(t *testing.T) {
		f := s.fix(t)
		_, err := f.s.GetStatusList(f.ctx, account.StatusListID(f.base, f.base, 3))
		wantErr(t, "GetStatusList", err, account.ErrStatusListNotFound())
	})
	t.Run("Flips", func(t *testing.T) {
		f := s.fix(t)
		list := account.StatusListID(f.base, f.base, 0)
		end, err := f.s.LeaseStatusIndexes(f.ctx, list, account.StatusBlock, account.StatusListExpiry(list))
		f.ok(err, "LeaseStatusIndexes")
		next := end - account.StatusBlock
		token := func(keyID string) account.TokenRecord {
			t.Helper()
			at := f.now()
			tr := account.TokenRecord{
				ID: account.NewID(account.PrefixToken, at), KeyID: keyID, Scopes: []string{"read:users"},
				IssuedAt: at, ExpiresAt: at.Add(time.Hour), Status: &account.StatusRef{List: list, Index: next},
			}
			next++
			f.ok(f.s.CreateToken(f.ctx, f.opts, tr), "CreateToken")
			return tr
		}
		want := func(what string, status int, toks ...account.TokenRecord) {
			t.Helper()
			l, err := f.s.GetStatusList(f.ctx, list)
			f.ok(err, "GetStatusList")
			for _, tr := range toks {
				if got := l.Status(tr.Status.Index); got != status {
					t.Errorf("%s: entry %d is %d, want %d", what, tr.Status.Index, got, status)
				}
			}
		}
		parent := f.key()
		child := f.newChildKey(parent)
		f.ok(f.s.CreateAPIKey(f.ctx, f.opts, child), "CreateAPIKey")
		a, b, c := token(parent.ID), token(parent.ID), token(child.ID)
		want("issued", account.StatusValid, a, b, c)

		_, err = f.s.RevokeToken(f.ctx, f.opts, account.Revocation{TokenID: a.ID, KeyID: parent.ID, RevokedAt: f.now(), ExpiresAt: a.ExpiresAt, Inline: true, Status: a.Status})
		f.ok(err, "RevokeToken")
		want("revoked", account.StatusInvalid, a)
		want("the others", account.StatusValid, b, c)

		off, on := true, false
		_, err = f.s.UpdateAPIKey(f.ctx, f.opts, parent.ID, account.APIKeyPatch{Disabled: &off, At: f.now()}, nil)
		f.ok(err, "UpdateAPIKey")
		want("parent disabled", account.StatusSuspended, b, c)
		want("revoked stays", account.StatusInvalid, a)
		_, err = f.s.UpdateAPIKey(f.ctx, f.opts, parent.ID, account.APIKeyPatch{Disabled: &on, At: f.now()}, nil)
		f.ok(err, "UpdateAPIKey")
		want("parent enabled", account.StatusValid, b, c)

		_, err = f.s.UpdateAPIKey(f.ctx, f.opts, parent.ID, account.APIKeyPatch{RevokeTokens: true, At: f.now()}, nil)
		f.ok(err, "UpdateAPIKey")
		want("revoke-all", account.StatusInvalid, b)
		want("the child's", account.StatusValid, c)

		f.ok(f.s.DeleteAPIKey(f.ctx, f.opts, parent.ID, nil), "DeleteAPIKey")
		want("deleted with the key above", account.StatusInvalid, c)
	})
	t.Run("List", func(t *testing.T) {
		f := s.fix(t)
		older, newer := account.StatusListID(f.base, f.base.Add(-2*time.Hour), 0), account.StatusListID(f.base, f.base, 0)
		for _, id := range []string{older, newer} {
			_, err := f.s.LeaseStatusIndexes(f.ctx, id, account.StatusBlock, account.StatusListExpiry(id))
			f.ok(err, "LeaseStatusIndexes")
		}
		got, err := f.s.ListStatusLists(f.ctx, f.base)
		f.ok(err, "ListStatusLists")
		if !slices.Equal(got, []string{older, newer}) {
			t.Errorf("live lists %v, want %v", got, []string{older, newer})
		}
		got, err = f.s.ListStatusLists(f.ctx, account.StatusListExpiry(older))
		f.ok(err, "ListStatusLists")
		if !slices.Equal(got, []string{newer}) {
			t.Errorf("once the older retired: %v, want %v", got, []string{newer})
		}
	})
}

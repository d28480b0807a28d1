package storetest

import (
	"slices"
	"testing"
	"time"

	"latchkey/pkg/account"
)

// listTokens: a key's token records, newest first, paged without a repeat
// or a gap, each with its revocation, and none of another key's or from
// before since.
func (s suite) listTokens(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		f := s.fix(t)
		k, other := f.key(), f.key()
		var want []account.TokenRecord
		for i := range 5 {
			want = append(want, f.token(k.ID))
			if i == 1 {
				f.token(other.ID)
			}
		}
		slices.Reverse(want)
		r := account.Revocation{TokenID: want[2].ID, KeyID: k.ID, RevokedAt: f.now(), ExpiresAt: want[2].ExpiresAt}
		_, err := f.s.RevokeToken(f.ctx, f.opts, r)
		f.ok(err, "RevokeToken")
		want[2].RevokedAt = r.RevokedAt

		var got []account.TokenRecord
		p := account.ListParams{Limit: 2}
		for pages := 0; ; pages++ {
			if pages > 5 {
				t.Fatal("paging does not end")
			}
			page, err := f.s.ListTokens(f.ctx, k.ID, f.base.Add(-time.Hour), p)
			f.ok(err, "ListTokens")
			if len(page.Items) > 2 {
				t.Fatalf("page of %d items, want at most 2", len(page.Items))
			}
			got = append(got, page.Items...)
			if page.Next == "" {
				break
			}
			p.After = page.Next
		}
		if len(got) != len(want) {
			t.Fatalf("ListTokens: got %d records, want %d", len(got), len(want))
		}
		for i := range want {
			assertSame(t, "ListTokens record "+want[i].ID, got[i], want[i])
		}
	})
	t.Run("Since", func(t *testing.T) {
		// A token issued at or before since is not read: what a key's
		// tokens_revoked_before, or the longest token lifetime, cuts off.
		f := s.fix(t)
		k := f.key()
		old := f.token(k.ID)
		since, _ := account.IDTime(account.PrefixToken, old.ID)
		fresh := f.token(k.ID)
		page, err := f.s.ListTokens(f.ctx, k.ID, since, account.ListParams{})
		f.ok(err, "ListTokens")
		if len(page.Items) != 1 || page.Items[0].ID != fresh.ID || page.Next != "" {
			t.Fatalf("got %+v, want only %s", page, fresh.ID)
		}
	})
	t.Run("None", func(t *testing.T) {
		f := s.fix(t)
		k := f.key()
		page, err := f.s.ListTokens(f.ctx, k.ID, f.base.Add(-time.Hour), account.ListParams{})
		f.ok(err, "ListTokens")
		if len(page.Items) != 0 || page.Next != "" {
			t.Fatalf("got %+v, want an empty last page", page)
		}
	})
	t.Run("DeleteKeyWithTokens", func(t *testing.T) {
		// The records of a key's tokens do not stand in the way of its
		// delete, nor of its children's.
		f := s.fix(t)
		k := f.key()
		child := f.childKey(k)
		for range 3 {
			f.token(k.ID)
			f.token(child.ID)
		}
		f.ok(f.s.DeleteAPIKey(f.ctx, f.opts, k.ID, nil), "DeleteAPIKey")
		for _, id := range []string{k.ID, child.ID} {
			_, err := f.s.GetAPIKey(f.ctx, id)
			wantErr(t, "GetAPIKey after the delete", err, account.ErrAPIKeyNotFound())
		}
	})
}

// revokeKeyTokens: an UpdateAPIKey with RevokeTokens sets the key's
// TokensRevokedBefore on every copy a verify or a request reads, and an
// earlier time never moves it back.
func (s suite) revokeKeyTokens(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		f := s.fix(t)
		k := f.key()
		tr := f.token(k.ID)
		at := f.now()
		got, err := f.s.UpdateAPIKey(f.ctx, f.opts, k.ID, account.APIKeyPatch{RevokeTokens: true, At: at}, nil)
		f.ok(err, "UpdateAPIKey revoking its tokens")
		if !got.TokensRevokedBefore.Equal(at) {
			t.Errorf("UpdateAPIKey: TokensRevokedBefore %v, want %v", got.TokensRevokedBefore, at)
		}
		byID, err := f.s.GetAPIKey(f.ctx, k.ID)
		f.ok(err, "GetAPIKey")
		byHash, err := f.s.GetAPIKeyByHash(f.ctx, k.Hash)
		f.ok(err, "GetAPIKeyByHash")
		st, err := f.s.TokenStatus(f.ctx, tr.ID, k.ID, nil, "", false)
		f.ok(err, "TokenStatus")
		if st.Key == nil {
			t.Fatal("TokenStatus: no key")
		}
		for what, got := range map[string]time.Time{"GetAPIKey": byID.TokensRevokedBefore, "GetAPIKeyByHash": byHash.TokensRevokedBefore, "TokenStatus": st.Key.TokensRevokedBefore} {
			if !got.Equal(at) {
				t.Errorf("%s: TokensRevokedBefore %v, want %v", what, got, at)
			}
		}
		// Another change keeps it; an earlier revocation (a clock behind)
		// does not move it back.
		name := "renamed"
		_, err = f.s.UpdateAPIKey(f.ctx, f.opts, k.ID, account.APIKeyPatch{Name: &name, At: f.now()}, nil)
		f.ok(err, "UpdateAPIKey renaming")
		_, err = f.s.UpdateAPIKey(f.ctx, f.opts, k.ID, account.APIKeyPatch{RevokeTokens: true, At: at.Add(-time.Minute)}, nil)
		f.ok(err, "UpdateAPIKey revoking with an earlier time")
		byHash, err = f.s.GetAPIKeyByHash(f.ctx, k.Hash)
		f.ok(err, "GetAPIKeyByHash")
		if !byHash.TokensRevokedBefore.Equal(at) {
			t.Errorf("after a rename and an earlier revocation: TokensRevokedBefore %v, want %v", byHash.TokensRevokedBefore, at)
		}
	})
}

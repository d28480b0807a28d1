package storetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"latchkey/pkg/account"
)

// revokeTokenInline: the tokens that carry the claim (Revocation.Inline,
// TokenStatus's inline) are revoked at once however many are revoked
// together, whatever else changes the key meanwhile, and however many of
// one key are revoked; the tokens without it as before.
func (s suite) revokeTokenInline(t *testing.T) {
	inline := func(f *fixture, tr account.TokenRecord) account.Revocation {
		return account.Revocation{TokenID: tr.ID, KeyID: tr.KeyID, RevokedAt: f.now(), ExpiresAt: tr.ExpiresAt, Inline: true}
	}
	// status fails the test unless every token of tokens reads as revoked,
	// and every one of live as not.
	status := func(f *fixture, k account.APIKey, revoked, live []account.TokenRecord) {
		f.t.Helper()
		for _, tr := range revoked {
			st, err := f.s.TokenStatus(f.ctx, tr.ID, k.ID, k.Ancestors, k.OrganizationID, true)
			f.ok(err, "TokenStatus")
			if st.RevokedAt.IsZero() || st.Key == nil {
				f.t.Errorf("TokenStatus of the revoked %s: got %+v, want revoked, with its key", tr.ID, st)
			}
		}
		for _, tr := range live {
			st, err := f.s.TokenStatus(f.ctx, tr.ID, k.ID, k.Ancestors, k.OrganizationID, true)
			f.ok(err, "TokenStatus")
			if !st.RevokedAt.IsZero() || st.Key == nil {
				f.t.Errorf("TokenStatus of the live %s: got %+v, want not revoked, with its key", tr.ID, st)
			}
		}
	}
	// toRevoke issues n tokens of k and one more that stays live, and the
	// inline revocation of each of the n: a race's set-up.
	toRevoke := func(f *fixture, k account.APIKey, n int) ([]account.TokenRecord, account.TokenRecord, []account.Revocation) {
		var toks []account.TokenRecord
		for range n {
			toks = append(toks, f.token(k.ID))
		}
		live := f.token(k.ID)
		rs := make([]account.Revocation, n)
		for i := range rs {
			rs[i] = inline(f, toks[i])
		}
		return toks, live, rs
	}
	t.Run("OK", func(t *testing.T) {
		f := s.fix(t)
		k := f.key()
		tr, other := f.token(k.ID), f.token(k.ID)
		r := inline(f, tr)
		at, err := f.s.RevokeToken(f.ctx, f.opts, r)
		f.ok(err, "RevokeToken")
		if !at.Equal(r.RevokedAt) {
			t.Errorf("RevokeToken: got %v, want %v", at, r.RevokedAt)
		}
		st, err := f.s.TokenStatus(f.ctx, tr.ID, k.ID, nil, "", true)
		f.ok(err, "TokenStatus")
		if !st.RevokedAt.Equal(r.RevokedAt) {
			t.Errorf("TokenStatus.RevokedAt: got %v, want %v", st.RevokedAt, r.RevokedAt)
		}
		status(f, k, nil, []account.TokenRecord{other})
		again, err := f.s.RevokeToken(f.ctx, f.opts, inline(f, tr))
		f.ok(err, "RevokeToken again")
		if !again.Equal(r.RevokedAt) {
			t.Errorf("RevokeToken again: got %v, want the first time %v", again, r.RevokedAt)
		}
		// The entry is still the record that ListTokens reads.
		page, err := f.s.ListTokens(f.ctx, k.ID, f.base.Add(-time.Hour), account.ListParams{})
		f.ok(err, "ListTokens")
		for _, got := range page.Items {
			if want := map[string]time.Time{tr.ID: r.RevokedAt}[got.ID]; !got.RevokedAt.Equal(want) {
				t.Errorf("ListTokens: %s revoked at %v, want %v", got.ID, got.RevokedAt, want)
			}
		}
	})
	t.Run("ManyOfOneKeyConcurrently", func(t *testing.T) {
		// More at once than a key holds: some overflow, and every one is
		// revoked all the same.
		f := s.fix(t)
		k := f.childKey(f.key())
		const n = 24
		toks, live, rs := toRevoke(f, k, n)
		ats := make([]time.Time, n)
		errs := race(n, func(i int) error {
			var err error
			ats[i], err = f.s.RevokeToken(f.ctx, f.opts, rs[i])
			return err
		})
		for i, err := range errs {
			f.ok(err, fmt.Sprintf("RevokeToken %d", i))
			if !ats[i].Equal(rs[i].RevokedAt) {
				t.Errorf("RevokeToken %d: got %v, want %v", i, ats[i], rs[i].RevokedAt)
			}
		}
		status(f, k, toks, []account.TokenRecord{live})
	})
	t.Run("RacingAPatch", func(t *testing.T) {
		// A revocation and a change of the key made at once: neither is
		// lost, whichever is written first.
		f := s.fix(t)
		k := f.key()
		const n = 6
		toks, live, rs := toRevoke(f, k, n)
		names := make([]string, n)
		patched := make([]bool, n)
		errs := race(2*n, func(i int) error {
			if i < n {
				_, err := f.s.RevokeToken(f.ctx, f.opts, rs[i])
				return err
			}
			i -= n
			names[i] = fmt.Sprintf("patched %d", i)
			_, err := f.s.UpdateAPIKey(f.ctx, f.opts, k.ID, account.APIKeyPatch{Name: &names[i], At: f.now()}, nil)
			if account.IsCode(err, account.CodeConcurrentUpdate) {
				return nil // a race lost, nothing written: what a client retries
			}
			patched[i] = err == nil
			return err
		})
		for i, err := range errs {
			f.ok(err, fmt.Sprintf("write %d", i))
		}
		status(f, k, toks, []account.TokenRecord{live})
		got, err := f.s.GetAPIKey(f.ctx, k.ID)
		f.ok(err, "GetAPIKey")
		if i := slices.Index(names, got.Name); i < 0 || !patched[i] {
			t.Errorf("GetAPIKey: name %q, want one a PATCH wrote (%q, written %v)", got.Name, names, patched)
		}
	})
	t.Run("Overflow", func(t *testing.T) {
		// Revoked one by one, more than a key holds: each is seen at once,
		// and the key's other tokens, before and after, are not revoked.
		f := s.fix(t)
		k := f.key()
		before := f.token(k.ID)
		var toks []account.TokenRecord
		for range 20 {
			toks = append(toks, f.token(k.ID))
		}
		for i, tr := range toks {
			_, err := f.s.RevokeToken(f.ctx, f.opts, inline(f, tr))
			f.ok(err, fmt.Sprintf("RevokeToken %d", i))
			status(f, k, toks[:i+1], []account.TokenRecord{before})
		}
		after := f.token(k.ID)
		status(f, k, toks, []account.TokenRecord{before, after})
		page, err := f.s.ListTokens(f.ctx, k.ID, f.base.Add(-time.Hour), account.ListParams{Limit: 50})
		f.ok(err, "ListTokens")
		revoked := 0
		for _, tr := range page.Items {
			if !tr.RevokedAt.IsZero() {
				revoked++
			}
		}
		if revoked != len(toks) {
			t.Errorf("ListTokens: %d revoked, want %d", revoked, len(toks))
		}
	})
	t.Run("WithoutClaim", func(t *testing.T) {
		// A token issued before the claim existed is revoked with its
		// entry, which its verify reads, next to one with the claim.
		f := s.fix(t)
		k := f.key()
		old, fresh := f.token(k.ID), f.token(k.ID)
		r := inline(f, old)
		r.Inline = false
		_, err := f.s.RevokeToken(f.ctx, f.opts, r)
		f.ok(err, "RevokeToken without the claim")
		_, err = f.s.RevokeToken(f.ctx, f.opts, inline(f, fresh))
		f.ok(err, "RevokeToken with the claim")
		st, err := f.s.TokenStatus(f.ctx, old.ID, k.ID, nil, "", false)
		f.ok(err, "TokenStatus")
		if !st.RevokedAt.Equal(r.RevokedAt) || st.Key == nil {
			t.Errorf("TokenStatus of the token without the claim: got %+v, want revoked at %v", st, r.RevokedAt)
		}
		status(f, k, []account.TokenRecord{fresh}, nil)
	})
	t.Run("RevokedByTheEarlierVersion", func(t *testing.T) {
		// A token with the claim revoked by the version before it (with
		// its entry: that version knows no other way) and revoked again by
		// this one: the key takes the revocation, at its first time, so
		// that a verify of it, which reads the key, refuses it.
		f := s.fix(t)
		k := f.key()
		tr := f.token(k.ID)
		first := inline(f, tr)
		first.Inline = false
		_, err := f.s.RevokeToken(f.ctx, f.opts, first)
		f.ok(err, "RevokeToken by the earlier version")
		at, err := f.s.RevokeToken(f.ctx, f.opts, inline(f, tr))
		f.ok(err, "RevokeToken again")
		if !at.Equal(first.RevokedAt) {
			t.Errorf("RevokeToken again: got %v, want the first time %v", at, first.RevokedAt)
		}
		st, err := f.s.TokenStatus(f.ctx, tr.ID, k.ID, nil, "", true)
		f.ok(err, "TokenStatus")
		if !st.RevokedAt.Equal(first.RevokedAt) {
			t.Errorf("TokenStatus: got revoked at %v, want %v", st.RevokedAt, first.RevokedAt)
		}
	})
	// revokeAfterExpiry revokes short, a token of a new key that expires a
	// second later, then next, another of its tokens, after past that
	// expiry.
	revokeAfterExpiry := func(t *testing.T, after time.Duration) (f *fixture, k account.APIKey, short, next account.TokenRecord) {
		f = s.fix(t)
		k = f.key()
		short, next = f.token(k.ID), f.token(k.ID)
		r := inline(f, short)
		r.ExpiresAt = r.RevokedAt.Add(time.Second)
		_, err := f.s.RevokeToken(f.ctx, f.opts, r)
		f.ok(err, "RevokeToken")
		status(f, k, []account.TokenRecord{short}, nil)
		later := inline(f, next)
		later.RevokedAt = r.ExpiresAt.Add(after)
		_, err = f.s.RevokeToken(f.ctx, f.opts, later)
		f.ok(err, fmt.Sprintf("RevokeToken %v after the first token expired", after))
		return f, k, short, next
	}
	t.Run("ExpiredDropped", func(t *testing.T) {
		// The revocation of a token expired (a minute ago and more) goes
		// with the key's next revocation: a verify refuses the token for
		// its expiry, and the key holds only what may still be live.
		f, k, short, next := revokeAfterExpiry(t, 2*time.Minute)
		status(f, k, []account.TokenRecord{next}, nil)
		st, err := f.s.TokenStatus(f.ctx, short.ID, k.ID, nil, "", true)
		f.ok(err, "TokenStatus")
		if !st.RevokedAt.IsZero() {
			t.Errorf("TokenStatus of the expired token: got revoked at %v, want its revocation dropped", st.RevokedAt)
		}
	})
	t.Run("ExpiredKeptAWhile", func(t *testing.T) {
		// A revocation stays on the key for a while after its token
		// expires (tablestore's expiredRevocationMargin, a minute): a
		// verifier whose clock is behind still takes the token for live
		// then, and must still find it revoked.
		f, k, short, next := revokeAfterExpiry(t, 30*time.Second)
		status(f, k, []account.TokenRecord{short, next}, nil)
	})
	t.Run("RevokedByTheEarlierVersionOnAFullKey", func(t *testing.T) {
		// As RevokedByTheEarlierVersion, on a key that holds
		// maxInlineRevocations already: the repeat must still make the
		// token's verify (which reads the key) refuse it.
		f := s.fix(t)
		k := f.key()
		var full []account.TokenRecord
		for range 16 {
			full = append(full, f.token(k.ID))
		}
		tr := f.token(k.ID)
		for i, x := range full {
			_, err := f.s.RevokeToken(f.ctx, f.opts, inline(f, x))
			f.ok(err, fmt.Sprintf("RevokeToken %d", i))
		}
		first := inline(f, tr)
		first.Inline = false
		_, err := f.s.RevokeToken(f.ctx, f.opts, first)
		f.ok(err, "RevokeToken by the earlier version")
		at, err := f.s.RevokeToken(f.ctx, f.opts, inline(f, tr))
		f.ok(err, "RevokeToken again")
		if !at.Equal(first.RevokedAt) {
			t.Errorf("RevokeToken again: got %v, want the first time %v", at, first.RevokedAt)
		}
		status(f, k, append(full, tr), nil)
	})
}

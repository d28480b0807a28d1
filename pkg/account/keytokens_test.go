package account_test

import (
	"testing"
	"time"

	"latchkey/pkg/account"
)

func TestService_RevokeAPIKeyTokens(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		// Every token issued until the revocation is refused at once by
		// verify, introspection and authentication; one issued afterwards
		// works.
		e := newEnv(t)
		p, _ := e.key(t, "", "read:users")
		var old []string
		for range 3 {
			tok, _, err := e.svc.IssueToken(e.ctx, p, account.TokenRequest{Scopes: []string{"read:users"}})
			if err != nil {
				t.Fatalf("IssueToken: %v", err)
			}
			old = append(old, tok)
		}
		e.clock.Advance(time.Millisecond)
		k, err := e.svc.RevokeAPIKeyTokens(e.ctx, e.admin, p.KeyID)
		if err != nil {
			t.Fatalf("RevokeAPIKeyTokens: %v", err)
		}
		if !k.TokensRevokedBefore.Equal(e.clock.Now().UTC().Truncate(time.Millisecond)) {
			t.Errorf("TokensRevokedBefore: got %v, want the time of the revocation %v", k.TokensRevokedBefore, e.clock.Now())
		}
		for _, tok := range old {
			v, err := e.svc.VerifyToken(e.ctx, tok)
			if err != nil || v.Valid || v.Reason != account.ReasonRevoked {
				t.Errorf("VerifyToken of a token issued before: got %+v, %v; want revoked", v, err)
			}
			v, err = e.svc.IntrospectToken(e.ctx, e.admin, tok)
			if err != nil || v.Valid {
				t.Errorf("IntrospectToken of a token issued before: got %+v, %v; want not active", v, err)
			}
			_, err = e.svc.Authenticate(e.ctx, tok)
			wantCode(t, err, account.CodeUnauthorized)
		}
		e.clock.Advance(time.Millisecond)
		tok, c, err := e.svc.IssueToken(e.ctx, p, account.TokenRequest{Scopes: []string{"read:users"}})
		if err != nil {
			t.Fatalf("IssueToken after the revocation: %v", err)
		}
		if v, err := e.svc.VerifyToken(e.ctx, tok); err != nil || !v.Valid {
			t.Errorf("VerifyToken of a token issued after: got %+v, %v; want valid", v, err)
		}
		l, err := e.svc.ListAPIKeyTokens(e.ctx, e.admin, p.KeyID, account.PageRequest{})
		if err != nil {
			t.Fatalf("ListAPIKeyTokens: %v", err)
		}
		if len(l.Items) != 1 || l.Items[0].ID != c.ID || l.HasMore {
			t.Errorf("ListAPIKeyTokens after the revocation: got %+v, want only %s", l, c.ID)
		}
	})
	t.Run("OwnTokens", func(t *testing.T) {
		e := newEnv(t)
		p, _ := e.key(t, "", "revoke:tokens")
		tok, _, err := e.svc.IssueToken(e.ctx, p, account.TokenRequest{Scopes: []string{"revoke:tokens"}})
		if err != nil {
			t.Fatalf("IssueToken: %v", err)
		}
		e.clock.Advance(time.Millisecond)
		if _, err := e.svc.RevokeAPIKeyTokens(e.ctx, p, p.KeyID); err != nil {
			t.Fatalf("RevokeAPIKeyTokens of its own: %v", err)
		}
		if v, _ := e.svc.VerifyToken(e.ctx, tok); v.Valid {
			t.Error("VerifyToken: a revoked token is valid")
		}
	})
	t.Run("ErrInsufficientScope", func(t *testing.T) {
		e := newEnv(t)
		target, _ := e.key(t, "", "read:users")
		caller, _ := e.key(t, "", "read:*", "write:api_keys")
		_, err := e.svc.RevokeAPIKeyTokens(e.ctx, caller, target.KeyID)
		wantCode(t, err, account.CodeInsufficientScope)
		// Grants within the caller's: revoke:tokens alone covers no key
		// with read:users.
		narrow, _ := e.key(t, "", "revoke:tokens")
		_, err = e.svc.RevokeAPIKeyTokens(e.ctx, narrow, target.KeyID)
		wantCode(t, err, account.CodeInsufficientScope)
	})
	t.Run("ErrAbove", func(t *testing.T) {
		// A key cannot revoke the tokens of a key above it, as mayChange.
		e := newEnv(t)
		parent, _ := e.key(t, "", "read:users", "revoke:tokens", "write:api_keys")
		_, secret, err := e.svc.CreateAPIKey(e.ctx, parent, account.NewAPIKey{Name: "child", Scopes: []string{"read:users", "revoke:tokens", "write:api_keys"}})
		if err != nil {
			t.Fatalf("CreateAPIKey: %v", err)
		}
		child := e.auth(t, secret)
		_, err = e.svc.RevokeAPIKeyTokens(e.ctx, child, parent.KeyID)
		wantCode(t, err, account.CodeForbidden)
	})
	t.Run("ErrOutsideOrganization", func(t *testing.T) {
		// A key bound to an organization sees no other key: neither the
		// list nor the revocation of another's tokens, which stay valid.
		e := newEnv(t)
		o := e.org(t, "acme")
		_, secret, err := e.svc.CreateAPIKey(e.ctx, e.admin, account.NewAPIKey{Name: "acme ops", OrganizationID: o.ID,
			Scopes: []string{"read:users", "read:api_keys", "revoke:tokens"}})
		if err != nil {
			t.Fatalf("CreateAPIKey: %v", err)
		}
		bound := e.auth(t, secret)
		target, _ := e.key(t, "", "read:users")
		tok, _, err := e.svc.IssueToken(e.ctx, target, account.TokenRequest{Scopes: []string{"read:users"}})
		if err != nil {
			t.Fatalf("IssueToken: %v", err)
		}
		_, err = e.svc.ListAPIKeyTokens(e.ctx, bound, target.KeyID, account.PageRequest{})
		wantCode(t, err, account.CodeNotFound)
		e.clock.Advance(time.Millisecond)
		_, err = e.svc.RevokeAPIKeyTokens(e.ctx, bound, target.KeyID)
		wantCode(t, err, account.CodeNotFound)
		if v, err := e.svc.VerifyToken(e.ctx, tok); err != nil || !v.Valid {
			t.Errorf("VerifyToken after a refused revocation: %+v, %v; want valid", v, err)
		}
	})
	t.Run("ErrPreviousSecret", func(t *testing.T) {
		// A rotated key's previous secret, in its grace period, lists the
		// key's tokens but revokes none: a leaked old secret must not cut
		// off the rightful holder's tokens.
		e := newEnv(t)
		p, old := e.key(t, "", account.ScopeRevokeTokens, account.ScopeReadAPIKeys, "read:users")
		tok, _, err := e.svc.IssueToken(e.ctx, p, account.TokenRequest{Scopes: []string{"read:users"}})
		if err != nil {
			t.Fatalf("IssueToken: %v", err)
		}
		if _, _, err := e.svc.RotateAPIKey(e.ctx, e.admin, p.KeyID, account.KeyRotationRequest{ExpiresIn: "1h"}); err != nil {
			t.Fatal(err)
		}
		prev := e.auth(t, old)
		e.clock.Advance(time.Millisecond)
		_, err = e.svc.RevokeAPIKeyTokens(e.ctx, prev, p.KeyID)
		wantCode(t, err, account.CodePreviousSecret)
		if _, err := e.svc.ListAPIKeyTokens(e.ctx, prev, p.KeyID, account.PageRequest{}); err != nil {
			t.Errorf("ListAPIKeyTokens with the previous secret: %v", err)
		}
		if v, err := e.svc.VerifyToken(e.ctx, tok); err != nil || !v.Valid {
			t.Errorf("VerifyToken after a refused revocation: %+v, %v; want valid", v, err)
		}
	})
	t.Run("ErrAccessToken", func(t *testing.T) {
		e := newEnv(t)
		tok, _, err := e.svc.IssueToken(e.ctx, e.admin, account.TokenRequest{Scopes: []string{"*:*"}})
		if err != nil {
			t.Fatalf("IssueToken: %v", err)
		}
		_, err = e.svc.RevokeAPIKeyTokens(e.ctx, e.auth(t, tok), e.admin.KeyID)
		wantCode(t, err, account.CodeForbidden)
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		e := newEnv(t)
		_, err := e.svc.RevokeAPIKeyTokens(e.ctx, e.admin, account.NewID(account.PrefixAPIKey, time.Now()))
		wantCode(t, err, account.CodeNotFound)
		_, err = e.svc.RevokeAPIKeyTokens(e.ctx, e.admin, "key_nope")
		wantCode(t, err, account.CodeNotFound)
	})
}

func TestService_ListAPIKeyTokens(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		// Newest first; a token revoked on its own and an expired one are
		// left out.
		e := newEnv(t)
		p, _ := e.key(t, "", "read:users")
		var ids []string
		var toks []string
		for _, life := range []string{"1h", "1m", "1h", "1h"} {
			e.clock.Advance(time.Millisecond)
			tok, c, err := e.svc.IssueToken(e.ctx, p, account.TokenRequest{Scopes: []string{"read:users"}, ExpiresIn: life, Audience: "orders-api"})
			if err != nil {
				t.Fatalf("IssueToken: %v", err)
			}
			ids, toks = append(ids, c.ID), append(toks, tok)
		}
		if _, err := e.svc.RevokeToken(e.ctx, p, toks[2]); err != nil {
			t.Fatalf("RevokeToken: %v", err)
		}
		e.clock.Advance(2 * time.Minute) // the 1m token expires
		var got []account.TokenRecord
		r := account.PageRequest{Limit: "1"}
		for range 10 {
			l, err := e.svc.ListAPIKeyTokens(e.ctx, e.admin, p.KeyID, r)
			if err != nil {
				t.Fatalf("ListAPIKeyTokens: %v", err)
			}
			got = append(got, l.Items...)
			if !l.HasMore {
				break
			}
			r.Cursor = l.NextCursor
		}
		if len(got) != 2 || got[0].ID != ids[3] || got[1].ID != ids[0] {
			t.Fatalf("ListAPIKeyTokens: got %+v, want %s then %s", got, ids[3], ids[0])
		}
		if got[0].Audience != "orders-api" || got[0].KeyID != p.KeyID || len(got[0].Scopes) != 1 {
			t.Errorf("record: got %+v", got[0])
		}
	})
	t.Run("ErrInvalidRequest", func(t *testing.T) {
		e := newEnv(t)
		_, err := e.svc.ListAPIKeyTokens(e.ctx, e.admin, e.admin.KeyID, account.PageRequest{Limit: "101"})
		wantFields(t, err, "limit")
		_, err = e.svc.ListAPIKeyTokens(e.ctx, e.admin, e.admin.KeyID, account.PageRequest{Cursor: "bogus"})
		wantFields(t, err, "cursor")
	})
	t.Run("ErrInsufficientScope", func(t *testing.T) {
		e := newEnv(t)
		target, _ := e.key(t, "", "write:users")
		caller, _ := e.key(t, "", "read:api_keys")
		_, err := e.svc.ListAPIKeyTokens(e.ctx, caller, target.KeyID, account.PageRequest{})
		wantCode(t, err, account.CodeInsufficientScope)
		other, _ := e.key(t, "", "read:users")
		_, err = e.svc.ListAPIKeyTokens(e.ctx, other, target.KeyID, account.PageRequest{})
		wantCode(t, err, account.CodeInsufficientScope)
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		e := newEnv(t)
		_, err := e.svc.ListAPIKeyTokens(e.ctx, e.admin, account.NewID(account.PrefixAPIKey, time.Now()), account.PageRequest{})
		wantCode(t, err, account.CodeNotFound)
	})
}

package account_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"latchkey/pkg/account"
)

func TestService_IssueToken(t *testing.T) {
	t.Run("Audience", func(t *testing.T) {
		e := newEnv(t)
		for _, tc := range []struct{ asked, want string }{
			{"", issuer}, // none asked: the issuer (RFC 9068 section 3)
			{"https://orders.example.com/api", "https://orders.example.com/api"},
			{"urn:example:orders", "urn:example:orders"},
			{"orders-api", "orders-api"},
			{strings.Repeat("a", account.MaxAudienceLength), strings.Repeat("a", account.MaxAudienceLength)},
		} {
			tok, c, err := e.svc.IssueToken(e.ctx, e.admin, account.TokenRequest{Scopes: []string{"read:users"}, Audience: tc.asked})
			if err != nil {
				t.Fatalf("IssueToken(%q): %v", tc.asked, err)
			}
			if c.Audience != tc.want || c.Issuer != issuer {
				t.Errorf("IssueToken(%q): aud %q iss %q, want aud %q iss %q", tc.asked, c.Audience, c.Issuer, tc.want, issuer)
			}
			v, err := e.svc.VerifyToken(e.ctx, tok)
			if err != nil || !v.Valid || v.Claims.Audience != tc.want || v.Claims.Issuer != issuer {
				t.Errorf("VerifyToken: got %+v, %v; want valid with aud %q", v, err, tc.want)
			}
		}
	})
	t.Run("ErrInvalidAudience", func(t *testing.T) {
		e := newEnv(t)
		for _, aud := range []string{
			strings.Repeat("a", account.MaxAudienceLength+1),
			"https://api.example.com/#frag", // RFC 8707: no fragment
			"https:///no-host",
			"/relative/path",
			"two words",
			"ünïcode",
			"api\nexample",
			"-leading-hyphen",
		} {
			_, _, err := e.svc.IssueToken(e.ctx, e.admin, account.TokenRequest{Scopes: []string{"read:users"}, Audience: aud})
			wantFields(t, err, "audience")
			if account.ValidAudience(aud) {
				t.Errorf("ValidAudience(%q): got true", aud)
			}
		}
	})
	t.Run("OK", func(t *testing.T) {
		e := newEnv(t)
		p, _ := e.key(t, "", "read:*")
		tok, c, err := e.svc.IssueToken(e.ctx, p, account.TokenRequest{Scopes: []string{"read:users", "read:users", "read:widgets"}, ExpiresIn: "15m"})
		if err != nil {
			t.Fatalf("IssueToken: %v", err)
		}
		if !account.ValidID(account.PrefixToken, c.ID) || c.KeyID != p.KeyID || !slices.Equal(c.Scopes, []string{"read:users", "read:widgets"}) {
			t.Errorf("claims: got %+v", c)
		}
		if got := c.ExpiresAt.Sub(c.IssuedAt); got != 15*time.Minute {
			t.Errorf("lifetime: got %v, want 15m", got)
		}
		v, err := e.svc.VerifyToken(e.ctx, tok)
		if err != nil || !v.Valid || v.Claims.ID != c.ID {
			t.Errorf("VerifyToken: got %+v, %v; want valid", v, err)
		}
		tp := e.auth(t, tok)
		if err := tp.Require("read:users"); err != nil {
			t.Errorf("the token's principal: %v", err)
		}
		wantCode(t, tp.Require("read:organizations"), account.CodeInsufficientScope)
	})
	t.Run("DefaultLifetime", func(t *testing.T) {
		e := newEnv(t)
		_, c, err := e.svc.IssueToken(e.ctx, e.admin, account.TokenRequest{Scopes: []string{"read:users"}})
		if err != nil {
			t.Fatalf("IssueToken: %v", err)
		}
		if got := c.ExpiresAt.Sub(c.IssuedAt); got != account.DefaultTokenLifetime {
			t.Errorf("lifetime: got %v, want %v", got, account.DefaultTokenLifetime)
		}
	})
	t.Run("CappedAtKeyExpiry", func(t *testing.T) {
		e := newEnv(t)
		p, _ := e.key(t, "10m", "read:users")
		_, c, err := e.svc.IssueToken(e.ctx, p, account.TokenRequest{Scopes: []string{"read:users"}, ExpiresIn: "24h"})
		if err != nil {
			t.Fatalf("IssueToken: %v", err)
		}
		if want := p.KeyExpiresAt.Truncate(time.Second); !c.ExpiresAt.Equal(want) {
			t.Errorf("ExpiresAt: got %v, want the key's expiry %v", c.ExpiresAt, want)
		}
		if c.ExpiresAt.After(p.KeyExpiresAt) {
			t.Errorf("the token (%v) outlives its key (%v)", c.ExpiresAt, p.KeyExpiresAt)
		}
	})
	t.Run("ErrInsufficientScope", func(t *testing.T) {
		e := newEnv(t)
		p, _ := e.key(t, "", "read:users")
		for _, scope := range []string{"write:users", "read:*", "*:*"} {
			_, _, err := e.svc.IssueToken(e.ctx, p, account.TokenRequest{Scopes: []string{"read:users", scope}})
			if !account.IsCode(err, account.CodeInsufficientScope) {
				t.Errorf("IssueToken(%q): got %v, want insufficient_scope", scope, err)
			}
		}
	})
	t.Run("ErrInsufficientScopeSaysWhatIsMissing", func(t *testing.T) {
		// The scope is one the key lacks, not one the endpoint needs.
		e := newEnv(t)
		p, _ := e.key(t, "", "read:users")
		_, _, err := e.svc.IssueToken(e.ctx, p, account.TokenRequest{Scopes: []string{"read:users", account.ScopeDeleteUsers}})
		wantCode(t, err, account.CodeInsufficientScope)
		got := asError(t, err)
		if want := "the API key does not hold the requested scope delete:users"; !strings.HasPrefix(got.Message, want) {
			t.Errorf("message: got %q, want it to start %q", got.Message, want)
		}
		if got.Scope != account.ScopeDeleteUsers {
			t.Errorf("Scope: got %q, want %q", got.Scope, account.ScopeDeleteUsers)
		}
	})
	t.Run("ErrTooManyScopesAsSent", func(t *testing.T) {
		// The count is checked on the list as sent, before any work per
		// element: 33 copies of one scope are 33 scopes, not one.
		e := newEnv(t)
		_, _, err := e.svc.IssueToken(e.ctx, e.admin, account.TokenRequest{Scopes: slices.Repeat([]string{"read:users"}, 33)})
		wantFields(t, err, "scopes")
		// And field errors name the index as sent, not in the list without duplicates.
		_, _, err = e.svc.IssueToken(e.ctx, e.admin, account.TokenRequest{Scopes: []string{"read:users", "read:users", "bad"}})
		wantFields(t, err, "scopes[2]")
	})
	t.Run("ErrInvalidRequest", func(t *testing.T) {
		e := newEnv(t)
		tooMany := make([]string, 33)
		for i := range tooMany {
			tooMany[i] = "read:r" + itoa(int64(i))
		}
		for _, req := range []account.TokenRequest{
			{Scopes: nil},
			{Scopes: []string{}},
			{Scopes: tooMany},
			{Scopes: []string{"read users"}},
			{Scopes: []string{"read:users"}, ExpiresIn: "59s"},
			{Scopes: []string{"read:users"}, ExpiresIn: "25h"},
			{Scopes: []string{"read:users"}, ExpiresIn: "1h30m"},
		} {
			_, _, err := e.svc.IssueToken(e.ctx, e.admin, req)
			if !account.IsCode(err, account.CodeInvalidRequest) {
				t.Errorf("IssueToken(%+v): got %v, want invalid_request", req, err)
			}
		}
	})
	t.Run("ErrForbiddenForTokens", func(t *testing.T) {
		e := newEnv(t)
		tok, _, err := e.svc.IssueToken(e.ctx, e.admin, account.TokenRequest{Scopes: []string{"*:*"}})
		if err != nil {
			t.Fatalf("IssueToken: %v", err)
		}
		_, _, err = e.svc.IssueToken(e.ctx, e.auth(t, tok), account.TokenRequest{Scopes: []string{"read:users"}})
		wantCode(t, err, account.CodeForbidden)
	})
}

func TestService_RevokeToken(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		e := newEnv(t)
		p, _ := e.key(t, "", "read:users")
		tok, c, err := e.svc.IssueToken(e.ctx, p, account.TokenRequest{Scopes: []string{"read:users"}})
		if err != nil {
			t.Fatalf("IssueToken: %v", err)
		}
		r, err := e.svc.RevokeToken(e.ctx, p, tok)
		if err != nil {
			t.Fatalf("RevokeToken: %v", err)
		}
		if r.TokenID != c.ID || !r.RevokedAt.Equal(e.svc.Now()) {
			t.Errorf("got %+v; want token %s revoked now", r, c.ID)
		}
		v, err := e.svc.VerifyToken(e.ctx, tok)
		if err != nil || v.Valid || v.Reason != account.ReasonRevoked {
			t.Errorf("VerifyToken: got %+v, %v; want revoked", v, err)
		}
		_, err = e.svc.Authenticate(e.ctx, tok)
		wantCode(t, err, account.CodeUnauthorized)
	})
	t.Run("Idempotent", func(t *testing.T) {
		e := newEnv(t)
		tok, _, err := e.svc.IssueToken(e.ctx, e.admin, account.TokenRequest{Scopes: []string{"read:users"}})
		if err != nil {
			t.Fatalf("IssueToken: %v", err)
		}
		first, err := e.svc.RevokeToken(e.ctx, e.admin, tok)
		if err != nil {
			t.Fatalf("RevokeToken: %v", err)
		}
		e.clock.Advance(time.Minute)
		again, err := e.svc.RevokeToken(e.ctx, e.admin, tok)
		if err != nil || !again.RevokedAt.Equal(first.RevokedAt) {
			t.Errorf("RevokeToken again: got %+v, %v; want the first time %v", again, err, first.RevokedAt)
		}
	})
	t.Run("ExpiredToken", func(t *testing.T) {
		// Revoking an expired token is allowed: a client cleaning up should
		// not have to race the clock.
		e := newEnv(t)
		tok, _, err := e.svc.IssueToken(e.ctx, e.admin, account.TokenRequest{Scopes: []string{"read:users"}, ExpiresIn: "1m"})
		if err != nil {
			t.Fatalf("IssueToken: %v", err)
		}
		e.clock.Advance(2 * time.Minute)
		if _, err := e.svc.RevokeToken(e.ctx, e.admin, tok); err != nil {
			t.Errorf("RevokeToken of an expired token: %v", err)
		}
		v, err := e.svc.VerifyToken(e.ctx, tok)
		if err != nil || v.Reason != account.ReasonExpired {
			t.Errorf("VerifyToken: got %+v, %v; want expired", v, err)
		}
	})
	t.Run("ErrAnotherKeysToken", func(t *testing.T) {
		e := newEnv(t)
		owner, _ := e.key(t, "", "read:users")
		other, _ := e.key(t, "", "read:users")
		revoker, _ := e.key(t, "", account.ScopeRevokeTokens)
		tok, _, err := e.svc.IssueToken(e.ctx, owner, account.TokenRequest{Scopes: []string{"read:users"}})
		if err != nil {
			t.Fatalf("IssueToken: %v", err)
		}
		_, err = e.svc.RevokeToken(e.ctx, other, tok)
		wantCode(t, err, account.CodeInsufficientScope)
		if v, _ := e.svc.VerifyToken(e.ctx, tok); !v.Valid {
			t.Fatalf("the refused revocation revoked the token: %+v", v)
		}
		if _, err := e.svc.RevokeToken(e.ctx, revoker, tok); err != nil {
			t.Fatalf("RevokeToken with revoke:tokens: %v", err)
		}
		if v, _ := e.svc.VerifyToken(e.ctx, tok); v.Valid {
			t.Error("VerifyToken after revocation: got valid")
		}
	})
	t.Run("ByAccessToken", func(t *testing.T) {
		// A token may sign itself out, or revoke a sibling (a token of the
		// same key), without a scope; another key's token needs
		// revoke:tokens, as it does for a key.
		e := newEnv(t)
		owner, _ := e.key(t, "", "read:users")
		other, _ := e.key(t, "", "read:users")
		issue := func(p account.Principal) string {
			t.Helper()
			tok, _, err := e.svc.IssueToken(e.ctx, p, account.TokenRequest{Scopes: []string{"read:users"}})
			if err != nil {
				t.Fatalf("IssueToken: %v", err)
			}
			return tok
		}
		self, sibling, foreign := issue(owner), issue(owner), issue(other)
		caller, err := e.svc.Authenticate(e.ctx, self)
		if err != nil {
			t.Fatalf("Authenticate: %v", err)
		}
		_, err = e.svc.RevokeToken(e.ctx, caller, foreign)
		wantCode(t, err, account.CodeInsufficientScope)
		for _, tok := range []string{sibling, self} {
			if _, err := e.svc.RevokeToken(e.ctx, caller, tok); err != nil {
				t.Fatalf("RevokeToken by a token of the same key: %v", err)
			}
			if v, _ := e.svc.VerifyToken(e.ctx, tok); v.Valid {
				t.Error("VerifyToken after revocation: got valid")
			}
		}
		if v, _ := e.svc.VerifyToken(e.ctx, foreign); !v.Valid {
			t.Errorf("the refused revocation revoked another key's token: %+v", v)
		}
	})
	t.Run("ErrNotAToken", func(t *testing.T) {
		e := newEnv(t)
		tok, _, err := e.svc.IssueToken(e.ctx, e.admin, account.TokenRequest{Scopes: []string{"read:users"}})
		if err != nil {
			t.Fatalf("IssueToken: %v", err)
		}
		for _, s := range []string{"", "abc", e.secret, flipSignatureChar(tok), "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0."} {
			_, err := e.svc.RevokeToken(e.ctx, e.admin, s)
			if !account.IsCode(err, account.CodeInvalidRequest) {
				t.Errorf("RevokeToken(%q): got %v, want invalid_request", s, err)
			}
		}
	})
}

func TestService_VerifyToken(t *testing.T) {
	t.Run("Expired", func(t *testing.T) {
		e := newEnv(t)
		tok, _, err := e.svc.IssueToken(e.ctx, e.admin, account.TokenRequest{Scopes: []string{"read:users"}, ExpiresIn: "1m"})
		if err != nil {
			t.Fatalf("IssueToken: %v", err)
		}
		e.clock.Advance(time.Minute)
		v, err := e.svc.VerifyToken(e.ctx, tok)
		if err != nil || v.Valid || v.Reason != account.ReasonExpired {
			t.Errorf("VerifyToken: got %+v, %v; want expired", v, err)
		}
	})
	t.Run("Invalid", func(t *testing.T) {
		e := newEnv(t)
		for _, s := range []string{"", "abc", e.secret} {
			v, err := e.svc.VerifyToken(e.ctx, s)
			if err != nil || v.Valid || v.Reason != account.ReasonInvalid {
				t.Errorf("VerifyToken(%q): got %+v, %v; want invalid", s, v, err)
			}
		}
	})
}

// flipSignatureChar changes one character in the middle of a token's
// signature, so that the signature is always wrong (never a no-op).
func flipSignatureChar(tok string) string {
	i := strings.LastIndexByte(tok, '.') + 10
	c := byte('A')
	if tok[i] == 'A' {
		c = 'B'
	}
	return tok[:i] + string(c) + tok[i+1:]
}

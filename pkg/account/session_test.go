package account_test

import (
	"slices"
	"testing"
	"time"

	"latchkey/pkg/account"
)

func TestService_StartSession(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		e := newEnv(t)
		p, _ := e.key(t, "", account.ScopeReadAPIKeys, account.ScopeWriteAPIKeys, account.ScopeReadUsers)
		tok, c, err := e.svc.StartSession(e.ctx, p)
		if err != nil {
			t.Fatalf("StartSession: %v", err)
		}
		if c.Audience != account.ConsoleAudience(issuer) || !slices.Equal(c.Scopes, p.Scopes) || c.KeyID != p.KeyID {
			t.Errorf("claims: got aud %q scopes %v key %s, want the console's with the key's grants", c.Audience, c.Scopes, c.KeyID)
		}
		if got := c.ExpiresAt.Sub(c.IssuedAt); got != account.SessionLifetime {
			t.Errorf("lifetime: got %v, want %v", got, account.SessionLifetime)
		}
		s, err := e.svc.AuthenticateSession(e.ctx, tok)
		if err != nil {
			t.Fatalf("AuthenticateSession: %v", err)
		}
		if !s.Session || s.KeyID != p.KeyID || s.TokenID != c.ID {
			t.Errorf("principal: got %+v, want the key's session", s)
		}
		// The session manages keys as its key would, with its grants.
		k, _, err := e.svc.CreateAPIKey(e.ctx, s, account.NewAPIKey{Name: "made in the console", Scopes: []string{account.ScopeReadUsers}})
		if err != nil {
			t.Fatalf("CreateAPIKey with a session: %v", err)
		}
		if k.CreatedBy != p.KeyID || !slices.Equal(k.Ancestors, append(slices.Clone(p.KeyAncestors), p.KeyID)) {
			t.Errorf("key made by the session: created by %s, ancestors %v; want below %s", k.CreatedBy, k.Ancestors, p.KeyID)
		}
		if _, err := e.svc.ListAPIKeys(e.ctx, s, account.PageRequest{}, account.APIKeyFilter{}); err != nil {
			t.Errorf("ListAPIKeys with a session: %v", err)
		}
		_, _, err = e.svc.CreateAPIKey(e.ctx, s, account.NewAPIKey{Name: "beyond", Scopes: []string{account.ScopeWriteUsers}})
		wantCode(t, err, account.CodeInsufficientScope)
	})
	t.Run("ErrPreviousSecret", func(t *testing.T) {
		// A session manages keys, which a key's previous secret may not:
		// it cannot sign in to the console either, or a leaked old secret
		// would manage keys through a session.
		e := newEnv(t)
		p, old := e.key(t, "", account.ScopeWriteAPIKeys)
		if _, _, err := e.svc.RotateAPIKey(e.ctx, e.admin, p.KeyID, account.KeyRotationRequest{ExpiresIn: "1h"}); err != nil {
			t.Fatal(err)
		}
		_, _, err := e.svc.StartSession(e.ctx, e.auth(t, old))
		wantCode(t, err, account.CodePreviousSecret)
	})
	t.Run("BoundByTheKey", func(t *testing.T) {
		e := newEnv(t)
		p, _ := e.key(t, "10m", account.ScopeReadUsers)
		_, c, err := e.svc.StartSession(e.ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if !c.ExpiresAt.Equal(p.KeyExpiresAt.Truncate(time.Second)) {
			t.Errorf("expiry: got %v, want the key's %v", c.ExpiresAt, p.KeyExpiresAt)
		}
	})
	t.Run("ErrForbidden", func(t *testing.T) {
		e := newEnv(t)
		p, _ := e.key(t, "", account.ScopeReadUsers)
		tok, _, err := e.svc.IssueToken(e.ctx, p, account.TokenRequest{Scopes: []string{account.ScopeReadUsers}})
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = e.svc.StartSession(e.ctx, e.auth(t, tok))
		wantCode(t, err, account.CodeForbidden)
		// Nor does a session make credentials: a session or a token.
		stok, _, err := e.svc.StartSession(e.ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		s, err := e.svc.AuthenticateSession(e.ctx, stok)
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = e.svc.StartSession(e.ctx, s)
		wantCode(t, err, account.CodeForbidden)
		_, _, err = e.svc.IssueToken(e.ctx, s, account.TokenRequest{Scopes: []string{account.ScopeReadUsers}})
		wantCode(t, err, account.CodeForbidden)
	})
}

func TestService_AuthenticateSession(t *testing.T) {
	t.Run("ErrUnauthorized", func(t *testing.T) {
		e := newEnv(t)
		p, secret := e.key(t, "", account.ScopeReadAPIKeys)
		api, _, err := e.svc.IssueToken(e.ctx, p, account.TokenRequest{Scopes: []string{account.ScopeReadAPIKeys}})
		if err != nil {
			t.Fatal(err)
		}
		for name, c := range map[string]string{"an API key": secret, "an API token": api, "empty": "", "garbage": "eyJ.eyJ.sig"} {
			_, err := e.svc.AuthenticateSession(e.ctx, c)
			if !account.IsCode(err, account.CodeUnauthorized) {
				t.Errorf("%s: got %v, want unauthorized", name, err)
			}
		}
	})
	t.Run("ErrRevokedExpiredDisabled", func(t *testing.T) {
		e := newEnv(t)
		p, _ := e.key(t, "", account.ScopeReadAPIKeys)
		s := func() (string, account.Principal) {
			tok, _, err := e.svc.StartSession(e.ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			sp, err := e.svc.AuthenticateSession(e.ctx, tok)
			if err != nil {
				t.Fatal(err)
			}
			return tok, sp
		}
		revoked, sp := s()
		if _, err := e.svc.RevokeToken(e.ctx, sp, revoked); err != nil {
			t.Fatalf("a session revokes itself (sign-out): %v", err)
		}
		_, err := e.svc.AuthenticateSession(e.ctx, revoked)
		wantCode(t, err, account.CodeUnauthorized)

		disabled, _ := s()
		off := false
		if _, err := e.svc.UpdateAPIKey(e.ctx, e.admin, p.KeyID, account.APIKeyUpdate{Enabled: &off}); err != nil {
			t.Fatal(err)
		}
		_, err = e.svc.AuthenticateSession(e.ctx, disabled)
		wantCode(t, err, account.CodeUnauthorized)
		on := true
		if _, err := e.svc.UpdateAPIKey(e.ctx, e.admin, p.KeyID, account.APIKeyUpdate{Enabled: &on}); err != nil {
			t.Fatal(err)
		}

		expired, _ := s()
		e.clock.Advance(account.SessionLifetime)
		_, err = e.svc.AuthenticateSession(e.ctx, expired)
		wantCode(t, err, account.CodeUnauthorized)
	})
	t.Run("RefusedByTheAPI", func(t *testing.T) {
		// The API's Authenticate never takes a session: the console alone
		// does, and no API request can ask for the console's audience.
		e := newEnv(t)
		p, _ := e.key(t, "", account.ScopeReadAPIKeys)
		tok, _, err := e.svc.StartSession(e.ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		_, err = e.svc.Authenticate(e.ctx, tok)
		wantCode(t, err, account.CodeUnauthorized)
		_, _, err = e.svc.IssueToken(e.ctx, p, account.TokenRequest{Scopes: []string{account.ScopeReadAPIKeys}, Audience: account.ConsoleAudience(issuer)})
		wantCode(t, err, account.CodeInvalidRequest)
	})
}

// session signs p in to the console and returns the session's principal.
func (e *env) session(tb testing.TB, p account.Principal) (string, account.Principal) {
	tb.Helper()
	tok, _, err := e.svc.StartSession(e.ctx, p)
	if err != nil {
		tb.Fatalf("StartSession: %v", err)
	}
	s, err := e.svc.AuthenticateSession(e.ctx, tok)
	if err != nil {
		tb.Fatalf("AuthenticateSession: %v", err)
	}
	return tok, s
}

// TestService_SessionAfterRotation is hole 1 of issue 29: a thief signs in
// to the console with a leaked secret, the holder rotates with "0s"; the
// thief's session must no longer rotate, disable, delete or create keys,
// nor do anything else.
func TestService_SessionAfterRotation(t *testing.T) {
	t.Run("EndsTheSession", func(t *testing.T) {
		e := newEnv(t)
		holder, _ := e.key(t, "", account.ScopeReadAPIKeys, account.ScopeWriteAPIKeys, account.ScopeRevokeTokens)
		tok, _ := e.session(t, holder)
		child := e.below(t, holder, account.NewAPIKey{Scopes: []string{account.ScopeReadAPIKeys}})
		if _, _, err := e.svc.RotateAPIKey(e.ctx, holder, holder.KeyID, account.KeyRotationRequest{ExpiresIn: "0s"}); err != nil {
			t.Fatalf("RotateAPIKey: %v", err)
		}
		_, err := e.svc.AuthenticateSession(e.ctx, tok)
		wantCode(t, err, account.CodeUnauthorized)
		// Each action is a request of its own, which resolves the session.
		for name, act := range map[string]func(account.Principal) error{
			"rotate": func(s account.Principal) error {
				_, _, err := e.svc.RotateAPIKey(e.ctx, s, holder.KeyID, account.KeyRotationRequest{ExpiresIn: "0s"})
				return err
			},
			"disable": func(s account.Principal) error {
				off := false
				_, err := e.svc.UpdateAPIKey(e.ctx, s, child.KeyID, account.APIKeyUpdate{Enabled: &off})
				return err
			},
			"delete": func(s account.Principal) error { return e.svc.DeleteAPIKey(e.ctx, s, child.KeyID) },
			"create": func(s account.Principal) error {
				_, _, err := e.svc.CreateAPIKey(e.ctx, s, account.NewAPIKey{Name: "thief's", Scopes: []string{account.ScopeReadAPIKeys}})
				return err
			},
		} {
			s, err := e.svc.AuthenticateSession(e.ctx, tok)
			if err == nil {
				err = act(s)
			}
			if !account.IsCode(err, account.CodeUnauthorized) {
				t.Errorf("%s with a session of the rotated-out secret: got %v, want unauthorized", name, err)
			}
		}
	})
	t.Run("NewSecretSignsIn", func(t *testing.T) {
		e := newEnv(t)
		holder, _ := e.key(t, "", account.ScopeReadAPIKeys, account.ScopeWriteAPIKeys)
		_, secret, err := e.svc.RotateAPIKey(e.ctx, e.admin, holder.KeyID, account.KeyRotationRequest{ExpiresIn: "1h"})
		if err != nil {
			t.Fatal(err)
		}
		_, s := e.session(t, e.auth(t, secret))
		if _, err := e.svc.GetAPIKey(e.ctx, s, holder.KeyID); err != nil {
			t.Errorf("a session of the new secret: %v", err)
		}
	})
	t.Run("OtherChangesKeepIt", func(t *testing.T) {
		// Only a new secret ends a session: a rename or a disable and
		// enable of its key does not.
		e := newEnv(t)
		holder, _ := e.key(t, "", account.ScopeReadAPIKeys)
		tok, _ := e.session(t, holder)
		name := "renamed"
		if _, err := e.svc.UpdateAPIKey(e.ctx, e.admin, holder.KeyID, account.APIKeyUpdate{Name: &name}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.AuthenticateSession(e.ctx, tok); err != nil {
			t.Errorf("after a rename: %v", err)
		}
	})
}

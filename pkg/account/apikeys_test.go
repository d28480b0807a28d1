package account_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"latchkey/pkg/account"
)

func TestService_CreateAPIKey(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		e := newEnv(t)
		k, secret, err := e.svc.CreateAPIKey(e.ctx, e.admin, account.NewAPIKey{Name: "ci", Scopes: []string{"read:users", "read:users", "deploy:widgets"}, ExpiresIn: "30d"})
		if err != nil {
			t.Fatalf("CreateAPIKey: %v", err)
		}
		if !strings.HasPrefix(secret, account.APIKeyPrefix) || k.Last4 != secret[len(secret)-4:] {
			t.Errorf("secret %q, Last4 %q: want the lk_ prefix and its last four characters", secret, k.Last4)
		}
		if !slices.Equal(k.Scopes, []string{"read:users", "deploy:widgets"}) {
			t.Errorf("Scopes: got %q, want duplicates removed", k.Scopes)
		}
		if want := e.svc.Now().Add(30 * 24 * time.Hour); !k.ExpiresAt.Equal(want) {
			t.Errorf("ExpiresAt: got %v, want %v", k.ExpiresAt, want)
		}
		if k.CreatedBy != e.admin.KeyID {
			t.Errorf("CreatedBy: got %q, want %q", k.CreatedBy, e.admin.KeyID)
		}
		if p := e.auth(t, secret); p.KeyID != k.ID {
			t.Errorf("the secret authenticates as %s, want %s", p.KeyID, k.ID)
		}
	})
	t.Run("Metadata", func(t *testing.T) {
		e := newEnv(t)
		meta := account.Metadata{"team": "billing", "env": ""}
		k, _, err := e.svc.CreateAPIKey(e.ctx, e.admin, account.NewAPIKey{Name: "ci", Scopes: []string{"read:users"}, Metadata: meta})
		if err != nil {
			t.Fatalf("CreateAPIKey: %v", err)
		}
		got, err := e.svc.GetAPIKey(e.ctx, e.admin, k.ID)
		if err != nil || len(got.Metadata) != 2 || got.Metadata["team"] != "billing" {
			t.Errorf("GetAPIKey: got metadata %v, %v; want %v", got.Metadata, err, meta)
		}
		tooMany := account.Metadata{}
		for i := range account.MaxMetadataKeys + 1 {
			tooMany[itoa(int64(i))] = "v"
		}
		_, _, err = e.svc.CreateAPIKey(e.ctx, e.admin, account.NewAPIKey{Name: "ci", Scopes: []string{"read:users"}, Metadata: tooMany})
		wantFields(t, err, "metadata")
	})
	t.Run("NeverOutlivesCreator", func(t *testing.T) {
		e := newEnv(t)
		creator, _ := e.key(t, "1h", account.ScopeWriteAPIKeys, "read:users")
		k, _, err := e.svc.CreateAPIKey(e.ctx, creator, account.NewAPIKey{Name: "child", Scopes: []string{"read:users"}})
		if err != nil {
			t.Fatalf("CreateAPIKey: %v", err)
		}
		if !k.ExpiresAt.Equal(creator.KeyExpiresAt) {
			t.Errorf("ExpiresAt: got %v, want the creator's %v", k.ExpiresAt, creator.KeyExpiresAt)
		}
	})
	t.Run("BelowItsCreator", func(t *testing.T) {
		// The admin key's keys have no ancestors; a key's keys have it and
		// its ancestors, and so do their tokens.
		e := newEnv(t)
		a, _ := e.key(t, "", account.ScopeWriteAPIKeys, "read:users")
		if len(a.KeyAncestors) != 0 || a.KeyBootstrap {
			t.Fatalf("a key of the admin key: ancestors %v, bootstrap %v; want none, false", a.KeyAncestors, a.KeyBootstrap)
		}
		kb, secret, err := e.svc.CreateAPIKey(e.ctx, a, account.NewAPIKey{Name: "b", Scopes: []string{account.ScopeWriteAPIKeys, "read:users"}})
		if err != nil {
			t.Fatalf("CreateAPIKey: %v", err)
		}
		b := e.auth(t, secret)
		kc, _, err := e.svc.CreateAPIKey(e.ctx, b, account.NewAPIKey{Name: "c", Scopes: []string{"read:users"}})
		if err != nil {
			t.Fatalf("CreateAPIKey: %v", err)
		}
		if !slices.Equal(kb.Ancestors, []string{a.KeyID}) || !slices.Equal(kc.Ancestors, []string{a.KeyID, b.KeyID}) || kc.CreatedBy != b.KeyID {
			t.Errorf("Ancestors: got %v and %v (created by %s), want [a] and [a b]", kb.Ancestors, kc.Ancestors, kc.CreatedBy)
		}
		_, c, err := e.svc.IssueToken(e.ctx, b, account.TokenRequest{Scopes: []string{"read:users"}})
		if err != nil {
			t.Fatalf("IssueToken: %v", err)
		}
		if !slices.Equal(c.KeyAncestors, []string{a.KeyID}) {
			t.Errorf("token KeyAncestors: got %v, want [a]", c.KeyAncestors)
		}
	})
	t.Run("ErrTooDeep", func(t *testing.T) {
		e := newEnv(t)
		p, _ := e.key(t, "", account.ScopeWriteAPIKeys)
		for range account.MaxKeyAncestors {
			_, secret, err := e.svc.CreateAPIKey(e.ctx, p, account.NewAPIKey{Name: "deeper", Scopes: []string{account.ScopeWriteAPIKeys}})
			if err != nil {
				t.Fatalf("CreateAPIKey %d levels down: %v", len(p.KeyAncestors)+1, err)
			}
			p = e.auth(t, secret)
		}
		_, _, err := e.svc.CreateAPIKey(e.ctx, p, account.NewAPIKey{Name: "too deep", Scopes: []string{account.ScopeWriteAPIKeys}})
		wantCode(t, err, account.CodeForbidden)
	})
	t.Run("ErrCreatorDeleted", func(t *testing.T) {
		// The caller's key is deleted between authentication and create:
		// nothing is created below it.
		e := newEnv(t)
		p, _ := e.key(t, "", account.ScopeWriteAPIKeys)
		if err := e.svc.DeleteAPIKey(e.ctx, e.admin, p.KeyID); err != nil {
			t.Fatalf("DeleteAPIKey: %v", err)
		}
		_, _, err := e.svc.CreateAPIKey(e.ctx, p, account.NewAPIKey{Name: "orphan", Scopes: []string{account.ScopeWriteAPIKeys}})
		wantCode(t, err, account.CodeUnauthorized)
	})
	t.Run("ErrInsufficientScope", func(t *testing.T) {
		// A key cannot grant what it does not hold.
		e := newEnv(t)
		p, _ := e.key(t, "", account.ScopeWriteAPIKeys, "read:*")
		_, _, err := e.svc.CreateAPIKey(e.ctx, p, account.NewAPIKey{Name: "wider", Scopes: []string{"write:users"}})
		wantCode(t, err, account.CodeInsufficientScope)
		_, _, err = e.svc.CreateAPIKey(e.ctx, p, account.NewAPIKey{Name: "wider", Scopes: []string{"*:users"}})
		wantCode(t, err, account.CodeInsufficientScope)
		if got, want := asError(t, err).Message, "the API key does not hold the requested scope *:users"; !strings.HasPrefix(got, want) {
			t.Errorf("message: got %q, want it to start %q", got, want)
		}
	})
	t.Run("ErrForbiddenForTokens", func(t *testing.T) {
		e := newEnv(t)
		tok, _, err := e.svc.IssueToken(e.ctx, e.admin, account.TokenRequest{Scopes: []string{account.ScopeAll}})
		if err != nil {
			t.Fatalf("IssueToken: %v", err)
		}
		_, _, err = e.svc.CreateAPIKey(e.ctx, e.auth(t, tok), account.NewAPIKey{Name: "k", Scopes: []string{"read:users"}})
		wantCode(t, err, account.CodeForbidden)
	})
	t.Run("ErrInvalidRequest", func(t *testing.T) {
		e := newEnv(t)
		_, _, err := e.svc.CreateAPIKey(e.ctx, e.admin, account.NewAPIKey{Name: "", Scopes: nil, ExpiresIn: "30s"})
		wantFields(t, err, "name", "scopes", "expires_in")
		_, _, err = e.svc.CreateAPIKey(e.ctx, e.admin, account.NewAPIKey{Name: "k", Scopes: []string{"read:users", "bad"}})
		wantFields(t, err, "scopes[1]")
		_, _, err = e.svc.CreateAPIKey(e.ctx, e.admin, account.NewAPIKey{Name: "k", Scopes: slices.Repeat([]string{"read:users"}, 33)})
		wantFields(t, err, "scopes")
		_, _, err = e.svc.CreateAPIKey(e.ctx, e.admin, account.NewAPIKey{Name: "k", Scopes: []string{"read:users", "read:users", "bad"}})
		wantFields(t, err, "scopes[2]")
	})
}

func TestService_DeleteAPIKey(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		e := newEnv(t)
		p, secret := e.key(t, "", "read:users")
		tok, _, err := e.svc.IssueToken(e.ctx, p, account.TokenRequest{Scopes: []string{"read:users"}})
		if err != nil {
			t.Fatalf("IssueToken: %v", err)
		}
		if err := e.svc.DeleteAPIKey(e.ctx, e.admin, p.KeyID); err != nil {
			t.Fatalf("DeleteAPIKey: %v", err)
		}
		_, err = e.svc.Authenticate(e.ctx, secret)
		wantCode(t, err, account.CodeUnauthorized)
		_, err = e.svc.Authenticate(e.ctx, tok)
		wantCode(t, err, account.CodeUnauthorized)
		v, err := e.svc.VerifyToken(e.ctx, tok)
		if err != nil || v.Valid || v.Reason != account.ReasonRevoked {
			t.Errorf("VerifyToken of a deleted key's token: got %+v, %v; want revoked", v, err)
		}
	})
	t.Run("Descendants", func(t *testing.T) {
		// The keys below a deleted key, and their tokens, go with it.
		e := newEnv(t)
		a, _ := e.key(t, "", account.ScopeWriteAPIKeys, "read:users")
		_, bSecret, err := e.svc.CreateAPIKey(e.ctx, a, account.NewAPIKey{Name: "b", Scopes: []string{account.ScopeWriteAPIKeys, "read:users"}})
		if err != nil {
			t.Fatalf("CreateAPIKey: %v", err)
		}
		b := e.auth(t, bSecret)
		_, cSecret, err := e.svc.CreateAPIKey(e.ctx, b, account.NewAPIKey{Name: "c", Scopes: []string{"read:users"}})
		if err != nil {
			t.Fatalf("CreateAPIKey: %v", err)
		}
		c := e.auth(t, cSecret)
		tok, _, err := e.svc.IssueToken(e.ctx, c, account.TokenRequest{Scopes: []string{"read:users"}})
		if err != nil {
			t.Fatalf("IssueToken: %v", err)
		}
		if err := e.svc.DeleteAPIKey(e.ctx, e.admin, a.KeyID); err != nil {
			t.Fatalf("DeleteAPIKey: %v", err)
		}
		for _, cred := range []string{bSecret, cSecret, tok} {
			_, err := e.svc.Authenticate(e.ctx, cred)
			wantCode(t, err, account.CodeUnauthorized)
		}
		if v, err := e.svc.VerifyToken(e.ctx, tok); err != nil || v.Valid || v.Reason != account.ReasonRevoked {
			t.Errorf("VerifyToken of a token two keys below the deleted one: got %+v, %v; want revoked", v, err)
		}
		for _, id := range []string{b.KeyID, c.KeyID} {
			_, err := e.svc.GetAPIKey(e.ctx, e.admin, id)
			wantCode(t, err, account.CodeNotFound)
		}
	})
	t.Run("ErrAncestor", func(t *testing.T) {
		// A key below another, even with the same grants, cannot delete the
		// keys above it: a leaked child would otherwise take down its creator
		// and every sibling with it.
		e := newEnv(t)
		a, _ := e.key(t, "", account.ScopeWriteAPIKeys, account.ScopeReadAPIKeys)
		_, bSecret, err := e.svc.CreateAPIKey(e.ctx, a, account.NewAPIKey{Name: "b", Scopes: []string{account.ScopeWriteAPIKeys, account.ScopeReadAPIKeys}})
		if err != nil {
			t.Fatalf("CreateAPIKey: %v", err)
		}
		b := e.auth(t, bSecret)
		_, cSecret, err := e.svc.CreateAPIKey(e.ctx, b, account.NewAPIKey{Name: "c", Scopes: []string{account.ScopeWriteAPIKeys, account.ScopeReadAPIKeys}})
		if err != nil {
			t.Fatalf("CreateAPIKey: %v", err)
		}
		c := e.auth(t, cSecret)
		for _, id := range []string{a.KeyID, b.KeyID} {
			wantCode(t, e.svc.DeleteAPIKey(e.ctx, c, id), account.CodeForbidden)
		}
		// Nothing was deleted; the keys above may still delete below.
		e.auth(t, bSecret)
		if err := e.svc.DeleteAPIKey(e.ctx, b, c.KeyID); err != nil {
			t.Fatalf("DeleteAPIKey of a key below the caller: %v", err)
		}
	})
	t.Run("ErrOutsideGrants", func(t *testing.T) {
		// A key deletes and reads only keys whose grants are within its own.
		e := newEnv(t)
		p, _ := e.key(t, "", account.ScopeWriteAPIKeys, account.ScopeReadAPIKeys)
		wider, _ := e.key(t, "", account.ScopeAll)
		for _, id := range []string{wider.KeyID, e.admin.KeyID} {
			err := e.svc.DeleteAPIKey(e.ctx, p, id)
			wantCode(t, err, account.CodeInsufficientScope)
			if got := asError(t, err).Scope; got != account.ScopeAll {
				t.Errorf("Scope of the error: got %q, want %q", got, account.ScopeAll)
			}
			_, err = e.svc.GetAPIKey(e.ctx, p, id)
			wantCode(t, err, account.CodeInsufficientScope)
		}
		list, err := e.svc.ListAPIKeys(e.ctx, p, account.PageRequest{Limit: "100"}, account.APIKeyFilter{})
		if err != nil {
			t.Fatalf("ListAPIKeys: %v", err)
		}
		if len(list.Items) != 1 || list.Items[0].ID != p.KeyID {
			t.Errorf("ListAPIKeys: got %v, want only the caller's own key", list.Items)
		}
		e.auth(t, e.secret)
	})
	t.Run("ErrForbiddenBootstrap", func(t *testing.T) {
		e := newEnv(t)
		wantCode(t, e.svc.DeleteAPIKey(e.ctx, e.admin, e.admin.KeyID), account.CodeForbidden)
		e.auth(t, e.secret)
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		e := newEnv(t)
		wantCode(t, e.svc.DeleteAPIKey(e.ctx, e.admin, account.NewID(account.PrefixAPIKey, e.svc.Now())), account.CodeNotFound)
		wantCode(t, e.svc.DeleteAPIKey(e.ctx, e.admin, "key_bogus"), account.CodeNotFound)
	})
}

func TestService_UpdateAPIKey(t *testing.T) {
	ptr := func(s string) *string { return &s }
	enabled := func(b bool) *bool { return &b }
	t.Run("OK", func(t *testing.T) {
		e := newEnv(t)
		p, _ := e.key(t, "", "read:users")
		meta := account.Metadata{"team": "billing"}
		k, err := e.svc.UpdateAPIKey(e.ctx, e.admin, p.KeyID, account.APIKeyUpdate{Name: ptr("  renamed  "), Metadata: &meta})
		if err != nil {
			t.Fatalf("UpdateAPIKey: %v", err)
		}
		if k.Name != "renamed" || k.Metadata["team"] != "billing" || k.Disabled {
			t.Errorf("UpdateAPIKey: got name %q, metadata %v, disabled %v; want renamed, team=billing, enabled", k.Name, k.Metadata, k.Disabled)
		}
		none := account.Metadata{}
		k, err = e.svc.UpdateAPIKey(e.ctx, e.admin, p.KeyID, account.APIKeyUpdate{Metadata: &none})
		if err != nil || len(k.Metadata) != 0 || k.Name != "renamed" {
			t.Errorf("UpdateAPIKey removing the metadata: got %+v, %v; want no metadata, the name kept", k, err)
		}
	})
	t.Run("Disable", func(t *testing.T) {
		// A disabled key's secret and tokens are refused, verify says
		// disabled; the keys below it are paused with it. Enabling it
		// restores every one of them.
		e := newEnv(t)
		p, secret := e.key(t, "", account.ScopeWriteAPIKeys, "read:users")
		tok, _, err := e.svc.IssueToken(e.ctx, p, account.TokenRequest{Scopes: []string{"read:users"}})
		if err != nil {
			t.Fatalf("IssueToken: %v", err)
		}
		_, childSecret, err := e.svc.CreateAPIKey(e.ctx, p, account.NewAPIKey{Name: "child", Scopes: []string{"read:users"}})
		if err != nil {
			t.Fatalf("CreateAPIKey: %v", err)
		}
		childTok, _, err := e.svc.IssueToken(e.ctx, e.auth(t, childSecret), account.TokenRequest{Scopes: []string{"read:users"}})
		if err != nil {
			t.Fatalf("IssueToken: %v", err)
		}
		k, err := e.svc.UpdateAPIKey(e.ctx, e.admin, p.KeyID, account.APIKeyUpdate{Enabled: enabled(false)})
		if err != nil || !k.Disabled {
			t.Fatalf("UpdateAPIKey disabling: got %+v, %v", k, err)
		}
		for _, tc := range []struct{ what, credential, message string }{
			{"the key's secret", secret, "the API key is disabled"},
			{"the key's token", tok, "the access token's API key is disabled"},
			{"the secret of a key below it", childSecret, "a key above the API key is disabled"},
			{"the token of a key below it", childTok, "a key above the access token's API key is disabled"},
		} {
			_, err := e.svc.Authenticate(e.ctx, tc.credential)
			wantCode(t, err, account.CodeUnauthorized)
			if got := asError(t, err).Message; got != tc.message {
				t.Errorf("%s: message %q, want %q", tc.what, got, tc.message)
			}
		}
		for _, tk := range []string{tok, childTok} {
			if v, err := e.svc.VerifyToken(e.ctx, tk); err != nil || v.Valid || v.Reason != account.ReasonDisabled {
				t.Errorf("VerifyToken of a token of a paused key: got %+v, %v; want disabled", v, err)
			}
		}
		if _, err := e.svc.UpdateAPIKey(e.ctx, e.admin, p.KeyID, account.APIKeyUpdate{Enabled: enabled(true)}); err != nil {
			t.Fatalf("UpdateAPIKey enabling: %v", err)
		}
		for _, cred := range []string{secret, tok, childSecret, childTok} {
			e.auth(t, cred)
		}
		if v, err := e.svc.VerifyToken(e.ctx, childTok); err != nil || !v.Valid {
			t.Errorf("VerifyToken after enabling: got %+v, %v; want valid", v, err)
		}
	})
	t.Run("DisabledExpiredStaysExpired", func(t *testing.T) {
		// A token that expires while its key is disabled is expired, not
		// restored, once the key is enabled.
		e := newEnv(t)
		p, _ := e.key(t, "", "read:users")
		tok, _, err := e.svc.IssueToken(e.ctx, p, account.TokenRequest{Scopes: []string{"read:users"}, ExpiresIn: "1m"})
		if err != nil {
			t.Fatalf("IssueToken: %v", err)
		}
		if _, err := e.svc.UpdateAPIKey(e.ctx, e.admin, p.KeyID, account.APIKeyUpdate{Enabled: enabled(false)}); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(2 * time.Minute)
		if _, err := e.svc.UpdateAPIKey(e.ctx, e.admin, p.KeyID, account.APIKeyUpdate{Enabled: enabled(true)}); err != nil {
			t.Fatal(err)
		}
		if v, err := e.svc.VerifyToken(e.ctx, tok); err != nil || v.Reason != account.ReasonExpired {
			t.Errorf("VerifyToken: got %+v, %v; want expired", v, err)
		}
	})
	t.Run("ErrForbiddenBootstrap", func(t *testing.T) {
		// The admin key cannot be disabled; renaming it is harmless.
		e := newEnv(t)
		_, err := e.svc.UpdateAPIKey(e.ctx, e.admin, e.admin.KeyID, account.APIKeyUpdate{Enabled: enabled(false)})
		wantCode(t, err, account.CodeForbidden)
		e.auth(t, e.secret)
		if _, err := e.svc.UpdateAPIKey(e.ctx, e.admin, e.admin.KeyID, account.APIKeyUpdate{Name: ptr("admin"), Enabled: enabled(true)}); err != nil {
			t.Errorf("UpdateAPIKey renaming the admin key: %v", err)
		}
	})
	t.Run("ErrAncestor", func(t *testing.T) {
		// A key cannot change, nor disable, the keys above it.
		e := newEnv(t)
		a, _ := e.key(t, "", account.ScopeWriteAPIKeys)
		_, bSecret, err := e.svc.CreateAPIKey(e.ctx, a, account.NewAPIKey{Name: "b", Scopes: []string{account.ScopeWriteAPIKeys}})
		if err != nil {
			t.Fatalf("CreateAPIKey: %v", err)
		}
		b := e.auth(t, bSecret)
		_, err = e.svc.UpdateAPIKey(e.ctx, b, a.KeyID, account.APIKeyUpdate{Enabled: enabled(false)})
		wantCode(t, err, account.CodeForbidden)
		e.auth(t, bSecret)
		// Itself, it may.
		if _, err := e.svc.UpdateAPIKey(e.ctx, b, b.KeyID, account.APIKeyUpdate{Name: ptr("me")}); err != nil {
			t.Errorf("UpdateAPIKey of the caller's own key: %v", err)
		}
	})
	t.Run("ErrPreviousSecret", func(t *testing.T) {
		// The previous secret authenticates and issues tokens, but
		// manages no key, its own or another.
		e := newEnv(t)
		p, old := e.key(t, "", account.ScopeWriteAPIKeys, "read:users")
		if _, _, err := e.svc.RotateAPIKey(e.ctx, e.admin, p.KeyID, account.KeyRotationRequest{ExpiresIn: "1h"}); err != nil {
			t.Fatal(err)
		}
		prev := e.auth(t, old)
		if !prev.PreviousSecret || prev.KeyID != p.KeyID {
			t.Fatalf("the previous secret's principal: %+v", prev)
		}
		_, _, err := e.svc.RotateAPIKey(e.ctx, prev, p.KeyID, account.KeyRotationRequest{ExpiresIn: "0s"})
		wantCode(t, err, account.CodePreviousSecret)
		name := "x"
		_, err = e.svc.UpdateAPIKey(e.ctx, prev, p.KeyID, account.APIKeyUpdate{Name: &name})
		wantCode(t, err, account.CodePreviousSecret)
		wantCode(t, e.svc.DeleteAPIKey(e.ctx, prev, p.KeyID), account.CodePreviousSecret)
		_, _, err = e.svc.CreateAPIKey(e.ctx, prev, account.NewAPIKey{Name: "x", Scopes: []string{"read:users"}})
		wantCode(t, err, account.CodePreviousSecret)
		if _, _, err := e.svc.IssueToken(e.ctx, prev, account.TokenRequest{Scopes: []string{"read:users"}}); err != nil {
			t.Errorf("IssueToken with the previous secret: %v", err)
		}
		e.auth(t, old)
	})
	t.Run("ErrOutsideGrants", func(t *testing.T) {
		e := newEnv(t)
		p, _ := e.key(t, "", account.ScopeWriteAPIKeys)
		wider, widerSecret := e.key(t, "", account.ScopeAll)
		_, err := e.svc.UpdateAPIKey(e.ctx, p, wider.KeyID, account.APIKeyUpdate{Enabled: enabled(false)})
		wantCode(t, err, account.CodeInsufficientScope)
		e.auth(t, widerSecret)
	})
	t.Run("ErrForbiddenForTokens", func(t *testing.T) {
		e := newEnv(t)
		tok, _, err := e.svc.IssueToken(e.ctx, e.admin, account.TokenRequest{Scopes: []string{account.ScopeAll}})
		if err != nil {
			t.Fatal(err)
		}
		_, err = e.svc.UpdateAPIKey(e.ctx, e.auth(t, tok), e.admin.KeyID, account.APIKeyUpdate{Name: ptr("x")})
		wantCode(t, err, account.CodeForbidden)
	})
	t.Run("ErrInvalidRequest", func(t *testing.T) {
		e := newEnv(t)
		p, _ := e.key(t, "", "read:users")
		_, err := e.svc.UpdateAPIKey(e.ctx, e.admin, p.KeyID, account.APIKeyUpdate{})
		wantFields(t, err) // a change of nothing, as for users: no field to name
		big := account.Metadata{"k": strings.Repeat("v", account.MaxMetadataValueLength+1)}
		_, err = e.svc.UpdateAPIKey(e.ctx, e.admin, p.KeyID, account.APIKeyUpdate{Name: ptr(""), Metadata: &big})
		wantFields(t, err, "name", "metadata.k")
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		e := newEnv(t)
		for _, id := range []string{account.NewID(account.PrefixAPIKey, e.svc.Now()), "key_bogus"} {
			_, err := e.svc.UpdateAPIKey(e.ctx, e.admin, id, account.APIKeyUpdate{Name: ptr("x")})
			wantCode(t, err, account.CodeNotFound)
		}
	})
}

func TestService_RotateAPIKey(t *testing.T) {
	t.Run("WithGrace", func(t *testing.T) {
		// The new secret works at once; the old one until the grace period
		// ends, then not; the key's id, grants and tokens stay.
		e := newEnv(t)
		p, old := e.key(t, "", "read:users")
		tok, _, err := e.svc.IssueToken(e.ctx, p, account.TokenRequest{Scopes: []string{"read:users"}, ExpiresIn: "24h"})
		if err != nil {
			t.Fatalf("IssueToken: %v", err)
		}
		k, secret, err := e.svc.RotateAPIKey(e.ctx, e.admin, p.KeyID, account.KeyRotationRequest{ExpiresIn: "1h"})
		if err != nil {
			t.Fatalf("RotateAPIKey: %v", err)
		}
		if k.ID != p.KeyID || secret == old || k.Last4 != secret[len(secret)-4:] || !slices.Equal(k.Scopes, []string{"read:users"}) {
			t.Errorf("RotateAPIKey: got %+v and secret …%s, want the same key with a new secret", k, secret[len(secret)-4:])
		}
		if want := e.svc.Now().Add(time.Hour); !k.PreviousExpiresAt.Equal(want) {
			t.Errorf("PreviousExpiresAt: got %v, want %v", k.PreviousExpiresAt, want)
		}
		for _, cred := range []string{secret, old, tok} {
			if got := e.auth(t, cred); got.KeyID != p.KeyID {
				t.Errorf("after the rotation a credential authenticates as %s, want %s", got.KeyID, p.KeyID)
			}
		}
		e.clock.Advance(time.Hour)
		_, err = e.svc.Authenticate(e.ctx, old)
		wantCode(t, err, account.CodeUnauthorized)
		e.auth(t, secret)
		e.auth(t, tok)
		got, err := e.svc.GetAPIKey(e.ctx, e.admin, p.KeyID)
		if err != nil || len(got.PreviousHash) != 0 || !got.PreviousExpiresAt.IsZero() {
			t.Errorf("GetAPIKey after the grace period: got %+v, %v; want no previous secret", got, err)
		}
	})
	t.Run("WithoutGrace", func(t *testing.T) {
		e := newEnv(t)
		p, old := e.key(t, "", "read:users")
		for _, expiresIn := range []string{"", "0s"} {
			_, secret, err := e.svc.RotateAPIKey(e.ctx, e.admin, p.KeyID, account.KeyRotationRequest{ExpiresIn: expiresIn})
			if err != nil {
				t.Fatalf("RotateAPIKey(%q): %v", expiresIn, err)
			}
			_, err = e.svc.Authenticate(e.ctx, old)
			wantCode(t, err, account.CodeUnauthorized)
			e.auth(t, secret)
			old = secret
		}
	})
	t.Run("AgainEndsTheOlderGrace", func(t *testing.T) {
		e := newEnv(t)
		p, first := e.key(t, "", "read:users")
		_, second, err := e.svc.RotateAPIKey(e.ctx, e.admin, p.KeyID, account.KeyRotationRequest{ExpiresIn: "7d"})
		if err != nil {
			t.Fatal(err)
		}
		_, third, err := e.svc.RotateAPIKey(e.ctx, e.admin, p.KeyID, account.KeyRotationRequest{ExpiresIn: "1h"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = e.svc.Authenticate(e.ctx, first)
		wantCode(t, err, account.CodeUnauthorized)
		e.auth(t, second)
		e.auth(t, third)
	})
	t.Run("GraceNeverOutlivesTheKey", func(t *testing.T) {
		e := newEnv(t)
		p, _ := e.key(t, "2h", "read:users")
		k, _, err := e.svc.RotateAPIKey(e.ctx, e.admin, p.KeyID, account.KeyRotationRequest{ExpiresIn: "7d"})
		if err != nil {
			t.Fatal(err)
		}
		if !k.PreviousExpiresAt.Equal(k.ExpiresAt) {
			t.Errorf("PreviousExpiresAt: got %v, want the key's expiry %v", k.PreviousExpiresAt, k.ExpiresAt)
		}
	})
	t.Run("Itself", func(t *testing.T) {
		// A key may rotate its own secret, with the grants rule of creation.
		e := newEnv(t)
		p, old := e.key(t, "", account.ScopeWriteAPIKeys)
		_, secret, err := e.svc.RotateAPIKey(e.ctx, p, p.KeyID, account.KeyRotationRequest{ExpiresIn: "10m"})
		if err != nil {
			t.Fatalf("RotateAPIKey of the caller's own key: %v", err)
		}
		e.auth(t, secret)
		e.auth(t, old)
	})
	t.Run("DisabledWithEitherSecret", func(t *testing.T) {
		e := newEnv(t)
		p, old := e.key(t, "", "read:users")
		_, secret, err := e.svc.RotateAPIKey(e.ctx, e.admin, p.KeyID, account.KeyRotationRequest{ExpiresIn: "1h"})
		if err != nil {
			t.Fatal(err)
		}
		off := false
		if _, err := e.svc.UpdateAPIKey(e.ctx, e.admin, p.KeyID, account.APIKeyUpdate{Enabled: &off}); err != nil {
			t.Fatal(err)
		}
		for _, cred := range []string{old, secret} {
			_, err := e.svc.Authenticate(e.ctx, cred)
			wantCode(t, err, account.CodeUnauthorized)
		}
	})
	t.Run("ErrForbidden", func(t *testing.T) {
		// Not the bootstrap key, not a key above the caller's.
		e := newEnv(t)
		_, _, err := e.svc.RotateAPIKey(e.ctx, e.admin, e.admin.KeyID, account.KeyRotationRequest{})
		wantCode(t, err, account.CodeForbidden)
		e.auth(t, e.secret)
		a, aSecret := e.key(t, "", account.ScopeWriteAPIKeys)
		_, bSecret, err := e.svc.CreateAPIKey(e.ctx, a, account.NewAPIKey{Name: "b", Scopes: []string{account.ScopeWriteAPIKeys}})
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = e.svc.RotateAPIKey(e.ctx, e.auth(t, bSecret), a.KeyID, account.KeyRotationRequest{})
		wantCode(t, err, account.CodeForbidden)
		e.auth(t, aSecret)
		tok, _, err := e.svc.IssueToken(e.ctx, a, account.TokenRequest{Scopes: []string{account.ScopeWriteAPIKeys}})
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = e.svc.RotateAPIKey(e.ctx, e.auth(t, tok), a.KeyID, account.KeyRotationRequest{})
		wantCode(t, err, account.CodeForbidden)
	})
	t.Run("ErrOutsideGrants", func(t *testing.T) {
		e := newEnv(t)
		p, _ := e.key(t, "", account.ScopeWriteAPIKeys)
		wider, widerSecret := e.key(t, "", account.ScopeAll)
		_, _, err := e.svc.RotateAPIKey(e.ctx, p, wider.KeyID, account.KeyRotationRequest{})
		wantCode(t, err, account.CodeInsufficientScope)
		e.auth(t, widerSecret)
	})
	t.Run("ErrInvalidRequest", func(t *testing.T) {
		e := newEnv(t)
		p, secret := e.key(t, "", "read:users")
		for _, expiresIn := range []string{"8d", "1w", "-1s", "soon"} {
			_, _, err := e.svc.RotateAPIKey(e.ctx, e.admin, p.KeyID, account.KeyRotationRequest{ExpiresIn: expiresIn})
			wantFields(t, err, "expires_in")
		}
		e.auth(t, secret)
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		e := newEnv(t)
		_, _, err := e.svc.RotateAPIKey(e.ctx, e.admin, account.NewID(account.PrefixAPIKey, e.svc.Now()), account.KeyRotationRequest{})
		wantCode(t, err, account.CodeNotFound)
	})
}

func TestService_APIKeyOwners(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		// The organization and the owner are on the key and in its
		// tokens, which verify says them.
		e := newEnv(t)
		o := e.org(t, "acme")
		k, secret, err := e.svc.CreateAPIKey(e.ctx, e.admin, account.NewAPIKey{Name: "acme ci", Scopes: []string{"read:users"}, OrganizationID: o.ID, OwnerID: "crm:4711"})
		if err != nil {
			t.Fatalf("CreateAPIKey: %v", err)
		}
		if k.OrganizationID != o.ID || k.OwnerID != "crm:4711" {
			t.Errorf("CreateAPIKey: organization %q, owner %q", k.OrganizationID, k.OwnerID)
		}
		p := e.auth(t, secret)
		tok, c, err := e.svc.IssueToken(e.ctx, p, account.TokenRequest{Scopes: []string{"read:users"}})
		if err != nil {
			t.Fatal(err)
		}
		if c.OrganizationID != o.ID || c.OwnerID != "crm:4711" {
			t.Errorf("token claims: organization %q, owner %q", c.OrganizationID, c.OwnerID)
		}
		v, err := e.svc.VerifyToken(e.ctx, tok)
		if err != nil || !v.Valid || v.Claims.OrganizationID != o.ID || v.Claims.OwnerID != "crm:4711" {
			t.Errorf("VerifyToken: got %+v, %v", v, err)
		}
	})
	t.Run("ErrInvalid", func(t *testing.T) {
		e := newEnv(t)
		for _, orgID := range []string{account.NewID(account.PrefixOrganization, e.svc.Now()), "org_bogus", "usr_01JD3Q8B2C3D4E5F6G7H8J9K0M"} {
			_, _, err := e.svc.CreateAPIKey(e.ctx, e.admin, account.NewAPIKey{Name: "k", Scopes: []string{"read:users"}, OrganizationID: orgID})
			wantCode(t, err, account.CodeNotFound)
		}
		for _, owner := range []string{" padded", strings.Repeat("x", account.MaxExternalIDLength+1), "tab\t"} {
			_, _, err := e.svc.CreateAPIKey(e.ctx, e.admin, account.NewAPIKey{Name: "k", Scopes: []string{"read:users"}, OwnerID: owner})
			wantFields(t, err, "owner_id")
		}
		_, err := e.svc.ListAPIKeys(e.ctx, e.admin, account.PageRequest{}, account.APIKeyFilter{OrganizationID: "org_bogus", OwnerID: " x"})
		wantFields(t, err, "organization_id", "owner_id")
	})
	t.Run("BoundCaller", func(t *testing.T) {
		// A key bound to an organization creates keys bound to it, and
		// sees, changes and lists the keys of that organization only.
		e := newEnv(t)
		acme, globex := e.org(t, "acme"), e.org(t, "globex")
		_, secret, err := e.svc.CreateAPIKey(e.ctx, e.admin, account.NewAPIKey{Name: "acme admin", Scopes: []string{account.ScopeReadAPIKeys, account.ScopeWriteAPIKeys}, OrganizationID: acme.ID})
		if err != nil {
			t.Fatal(err)
		}
		p := e.auth(t, secret)
		child, _, err := e.svc.CreateAPIKey(e.ctx, p, account.NewAPIKey{Name: "acme ci", Scopes: []string{account.ScopeReadAPIKeys}})
		if err != nil || child.OrganizationID != acme.ID {
			t.Fatalf("CreateAPIKey by a bound key: got %+v, %v; want the key bound to acme", child, err)
		}
		_, _, err = e.svc.CreateAPIKey(e.ctx, p, account.NewAPIKey{Name: "x", Scopes: []string{account.ScopeReadAPIKeys}, OrganizationID: globex.ID})
		wantCode(t, err, account.CodeForbidden)
		foreign, _, err := e.svc.CreateAPIKey(e.ctx, e.admin, account.NewAPIKey{Name: "globex", Scopes: []string{account.ScopeReadAPIKeys}, OrganizationID: globex.ID})
		if err != nil {
			t.Fatal(err)
		}
		unbound, _ := e.key(t, "", account.ScopeReadAPIKeys)
		for _, id := range []string{foreign.ID, unbound.KeyID} {
			_, err := e.svc.GetAPIKey(e.ctx, p, id)
			wantCode(t, err, account.CodeNotFound)
			wantCode(t, e.svc.DeleteAPIKey(e.ctx, p, id), account.CodeNotFound)
			name := "mine now"
			_, err = e.svc.UpdateAPIKey(e.ctx, p, id, account.APIKeyUpdate{Name: &name})
			wantCode(t, err, account.CodeNotFound)
			_, _, err = e.svc.RotateAPIKey(e.ctx, p, id, account.KeyRotationRequest{})
			wantCode(t, err, account.CodeNotFound)
		}
		list, err := e.svc.ListAPIKeys(e.ctx, p, account.PageRequest{Limit: "100"}, account.APIKeyFilter{})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Items) != 2 || list.Items[0].ID != child.ID || list.Items[1].ID != p.KeyID {
			t.Errorf("ListAPIKeys by a bound key: got %v, want its organization's two keys", list.Items)
		}
		_, err = e.svc.ListAPIKeys(e.ctx, p, account.PageRequest{}, account.APIKeyFilter{OrganizationID: globex.ID})
		wantCode(t, err, account.CodeForbidden)
	})
	t.Run("OwnerInherited", func(t *testing.T) {
		// A key with an owner creates keys of that owner, and of no
		// other: its tokens would otherwise claim any owner_id.
		e := newEnv(t)
		_, secret, err := e.svc.CreateAPIKey(e.ctx, e.admin, account.NewAPIKey{Name: "crm", Scopes: []string{account.ScopeWriteAPIKeys, "read:users"}, OwnerID: "crm:4711"})
		if err != nil {
			t.Fatal(err)
		}
		p := e.auth(t, secret)
		for _, owner := range []string{"", "crm:4711"} {
			child, childSecret, err := e.svc.CreateAPIKey(e.ctx, p, account.NewAPIKey{Name: "ci", Scopes: []string{"read:users"}, OwnerID: owner})
			if err != nil || child.OwnerID != "crm:4711" {
				t.Fatalf("CreateAPIKey by a key with an owner, owner_id %q: got %+v, %v; want owner crm:4711", owner, child, err)
			}
			_, c, err := e.svc.IssueToken(e.ctx, e.auth(t, childSecret), account.TokenRequest{Scopes: []string{"read:users"}})
			if err != nil || c.OwnerID != "crm:4711" {
				t.Errorf("the child's token: owner %q, %v", c.OwnerID, err)
			}
		}
		_, _, err = e.svc.CreateAPIKey(e.ctx, p, account.NewAPIKey{Name: "x", Scopes: []string{"read:users"}, OwnerID: "crm:42"})
		wantCode(t, err, account.CodeForbidden)
		// A key without an owner names any.
		free, _ := e.key(t, "", account.ScopeWriteAPIKeys, "read:users")
		if k, _, err := e.svc.CreateAPIKey(e.ctx, free, account.NewAPIKey{Name: "x", Scopes: []string{"read:users"}, OwnerID: "crm:42"}); err != nil || k.OwnerID != "crm:42" {
			t.Errorf("CreateAPIKey by a key without an owner: got %+v, %v", k, err)
		}
	})
	t.Run("OwnerConfined", func(t *testing.T) {
		// A key with an owner sees, changes and lists the keys of that
		// owner only: rotating another owner's key would hand it that
		// key's secret, and tokens that say that owner.
		e := newEnv(t)
		_, aliceSecret, err := e.svc.CreateAPIKey(e.ctx, e.admin, account.NewAPIKey{Name: "alice", Scopes: []string{account.ScopeReadAPIKeys, account.ScopeWriteAPIKeys, "read:orders"}, OwnerID: "alice"})
		if err != nil {
			t.Fatal(err)
		}
		bob, _, err := e.svc.CreateAPIKey(e.ctx, e.admin, account.NewAPIKey{Name: "bob", Scopes: []string{"read:orders"}, OwnerID: "bob"})
		if err != nil {
			t.Fatal(err)
		}
		nobody, _, err := e.svc.CreateAPIKey(e.ctx, e.admin, account.NewAPIKey{Name: "nobody's", Scopes: []string{"read:orders"}})
		if err != nil {
			t.Fatal(err)
		}
		alice := e.auth(t, aliceSecret)
		for _, id := range []string{bob.ID, nobody.ID} {
			_, err := e.svc.GetAPIKey(e.ctx, alice, id)
			wantCode(t, err, account.CodeNotFound)
			_, _, err = e.svc.RotateAPIKey(e.ctx, alice, id, account.KeyRotationRequest{})
			wantCode(t, err, account.CodeNotFound)
			disabled := false
			_, err = e.svc.UpdateAPIKey(e.ctx, alice, id, account.APIKeyUpdate{Enabled: &disabled})
			wantCode(t, err, account.CodeNotFound)
			wantCode(t, e.svc.DeleteAPIKey(e.ctx, alice, id), account.CodeNotFound)
		}
		_, err = e.svc.ListAPIKeys(e.ctx, alice, account.PageRequest{}, account.APIKeyFilter{OwnerID: "bob"})
		wantCode(t, err, account.CodeForbidden)
		list, err := e.svc.ListAPIKeys(e.ctx, alice, account.PageRequest{Limit: "100"}, account.APIKeyFilter{})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Items) != 1 || list.Items[0].ID != alice.KeyID {
			t.Errorf("ListAPIKeys by a key with an owner: got %v, want its own key only", list.Items)
		}
		// Its own owner's keys it manages as before.
		child, _, err := e.svc.CreateAPIKey(e.ctx, alice, account.NewAPIKey{Name: "alice ci", Scopes: []string{"read:orders"}})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := e.svc.RotateAPIKey(e.ctx, alice, child.ID, account.KeyRotationRequest{}); err != nil {
			t.Errorf("RotateAPIKey of its owner's key: %v", err)
		}
	})
	t.Run("DeleteOrganization", func(t *testing.T) {
		// The organization's keys go with it: their secrets and tokens
		// stop at once.
		e := newEnv(t)
		o := e.org(t, "acme")
		_, secret, err := e.svc.CreateAPIKey(e.ctx, e.admin, account.NewAPIKey{Name: "acme", Scopes: []string{account.ScopeWriteAPIKeys, "read:users"}, OrganizationID: o.ID})
		if err != nil {
			t.Fatal(err)
		}
		p := e.auth(t, secret)
		_, childSecret, err := e.svc.CreateAPIKey(e.ctx, p, account.NewAPIKey{Name: "acme ci", Scopes: []string{"read:users"}})
		if err != nil {
			t.Fatal(err)
		}
		tok, _, err := e.svc.IssueToken(e.ctx, e.auth(t, childSecret), account.TokenRequest{Scopes: []string{"read:users"}})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.svc.DeleteOrganization(e.ctx, e.admin, o.ID); err != nil {
			t.Fatalf("DeleteOrganization: %v", err)
		}
		for _, cred := range []string{secret, childSecret, tok} {
			_, err := e.svc.Authenticate(e.ctx, cred)
			wantCode(t, err, account.CodeUnauthorized)
		}
		if v, err := e.svc.VerifyToken(e.ctx, tok); err != nil || v.Reason != account.ReasonRevoked {
			t.Errorf("VerifyToken of a token of a deleted organization's key: got %+v, %v; want revoked", v, err)
		}
		e.auth(t, e.secret)
	})
}

package account_test

import (
	"strings"
	"testing"

	"latchkey/pkg/account"
)

// below creates a key below the key of p, with scopes, and returns the
// principal that presents it.
func (e *env) below(tb testing.TB, p account.Principal, req account.NewAPIKey) account.Principal {
	tb.Helper()
	if req.Name == "" {
		req.Name = "below"
	}
	_, secret, err := e.svc.CreateAPIKey(e.ctx, p, req)
	if err != nil {
		tb.Fatalf("CreateAPIKey: %v", err)
	}
	return e.auth(tb, secret)
}

// TestService_UpdateAPIKey_LimitsFromAbove is hole 2 of issue 29: only a
// key above the target, or the bootstrap admin key, changes its rate
// limits or credits.
func TestService_UpdateAPIKey_LimitsFromAbove(t *testing.T) {
	credits := &account.CreditsRequest{Remaining: 2}
	limits := []account.RateLimitRequest{{Name: "uses", Limit: 10, Period: "1m"}}
	t.Run("ErrSiblingResetsCredits", func(t *testing.T) {
		e := newEnv(t)
		a, _ := e.key(t, "", account.ScopeWriteAPIKeys)
		b, _ := e.key(t, "", account.ScopeWriteAPIKeys)
		if _, err := e.svc.UpdateAPIKey(e.ctx, e.admin, b.KeyID, account.APIKeyUpdate{SetCredits: true, Credits: credits}); err != nil {
			t.Fatal(err)
		}
		_, err := e.svc.UpdateAPIKey(e.ctx, a, b.KeyID, account.APIKeyUpdate{SetCredits: true, Credits: &account.CreditsRequest{Remaining: 2}})
		wantCode(t, err, account.CodeForbidden)
	})
	t.Run("ErrUnlimitedSiblingLifts", func(t *testing.T) {
		e := newEnv(t)
		a, _ := e.key(t, "", account.ScopeWriteAPIKeys)
		b, _ := e.key(t, "", account.ScopeWriteAPIKeys)
		if _, err := e.svc.UpdateAPIKey(e.ctx, e.admin, b.KeyID, account.APIKeyUpdate{RateLimits: &limits}); err != nil {
			t.Fatal(err)
		}
		none := []account.RateLimitRequest{}
		_, err := e.svc.UpdateAPIKey(e.ctx, a, b.KeyID, account.APIKeyUpdate{RateLimits: &none})
		wantCode(t, err, account.CodeForbidden)
	})
	t.Run("ErrTenantManagerLiftsPlan", func(t *testing.T) {
		// The integrator (the admin key) makes a tenant's plan key and its
		// manager key, both bound to the organization: the manager is no
		// key above the plan key.
		e := newEnv(t)
		o := e.org(t, "tenant")
		_, planSecret, err := e.svc.CreateAPIKey(e.ctx, e.admin, account.NewAPIKey{Name: "plan", Scopes: []string{"read:orders"}, OrganizationID: o.ID, RateLimits: limits, Credits: credits})
		if err != nil {
			t.Fatal(err)
		}
		plan := e.auth(t, planSecret)
		_, mgrSecret, err := e.svc.CreateAPIKey(e.ctx, e.admin, account.NewAPIKey{Name: "manager", Scopes: []string{account.ScopeWriteAPIKeys, "read:orders"}, OrganizationID: o.ID})
		if err != nil {
			t.Fatal(err)
		}
		mgr := e.auth(t, mgrSecret)
		none := []account.RateLimitRequest{}
		_, err = e.svc.UpdateAPIKey(e.ctx, mgr, plan.KeyID, account.APIKeyUpdate{RateLimits: &none, SetCredits: true})
		wantCode(t, err, account.CodeForbidden)
		// Its name is the manager's to change, as before.
		name := "renamed by the manager"
		if _, err := e.svc.UpdateAPIKey(e.ctx, mgr, plan.KeyID, account.APIKeyUpdate{Name: &name}); err != nil {
			t.Errorf("rename by the manager: %v", err)
		}
	})
	t.Run("FromAbove", func(t *testing.T) {
		e := newEnv(t)
		parent, _ := e.key(t, "", account.ScopeWriteAPIKeys, account.ScopeReadAPIKeys)
		child := e.below(t, parent, account.NewAPIKey{Scopes: []string{account.ScopeWriteAPIKeys}})
		grandchild := e.below(t, child, account.NewAPIKey{Scopes: []string{account.ScopeWriteAPIKeys}})
		for name, p := range map[string]account.Principal{"parent": parent, "admin": e.admin} {
			for _, k := range []account.Principal{child, grandchild} {
				if _, err := e.svc.UpdateAPIKey(e.ctx, p, k.KeyID, account.APIKeyUpdate{RateLimits: &limits, SetCredits: true, Credits: credits}); err != nil {
					t.Errorf("%s sets the limits of a key below: %v", name, err)
				}
			}
		}
	})
}

// TestService_RevokeAPIKeyTokens_Bootstrap is hole 6c of issue 29: the
// bootstrap admin key is managed by configuration, so only it revokes its
// own tokens all at once.
func TestService_RevokeAPIKeyTokens_Bootstrap(t *testing.T) {
	e := newEnv(t)
	other, _ := e.key(t, "", account.ScopeAll)
	_, err := e.svc.RevokeAPIKeyTokens(e.ctx, other, e.admin.KeyID)
	wantCode(t, err, account.CodeForbidden)
	if _, err := e.svc.RevokeAPIKeyTokens(e.ctx, e.admin, e.admin.KeyID); err != nil {
		t.Errorf("the admin key revokes its own tokens: %v", err)
	}
}

// TestPrincipal_Decide is Decide's table, for the principals that stand
// around one key T (made by key P) and around the bootstrap admin key B:
// each row says, per action, what Decide answers. Grants are all "*:*",
// so that only the rules of the tree, the bootstrap key, the tenant and
// the caller decide (TestAPIKeyGrants covers grants).
func TestPrincipal_Decide(t *testing.T) {
	all := []string{account.ScopeAll}
	keyP := account.Principal{KeyID: "key_P", Scopes: all}
	below := func(id string, ancestors ...string) account.Principal {
		return account.Principal{KeyID: id, Scopes: all, KeyAncestors: ancestors}
	}
	token, session, previous := keyP, keyP, keyP
	token.TokenID = "tok_1"
	session.TokenID, session.Session = "tok_2", true
	previous.PreviousSecret = true
	tenant := keyP
	tenant.KeyOrganizationID = "org_other"
	// A limited key may not rotate a less limited one: the rotation would
	// hand it a secret without its limits.
	limited := below("key_L", "key_P")
	limited.KeyCredits = &account.Credits{Remaining: 2}

	keyT := account.APIKey{ID: "key_T", Scopes: all, CreatedBy: "key_P", Ancestors: []string{"key_P"}}
	keyB := account.APIKey{ID: "key_B", Scopes: all, Bootstrap: true}
	admin := account.Principal{KeyID: "key_B", Scopes: all, KeyBootstrap: true}

	actions := []account.Action{account.ActionRead, account.ActionEdit, account.ActionDisable, account.ActionSetLimits,
		account.ActionRotate, account.ActionDelete, account.ActionRevokeTokens}
	codes := map[string]account.Code{"ok": "", "nf": account.CodeNotFound, "fb": account.CodeForbidden, "ps": account.CodePreviousSecret}
	for _, row := range []struct {
		name string
		p    account.Principal
		key  account.APIKey
		// want, per action in actions' order.
		want string
	}{
		{"admin on T", admin, keyT, "ok ok ok ok ok ok ok"},
		{"P, above T", keyP, keyT, "ok ok ok ok ok ok ok"},
		{"a sibling of T", below("key_S", "key_P"), keyT, "ok ok ok fb ok ok ok"},
		{"T itself", below("key_T", "key_P"), keyT, "ok ok ok fb ok ok ok"},
		{"a key below T", below("key_C", "key_P", "key_T"), keyT, "ok fb fb fb fb fb fb"},
		{"another tenant's key", tenant, keyT, "nf nf nf nf nf nf nf"},
		{"an access token of P", token, keyT, "fb fb fb fb fb fb fb"},
		{"a console session of P", session, keyT, "ok ok ok ok ok ok ok"},
		{"P's previous secret", previous, keyT, "ok ps ps ps ps ps ps"},
		{"admin on itself", admin, keyB, "ok ok fb fb fb fb ok"},
		{"another *:* key on the admin key", keyP, keyB, "ok fb fb fb fb fb fb"},
		{"a sibling of T with credits", limited, keyT, "ok ok ok fb fb ok ok"},
	} {
		want := strings.Fields(row.want)
		if len(want) != len(actions) {
			t.Fatalf("%s: %d cells, want one per action (%d)", row.name, len(want), len(actions))
		}
		for i, a := range actions {
			err := row.p.Decide(a, row.key)
			if got := account.ErrorCode(err); got != codes[want[i]] {
				t.Errorf("%s, %s: got %q (%v), want %q", row.name, a, got, err, codes[want[i]])
			}
		}
	}
}

// TestService_RotationDuringRequest: a request authenticated with a
// secret that a rotation replaces before the request's write changes
// nothing of its own key, whatever it asked (issue 29: a thief's session
// or secret, authenticated just before the holder's rotation, must not
// rotate the key again).
func TestService_RotationDuringRequest(t *testing.T) {
	e := newEnv(t)
	_, secret := e.key(t, "", account.ScopeAll)
	stale := e.auth(t, secret)
	if _, _, err := e.svc.RotateAPIKey(e.ctx, e.auth(t, secret), stale.KeyID, account.KeyRotationRequest{ExpiresIn: "0s"}); err != nil {
		t.Fatalf("the holder's rotation: %v", err)
	}
	_, _, err := e.svc.RotateAPIKey(e.ctx, stale, stale.KeyID, account.KeyRotationRequest{ExpiresIn: "0s"})
	wantCode(t, err, account.CodeUnauthorized)
	name := "renamed"
	_, err = e.svc.UpdateAPIKey(e.ctx, stale, stale.KeyID, account.APIKeyUpdate{Name: &name})
	wantCode(t, err, account.CodeUnauthorized)
	err = e.svc.DeleteAPIKey(e.ctx, stale, stale.KeyID)
	wantCode(t, err, account.CodeUnauthorized)
}

// TestService_RotateLessLimited: a limited key rotates no key that is less
// limited than itself, which would hand it an unlimited secret.
func TestService_RotateLessLimited(t *testing.T) {
	e := newEnv(t)
	_, mSecret, err := e.svc.CreateAPIKey(e.ctx, e.admin, account.NewAPIKey{Name: "m", Scopes: []string{"read:x", account.ScopeReadAPIKeys, account.ScopeWriteAPIKeys},
		Credits: &account.CreditsRequest{Remaining: 2}})
	if err != nil {
		t.Fatal(err)
	}
	n, _, err := e.svc.CreateAPIKey(e.ctx, e.admin, account.NewAPIKey{Name: "n", Scopes: []string{"read:x"}})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = e.svc.RotateAPIKey(e.ctx, e.auth(t, mSecret), n.ID, account.KeyRotationRequest{ExpiresIn: "0s"})
	wantCode(t, err, account.CodeForbidden)
}

package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"latchkey/pkg/account"
)

// TestConsole_SessionAfterRotation is hole 1 of issue 29 through the
// console: a thief signs in with a leaked secret, the holder rotates it
// through the API with "0s", and the thief's session can no longer rotate,
// disable, delete or create anything; the holder's new secret stays the
// key's.
func TestConsole_SessionAfterRotation(t *testing.T) {
	s := newStack(t)
	admin := mustAuth(t, s.Env, s.AdminKey)
	k, leaked, err := s.Service.CreateAPIKey(t.Context(), admin, account.NewAPIKey{Name: "holder",
		Scopes: []string{account.ScopeReadAPIKeys, account.ScopeWriteAPIKeys, account.ScopeRevokeTokens, account.ScopeReadUsers}})
	if err != nil {
		t.Fatal(err)
	}
	child, _, err := s.Service.CreateAPIKey(t.Context(), mustAuth(t, s.Env, leaked), account.NewAPIKey{Name: "child", Scopes: []string{account.ScopeReadUsers}})
	if err != nil {
		t.Fatal(err)
	}
	thief := s.signIn(t, leaked)
	res := s.Do(t, http.MethodPost, "/v1/api-keys/"+k.ID+"/rotate", leaked, map[string]any{"expires_in": "0s"})
	if res.StatusCode != http.StatusOK {
		t.Fatalf("rotate through the API: %d", res.StatusCode)
	}
	var rotated struct {
		Key string `json:"key"`
	}
	res.Decode(t, &rotated)

	for _, a := range []struct {
		name, path string
		form       url.Values
	}{
		{"rotate", "/console/api-keys/" + k.ID + "/rotate", url.Values{"grace": {"0s"}}},
		{"disable", "/console/api-keys/" + child.ID + "/enabled", url.Values{"enabled": {"false"}}},
		{"delete", "/console/api-keys/" + child.ID + "/delete", url.Values{}},
		{"create", "/console/api-keys", url.Values{"name": {"thief's"}, "scope": {account.ScopeReadUsers}}},
		{"revoke all tokens", "/console/api-keys/" + k.ID + "/tokens/revoke", url.Values{"confirm": {"yes"}}},
	} {
		res := s.send(t, http.MethodPost, a.path, thief, a.form, sameOrigin)
		if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(res.Header.Get("Location"), "/console/sign-in") {
			t.Errorf("%s with the old session: %d to %q, want 303 to the sign-in", a.name, res.StatusCode, res.Header.Get("Location"))
		}
	}
	page := s.send(t, http.MethodGet, "/console/api-keys/"+k.ID, thief, nil, nil)
	if page.StatusCode != http.StatusSeeOther {
		t.Errorf("the key's page with the old session: %d, want 303", page.StatusCode)
	}
	// Nothing changed: the holder's secret is the key's, the child lives.
	if _, err := s.Service.Authenticate(t.Context(), rotated.Key); err != nil {
		t.Errorf("the holder's new secret: %v", err)
	}
	c, err := s.Service.GetAPIKey(t.Context(), admin, child.ID)
	if err != nil || c.Disabled {
		t.Errorf("the child: %+v, %v; want it there, enabled", c, err)
	}
	// The new secret signs in.
	res2 := s.send(t, http.MethodGet, "/console/api-keys/"+k.ID, s.signIn(t, rotated.Key), nil, nil)
	if res2.StatusCode != http.StatusOK {
		t.Errorf("the key's page with a session of the new secret: %d", res2.StatusCode)
	}
}

// TestConsole_RotateOwnKey: a session that rotates its own key ends with
// the secret it signed in with, and the console signs in again with the
// new one in the same response, so that its operator goes on.
func TestConsole_RotateOwnKey(t *testing.T) {
	s := newStack(t)
	_ = s
	secret := s.keyWith(t, account.ScopeReadAPIKeys, account.ScopeWriteAPIKeys)
	old := s.signIn(t, secret)
	p := mustAuth(t, s.Env, secret)
	res := s.send(t, http.MethodPost, "/console/api-keys/"+p.KeyID+"/rotate", old, url.Values{"grace": {"0s"}}, sameOrigin)
	if res.StatusCode != http.StatusOK || !strings.Contains(res.body, `id="secret"`) {
		t.Fatalf("rotate its own key: %d", res.StatusCode)
	}
	var fresh *http.Cookie
	for _, c := range res.Cookies() {
		if c.Name == old.Name && c.Value != "" {
			fresh = c
		}
	}
	if fresh == nil || fresh.Value == old.Value {
		t.Fatalf("the rotation set no new session cookie: %v", res.Header.Values("Set-Cookie"))
	}
	if r := s.send(t, http.MethodGet, "/console/api-keys", old, nil, nil); r.StatusCode != http.StatusSeeOther {
		t.Errorf("the session of the old secret: %d, want 303 to the sign-in", r.StatusCode)
	}
	if r := s.send(t, http.MethodGet, "/console/api-keys", fresh, nil, nil); r.StatusCode != http.StatusOK {
		t.Errorf("the session of the new secret: %d, want 200", r.StatusCode)
	}
}

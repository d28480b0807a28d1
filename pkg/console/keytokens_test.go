package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"latchkey/pkg/account"
)

// TestConsole_APIKeyTokens: the key's page lists its live tokens, and its
// "revoke all" form, once confirmed, revokes every one of them at once.
func TestConsole_APIKeyTokens(t *testing.T) {
	s := newStack(t)
	session := s.signIn(t, s.AdminKey)
	secret := s.keyWith(t, account.ScopeReadUsers)
	p := mustAuth(t, s.Env, secret)
	tok, c := s.IssueToken(t, secret, "", account.ScopeReadUsers)

	page := s.send(t, http.MethodGet, "/console/api-keys/"+p.KeyID, session, nil, nil)
	if page.StatusCode != http.StatusOK || !strings.Contains(page.body, c.ID) || strings.Contains(page.body, tok) {
		t.Fatalf("the key's page: %d; want it to list %s, never the token", page.StatusCode, c.ID)
	}
	if !strings.Contains(page.body, `action="/console/api-keys/`+p.KeyID+`/tokens/revoke"`) {
		t.Error("the key's page has no form that revokes its tokens")
	}

	// Unconfirmed: refused, naming the checkbox, and nothing revoked.
	path := "/console/api-keys/" + p.KeyID + "/tokens/revoke"
	res := s.send(t, http.MethodPost, path, session, url.Values{}, sameOrigin)
	if res.StatusCode != http.StatusBadRequest || !strings.Contains(res.body, "confirm") {
		t.Errorf("unconfirmed: %d, want 400 naming confirm", res.StatusCode)
	}
	if v, err := s.Service.VerifyToken(t.Context(), tok); err != nil || !v.Valid {
		t.Fatalf("after an unconfirmed revoke: %+v, %v; want valid", v, err)
	}

	res = s.send(t, http.MethodPost, path, session, url.Values{"confirm": {"yes"}}, sameOrigin)
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("revoke all: %d, want 303: %s", res.StatusCode, res.body)
	}
	if v, err := s.Service.VerifyToken(t.Context(), tok); err != nil || v.Valid || v.Reason != account.ReasonRevoked {
		t.Errorf("verify after the revoke: %+v, %v; want revoked", v, err)
	}
	page = s.send(t, http.MethodGet, "/console/api-keys/"+p.KeyID, session, nil, nil)
	if strings.Contains(page.body, c.ID) || !strings.Contains(page.body, "No live tokens") {
		t.Errorf("the key's page after the revoke still lists %s", c.ID)
	}

	// A token issued afterwards works, and is listed.
	s.Clock.Advance(time.Millisecond)
	tok, c = s.IssueToken(t, secret, "", account.ScopeReadUsers)
	if v, _ := s.Service.VerifyToken(t.Context(), tok); !v.Valid {
		t.Error("a token issued after the revoke does not verify")
	}
	if page = s.send(t, http.MethodGet, "/console/api-keys/"+p.KeyID, session, nil, nil); !strings.Contains(page.body, c.ID) {
		t.Errorf("the key's page does not list %s, issued after the revoke", c.ID)
	}
}

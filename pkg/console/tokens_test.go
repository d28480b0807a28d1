package console_test

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"latchkey/pkg/account"
)

// TestConsole_TokensAsIntrospection: the tokens page answers what
// /oauth2/introspect answers the session's key, on the same token: a
// session bound to an organization sees another tenant's token as not
// valid, exactly as it sees a forged one (no claims, no reason that tells
// of the other key's state), and spends none of its credits; a token of
// its own organization is valid with the fields introspection gives, and
// costs the one credit introspection costs.
func TestConsole_TokensAsIntrospection(t *testing.T) {
	s := newStack(t)
	admin := mustAuth(t, s.Env, s.AdminKey)
	ctx := t.Context()
	other, err := s.Service.CreateOrganization(ctx, admin, account.NewOrganization{Name: "Beta", Slug: "beta"})
	if err != nil {
		t.Fatal(err)
	}
	newKey := func(org string, credits int64) (account.APIKey, string) {
		t.Helper()
		req := account.NewAPIKey{Name: "bound", Scopes: []string{account.ScopeReadUsers}, OrganizationID: org}
		if credits > 0 {
			req.Credits = &account.CreditsRequest{Remaining: credits}
		}
		k, secret, err := s.Service.CreateAPIKey(ctx, admin, req)
		if err != nil {
			t.Fatal(err)
		}
		return k, secret
	}
	credits := func(id string) int64 {
		t.Helper()
		k, err := s.Service.GetAPIKey(ctx, admin, id)
		if err != nil || k.Credits == nil {
			t.Fatalf("key %s: %+v, %v", id, k, err)
		}
		return k.Credits.Remaining
	}
	operator, operatorSecret := newKey(s.org.ID, 0)
	mine, mineSecret := newKey(s.org.ID, 5)
	theirs, theirsSecret := newKey(other.ID, 5)
	myToken, myClaims := s.IssueToken(t, mineSecret, "", account.ScopeReadUsers)
	theirToken, theirClaims := s.IssueToken(t, theirsSecret, "", account.ScopeReadUsers)
	session := s.signIn(t, operatorSecret)

	introspect := func(tok string) map[string]any {
		t.Helper()
		h := http.Header{
			"Content-Type":  {"application/x-www-form-urlencoded"},
			"Authorization": {"Basic " + base64.StdEncoding.EncodeToString([]byte(operator.ID+":"+url.QueryEscape(operatorSecret)))},
		}
		res := s.DoRaw(t, s.Handler, http.MethodPost, "/oauth2/introspect", h, url.Values{"token": {tok}}.Encode())
		s.CheckResponse(t, res)
		var got map[string]any
		if err := json.Unmarshal(res.Body, &got); err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("introspect: %d %s", res.StatusCode, res.Body)
		}
		return got
	}
	page := func(tok string) string {
		t.Helper()
		res := s.send(t, http.MethodPost, "/console/tokens", session, url.Values{"token": {tok}}, sameOrigin)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("tokens page: %d: %s", res.StatusCode, res.body)
		}
		return result(t, res.body)
	}
	forged := page("eyJhbGciOiJFZERTQSJ9.eyJzdWIiOiJ4In0.c2ln")

	t.Run("OtherTenant", func(t *testing.T) {
		if got := introspect(theirToken); got["active"] != false || len(got) != 1 {
			t.Fatalf("introspection of the other tenant's token: %v, want only active false", got)
		}
		if got := page(theirToken); got != forged {
			t.Errorf("the other tenant's token: the page says\n%s\nwant what it says of a forged token:\n%s", got, forged)
		}
		if got := credits(theirs.ID); got != 5 {
			t.Errorf("the other tenant's key has %d credits after both checks, want 5: none spent", got)
		}
		// Its key's state is not told either: disabled, it is the same answer.
		off := false
		if _, err := s.Service.UpdateAPIKey(ctx, admin, theirs.ID, account.APIKeyUpdate{Enabled: &off}); err != nil {
			t.Fatal(err)
		}
		if got := page(theirToken); got != forged {
			t.Errorf("the other tenant's token of a disabled key: the page says\n%s\nwant what it says of a forged token", got)
		}
		for _, leak := range []string{theirs.ID, theirClaims.ID, other.ID} {
			if strings.Contains(page(theirToken), leak) {
				t.Errorf("the page shows %s of the other tenant", leak)
			}
		}
	})

	t.Run("OwnTenant", func(t *testing.T) {
		got := introspect(myToken)
		if got["active"] != true {
			t.Fatalf("introspection of the own tenant's token: %v", got)
		}
		if n := credits(mine.ID); n != 4 {
			t.Fatalf("introspection left %d credits, want 4", n)
		}
		shown := page(myToken)
		if !strings.Contains(shown, "Valid") {
			t.Errorf("the own tenant's token: the page says\n%s\nwant valid", shown)
		}
		for field, v := range got {
			if sv, ok := v.(string); ok && field != "token_type" && !strings.Contains(shown, sv) {
				t.Errorf("introspection's %s %q is not on the page", field, sv)
			}
		}
		if got["jti"] != myClaims.ID {
			t.Errorf("introspection's jti %v, want %s", got["jti"], myClaims.ID)
		}
		if n := credits(mine.ID); n != 3 {
			t.Errorf("the page left %d credits, want 3: one, as introspection", n)
		}
	})
}

var checkedAt = regexp.MustCompile(`<p class="meta">Checked at [^<]*</p>`)

// result is the page's answer about the token, without the time of the
// check.
func result(t *testing.T, body string) string {
	t.Helper()
	start := strings.Index(body, `<section class="card" aria-labelledby="result">`)
	if start < 0 {
		t.Fatalf("the page has no result: %s", body)
	}
	end := strings.Index(body[start:], "</section>")
	return checkedAt.ReplaceAllString(body[start:start+end], "")
}

package console_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"latchkey/pkg/account"
	"latchkey/pkg/console"
	"latchkey/pkg/dynamostore/dynamotest"
	"latchkey/pkg/httpapi/httpapitest"
	"latchkey/pkg/tablestore"
)

// eventWait bounds a wait for an event to show in the feed: DynamoDB's feed
// shows it tablestore.EventLag after it is written, and the tests' store
// timeout that the lag follows grows with the machine's load
// (dynamotest.Timeout); 30 s more for the calls around it.
var eventWait = tablestore.EventLag(dynamotest.Timeout) + 30*time.Second

// stack is the test stack with an organization, a user and a key, so that
// every console path has real ids to name.
type stack struct {
	*httpapitest.Env
	org  account.Organization
	user account.User
	key  account.APIKey
}

func newStack(t *testing.T) *stack {
	t.Helper()
	env := httpapitest.NewServer(t)
	admin := mustAuth(t, env, env.AdminKey)
	ctx := t.Context()
	o, err := env.Service.CreateOrganization(ctx, admin, account.NewOrganization{Name: "Acme", Slug: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	u, err := env.Service.CreateUser(ctx, admin, account.NewUser{Email: "ada@example.com", Name: "Ada"})
	if err != nil {
		t.Fatal(err)
	}
	k, _, err := env.Service.CreateAPIKey(ctx, admin, account.NewAPIKey{Name: "worker", Scopes: []string{account.ScopeReadUsers}})
	if err != nil {
		t.Fatal(err)
	}
	return &stack{Env: env, org: o, user: u, key: k}
}

// path fills a route's wildcards with the stack's ids.
func (s *stack) path(p string) string {
	id := s.org.ID
	switch {
	case strings.HasPrefix(p, "/console/users/"):
		id = s.user.ID
	case strings.HasPrefix(p, "/console/api-keys/"):
		id = s.key.ID
	}
	return strings.NewReplacer("{id}", id, "{user_id}", s.user.ID, "{file}", "console.css").Replace(p)
}

// signIn signs in with the key secret and returns the session cookie.
func (s *stack) signIn(t *testing.T, secret string) *http.Cookie {
	t.Helper()
	res := s.send(t, http.MethodPost, "/console/sign-in", nil, url.Values{"api_key": {secret}}, sameOrigin)
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-in: %d, want 303", res.StatusCode)
	}
	for _, c := range res.Cookies() {
		if c.Name == "__Host-latchkey_console" && c.Value != "" {
			return c
		}
	}
	t.Fatalf("sign-in set no session cookie: %v", res.Header.Values("Set-Cookie"))
	return nil
}

// keyWith creates a key with scopes and returns its secret.
func (s *stack) keyWith(t *testing.T, scopes ...string) string {
	t.Helper()
	_, secret, err := s.Service.CreateAPIKey(t.Context(), mustAuth(t, s.Env, s.AdminKey), account.NewAPIKey{Name: "scoped", Scopes: scopes})
	if err != nil {
		t.Fatal(err)
	}
	return secret
}

// Where a request comes from, as a browser says it.
var (
	sameOrigin = http.Header{"Sec-Fetch-Site": {"same-origin"}, "Origin": {httpapitest.Issuer}}
	crossSite  = http.Header{"Sec-Fetch-Site": {"cross-site"}, "Origin": {"https://attacker.example"}}
	// An older browser that sends Origin and not Sec-Fetch-Site.
	crossOrigin = http.Header{"Origin": {"https://attacker.example"}}
)

type response struct {
	*http.Response
	body string
}

func (s *stack) send(t *testing.T, method, path string, session *http.Cookie, form url.Values, h http.Header) response {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req := httptest.NewRequest(method, httpapitest.Issuer+path, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range h {
		req.Header[k] = v
	}
	if session != nil {
		req.AddCookie(session)
	}
	rec := httptest.NewRecorder()
	s.Handler.ServeHTTP(rec, req)
	res := rec.Result()
	b, _ := io.ReadAll(res.Body)
	return response{res, string(b)}
}

// formFor is a form each POST route takes, valid or not: what matters is
// that it is refused before it is read.
func formFor(s *stack, path string) url.Values {
	return url.Values{"name": {"Changed"}, "slug": {"changed"}, "email": {"x@example.com"}, "role": {"admin"},
		"user_id": {s.user.ID}, "enabled": {"false"}, "grace": {"0s"}, "token": {"eyJ.eyJ.x"}, "scope": {"read:users"}, "confirm": {"yes"}}
}

// TestConsole_RefusesWithoutSession: every page and form but the sign-in
// and the static files refuses a request without a session, with an
// expired one, with a revoked one and with an API token in its place:
// 303 to the sign-in, nothing of the page, no change.
func TestConsole_RefusesWithoutSession(t *testing.T) {
	s := newStack(t)
	expired := s.signIn(t, s.AdminKey)
	revoked := s.signIn(t, s.AdminKey)
	if res := s.send(t, http.MethodPost, "/console/sign-out", revoked, url.Values{}, sameOrigin); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-out: %d", res.StatusCode)
	}
	apiToken, _, err := s.Service.IssueToken(t.Context(), mustAuth(t, s.Env, s.AdminKey), account.TokenRequest{Scopes: []string{account.ScopeAll}})
	if err != nil {
		t.Fatal(err)
	}
	name := expired.Name
	cases := []struct {
		name   string
		cookie *http.Cookie
	}{
		{"none", nil},
		{"revoked", revoked},
		{"api token", &http.Cookie{Name: name, Value: apiToken}},
		{"api key", &http.Cookie{Name: name, Value: s.AdminKey}},
		{"garbage", &http.Cookie{Name: name, Value: "eyJ.eyJ.sig"}},
	}
	check := func(t *testing.T, c *http.Cookie, when string) {
		for _, rt := range console.Routes() {
			if rt.Path == "/console/static/{file}" || rt.Path == "/console/sign-in" {
				continue
			}
			path := s.path(rt.Path)
			var form url.Values
			if rt.Method == http.MethodPost {
				form = formFor(s, path)
			}
			res := s.send(t, rt.Method, path, c, form, sameOrigin)
			if loc := res.Header.Get("Location"); res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/console/sign-in") {
				t.Errorf("%s: %s %s: %d to %q, want 303 to the sign-in", when, rt.Method, path, res.StatusCode, loc)
			}
			if strings.Contains(res.body, s.org.Slug) || strings.Contains(res.body, s.user.Email) {
				t.Errorf("%s: %s %s: the answer shows data", when, rt.Method, path)
			}
		}
	}
	for _, tc := range cases {
		check(t, tc.cookie, tc.name)
	}
	s.Clock.Advance(account.SessionLifetime)
	check(t, expired, "expired")
	// Nothing was changed by all those forms.
	o, err := s.Service.GetOrganization(t.Context(), mustAuth(t, s.Env, s.AdminKey), s.org.ID)
	if err != nil || o.Name != s.org.Name {
		t.Errorf("the organization after the refused forms: %+v, %v", o, err)
	}
}

// TestConsole_RefusesCrossSitePost: every form, the sign-in's included,
// refuses a post that a browser says comes from another site or origin,
// with a valid session, before anything is read or changed.
func TestConsole_RefusesCrossSitePost(t *testing.T) {
	s := newStack(t)
	session := s.signIn(t, s.AdminKey)
	posts := 0
	for _, rt := range console.Routes() {
		if rt.Method != http.MethodPost {
			continue
		}
		posts++
		path := s.path(rt.Path)
		form := formFor(s, path)
		form.Set("api_key", s.AdminKey)
		for name, h := range map[string]http.Header{"cross-site": crossSite, "cross-origin": crossOrigin} {
			res := s.send(t, http.MethodPost, path, session, form, h)
			if res.StatusCode != http.StatusForbidden || !strings.Contains(res.body, "Cross-origin request refused") {
				t.Errorf("%s POST %s: %d, want 403 refused", name, path, res.StatusCode)
			}
			if len(res.Cookies()) > 0 {
				t.Errorf("%s POST %s set a cookie", name, path)
			}
		}
	}
	if posts < 15 {
		t.Errorf("%d POST routes checked; the console has more", posts)
	}
	admin := mustAuth(t, s.Env, s.AdminKey)
	if o, err := s.Service.GetOrganization(t.Context(), admin, s.org.ID); err != nil || o.Name != s.org.Name {
		t.Errorf("the organization after the cross-site posts: %+v, %v", o, err)
	}
	if k, err := s.Service.GetAPIKey(t.Context(), admin, s.key.ID); err != nil || k.Disabled || k.Name != s.key.Name {
		t.Errorf("the key after the cross-site posts: %+v, %v", k, err)
	}
	// The session was not signed out by the cross-site sign-out.
	if res := s.send(t, http.MethodGet, "/console/organizations", session, nil, nil); res.StatusCode != http.StatusOK {
		t.Errorf("the session after a cross-site sign-out: %d, want 200", res.StatusCode)
	}
	// The same form from the console itself goes through.
	res := s.send(t, http.MethodPost, "/console/organizations/"+s.org.ID, session, url.Values{"name": {"Acme Two"}, "plan": {"pro"}}, sameOrigin)
	if res.StatusCode != http.StatusSeeOther {
		t.Errorf("same-origin post: %d, want 303: %s", res.StatusCode, res.body)
	}
}

// TestConsole_Scopes: a session without a page's scope is neither offered
// the page nor served it, and a page offers only the changes its grants
// allow.
func TestConsole_Scopes(t *testing.T) {
	s := newStack(t)
	readUsers := s.signIn(t, s.keyWith(t, account.ScopeReadUsers))
	res := s.send(t, http.MethodGet, "/console/users", readUsers, nil, nil)
	if res.StatusCode != http.StatusOK || !strings.Contains(res.body, s.user.Email) {
		t.Fatalf("users page: %d", res.StatusCode)
	}
	for _, hidden := range []string{`href="/console/organizations"`, `href="/console/api-keys"`, `href="/console/events"`, `method="post" action="/console/users"`} {
		if strings.Contains(res.body, hidden) {
			t.Errorf("a read:users session is offered %s", hidden)
		}
	}
	// Each page that needs a scope, to a session with every grant but it.
	for _, rt := range []struct{ path, scope string }{
		{"/console/organizations", account.ScopeReadOrganizations},
		{"/console/organizations/{id}", account.ScopeReadOrganizations},
		{"/console/organizations/{id}/delete", account.ScopeDeleteOrganizations},
		{"/console/users", account.ScopeReadUsers},
		{"/console/users/{id}", account.ScopeReadUsers},
		{"/console/users/{id}/delete", account.ScopeDeleteUsers},
		{"/console/api-keys", account.ScopeReadAPIKeys},
		{"/console/api-keys/{id}", account.ScopeReadAPIKeys},
		{"/console/api-keys/{id}/delete", account.ScopeWriteAPIKeys},
		{"/console/events", account.ScopeReadEvents},
	} {
		var others []string
		for _, sc := range account.KnownScopes() {
			if sc != rt.scope {
				others = append(others, sc)
			}
		}
		session := s.signIn(t, s.keyWith(t, others...))
		path := s.path(rt.path)
		res := s.send(t, http.MethodGet, path, session, nil, nil)
		if res.StatusCode != http.StatusForbidden || !strings.Contains(res.body, "Insufficient scope") || !strings.Contains(res.body, rt.scope) {
			t.Errorf("GET %s without %s: %d, want 403 naming the scope", path, rt.scope, res.StatusCode)
		}
		if strings.Contains(res.body, s.org.Slug+"</code>") || strings.Contains(res.body, s.user.Email) {
			t.Errorf("GET %s without %s shows data", path, rt.scope)
		}
		home := s.send(t, http.MethodGet, "/console/tokens", session, nil, nil)
		if strings.Contains(home.body, `href="`+strings.SplitN(rt.path, "/{", 2)[0]+`"`) && strings.Count(rt.path, "/") == 2 {
			t.Errorf("a session without %s is offered %s", rt.scope, rt.path)
		}
	}
	// A form whose scope the session lacks is refused too.
	res = s.send(t, http.MethodPost, "/console/users", readUsers, url.Values{"email": {"eve@example.com"}, "name": {"Eve"}}, sameOrigin)
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("create a user without write:users: %d, want 403", res.StatusCode)
	}
}

// TestConsole_Headers: every answer carries the security headers, and the
// session cookie is HttpOnly, Secure, SameSite=Strict and __Host-.
func TestConsole_Headers(t *testing.T) {
	s := newStack(t)
	session := s.signIn(t, s.AdminKey)
	if !session.HttpOnly || !session.Secure || session.SameSite != http.SameSiteStrictMode || session.Path != "/" || session.Domain != "" {
		t.Errorf("session cookie: %+v, want HttpOnly, Secure, SameSite=Strict, Path=/, no Domain", session)
	}
	for _, path := range []string{"/console/sign-in", "/console/organizations", "/console/static/console.css", "/console/static/console.js"} {
		res := s.send(t, http.MethodGet, path, session, nil, http.Header{"X-Forwarded-Proto": {"https"}})
		if res.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %d", path, res.StatusCode)
		}
		for h, want := range map[string]string{
			"X-Frame-Options":            "DENY",
			"X-Content-Type-Options":     "nosniff",
			"Referrer-Policy":            "no-referrer",
			"Cross-Origin-Opener-Policy": "same-origin",
			"Strict-Transport-Security":  "max-age=31536000",
		} {
			if got := res.Header.Get(h); got != want {
				t.Errorf("GET %s: %s %q, want %q", path, h, got, want)
			}
		}
		csp := res.Header.Get("Content-Security-Policy")
		for _, d := range []string{"default-src 'none'", "script-src 'self'", "frame-ancestors 'none'", "form-action 'self'", "base-uri 'none'"} {
			if !strings.Contains(csp, d) {
				t.Errorf("GET %s: CSP %q lacks %q", path, csp, d)
			}
		}
		if res.Header.Get("X-Request-Id") == "" {
			t.Errorf("GET %s: no X-Request-Id: not served inside the API's middleware", path)
		}
	}
	// No page loads anything from another origin.
	page := s.send(t, http.MethodGet, "/console/organizations", session, nil, nil)
	for _, attr := range []string{`src="http`, `href="http`, `src="//`, `href="//`} {
		if strings.Contains(page.body, attr) {
			t.Errorf("the page refers to another origin: %s", attr)
		}
	}
}

// TestConsole_SignOut: sign-out revokes the session's token, so the old
// cookie fails wherever a copy of it is, and verify says it is revoked.
func TestConsole_SignOut(t *testing.T) {
	s := newStack(t)
	session := s.signIn(t, s.AdminKey)
	res := s.send(t, http.MethodPost, "/console/sign-out", session, url.Values{}, sameOrigin)
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Clear-Site-Data") == "" {
		t.Fatalf("sign-out: %d, Clear-Site-Data %q", res.StatusCode, res.Header.Get("Clear-Site-Data"))
	}
	if c := res.Cookies(); len(c) != 1 || c[0].MaxAge >= 0 {
		t.Errorf("sign-out cookies: %v, want the session's removed", c)
	}
	v, err := s.Service.VerifyToken(t.Context(), session.Value)
	if err != nil || v.Valid || v.Reason != account.ReasonRevoked {
		t.Errorf("verify of the signed-out session: %+v, %v; want revoked", v, err)
	}
	if res := s.send(t, http.MethodGet, "/console/organizations", session, nil, nil); res.StatusCode != http.StatusSeeOther {
		t.Errorf("the old cookie: %d, want 303 to the sign-in", res.StatusCode)
	}
}

// TestConsole_SignIn: a refused key is shown as the problem, and never
// echoed; a token is not a key to sign in with; next never leaves the
// console.
func TestConsole_SignIn(t *testing.T) {
	s := newStack(t)
	wrong := "lk_wrong_key_that_is_not_one"
	res := s.send(t, http.MethodPost, "/console/sign-in", nil, url.Values{"api_key": {wrong}}, sameOrigin)
	if res.StatusCode != http.StatusUnauthorized || !strings.Contains(res.body, "Unauthorized") || strings.Contains(res.body, wrong) {
		t.Errorf("wrong key: %d, want 401 with the problem and without the key", res.StatusCode)
	}
	tok, _, err := s.Service.IssueToken(t.Context(), mustAuth(t, s.Env, s.AdminKey), account.TokenRequest{Scopes: []string{account.ScopeReadUsers}})
	if err != nil {
		t.Fatal(err)
	}
	res = s.send(t, http.MethodPost, "/console/sign-in", nil, url.Values{"api_key": {tok}}, sameOrigin)
	if res.StatusCode != http.StatusForbidden || len(res.Cookies()) != 0 {
		t.Errorf("sign-in with a token: %d, cookies %v; want 403 and none", res.StatusCode, res.Cookies())
	}
	for next, want := range map[string]string{
		"/console/users":           "/console/users",
		"https://attacker.example": "/console",
		"//attacker.example/x":     "/console",
		"/console//attacker":       "/console",
		"/v1/users":                "/console",
	} {
		res := s.send(t, http.MethodPost, "/console/sign-in", nil, url.Values{"api_key": {s.AdminKey}, "next": {next}}, sameOrigin)
		if got := res.Header.Get("Location"); got != want {
			t.Errorf("next %q: to %q, want %q", next, got, want)
		}
	}
}

// TestConsole_LastOwner: the organization's page shows the last-owner
// rule: its only owner offers no role change or removal, and says why;
// with a second owner, both do.
func TestConsole_LastOwner(t *testing.T) {
	s := newStack(t)
	admin := mustAuth(t, s.Env, s.AdminKey)
	if _, err := s.Service.AddMember(t.Context(), admin, s.org.ID, account.NewMember{UserID: s.user.ID, Role: account.OwnerRole}); err != nil {
		t.Fatal(err)
	}
	session := s.signIn(t, s.AdminKey)
	removeForm := `action="/console/organizations/` + s.org.ID + `/members/` + s.user.ID + `/remove"`
	res := s.send(t, http.MethodGet, "/console/organizations/"+s.org.ID, session, nil, nil)
	if !strings.Contains(res.body, "last owner") || strings.Contains(res.body, removeForm) {
		t.Errorf("one owner: the page does not show the rule, or offers the removal")
	}
	// Refused all the same if sent, with the rule as the problem.
	res = s.send(t, http.MethodPost, "/console/organizations/"+s.org.ID+"/members/"+s.user.ID+"/remove", session, url.Values{}, sameOrigin)
	if res.StatusCode != http.StatusConflict || !strings.Contains(res.body, "Last owner") {
		t.Errorf("removing the last owner: %d, want 409 Last owner", res.StatusCode)
	}
	other, err := s.Service.CreateUser(t.Context(), admin, account.NewUser{Email: "grace@example.com", Name: "Grace"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Service.AddMember(t.Context(), admin, s.org.ID, account.NewMember{UserID: other.ID, Role: account.OwnerRole}); err != nil {
		t.Fatal(err)
	}
	res = s.send(t, http.MethodGet, "/console/organizations/"+s.org.ID, session, nil, nil)
	if strings.Contains(res.body, "last owner") || !strings.Contains(res.body, removeForm) {
		t.Errorf("two owners: the page still shows the rule, or offers no removal")
	}
}

// TestConsole_APIKeys: a session manages keys as its key: the new key is
// below it, its secret shown once, and its event names the key and the
// session's token.
func TestConsole_APIKeys(t *testing.T) {
	s := newStack(t)
	session := s.signIn(t, s.AdminKey)
	res := s.send(t, http.MethodPost, "/console/api-keys", session, url.Values{
		"name": {"from the console"}, "scope": {account.ScopeReadUsers}, "organization_id": {s.org.ID},
		"owner_id": {"team-a"}, "expires_in": {"30d"}, "metadata": {"ticket=OPS-1"},
		"limit": {"100"}, "limit_period": {"1m"}, "credits": {"5000"}, "refill": {"daily"},
	}, sameOrigin)
	if res.StatusCode != http.StatusCreated || !strings.Contains(res.body, `id="secret"`) {
		t.Fatalf("create: %d: %s", res.StatusCode, res.body)
	}
	admin := mustAuth(t, s.Env, s.AdminKey)
	l, err := s.Service.ListAPIKeys(t.Context(), admin, account.PageRequest{}, account.APIKeyFilter{OrganizationID: s.org.ID})
	if err != nil || len(l.Items) != 1 {
		t.Fatalf("keys of the organization: %v, %v", l.Items, err)
	}
	k := l.Items[0]
	if k.CreatedBy != admin.KeyID || k.OwnerID != "team-a" || k.Metadata["ticket"] != "OPS-1" {
		t.Errorf("the key: %+v", k)
	}
	if len(k.RateLimits) != 1 || k.RateLimits[0].Limit != 100 || k.RateLimits[0].Period != time.Minute ||
		k.Credits == nil || k.Credits.Remaining != 5000 || k.Credits.Refill == nil || k.Credits.Refill.Interval != account.RefillDaily {
		t.Errorf("the key's limits: %+v, credits %+v", k.RateLimits, k.Credits)
	}
	page := s.send(t, http.MethodGet, "/console/api-keys/"+k.ID, session, nil, nil)
	if page.StatusCode != http.StatusOK || strings.Contains(page.body, `id="secret"`) || !strings.Contains(page.body, "…"+k.Last4) {
		t.Errorf("the key's page: %d; it must show the last four, not the secret", page.StatusCode)
	}
	if !strings.Contains(page.body, "100 per 1m") || !strings.Contains(page.body, "5000 left, refilled to 5000 daily") {
		t.Errorf("the key's page does not show its limit and credits")
	}
	// DynamoDB's feed shows an event seconds after it is written
	// (tablestore.EventLag): read until it is there, for at most eventWait.
	var events account.List[account.StoredEvent]
	for deadline := time.Now().Add(eventWait); len(events.Items) == 0; time.Sleep(200 * time.Millisecond) {
		if events, err = s.Service.ListEvents(t.Context(), admin, account.EventListParams{Types: account.EventAPIKeyCreated}); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no api_key.created event after %v", eventWait)
		}
	}
	ev := string(events.Items[0].JSON)
	if !strings.Contains(ev, k.ID) || !strings.Contains(ev, `"token_id":"tok_`) {
		t.Errorf("the create's event %s: want the key, made by the session's token", ev)
	}
	// A refused form names its field.
	res = s.send(t, http.MethodPost, "/console/api-keys", session, url.Values{"name": {"x"}, "expires_in": {"forever"}}, sameOrigin)
	if res.StatusCode != http.StatusBadRequest || !strings.Contains(res.body, "expires_in") {
		t.Errorf("invalid expiry: %d, want 400 naming expires_in", res.StatusCode)
	}
}

// TestConsole_PlainHTTP: a plain-http issuer that is not a loopback
// address starts no session: the cookie could not be Secure there.
func TestConsole_PlainHTTP(t *testing.T) {
	env := httpapitest.NewServerAt(t, "http://latchkey.internal:8080")
	req := httptest.NewRequest(http.MethodPost, "http://latchkey.internal:8080/console/sign-in", strings.NewReader(url.Values{"api_key": {env.AdminKey}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec := httptest.NewRecorder()
	env.Handler.ServeHTTP(rec, req)
	if rec.Code != http.StatusForbidden || len(rec.Result().Cookies()) != 0 {
		t.Errorf("sign-in over plain http at a network address: %d, cookies %v; want 403 and none", rec.Code, rec.Result().Cookies())
	}
}

// TestConsole_SessionIsNoAPICredential: the API takes no console session
// as a bearer credential, and makes none for a client that asks for the
// console's audience, over HTTP as openapi.yaml says.
func TestConsole_SessionIsNoAPICredential(t *testing.T) {
	s := newStack(t)
	session := s.signIn(t, s.AdminKey)
	res := s.Do(t, http.MethodGet, "/v1/api-keys", session.Value, nil)
	s.CheckResponse(t, res)
	if res.StatusCode != http.StatusUnauthorized {
		t.Errorf("a session as a bearer credential: %d, want 401", res.StatusCode)
	}
	res = s.Do(t, http.MethodPost, "/v1/auth/token", s.AdminKey, map[string]any{"scopes": []string{"*:*"}, "audience": account.ConsoleAudience(httpapitest.Issuer)})
	s.CheckResponse(t, res)
	if res.StatusCode != http.StatusBadRequest || !strings.Contains(string(res.Body), `"field":"audience"`) {
		t.Errorf("a token for the console's audience: %d %s, want 400 naming audience", res.StatusCode, res.Body)
	}
}

// TestConsole_ErrorHeaders: the 404 and 405 answers under /console, which
// no console route takes (another path, a path not spelled canonically,
// another method on a page), carry every security header the console's
// pages carry, with the same values.
func TestConsole_ErrorHeaders(t *testing.T) {
	s := newStack(t)
	session := s.signIn(t, s.AdminKey)
	https := http.Header{"X-Forwarded-Proto": {"https"}}
	page := s.send(t, http.MethodGet, "/console/organizations", session, nil, https)
	names := []string{"Content-Security-Policy", "X-Frame-Options", "X-Content-Type-Options", "Referrer-Policy",
		"Cross-Origin-Opener-Policy", "Cross-Origin-Embedder-Policy", "Cross-Origin-Resource-Policy",
		"X-Permitted-Cross-Domain-Policies", "Permissions-Policy", "Cache-Control", "Strict-Transport-Security"}
	for _, h := range names {
		if page.Header.Get(h) == "" {
			t.Fatalf("the console's page has no %s", h)
		}
	}
	for _, tc := range []struct {
		method, path string
		status       int
	}{
		{http.MethodGet, "/console/nowhere", http.StatusNotFound},
		{http.MethodGet, "/console/organizations/" + s.org.ID + "/nowhere", http.StatusNotFound},
		{http.MethodGet, "/console/static", http.StatusNotFound},
		{http.MethodGet, "/console/", http.StatusNotFound},
		{http.MethodGet, "/console//organizations", http.StatusNotFound},
		{http.MethodPost, "/console/nowhere", http.StatusNotFound},
		{http.MethodDelete, "/console/organizations", http.StatusMethodNotAllowed},
		{http.MethodPut, "/console", http.StatusMethodNotAllowed},
		{http.MethodPatch, "/console/tokens", http.StatusMethodNotAllowed},
		{http.MethodPost, "/console/events", http.StatusMethodNotAllowed},
		{http.MethodPost, "/console/static/console.css", http.StatusMethodNotAllowed},
		{http.MethodDelete, "/console/api-keys/" + s.key.ID, http.StatusMethodNotAllowed},
	} {
		for name, cookie := range map[string]*http.Cookie{"signed in": session, "no session": nil} {
			res := s.send(t, tc.method, tc.path, cookie, nil, https)
			if res.StatusCode != tc.status {
				t.Errorf("%s %s, %s: %d, want %d", tc.method, tc.path, name, res.StatusCode, tc.status)
			}
			if tc.status == http.StatusMethodNotAllowed && res.Header.Get("Allow") == "" {
				t.Errorf("%s %s, %s: 405 without Allow", tc.method, tc.path, name)
			}
			for _, h := range names {
				if got, want := res.Header.Get(h), page.Header.Get(h); got != want {
					t.Errorf("%s %s, %s: %s %q, want the pages' %q", tc.method, tc.path, name, h, got, want)
				}
			}
		}
	}
}

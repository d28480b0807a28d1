package httpapi_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"latchkey/pkg/account"
	"latchkey/pkg/httpapi"
	"latchkey/pkg/httpapi/httpapitest"
)

// fixture prepares one successful call of a route: a path with fresh ids
// and a valid body, so that a success is possible for every caller that
// should have one, even for DELETE.
type fixture func(a api) (path string, body any, status int)

// fixtures has one entry per route; TestAuth fails if a route lacks one, so
// a new route cannot escape the authentication and scope checks.
var fixtures = map[string]fixture{
	"POST /v1/auth/token": func(a api) (string, any, int) {
		return "/v1/auth/token", map[string]any{"scopes": []string{"read:users"}, "expires_in": "5m"}, http.StatusCreated
	},
	"POST /v1/auth/revoke": func(a api) (string, any, int) {
		tok, _ := a.IssueToken(a.t, a.AdminKey, "", "read:users")
		return "/v1/auth/revoke", map[string]any{"token": tok}, http.StatusOK
	},
	"GET /v1/auth/verify": func(a api) (string, any, int) { return "/v1/auth/verify", nil, http.StatusOK },
	"GET /v1/auth/jwks":   func(a api) (string, any, int) { return "/v1/auth/jwks", nil, http.StatusOK },
	"GET /v1/auth/status-lists": func(a api) (string, any, int) {
		return "/v1/auth/status-lists", nil, http.StatusOK
	},
	"GET /v1/auth/status-lists/{id}": func(a api) (string, any, int) {
		tok, _ := a.IssueToken(a.t, a.AdminKey, "", "read:users")
		return strings.TrimPrefix(refOf(a.t, tok).URI, httpapitest.Issuer), nil, http.StatusOK
	},
	"GET /.well-known/oauth-authorization-server": func(a api) (string, any, int) {
		return "/.well-known/oauth-authorization-server", nil, http.StatusOK
	},
	"GET /.well-known/openid-configuration": func(a api) (string, any, int) {
		return "/.well-known/openid-configuration", nil, http.StatusOK
	},
	"GET /.well-known/jwks.json": func(a api) (string, any, int) { return "/.well-known/jwks.json", nil, http.StatusOK },
	// The OAuth endpoints' body is a form: the fixture is its parameters,
	// for a client that holds the key the test makes (see testOAuthAuth).
	"POST /oauth2/token": func(a api) (string, any, int) {
		return "/oauth2/token", url.Values{"grant_type": {"client_credentials"}}, http.StatusOK
	},
	"POST /oauth2/introspect": func(a api) (string, any, int) {
		tok, _ := a.IssueToken(a.t, a.AdminKey, "", "read:users")
		return "/oauth2/introspect", url.Values{"token": {tok}}, http.StatusOK
	},
	"POST /oauth2/revoke": func(a api) (string, any, int) {
		tok, _ := a.IssueToken(a.t, a.AdminKey, "", "read:users")
		return "/oauth2/revoke", url.Values{"token": {tok}}, http.StatusOK
	},
	"POST /v1/api-keys": func(a api) (string, any, int) {
		return "/v1/api-keys", map[string]any{"name": "k", "scopes": []string{account.ScopeWriteAPIKeys}}, http.StatusCreated
	},
	"GET /v1/api-keys": func(a api) (string, any, int) { return "/v1/api-keys", nil, http.StatusOK },
	// A key reads and deletes only keys whose grants are within its own:
	// the target holds just the scope that the caller with it is given.
	"GET /v1/api-keys/{id}": func(a api) (string, any, int) {
		k, _ := a.CreateAPIKey(a.t, account.ScopeReadAPIKeys)
		return "/v1/api-keys/" + k.ID, nil, http.StatusOK
	},
	"PATCH /v1/api-keys/{id}": func(a api) (string, any, int) {
		k, _ := a.CreateAPIKey(a.t, account.ScopeWriteAPIKeys)
		return "/v1/api-keys/" + k.ID, map[string]any{"name": "renamed", "metadata": map[string]string{"team": "billing"}}, http.StatusOK
	},
	"POST /v1/api-keys/{id}/rotate": func(a api) (string, any, int) {
		k, _ := a.CreateAPIKey(a.t, account.ScopeWriteAPIKeys)
		return "/v1/api-keys/" + k.ID + "/rotate", map[string]any{"expires_in": "1h"}, http.StatusOK
	},
	"GET /v1/api-keys/{id}/tokens": func(a api) (string, any, int) {
		k, _ := a.CreateAPIKey(a.t, account.ScopeReadAPIKeys)
		return "/v1/api-keys/" + k.ID + "/tokens", nil, http.StatusOK
	},
	"GET /v1/api-keys/{id}/usage": func(a api) (string, any, int) {
		k, _ := a.CreateAPIKey(a.t, account.ScopeReadAPIKeys)
		return "/v1/api-keys/" + k.ID + "/usage", nil, http.StatusOK
	},
	"POST /v1/api-keys/{id}/tokens/revoke": func(a api) (string, any, int) {
		k, _ := a.CreateAPIKey(a.t, account.ScopeRevokeTokens)
		return "/v1/api-keys/" + k.ID + "/tokens/revoke", map[string]any{}, http.StatusOK
	},
	"GET /v1/events": func(a api) (string, any, int) { return "/v1/events?types=user.created", nil, http.StatusOK },
	"DELETE /v1/api-keys/{id}": func(a api) (string, any, int) {
		k, _ := a.CreateAPIKey(a.t, account.ScopeWriteAPIKeys)
		return "/v1/api-keys/" + k.ID, nil, http.StatusNoContent
	},
	"GET /v1/organizations": func(a api) (string, any, int) { return "/v1/organizations", nil, http.StatusOK },
	"POST /v1/organizations": func(a api) (string, any, int) {
		return "/v1/organizations", map[string]any{"name": "Acme", "slug": uniqueSlug()}, http.StatusCreated
	},
	"GET /v1/organizations/{id}": func(a api) (string, any, int) {
		return "/v1/organizations/" + a.CreateOrganization(a.t, uniqueSlug()).ID, nil, http.StatusOK
	},
	"GET /v1/organizations/{id}/usage": func(a api) (string, any, int) {
		return "/v1/organizations/" + a.CreateOrganization(a.t, uniqueSlug()).ID + "/usage", nil, http.StatusOK
	},
	"PATCH /v1/organizations/{id}": func(a api) (string, any, int) {
		return "/v1/organizations/" + a.CreateOrganization(a.t, uniqueSlug()).ID, map[string]any{"plan": "pro"}, http.StatusOK
	},
	"DELETE /v1/organizations/{id}": func(a api) (string, any, int) {
		return "/v1/organizations/" + a.CreateOrganization(a.t, uniqueSlug()).ID, nil, http.StatusNoContent
	},
	"GET /v1/organizations/{id}/members": func(a api) (string, any, int) {
		return "/v1/organizations/" + a.CreateOrganization(a.t, uniqueSlug()).ID + "/members", nil, http.StatusOK
	},
	"POST /v1/organizations/{id}/members": func(a api) (string, any, int) {
		o, u := a.CreateOrganization(a.t, uniqueSlug()), a.CreateUser(a.t, uniqueEmail())
		return "/v1/organizations/" + o.ID + "/members", map[string]any{"user_id": u.ID, "role": "admin"}, http.StatusCreated
	},
	"GET /v1/organizations/{id}/members/{user_id}": func(a api) (string, any, int) {
		o, u := a.CreateOrganization(a.t, uniqueSlug()), a.CreateUser(a.t, uniqueEmail())
		a.AddMember(a.t, o.ID, u.ID, "member")
		return "/v1/organizations/" + o.ID + "/members/" + u.ID, nil, http.StatusOK
	},
	"PATCH /v1/organizations/{id}/members/{user_id}": func(a api) (string, any, int) {
		o, u := a.CreateOrganization(a.t, uniqueSlug()), a.CreateUser(a.t, uniqueEmail())
		a.AddMember(a.t, o.ID, u.ID, "member")
		return "/v1/organizations/" + o.ID + "/members/" + u.ID, map[string]any{"role": "owner"}, http.StatusOK
	},
	"DELETE /v1/organizations/{id}/members/{user_id}": func(a api) (string, any, int) {
		o, u := a.CreateOrganization(a.t, uniqueSlug()), a.CreateUser(a.t, uniqueEmail())
		a.AddMember(a.t, o.ID, u.ID, "member")
		return "/v1/organizations/" + o.ID + "/members/" + u.ID, nil, http.StatusNoContent
	},
	"GET /v1/users": func(a api) (string, any, int) { return "/v1/users", nil, http.StatusOK },
	"POST /v1/users": func(a api) (string, any, int) {
		return "/v1/users", map[string]any{"email": uniqueEmail(), "name": "Ada"}, http.StatusCreated
	},
	"GET /v1/users/{id}": func(a api) (string, any, int) {
		return "/v1/users/" + a.CreateUser(a.t, uniqueEmail()).ID, nil, http.StatusOK
	},
	"PUT /v1/users/{id}": func(a api) (string, any, int) {
		return "/v1/users/" + a.CreateUser(a.t, uniqueEmail()).ID, map[string]any{"name": "Ada King"}, http.StatusOK
	},
	"PATCH /v1/users/{id}": func(a api) (string, any, int) {
		return "/v1/users/" + a.CreateUser(a.t, uniqueEmail()).ID, map[string]any{"email": uniqueEmail()}, http.StatusOK
	},
	"DELETE /v1/users/{id}": func(a api) (string, any, int) {
		return "/v1/users/" + a.CreateUser(a.t, uniqueEmail()).ID, nil, http.StatusNoContent
	},
	"GET /v1/users/{id}/organizations": func(a api) (string, any, int) {
		return "/v1/users/" + a.CreateUser(a.t, uniqueEmail()).ID + "/organizations", nil, http.StatusOK
	},
}

// keyOnly routes refuse access tokens whatever their scopes.
func keyOnly(r httpapi.Route) bool {
	return r.Path == "/v1/auth/token" || strings.HasPrefix(r.Path, "/v1/api-keys")
}

// TestAuth checks authentication and scope for every route: no credential,
// an unknown key, a deleted key, keys and tokens without and with the scope,
// a revoked token and an expired token.
func TestAuth(t *testing.T) {
	for _, route := range httpapi.Routes() {
		name := route.Method + " " + route.Path
		t.Run(name, func(t *testing.T) {
			prepare, ok := fixtures[name]
			if !ok {
				t.Fatalf("no fixture for %s: add one so the route is covered", name)
			}
			a := newAPI(t)
			call := func(credential string) (*http.Response, []byte, int) {
				t.Helper()
				path, body, status := prepare(a)
				res := a.do(route.Method, path, credential, body)
				return res.Response, res.Body, status
			}

			// The scope a caller needs for a success. Routes without a fixed
			// scope are given one that their fixture exercises.
			scope := route.Scope()
			switch route.Path {
			case "/v1/auth/token":
				scope = "read:users" // the scope the fixture requests
			case "/v1/auth/revoke":
				scope = account.ScopeRevokeTokens // the fixture's token is another key's
			}
			deleted, deletedSecret := a.CreateAPIKey(t, account.ScopeAll)
			a.do(http.MethodDelete, "/v1/api-keys/"+deleted.ID, a.AdminKey, nil)

			switch {
			case route.Public():
				for _, cred := range []string{"", "lk_unknown", deletedSecret} {
					res, _, _ := call(cred)
					if res.StatusCode != http.StatusOK {
						t.Errorf("credential %q: got %d, want 200: the route is public", cred, res.StatusCode)
					}
				}
				return
			case route.OAuth():
				testOAuthAuth(t, a, prepare, deleted.ID, deletedSecret)
				return
			case route.Path == "/v1/auth/verify":
				testVerifyAuth(t, a, deletedSecret)
				return
			}

			checkUnauthorized := func(what, cred string) {
				t.Helper()
				res, body, _ := call(cred)
				if res.StatusCode != http.StatusUnauthorized {
					t.Errorf("%s: got %d %s, want 401", what, res.StatusCode, body)
				}
				challenge := res.Header.Get("WWW-Authenticate")
				if !strings.HasPrefix(challenge, "Bearer") {
					t.Errorf("%s: WWW-Authenticate %q, want a Bearer challenge", what, challenge)
				}
				if cred != "" && !strings.Contains(challenge, `error="invalid_token"`) {
					t.Errorf("%s: WWW-Authenticate %q, want error=\"invalid_token\"", what, challenge)
				}
			}
			checkUnauthorized("no credential", "")
			checkUnauthorized("unknown key", account.NewAPIKeySecret())
			checkUnauthorized("deleted key", deletedSecret)

			checkStatus := func(what, cred string, wantCode string) {
				t.Helper()
				res, body, status := call(cred)
				switch wantCode {
				case "":
					if res.StatusCode != status {
						t.Errorf("%s: got %d %s, want %d", what, res.StatusCode, body, status)
					}
				case "forbidden":
					if res.StatusCode != http.StatusForbidden || !strings.Contains(string(body), `"code":"forbidden"`) {
						t.Errorf("%s: got %d %s, want 403 forbidden", what, res.StatusCode, body)
					}
				case "insufficient_scope":
					if res.StatusCode != http.StatusForbidden || !strings.Contains(string(body), `"code":"insufficient_scope"`) {
						t.Errorf("%s: got %d %s, want 403 insufficient_scope", what, res.StatusCode, body)
					}
					if got, want := res.Header.Get("WWW-Authenticate"), `error="insufficient_scope", scope="`+scope+`"`; !strings.Contains(got, want) {
						t.Errorf("%s: WWW-Authenticate %q, want it to contain %q", what, got, want)
					}
				}
			}

			_, keyWith := a.CreateAPIKey(t, scope)
			_, keyWithout := a.CreateAPIKey(t, "other:thing")
			checkStatus("key without the scope", keyWithout, "insufficient_scope")
			checkStatus("key with the scope", keyWith, "")

			tokWithout, _ := a.IssueToken(t, keyWithout, "", "other:thing")
			tokWith, _ := a.IssueToken(t, keyWith, "", scope)
			tokRevoked, _ := a.IssueToken(t, keyWith, "", scope)
			tokExpiring, _ := a.IssueToken(t, keyWith, "1m", scope)
			if keyOnly(route) {
				checkStatus("token without the scope", tokWithout, "forbidden")
				checkStatus("token with the scope", tokWith, "forbidden")
			} else {
				checkStatus("token without the scope", tokWithout, "insufficient_scope")
				checkStatus("token with the scope", tokWith, "")
			}

			// A token for another resource server, with the scope: valid,
			// but not for this API (RFC 9068, section 4).
			p, err := a.Service.Authenticate(t.Context(), keyWith)
			if err != nil {
				t.Fatal(err)
			}
			tokForeign, _, err := a.Service.IssueToken(t.Context(), p, account.TokenRequest{Scopes: []string{scope}, Audience: "https://orders.example.com"})
			if err != nil {
				t.Fatal(err)
			}
			checkUnauthorized("token for another audience", tokForeign)

			a.do(http.MethodPost, "/v1/auth/revoke", a.AdminKey, map[string]string{"token": tokRevoked})
			checkUnauthorized("revoked token", tokRevoked)

			a.Clock.Advance(2 * time.Minute)
			checkUnauthorized("expired token", tokExpiring)
		})
	}
}

// testOAuthAuth covers an OAuth endpoint, which authenticates its client:
// without client authentication, or with an unknown, deleted or foreign
// credential, it is 401 invalid_client; the key's own id and secret, by
// either method, succeed, whatever the key's grants (the revocation
// fixture's token is another key's, so its client holds revoke:tokens).
func testOAuthAuth(t *testing.T, a api, prepare fixture, deletedID, deletedSecret string) {
	t.Helper()
	call := func(c client) *httpapitest.Response {
		t.Helper()
		path, params, _ := prepare(a)
		return a.form(path, c, params.(url.Values))
	}
	key, secret := a.CreateAPIKey(t, account.ScopeRevokeTokens)
	_, otherSecret := a.CreateAPIKey(t, "read:users")
	tok, _ := a.IssueToken(t, secret, "", account.ScopeRevokeTokens)
	for what, c := range map[string]client{
		"no client authentication": {},
		"unknown key":              basicClient(account.NewID(account.PrefixAPIKey, time.Now()), account.NewAPIKeySecret()),
		"deleted key":              basicClient(deletedID, deletedSecret),
		"another key's secret":     postClient(key.ID, otherSecret),
		"an access token":          {bearer: tok},
	} {
		t.Run(what, func(t *testing.T) { wantOAuthError(t, call(c), http.StatusUnauthorized, "invalid_client") })
	}
	_, _, status := prepare(a)
	for what, c := range map[string]client{"basic": basicClient(key.ID, secret), "post": postClient(key.ID, secret)} {
		if res := call(c); res.StatusCode != status {
			t.Errorf("%s: got %d %s, want %d", what, res.StatusCode, res.Body, status)
		}
	}
}

// testVerifyAuth covers verify, whose bearer is the subject: only a missing
// or non-Bearer header is 401; every other credential gets an answer.
func testVerifyAuth(t *testing.T, a api, deletedSecret string) {
	t.Helper()
	verify := func(cred string) map[string]any {
		t.Helper()
		res := a.do(http.MethodGet, "/v1/auth/verify", cred, nil)
		want(t, res, http.StatusOK)
		return res.Map(t)
	}
	wantInvalid := func(what, cred, reason string) {
		t.Helper()
		if got := verify(cred); got["valid"] != false || got["reason"] != reason {
			t.Errorf("%s: got %v, want valid false, reason %s", what, got, reason)
		}
	}

	res := a.do(http.MethodGet, "/v1/auth/verify", "", nil)
	wantProblem(t, res, http.StatusUnauthorized, "unauthorized")
	if got := res.Header.Get("WWW-Authenticate"); !strings.HasPrefix(got, "Bearer") {
		t.Errorf("WWW-Authenticate %q, want a Bearer challenge", got)
	}
	basic := a.DoRaw(t, a.Handler, http.MethodGet, "/v1/auth/verify", http.Header{"Authorization": {"Basic YTpi"}}, nil)
	a.CheckResponse(t, basic)
	wantProblem(t, basic, http.StatusUnauthorized, "unauthorized")

	wantInvalid("unknown key", account.NewAPIKeySecret(), account.ReasonInvalid)
	wantInvalid("deleted key", deletedSecret, account.ReasonInvalid)

	_, key := a.CreateAPIKey(t, "read:users", "other:thing")
	tokWith, _ := a.IssueToken(t, key, "", "read:users")
	tokWithout, _ := a.IssueToken(t, key, "", "other:thing")
	tokRevoked, _ := a.IssueToken(t, key, "", "read:users")
	tokExpiring, _ := a.IssueToken(t, key, "1m", "read:users")
	for _, tok := range []string{tokWith, tokWithout} {
		if got := verify(tok); got["valid"] != true {
			t.Errorf("valid token: got %v, want valid true", got)
		}
	}
	// Checking the audience is the calling resource server's job: verify
	// says it.
	p, err := a.Service.Authenticate(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	tokForeign, _, err := a.Service.IssueToken(t.Context(), p, account.TokenRequest{Scopes: []string{"read:users"}, Audience: "https://orders.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	if got := verify(tokForeign); got["valid"] != true || got["audience"] != "https://orders.example.com" {
		t.Errorf("token for another audience: got %v, want valid true, with its audience", got)
	}
	a.do(http.MethodPost, "/v1/auth/revoke", key, map[string]string{"token": tokRevoked})
	wantInvalid("revoked token", tokRevoked, account.ReasonRevoked)
	a.Clock.Advance(2 * time.Minute)
	wantInvalid("expired token", tokExpiring, account.ReasonExpired)
}

// TestRevocation checks that revoking a token takes effect on the very next
// request, the token's signature being in the cache, and that revoking
// again reports the first revocation.
func TestRevocation(t *testing.T) {
	a := newAPI(t)
	tok, claims := a.IssueToken(t, a.AdminKey, "", "read:users")
	want(t, a.do(http.MethodGet, "/v1/users", tok, nil), http.StatusOK)
	wantCached(t, a, 1)

	first := a.do(http.MethodPost, "/v1/auth/revoke", a.AdminKey, map[string]string{"token": tok})
	want(t, first, http.StatusOK)
	got := first.Map(t)
	if got["token_id"] != claims.ID || got["revoked"] != true {
		t.Errorf("revoke: got %v, want token_id %s, revoked true", got, claims.ID)
	}

	wantProblem(t, a.do(http.MethodGet, "/v1/users", tok, nil), http.StatusUnauthorized, "unauthorized")
	if v := a.do(http.MethodGet, "/v1/auth/verify", tok, nil).Map(t); v["valid"] != false || v["reason"] != "revoked" {
		t.Errorf("verify after revoke: got %v, want invalid, revoked", v)
	}

	a.Clock.Advance(time.Second)
	again := a.do(http.MethodPost, "/v1/auth/revoke", a.AdminKey, map[string]string{"token": tok}).Map(t)
	if again["revoked_at"] != got["revoked_at"] {
		t.Errorf("revoke again: revoked_at %v, want the first %v", again["revoked_at"], got["revoked_at"])
	}
}

// wantCached fails t unless the token cache holds n tokens: the refusals
// that follow then come from the revocation entry and issuing key read on
// every request, not from a signature check.
func wantCached(t *testing.T, a api, n int) {
	t.Helper()
	if got := a.TokenCache.Len(); got != n {
		t.Fatalf("token cache: %d tokens, want %d", got, n)
	}
}

// TestDeleteAPIKeyInvalidatesTokens checks that deleting a key stops it and
// every token issued for it at once.
func TestDeleteAPIKeyInvalidatesTokens(t *testing.T) {
	a := newAPI(t)
	key, secret := a.CreateAPIKey(t, "read:users")
	tok, _ := a.IssueToken(t, secret, "", "read:users")
	want(t, a.do(http.MethodGet, "/v1/users", tok, nil), http.StatusOK)
	wantCached(t, a, 1)

	want(t, a.do(http.MethodDelete, "/v1/api-keys/"+key.ID, a.AdminKey, nil), http.StatusNoContent)

	wantProblem(t, a.do(http.MethodGet, "/v1/users", tok, nil), http.StatusUnauthorized, "unauthorized")
	wantProblem(t, a.do(http.MethodGet, "/v1/users", secret, nil), http.StatusUnauthorized, "unauthorized")
	if v := a.do(http.MethodGet, "/v1/auth/verify", tok, nil).Map(t); v["valid"] != false || v["reason"] != "revoked" {
		t.Errorf("verify after key deletion: got %v, want invalid, revoked", v)
	}
	wantProblem(t, a.do(http.MethodDelete, "/v1/api-keys/"+key.ID, a.AdminKey, nil), http.StatusNotFound, "not_found")
}

// TestBearerParsing checks the Authorization header grammar.
func TestBearerParsing(t *testing.T) {
	a := newAPI(t)
	for _, tc := range []struct {
		header string
		status int
	}{
		{"Bearer " + a.AdminKey, http.StatusOK},
		{"bearer " + a.AdminKey, http.StatusOK},
		{"BEARER " + a.AdminKey, http.StatusOK},
		{"Bearer", http.StatusUnauthorized},
		{"Bearer ", http.StatusUnauthorized},
		{"Basic " + a.AdminKey, http.StatusUnauthorized},
		{"Bearer " + a.AdminKey + " extra", http.StatusUnauthorized},
		{a.AdminKey, http.StatusUnauthorized},
	} {
		res := a.DoRaw(t, a.Handler, http.MethodGet, "/v1/users", http.Header{"Authorization": {tc.header}}, nil)
		a.CheckResponse(t, res)
		if res.StatusCode != tc.status {
			t.Errorf("Authorization %.12q…: got %d, want %d", tc.header, res.StatusCode, tc.status)
		}
	}
}

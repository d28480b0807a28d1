package httpapi_test

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"latchkey/pkg/account"
	"latchkey/pkg/httpapi/httpapitest"
	"latchkey/pkg/token"
)

// client is how an OAuth request authenticates its client.
type client struct {
	basicID, basicSecret string // client_secret_basic, encoded as RFC 6749 section 2.3.1 says
	postID, postSecret   string // client_secret_post
	bearer               string // Authorization: Bearer
	rawAuthorization     string // an Authorization header as it is
}

func basicClient(id, secret string) client { return client{basicID: id, basicSecret: secret} }
func postClient(id, secret string) client  { return client{postID: id, postSecret: secret} }

// form posts params to an OAuth endpoint as the client, through the real
// handler, and checks the response against openapi.yaml.
func (a api) form(path string, c client, params url.Values) *httpapitest.Response {
	a.t.Helper()
	body := url.Values{}
	for k, v := range params {
		body[k] = v
	}
	h := http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}
	switch {
	case c.basicID != "" || c.basicSecret != "":
		raw := url.QueryEscape(c.basicID) + ":" + url.QueryEscape(c.basicSecret)
		h.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(raw)))
	case c.bearer != "":
		h.Set("Authorization", "Bearer "+c.bearer)
	case c.rawAuthorization != "":
		h.Set("Authorization", c.rawAuthorization)
	}
	if c.postID != "" {
		body.Set("client_id", c.postID)
	}
	if c.postSecret != "" {
		body.Set("client_secret", c.postSecret)
	}
	res := a.DoRaw(a.t, a.Handler, http.MethodPost, path, h, body.Encode())
	a.CheckResponse(a.t, res)
	return res
}

// wantOAuthError fails the test unless res is an RFC 6749 section 5.2 error
// with status and code.
func wantOAuthError(t testing.TB, res *httpapitest.Response, status int, code string) {
	t.Helper()
	var e struct {
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	if res.StatusCode != status || res.Header.Get("Content-Type") != "application/json" || json.Unmarshal(res.Body, &e) != nil || e.Error != code {
		t.Fatalf("%s: got %d %s %s, want %d with error %s", res.Request.URL.Path, res.StatusCode, res.Header.Get("Content-Type"), res.Body, status, code)
	}
	if e.Description == "" {
		t.Errorf("%s %s: no error_description", res.Request.URL.Path, code)
	}
	if got := res.Header.Get("Cache-Control"); got != "no-store" {
		t.Errorf("%s %s: Cache-Control %q, want no-store", res.Request.URL.Path, code, got)
	}
	if status == http.StatusUnauthorized && !strings.HasPrefix(res.Header.Get("WWW-Authenticate"), "Basic ") && !strings.HasPrefix(res.Header.Get("WWW-Authenticate"), "Bearer ") {
		t.Errorf("%s: 401 with WWW-Authenticate %q", res.Request.URL.Path, res.Header.Get("WWW-Authenticate"))
	}
}

// oauthToken is the decoded success of /oauth2/token.
type oauthToken struct {
	AccessToken string `json:"access_token"`
	TokenType   string `json:"token_type"`
	ExpiresIn   int    `json:"expires_in"`
	Scope       string `json:"scope"`
}

func (a api) clientToken(c client, params url.Values) oauthToken {
	a.t.Helper()
	if params.Get("grant_type") == "" {
		params.Set("grant_type", "client_credentials")
	}
	res := a.form("/oauth2/token", c, params)
	want(a.t, res, http.StatusOK)
	var tok oauthToken
	res.Decode(a.t, &tok)
	return tok
}

func (a api) introspect(c client, tok string) map[string]any {
	a.t.Helper()
	res := a.form("/oauth2/introspect", c, url.Values{"token": {tok}})
	want(a.t, res, http.StatusOK)
	if got := res.Header.Get("Cache-Control"); got != "no-store" {
		a.t.Errorf("introspect Cache-Control: got %q, want no-store", got)
	}
	return res.Map(a.t)
}

// payload decodes a token's claims without checking it.
func payload(t testing.TB, tok string) map[string]any {
	t.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWS: %q", tok)
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestOAuthToken(t *testing.T) {
	t.Run("ClientSecretBasic", func(t *testing.T) {
		a := newAPI(t)
		key, secret := a.CreateAPIKey(t, "read:users", "write:users")
		res := a.form("/oauth2/token", basicClient(key.ID, secret), url.Values{"grant_type": {"client_credentials"}})
		want(t, res, http.StatusOK)
		if res.Header.Get("Cache-Control") != "no-store" || res.Header.Get("Pragma") != "no-cache" {
			t.Errorf("Cache-Control %q, Pragma %q: want no-store, no-cache", res.Header.Get("Cache-Control"), res.Header.Get("Pragma"))
		}
		var tok oauthToken
		res.Decode(t, &tok)
		// No scope asked: every grant of the key (RFC 6749 section 3.3).
		if tok.TokenType != "Bearer" || tok.ExpiresIn != 3600 || tok.Scope != "read:users write:users" {
			t.Errorf("token: got %+v, want Bearer, 3600 s, the key's grants", tok)
		}
		c := payload(t, tok.AccessToken)
		if c["iss"] != httpapitest.Issuer || c["aud"] != httpapitest.Issuer || c["sub"] != key.ID || c["client_id"] != key.ID || c["scope"] != tok.Scope {
			t.Errorf("claims: got %v", c)
		}
		// The token is the service's: it works on the API.
		want(t, a.do(http.MethodGet, "/v1/users", tok.AccessToken, nil), http.StatusOK)
		if v := a.do(http.MethodGet, "/v1/auth/verify", tok.AccessToken, nil).Map(t); v["valid"] != true || v["key_id"] != key.ID {
			t.Errorf("verify: got %v", v)
		}
	})
	t.Run("ClientSecretPost", func(t *testing.T) {
		a := newAPI(t)
		key, secret := a.CreateAPIKey(t, "read:users", "write:users")
		tok := a.clientToken(postClient(key.ID, secret), url.Values{"scope": {"read:users"}})
		if tok.Scope != "read:users" {
			t.Errorf("scope: got %q, want read:users", tok.Scope)
		}
	})
	t.Run("ClientSecretBasicIsFormEncoded", func(t *testing.T) {
		// RFC 6749 section 2.3.1: client_id and secret are form-urlencoded
		// before they go into Basic, so a secret with ':', '+' or '%' (an
		// admin key from configuration may have them) survives.
		a := newAPI(t)
		secret := "admin:key+with/special%chars=0123456789abcdef"
		if err := a.Service.EnsureBootstrapKey(context.Background(), secret, time.Time{}); err != nil {
			t.Fatal(err)
		}
		p, err := a.Service.Authenticate(context.Background(), secret)
		if err != nil {
			t.Fatal(err)
		}
		a.clientToken(basicClient(p.KeyID, secret), url.Values{"scope": {"read:users"}})
		raw := base64.StdEncoding.EncodeToString([]byte(p.KeyID + ":" + secret)) // not encoded: '+' reads as a space
		wantOAuthError(t, a.form("/oauth2/token", client{rawAuthorization: "Basic " + raw}, url.Values{"grant_type": {"client_credentials"}}), http.StatusUnauthorized, "invalid_client")
	})
	t.Run("Audience", func(t *testing.T) {
		a := newAPI(t)
		key, secret := a.CreateAPIKey(t, "read:users")
		c := basicClient(key.ID, secret)
		for _, params := range []url.Values{
			{"audience": {"https://orders.example.com"}},
			{"resource": {"https://orders.example.com"}},
			{"audience": {"https://orders.example.com"}, "resource": {"https://orders.example.com"}},
		} {
			tok := a.clientToken(c, params)
			if got := payload(t, tok.AccessToken)["aud"]; got != "https://orders.example.com" {
				t.Errorf("%v: aud %v", params, got)
			}
		}
		tok := a.clientToken(c, url.Values{"audience": {"orders-api"}})
		if got := a.introspect(c, tok.AccessToken)["aud"]; got != "orders-api" {
			t.Errorf("introspected aud: got %v, want orders-api", got)
		}
	})
	t.Run("Errors", func(t *testing.T) {
		a := newAPI(t)
		key, secret := a.CreateAPIKey(t, "read:users")
		other, otherSecret := a.CreateAPIKey(t, "read:users")
		c := basicClient(key.ID, secret)
		cc := url.Values{"grant_type": {"client_credentials"}}
		with := func(kv ...string) url.Values {
			v := url.Values{"grant_type": {"client_credentials"}}
			for i := 0; i+1 < len(kv); i += 2 {
				v.Set(kv[i], kv[i+1])
			}
			return v
		}
		accessToken, _ := a.IssueToken(t, secret, "", "read:users")
		for _, tc := range []struct {
			name   string
			c      client
			params url.Values
			status int
			code   string
		}{
			{"NoClientAuthentication", client{}, cc, 401, "invalid_client"},
			{"WrongSecret", basicClient(key.ID, secret+"x"), cc, 401, "invalid_client"},
			{"SecretOfAnotherClient", basicClient(key.ID, otherSecret), cc, 401, "invalid_client"},
			{"SecretOfAnotherClientPost", postClient(other.ID, secret), cc, 401, "invalid_client"},
			{"UnknownClient", basicClient(account.NewID(account.PrefixAPIKey, time.Now()), secret), cc, 401, "invalid_client"},
			{"AccessTokenAsSecret", basicClient(key.ID, accessToken), cc, 401, "invalid_client"},
			{"BearerAPIKey", client{bearer: secret}, cc, 401, "invalid_client"},
			{"PostIDWithoutSecret", client{postID: key.ID}, cc, 401, "invalid_client"},
			{"TwoMethods", client{basicID: key.ID, basicSecret: secret, postSecret: secret}, cc, 400, "invalid_request"},
			{"NoGrantType", c, url.Values{"scope": {"read:users"}}, 400, "invalid_request"},
			{"PasswordGrant", c, with("grant_type", "password"), 400, "unsupported_grant_type"},
			{"ScopeNotGranted", c, with("scope", "read:users write:users"), 400, "invalid_scope"},
			{"ScopeMalformed", c, with("scope", "read users"), 400, "invalid_scope"},
			{"ScopeDoubleSpace", c, with("scope", "read:users  read:users"), 400, "invalid_scope"},
			{"AudienceInvalid", c, with("audience", "https://x.example/#fragment"), 400, "invalid_target"},
			{"ResourceRelative", c, with("resource", "/orders"), 400, "invalid_target"},
			{"AudienceAndResourceDiffer", c, with("audience", "a", "resource", "https://b.example"), 400, "invalid_request"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				wantOAuthError(t, a.form("/oauth2/token", tc.c, tc.params), tc.status, tc.code)
			})
		}
		t.Run("UnsupportedAuthorizationScheme", func(t *testing.T) {
			res := a.form("/oauth2/token", client{rawAuthorization: "Digest abc"}, cc)
			wantOAuthError(t, res, http.StatusUnauthorized, "invalid_client")
			if got := res.Header.Get("WWW-Authenticate"); !strings.HasPrefix(got, "Basic ") {
				t.Errorf("WWW-Authenticate %q, want Basic", got)
			}
		})
		t.Run("RepeatedParameter", func(t *testing.T) {
			h := http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}
			res := a.DoRaw(t, a.Handler, http.MethodPost, "/oauth2/token", h,
				"grant_type=client_credentials&grant_type=client_credentials&client_id="+key.ID+"&client_secret="+secret)
			a.CheckResponse(t, res)
			wantOAuthError(t, res, http.StatusBadRequest, "invalid_request")
		})
		t.Run("ParametersInTheQuery", func(t *testing.T) {
			h := http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}
			res := a.DoRaw(t, a.Handler, http.MethodPost, "/oauth2/token?client_id="+key.ID+"&client_secret="+secret, h, "grant_type=client_credentials")
			wantOAuthError(t, res, http.StatusBadRequest, "invalid_request")
		})
		t.Run("JSONBody", func(t *testing.T) {
			h := http.Header{"Content-Type": {"application/json"}}
			res := a.DoRaw(t, a.Handler, http.MethodPost, "/oauth2/token", h, `{"grant_type":"client_credentials"}`)
			a.CheckResponse(t, res)
			wantOAuthError(t, res, http.StatusBadRequest, "invalid_request")
		})
		t.Run("ExpiredOrDeletedKey", func(t *testing.T) {
			a := newAPI(t)
			k, s := a.CreateAPIKey(t, "read:users")
			want(t, a.do(http.MethodDelete, "/v1/api-keys/"+k.ID, a.AdminKey, nil), http.StatusNoContent)
			wantOAuthError(t, a.form("/oauth2/token", basicClient(k.ID, s), cc), http.StatusUnauthorized, "invalid_client")
		})
		t.Run("EmptyValueIsAbsent", func(t *testing.T) {
			// RFC 6749 section 3.1: a parameter without a value is omitted.
			tok := a.clientToken(c, url.Values{"scope": {""}, "audience": {""}})
			if tok.Scope != "read:users" {
				t.Errorf("scope: got %q, want the key's grants", tok.Scope)
			}
		})
		t.Run("UnknownParameterIgnored", func(t *testing.T) {
			// RFC 6749 section 3.1: unrecognized parameters are ignored.
			a.clientToken(c, url.Values{"state": {"xyz"}})
		})
	})
}

func TestOAuthIntrospect(t *testing.T) {
	a := newAPI(t)
	key, secret := a.CreateAPIKey(t, "read:users", "read:things")
	other, otherSecret := a.CreateAPIKey(t, "read:users")
	tok := a.clientToken(basicClient(key.ID, secret), url.Values{"scope": {"read:users read:things"}, "audience": {"https://orders.example.com"}})
	claims := payload(t, tok.AccessToken)

	t.Run("Active", func(t *testing.T) {
		// By the token's client, another client, or a Bearer API key.
		for _, c := range []client{basicClient(key.ID, secret), postClient(other.ID, otherSecret), {bearer: a.AdminKey}} {
			got := a.introspect(c, tok.AccessToken)
			wantMap := map[string]any{
				"active": true, "scope": "read:users read:things", "client_id": key.ID, "sub": key.ID,
				"aud": "https://orders.example.com", "iss": httpapitest.Issuer, "exp": claims["exp"], "iat": claims["iat"],
				"jti": claims["jti"], "token_type": "Bearer",
			}
			if len(got) != len(wantMap) {
				t.Errorf("got %v, want exactly %v", got, wantMap)
			}
			for k, v := range wantMap {
				if got[k] != v {
					t.Errorf("%s: got %v, want %v", k, got[k], v)
				}
			}
		}
	})
	t.Run("Inactive", func(t *testing.T) {
		a := newAPI(t)
		key, secret := a.CreateAPIKey(t, "read:users")
		gone, goneSecret := a.CreateAPIKey(t, "read:users")
		c := basicClient(key.ID, secret)
		revoked, _ := a.IssueToken(t, secret, "", "read:users")
		want(t, a.do(http.MethodPost, "/v1/auth/revoke", secret, map[string]any{"token": revoked}), http.StatusOK)
		expiring, _ := a.IssueToken(t, secret, "1m", "read:users")
		orphan, _ := a.IssueToken(t, goneSecret, "", "read:users")
		want(t, a.do(http.MethodDelete, "/v1/api-keys/"+gone.ID, a.AdminKey, nil), http.StatusNoContent)
		forged, err := token.NewSigner(newSigningKey(t), httpapitest.Issuer).Sign(account.TokenClaims{
			ID: account.NewID(account.PrefixToken, time.Now()), KeyID: key.ID, Audience: httpapitest.Issuer,
			Scopes: []string{"*:*"}, IssuedAt: time.Now(), ExpiresAt: time.Now().Add(time.Hour),
		})
		if err != nil {
			t.Fatal(err)
		}
		a.Clock.Advance(2 * time.Minute)
		for name, tok := range map[string]string{
			"Revoked": revoked, "Expired": expiring, "KeyDeleted": orphan, "Forged": forged,
			"Garbage": "not-a-token", "APIKey": secret,
		} {
			res := a.form("/oauth2/introspect", c, url.Values{"token": {tok}, "token_type_hint": {"access_token"}})
			want(t, res, http.StatusOK)
			if got := strings.TrimSpace(string(res.Body)); got != `{"active":false}` {
				t.Errorf("%s: got %s, want exactly {\"active\":false}", name, got)
			}
		}
	})
	t.Run("Errors", func(t *testing.T) {
		wantOAuthError(t, a.form("/oauth2/introspect", client{}, url.Values{"token": {tok.AccessToken}}), http.StatusUnauthorized, "invalid_client")
		wantOAuthError(t, a.form("/oauth2/introspect", basicClient(key.ID, otherSecret), url.Values{"token": {tok.AccessToken}}), http.StatusUnauthorized, "invalid_client")
		// An access token is not a client credential, even a valid one.
		res := a.form("/oauth2/introspect", client{bearer: tok.AccessToken}, url.Values{"token": {tok.AccessToken}})
		wantOAuthError(t, res, http.StatusUnauthorized, "invalid_client")
		if got := res.Header.Get("WWW-Authenticate"); !strings.HasPrefix(got, "Bearer ") {
			t.Errorf("WWW-Authenticate %q after a Bearer credential, want Bearer", got)
		}
		wantOAuthError(t, a.form("/oauth2/introspect", basicClient(key.ID, secret), url.Values{}), http.StatusBadRequest, "invalid_request")
	})
}

func TestOAuthRevoke(t *testing.T) {
	a := newAPI(t)
	key, secret := a.CreateAPIKey(t, "read:users")
	other, otherSecret := a.CreateAPIKey(t, "read:users")
	revoker, revokerSecret := a.CreateAPIKey(t, account.ScopeRevokeTokens)
	c := basicClient(key.ID, secret)
	revoke := func(c client, params url.Values) *httpapitest.Response {
		t.Helper()
		return a.form("/oauth2/revoke", c, params)
	}
	wantEmpty := func(res *httpapitest.Response) {
		t.Helper()
		want(t, res, http.StatusOK)
		if len(res.Body) != 0 {
			t.Errorf("body: got %q, want none", res.Body)
		}
	}

	t.Run("OwnToken", func(t *testing.T) {
		tok := a.clientToken(c, url.Values{})
		wantEmpty(revoke(c, url.Values{"token": {tok.AccessToken}, "token_type_hint": {"access_token"}}))
		if got := a.introspect(c, tok.AccessToken); got["active"] != false {
			t.Errorf("introspect after revoke: got %v", got)
		}
		if got := a.do(http.MethodGet, "/v1/auth/verify", tok.AccessToken, nil).Map(t); got["reason"] != "revoked" {
			t.Errorf("verify after revoke: got %v", got)
		}
		// Again: still 200 (RFC 7009 section 2.2).
		wantEmpty(revoke(c, url.Values{"token": {tok.AccessToken}}))
	})
	t.Run("ExpiredOrUnknown", func(t *testing.T) {
		a := newAPI(t)
		_, secret := a.CreateAPIKey(t, "read:users")
		p, _ := a.Service.Authenticate(context.Background(), secret)
		c := basicClient(p.KeyID, secret)
		expiring, _ := a.IssueToken(t, secret, "1m", "read:users")
		a.Clock.Advance(2 * time.Minute)
		for _, tok := range []string{expiring, "not-a-token", "eyJ.eyJ.sig"} {
			res := a.form("/oauth2/revoke", c, url.Values{"token": {tok}})
			want(t, res, http.StatusOK)
		}
		// A hint of a kind this server does not issue, for a string that is
		// none of its tokens.
		res := a.form("/oauth2/revoke", c, url.Values{"token": {"not-a-token"}, "token_type_hint": {"refresh_token"}})
		wantOAuthError(t, res, http.StatusBadRequest, "unsupported_token_type")
	})
	t.Run("HintDoesNotLimitTheSearch", func(t *testing.T) {
		// RFC 7009 section 2.1: a wrong hint does not stop the server.
		tok := a.clientToken(c, url.Values{})
		wantEmpty(revoke(c, url.Values{"token": {tok.AccessToken}, "token_type_hint": {"refresh_token"}}))
		if got := a.introspect(c, tok.AccessToken); got["active"] != false {
			t.Errorf("introspect: got %v", got)
		}
	})
	t.Run("AnotherClientsToken", func(t *testing.T) {
		tok := a.clientToken(c, url.Values{})
		wantOAuthError(t, revoke(postClient(other.ID, otherSecret), url.Values{"token": {tok.AccessToken}}), http.StatusBadRequest, "unauthorized_client")
		if got := a.introspect(c, tok.AccessToken); got["active"] != true {
			t.Errorf("a refused revocation revoked the token: %v", got)
		}
		wantEmpty(revoke(basicClient(revoker.ID, revokerSecret), url.Values{"token": {tok.AccessToken}}))
		if got := a.introspect(c, tok.AccessToken); got["active"] != false {
			t.Errorf("revoked with revoke:tokens: got %v", got)
		}
	})
	t.Run("BearerAPIKey", func(t *testing.T) {
		tok := a.clientToken(c, url.Values{})
		wantEmpty(revoke(client{bearer: secret}, url.Values{"token": {tok.AccessToken}}))
	})
	t.Run("Errors", func(t *testing.T) {
		tok := a.clientToken(c, url.Values{})
		wantOAuthError(t, revoke(client{}, url.Values{"token": {tok.AccessToken}}), http.StatusUnauthorized, "invalid_client")
		wantOAuthError(t, revoke(client{bearer: tok.AccessToken}, url.Values{"token": {tok.AccessToken}}), http.StatusUnauthorized, "invalid_client")
		wantOAuthError(t, revoke(c, url.Values{}), http.StatusBadRequest, "invalid_request")
		if got := a.introspect(c, tok.AccessToken); got["active"] != true {
			t.Errorf("a refused request revoked the token: %v", got)
		}
	})
}

func TestOAuthMetadata(t *testing.T) {
	a := newAPI(t)
	get := func(path string) *httpapitest.Response {
		t.Helper()
		res := a.do(http.MethodGet, path, "", nil)
		want(t, res, http.StatusOK)
		return res
	}
	as := get("/.well-known/oauth-authorization-server")
	oidc := get("/.well-known/openid-configuration")
	if string(as.Body) != string(oidc.Body) {
		t.Errorf("the two documents differ:\n%s\n%s", as.Body, oidc.Body)
	}
	m := as.Map(t)
	iss := httpapitest.Issuer
	for k, v := range map[string]string{
		"issuer": iss, "token_endpoint": iss + "/oauth2/token", "jwks_uri": iss + "/.well-known/jwks.json",
		"introspection_endpoint": iss + "/oauth2/introspect", "revocation_endpoint": iss + "/oauth2/revoke",
	} {
		if m[k] != v {
			t.Errorf("%s: got %v, want %s", k, m[k], v)
		}
	}
	strs := func(k string) []string {
		var out []string
		for _, v := range m[k].([]any) {
			out = append(out, v.(string))
		}
		return out
	}
	for k, v := range map[string][]string{
		"grant_types_supported":                         {"client_credentials"},
		"token_endpoint_auth_methods_supported":         {"client_secret_basic", "client_secret_post"},
		"introspection_endpoint_auth_methods_supported": {"client_secret_basic", "client_secret_post"},
		"revocation_endpoint_auth_methods_supported":    {"client_secret_basic", "client_secret_post"},
		"scopes_supported":                              account.KnownScopes(),
		"response_types_supported":                      nil, // no authorization endpoint
	} {
		if got := strs(k); !slices.Equal(got, v) {
			t.Errorf("%s: got %v, want %v", k, got, v)
		}
	}
	// Nothing of OpenID Connect that Latchkey does not implement: no
	// authorization endpoint, userinfo or ID tokens.
	for _, k := range []string{"authorization_endpoint", "userinfo_endpoint", "subject_types_supported", "id_token_signing_alg_values_supported"} {
		if v, ok := m[k]; ok {
			t.Errorf("%s: got %v, want absent", k, v)
		}
	}
	// jwks_uri serves the key set of /v1/auth/jwks, and the tokens' iss is
	// the document's issuer.
	if jwks, v1 := get("/.well-known/jwks.json"), get("/v1/auth/jwks"); string(jwks.Body) != string(v1.Body) || jwks.Header.Get("Content-Type") != "application/jwk-set+json" {
		t.Errorf("jwks.json: got %s %s, want the set of /v1/auth/jwks", jwks.Header.Get("Content-Type"), jwks.Body)
	}
	tok, _ := a.IssueToken(t, a.AdminKey, "", "read:users")
	if got := payload(t, tok)["iss"]; got != m["issuer"] {
		t.Errorf("iss %v, issuer %v: want the same", got, m["issuer"])
	}
}

func newSigningKey(t testing.TB) ed25519.PrivateKey {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	return priv
}

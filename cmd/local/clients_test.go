package main_test

// These tests use Latchkey as its users would, with OAuth 2.0 and JOSE
// libraries that nobody here wrote, against the built server: they find
// everything from the issuer's discovery document.

import (
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"latchkey/pkg/authorizer"
	"latchkey/pkg/dynamostore"
	"latchkey/pkg/dynamostore/dynamotest"
	"latchkey/pkg/lambdaapp/authorizerapp"
	"latchkey/pkg/lambdaapp/replay"
)

// discover fetches the authorization server metadata of the server's
// issuer, as a client configured with only that URL does.
func discover(t *testing.T, issuer string) map[string]any {
	t.Helper()
	res, err := http.Get(issuer + "/.well-known/oauth-authorization-server")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(res.Body).Decode(&m); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("metadata: %d %v", res.StatusCode, err)
	}
	if m["issuer"] != issuer {
		t.Fatalf("metadata issuer %v, fetched from %s", m["issuer"], issuer)
	}
	return m
}

// clientKey creates an API key holding scopes through the API and returns
// its id and secret: an OAuth client's client_id and client_secret.
func clientKey(t *testing.T, s *server, admin string, scopes ...string) (id, secret string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"name": "oauth client", "scopes": scopes})
	status, key := s.call(t, "POST", "/v1/api-keys", admin, string(body))
	if status != http.StatusCreated {
		t.Fatalf("create API key: %d %v", status, key)
	}
	return key["id"].(string), key["key"].(string)
}

// ordersClient is a client of s with read:orders, and the access token it
// obtains for the audience https://orders.example.com as a client does:
// golang.org/x/oauth2's client credentials flow, endpoint from discovery.
func ordersClient(t *testing.T, s *server, admin string) (clientcredentials.Config, *oauth2.Token) {
	t.Helper()
	id, secret := clientKey(t, s, admin, "read:orders")
	cfg := clientcredentials.Config{
		ClientID: id, ClientSecret: secret, TokenURL: discover(t, s.base)["token_endpoint"].(string),
		EndpointParams: url.Values{"audience": {"https://orders.example.com"}},
	}
	tok, err := cfg.Token(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return cfg, tok
}

// TestClient_GoOAuth2: golang.org/x/oauth2/clientcredentials, pointed at
// the token_endpoint of the discovery document, obtains a token with
// client_secret_basic and again with client_secret_post, and its
// oauth2.Transport calls Latchkey endpoints with it. The client secret of
// the second client is a configured admin key with characters that must be
// form-urlencoded inside Basic (RFC 6749 section 2.3.1).
func TestClient_GoOAuth2(t *testing.T) {
	admin := "admin+key/with:special%chars=" + strings.Repeat("x", 24)
	s := start(t, t.TempDir(), "ADMIN_API_KEY="+admin)
	meta := discover(t, s.base)
	keyID, keySecret := clientKey(t, s, admin, "read:users", "read:organizations")
	_, keys := s.call(t, "GET", "/v1/api-keys?limit=100", admin, "")
	var adminID string
	for _, k := range keys["data"].([]any) {
		if k := k.(map[string]any); k["bootstrap"] == true {
			adminID = k["id"].(string)
		}
	}

	for _, tc := range []struct {
		name             string
		style            oauth2.AuthStyle
		clientID, secret string
		scopes           []string
		wantScope        string
	}{
		{"ClientSecretBasic", oauth2.AuthStyleInHeader, keyID, keySecret, []string{"read:users"}, "read:users"},
		{"ClientSecretPost", oauth2.AuthStyleInParams, keyID, keySecret, nil, "read:users read:organizations"},
		{"ClientSecretBasicEncoded", oauth2.AuthStyleInHeader, adminID, admin, []string{"read:users", "write:users"}, "read:users write:users"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cfg := clientcredentials.Config{
				ClientID:     tc.clientID,
				ClientSecret: tc.secret,
				TokenURL:     meta["token_endpoint"].(string),
				Scopes:       tc.scopes,
				AuthStyle:    tc.style,
			}
			// The client sets Expiry from expires_in when the answer comes:
			// an hour (in whole seconds) after a moment between these two.
			before := time.Now()
			tok, err := cfg.Token(ctx)
			if err != nil {
				t.Fatalf("Token: %v", err)
			}
			after := time.Now()
			if tok.TokenType != "Bearer" || tok.Extra("scope") != tc.wantScope ||
				tok.Expiry.Before(before.Add(time.Hour-time.Second)) || tok.Expiry.After(after.Add(time.Hour)) {
				t.Errorf("token: type %q, scope %v, expires at %v (asked at %v); want Bearer, %q, 1 h", tok.TokenType, tok.Extra("scope"), tok.Expiry, before, tc.wantScope)
			}
			// Every request through the client's transport carries the token.
			client := cfg.Client(ctx)
			if _, ok := client.Transport.(*oauth2.Transport); !ok {
				t.Fatalf("client transport %T, want *oauth2.Transport", client.Transport)
			}
			res, err := client.Get(s.base + "/v1/users?limit=1")
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				t.Errorf("GET /v1/users through oauth2.Transport: got %d, want 200", res.StatusCode)
			}
			res, err = client.Get(s.base + "/v1/auth/verify")
			if err != nil {
				t.Fatal(err)
			}
			var v map[string]any
			json.NewDecoder(res.Body).Decode(&v)
			res.Body.Close()
			if v["valid"] != true || v["key_id"] != tc.clientID || v["audience"] != meta["issuer"] {
				t.Errorf("verify through oauth2.Transport: got %v, want valid, key %s, the issuer as audience", v, tc.clientID)
			}
		})
	}
	t.Run("OtherAudience", func(t *testing.T) {
		// A token for another resource server is valid, for it: verify
		// says so, and Latchkey's own API refuses it (RFC 9068, section 4).
		cfg, _ := ordersClient(t, s, admin)
		client := cfg.Client(context.Background())
		res, err := client.Get(s.base + "/v1/auth/verify")
		if err != nil {
			t.Fatal(err)
		}
		var v map[string]any
		json.NewDecoder(res.Body).Decode(&v)
		res.Body.Close()
		if v["valid"] != true || v["audience"] != "https://orders.example.com" {
			t.Errorf("verify of a token for another audience: got %v, want valid, with its audience", v)
		}
		res, err = client.Get(s.base + "/v1/users?limit=1")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET /v1/users with a token for another audience: got %d, want 401", res.StatusCode)
		}
	})
	t.Run("ErrWrongSecret", func(t *testing.T) {
		cfg := clientcredentials.Config{ClientID: keyID, ClientSecret: admin, TokenURL: meta["token_endpoint"].(string)}
		_, err := cfg.Token(context.Background())
		var re *oauth2.RetrieveError
		if !errors.As(err, &re) || re.ErrorCode != "invalid_client" || re.Response.StatusCode != http.StatusUnauthorized {
			t.Fatalf("another key's secret: got %v, want a 401 invalid_client the library understands", err)
		}
	})
	t.Run("ErrRateLimited", func(t *testing.T) {
		// Over its key's rate limit, the client reads the OAuth error,
		// not a body it cannot parse, and learns when to retry.
		body := `{"name": "limited client", "scopes": ["read:users"], "rate_limits": [{"name": "hour", "limit": 1, "period": "1h"}]}`
		status, key := s.call(t, "POST", "/v1/api-keys", admin, body)
		if status != http.StatusCreated {
			t.Fatalf("create API key: %d %v", status, key)
		}
		cfg := clientcredentials.Config{ClientID: key["id"].(string), ClientSecret: key["key"].(string), TokenURL: meta["token_endpoint"].(string)}
		if _, err := cfg.Token(context.Background()); err != nil {
			t.Fatalf("the one token the limit allows: %v", err)
		}
		_, err := cfg.Token(context.Background())
		var re *oauth2.RetrieveError
		if !errors.As(err, &re) || re.ErrorCode != "rate_limited" || re.ErrorDescription == "" || re.Response.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("over the rate limit: got %v, want a 429 rate_limited the library understands", err)
		}
		if re.Response.Header.Get("Retry-After") == "" || re.Response.Header.Get("RateLimit") == "" {
			t.Errorf("429 headers: %v, want Retry-After and RateLimit", re.Response.Header)
		}
	})
	t.Run("ErrScopeNotGranted", func(t *testing.T) {
		cfg := clientcredentials.Config{ClientID: keyID, ClientSecret: keySecret, TokenURL: meta["token_endpoint"].(string), Scopes: []string{"write:users"}}
		_, err := cfg.Token(context.Background())
		var re *oauth2.RetrieveError
		if !errors.As(err, &re) || re.ErrorCode != "invalid_scope" || re.ErrorDescription == "" {
			t.Fatalf("a scope the key lacks: got %v, want invalid_scope with a description", err)
		}
	})
}

// joseVerify runs tools/jose-verify.mjs: jose (npm, pinned in
// tools/package-lock.json and installed by scripts/node-tools.sh) verifies
// the token as a resource server that knows only the issuer's URL, with the
// issuer and the audience required, and alg (EdDSA when empty) the one
// algorithm allowed. It returns what the script printed and whether the
// token was accepted.
func joseVerify(t *testing.T, issuer, audience, token string, alg ...string) (map[string]any, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	args := append([]string{"../../tools/jose-verify.mjs", issuer, audience, token}, alg...)
	out, err := exec.CommandContext(ctx, "node", args...).Output()
	var result map[string]any
	if jerr := json.Unmarshal(out, &result); jerr != nil {
		t.Fatalf("jose-verify.mjs: %v; output %q (%v)", jerr, out, err)
	}
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	return result, err == nil
}

// needJose skips t unless Node.js is on PATH and jose is in
// tools/node_modules at the version tools/package.json pins. go test ./...
// needs Go alone and installs nothing into the checkout; make test installs
// the Node.js tools first (scripts/node-tools.sh), so there it runs.
func needJose(t *testing.T) {
	t.Helper()
	needNodeTool(t, "jose")
}

// needNodeTool skips t unless Node.js is on PATH and the package name is in
// tools/node_modules at the version tools/package.json pins.
func needNodeTool(t *testing.T, name string) {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("needs Node.js (node is not on PATH); make test runs it")
	}
	var pins struct {
		DevDependencies map[string]string `json:"devDependencies"`
	}
	b, err := os.ReadFile("../../tools/package.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &pins); err != nil {
		t.Fatal(err)
	}
	var installed struct {
		Version string `json:"version"`
	}
	if b, err := os.ReadFile("../../tools/node_modules/" + name + "/package.json"); err == nil {
		_ = json.Unmarshal(b, &installed) // an unreadable one is not the pinned one
	}
	if want := pins.DevDependencies[name]; installed.Version != want {
		t.Skipf("needs %s %s in tools/node_modules (found %q): scripts/node-tools.sh installs it, as make test does", name, want, installed.Version)
	}
}

// TestClient_Jose: jose verifies a token through the discovery document's
// jwks_uri, with issuer, audience and the server's one algorithm required,
// and refuses it for another audience, issuer or algorithm; for a server
// with each SIGNING_ALG. With RS256 the server keeps its RSA key in a file
// of its own, 0600, beside the Ed25519 one.
func TestClient_Jose(t *testing.T) {
	needJose(t)
	for alg, other := range map[string]string{"EdDSA": "RS256", "RS256": "EdDSA"} {
		t.Run(alg, func(t *testing.T) {
			admin := "lk_test_" + strings.Repeat("j", 40)
			dir := t.TempDir()
			s := start(t, dir, "ADMIN_API_KEY="+admin, "SIGNING_ALG="+alg)
			meta := discover(t, s.base)
			// The algorithm is published as each key's alg at jwks_uri (the
			// metadata names no ID token algorithm: there are no ID tokens).
			res, err := http.Get(meta["jwks_uri"].(string))
			if err != nil {
				t.Fatal(err)
			}
			var set struct{ Keys []struct{ Alg string } }
			json.NewDecoder(res.Body).Decode(&set)
			res.Body.Close()
			if len(set.Keys) == 0 || slices.ContainsFunc(set.Keys, func(k struct{ Alg string }) bool { return k.Alg != alg }) {
				t.Errorf("jwks_uri: keys %v, want each with alg %s", set.Keys, alg)
			}
			id, secret := clientKey(t, s, admin, "read:users")
			cfg := clientcredentials.Config{
				ClientID: id, ClientSecret: secret, TokenURL: meta["token_endpoint"].(string),
				EndpointParams: url.Values{"resource": {"https://orders.example.com"}},
			}
			tok, err := cfg.Token(context.Background())
			if err != nil {
				t.Fatal(err)
			}

			got, ok := joseVerify(t, s.base, "https://orders.example.com", tok.AccessToken, alg)
			if !ok {
				t.Fatalf("jose refused the token: %v", got)
			}
			header, _ := got["header"].(map[string]any)
			payload, _ := got["payload"].(map[string]any)
			if header["alg"] != alg || header["typ"] != "at+jwt" || payload["iss"] != s.base || payload["client_id"] != id || payload["scope"] != "read:users" {
				t.Errorf("jose's view of the token: %v", got)
			}
			for name, args := range map[string][3]string{
				"OtherAudience": {s.base, "https://billing.example.com", alg},
				// The same server by another name: not the issuer the token and
				// the document name.
				"OtherIssuer": {strings.Replace(s.base, "127.0.0.1", "localhost", 1), "https://orders.example.com", alg},
				// A verifier that allows only the other algorithm.
				"OtherAlgorithm": {s.base, "https://orders.example.com", other},
			} {
				if got, ok := joseVerify(t, args[0], args[1], tok.AccessToken, args[2]); ok {
					t.Errorf("%s: jose accepted the token: %v", name, got)
				}
			}
			if got, _ := joseVerify(t, s.base, "https://billing.example.com", tok.AccessToken, alg); got["error"] != "ERR_JWT_CLAIM_VALIDATION_FAILED" {
				t.Errorf("another audience: got %v, want jose's claim validation error", got)
			}
			if alg == "RS256" {
				fi, err := os.Stat(filepath.Join(dir, "signing-key-rs256.pem"))
				if err != nil || fi.Mode().Perm() != 0o600 {
					t.Errorf("the RSA key file: %v, %v; want it, 0600", fi, err)
				}
			}
		})
	}
}

// apiGatewayJWTCheck follows, step by step, what AWS documents that API
// Gateway's built-in HTTP API JWT authorizer does with a token
// (docs.aws.amazon.com/apigateway/latest/developerguide/http-api-jwt-authorizer.html,
// "Validating a JWT"), written here from that page and not with
// pkg/token: it fetches {issuer}/.well-known/openid-configuration (the
// RFC 8414 metadata, served there for it), takes
// jwks_uri, finds the key whose kid is the token's, checks "the token's
// algorithm and signature by using the public key that is fetched from the
// issuer's jwks_uri. Currently, only RSA-based algorithms are supported",
// then iss, aud (one of audiences), exp and nbf (and iat) against now, and
// that scope holds one of the route's scopes. It returns nil if the
// authorizer would let the request through.
func apiGatewayJWTCheck(issuer string, audiences, routeScopes []string, tok string, now time.Time) error {
	get := func(u string, v any) error {
		res, err := http.Get(u)
		if err != nil {
			return err
		}
		defer res.Body.Close()
		if res.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %d", u, res.StatusCode)
		}
		return json.NewDecoder(res.Body).Decode(v)
	}
	var meta struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	if err := get(issuer+"/.well-known/openid-configuration", &meta); err != nil {
		return err
	}
	var set struct {
		Keys []struct{ Kty, Kid, Alg, N, E string } `json:"keys"`
	}
	if err := get(meta.JWKSURI, &set); err != nil {
		return err
	}
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return errors.New("not a JWS")
	}
	var header struct{ Alg, Kid string }
	var claims struct {
		Iss           string
		Aud           any
		Exp, Nbf, Iat *int64
		Scope         string
	}
	for i, v := range []any{&header, &claims} {
		b, err := base64.RawURLEncoding.DecodeString(parts[i])
		if err != nil {
			return err
		}
		if err := json.Unmarshal(b, v); err != nil {
			return err
		}
	}
	// kid: the token's kid names a key of jwks_uri; alg: RSA-based only.
	if header.Alg != "RS256" {
		return fmt.Errorf("alg %q: only RSA-based algorithms are supported", header.Alg)
	}
	var key *rsa.PublicKey
	for _, k := range set.Keys {
		if k.Kid == header.Kid && k.Kty == "RSA" && k.Alg == header.Alg {
			n, nerr := base64.RawURLEncoding.DecodeString(k.N)
			e, eerr := base64.RawURLEncoding.DecodeString(k.E)
			if nerr != nil || eerr != nil {
				return fmt.Errorf("jwks key %s: bad n or e", k.Kid)
			}
			key = &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
		}
	}
	if key == nil {
		return fmt.Errorf("no RSA key with kid %q in %s", header.Kid, meta.JWKSURI)
	}
	// The signature, RSASSA-PKCS1-v1_5 with SHA-256 (RFC 7518, 3.3).
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return err
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err := rsa.VerifyPKCS1v15(key, crypto.SHA256, digest[:], sig); err != nil {
		return fmt.Errorf("signature: %w", err)
	}
	// iss: the issuer configured for the authorizer.
	if claims.Iss != issuer {
		return fmt.Errorf("iss %q, want %q", claims.Iss, issuer)
	}
	// aud: one of the audiences configured.
	var aud []string
	switch a := claims.Aud.(type) {
	case string:
		aud = []string{a}
	case []any:
		for _, v := range a {
			aud = append(aud, fmt.Sprint(v))
		}
	}
	if !slices.ContainsFunc(aud, func(a string) bool { return slices.Contains(audiences, a) }) {
		return fmt.Errorf("aud %v, none of %v", aud, audiences)
	}
	// exp after now; nbf and iat before it.
	if claims.Exp == nil || !now.Before(time.Unix(*claims.Exp, 0)) {
		return errors.New("exp missing or past")
	}
	if claims.Nbf != nil && now.Before(time.Unix(*claims.Nbf, 0)) {
		return errors.New("nbf in the future")
	}
	if claims.Iat != nil && now.Before(time.Unix(*claims.Iat, 0)) {
		return errors.New("iat in the future")
	}
	// scope: at least one of the route's authorization scopes.
	if len(routeScopes) > 0 && !slices.ContainsFunc(strings.Fields(claims.Scope), func(s string) bool { return slices.Contains(routeScopes, s) }) {
		return fmt.Errorf("scope %q holds none of %v", claims.Scope, routeScopes)
	}
	return nil
}

// TestClient_APIGatewayJWTAuthorizer: a token from a server with
// SIGNING_ALG=RS256 passes every check AWS documents for API Gateway's
// built-in JWT authorizer, and fails it for another audience, issuer or
// route scope; a token from an EdDSA server fails at the algorithm, as the
// README says.
func TestClient_APIGatewayJWTAuthorizer(t *testing.T) {
	aud, scopes := []string{"https://orders.example.com"}, []string{"read:orders"}
	t.Run("RS256", func(t *testing.T) {
		admin := "lk_test_" + strings.Repeat("g", 40)
		s := start(t, t.TempDir(), "ADMIN_API_KEY="+admin, "SIGNING_ALG=RS256")
		_, token := ordersClient(t, s, admin)
		tok := token.AccessToken
		if err := apiGatewayJWTCheck(s.base, aud, scopes, tok, time.Now()); err != nil {
			t.Fatalf("the documented checks refuse the token: %v", err)
		}
		for name, err := range map[string]error{
			"OtherAudience": apiGatewayJWTCheck(s.base, []string{"https://billing.example.com"}, scopes, tok, time.Now()),
			"OtherIssuer":   apiGatewayJWTCheck(strings.Replace(s.base, "127.0.0.1", "localhost", 1), aud, scopes, tok, time.Now()),
			"OtherScope":    apiGatewayJWTCheck(s.base, aud, []string{"write:orders"}, tok, time.Now()),
			"Expired":       apiGatewayJWTCheck(s.base, aud, scopes, tok, time.Now().Add(2*time.Hour)),
		} {
			if err == nil {
				t.Errorf("%s: the documented checks accept the token", name)
			}
		}
	})
	t.Run("EdDSA", func(t *testing.T) {
		admin := "lk_test_" + strings.Repeat("h", 40)
		s := start(t, t.TempDir(), "ADMIN_API_KEY="+admin)
		_, tok := ordersClient(t, s, admin)
		if err := apiGatewayJWTCheck(s.base, aud, scopes, tok.AccessToken, time.Now()); err == nil || !strings.Contains(err.Error(), "RSA") {
			t.Fatalf("an EdDSA token: got %v, want refused for its algorithm", err)
		}
	})
}

// TestClient_RevokedEverywhere: the server runs over DynamoDB Local, as
// `make run-dynamodb` runs it, and publishes its key and issuer to the
// table as a deployment's auth function does. A token obtained with
// golang.org/x/oauth2 is accepted by the Lambda authorizer reading that
// table and active at /oauth2/introspect; revoked at /oauth2/revoke, it is
// {"active": false} at introspection and refused by the authorizer in the
// very next call, while jose, which verifies offline, still accepts it:
// what the README says of offline verification.
func TestClient_RevokedEverywhere(t *testing.T) {
	endpoint := dynamotest.Endpoint(t)
	db := dynamotest.NewClient(t)
	table := dynamotest.NewTable(t, db)
	needJose(t)
	admin := "lk_test_" + strings.Repeat("r", 40)
	s := start(t, t.TempDir(), "ADMIN_API_KEY="+admin, "DYNAMODB_ENDPOINT="+endpoint, "TABLE_NAME="+table, "STORE_TIMEOUT="+dynamostore.MaxTimeout.String())
	meta := discover(t, s.base)
	cfg, tok := ordersClient(t, s, admin)

	// The authorizer, built as its main builds it, over the same table.
	store := dynamostore.New(db, table, dynamostore.WithTimeout(dynamotest.Timeout))
	routes, err := authorizer.ParseRoutes(`{"GET /orders": {"scope": "read:orders", "audience": "https://orders.example.com"}}`)
	if err != nil {
		t.Fatal(err)
	}
	authorize, err := authorizerapp.New(context.Background(), authorizerapp.Config{TableName: table, Routes: routes},
		authorizerapp.Deps{Store: store, Keys: store})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := replay.LoadAuthorizerEvent("../../events/authorizer/valid.json")
	if err != nil {
		t.Fatal(err)
	}
	ev.Headers["authorization"] = "Bearer " + tok.AccessToken
	authorized := func() bool {
		t.Helper()
		res, err := authorize(context.Background(), ev)
		if err != nil {
			t.Fatal(err)
		}
		return res.IsAuthorized
	}
	introspect := func() string {
		t.Helper()
		res, err := cfg.Client(context.Background()).PostForm(meta["introspection_endpoint"].(string), url.Values{"token": {tok.AccessToken}})
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return strings.TrimSpace(string(b))
	}
	// Introspection authenticates its caller; oauth2.Transport sends the
	// token as Bearer, which is not a client credential, so post as the
	// client instead.
	introspectAsClient := func() map[string]any {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, meta["introspection_endpoint"].(string), strings.NewReader(url.Values{"token": {tok.AccessToken}}.Encode()))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth(url.QueryEscape(cfg.ClientID), url.QueryEscape(cfg.ClientSecret))
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var m map[string]any
		if err := json.NewDecoder(res.Body).Decode(&m); err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("introspect: %d %v", res.StatusCode, err)
		}
		return m
	}

	if !authorized() {
		t.Fatal("the authorizer refused a valid token")
	}
	if got := introspectAsClient(); got["active"] != true || got["aud"] != "https://orders.example.com" {
		t.Fatalf("introspect a valid token: %v", got)
	}
	if got := introspect(); !strings.Contains(got, `"invalid_client"`) {
		t.Fatalf("introspect with the access token as the credential: %s, want invalid_client", got)
	}

	// Revoke with RFC 7009, as the client.
	req, err := http.NewRequest(http.MethodPost, meta["revocation_endpoint"].(string), strings.NewReader(url.Values{"token": {tok.AccessToken}, "token_type_hint": {"access_token"}}.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(cfg.ClientID), url.QueryEscape(cfg.ClientSecret))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("revoke: got %d, want 200", res.StatusCode)
	}

	if got := introspectAsClient(); len(got) != 1 || got["active"] != false {
		t.Errorf("introspect the revoked token: got %v, want exactly {\"active\":false}", got)
	}
	if authorized() {
		t.Error("the authorizer accepted the revoked token")
	}
	if got, ok := joseVerify(t, s.base, "https://orders.example.com", tok.AccessToken); !ok {
		t.Errorf("jose refused the revoked token offline (%v): it cannot know of a revocation", got)
	}
}

// TestClient_StatusList: the OpenWallet Foundation's implementation of
// draft-ietf-oauth-status-list reads each token's reference, decodes the
// list the server serves at it and finds VALID for a live token, INVALID
// for a revoked one and SUSPENDED for one of a disabled key; jose verifies
// each list's signature against jwks_uri with typ statuslist+jwt; the
// aggregation endpoint names the list.
func TestClient_StatusList(t *testing.T) {
	needJose(t)
	needNodeTool(t, "@sd-jwt/jwt-status-list")
	admin := "lk_test_" + strings.Repeat("s", 40)
	s := start(t, t.TempDir(), "ADMIN_API_KEY="+admin)
	_, live := clientKey(t, s, admin, "read:orders")
	pausedID, paused := clientKey(t, s, admin, "read:orders")
	issue := func(secret string) string {
		t.Helper()
		status, tok := s.call(t, "POST", "/v1/auth/token", secret, `{"scopes":["read:orders"]}`)
		if status != http.StatusCreated {
			t.Fatalf("issue: %d %v", status, tok)
		}
		return tok["access_token"].(string)
	}
	valid, revoked, suspended := issue(live), issue(live), issue(paused)
	if status, body := s.call(t, "POST", "/v1/auth/revoke", live, `{"token":"`+revoked+`"}`); status != http.StatusOK {
		t.Fatalf("revoke: %d %v", status, body)
	}
	if status, body := s.call(t, "PATCH", "/v1/api-keys/"+pausedID, admin, `{"enabled":false}`); status != http.StatusOK {
		t.Fatalf("disable: %d %v", status, body)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "node", "../../tools/status-list-check.mjs", s.base, valid, revoked, suspended).Output()
	if err != nil {
		t.Fatalf("status-list-check.mjs: %v: %s", err, out)
	}
	var got []struct {
		Idx        int64
		URI        string
		Status     int
		Aggregated bool
		Header     map[string]any
	}
	if err := json.Unmarshal(out, &got); err != nil || len(got) != 3 {
		t.Fatalf("status-list-check.mjs: %s (%v)", out, err)
	}
	for i, want := range []int{0, 1, 2} { // VALID, INVALID, SUSPENDED
		if got[i].Status != want || !got[i].Aggregated || got[i].Header["typ"] != "statuslist+jwt" || !strings.HasPrefix(got[i].URI, s.base+"/v1/auth/status-lists/") {
			t.Errorf("token %d: %+v, want status %d, aggregated, typ statuslist+jwt", i, got[i], want)
		}
	}
}

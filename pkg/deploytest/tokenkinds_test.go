package deploytest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"latchkey/pkg/dynamostore/dynamotest"
	"latchkey/pkg/lambdaapp"
	"latchkey/pkg/lambdaapp/authorizerapp"
	"latchkey/pkg/lambdaapp/replay"
)

// tokenKind is a kind of API key whose tokens every verifying path must
// judge alike. A new kind is a new constant before numTokenKinds and a row
// in tokenKinds; TestTokenKinds_EveryPath fails until it has both.
type tokenKind int

const (
	kindAdminMade     tokenKind = iota // a key the bootstrap admin key made
	kindBelowKey                       // a key another key made
	kindBound                          // a key bound to an organization
	kindOwned                          // a key with an owner
	kindBelowDisabled                  // a key below a disabled key
	kindRotatedGrace                   // a rotated key, its token issued with the previous secret in its grace period
	kindTokensRevoked                  // a key whose tokens were all revoked at once after its tokens were issued
	numTokenKinds
)

// verifyPath is a way a token is judged. A new path is a new constant
// before numVerifyPaths and a row in verifyPaths.
type verifyPath int

const (
	pathVerify     verifyPath = iota // GET /v1/auth/verify
	pathIntrospect                   // POST /oauth2/introspect
	pathAuthorizer                   // the Lambda authorizer, under its IAM role over DynamoDB
	pathOwnAPI                       // a request to Latchkey's own API with the token as credential: only one for its audience passes
	numVerifyPaths
)

// ordersRoute is the authorizer's route the tokens are sent to: its rule
// (events/authorizer/manifest.json) asks for read:orders and the orders
// audience.
const ordersRoute = "GET /orders"

// kindKey is what a kind's setup leaves: the key's id, a token of it for
// the orders API and one for Latchkey's own (the default audience), both
// with every scope of kindScopes.
type kindKey struct {
	id, ordersToken, ownToken string
}

// tokenKindCase is a row of tokenKinds.
type tokenKindCase struct {
	name string
	// setup creates the key (and what it needs) through the auth
	// function, and issues its tokens.
	setup func(f *kindsFixture) kindKey
	// valid is whether its tokens are valid; reason, when they are not,
	// the reason verify gives.
	valid  bool
	reason string
	// org and owner are the org_id and owner_id its tokens carry.
	org, owner string
}

// scopes every kind's key holds: the orders API's, and the one the own
// API request needs.
var kindScopes = []string{"read:orders", "read:organizations"}

var tokenKinds = map[tokenKind]tokenKindCase{
	kindAdminMade: {name: "AdminMade", valid: true, setup: func(f *kindsFixture) kindKey {
		return f.tokens(f.createKey(replay.AdminSecret, nil))
	}},
	kindBelowKey: {name: "BelowKey", valid: true, setup: func(f *kindsFixture) kindKey {
		parent := f.createKey(replay.AdminSecret, map[string]any{"scopes": append([]string{"write:api_keys"}, kindScopes...)})
		return f.tokens(f.createKey(parent.secret, nil))
	}},
	kindBound: {name: "Bound", valid: true, org: replay.OrgID, setup: func(f *kindsFixture) kindKey {
		return f.tokens(f.createKey(replay.AdminSecret, map[string]any{"organization_id": replay.OrgID}))
	}},
	kindOwned: {name: "Owned", valid: true, owner: "crm:4711", setup: func(f *kindsFixture) kindKey {
		return f.tokens(f.createKey(replay.AdminSecret, map[string]any{"owner_id": "crm:4711"}))
	}},
	kindBelowDisabled: {name: "BelowDisabled", valid: false, reason: "disabled", setup: func(f *kindsFixture) kindKey {
		parent := f.createKey(replay.AdminSecret, map[string]any{"scopes": append([]string{"write:api_keys"}, kindScopes...)})
		k := f.tokens(f.createKey(parent.secret, nil))
		f.call(http.MethodPatch, "/v1/api-keys/{id}", parent.id, replay.AdminSecret, `{"enabled":false}`, http.StatusOK)
		return k
	}},
	kindRotatedGrace: {name: "RotatedGrace", valid: true, setup: func(f *kindsFixture) kindKey {
		k := f.createKey(replay.AdminSecret, nil)
		f.call(http.MethodPost, "/v1/api-keys/{id}/rotate", k.id, replay.AdminSecret, `{"expires_in":"1h"}`, http.StatusOK)
		return f.tokens(k) // with the secret the rotation replaced
	}},
	kindTokensRevoked: {name: "TokensRevoked", valid: false, reason: "revoked", setup: func(f *kindsFixture) kindKey {
		k := f.tokens(f.createKey(replay.AdminSecret, nil))
		f.call(http.MethodPost, "/v1/api-keys/{id}/tokens/revoke", k.id, replay.AdminSecret, `{}`, http.StatusOK)
		return k
	}},
}

// verifyPaths judges a kind's token by each path and fails the test
// unless the answer is the kind's.
var verifyPaths = map[verifyPath]struct {
	name  string
	check func(t *testing.T, f *kindsFixture, c tokenKindCase, k kindKey)
}{
	pathVerify: {"Verify", func(t *testing.T, f *kindsFixture, c tokenKindCase, k kindKey) {
		v := f.call(http.MethodGet, "/v1/auth/verify", "", k.ordersToken, "", http.StatusOK)
		if !c.valid {
			if v["valid"] != false || v["reason"] != c.reason {
				t.Errorf("verify: got %v, want invalid, %s", v, c.reason)
			}
			return
		}
		if v["valid"] != true || v["key_id"] != k.id || v["audience"] != replay.OrdersAudience || v["organization_id"] != orNil(c.org) || v["owner_id"] != orNil(c.owner) {
			t.Errorf("verify: got %v, want valid, key %s, audience %s, organization %q, owner %q", v, k.id, replay.OrdersAudience, c.org, c.owner)
		}
	}},
	pathIntrospect: {"Introspect", func(t *testing.T, f *kindsFixture, c tokenKindCase, k kindKey) {
		in := f.call(http.MethodPost, "/oauth2/introspect", "", replay.AdminSecret, url.Values{"token": {k.ordersToken}}.Encode(), http.StatusOK)
		if !c.valid {
			if len(in) != 1 || in["active"] != false {
				t.Errorf("introspection: got %v, want exactly {\"active\": false}", in)
			}
			return
		}
		if in["active"] != true || in["client_id"] != k.id || in["aud"] != replay.OrdersAudience || in["org_id"] != orNil(c.org) || in["owner_id"] != orNil(c.owner) {
			t.Errorf("introspection: got %v, want active, client %s, aud %s, org_id %q, owner_id %q", in, k.id, replay.OrdersAudience, c.org, c.owner)
		}
	}},
	pathAuthorizer: {"Authorizer", func(t *testing.T, f *kindsFixture, c tokenKindCase, k kindKey) {
		ev := f.authorizerEvent
		ev.Headers = map[string]string{"authorization": "Bearer " + k.ordersToken}
		ev.IdentitySource = []string{"Bearer " + k.ordersToken}
		res, err := f.authorizer(context.Background(), ev)
		// Under the role, every read it made must be allowed: IAM denying
		// one fails the whole call, and API Gateway answers 500.
		f.checkAuthorizerIAM(t)
		if err != nil {
			t.Fatalf("authorizer: %v (API Gateway answers 500)", err)
		}
		if res.IsAuthorized != c.valid {
			t.Fatalf("authorizer: isAuthorized %v, want %v", res.IsAuthorized, c.valid)
		}
		if c.valid && (res.Context["key_id"] != k.id || res.Context["org_id"] != orNil(c.org) || res.Context["owner_id"] != orNil(c.owner)) {
			t.Errorf("authorizer context: got %v, want key %s, org_id %q, owner_id %q", res.Context, k.id, c.org, c.owner)
		}
	}},
	pathOwnAPI: {"OwnAPI", func(t *testing.T, f *kindsFixture, c tokenKindCase, k kindKey) {
		status := http.StatusUnauthorized
		if c.valid {
			status = http.StatusOK
		}
		f.call(http.MethodGet, "/v1/organizations/{id}", replay.OrgID, k.ownToken, "", status)
		// The orders token is for another resource server (RFC 9068,
		// section 4), valid or not.
		f.call(http.MethodGet, "/v1/organizations/{id}", replay.OrgID, k.ordersToken, "", http.StatusUnauthorized)
	}},
}

// orNil is an optional claim as a decoded answer holds it: its value, or
// nil (verify's null, or a member introspection and the authorizer's
// context leave out).
func orNil(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// TestTokenKinds_EveryPath issues a token of every kind of key and judges
// it by every verifying path, through the functions' Lambda handlers, on
// each store: bbolt always, DynamoDB Local when it runs, where the
// authorizer reads through a client of its own and each of its requests
// must be allowed by its role in the template, as IAM would evaluate it
// (a key bound to an organization once made it read a partition its role
// did not allow). Every (kind, path) cell must run: a kind or a path
// without a row fails the test.
func TestTokenKinds_EveryPath(t *testing.T) {
	for k := range numTokenKinds {
		if _, ok := tokenKinds[k]; !ok {
			t.Fatalf("token kind %d has no row in tokenKinds", k)
		}
	}
	for p := range numVerifyPaths {
		if _, ok := verifyPaths[p]; !ok {
			t.Fatalf("verify path %d has no row in verifyPaths", p)
		}
	}
	stores := []struct {
		name    string
		backend func(testing.TB) backend
	}{
		{"bbolt", func(tb testing.TB) backend { return seeded(tb, boltBackend(tb)) }},
		{"dynamodb", func(tb testing.TB) backend { return seeded(tb, dynamoBackend(tb)) }},
	}
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			if st.name == "dynamodb" && os.Getenv(dynamotest.EndpointEnv) == "" {
				t.Skip(dynamotest.EndpointEnv + " is not set; run through scripts/dynamodb-local.sh (make test does)")
			}
			f := newKindsFixture(t, st.backend(t))
			ran := map[[2]int]bool{}
			for kind := range numTokenKinds {
				c := tokenKinds[kind]
				k := c.setup(f)
				for path := range numVerifyPaths {
					p := verifyPaths[path]
					t.Run(c.name+"/"+p.name, func(t *testing.T) {
						parent := f.t
						f.t = t // the requests of the cell fail the cell
						defer func() { f.t = parent }()
						p.check(t, f, c, k)
						ran[[2]int{int(kind), int(path)}] = true
					})
				}
			}
			for kind := range numTokenKinds {
				for path := range numVerifyPaths {
					if !ran[[2]int{int(kind), int(path)}] {
						t.Errorf("the cell (%s, %s) did not run to its end", tokenKinds[kind].name, verifyPaths[path].name)
					}
				}
			}
		})
	}
}

// kindsFixture is a seeded store with the auth and organizations
// functions over it, the bootstrap admin key installed, and the authorizer
// over the same table through its own client.
type kindsFixture struct {
	t               *testing.T
	apps            map[lambdaapp.Function]*lambdaapp.App
	authorizer      authorizerapp.Handler
	authorizerCalls *callRecorder // nil over bbolt
	authorizerEvent events.APIGatewayV2CustomAuthorizerV2Request
	// roles are the authorizer role's statements under each template
	// variant.
	roles map[string][]map[string]any
	seq   int
}

func newKindsFixture(t *testing.T, b backend) *kindsFixture {
	t.Helper()
	f := &kindsFixture{t: t, apps: map[lambdaapp.Function]*lambdaapp.App{}, roles: map[string][]map[string]any{}}
	for _, fn := range []lambdaapp.Function{lambdaapp.Auth, lambdaapp.Organizations} {
		app, err := lambdaapp.New(context.Background(), replay.Config(fn, "latchkey"), lambdaapp.Deps{
			Store: b.store, Keys: b.keys, Secrets: replay.NewSecrets(), Logger: discard,
		})
		if err != nil {
			t.Fatalf("init %s: %v", fn, err)
		}
		f.apps[fn] = app
	}
	if err := f.apps[lambdaapp.Auth].Bootstrap(context.Background()); err != nil {
		t.Fatalf("bootstrap: %v", err)
	}
	routes, _, err := replay.AuthorizerManifest(authorizerEventsDir)
	if err != nil {
		t.Fatal(err)
	}
	az := b.sameTable(t)
	f.authorizer, f.authorizerCalls = newAuthorizer(t, az, routes, discard), az.calls
	f.authorizerEvent, err = replay.LoadAuthorizerEvent(filepath.Join(authorizerEventsDir, "valid.json"))
	if err != nil {
		t.Fatal(err)
	}
	if f.authorizerEvent.RouteKey != ordersRoute {
		t.Fatalf("valid.json is for %s, not %s", f.authorizerEvent.RouteKey, ordersRoute)
	}
	if f.authorizerCalls != nil {
		for _, v := range variants {
			f.roles[v.name] = loadTemplate(t).under(v.conds).statements(t, authorizerID)
		}
	}
	return f
}

// checkAuthorizerIAM fails t unless the authorizer role allows every
// DynamoDB request the authorizer made since the last check, under each
// variant of the template.
func (f *kindsFixture) checkAuthorizerIAM(t *testing.T) {
	t.Helper()
	if f.authorizerCalls == nil {
		return
	}
	var requests []iamRequest
	f.authorizerCalls.merge(map[string]bool{}, map[string]bool{}, &requests)
	f.authorizerCalls.reset()
	for name, statements := range f.roles {
		for _, req := range requests {
			allowed, err := decide(statements, req)
			if err != nil {
				t.Fatalf("%s: %s: %v", name, req, err)
			}
			if !allowed {
				t.Errorf("template %s: the authorizer's role refuses %s", name, req)
			}
		}
	}
}

// keySecret is a key created by createKey.
type keySecret struct{ id, secret string }

// createKey creates a key with kindScopes through POST /v1/api-keys,
// authenticated by creator, with the extra fields of the request.
func (f *kindsFixture) createKey(creator string, extra map[string]any) keySecret {
	f.t.Helper()
	f.seq++
	req := map[string]any{"name": fmt.Sprintf("kind %d", f.seq), "scopes": kindScopes}
	for k, v := range extra {
		req[k] = v
	}
	body, err := json.Marshal(req)
	if err != nil {
		f.t.Fatal(err)
	}
	created := f.call(http.MethodPost, "/v1/api-keys", "", creator, string(body), http.StatusCreated)
	return keySecret{id: created["id"].(string), secret: created["key"].(string)}
}

// tokens issues k's two tokens through POST /v1/auth/token with its
// secret.
func (f *kindsFixture) tokens(k keySecret) kindKey {
	f.t.Helper()
	orders := f.call(http.MethodPost, "/v1/auth/token", "", k.secret, `{"scopes":["read:orders","read:organizations"],"audience":"`+replay.OrdersAudience+`"}`, http.StatusCreated)
	own := f.call(http.MethodPost, "/v1/auth/token", "", k.secret, `{"scopes":["read:orders","read:organizations"]}`, http.StatusCreated)
	return kindKey{id: k.id, ordersToken: orders["access_token"].(string), ownToken: own["access_token"].(string)}
}

// call sends one request, as API Gateway would, to the function that
// serves pattern (with id in place of its {id}), and returns its JSON body
// after checking its status. A body is JSON, or a form for /oauth2/.
func (f *kindsFixture) call(method, pattern, id, credential, body string, status int) map[string]any {
	f.t.Helper()
	rawPath := strings.Replace(pattern, "{id}", id, 1)
	fn := lambdaapp.Auth
	if strings.HasPrefix(pattern, "/v1/organizations") {
		fn = lambdaapp.Organizations
	}
	f.seq++
	ev := events.APIGatewayV2HTTPRequest{
		Version:  "2.0",
		RouteKey: method + " " + pattern,
		RawPath:  rawPath,
		Headers:  map[string]string{"accept": "application/json", "host": "a1b2c3d4e5.execute-api.us-east-1.amazonaws.com", "authorization": "Bearer " + credential},
		Body:     body,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			AccountID: "123456789012", APIID: "a1b2c3d4e5", DomainName: "a1b2c3d4e5.execute-api.us-east-1.amazonaws.com",
			RequestID: fmt.Sprintf("TokenKinds%04d=", f.seq), RouteKey: method + " " + pattern, Stage: "$default",
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method, Path: rawPath, Protocol: "HTTP/1.1", SourceIP: "203.0.113.10"},
		},
	}
	if id != "" {
		ev.PathParameters = map[string]string{"id": id}
	}
	switch {
	case strings.HasPrefix(pattern, "/oauth2/"):
		ev.Headers["content-type"] = "application/x-www-form-urlencoded"
	case body != "":
		ev.Headers["content-type"] = "application/json"
	}
	res, err := f.apps[fn].Lambda()(context.Background(), ev)
	if err != nil {
		f.t.Fatalf("%s %s: handler error: %v", method, rawPath, err)
	}
	out := responseBody(f.t, res)
	if res.StatusCode != status {
		f.t.Fatalf("%s %s: got %d %s, want %d", method, rawPath, res.StatusCode, out, status)
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		f.t.Fatalf("%s %s: body %s: %v", method, rawPath, out, err)
	}
	return m
}

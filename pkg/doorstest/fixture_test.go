package doorstest_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"log/slog"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"latchkey/pkg/account"
	"latchkey/pkg/authorizer"
	"latchkey/pkg/boltstore"
	"latchkey/pkg/dynamostore"
	"latchkey/pkg/dynamostore/dynamotest"
	"latchkey/pkg/lambdaapp"
	"latchkey/pkg/lambdaapp/authorizerapp"
	"latchkey/pkg/lambdaapp/replay"
	"latchkey/pkg/tablestore"
)

// authorizerEventsDir holds the authorizer's events and its manifest of
// routes: GET /orders asks for read:orders and the orders audience.
const authorizerEventsDir = "../../events/authorizer"

// dynamoTimeout bounds each DynamoDB call of the fixture's store; the feed
// lags by tablestore.EventLag of it.
const dynamoTimeout = 5 * time.Second

// managerScopes are the grants of every key below above: what managing
// the target takes (a key reads and changes only keys within its grants),
// the feed, reading its organization, and the orders API's scope for the
// authorizer.
var managerScopes = []string{"read:api_keys", "write:api_keys", "revoke:tokens", "read:events", "read:organizations", "read:orders"}

// orgRateLimits is organization A's rate limit, whose uses left its
// console page shows.
const orgRateLimits = `[{"name":"org-day","limit":1000000,"period":"1d"}]`

// targetLimits are the target's rate limit and credits, and the below
// key's: a limited key's uses bound those of every key below it.
const (
	targetRateLimits = `[{"name":"day","limit":20000,"period":"1d"}]`
	targetCredits    = `{"remaining":100000}`
)

// The hosts the events name: the HTTP API's (the issuer's) and the verify
// function URL's.
const (
	apiHost       = "a1b2c3d4e5.execute-api.us-east-1.amazonaws.com"
	verifyURLHost = "k7x2q9w4m3p8r5t1v6y0z2b4n8c3d5f7.lambda-url.us-east-1.on.aws"
	sessionCookie = "__Host-latchkey_console" // the console's cookie at an https issuer
)

// cred is an API key's id and a secret of it.
type cred struct{ id, secret string }

// fixture is one store with the functions over it, the key tree of who's
// doc, and each principal's credentials.
type fixture struct {
	t          *testing.T // the running cell's: its requests fail it
	auth       *lambdaapp.App
	orgs       *lambdaapp.App
	verify     *lambdaapp.App
	authorizer authorizerapp.Handler
	azEvent    events.APIGatewayV2CustomAuthorizerV2Request
	eventLag   time.Duration

	orgA, orgB string
	adminID    string
	keys       [numWhos]cred   // the key form's credential (Previous: above's previous secret)
	sessions   [numWhos]string // console session tokens
	tokens     [numWhos]string // tokens for Latchkey's API, with managerScopes
	orders     [numWhos]string // tokens for the orders API, with read:orders
	target     cred
	// targetToken is a token of the target for the orders API;
	// firstTarget the target's id at the start, whose api_key.created the
	// feed cells look for, and eventsAfter an event id just before it.
	targetToken, targetTokenID string
	firstTarget, eventsAfter   string
	createdAt                  time.Time
	seq                        int
}

// newFixture builds the functions over a fresh store of kind st and the
// key tree, through the auth function's API and console.
func newFixture(t *testing.T, st string) *fixture {
	t.Helper()
	ctx := context.Background()
	var store *tablestore.Store
	f := &fixture{t: t}
	switch st {
	case "bbolt":
		s, err := boltstore.Open(filepath.Join(t.TempDir(), "latchkey.db"))
		if err != nil {
			t.Fatal(err)
		}
		store = s
	case "dynamodb":
		client := dynamotest.NewClient(t)
		store = dynamostore.New(client, dynamotest.NewTable(t, client), dynamostore.WithTimeout(dynamoTimeout))
		f.eventLag = tablestore.EventLag(dynamoTimeout)
	}
	t.Cleanup(func() { store.Close() })
	// As the deployment leaves it: the public keys published, the issuer
	// recorded (the IssuerConfig custom resource).
	if err := replay.PublishKeys(ctx, store); err != nil {
		t.Fatal(err)
	}
	if err := store.PutIssuer(ctx, replay.Issuer); err != nil {
		t.Fatal(err)
	}
	discard := slog.New(slog.DiscardHandler)
	secrets := replay.NewSecrets()
	app := func(fn lambdaapp.Function) *lambdaapp.App {
		a, err := lambdaapp.New(ctx, replay.Config(fn, "latchkey"), lambdaapp.Deps{Store: store, Keys: store, Secrets: secrets, Logger: discard})
		if err != nil {
			t.Fatalf("init %s: %v", fn, err)
		}
		return a
	}
	f.auth, f.orgs, f.verify = app(lambdaapp.Auth), app(lambdaapp.Organizations), app(lambdaapp.Verify)
	if err := f.auth.Bootstrap(ctx); err != nil {
		t.Fatalf("bootstrap: %v", err)
	}
	routes, _, err := replay.AuthorizerManifest(authorizerEventsDir)
	if err != nil {
		t.Fatal(err)
	}
	rules, err := authorizer.ParseRoutes(routes)
	if err != nil {
		t.Fatal(err)
	}
	f.authorizer, err = authorizerapp.New(ctx, authorizerapp.Config{TableName: "latchkey", Issuer: replay.Issuer, Routes: rules},
		authorizerapp.Deps{Store: store, Keys: store, Logger: discard})
	if err != nil {
		t.Fatalf("init the authorizer: %v", err)
	}
	if f.azEvent, err = replay.LoadAuthorizerEvent(filepath.Join(authorizerEventsDir, "valid.json")); err != nil {
		t.Fatal(err)
	}
	f.build()
	return f
}

// build makes the tree and every principal's credentials.
func (f *fixture) build() {
	admin := replay.AdminSecret
	f.orgA = f.jsonOK(f.api("POST", "/v1/organizations", admin, `{"name":"Acme","slug":"acme","rate_limits":`+orgRateLimits+`}`), http.StatusCreated)["id"].(string)
	f.orgB = f.jsonOK(f.api("POST", "/v1/organizations", admin, `{"name":"Initech","slug":"initech"}`), http.StatusCreated)["id"].(string)

	above := f.createKey(admin, `{"name":"above","scopes":["*:*"]}`)
	// The stale session: above signs in, then its secret is rotated with
	// a day's grace, which leaves the old one as the previous secret.
	f.sessions[whoStale] = f.signIn(above.secret)
	rotated := f.jsonOK(f.api("POST", "/v1/api-keys/"+above.id+"/rotate", admin, `{"expires_in":"1d"}`), http.StatusOK)
	f.keys[whoAbove] = cred{above.id, rotated["key"].(string)}
	f.keys[whoPrevious] = above
	// What began after the rotation begins in a later second than it.
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second)))

	f.keys[whoAdmin] = cred{secret: admin}
	f.eventsAfter = account.NewEventID(time.Now().Add(-time.Millisecond))
	f.createdAt = time.Now()
	f.buildTarget()
	f.firstTarget = f.target.id
	m := scopesJSON(managerScopes)
	f.keys[whoSibling] = f.createKey(f.keys[whoAbove].secret, `{"name":"sibling","scopes":`+m+`}`)
	f.keys[whoOrgThis] = f.createKey(f.keys[whoAbove].secret, `{"name":"org this","scopes":`+m+`,"organization_id":"`+f.orgA+`"}`)
	f.keys[whoOrgOther] = f.createKey(f.keys[whoAbove].secret, `{"name":"org other","scopes":`+m+`,"organization_id":"`+f.orgB+`"}`)
	f.keys[whoOwned] = f.createKey(f.keys[whoAbove].secret, `{"name":"owned","scopes":`+m+`,"owner_id":"team-billing"}`)
	for w := range numWhos {
		if w == whoBelow || w == whoStale {
			continue // buildTarget made below's
		}
		f.credentials(w)
	}
	f.adminID = f.jsonOK(f.api("GET", "/v1/auth/verify", f.tokens[whoAdmin], ""), http.StatusOK)["key_id"].(string)
}

// buildTarget creates the target below above, and below below it, with
// below's credentials and the target's token.
func (f *fixture) buildTarget() {
	m := scopesJSON(managerScopes)
	f.target = f.createKey(f.keys[whoAbove].secret, `{"name":"target","scopes":`+m+`,"organization_id":"`+f.orgA+`","rate_limits":`+targetRateLimits+`,"credits":`+targetCredits+`}`)
	f.keys[whoBelow] = f.createKey(f.target.secret, `{"name":"below","scopes":`+m+`,"rate_limits":`+targetRateLimits+`,"credits":`+targetCredits+`}`)
	f.credentials(whoBelow)
	f.issueTargetToken()
}

// credentials signs w's key in to the console (but a previous secret's)
// and issues its two tokens.
func (f *fixture) credentials(w who) {
	k := f.keys[w]
	if w != whoPrevious {
		f.sessions[w] = f.signIn(k.secret)
	}
	f.tokens[w] = f.issue(k.secret, `{"scopes":`+scopesJSON(managerScopes)+`}`)
	f.orders[w] = f.issue(k.secret, `{"scopes":["read:orders"],"audience":"`+replay.OrdersAudience+`"}`)
}

func (f *fixture) issueTargetToken() {
	tok := f.issue(f.target.secret, `{"scopes":["read:orders"],"audience":"`+replay.OrdersAudience+`"}`)
	f.targetToken = tok
	f.targetTokenID = f.jsonOK(f.api("GET", "/v1/auth/verify", tok, ""), http.StatusOK)["token_id"].(string)
}

func scopesJSON(scopes []string) string {
	b, _ := json.Marshal(scopes)
	return string(b)
}

func (f *fixture) createKey(creator, body string) cred {
	f.t.Helper()
	m := f.jsonOK(f.api("POST", "/v1/api-keys", creator, body), http.StatusCreated)
	return cred{m["id"].(string), m["key"].(string)}
}

func (f *fixture) issue(secret, body string) string {
	f.t.Helper()
	return f.jsonOK(f.api("POST", "/v1/auth/token", secret, body), http.StatusCreated)["access_token"].(string)
}

// signIn signs in to the console with credential and returns the
// session's token, from its cookie.
func (f *fixture) signIn(credential string) string {
	f.t.Helper()
	res := f.console("POST", "/console/sign-in", "", url.Values{"api_key": {credential}, "next": {"/console"}}.Encode())
	if res.status != http.StatusSeeOther {
		f.t.Fatalf("sign-in: %d %s", res.status, res.body)
	}
	for _, raw := range res.cookies {
		if c, err := http.ParseSetCookie(raw); err == nil && c.Name == sessionCookie && c.Value != "" {
			return c.Value
		}
	}
	f.t.Fatalf("sign-in: no session cookie in %v", res.cookies)
	return ""
}

// settleEvents waits until the feed shows the fixture's first events: on
// DynamoDB it lags by tablestore.EventLag; on bbolt it does not.
func (f *fixture) settleEvents() {
	time.Sleep(time.Until(f.createdAt.Add(f.eventLag)))
}

// response is a function's answer.
type response struct {
	status  int
	header  http.Header
	body    string
	cookies []string
}

// event is an API Gateway HTTP API (payload 2.0) request; host says which
// domain it came to: the API's, or the verify function URL's ($default).
func (f *fixture) event(host, method, target string, header map[string]string, cookies []string, body string) events.APIGatewayV2HTTPRequest {
	f.seq++
	path, query, _ := strings.Cut(target, "?")
	routeKey := method + " " + path
	if host == verifyURLHost {
		routeKey = "$default"
	}
	h := map[string]string{"accept": "application/json", "host": host, "x-forwarded-proto": "https"}
	for k, v := range header {
		h[k] = v
	}
	return events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: routeKey, RawPath: path, RawQueryString: query, Headers: h, Cookies: cookies, Body: body,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			AccountID: "123456789012", APIID: strings.Split(host, ".")[0], DomainName: host,
			RequestID: fmt.Sprintf("Doors%05d=", f.seq), RouteKey: routeKey, Stage: "$default",
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method, Path: path, Protocol: "HTTP/1.1", SourceIP: "203.0.113.10"},
		},
	}
}

// invoke sends ev to app's Lambda handler.
func (f *fixture) invoke(app *lambdaapp.App, ev events.APIGatewayV2HTTPRequest) response {
	f.t.Helper()
	res, err := app.Lambda()(context.Background(), ev)
	if err != nil {
		f.t.Fatalf("%s %s: handler error: %v", ev.RequestContext.HTTP.Method, ev.RawPath, err)
	}
	body := res.Body
	if res.IsBase64Encoded {
		b, err := base64.StdEncoding.DecodeString(body)
		if err != nil {
			f.t.Fatalf("base64 body: %v", err)
		}
		body = string(b)
	}
	h := http.Header{}
	for k, v := range res.Headers {
		h.Set(k, v)
	}
	for k, vs := range res.MultiValueHeaders {
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	return response{status: res.StatusCode, header: h, body: body, cookies: res.Cookies}
}

// api sends a JSON request to the function that serves target's route,
// with credential as its bearer ("" for none).
func (f *fixture) api(method, target, credential, body string) response {
	f.t.Helper()
	h := map[string]string{}
	if credential != "" {
		h["authorization"] = "Bearer " + credential
	}
	if body != "" {
		h["content-type"] = "application/json"
	}
	app := f.auth
	if strings.HasPrefix(target, "/v1/organizations") {
		app = f.orgs
	}
	return f.invoke(app, f.event(apiHost, method, target, h, nil, body))
}

// console sends a console request with cookie as the session cookie's
// value ("" for none); a body is a form.
func (f *fixture) console(method, target, cookie, form string) response {
	f.t.Helper()
	h := map[string]string{"accept": "text/html"}
	if form != "" {
		h["content-type"] = "application/x-www-form-urlencoded"
	}
	var cookies []string
	if cookie != "" {
		cookies = []string{sessionCookie + "=" + cookie}
	}
	return f.invoke(f.auth, f.event(apiHost, method, target, h, cookies, form))
}

// oauth sends a form to /oauth2/<endpoint>, authenticated by the
// Authorization header authz.
func (f *fixture) oauth(endpoint, authz string, form url.Values) response {
	f.t.Helper()
	h := map[string]string{"content-type": "application/x-www-form-urlencoded", "authorization": authz}
	return f.invoke(f.auth, f.event(apiHost, "POST", "/oauth2/"+endpoint, h, nil, form.Encode()))
}

// jsonOK fails the cell unless res has status, and returns its JSON body.
func (f *fixture) jsonOK(res response, status int) map[string]any {
	f.t.Helper()
	if res.status != status {
		f.t.Fatalf("got %d %s, want %d", res.status, res.body, status)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(res.body), &m); err != nil {
		f.t.Fatalf("body %s: %v", res.body, err)
	}
	return m
}

// credits returns the remaining credits of the keys ids, as the admin key
// reads them.
func (f *fixture) credits(ids []string) []int64 {
	f.t.Helper()
	out := make([]int64, len(ids))
	for i, id := range ids {
		c, _ := f.jsonOK(f.api("GET", "/v1/api-keys/"+id, replay.AdminSecret, ""), http.StatusOK)["credits"].(map[string]any)
		if c == nil {
			f.t.Fatalf("key %s has no credits", id)
		}
		out[i] = int64(c["remaining"].(float64))
	}
	return out
}

// bearer is p's credential as a bearer: its key's secret, its session's
// token, or its token for Latchkey's API.
func (f *fixture) bearer(p principal) string {
	switch p.form {
	case formSession:
		return f.sessions[p.who]
	case formToken:
		return f.tokens[p.who]
	}
	return f.keys[p.who].secret
}

// verified is the credential p presents to verify and the authorizer:
// its token for the orders API in place of its token for Latchkey's.
func (f *fixture) verified(p principal) string {
	if p.form == formToken {
		return f.orders[p.who]
	}
	return f.bearer(p)
}

// clientAuth is p's Authorization at /oauth2: a key authenticates as a
// client (client_secret_basic); a session or a token can only be sent as
// a bearer.
func (f *fixture) clientAuth(p principal) string {
	if p.form != formKey {
		return "Bearer " + f.bearer(p)
	}
	k := f.keys[p.who]
	id := k.id
	if p.who == whoAdmin {
		id = f.adminID
	}
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(id)+":"+url.QueryEscape(k.secret)))
}

// limitedChain is the keys whose credits the cell's verification spends
// when it is valid: the verified token's key and every limited key above
// it (for Introspect, the target's token), of those that have credits.
func (f *fixture) limitedChain(c cell) []string {
	switch c.action {
	case actIntrospect:
		return []string{f.target.id}
	case actVerify, actVerifyHead:
		if c.p.who == whoBelow && c.p.form != formKey {
			return []string{f.keys[whoBelow].id, f.target.id}
		}
	}
	return nil
}

// runCell does the cell's action and holds its answer to want, and the
// credits it spent to the rules: a valid verification spends one of its
// key's and of each limited key above (issue 29, hole 3), anything else
// none (hole 6a: HEAD). Then it repairs what the action may have changed.
func (f *fixture) runCell(t *testing.T, c cell, want outcome) {
	parent := f.t
	f.t = t
	defer func() { f.t = parent }()
	if c.door == doorOAuth && want.result == refused {
		want.code = oauthCodes[want.code]
	}
	chain := f.limitedChain(c)
	before := f.credits(chain)
	got := f.do(c)
	if got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	spend := int64(0)
	if want == ok && (c.action == actVerify || c.action == actIntrospect) {
		spend = 1
	}
	after := f.credits(chain)
	for i, id := range chain {
		if before[i]-after[i] != spend {
			t.Errorf("credits of %s: %d before, %d after; want %d spent", id, before[i], after[i], spend)
		}
	}
	if repair := repairs[c.action]; repair != nil {
		repair(f)
	}
}

// oauthCodes are the RFC 7009 errors /oauth2/revoke answers the service's
// refusals with.
var oauthCodes = map[string]string{
	"outside_organization": "unauthorized_client",
	"insufficient_scope":   "unauthorized_client",
	"forbidden":            "unauthorized_client",
}

// repairs put back what an action may have changed, whether or not it
// was allowed, so that the next cell finds the fixture as built.
var repairs = map[action]func(f *fixture){
	actDisable: func(f *fixture) {
		f.api("PATCH", "/v1/api-keys/"+f.target.id, replay.AdminSecret, `{"enabled":true}`)
	},
	actRotate: func(f *fixture) {
		m := f.jsonOK(f.api("POST", "/v1/api-keys/"+f.target.id+"/rotate", replay.AdminSecret, `{"expires_in":"0s"}`), http.StatusOK)
		f.target.secret = m["key"].(string)
	},
	actRevokeAll:   func(f *fixture) { afterRevocation(); f.issueTargetToken() },
	actRevokeToken: func(f *fixture) { afterRevocation(); f.issueTargetToken() },
	actRevokeAllAdmin: func(f *fixture) {
		afterRevocation()
		f.credentials(whoAdmin)
	},
	actDelete: func(f *fixture) {
		if f.api("GET", "/v1/api-keys/"+f.target.id, replay.AdminSecret, "").status == http.StatusNotFound {
			f.buildTarget()
		}
	},
}

// afterRevocation waits out the millisecond of a revocation of all of a
// key's tokens, which revokes a token issued within it.
func afterRevocation() { time.Sleep(2 * time.Millisecond) }

// do carries out the cell's action at its door and returns the answer.
func (f *fixture) do(c cell) outcome {
	p, t := c.p, f.target.id
	switch c.action {
	case actGetKey:
		if c.door == doorConsole {
			return consoleOutcome(f.console("GET", "/console/api-keys/"+t, f.bearer(p), ""))
		}
		return apiOutcome(f.api("GET", "/v1/api-keys/"+t, f.bearer(p), ""))
	case actListKeys:
		return f.listKeys(c)
	case actListTokens:
		if c.door == doorConsole {
			res := f.console("GET", "/console/api-keys/"+t, f.bearer(p), "")
			return seen(consoleOutcome(res), strings.Contains(res.body, f.targetTokenID), "the page lacks the target's token")
		}
		res := f.api("GET", "/v1/api-keys/"+t+"/tokens?limit=100", f.bearer(p), "")
		return seen(apiOutcome(res), listed(res, f.targetTokenID), "the list lacks the target's token")
	case actIntrospect:
		if c.door == doorConsole {
			res := f.console("POST", "/console/tokens", f.bearer(p), url.Values{"token": {f.targetToken}}.Encode())
			o := consoleOutcome(res)
			if o == ok && !strings.Contains(res.body, `id="result">Valid<`) {
				return inact
			}
			return o
		}
		res := f.oauth("introspect", f.clientAuth(p), url.Values{"token": {f.targetToken}})
		o := oauthOutcome(res)
		if o == ok && !strings.Contains(res.body, `"active":true`) {
			return inact
		}
		return o
	case actVerify:
		if c.door == doorAuthorizer {
			return f.authorize(f.verified(p))
		}
		res := f.verifyRequest(c.door, "GET", f.verified(p))
		o := apiOutcome(res)
		if o == ok && !strings.Contains(res.body, `"valid":true`) {
			return inact
		}
		return o
	case actVerifyHead:
		// Verify takes GET alone: a HEAD gets no verdict and spends
		// nothing (the credits are checked after every cell).
		res := f.verifyRequest(c.door, "HEAD", f.verified(p))
		if res.status == http.StatusMethodNotAllowed && res.header.Get("Allow") == "GET" && res.body == "" {
			return ok
		}
		return outcome{unexpected, fmt.Sprintf("%d %q", res.status, res.body)}
	case actIssueToken:
		if c.door == doorOAuth {
			return oauthOutcome(f.oauth("token", f.clientAuth(p), url.Values{"grant_type": {"client_credentials"}, "scope": {"read:orders"}}))
		}
		return apiOutcome(f.api("POST", "/v1/auth/token", f.bearer(p), `{"scopes":["read:orders"]}`))
	case actSignIn:
		res := f.console("POST", "/console/sign-in", "", url.Values{"api_key": {f.bearer(p)}, "next": {"/console"}}.Encode())
		if res.status == http.StatusSeeOther && len(res.cookies) == 1 && strings.HasPrefix(res.cookies[0], sessionCookie+"=ey") {
			return ok
		}
		return consoleOutcome(res)
	case actCreateKey:
		if c.door == doorConsole {
			form := url.Values{"name": {"made by " + p.String()}, "other_scopes": {"read:orders"}, "limit": {"20000"}, "limit_period": {"1d"}, "credits": {"100000"}}
			return consoleOutcome(f.console("POST", "/console/api-keys", f.bearer(p), form.Encode()))
		}
		body := `{"name":"made by ` + p.String() + `","scopes":["read:orders"],"rate_limits":` + targetRateLimits + `,"credits":` + targetCredits + `}`
		return apiOutcome(f.api("POST", "/v1/api-keys", f.bearer(p), body))
	case actRename:
		if c.door == doorConsole {
			return consoleOutcome(f.console("POST", "/console/api-keys/"+t, f.bearer(p), url.Values{"name": {"target"}, "metadata": {"plan=pro"}}.Encode()))
		}
		return apiOutcome(f.api("PATCH", "/v1/api-keys/"+t, f.bearer(p), `{"name":"target","metadata":{"plan":"pro"}}`))
	case actDisable:
		if c.door == doorConsole {
			return consoleOutcome(f.console("POST", "/console/api-keys/"+t+"/enabled", f.bearer(p), "enabled=false"))
		}
		return apiOutcome(f.api("PATCH", "/v1/api-keys/"+t, f.bearer(p), `{"enabled":false}`))
	case actRateLimits:
		return apiOutcome(f.api("PATCH", "/v1/api-keys/"+t, f.bearer(p), `{"rate_limits":`+targetRateLimits+`}`))
	case actCredits:
		return apiOutcome(f.api("PATCH", "/v1/api-keys/"+t, f.bearer(p), `{"credits":`+targetCredits+`}`))
	case actRotate:
		if c.door == doorConsole {
			return consoleOutcome(f.console("POST", "/console/api-keys/"+t+"/rotate", f.bearer(p), "grace=0s"))
		}
		return apiOutcome(f.api("POST", "/v1/api-keys/"+t+"/rotate", f.bearer(p), `{"expires_in":"0s"}`))
	case actRevokeAll, actRevokeAllAdmin:
		id := t
		if c.action == actRevokeAllAdmin {
			id = f.adminID
		}
		if c.door == doorConsole {
			return consoleOutcome(f.console("POST", "/console/api-keys/"+id+"/tokens/revoke", f.bearer(p), "confirm=yes"))
		}
		return apiOutcome(f.api("POST", "/v1/api-keys/"+id+"/tokens/revoke", f.bearer(p), `{}`))
	case actRevokeToken:
		switch c.door {
		case doorConsole:
			return consoleOutcome(f.console("POST", "/console/tokens/revoke", f.bearer(p), url.Values{"token": {f.targetToken}}.Encode()))
		case doorOAuth:
			return oauthOutcome(f.oauth("revoke", f.clientAuth(p), url.Values{"token": {f.targetToken}}))
		}
		return apiOutcome(f.api("POST", "/v1/auth/revoke", f.bearer(p), `{"token":"`+f.targetToken+`"}`))
	case actDelete:
		if c.door == doorConsole {
			return consoleOutcome(f.console("POST", "/console/api-keys/"+t+"/delete", f.bearer(p), "confirm=yes"))
		}
		return apiOutcome(f.api("DELETE", "/v1/api-keys/"+t, f.bearer(p), ""))
	case actKeyUsage:
		if c.door == doorConsole {
			res := f.console("GET", "/console/api-keys/"+t, f.bearer(p), "")
			return seen(consoleOutcome(res), strings.Contains(res.body, usageCharts), "the page shows no usage charts")
		}
		return apiOutcome(f.api("GET", "/v1/api-keys/"+t+"/usage", f.bearer(p), ""))
	case actOrgUsage:
		if c.door == doorConsole {
			res := f.console("GET", "/console/organizations/"+f.orgA, f.bearer(p), "")
			return seen(consoleOutcome(res), strings.Contains(res.body, usageCharts), "the page shows no usage charts")
		}
		return apiOutcome(f.api("GET", "/v1/organizations/"+f.orgA+"/usage", f.bearer(p), ""))
	case actKeyLimitsLeft:
		res := f.console("GET", "/console/api-keys/"+t, f.bearer(p), "")
		return seen(consoleOutcome(res), limitLeft("20000 per 1d").MatchString(res.body), "the page shows no uses left of the day limit")
	case actOrgLimitsLeft:
		res := f.console("GET", "/console/organizations/"+f.orgA, f.bearer(p), "")
		return seen(consoleOutcome(res), limitLeft("1000000 per 1d").MatchString(res.body), "the page shows no uses left of the org-day limit")
	case actEvents:
		if c.door == doorConsole {
			res := f.console("GET", "/console/events?"+url.Values{"type": {"api_key.created"}, "object": {f.firstTarget}}.Encode(), f.bearer(p), "")
			return found(consoleOutcome(res), strings.Contains(res.body, `href="/console/api-keys/`+f.firstTarget+`"`))
		}
		q := url.Values{"types": {"api_key.created"}, "after": {f.eventsAfter}, "limit": {"100"}}
		res := f.api("GET", "/v1/events?"+q.Encode(), f.bearer(p), "")
		o := apiOutcome(res)
		if o != ok {
			return o
		}
		var page struct {
			Data []struct {
				Data item `json:"data"`
			} `json:"data"`
		}
		if err := json.Unmarshal([]byte(res.body), &page); err != nil {
			f.t.Fatalf("events %s: %v", res.body, err)
		}
		return found(o, slices.ContainsFunc(page.Data, func(e struct {
			Data item `json:"data"`
		}) bool {
			return e.Data.ID == f.firstTarget
		}))
	}
	f.t.Fatalf("action %s has no way to be done", actionNames[c.action])
	return outcome{}
}

// listKeys lists keys, page by page, until the target is found or the
// list ends: allowed if it is in it, not_found if not.
func (f *fixture) listKeys(c cell) outcome {
	cursor := ""
	for {
		if c.door == doorConsole {
			target := "/console/api-keys"
			if cursor != "" {
				target += "?cursor=" + url.QueryEscape(cursor)
			}
			res := f.console("GET", target, f.bearer(c.p), "")
			o := consoleOutcome(res)
			if o != ok || strings.Contains(res.body, `href="/console/api-keys/`+f.target.id+`"`) {
				return o
			}
			m := nextKeysPage.FindStringSubmatch(res.body)
			if m == nil {
				return nf
			}
			u, err := url.Parse(html.UnescapeString(m[1]))
			if err != nil {
				f.t.Fatal(err)
			}
			cursor = u.Query().Get("cursor")
			continue
		}
		target := "/v1/api-keys?limit=100"
		if cursor != "" {
			target += "&cursor=" + url.QueryEscape(cursor)
		}
		res := f.api("GET", target, f.bearer(c.p), "")
		o := apiOutcome(res)
		if o != ok || listed(res, f.target.id) {
			return o
		}
		next, _ := f.jsonOK(res, http.StatusOK)["next_cursor"].(string)
		if next == "" {
			return nf
		}
		cursor = next
	}
}

// usageCharts marks a page's usage section that shows its charts, not a
// problem.
const usageCharts = `<div class="charts">`

// limitLeft matches a rate limit of a page that shows the uses left of
// what, a limit and its period.
func limitLeft(what string) *regexp.Regexp {
	return regexp.MustCompile(`<span>\d+ of ` + regexp.QuoteMeta(what) + ` left until `)
}

var nextKeysPage = regexp.MustCompile(`<a href="(/console/api-keys\?[^"]*cursor=[^"]*)"`)

// item is what the lists and the events' data hold of an object: its id.
type item struct {
	ID string `json:"id"`
}

// listed reports whether the list page res holds an item with id.
func listed(res response, id string) bool {
	var page struct {
		Data []item `json:"data"`
	}
	if json.Unmarshal([]byte(res.body), &page) != nil {
		return false
	}
	return slices.Contains(page.Data, item{id})
}

// found is o, or not_found for an allowed read that does not show the
// target.
func found(o outcome, shown bool) outcome {
	if o == ok && !shown {
		return nf
	}
	return o
}

// seen is o, or unexpected for an allowed read that lacks what it must
// show.
func seen(o outcome, shown bool, lack string) outcome {
	if o == ok && !shown {
		return outcome{unexpected, lack}
	}
	return o
}

// verifyRequest sends verify at door: the auth function's route, or the
// verify function's URL.
func (f *fixture) verifyRequest(d door, method, credential string) response {
	f.t.Helper()
	h := map[string]string{"authorization": "Bearer " + credential}
	if d == doorVerifyURL {
		return f.invoke(f.verify, f.event(verifyURLHost, method, "/v1/auth/verify", h, nil, ""))
	}
	return f.invoke(f.auth, f.event(apiHost, method, "/v1/auth/verify", h, nil, ""))
}

// authorize asks the authorizer whether credential opens GET /orders.
func (f *fixture) authorize(credential string) outcome {
	ev := f.azEvent
	ev.Headers = map[string]string{"authorization": "Bearer " + credential}
	ev.IdentitySource = []string{"Bearer " + credential}
	res, err := f.authorizer(context.Background(), ev)
	if err != nil {
		f.t.Fatalf("authorizer: %v (API Gateway answers 500)", err)
	}
	if res.IsAuthorized {
		return ok
	}
	return inact
}

// apiOutcome reads a problem+json answer.
func apiOutcome(res response) outcome {
	switch {
	case res.status/100 == 2:
		return ok
	case res.status == http.StatusUnauthorized:
		return unauth
	case res.status == http.StatusNotFound:
		return nf
	case res.status == http.StatusForbidden:
		var p struct {
			Code string `json:"code"`
		}
		json.Unmarshal([]byte(res.body), &p)
		return outcome{refused, p.Code}
	}
	return outcome{unexpected, fmt.Sprintf("%d %s", res.status, res.body)}
}

var consoleCode = regexp.MustCompile(`Code <code>([a-z_]+)</code>`)

// consoleOutcome reads a console page: the sign-in is unauthorized, a
// problem's status and code are the page's.
func consoleOutcome(res response) outcome {
	loc := res.header.Get("Location")
	switch {
	case res.status == http.StatusSeeOther && strings.HasPrefix(loc, "/console/sign-in"):
		return unauth
	case res.status/100 == 2 || res.status == http.StatusSeeOther:
		return ok
	case res.status == http.StatusUnauthorized:
		return unauth
	case res.status == http.StatusNotFound:
		return nf
	case res.status == http.StatusForbidden:
		code := ""
		if m := consoleCode.FindStringSubmatch(res.body); m != nil {
			code = m[1]
		}
		return outcome{refused, code}
	}
	return outcome{unexpected, fmt.Sprintf("%d at %q", res.status, loc)}
}

// oauthOutcome reads an RFC 6749 answer: invalid_client is unauthorized,
// another 400 a refusal with its error.
func oauthOutcome(res response) outcome {
	var e struct {
		Error string `json:"error"`
	}
	json.Unmarshal([]byte(res.body), &e)
	switch {
	case res.status == http.StatusOK:
		return ok
	case res.status == http.StatusUnauthorized && e.Error == "invalid_client":
		return unauth
	case res.status == http.StatusBadRequest:
		return outcome{refused, e.Error}
	}
	return outcome{unexpected, fmt.Sprintf("%d %s", res.status, res.body)}
}

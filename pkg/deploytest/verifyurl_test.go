package deploytest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"latchkey/pkg/account"
	"latchkey/pkg/dynamostore/dynamotest"
	"latchkey/pkg/httpapi/httpapitest"
	"latchkey/pkg/lambdaapp"
	"latchkey/pkg/lambdaapp/replay"
	"latchkey/pkg/mock"
)

// verifyID is the template's verify function, on a function URL.
const verifyID = "VerifyFunction"

// verifyURLEventsDir holds function URL events (payload 2.0, routeKey
// $default) for the verify function.
const verifyURLEventsDir = eventsDir + "/verify-url"

// verifyURLEvents are the events of verifyURLEventsDir, each with what the
// function answers it.
var verifyURLEvents = []struct {
	event  string
	status int
	// reason is the refusal of a token not valid (200, valid false); ""
	// for a valid one or another status.
	reason string
}{
	{"valid.json", http.StatusOK, ""},
	{"revoked.json", http.StatusOK, "revoked"},
	{"rate-limited.json", http.StatusOK, "rate_limited"},
	{"unknown-path.json", http.StatusNotFound, ""},
}

// verifyConds are the template's conditions with the verify function on.
func verifyConds(conds map[string]bool) map[string]bool {
	out := map[string]bool{"ServeVerifyUrl": true}
	for k, v := range conds {
		out[k] = v
	}
	return out
}

// requestLine is the request line the functions log.
type requestLine struct {
	Msg       string `json:"msg"`
	Function  string `json:"function"`
	Method    string `json:"method"`
	Route     string `json:"route"`
	Path      string `json:"path"`
	Status    int    `json:"status"`
	RequestID string `json:"request_id"`
	SourceIP  string `json:"source_ip"`
	Refused   string `json:"refused"`
	Time      string `json:"time"`
	// SampleEvery is set on a sampled line; never on an audit line.
	SampleEvery int      `json:"sample_every"`
	Duration    *float64 `json:"duration_ms"`
}

// requestLines returns the request lines of logs.
func requestLines(tb testing.TB, logs string) []requestLine {
	tb.Helper()
	var out []requestLine
	for _, l := range strings.Split(strings.TrimSpace(logs), "\n") {
		if l == "" {
			continue
		}
		var line requestLine
		if err := json.Unmarshal([]byte(l), &line); err != nil {
			tb.Fatalf("log line %q: %v", l, err)
		}
		if line.Msg == "request" {
			out = append(out, line)
		}
	}
	return out
}

// checkAuditLine holds the one request line logged for ev to the audit
// record the access log would have been: time, request id, source ip,
// method and route (or path), status, latency, and the refusal's reason.
func checkAuditLine(t *testing.T, lines []requestLine, ev events.APIGatewayV2HTTPRequest, status int, reason string) {
	t.Helper()
	if len(lines) != 1 {
		t.Fatalf("%d request lines for one request, want 1: %+v", len(lines), lines)
	}
	l := lines[0]
	if l.RequestID != ev.RequestContext.RequestID || l.SourceIP != ev.RequestContext.HTTP.SourceIP || l.Method != ev.RequestContext.HTTP.Method ||
		l.Status != status || l.Refused != reason || l.Time == "" || l.Duration == nil || l.SampleEvery != 0 {
		t.Errorf("request line %+v: want request id %s, source ip %s, method %s, status %d, refused %q, a time and a duration, unsampled",
			l, ev.RequestContext.RequestID, ev.RequestContext.HTTP.SourceIP, ev.RequestContext.HTTP.Method, status, reason)
	}
	if want := "GET " + ev.RawPath; status != http.StatusNotFound && l.Route != want {
		t.Errorf("route %q, want %q", l.Route, want)
	}
	if status == http.StatusNotFound && (l.Route != "" || l.Path != ev.RawPath) {
		t.Errorf("404: route %q, path %q; want the path asked for, %q", l.Route, l.Path, ev.RawPath)
	}
}

// TestReplay_VerifyURL feeds each function URL event to the verify
// function's Lambda handler (in process, over a seeded store: DynamoDB
// Local in make test; no Secrets Manager at all) and checks its answer
// against the auth function's to the same request through API Gateway,
// byte for byte, and the one audit line it logs; never the token.
func TestReplay_VerifyURL(t *testing.T) {
	ctx := context.Background()
	// One instant for both functions, so that expires_in is the same; today,
	// the day whose use Seed spends for the limited key.
	clock := mock.NewClock(time.Now())
	for _, e := range verifyURLEvents {
		t.Run(strings.TrimSuffix(e.event, ".json"), func(t *testing.T) {
			ev, err := replay.LoadEvent(filepath.Join(verifyURLEventsDir, e.event))
			if err != nil {
				t.Fatal(err)
			}
			if ev.RouteKey != "$default" || ev.RequestContext.Stage != "$default" || !strings.HasSuffix(ev.RequestContext.DomainName, ".lambda-url.us-east-1.on.aws") {
				t.Fatalf("%s is not a function URL event (routeKey and stage $default, a lambda-url domain)", e.event)
			}
			// Each function over a store of its own, so that the limited
			// key's count is the same for both.
			var logs httpapitest.SyncBuffer
			b := newBackend(t)
			verify, err := lambdaapp.NewVerifying(ctx, replay.Config(lambdaapp.Verify, "latchkey"),
				lambdaapp.Deps{Store: b.store, Keys: b.keys, Now: clock.Now, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
			if err != nil {
				t.Fatal(err)
			}
			got, err := verify.Lambda()(ctx, ev)
			if err != nil {
				t.Fatal(err)
			}
			if got.StatusCode != e.status {
				t.Fatalf("status %d, want %d: %s", got.StatusCode, e.status, got.Body)
			}
			var body struct {
				Valid  bool   `json:"valid"`
				Reason string `json:"reason"`
			}
			if e.status == http.StatusOK {
				if err := json.Unmarshal([]byte(got.Body), &body); err != nil || body.Valid != (e.reason == "") || body.Reason != e.reason {
					t.Errorf("body %s (%v), want valid %v reason %q", got.Body, err, e.reason == "", e.reason)
				}
			}
			checkAuditLine(t, requestLines(t, logs.String()), ev, e.status, e.reason)
			if auth := ev.Headers["authorization"]; strings.Contains(logs.String(), strings.TrimPrefix(auth, "Bearer ")) {
				t.Errorf("the token is in the logs:\n%s", logs.String())
			}

			// The auth function's answer through API Gateway: the same
			// request on its route (an unknown path: one no route has).
			ab := newBackend(t)
			auth, err := lambdaapp.New(ctx, replay.Config(lambdaapp.Auth, "latchkey"),
				lambdaapp.Deps{Store: ab.store, Keys: ab.keys, Secrets: replay.NewSecrets(), Now: clock.Now, Logger: discard})
			if err != nil {
				t.Fatal(err)
			}
			apiEv := ev
			apiEv.RouteKey = "GET " + ev.RawPath
			if e.status == http.StatusNotFound {
				apiEv.RawPath, apiEv.RequestContext.HTTP.Path = "/v1/nowhere", "/v1/nowhere"
			}
			want, err := auth.Lambda()(ctx, apiEv)
			if err != nil {
				t.Fatal(err)
			}
			if got.StatusCode != want.StatusCode || got.Body != want.Body {
				t.Errorf("verify URL answers %d %s\nthe API answers  %d %s", got.StatusCode, got.Body, want.StatusCode, want.Body)
			}
			// Both ways: a header the URL adds is a difference too.
			if !maps.Equal(got.Headers, want.Headers) {
				t.Errorf("verify URL's headers %v\nthe API's          %v", got.Headers, want.Headers)
			}
			if !maps.EqualFunc(got.MultiValueHeaders, want.MultiValueHeaders, slices.Equal) {
				t.Errorf("verify URL's multi-value headers %v\nthe API's                      %v", got.MultiValueHeaders, want.MultiValueHeaders)
			}
			if got.IsBase64Encoded != want.IsBase64Encoded || !slices.Equal(got.Cookies, want.Cookies) {
				t.Errorf("verify URL: base64 %v, cookies %v; the API's %v, %v", got.IsBase64Encoded, got.Cookies, want.IsBase64Encoded, want.Cookies)
			}
		})
	}
}

// TestReplay_VerifyURLHead sends HEAD to the verify function's URL, which
// passes every method to the function. Verify takes GET alone: HEAD is
// 405 with Allow: GET and no body (the URL returns the body it is given,
// where net/http's server sends none), before the token is read, so that
// it spends no credit of the token's key; the request is logged as any
// other.
func TestReplay_VerifyURLHead(t *testing.T) {
	ctx := context.Background()
	clock := mock.NewClock(time.Now())
	ev, err := replay.LoadEvent(filepath.Join(verifyURLEventsDir, "valid.json"))
	if err != nil {
		t.Fatal(err)
	}
	var logs httpapitest.SyncBuffer
	b := newBackend(t)
	// The token's key gets one credit, which a HEAD must leave to the GET.
	credits := &account.CreditsChange{Credits: &account.Credits{Remaining: 1, SetAt: clock.Now(), Set: "head"}}
	if _, err := b.store.UpdateAPIKey(ctx, replay.KeyID, account.APIKeyPatch{Credits: credits, At: clock.Now()}, nil); err != nil {
		t.Fatal(err)
	}
	verify, err := lambdaapp.NewVerifying(ctx, replay.Config(lambdaapp.Verify, "latchkey"),
		lambdaapp.Deps{Store: b.store, Keys: b.keys, Now: clock.Now, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	answer := func(method string) (events.APIGatewayV2HTTPResponse, string) {
		t.Helper()
		e := ev
		e.RequestContext.HTTP.Method = method
		res, err := verify.Lambda()(ctx, e)
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			Reason string `json:"reason"`
		}
		if method == http.MethodGet {
			if err := json.Unmarshal([]byte(res.Body), &body); err != nil {
				t.Fatalf("GET: %s: %v", res.Body, err)
			}
		}
		return res, body.Reason
	}
	for range 2 {
		head, _ := answer(http.MethodHead)
		if head.StatusCode != http.StatusMethodNotAllowed || head.Headers["Allow"] != http.MethodGet || head.Body != "" {
			t.Errorf("HEAD: %d, Allow %q, body %q; want 405, Allow GET and no body", head.StatusCode, head.Headers["Allow"], head.Body)
		}
	}
	lines := requestLines(t, logs.String())
	if len(lines) != 2 || lines[0].Method != http.MethodHead || lines[0].Status != http.StatusMethodNotAllowed {
		t.Errorf("HEAD's request lines %+v, want two, HEAD 405", lines)
	}
	// The credit is there for a GET, and then spent.
	if get, reason := answer(http.MethodGet); get.StatusCode != http.StatusOK || reason != "" {
		t.Errorf("GET after the HEADs: %d %s, want valid: a HEAD spent the credit", get.StatusCode, get.Body)
	}
	if _, reason := answer(http.MethodGet); reason != account.ReasonUsageExceeded {
		t.Errorf("the second GET: reason %q, want %q", reason, account.ReasonUsageExceeded)
	}
}

// TestTemplate_VerifyURLCors holds the function URL's CORS block to the
// API's: on with CorsEnabled alone, for the API's origins, GET with
// Authorization, and every response header the verify function sends that
// a browser would otherwise hide (taken from its answers to the function
// URL events, a request without a token and one with another method).
func TestTemplate_VerifyURLCors(t *testing.T) {
	tpl := loadTemplate(t)
	api := list(path(tpl.resource(t, "HttpApi", "AWS::Serverless::HttpApi"), "CorsConfiguration", "Fn::If"))
	args := list(path(tpl.resource(t, "VerifyUrlConfig", "AWS::Lambda::Url"), "Cors", "Fn::If"))
	if len(args) != 3 || args[0] != "CorsEnabled" || refOf(args[2]) != "AWS::NoValue" {
		t.Fatalf("VerifyUrlConfig's Cors is not !If [CorsEnabled, ..., !Ref AWS::NoValue]: %v", path(tpl.resource(t, "VerifyUrlConfig", "AWS::Lambda::Url"), "Cors"))
	}
	if len(api) != 3 {
		t.Fatal("the API's CorsConfiguration is not an !If")
	}
	if got, want := fmt.Sprint(path(args[1], "AllowOrigins")), fmt.Sprint(path(api[1], "AllowOrigins")); got != want {
		t.Errorf("the URL's AllowOrigins %s, the API's %s", got, want)
	}
	if !slices.Contains(strs(path(args[1], "AllowMethods")), http.MethodGet) || !slices.Contains(strs(path(args[1], "AllowHeaders")), "Authorization") {
		t.Errorf("the URL's CORS does not allow GET with Authorization: %v", args[1])
	}
	exposed := strs(path(args[1], "ExposeHeaders"))

	ctx := context.Background()
	var evs []events.APIGatewayV2HTTPRequest
	for _, e := range verifyURLEvents {
		ev, err := replay.LoadEvent(filepath.Join(verifyURLEventsDir, e.event))
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	noToken, post := evs[0], evs[0]
	noToken.Headers = maps.Clone(noToken.Headers)
	delete(noToken.Headers, "authorization")
	post.RequestContext.HTTP.Method = http.MethodPost
	evs = append(evs, noToken, post)
	// Response headers a browser reads without ExposeHeaders (the
	// CORS-safelisted response header names of the Fetch standard).
	safelisted := []string{"Cache-Control", "Content-Language", "Content-Length", "Content-Type", "Expires", "Last-Modified", "Pragma"}
	sent := map[string]bool{}
	for _, ev := range evs {
		b := newBackend(t)
		verify, err := lambdaapp.NewVerifying(ctx, replay.Config(lambdaapp.Verify, "latchkey"), lambdaapp.Deps{Store: b.store, Keys: b.keys, Logger: discard})
		if err != nil {
			t.Fatal(err)
		}
		res, err := verify.Lambda()(ctx, ev)
		if err != nil {
			t.Fatal(err)
		}
		for k := range res.Headers {
			sent[http.CanonicalHeaderKey(k)] = true
		}
		for k := range res.MultiValueHeaders {
			sent[http.CanonicalHeaderKey(k)] = true
		}
	}
	for _, h := range []string{"X-Request-Id", "Retry-After", "Www-Authenticate", "Allow"} {
		if !sent[h] {
			t.Errorf("the verify function sent no %s: the requests no longer cover it (sent %v)", h, sent)
		}
	}
	for h := range sent {
		if slices.Contains(safelisted, h) {
			continue
		}
		if !slices.ContainsFunc(exposed, func(e string) bool { return strings.EqualFold(e, h) }) {
			t.Errorf("the verify function sends %s, which the URL's ExposeHeaders %v hide from a browser", h, exposed)
		}
	}
}

// TestBinary_VerifyURL runs the built verify function as Lambda does,
// configured only by the environment the template gives it (no secret),
// against DynamoDB Local, and feeds it every function URL event: main, its
// wiring, the Runtime API client and the adapter, end to end, with one
// audit line a request. It needs DynamoDB Local only: the function reads
// no secret, so no Secrets Manager is set up (nor reachable).
func TestBinary_VerifyURL(t *testing.T) {
	dynamoURL := os.Getenv(dynamotest.EndpointEnv)
	if dynamoURL == "" {
		t.Skip(dynamotest.EndpointEnv + " is not set; run through scripts/dynamodb-local.sh (make test does)")
	}
	l := newLiveTable(t, dynamoURL, dynamotest.NewClient(t), true)
	tpl := loadTemplate(t)
	env := append(l.env(lambdaapp.Verify), "SUCCESS_LOG_EVERY="+tpl.getenv(t, tpl.functionEnv(t, verifyID), nil)("SUCCESS_LOG_EVERY"))
	if slices.ContainsFunc(env, func(v string) bool { return strings.Contains(v, "_SECRET_ARN=") }) {
		t.Fatalf("the verify function is given a secret: %v", env)
	}
	p := startLambda(t, buildFunction(t, lambdaapp.Verify), env)
	for _, e := range verifyURLEvents {
		t.Run(strings.TrimSuffix(e.event, ".json"), func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join(verifyURLEventsDir, e.event))
			if err != nil {
				t.Fatal(err)
			}
			ev, err := replay.LoadEvent(filepath.Join(verifyURLEventsDir, e.event))
			if err != nil {
				t.Fatal(err)
			}
			before := len(p.logs.String())
			var res events.APIGatewayV2HTTPResponse
			if err := json.Unmarshal(p.invoke(raw), &res); err != nil {
				t.Fatal(err)
			}
			if res.StatusCode != e.status {
				t.Fatalf("status %d, want %d: %s", res.StatusCode, e.status, res.Body)
			}
			// The line is written before the answer, and reaches us
			// through a pipe: wait for it (a bound for a hang, generous
			// for a loaded machine).
			var logs string
			for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				if logs = p.logs.String()[before:]; strings.Contains(logs, `"msg":"request"`) && strings.HasSuffix(logs, "\n") {
					break
				}
			}
			lines := requestLines(t, logs)
			checkAuditLine(t, lines, ev, e.status, e.reason)
			if len(lines) == 1 && lines[0].Function != string(lambdaapp.Verify) {
				t.Errorf("function %q in the line, want verify", lines[0].Function)
			}
		})
	}
}

// TestTemplate_VerifyLeastPrivilege replays the function URL events through
// the verify function over DynamoDB Local, recording every DynamoDB request,
// and holds its role to them as the authorizer's is held: exactly the
// actions used, each request allowed as IAM evaluates it, the one write in
// the usage records, no index, no secret.
func TestTemplate_VerifyLeastPrivilege(t *testing.T) {
	if os.Getenv(dynamotest.EndpointEnv) == "" {
		t.Skip(dynamotest.EndpointEnv + " is not set; run through scripts/dynamodb-local.sh (make test does)")
	}
	ctx := context.Background()
	actions, ops := map[string]bool{}, map[string]bool{}
	var requests []iamRequest
	usedIndex := false
	for _, e := range verifyURLEvents {
		b := newBackend(t)
		app, err := lambdaapp.NewVerifying(ctx, replay.Config(lambdaapp.Verify, "latchkey"), lambdaapp.Deps{Store: b.store, Keys: b.keys, Logger: discard})
		if err != nil {
			t.Fatal(err)
		}
		ev, err := replay.LoadEvent(filepath.Join(verifyURLEventsDir, e.event))
		if err != nil {
			t.Fatal(err)
		}
		if res, err := app.Lambda()(ctx, ev); err != nil || res.StatusCode != e.status {
			t.Fatalf("%s: %d %v", e.event, res.StatusCode, err)
		}
		usedIndex = b.calls.merge(actions, ops, &requests) || usedIndex
	}
	if !actions["dynamodb:UpdateItem"] {
		t.Fatalf("the replay counted no use of a limited key (actions %v); the events must, for the Limits statement to be proved", sortedKeys(actions))
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			checkVerifierPrivilege(t, loadTemplate(t).under(verifyConds(v.conds)), verifyID, actions, requests, usedIndex)
		})
	}
	for _, op := range sortedKeys(ops) {
		if !slices.Contains(systemErrorOperations, op) {
			t.Errorf("the verify function calls DynamoDB %s, which the system errors alarm does not watch", op)
		}
	}
}

// TestTemplate_VerifyURL: the verify function is opt-in (VerifyFunctionUrl,
// "false" by default, and every resource of it under ServeVerifyUrl); its
// URL is public (AuthType NONE: the token is the credential) on its alias,
// with both permissions a public URL needs since October 2025, the
// second only through the URL; its environment is one its configuration
// accepts, with every request line written, and names no secret; its
// role and log group are its own; it has the other functions' alarms; and
// the VerifyUrl output is the URL of the route.
func TestTemplate_VerifyURL(t *testing.T) {
	raw := loadTemplate(t)
	if p := raw.parameter(t, "VerifyFunctionUrl"); p["Default"] != "false" || !slices.Equal(strs(p["AllowedValues"]), []string{"false", "true"}) {
		t.Errorf("VerifyFunctionUrl: default %v, allowed %v; want \"false\" of true/false", p["Default"], p["AllowedValues"])
	}
	cond := path(map[string]any(raw), "Conditions", "ServeVerifyUrl", "Fn::Equals")
	if args := list(cond); len(args) != 2 || refOf(args[0]) != "VerifyFunctionUrl" || args[1] != "true" {
		t.Errorf("condition ServeVerifyUrl %v, want !Equals [!Ref VerifyFunctionUrl, \"true\"]", cond)
	}
	// Everything that mentions the function is under its condition.
	for id, r := range raw["Resources"].(map[string]any) {
		b, _ := json.Marshal(r)
		if id == "Formats" {
			// The verify alias it waits for is under !If
			// [ServeVerifyUrl, ...]: without it, nothing of verify.
			b, _ = json.Marshal(raw.under(map[string]bool{"ServeVerifyUrl": false})["Resources"].(map[string]any)[id])
		}
		if (strings.HasPrefix(id, "Verify") || strings.Contains(string(b), `"`+verifyID)) && path(r, "Condition") != "ServeVerifyUrl" {
			t.Errorf("%s is not under the condition ServeVerifyUrl", id)
		}
	}
	if path(map[string]any(raw), "Outputs", "VerifyUrl", "Condition") != "ServeVerifyUrl" {
		t.Errorf("output VerifyUrl is not under the condition ServeVerifyUrl")
	}
	off := raw.under(map[string]bool{"ServeVerifyUrl": false})
	for id := range off["Resources"].(map[string]any) {
		if strings.HasPrefix(id, "Verify") {
			t.Errorf("with VerifyFunctionUrl false, %s remains", id)
		}
	}

	tpl := raw.under(map[string]bool{"ServeVerifyUrl": true})
	url := tpl.resource(t, "VerifyUrlConfig", "AWS::Lambda::Url")
	if url["AuthType"] != "NONE" || refOf(url["TargetFunctionArn"]) != verifyID+".Alias" {
		t.Errorf("VerifyUrlConfig: AuthType %v, target %v; want NONE on !Ref %s.Alias", url["AuthType"], url["TargetFunctionArn"], verifyID)
	}
	perms := map[string]map[string]any{}
	for id, r := range tpl["Resources"].(map[string]any) {
		if path(r, "Type") == "AWS::Lambda::Permission" && strings.Contains(refOf(path(r, "Properties", "FunctionName")), verifyID) {
			perms[id] = path(r, "Properties").(map[string]any)
		}
	}
	var invokeURL, invoke bool
	for id, p := range perms {
		if refOf(p["FunctionName"]) != verifyID+".Alias" || p["Principal"] != "*" {
			t.Errorf("%s: %v; want the alias, to everyone", id, p)
		}
		switch p["Action"] {
		case "lambda:InvokeFunctionUrl":
			invokeURL = p["FunctionUrlAuthType"] == "NONE"
		case "lambda:InvokeFunction":
			invoke = fmt.Sprint(p["InvokedViaFunctionUrl"]) == "true"
		default:
			t.Errorf("%s grants %v", id, p["Action"])
		}
	}
	if len(perms) != 2 || !invokeURL || !invoke {
		t.Errorf("permissions %v: want lambda:InvokeFunctionUrl (FunctionUrlAuthType NONE) and lambda:InvokeFunction (InvokedViaFunctionUrl), no more", perms)
	}
	out := path(map[string]any(tpl), "Outputs", "VerifyUrl", "Value", "Fn::Sub")
	if out != "${VerifyUrlConfig.FunctionUrl}v1/auth/verify" {
		t.Errorf("output VerifyUrl %v, want the URL (which ends with /) and v1/auth/verify", out)
	}

	env := tpl.functionEnv(t, verifyID)
	cfg, err := lambdaapp.ConfigFromEnv(lambdaapp.Verify, tpl.getenv(t, env, nil))
	if err != nil || cfg.SuccessLogEvery != 1 {
		t.Errorf("the template's environment: SuccessLogEvery %d, %v; want every line", cfg.SuccessLogEvery, err)
	}
	if _, err := lambdaapp.ConfigFromEnv(lambdaapp.Verify, func(k string) string {
		if k == "SUCCESS_LOG_EVERY" {
			return "100"
		}
		return tpl.getenv(t, env, nil)(k)
	}); err == nil {
		t.Errorf("the verify function accepts SUCCESS_LOG_EVERY=100: its audit lines would be sampled")
	}
	for k, v := range env {
		if strings.HasSuffix(refOf(v), "Secret") || strings.HasSuffix(k, "_SECRET_ARN") {
			t.Errorf("the verify function is given %s=%v", k, v)
		}
	}
	tpl.checkOwnRoleAndLogs(t, verifyID, "verify function")
	watched := map[string]bool{}
	for _, a := range tpl.alarms(t) {
		for _, m := range a.metrics {
			if strings.Contains(m, verifyID) {
				watched[a.id] = true
			}
		}
	}
	for _, id := range []string{"VerifyErrorsAlarm", "VerifyThrottlesAlarm", "VerifyNearTimeoutAlarm"} {
		if !watched[id] {
			t.Errorf("no alarm %s on the verify function (alarms on it: %v)", id, sortedKeys(watched))
		}
	}
}

package deploytest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"latchkey/pkg/authorizer"
	"latchkey/pkg/dynamostore/dynamotest"
	"latchkey/pkg/httpapi/httpapitest"
	"latchkey/pkg/lambdaapp"
	"latchkey/pkg/lambdaapp/authorizerapp"
	"latchkey/pkg/lambdaapp/replay"
)

// authorizerEventsDir holds the authorizer's requests and their manifest.
const authorizerEventsDir = eventsDir + "/authorizer"

// newAuthorizer builds the authorizer over b as the template configures
// it (no ISSUER: the recorded issuer), with the manifest's routes.
func newAuthorizer(t *testing.T, b backend, routes string, logger *slog.Logger) authorizerapp.Handler {
	t.Helper()
	r, err := authorizer.ParseRoutes(routes)
	if err != nil {
		t.Fatal(err)
	}
	h, err := authorizerapp.New(context.Background(), authorizerapp.Config{TableName: "latchkey", Routes: r},
		authorizerapp.Deps{Store: b.store, Keys: b.keys, Logger: logger})
	if err != nil {
		t.Fatalf("init the authorizer: %v", err)
	}
	return h
}

// TestReplay_Authorizer feeds every request in events/authorizer/ to the
// authorizer's handler over a freshly seeded store (DynamoDB Local in make
// test) and checks the decision the manifest names, the context of an
// authorized request, and that the logs carry the request id and no token.
func TestReplay_Authorizer(t *testing.T) {
	routes, entries, err := replay.AuthorizerManifest(authorizerEventsDir)
	if err != nil {
		t.Fatal(err)
	}
	covered := map[bool]bool{}
	for _, e := range entries {
		covered[e.Authorized] = true
		t.Run(strings.TrimSuffix(e.Event, ".json"), func(t *testing.T) {
			t.Parallel() // each request has its own store
			ev, err := replay.LoadAuthorizerEvent(filepath.Join(authorizerEventsDir, e.Event))
			if err != nil {
				t.Fatal(err)
			}
			var logs httpapitest.SyncBuffer
			h := newAuthorizer(t, newBackend(t), routes, slog.New(slog.NewJSONHandler(&logs, nil)))
			res, err := h(context.Background(), ev)
			if err != nil {
				t.Fatalf("handler error: %v", err)
			}
			if res.IsAuthorized != e.Authorized {
				t.Fatalf("isAuthorized: got %v, want %v (%s)", res.IsAuthorized, e.Authorized, e.Description)
			}
			if e.Authorized {
				if len(e.Context) == 0 || !maps.Equal(res.Context, e.Context) {
					t.Errorf("context:\n got  %v\n want %v (the manifest's)", res.Context, e.Context)
				}
			} else if res.Context != nil {
				t.Errorf("a refusal with context %v", res.Context)
			}
			out := logs.String()
			if !e.Authorized && !strings.Contains(out, `"authorized":false,"reason":"`+e.Reason+`"`) {
				t.Errorf("no decision line with the reason %q (the manifest's):\n%s", e.Reason, out)
			}
			if !strings.Contains(out, `"request_id":"`+ev.RequestContext.RequestID+`"`) {
				t.Errorf("no log line with the request id:\n%s", out)
			}
			if auth := ev.Headers["authorization"]; auth != "" && strings.Contains(out, strings.TrimPrefix(auth, "Bearer ")) {
				t.Errorf("the token is in the logs:\n%s", out)
			}
		})
	}
	if !covered[true] || !covered[false] {
		t.Errorf("the manifest must show both decisions")
	}
}

// TestReplay_AuthorizerSampled: the authorizer's configuration reaches its
// decisions: with SuccessLogEvery 10, the line of one allowed request in
// 10 of events/authorizer/valid.json is logged, with sample_every, and the
// line of every refusal of revoked.json, with its reason.
func TestReplay_AuthorizerSampled(t *testing.T) {
	routes, _, err := replay.AuthorizerManifest(authorizerEventsDir)
	if err != nil {
		t.Fatal(err)
	}
	r, err := authorizer.ParseRoutes(routes)
	if err != nil {
		t.Fatal(err)
	}
	b := newBackend(t)
	var logs httpapitest.SyncBuffer
	h, err := authorizerapp.New(context.Background(), authorizerapp.Config{TableName: "latchkey", Routes: r, SuccessLogEvery: 10},
		authorizerapp.Deps{Store: b.store, Keys: b.keys, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		for name, want := range map[string]bool{"valid.json": true, "revoked.json": false} {
			ev, err := replay.LoadAuthorizerEvent(filepath.Join(authorizerEventsDir, name))
			if err != nil {
				t.Fatal(err)
			}
			if res, err := h(context.Background(), ev); err != nil || res.IsAuthorized != want {
				t.Fatalf("%s: authorized %v, %v; want %v", name, res.IsAuthorized, err, want)
			}
		}
	}
	lines := map[string]int{}
	for _, l := range logs.Lines() {
		var line struct {
			Msg         string `json:"msg"`
			Authorized  bool   `json:"authorized"`
			Reason      string `json:"reason"`
			SampleEvery int    `json:"sample_every"`
		}
		if err := json.Unmarshal([]byte(l), &line); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		if line.Msg != "authorizer decision" {
			continue
		}
		lines[fmt.Sprintf("authorized %v %s, sample_every %d", line.Authorized, line.Reason, line.SampleEvery)]++
	}
	want := map[string]int{"authorized true , sample_every 10": 2, "authorized false revoked, sample_every 0": 20}
	if !maps.Equal(lines, want) {
		t.Errorf("decision lines: got %v, want %v", lines, want)
	}
}

// authorizerID is the template's authorizer function.
const authorizerID = "AuthorizerFunction"

// TestTemplate_AuthorizerLeastPrivilege replays the authorizer's requests
// over DynamoDB Local, recording every DynamoDB request, and proves that its
// role allows exactly the actions it used, allows each request as IAM would
// evaluate it (the role names the partitions it may read), reads no index,
// may write nothing anywhere, and holds no secret.
func TestTemplate_AuthorizerLeastPrivilege(t *testing.T) {
	if os.Getenv(dynamotest.EndpointEnv) == "" {
		t.Skip(dynamotest.EndpointEnv + " is not set; run through scripts/dynamodb-local.sh (make test does)")
	}
	routes, entries, err := replay.AuthorizerManifest(authorizerEventsDir)
	if err != nil {
		t.Fatal(err)
	}
	actions, ops := map[string]bool{}, map[string]bool{}
	var requests []iamRequest
	usedIndex := false
	for _, e := range entries {
		b := newBackend(t)
		h := newAuthorizer(t, b, routes, discard) // its init reads the published keys
		ev, err := replay.LoadAuthorizerEvent(filepath.Join(authorizerEventsDir, e.Event))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
		usedIndex = b.calls.merge(actions, ops, &requests) || usedIndex
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			checkVerifierPrivilege(t, loadTemplate(t).under(v.conds), authorizerID, actions, requests, usedIndex)
		})
	}
	for _, op := range sortedKeys(ops) {
		if !slices.Contains(systemErrorOperations, op) {
			t.Errorf("the authorizer calls DynamoDB %s, which the system errors alarm does not watch", op)
		}
	}
}

// checkVerifierPrivilege holds the role in tpl of the function id, which
// verifies tokens and does nothing else (the authorizer, the verify
// function), to what it did.
func checkVerifierPrivilege(t *testing.T, tpl template, id string, actions map[string]bool, requests []iamRequest, usedIndex bool) {
	statement := tpl.policyStatement(t, id, "Table")
	limits := tpl.policyStatement(t, id, "Limits")
	granted := append(strs(statement["Action"]), strs(limits["Action"])...)
	slices.Sort(granted)
	if got, want := granted, sortedKeys(actions); !slices.Equal(got, want) {
		t.Errorf("DynamoDB actions:\n policy %v\n code   %v", got, want)
	}
	// The one write, the count of a use against the limits (KEYLIMIT#)
	// and of a verification in the usage counts (USAGE#), is in those
	// records only.
	if got := strs(limits["Action"]); !slices.Equal(got, []string{"dynamodb:UpdateItem"}) {
		t.Errorf("Limits statement actions %v, want UpdateItem alone", got)
	}
	if got := strs(path(limits, "Condition", "ForAllValues:StringLike", "dynamodb:LeadingKeys")); !slices.Equal(got, []string{"KEYLIMIT#*", "USAGE#*"}) {
		t.Errorf("Limits statement leading keys %v, want KEYLIMIT#* and USAGE#* alone", got)
	}
	if usedIndex || resolveARN(statement["Resource"]) != tableARN {
		t.Errorf("Table statement resource %v (the code used an index: %v); want the table alone", statement["Resource"], usedIndex)
	}
	statements := tpl.statements(t, id)
	for _, req := range requests {
		allowed, err := decide(statements, req)
		if err != nil {
			t.Fatalf("%s: %v", req, err)
		}
		if !allowed {
			t.Errorf("the role refuses a request the code makes: %s", req)
		}
	}
	// Not a single write outside the usage records, in any partition,
	// nor a read of anything else.
	for _, pk := range []string{"CONFIG", "KEY#" + replay.KeyID, "KEYUSE#" + replay.KeyID, "TOKEN#" + replay.TokenID, "KEYHASH#00", "USER#" + replay.UserID, "ORG#" + replay.OrgID} {
		for _, action := range writeActions {
			if allowed, err := decide(statements, iamRequest{Action: action, LeadingKeys: []string{pk}}); err != nil || allowed {
				t.Errorf("the role may %s in %s (%v)", action, pk, err)
			}
		}
	}
	for _, pk := range []string{"KEYHASH#00", "KEYORG#" + replay.OrgID, "USER#" + replay.UserID, "EMAIL#alice@example.com", "IDEM#" + replay.KeyID} {
		if allowed, err := decide(statements, iamRequest{Action: "dynamodb:GetItem", LeadingKeys: []string{pk}}); err != nil || allowed {
			t.Errorf("the role may read %s (%v); it needs the config item, keys, revocation entries and organizations only", pk, err)
		}
	}
	for _, st := range statements {
		for _, a := range strs(st["Action"]) {
			if strings.HasPrefix(strings.ToLower(a), "secretsmanager:") {
				t.Errorf("statement %v grants %s: %s reads no secret", st["Sid"], a, id)
			}
		}
	}
}

// TestTemplate_Authorizer proves the authorizer is wired to be used from
// other stacks: its ARN is an exported output; its environment is a
// configuration its main accepts (with the events' routes in the
// parameter), names no secret and no issuer; and its role is its own.
func TestTemplate_Authorizer(t *testing.T) {
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) { testAuthorizerTemplate(t, loadTemplate(t).under(v.conds)) })
	}
}

func testAuthorizerTemplate(t *testing.T, tpl template) {
	out := path(map[string]any(tpl), "Outputs", "AuthorizerFunctionArn")
	if path(out, "Value", "Fn::GetAtt") != authorizerID+".Arn" || path(out, "Export", "Name", "Fn::Sub") != "${AWS::StackName}-AuthorizerFunctionArn" {
		t.Errorf("output AuthorizerFunctionArn: got %v, want !GetAtt %s.Arn exported as ${AWS::StackName}-AuthorizerFunctionArn", out, authorizerID)
	}
	routes, _, err := replay.AuthorizerManifest(authorizerEventsDir)
	if err != nil {
		t.Fatal(err)
	}
	env := tpl.functionEnv(t, authorizerID)
	if refOf(env[authorizerapp.EnvRoutes]) != "AuthorizerRoutes" {
		t.Errorf("%s: %v, want !Ref AuthorizerRoutes", authorizerapp.EnvRoutes, env[authorizerapp.EnvRoutes])
	}
	getenv := func(k string) string {
		switch v := env[k].(type) {
		case string:
			return v
		case nil:
			return ""
		}
		if k == authorizerapp.EnvRoutes {
			return routes // the parameter, as the example deploys it
		}
		if r := refOf(env[k]); path(map[string]any(tpl), "Parameters", r) != nil {
			if p := tpl.parameterValue(t, r, nil); p != "" {
				return p // SigningAlgorithm's default
			}
		}
		return "set"
	}
	if _, err := authorizerapp.ConfigFromEnv(getenv); err != nil {
		t.Errorf("the template's environment: %v", err)
	}
	for k, v := range env {
		if strings.HasSuffix(refOf(v), "Secret") || k == lambdaapp.EnvIssuer {
			t.Errorf("the authorizer is given %s=%v", k, v)
		}
	}
	tpl.checkOwnRoleAndLogs(t, authorizerID, "authorizer")
}

// TestExample_ProtectedAPI holds examples/protected-api/template.yaml to
// what the README promises of it: its HTTP API uses the authorizer the
// Latchkey stack exports (by the export's very name), with payload format
// 2.0, simple responses and result caching off (so that a revocation counts
// at once), on every route, and an AWS::Lambda::Permission lets that API,
// and only it, invoke the authorizer. cfn-lint checks it
// (TestTemplate_CfnLint).
func TestExample_ProtectedAPI(t *testing.T) {
	latchkey := loadTemplate(t)
	ex := loadTemplateFile(t, "../../examples/protected-api/template.yaml")
	// The alias, which a gradual deployment moves, not the function, whose
	// unqualified ARN runs $LATEST the moment it is deployed.
	out := path(map[string]any(latchkey), "Outputs", "AuthorizerAliasArn")
	if got := refOf(path(out, "Value")); got != "AuthorizerFunction.Alias" {
		t.Errorf("output AuthorizerAliasArn is !Ref %q, want !Ref AuthorizerFunction.Alias", got)
	}
	export, _ := path(out, "Export", "Name", "Fn::Sub").(string)
	imported := func(v any) string {
		s, _ := path(v, "Fn::ImportValue", "Fn::Sub").(string)
		return strings.ReplaceAll(s, "${LatchkeyStackName}", "${AWS::StackName}")
	}
	api := ex.resource(t, "OrdersApi", "AWS::Serverless::HttpApi")
	if path(api, "Auth", "DefaultAuthorizer") != "Latchkey" {
		t.Errorf("DefaultAuthorizer: got %v, want Latchkey on every route", path(api, "Auth", "DefaultAuthorizer"))
	}
	az := path(api, "Auth", "Authorizers", "Latchkey")
	if got := imported(path(az, "FunctionArn")); export == "" || got != export {
		t.Errorf("authorizer FunctionArn imports %q, the Latchkey stack exports %q", got, export)
	}
	for k, want := range map[string]any{
		"AuthorizerPayloadFormatVersion": "2.0", "EnableSimpleResponses": "true", "EnableFunctionDefaultPermissions": "false",
	} {
		if got := path(az, k); got != want {
			t.Errorf("authorizer %s: got %v, want %v", k, got, want)
		}
	}
	if got := path(az, "Identity", "ReauthorizeEvery"); got != "0" {
		t.Errorf("ReauthorizeEvery: got %v, want 0 (no result caching)", got)
	}
	perm := ex.resource(t, "LatchkeyAuthorizerPermission", "AWS::Lambda::Permission")
	if imported(perm["FunctionName"]) != export || perm["Principal"] != "apigateway.amazonaws.com" || perm["Action"] != "lambda:InvokeFunction" {
		t.Errorf("permission: got %v, want the API Gateway service invoking the imported authorizer", perm)
	}
	if got, _ := path(perm, "SourceArn", "Fn::Sub").(string); !strings.Contains(got, "${OrdersApi}/authorizers/") {
		t.Errorf("permission SourceArn %q: want this API's authorizers only", got)
	}
	// The routes it guards are the ones the authorizer's events decide.
	routes, _, err := replay.AuthorizerManifest(authorizerEventsDir)
	if err != nil {
		t.Fatal(err)
	}
	r, err := authorizer.ParseRoutes(routes)
	if err != nil {
		t.Fatal(err)
	}
	for name, ev := range path(ex.resource(t, "OrdersFunction", "AWS::Serverless::Function"), "Events").(map[string]any) {
		key := fmt.Sprintf("%v %v", path(ev, "Properties", "Method"), path(ev, "Properties", "Path"))
		if _, ok := r[key]; !ok {
			t.Errorf("route %s (%s) has no rule in events/authorizer/manifest.json", key, name)
		}
	}
}

package deploytest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"

	"latchkey/pkg/account"
	"latchkey/pkg/console"
	"latchkey/pkg/dynamostore/dynamotest"
	"latchkey/pkg/httpapi"
	"latchkey/pkg/lambdaapp"
	"latchkey/pkg/lambdaapp/authevents"
	"latchkey/pkg/lambdaapp/replay"
	"latchkey/pkg/mock"
	"latchkey/pkg/secrets"
	"latchkey/pkg/tablestore"
)

// logicalID is the template's resource of each function.
func logicalID(fn lambdaapp.Function) string {
	return map[lambdaapp.Function]string{
		lambdaapp.Auth:          "AuthFunction",
		lambdaapp.Organizations: "OrganizationsFunction",
		lambdaapp.Users:         "UsersFunction",
	}[fn]
}

// templateRoutes returns "METHOD /path" of the function's HttpApi events.
func templateRoutes(t *testing.T, tpl template, fn lambdaapp.Function) []string {
	t.Helper()
	props := tpl.resource(t, logicalID(fn), "AWS::Serverless::Function")
	var out []string
	for name, ev := range props["Events"].(map[string]any) {
		if path(ev, "Type") != "HttpApi" {
			t.Errorf("%s event %s: type %v, want HttpApi", fn, name, path(ev, "Type"))
			continue
		}
		if refOf(path(ev, "Properties", "ApiId")) != "HttpApi" {
			t.Errorf("%s event %s is not on the HttpApi resource", fn, name)
		}
		p, _ := path(ev, "Properties", "Path").(string)
		if strings.Contains(p, "+}") {
			t.Errorf("%s event %s: greedy path %s; routes must be explicit", fn, name, p)
		}
		out = append(out, fmt.Sprintf("%v %v", path(ev, "Properties", "Method"), p))
	}
	slices.Sort(out)
	return out
}

func routeKeys(routes []httpapi.Route, g *httpapi.Group) []string {
	var out []string
	for _, r := range routes {
		if g == nil || r.Group == *g {
			out = append(out, r.Method+" "+r.Path)
		}
	}
	slices.Sort(out)
	return out
}

// TestTemplate_Routes proves that each function's events in template.yaml
// are exactly the routes its router serves, and that together they are
// every route of the API and the console (console.Routes, which the auth
// function serves), which is what cmd/local serves (httpapi.New with no
// group), beside its own local routes (httpapi.LocalRoutes: health checks,
// the API description), which no function serves and the template does
// not route.
func TestTemplate_Routes(t *testing.T) {
	tpl := loadTemplate(t)
	served := append(httpapi.Routes(), console.Routes()...)
	var all []string
	for _, fn := range lambdaapp.Functions() {
		g := fn.Group()
		got, want := templateRoutes(t, tpl, fn), routeKeys(served, &g)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s routes:\n got  %v\n want %v", fn, got, want)
		}
		all = append(all, got...)
	}
	slices.Sort(all)
	if want := routeKeys(served, nil); !slices.Equal(all, want) {
		t.Errorf("all template routes:\n got  %v\n want %v", all, want)
	}
	for _, r := range httpapi.LocalRoutes() {
		if slices.Contains(all, r.Method+" "+r.Path) {
			t.Errorf("the template routes %s %s, which only the local server serves", r.Method, r.Path)
		}
	}
	for _, fn := range lambdaapp.Functions() {
		if fn.Group() == httpapi.GroupLocal {
			t.Errorf("%s serves the group %s, the local server's alone", fn, httpapi.GroupLocal)
		}
	}
	api := tpl.resource(t, "HttpApi", "AWS::Serverless::HttpApi")
	if path(api, "DefaultRouteSettings", "ThrottlingRateLimit") == nil || path(api, "DefaultRouteSettings", "ThrottlingBurstLimit") == nil {
		t.Error("HttpApi has no default route throttling")
	}
	if path(api, "AccessLogSettings", "DestinationArn") == nil {
		t.Error("HttpApi has no access log")
	}
}

// TestTemplate_Table proves that the template's table is the one
// tablestore.TableDefinition creates in tests.
func TestTemplate_Table(t *testing.T) {
	tpl := loadTemplate(t)
	props := tpl.resource(t, "Table", "AWS::DynamoDB::Table")
	def := tablestore.TableDefinition("x")

	if got, want := props["BillingMode"], string(def.BillingMode); got != want {
		t.Errorf("BillingMode: got %v, want %v", got, want)
	}
	var wantAttrs, gotAttrs []string
	for _, a := range def.AttributeDefinitions {
		wantAttrs = append(wantAttrs, aws.ToString(a.AttributeName)+":"+string(a.AttributeType))
	}
	for _, a := range list(props["AttributeDefinitions"]) {
		gotAttrs = append(gotAttrs, fmt.Sprintf("%v:%v", path(a, "AttributeName"), path(a, "AttributeType")))
	}
	slices.Sort(wantAttrs)
	slices.Sort(gotAttrs)
	if !slices.Equal(gotAttrs, wantAttrs) {
		t.Errorf("AttributeDefinitions: got %v, want %v", gotAttrs, wantAttrs)
	}
	keySchema := func(v any) []string {
		var out []string
		for _, k := range list(v) {
			out = append(out, fmt.Sprintf("%v:%v", path(k, "AttributeName"), path(k, "KeyType")))
		}
		return out
	}
	var want []string
	for _, k := range def.KeySchema {
		want = append(want, aws.ToString(k.AttributeName)+":"+string(k.KeyType))
	}
	if got := keySchema(props["KeySchema"]); !slices.Equal(got, want) {
		t.Errorf("KeySchema: got %v, want %v", got, want)
	}
	gsis := list(props["GlobalSecondaryIndexes"])
	if got, want := len(gsis), len(def.GlobalSecondaryIndexes); got != want {
		t.Fatalf("GlobalSecondaryIndexes: got %d, want %d", got, want)
	}
	for i, g := range def.GlobalSecondaryIndexes {
		tg := gsis[i]
		var want []string
		for _, k := range g.KeySchema {
			want = append(want, aws.ToString(k.AttributeName)+":"+string(k.KeyType))
		}
		if got := path(tg, "IndexName"); got != aws.ToString(g.IndexName) {
			t.Errorf("GSI %d name: got %v, want %s", i, got, aws.ToString(g.IndexName))
		}
		if got := keySchema(path(tg, "KeySchema")); !slices.Equal(got, want) {
			t.Errorf("GSI %s KeySchema: got %v, want %v", aws.ToString(g.IndexName), got, want)
		}
		if got, want := path(tg, "Projection", "ProjectionType"), string(g.Projection.ProjectionType); got != want {
			t.Errorf("GSI %s projection: got %v, want %v", aws.ToString(g.IndexName), got, want)
		}
	}
	if got := path(props, "TimeToLiveSpecification", "AttributeName"); got != tablestore.TTLAttribute {
		t.Errorf("TTL attribute: got %v, want %s", got, tablestore.TTLAttribute)
	}
	if got := path(props, "TimeToLiveSpecification", "Enabled"); got != "true" {
		t.Errorf("TTL enabled: got %v", got)
	}
	if got := path(props, "PointInTimeRecoverySpecification", "PointInTimeRecoveryEnabled"); got != "true" {
		t.Errorf("point-in-time recovery: got %v, want true", got)
	}
	if path(props, "DeletionProtectionEnabled", "Fn::If") == nil {
		t.Error("DeletionProtectionEnabled does not follow the TableDeletionProtection parameter")
	}
}

// TestTemplate_Environment proves that each function's environment in the
// template is a configuration its main accepts, and that it names a secret
// only if the function's policy lets it read that secret.
func TestTemplate_Environment(t *testing.T) {
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) { testEnvironment(t, loadTemplate(t).under(v.conds)) })
	}
}

func testEnvironment(t *testing.T, tpl template) {
	for _, fn := range lambdaapp.Functions() {
		env := tpl.functionEnv(t, logicalID(fn))
		if _, err := lambdaapp.ConfigFromEnv(fn, tpl.getenv(t, env, nil)); err != nil {
			t.Errorf("%s: %v", fn, err)
		}
		var secretRefs []string
		for _, v := range env {
			if id := refOf(v); strings.HasSuffix(id, "Secret") {
				secretRefs = append(secretRefs, id)
			}
		}
		slices.Sort(secretRefs)
		var allowed []string
		for _, r := range list(tpl.policyStatement(t, logicalID(fn), "Secrets")["Resource"]) {
			allowed = append(allowed, refOf(r))
		}
		slices.Sort(allowed)
		if !slices.Equal(secretRefs, allowed) {
			t.Errorf("%s: environment names secrets %v, policy allows %v", fn, secretRefs, allowed)
		}
	}
}

// TestTemplate_Roles proves that each function (the authorizer too) runs as
// a role of its own, which Lambda alone may assume, and that the role's only
// logs permissions are to create streams in and write to the function's own
// log group: not the AWSLambdaBasicExecutionRole that SAM would attach,
// which allows both on every log group of the account.
func TestTemplate_Roles(t *testing.T) {
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) { testRoles(t, loadTemplate(t).under(v.conds)) })
	}
}

// xrayWriteActions are the actions a function needs to send X-Ray its
// traces. IAM has no resource-level permissions for them, so "*" is the
// only Resource a statement granting them can name, and it may name them
// only.
var xrayWriteActions = []string{"xray:PutTelemetryRecords", "xray:PutTraceSegments"}

func testRoles(t *testing.T, tpl template) {
	used := map[string]string{}
	for _, id := range tpl.functions() { // the authorizer too
		role := tpl.functionRole(t, id)
		if other, ok := used[role]; ok {
			t.Errorf("%s and %s share the role %s", other, id, role)
		}
		used[role] = id
		trust := list(path(tpl.resource(t, role, "AWS::IAM::Role"), "AssumeRolePolicyDocument", "Statement"))
		if len(trust) != 1 || path(trust[0], "Effect") != "Allow" || path(trust[0], "Principal", "Service") != "lambda.amazonaws.com" ||
			!slices.Equal(strs(path(trust[0], "Action")), []string{"sts:AssumeRole"}) {
			t.Errorf("%s: trust policy %v; want Lambda alone to assume it", role, trust)
		}
		logGroup := refOf(path(tpl.resource(t, id, "AWS::Serverless::Function"), "LoggingConfig", "LogGroup"))
		if logGroup == "" {
			t.Fatalf("%s has no LoggingConfig.LogGroup of its own", id)
		}
		tpl.resource(t, logGroup, "AWS::Logs::LogGroup")
		var logs int
		for _, st := range tpl.statements(t, id) {
			anyResource := st["Resource"] == "*" || slices.Contains(list(st["Resource"]), any("*"))
			if anyResource && (st["Effect"] != "Allow" || !slices.Equal(strs(st["Action"]), xrayWriteActions) || len(strs(st["Resource"])) != 1) {
				t.Errorf("%s statement %v: Resource * for %v; only %v, which have no resource-level permissions, may have it, alone", role, st["Sid"], st["Action"], xrayWriteActions)
			}
			var grantsLogs bool
			for _, a := range strs(st["Action"]) {
				grantsLogs = grantsLogs || strings.HasPrefix(strings.ToLower(a), "logs:")
			}
			if !grantsLogs {
				continue
			}
			logs++
			if got, want := strs(st["Action"]), []string{"logs:CreateLogStream", "logs:PutLogEvents"}; st["Effect"] != "Allow" || !slices.Equal(got, want) {
				t.Errorf("%s statement %v: %v %v, want Allow %v", role, st["Sid"], st["Effect"], got, want)
			}
			// !GetAtt of a log group is its ARN with ":*", so it covers the
			// group's streams and nothing else.
			if got := path(st["Resource"], "Fn::GetAtt"); got != logGroup+".Arn" {
				t.Errorf("%s statement %v: logs on %v, want only the function's own log group (!GetAtt %s.Arn)", role, st["Sid"], st["Resource"], logGroup)
			}
		}
		if logs != 1 {
			t.Errorf("%s: %d statements grant logs actions, want 1", role, logs)
		}
	}
}

// TestTemplate_Bootstrap proves the deploy-time bootstrap is wired so that
// the first request after a deploy works whichever function it reaches:
// the Bootstrap custom resource is served by the one function that may
// write the keys, it changes (and so runs again) with the table and the
// secrets that function reads, and the other functions are created only
// after it has succeeded.
func TestTemplate_Bootstrap(t *testing.T) {
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) { testBootstrap(t, loadTemplate(t).under(v.conds)) })
	}
}

func testBootstrap(t *testing.T, tpl template) {
	props := tpl.resource(t, "Bootstrap", "Custom::Bootstrap")
	var writer lambdaapp.Function
	for _, fn := range lambdaapp.Functions() {
		if fn.WritesCredentials() {
			writer = fn
		}
	}
	if got, want := path(props, "ServiceToken", "Fn::GetAtt"), logicalID(writer)+".Arn"; got != want {
		t.Errorf("Bootstrap ServiceToken: got !GetAtt %v, want !GetAtt %s", got, want)
	}
	if props["ServiceTimeout"] == nil {
		t.Error("Bootstrap has no ServiceTimeout: a failed init would hold the deploy for an hour")
	}
	env := tpl.functionEnv(t, logicalID(writer))
	for prop, variable := range map[string]string{
		"Table": lambdaapp.EnvTableName, "AdminKeySecret": lambdaapp.EnvAdminKeySecret, "SigningKeySecret": lambdaapp.EnvSigningKeySecret,
		"ProbeKeySecret": lambdaapp.EnvProbeKeySecret,
	} {
		if got, want := refOf(props[prop]), refOf(env[variable]); got == "" || got != want {
			t.Errorf("Bootstrap %s: got !Ref %q, want !Ref %q as %s's %s", prop, got, want, writer, variable)
		}
	}
	// The README's rotation invokes the bootstrap by this output.
	if got := refOf(path(map[string]any(tpl), "Outputs", "AuthFunctionName", "Value")); got != logicalID(writer) {
		t.Errorf("output AuthFunctionName: got !Ref %q, want !Ref %s", got, logicalID(writer))
	}
	for _, fn := range lambdaapp.Functions() {
		if fn.WritesCredentials() {
			continue
		}
		r := tpl["Resources"].(map[string]any)[logicalID(fn)]
		if !slices.Contains(strs(path(r, "DependsOn")), "Bootstrap") {
			t.Errorf("%s does not depend on Bootstrap: it could serve a request before the keys are in the table", logicalID(fn))
		}
		if _, ok := tpl.functionEnv(t, logicalID(fn))[lambdaapp.EnvAdminKeySecret]; ok {
			t.Errorf("%s is given the admin key secret; only %s reads it", logicalID(fn), writer)
		}
	}
}

// TestTemplate_Issuer proves how the issuer reaches the functions without a
// circular dependency: no function's environment names it (the API
// depends on the functions, so a function that named the API would depend
// on itself); the IssuerConfig custom resource, served by the function
// that writes the config item, records the API's URL, or the custom
// domain's, and nothing depends on it; the stack outputs what it recorded.
func TestTemplate_Issuer(t *testing.T) {
	tpl := loadTemplate(t)
	props := tpl.resource(t, "IssuerConfig", "Custom::Issuer")
	if got := path(props, "ServiceToken", "Fn::GetAtt"); got != logicalID(lambdaapp.Auth)+".Arn" {
		t.Errorf("IssuerConfig ServiceToken: got !GetAtt %v, want the auth function", got)
	}
	if props["ServiceTimeout"] == nil {
		t.Error("IssuerConfig has no ServiceTimeout")
	}
	choice := list(path(props, authevents.IssuerProperty, "Fn::If"))
	// Issue 34: without a custom domain, the edge's URL when it is on
	// (the API's own refuses every request then).
	edge := list(path(choice[2], "Fn::If"))
	if len(choice) != 3 || choice[0] != "HasCustomDomain" ||
		path(choice[1], "Fn::Sub") != "https://${CustomDomainName}" || len(edge) != 3 || edge[0] != "EdgeProtected" ||
		path(edge[1], "Fn::Sub") != "https://${EdgeDistribution.DomainName}" ||
		path(edge[2], "Fn::Sub") != "https://${HttpApi}.execute-api.${AWS::Region}.${AWS::URLSuffix}" {
		t.Errorf("IssuerConfig %s: got %v, want the custom domain if one is given, else the edge's URL when it is on, else the API's URL", authevents.IssuerProperty, props[authevents.IssuerProperty])
	}
	if got, want := path(map[string]any(tpl), "Outputs", "EdgeUrl", "Value", "Fn::Sub"), path(edge[1], "Fn::Sub"); got != want {
		t.Errorf("the issuer behind the edge is %v, the EdgeUrl output %v: want the same", want, got)
	}
	if got, want := path(map[string]any(tpl), "Outputs", "ApiUrl", "Value", "Fn::Sub"), path(edge[2], "Fn::Sub"); got != want {
		t.Errorf("the issuer without a custom domain is %v, the ApiUrl output %v: want the same", want, got)
	}
	if got := path(map[string]any(tpl), "Outputs", "Issuer", "Value", "Fn::GetAtt"); got != "IssuerConfig."+authevents.IssuerProperty {
		t.Errorf("output Issuer: got !GetAtt %v, want IssuerConfig.%s", got, authevents.IssuerProperty)
	}
	for _, fn := range lambdaapp.Functions() {
		if v, ok := tpl.functionEnv(t, logicalID(fn))[lambdaapp.EnvIssuer]; ok {
			t.Errorf("%s sets %s=%v: the functions read the recorded issuer", fn, lambdaapp.EnvIssuer, v)
		}
	}
	for id, r := range tpl["Resources"].(map[string]any) {
		if slices.Contains(strs(path(r, "DependsOn")), "IssuerConfig") {
			t.Errorf("%s depends on IssuerConfig, which depends on the API", id)
		}
	}
}

// recording is what one function did while its events and a rotation of
// its secrets were replayed.
type recording struct {
	actions   map[string]bool // IAM actions of the DynamoDB requests
	ops       map[string]bool // DynamoDB API operations called
	requests  []iamRequest    // each request as IAM authorizes it
	usedIndex bool            // a Query named an index
	secrets   map[string]bool // ids of the secrets read
}

// replayFunction replays each of fn's events over a fresh backend, then a
// rotation of its secrets, recording every DynamoDB request and secret read.
func replayFunction(t *testing.T, fn lambdaapp.Function, entries []replay.Entry) recording {
	t.Helper()
	rec := recording{actions: map[string]bool{}, ops: map[string]bool{}, secrets: map[string]bool{}}
	run := func(b backend, sm *replay.Secrets, clock *mock.Clock, evs ...replay.Entry) {
		t.Helper()
		app, err := lambdaapp.New(context.Background(), replay.Config(fn, "latchkey"), lambdaapp.Deps{
			Store: b.store, Keys: b.keys, Secrets: sm, Logger: discard, Now: clock.Now,
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			ev, err := replay.LoadEvent(filepath.Join(eventsDir, e.Event))
			if err != nil {
				t.Fatal(err)
			}
			// A retried event is sent twice: the replay's requests count.
			for range 1 + btoi(e.Retried) {
				if _, err := app.Lambda()(context.Background(), ev); err != nil {
					t.Fatal(err)
				}
			}
		}
		rec.usedIndex = b.calls.merge(rec.actions, rec.ops, &rec.requests) || rec.usedIndex
		for id := range sm.Read() {
			rec.secrets[id] = true
		}
	}
	var mine []replay.Entry
	for _, e := range entries {
		if e.Function == fn {
			mine = append(mine, e)
		}
	}
	if len(mine) == 0 {
		t.Fatalf("no events for %s", fn)
	}
	for _, e := range mine {
		run(newBackend(t), replay.NewSecrets(), mock.NewClock(time.Now()), e)
	}
	// Rotation: new secrets are put while the function is warm; the next
	// request after the refresh interval applies them (auth retires the
	// old bootstrap key and publishes the new public key).
	b := newBackend(t)
	sm := replay.NewSecrets()
	clock := mock.NewClock(time.Now())
	app, err := lambdaapp.New(context.Background(), replay.Config(fn, "latchkey"), lambdaapp.Deps{
		Store: b.store, Keys: b.keys, Secrets: sm, Logger: discard, Now: clock.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	sm.Put(replay.AdminARN, replay.AdminSecret+"-rotated")
	sm.Put(replay.CursorARN, replay.CursorSecret+"-rotated")
	sm.Put(replay.SigningARN, replay.SigningSecret+"-rotated")
	clock.Advance(secrets.DefaultRefreshInterval)
	ev, err := replay.LoadEvent(filepath.Join(eventsDir, mine[0].Event))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := app.Lambda()(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	// And the bootstrap a deploy runs (auth only; the others refuse it).
	if fn.WritesCredentials() {
		if err := app.Bootstrap(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	rec.usedIndex = b.calls.merge(rec.actions, rec.ops, &rec.requests) || rec.usedIndex
	for id := range sm.Read() {
		rec.secrets[id] = true
	}
	return rec
}

// idempotencyPartition starts the partition keys of idempotency records
// (pkg/dynamostore/keys.go).
const idempotencyPartition = "IDEM#"

// eventPartitions start the partitions of the event feed: the feed's
// days, and each organization's copies (pkg/dynamostore/events.go).
var eventPartitions = []string{"EVENT#", "EVENTORG#"}

// eventKind returns the start of the event partition pk is in, "" for
// none.
func eventKind(pk string) string {
	for _, p := range eventPartitions {
		if strings.HasPrefix(pk, p) {
			return p
		}
	}
	return ""
}

// writeActions are the DynamoDB actions that create, change or delete items.
var writeActions = []string{
	"dynamodb:BatchWriteItem", "dynamodb:DeleteItem", "dynamodb:PartiQLDelete", "dynamodb:PartiQLInsert",
	"dynamodb:PartiQLUpdate", "dynamodb:PutItem", "dynamodb:UpdateItem",
}

// TestTemplate_LeastPrivilege replays each function's events, a rotation of
// its secrets and (auth) the deploy-time bootstrap over DynamoDB Local with
// SDK middleware that records every request, and proves that:
//
//   - the function's role grants exactly the actions the code used (on the
//     table, in all its statements, and the index only if a Query used
//     one) and exactly the secrets it read;
//   - the role, evaluated as IAM does (explicit Deny first), allows every
//     request the function made, with the partition keys it touched;
//   - each role may write only the partitions, and with only the actions,
//     stated in partitionWrites (writes_test.go): the organizations role
//     no item of auth's but by the deletes of its cascade, the users role
//     no organization's read copies, no role an update or delete of an
//     event, and what IAM cannot say is listed there;
//   - no other role than auth's may put, update or delete (nor batch-write,
//     nor through PartiQL) an item in any partition that auth wrote: the
//     public keys, API keys and their hash items, token records and
//     revocation entries. A role that could publish its own public key
//     could mint any token. The one exception is an API key's last use,
//     which every function writes, in partitions that hold nothing else.
func TestTemplate_LeastPrivilege(t *testing.T) {
	if os.Getenv(dynamotest.EndpointEnv) == "" {
		t.Skip(dynamotest.EndpointEnv + " is not set; run through scripts/dynamodb-local.sh (make test does)")
	}
	entries, err := replay.Manifest(eventsDir)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	recs := map[lambdaapp.Function]recording{}
	t.Run("replay", func(t *testing.T) {
		for _, fn := range lambdaapp.Functions() {
			t.Run(string(fn), func(t *testing.T) {
				t.Parallel() // each function records into its own maps and stores
				rec := replayFunction(t, fn, entries)
				mu.Lock()
				defer mu.Unlock()
				recs[fn] = rec
			})
		}
	})
	if t.Failed() {
		return
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) { checkLeastPrivilege(t, loadTemplate(t).under(v.conds), recs) })
	}
	// DynamoDB reports SystemErrors per operation, so the alarm on them
	// watches a list of operations: it must hold every one the code calls.
	t.Run("SystemErrorsAlarm", func(t *testing.T) {
		for _, fn := range lambdaapp.Functions() {
			for _, op := range sortedKeys(recs[fn].ops) {
				if !slices.Contains(systemErrorOperations, op) {
					t.Errorf("%s calls DynamoDB %s, which the system errors alarm does not watch", fn, op)
				}
			}
		}
	})
}

// checkLeastPrivilege holds the roles of tpl to what each function did.
func checkLeastPrivilege(t *testing.T, tpl template, recs map[lambdaapp.Function]recording) {
	for _, fn := range lambdaapp.Functions() {
		t.Run(string(fn), func(t *testing.T) {
			rec := recs[fn]
			if got, want := tableActions(tpl.statements(t, logicalID(fn))), sortedKeys(rec.actions); !slices.Equal(got, want) {
				t.Errorf("DynamoDB actions:\n policy %v\n code   %v", got, want)
			}
			statement := tpl.policyStatement(t, logicalID(fn), "Table")
			var hasTable, hasIndex bool
			for _, r := range list(statement["Resource"]) {
				switch resolveARN(r) {
				case tableARN:
					hasTable = true
				case tableARN + "/index/*":
					hasIndex = true
				default:
					t.Errorf("Table statement names another resource: %v", r)
				}
			}
			if !hasTable || hasIndex != rec.usedIndex {
				t.Errorf("Table statement resources: table %v, index %v; the code used the index: %v", hasTable, hasIndex, rec.usedIndex)
			}

			statements := tpl.statements(t, logicalID(fn))
			refused := map[string]bool{} // one message per action and kind of item
			for _, req := range rec.requests {
				allowed, err := decide(statements, req)
				if err != nil {
					t.Fatalf("%s: %v", req, err)
				}
				if kind := fmt.Sprint(req.Action, req.Index, req.SortKey); !allowed && !refused[kind] {
					refused[kind] = true
					t.Errorf("the role refuses a request the code makes: %s", req)
				}
			}

			var readIDs []string
			for arn := range rec.secrets {
				readIDs = append(readIDs, logicalFromARN(arn))
			}
			slices.Sort(readIDs)
			var allowed []string
			for _, r := range list(tpl.policyStatement(t, logicalID(fn), "Secrets")["Resource"]) {
				allowed = append(allowed, refOf(r))
			}
			slices.Sort(allowed)
			if !slices.Equal(readIDs, allowed) {
				t.Errorf("secrets:\n policy %v\n code   %v", allowed, readIDs)
			}
			if got := strs(tpl.policyStatement(t, logicalID(fn), "Secrets")["Action"]); !slices.Equal(got, []string{"secretsmanager:GetSecretValue"}) {
				t.Errorf("Secrets actions: got %v, want only secretsmanager:GetSecretValue", got)
			}
		})
	}
	t.Run("Writes", func(t *testing.T) { checkWrites(t, tpl) })
	t.Run("AuthItemsOnlyAuth", func(t *testing.T) {
		// The partitions auth wrote, and the kinds of item (by sort key,
		// pkg/dynamostore/keys.go) it wrote there. The replay must have
		// written each kind the rule names, or it proves nothing about it.
		// The partitions of the shared kinds, which hold nothing else,
		// are left out: every function writes them.
		written := map[string]bool{}
		kinds := map[string]string{}
		for _, req := range recs[lambdaapp.Auth].requests {
			if !slices.Contains(writeActions, req.Action) || sharedKinds[req.SortKey] != "" {
				continue
			}
			for _, pk := range req.LeadingKeys {
				// Idempotency records are every function's: each records
				// the requests it serves, in the calling key's partition.
				// Auth's answers there are sealed under a key only auth
				// holds, so a record another role writes replays nothing
				// (httpapi TestIdempotencyKey_SecretsSealed).
				if strings.HasPrefix(pk, idempotencyPartition) {
					continue
				}
				// Events are every function's too: each writes the
				// events of its own changes (EventsAppendOnly below).
				if eventKind(pk) != "" {
					continue
				}
				written[pk] = true
			}
			if req.SortKey != "" && req.Action != "dynamodb:DeleteItem" {
				// A kind whose sort key names an item (TOKEN#<tok_id>, a
				// token record in its key's partition) by its prefix.
				kind, _, named := strings.Cut(req.SortKey, "#")
				if named {
					kind += "#"
				}
				kinds[kind] = req.LeadingKeys[0]
			}
		}
		for sk, what := range map[string]string{
			"JWKS": "the public signing keys", "KEY": "an API key", "KEYHASH": "an API key's hash item",
			"TOKEN#": "a token record", "REVOKED": "a revocation entry",
		} {
			if kinds[sk] == "" {
				t.Errorf("the auth replay wrote no %s (sort key %s); it must, for this test to cover it", what, sk)
			}
		}
		for _, fn := range lambdaapp.Functions() {
			if fn.WritesCredentials() {
				continue
			}
			statements := tpl.statements(t, logicalID(fn))
			for _, action := range writeActions {
				var open []string
				for _, pk := range sortedKeys(written) {
					req := iamRequest{Action: action, LeadingKeys: []string{pk}}
					allowed, err := decide(statements, req)
					if err != nil {
						t.Fatalf("%s: %s: %v", fn, req, err)
					}
					if allowed && !(action == "dynamodb:DeleteItem" && matchesAny(cascadeDeletes[fn], pk)) {
						open = append(open, pk)
					}
				}
				if len(open) > 0 {
					t.Errorf("%s's role may %s in %d of the %d partitions that hold the auth function's items, e.g. %q",
						fn, action, len(open), len(written), open[:min(len(open), 3)])
				}
			}
		}
	})
	t.Run("UsageRecordsUpdateOnly", func(t *testing.T) {
		// A use of a limited key is one UpdateItem of its usage record;
		// the functions that count the uses of their callers' keys may
		// neither put a record whole nor delete one.
		for _, fn := range []lambdaapp.Function{lambdaapp.Organizations, lambdaapp.Users} {
			statements := tpl.statements(t, logicalID(fn))
			for _, action := range writeActions {
				req := iamRequest{Action: action, LeadingKeys: []string{"KEYLIMIT#key_01KF0E44M00000000000000001#0"}, SortKey: "LIMIT"}
				allowed, err := decide(statements, req)
				if err != nil {
					t.Fatalf("%s: %s: %v", fn, req, err)
				}
				if want := action == "dynamodb:UpdateItem"; allowed != want {
					t.Errorf("%s's role: %s allowed %v, want %v", fn, req, allowed, want)
				}
			}
		}
	})
	t.Run("GuardsOnlyTheirFunction", func(t *testing.T) {
		// The guards of users' unique values (e-mail, external id) are
		// written by the users function, those of organizations' (slug,
		// external id) by the organizations function; the other's role
		// may write none of them. The replays must have written each kind.
		for owner, kinds := range map[lambdaapp.Function][]string{
			lambdaapp.Users:         {"EMAIL", "USEREXT"},
			lambdaapp.Organizations: {"SLUG", "ORGEXT"},
		} {
			written := map[string][]string{} // kind -> partitions
			for _, req := range recs[owner].requests {
				if slices.Contains(writeActions, req.Action) && slices.Contains(kinds, req.SortKey) {
					written[req.SortKey] = append(written[req.SortKey], req.LeadingKeys[0])
				}
			}
			for _, kind := range kinds {
				if len(written[kind]) == 0 {
					t.Errorf("the %s replay wrote no guard of kind %s; it must, for this test to cover it", owner, kind)
				}
			}
			for _, fn := range lambdaapp.Functions() {
				if fn == owner || fn.WritesCredentials() {
					continue
				}
				statements := tpl.statements(t, logicalID(fn))
				for _, kind := range kinds {
					for _, pk := range written[kind] {
						for _, action := range writeActions {
							req := iamRequest{Action: action, LeadingKeys: []string{pk}, SortKey: kind}
							allowed, err := decide(statements, req)
							if err != nil {
								t.Fatalf("%s: %s: %v", fn, req, err)
							}
							if allowed {
								t.Errorf("%s's role may %s the %s guard %q, which only %s writes", fn, action, kind, pk, owner)
							}
						}
					}
				}
			}
		}
	})
	t.Run("EventsAppendOnly", func(t *testing.T) {
		// Every function that changes data puts the events of its changes
		// (the replay must show it), and no role may change or delete an
		// event: they go only by TTL.
		// An organization's copy of an event is held to the same rule.
		for _, fn := range []lambdaapp.Function{lambdaapp.Auth, lambdaapp.Organizations, lambdaapp.Users} {
			partitions := map[string]string{} // kind -> one partition the replay put an event in
			for _, req := range recs[fn].requests {
				if req.Action == "dynamodb:PutItem" && len(req.LeadingKeys) == 1 && eventKind(req.LeadingKeys[0]) != "" {
					partitions[eventKind(req.LeadingKeys[0])] = req.LeadingKeys[0]
				}
			}
			for _, kind := range eventPartitions {
				pk := partitions[kind]
				if pk == "" {
					t.Errorf("the %s replay put no event in a %s partition; it must, for this test to cover it", fn, kind)
					continue
				}
				statements := tpl.statements(t, logicalID(fn))
				for _, action := range writeActions {
					req := iamRequest{Action: action, LeadingKeys: []string{pk}}
					allowed, err := decide(statements, req)
					if err != nil {
						t.Fatalf("%s: %s: %v", fn, req, err)
					}
					if want := action == "dynamodb:PutItem"; allowed != want {
						t.Errorf("%s's role: %s an event in %s: allowed %v, want %v", fn, action, pk, allowed, want)
					}
				}
			}
		}
	})
	t.Run("CascadeDeletes", func(t *testing.T) {
		// A function allowed to delete the auth function's items in its
		// cascade must do so in the replay, in each kind of partition it is
		// allowed, or the allowance is one more than it needs.
		for fn, patterns := range cascadeDeletes {
			for _, pattern := range patterns {
				var deleted bool
				for _, req := range recs[fn].requests {
					deleted = deleted || req.Action == "dynamodb:DeleteItem" && matchesAny([]string{pattern}, req.LeadingKeys...)
				}
				if !deleted {
					t.Errorf("%s's replay deleted nothing in a partition %s, which its role may delete in", fn, pattern)
				}
			}
		}
	})
	t.Run("SharedItems", func(t *testing.T) {
		// An API key's last use, and the usage record of a key with rate
		// limits, are written by every function that authenticates API keys, each in its own role (checked above
		// against every request made), in partitions that hold no item of
		// the auth function: a function that may record a key's use may
		// not, through that, change the key.
		for sk, what := range sharedKinds {
			for _, fn := range lambdaapp.Functions() {
				var pks []string
				for _, req := range recs[fn].requests {
					if req.SortKey == sk && slices.Contains(writeActions, req.Action) {
						pks = append(pks, req.LeadingKeys...)
					}
				}
				if len(pks) == 0 {
					t.Errorf("the %s replay wrote no %s (sort key %s); it must, for this test to cover it", fn, what, sk)
				}
				for _, req := range recs[lambdaapp.Auth].requests {
					if req.SortKey == sk || !slices.Contains(writeActions, req.Action) {
						continue
					}
					for _, pk := range req.LeadingKeys {
						if slices.Contains(pks, pk) {
							t.Errorf("%s's %s is in partition %q, where auth writes %s items too", fn, what, pk, req.SortKey)
						}
					}
				}
			}
		}
	})
}

// cascadeDeletes are the partitions of the auth function's items in which
// a function may delete, and nothing else, as template.yaml allows: deleting
// an organization deletes the API keys bound to it.
var cascadeDeletes = map[lambdaapp.Function][]string{
	lambdaapp.Organizations: {"KEY#*", "KEYHASH#*", "KEYORG#*", "KEYOWNER#*"},
}

// matchesAny reports whether any of values matches any of the IAM patterns.
func matchesAny(patterns []string, values ...string) bool {
	for _, p := range patterns {
		for _, v := range values {
			if globMatch(p, v) {
				return true
			}
		}
	}
	return false
}

// sharedKinds are the kinds of item (by sort key) that every function
// writes: an API key's last use (pkg/dynamostore/keyuse.go). They live in
// partitions of their own, which template.yaml does not deny.
var sharedKinds = map[string]string{"USE": "an API key's last use", "LIMIT": "a limited API key's usage record"}

// logicalFromARN maps the fixture's ARNs (…:secret:<LogicalId>-AbCdEf) to
// the template's logical ids.
func logicalFromARN(arn string) string {
	_, name, _ := strings.Cut(arn, ":secret:")
	return strings.TrimSuffix(name, "-AbCdEf")
}

// TestTemplate_CfnLint runs AWS's linter, which applies the real SAM
// transform offline, on template.yaml and on
// examples/protected-api/template.yaml, in one run (its start is most of
// its time). Warnings fail the test as errors do. Without cfn-lint it
// skips, as plain `go test ./...` does for every test that needs a tool;
// make test checks first that cfn-lint is there, and lints the templates
// only here and in TestTemplate_CfnLintTransformed.
func TestTemplate_CfnLint(t *testing.T) {
	bin, err := exec.LookPath("cfn-lint")
	if err != nil {
		t.Skip("cfn-lint is not on PATH; install it with: pip install cfn-lint (make test requires it)")
	}
	// Only to catch a hang: on a loaded machine a run takes a minute.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--", filepath.Base(templatePath), "examples/protected-api/template.yaml")
	cmd.Dir = filepath.Dir(templatePath)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		t.Fatalf("cfn-lint template.yaml examples/protected-api/template.yaml (exit %d):\n%s", exit.ExitCode(), out)
	case err != nil:
		t.Fatal(err)
	}
}

// TestFunctions_RouteParity sends every route of the API, and the local
// server's own, without a credential, to each function's Lambda handler
// (the value passed to lambda.Start) as an API Gateway HTTP API event. The
// function's own routes must answer 401 (the JWKS, which is public, 200)
// and every other group's route 404, the local ones included: each function
// serves its group, all of it and nothing else, whatever the template
// routes to it.
func TestFunctions_RouteParity(t *testing.T) {
	for _, fn := range lambdaapp.Functions() {
		t.Run(string(fn), func(t *testing.T) {
			t.Parallel() // each function has its own store
			b := newBackend(t)
			app, err := lambdaapp.New(context.Background(), replay.Config(fn, "latchkey"), lambdaapp.Deps{
				Store: b.store, Keys: b.keys, Secrets: replay.NewSecrets(), Logger: discard,
			})
			if err != nil {
				t.Fatalf("init %s: %v", fn, err)
			}
			handler := app.Lambda()
			for _, r := range append(httpapi.Routes(), httpapi.LocalRoutes()...) {
				key := r.Method + " " + r.Path
				wantStatus, wantCode := http.StatusNotFound, "not_found"
				switch {
				case r.Group != fn.Group():
				case r.Public():
					wantStatus, wantCode = http.StatusOK, ""
				case r.OAuth():
					wantStatus, wantCode = http.StatusUnauthorized, "invalid_client"
				default:
					wantStatus, wantCode = http.StatusUnauthorized, "unauthorized"
				}
				res, err := handler(context.Background(), routeEvent(r))
				if err != nil {
					t.Errorf("%s: handler error: %v", key, err)
					continue
				}
				// A problem's code, or an OAuth error's error; a public
				// document has neither, so it decodes to "".
				var problem struct {
					Code  string `json:"code"`
					Error string `json:"error"`
				}
				// A status list is a JWT, the one success that is not JSON.
				if err := json.Unmarshal(responseBody(t, res), &problem); err != nil && responseHeader(res).Get("Content-Type") != "application/statuslist+jwt" {
					t.Errorf("%s: body is not JSON: %v", key, err)
				}
				if code := problem.Code + problem.Error; res.StatusCode != wantStatus || code != wantCode {
					t.Errorf("%s (group %s): got %d %q, want %d %q", key, r.Group, res.StatusCode, code, wantStatus, wantCode)
				}
			}
			// The console: auth serves it (a page without a session goes
			// to the sign-in; the sign-in and the static files are public),
			// no other function does.
			for _, r := range console.Routes() {
				key := r.Method + " " + r.Path
				res, err := handler(context.Background(), routeEvent(r))
				if err != nil {
					t.Errorf("%s: handler error: %v", key, err)
					continue
				}
				switch {
				case fn != lambdaapp.Auth:
					if res.StatusCode != http.StatusNotFound {
						t.Errorf("%s served by %s: %d, want 404", key, fn, res.StatusCode)
					}
				case r.Method == http.MethodGet && strings.HasPrefix(r.Path, "/console/s"): // sign-in, static
					if res.StatusCode != http.StatusOK {
						t.Errorf("%s: %d, want 200", key, res.StatusCode)
					}
				case r.Path == "/console/sign-in":
					if res.StatusCode != http.StatusBadRequest {
						t.Errorf("%s without a key: %d, want 400", key, res.StatusCode)
					}
				default:
					if loc := responseHeader(res).Get("Location"); res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/console/sign-in") {
						t.Errorf("%s without a session: %d to %q, want 303 to the sign-in", key, res.StatusCode, loc)
					}
				}
			}
		})
	}
}

// routeEvent is the event API Gateway would send for r with no credential:
// path parameters filled with fixture ids, a JSON body for the
// methods that take one, a form for an OAuth endpoint.
func routeEvent(r httpapi.Route) events.APIGatewayV2HTTPRequest {
	params := map[string]string{}
	rawPath := r.Path
	for name, id := range map[string]string{"{id}": pathID(r.Path), "{user_id}": replay.OtherUser, "{file}": "console.css"} {
		if strings.Contains(rawPath, name) {
			params[strings.Trim(name, "{}")] = id
			rawPath = strings.ReplaceAll(rawPath, name, id)
		}
	}
	ev := events.APIGatewayV2HTTPRequest{
		Version:        "2.0",
		RouteKey:       r.Method + " " + r.Path,
		RawPath:        rawPath,
		Headers:        map[string]string{"accept": "application/json", "host": "a1b2c3d4e5.execute-api.us-east-1.amazonaws.com"},
		PathParameters: params,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			AccountID:  "123456789012",
			APIID:      "a1b2c3d4e5",
			DomainName: "a1b2c3d4e5.execute-api.us-east-1.amazonaws.com",
			RequestID:  "RouteParity" + strings.NewReplacer("/", "-", "{", "", "}", "").Replace(r.Path) + "=",
			RouteKey:   r.Method + " " + r.Path,
			Stage:      "$default",
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{
				Method: r.Method, Path: rawPath, Protocol: "HTTP/1.1", SourceIP: "203.0.113.10",
			},
		},
	}
	switch {
	case r.OAuth():
		// An OAuth client that sends no client authentication.
		ev.Headers["content-type"] = "application/x-www-form-urlencoded"
		ev.Body = "grant_type=client_credentials&token=x"
	case r.Method == http.MethodPost || r.Method == http.MethodPut || r.Method == http.MethodPatch:
		ev.Headers["content-type"] = "application/json"
		ev.Body = "{}"
	}
	return ev
}

// pathID is a fixture id of the kind the path's {id} names.
func pathID(p string) string {
	switch {
	case strings.HasPrefix(p, "/v1/api-keys/"), strings.HasPrefix(p, "/console/api-keys/"):
		return replay.OtherKeyID
	case strings.HasPrefix(p, "/v1/organizations/"), strings.HasPrefix(p, "/console/organizations/"):
		return replay.OrgID
	case strings.HasPrefix(p, "/v1/auth/status-lists/"):
		return replay.StatusListID
	default:
		return replay.UserID
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestTemplate_CfnLintTransformed lints what CloudFormation receives:
// template.yaml after the SAM transform (scripts/sam-transform.py, which
// runs samtranslator through cfn-lint's own wrapper), with what SAM
// generates: versions, aliases, CodeDeploy's application, deployment
// groups and role, the permissions on the aliases. Warnings fail it too.
func TestTemplate_CfnLintTransformed(t *testing.T) {
	bin, err := exec.LookPath("cfn-lint")
	if err != nil {
		t.Skip("cfn-lint is not on PATH; install it with: pip install cfn-lint (make test requires it)")
	}
	// Only to catch a hang: on a loaded machine a run takes a minute.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	transform := exec.CommandContext(ctx, "./scripts/sam-transform.py", filepath.Base(templatePath))
	transform.Dir = filepath.Dir(templatePath)
	var stderr strings.Builder
	transform.Stderr = &stderr
	out, err := transform.Output()
	if err != nil {
		t.Fatalf("scripts/sam-transform.py template.yaml: %v\n%s", err, stderr.String())
	}
	var doc struct {
		Resources map[string]struct{ Type string }
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	types := map[string]int{}
	for _, r := range doc.Resources {
		types[r.Type]++
	}
	// One version and one alias per function (the verify function's too,
	// under its condition, the canary hook's and the probe's), and auth's
	// grow alias (AuthGrowAlias); a deployment group for each of the five
	// gradually deployed.
	if types["AWS::Lambda::Version"] != 8 || types["AWS::Lambda::Alias"] != 9 || types["AWS::CodeDeploy::DeploymentGroup"] != 5 {
		t.Errorf("transformed: %d versions, %d aliases, %d deployment groups; want 8, 9, 5", types["AWS::Lambda::Version"], types["AWS::Lambda::Alias"], types["AWS::CodeDeploy::DeploymentGroup"])
	}
	checkCanaryTransformed(t, out)
	file := filepath.Join(t.TempDir(), "transformed.json")
	if err := os.WriteFile(file, out, 0o644); err != nil {
		t.Fatal(err)
	}
	lint, err := exec.CommandContext(ctx, bin, "--", file).CombinedOutput()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		t.Fatalf("cfn-lint of the transformed template (exit %d):\n%s", exit.ExitCode(), lint)
	case err != nil:
		t.Fatal(err)
	}
}

// checkCanaryTransformed holds the canary's order in what CloudFormation
// receives: each gradually deployed function's alias runs the hook before
// traffic (BeforeAllowTrafficHook), and waits on its deployment group
// (UpdatePolicy names it), which names the version alarms, which name the
// version the alias moves to: so CloudFormation has pointed the alarms at
// the new version before CodeDeploy moves any traffic to it.
func checkCanaryTransformed(t *testing.T, out []byte) {
	t.Helper()
	var doc struct{ Resources map[string]map[string]any }
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	for _, fn := range []string{"AuthFunction", authorizerID, verifyID, "OrganizationsFunction", "UsersFunction"} {
		alias := doc.Resources[fn+"Aliaslive"]
		update := path(alias, "UpdatePolicy", "CodeDeployLambdaAliasUpdate")
		if refOf(path(update, "BeforeAllowTrafficHook")) != "CanaryHookFunction" || refOf(path(update, "DeploymentGroupName")) != fn+"DeploymentGroup" {
			t.Errorf("%sAliaslive: update policy %v, want the hook CanaryHookFunction and the group %sDeploymentGroup", fn, update, fn)
			continue
		}
		version := fmt.Sprint(list(path(alias, "Properties", "FunctionVersion", "Fn::GetAtt"))...)
		if !strings.HasPrefix(version, fn+"Version") {
			t.Errorf("%sAliaslive: FunctionVersion %v, want the GetAtt of its version", fn, path(alias, "Properties", "FunctionVersion"))
		}
		alarms := path(doc.Resources[fn+"DeploymentGroup"], "Properties", "AlarmConfiguration")
		if args := list(path(alarms, "Fn::If")); len(args) == 3 {
			alarms = args[1]
		}
		found := false
		for _, a := range list(path(alarms, "Alarms")) {
			id := refOf(path(a, "Name"))
			for _, m := range list(path(doc.Resources[id], "Properties", "Metrics")) {
				for _, d := range list(path(m, "MetricStat", "Metric", "Dimensions")) {
					if path(d, "Name") == "ExecutedVersion" {
						found = true
						if got := fmt.Sprint(list(path(d, "Value", "Fn::GetAtt"))...); got != version {
							t.Errorf("%s watches version %s, the alias moves to %s", id, got, version)
						}
					}
				}
			}
		}
		if !found {
			t.Errorf("%sDeploymentGroup: no alarm of the new version among %v", fn, alarms)
		}
	}
}

// TestTemplate_Formats: the Formats custom resource, which puts this
// release's stored formats in force (docs/deploying.md, "Formats in
// force"), is served by the auth function and waits for every function's
// alias: those always deployed by DependsOn, the optional ones (verify's
// URL, the publisher) by a Ref under their condition. Its list names
// this release's formats (revocations on the key, status lists), and
// nothing depends on it.
func TestTemplate_Formats(t *testing.T) {
	tpl := loadTemplate(t)
	props := tpl.resource(t, "Formats", "Custom::Formats")
	if got := path(props, "ServiceToken", "Fn::GetAtt"); got != logicalID(lambdaapp.Auth)+".Arn" {
		t.Errorf("Formats ServiceToken: got !GetAtt %v, want the auth function", got)
	}
	if props["ServiceTimeout"] == nil {
		t.Error("Formats has no ServiceTimeout")
	}
	if got, want := props[authevents.FormatsProperty], strings.Join(account.ReleaseFormats, " "); got != want {
		t.Errorf("Formats %s: got %v, want %q", authevents.FormatsProperty, got, want)
	}
	waits := strs(path(tpl["Resources"].(map[string]any)["Formats"], "DependsOn"))
	for _, alias := range list(props["Aliases"]) {
		if ref, ok := path(list(path(alias, "Fn::If"))[1], "Ref").(string); ok {
			waits = append(waits, ref)
		}
	}
	for id, r := range tpl["Resources"].(map[string]any) {
		if path(r, "Type") == "AWS::Serverless::Function" && !slices.Contains(waits, id+"Aliaslive") {
			t.Errorf("Formats does not wait for %sAliaslive", id)
		}
		if slices.Contains(strs(path(r, "DependsOn")), "Formats") {
			t.Errorf("%s depends on Formats, which must run last", id)
		}
	}
}

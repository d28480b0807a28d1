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
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"

	"latchkey/pkg/dynamostore"
	"latchkey/pkg/dynamostore/dynamotest"
	"latchkey/pkg/httpapi"
	"latchkey/pkg/lambdaapp"
	"latchkey/pkg/lambdaapp/replay"
	"latchkey/pkg/secrets"
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
// every route of the API, which is what cmd/local serves (httpapi.New with
// no group).
func TestTemplate_Routes(t *testing.T) {
	tpl := loadTemplate(t)
	var all []string
	for _, fn := range lambdaapp.Functions() {
		g := fn.Group()
		got, want := templateRoutes(t, tpl, fn), routeKeys(httpapi.Routes(), &g)
		if !slices.Equal(got, want) {
			t.Errorf("%s routes:\n got  %v\n want %v", fn, got, want)
		}
		all = append(all, got...)
	}
	slices.Sort(all)
	if want := routeKeys(httpapi.Routes(), nil); !slices.Equal(all, want) {
		t.Errorf("all template routes:\n got  %v\n want %v", all, want)
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
// dynamostore.TableDefinition creates in tests.
func TestTemplate_Table(t *testing.T) {
	tpl := loadTemplate(t)
	props := tpl.resource(t, "Table", "AWS::DynamoDB::Table")
	def := dynamostore.TableDefinition("x")

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
	if got := path(props, "TimeToLiveSpecification", "AttributeName"); got != dynamostore.TTLAttribute {
		t.Errorf("TTL attribute: got %v, want %s", got, dynamostore.TTLAttribute)
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
	tpl := loadTemplate(t)
	for _, fn := range lambdaapp.Functions() {
		env := tpl.functionEnv(t, logicalID(fn))
		getenv := func(k string) string {
			if v, ok := env[k]; ok {
				return fmt.Sprint(v)
			}
			return ""
		}
		if _, err := lambdaapp.ConfigFromEnv(fn, getenv); err != nil {
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

// TestTemplate_LeastPrivilege replays each function's events, and a
// rotation of its secrets, over DynamoDB Local with SDK middleware that
// records the IAM action of every request, and proves that the function's
// policy grants exactly those actions (on the table, and its index only if
// a Query used one) and exactly the secrets it read.
func TestTemplate_LeastPrivilege(t *testing.T) {
	if os.Getenv(dynamotest.EndpointEnv) == "" {
		t.Skip(dynamotest.EndpointEnv + " is not set; run through scripts/dynamodb-local.sh (make test does)")
	}
	tpl := loadTemplate(t)
	entries, err := replay.Manifest(eventsDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, fn := range lambdaapp.Functions() {
		t.Run(string(fn), func(t *testing.T) {
			t.Parallel() // each function records into its own maps and stores
			actions := map[string]bool{}
			usedIndex := false
			read := map[string]bool{}
			run := func(b backend, sm *replay.Secrets, clock *fakeClock, evs ...string) {
				t.Helper()
				app, err := lambdaapp.New(context.Background(), replay.Config(fn, "latchkey"), lambdaapp.Deps{
					Store: b.store, Keys: b.keys, Secrets: sm, Logger: discard, Now: clock.Now,
				})
				if err != nil {
					t.Fatal(err)
				}
				for _, name := range evs {
					ev, err := replay.LoadEvent(filepath.Join(eventsDir, name))
					if err != nil {
						t.Fatal(err)
					}
					if _, err := app.Lambda()(context.Background(), ev); err != nil {
						t.Fatal(err)
					}
				}
				usedIndex = b.calls.merge(actions) || usedIndex
				for id := range sm.Read() {
					read[id] = true
				}
			}
			var mine []string
			for _, e := range entries {
				if e.Function == fn {
					mine = append(mine, e.Event)
				}
			}
			if len(mine) == 0 {
				t.Fatalf("no events for %s", fn)
			}
			for _, name := range mine {
				run(newBackend(t), replay.NewSecrets(), &fakeClock{t: time.Now()}, name)
			}
			// Rotation: a new admin key (and signing key, for auth) is put
			// while the function is warm; the next request after the refresh
			// interval applies it, retiring the old bootstrap key.
			b := newBackend(t)
			sm := replay.NewSecrets()
			clock := &fakeClock{t: time.Now()}
			app, err := lambdaapp.New(context.Background(), replay.Config(fn, "latchkey"), lambdaapp.Deps{
				Store: b.store, Keys: b.keys, Secrets: sm, Logger: discard, Now: clock.Now,
			})
			if err != nil {
				t.Fatal(err)
			}
			sm.Put(replay.AdminARN, replay.AdminSecret+"-rotated")
			sm.Put(replay.CursorARN, replay.CursorSecret+"-rotated")
			if fn.SignsTokens() {
				sm.Put(replay.SigningARN, replay.SigningSecret+"-rotated")
			}
			clock.Add(secrets.DefaultRefreshInterval)
			ev, err := replay.LoadEvent(filepath.Join(eventsDir, mine[0]))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := app.Lambda()(context.Background(), ev); err != nil {
				t.Fatal(err)
			}
			usedIndex = b.calls.merge(actions) || usedIndex

			statement := tpl.policyStatement(t, logicalID(fn), "Table")
			if got, want := strs(statement["Action"]), sortedKeys(actions); !slices.Equal(got, want) {
				t.Errorf("DynamoDB actions:\n policy %v\n code   %v", got, want)
			}
			var hasTable, hasIndex bool
			for _, r := range list(statement["Resource"]) {
				switch {
				case path(r, "Fn::GetAtt") == "Table.Arn":
					hasTable = true
				case path(r, "Fn::Sub") == "${Table.Arn}/index/*":
					hasIndex = true
				default:
					t.Errorf("Table statement names another resource: %v", r)
				}
			}
			if !hasTable || hasIndex != usedIndex {
				t.Errorf("Table statement resources: table %v, index %v; the code used the index: %v", hasTable, hasIndex, usedIndex)
			}

			var readIDs []string
			for arn := range read {
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
			if n := len(tpl.functionPolicies(t, logicalID(fn))); n != 1 {
				t.Errorf("%d policies; want one inline policy and nothing broader", n)
			}
		})
	}
}

// logicalFromARN maps the fixture's ARNs (…:secret:<LogicalId>-AbCdEf) to
// the template's logical ids.
func logicalFromARN(arn string) string {
	_, name, _ := strings.Cut(arn, ":secret:")
	return strings.TrimSuffix(name, "-AbCdEf")
}

// TestTemplate_CfnLint runs AWS's linter, which applies the real SAM
// transform offline. Warnings fail the test as errors do. Without cfn-lint
// it skips, as plain `go test ./...` does for every test that needs a tool;
// make test runs cfn-lint through lint-template, which fails if it is
// missing.
func TestTemplate_CfnLint(t *testing.T) {
	bin, err := exec.LookPath("cfn-lint")
	if err != nil {
		t.Skip("cfn-lint is not on PATH; install it with: pip install cfn-lint (make test requires it)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--", filepath.Base(templatePath))
	cmd.Dir = filepath.Dir(templatePath)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		t.Fatalf("cfn-lint template.yaml (exit %d):\n%s", exit.ExitCode(), out)
	case err != nil:
		t.Fatal(err)
	}
}

type fakeClock struct{ t time.Time }

func (c *fakeClock) Now() time.Time      { return c.t }
func (c *fakeClock) Add(d time.Duration) { c.t = c.t.Add(d) }

// TestFunctions_RouteParity sends every route of the API, without a
// credential, to each function's Lambda handler (the value passed to
// lambda.Start) as an API Gateway HTTP API event. The function's own routes
// must answer 401 (the JWKS, which is public, 200) and every other group's
// route 404: each function serves its group, all of it and nothing else,
// whatever the template routes to it.
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
			for _, r := range httpapi.Routes() {
				key := r.Method + " " + r.Path
				wantStatus, wantCode := http.StatusNotFound, "not_found"
				switch {
				case r.Group != fn.Group():
				case key == "GET /v1/auth/jwks":
					wantStatus, wantCode = http.StatusOK, ""
				default:
					wantStatus, wantCode = http.StatusUnauthorized, "unauthorized"
				}
				res, err := handler(context.Background(), routeEvent(r))
				if err != nil {
					t.Errorf("%s: handler error: %v", key, err)
					continue
				}
				// The JWKS has no code member, so it decodes to "".
				var problem struct {
					Code string `json:"code"`
				}
				if err := json.Unmarshal(responseBody(t, res), &problem); err != nil {
					t.Errorf("%s: body is not JSON: %v", key, err)
				}
				if res.StatusCode != wantStatus || problem.Code != wantCode {
					t.Errorf("%s (group %s): got %d %q, want %d %q", key, r.Group, res.StatusCode, problem.Code, wantStatus, wantCode)
				}
			}
		})
	}
}

// routeEvent is the event API Gateway would send for r with no credential:
// path parameters filled with fixture ids, a JSON body for the methods that
// take one.
func routeEvent(r httpapi.Route) events.APIGatewayV2HTTPRequest {
	params := map[string]string{}
	rawPath := r.Path
	for name, id := range map[string]string{"{id}": pathID(r.Path), "{user_id}": replay.OtherUser} {
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
	switch r.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch:
		ev.Headers["content-type"] = "application/json"
		ev.Body = "{}"
	}
	return ev
}

// pathID is a fixture id of the kind the path's {id} names.
func pathID(p string) string {
	switch {
	case strings.HasPrefix(p, "/v1/api-keys/"):
		return replay.OtherKeyID
	case strings.HasPrefix(p, "/v1/organizations/"):
		return replay.OrgID
	default:
		return replay.UserID
	}
}

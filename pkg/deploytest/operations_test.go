package deploytest_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"latchkey/pkg/httpapi"
	"latchkey/pkg/lambdaapp"
	"latchkey/pkg/lambdaapp/publisherapp"
	"latchkey/pkg/tablestore"
)

// The operational facts of issue 13, checked against template.yaml.

// hotRoutes are the routes with throttling limits of their own, by kind:
// verify and token issuance, in both their forms, the paths every resource
// server and client calls, must not share a limit with the admin routes,
// which share the default. A kind's routes take their limits from the
// parameters <kind>ThrottlingRateLimit and <kind>ThrottlingBurstLimit
// (each route is a bucket of its own all the same).
var hotRoutes = map[string]string{
	"GET /v1/auth/verify":     "Verify",
	"POST /oauth2/introspect": "Verify",
	"POST /v1/auth/token":     "Token",
	"POST /oauth2/token":      "Token",
}

// parameter returns the template's parameter, failing if it is missing.
func (t template) parameter(tb testing.TB, name string) map[string]any {
	tb.Helper()
	p, ok := path(map[string]any(t), "Parameters", name).(map[string]any)
	if !ok {
		tb.Fatalf("template.yaml has no parameter %s", name)
	}
	return p
}

// functions returns the logical ids of every function of the template, the
// authorizer included, sorted.
func (t template) functions() []string {
	var out []string
	for id, r := range t["Resources"].(map[string]any) {
		if path(r, "Type") == "AWS::Serverless::Function" {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// functionEvents returns every HttpApi event of every function by route
// key ("METHOD /path").
func (t template) functionEvents(tb testing.TB) map[string]map[string]any {
	tb.Helper()
	out := map[string]map[string]any{}
	for _, fn := range lambdaapp.Functions() {
		for _, ev := range t.resource(tb, logicalID(fn), "AWS::Serverless::Function")["Events"].(map[string]any) {
			props, _ := path(ev, "Properties").(map[string]any)
			out[fmt.Sprintf("%v %v", props["Method"], props["Path"])] = props
		}
	}
	return out
}

// followsDetailedMetrics reports whether v is
// !If [DetailedMetricsEnabled, true, false].
func followsDetailedMetrics(v any) bool {
	args := list(path(v, "Fn::If"))
	return len(args) == 3 && args[0] == "DetailedMetricsEnabled" && args[1] == "true" && args[2] == "false"
}

// TestTemplate_Throttling: the default route settings (every admin route)
// and each hot route have throttling from parameters of their own, none
// shared; no other route has settings of its own; detailed route metrics
// are on (by a parameter that defaults to true) for all of them.
func TestTemplate_Throttling(t *testing.T) {
	tpl := loadTemplate(t)
	api := tpl.resource(t, "HttpApi", "AWS::Serverless::HttpApi")
	def := path(api, "DefaultRouteSettings")
	used := map[string]string{} // parameter -> what it limits
	claim := func(param, what string) {
		t.Helper()
		if other, ok := used[param]; ok && other != what {
			t.Errorf("%s limits both %s and %s", param, other, what)
		}
		used[param] = what
		p := tpl.parameter(t, param)
		if p["Type"] != "Number" || p["Default"] == nil {
			t.Errorf("parameter %s: type %v, default %v; want a Number with a default", param, p["Type"], p["Default"])
		}
	}
	for _, k := range []string{"ThrottlingRateLimit", "ThrottlingBurstLimit"} {
		param := refOf(path(def, k))
		if param == "" {
			t.Fatalf("DefaultRouteSettings.%s is %v, want !Ref of a parameter", k, path(def, k))
		}
		claim(param, "the default routes")
	}
	if !followsDetailedMetrics(path(def, "DetailedMetricsEnabled")) {
		t.Errorf("DefaultRouteSettings.DetailedMetricsEnabled is %v, want !If [DetailedMetricsEnabled, true, false]", path(def, "DetailedMetricsEnabled"))
	}
	if got := tpl.parameter(t, "DetailedMetricsEnabled")["Default"]; got != "true" {
		t.Errorf("DetailedMetricsEnabled defaults to %v, want true", got)
	}
	if path(api, "RouteSettings") != nil {
		t.Error("HttpApi has RouteSettings; a route's own settings belong on its event, next to the route")
	}

	events := tpl.functionEvents(t)
	routes := map[string]bool{}
	for _, r := range httpapi.Routes() {
		routes[r.Method+" "+r.Path] = true
	}
	for key, kind := range hotRoutes {
		params := [2]string{kind + "ThrottlingRateLimit", kind + "ThrottlingBurstLimit"}
		if !routes[key] {
			t.Errorf("hot route %s is not a route of the API", key)
			continue
		}
		settings := path(events[key], "RouteSettings")
		for i, k := range []string{"ThrottlingRateLimit", "ThrottlingBurstLimit"} {
			if got := refOf(path(settings, k)); got != params[i] {
				t.Errorf("%s RouteSettings.%s: got !Ref %q, want !Ref %s", key, k, got, params[i])
				continue
			}
			claim(params[i], kind+" routes")
		}
		// A route's settings replace the defaults as a whole.
		if !followsDetailedMetrics(path(settings, "DetailedMetricsEnabled")) {
			t.Errorf("%s RouteSettings.DetailedMetricsEnabled is %v, want !If [DetailedMetricsEnabled, true, false]", key, path(settings, "DetailedMetricsEnabled"))
		}
	}
	var writes int
	for key, props := range events {
		if _, hot := hotRoutes[key]; hot {
			continue
		}
		if props["RouteSettings"] != nil {
			t.Errorf("%s has route settings of its own; only %v do", key, slices.Sorted(maps.Keys(hotRoutes)))
		}
		if !strings.HasPrefix(key, http.MethodGet) {
			writes++
		}
	}
	if writes == 0 {
		t.Error("no admin write route found on the default settings")
	}
}

// alarm is one AWS::CloudWatch::Alarm of the template, reduced to what the
// checks compare: the metrics it watches (namespace/name and dimensions,
// "Name=Value" with Refs as !Ref X) and its threshold parameter.
type alarm struct {
	id        string
	props     map[string]any
	metrics   []string // "AWS/Lambda Errors FunctionName=!Ref AuthFunction"
	threshold string   // the parameter
}

func dimension(d any) string {
	v := path(d, "Value")
	if r := refOf(v); r != "" {
		v = "!Ref " + r
	} else if _, ok := v.(map[string]any); ok {
		b, _ := json.Marshal(v)
		v = string(b)
	}
	return fmt.Sprintf("%v=%v", path(d, "Name"), v)
}

func metricKey(m any) string {
	var dims []string
	for _, d := range list(path(m, "Dimensions")) {
		dims = append(dims, dimension(d))
	}
	slices.Sort(dims)
	return strings.TrimSpace(fmt.Sprintf("%v %v %s", path(m, "Namespace"), path(m, "MetricName"), strings.Join(dims, " ")))
}

func (t template) alarms(tb testing.TB) []alarm {
	tb.Helper()
	var out []alarm
	for id, r := range t["Resources"].(map[string]any) {
		if path(r, "Type") != "AWS::CloudWatch::Alarm" {
			continue
		}
		props := path(r, "Properties").(map[string]any)
		a := alarm{id: id, props: props, threshold: refOf(props["Threshold"])}
		if props["MetricName"] != nil {
			a.metrics = []string{metricKey(props)}
		}
		for _, m := range list(props["Metrics"]) {
			if ms := path(m, "MetricStat", "Metric"); ms != nil {
				a.metrics = append(a.metrics, metricKey(ms))
			}
		}
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b alarm) int { return strings.Compare(a.id, b.id) })
	return out
}

// findAlarm returns the alarm that watches exactly the metrics given (in
// any order), failing unless there is one.
func findAlarm(tb testing.TB, alarms []alarm, what string, metrics ...string) alarm {
	tb.Helper()
	slices.Sort(metrics)
	var found []alarm
	for _, a := range alarms {
		if got := slices.Sorted(slices.Values(a.metrics)); slices.Equal(got, metrics) {
			found = append(found, a)
		}
	}
	if len(found) != 1 {
		tb.Errorf("%s: %d alarms watch exactly %q, want 1", what, len(found), metrics)
		return alarm{}
	}
	return found[0]
}

// tableDim is the table's dimension, as the template names the table
// wherever a metric needs it.
const tableDim = `TableName={"Fn::If":["CreateTable",{"Ref":"Table"},{"Ref":"ExistingTableName"}]}`

// systemErrorOperations are the DynamoDB operations the system errors
// alarm sums. TestTemplate_LeastPrivilege fails if a function calls one
// that is not here.
var systemErrorOperations = []string{"BatchGetItem", "GetItem", "PutItem", "Query", "TransactWriteItems", "UpdateItem"}

// TestTemplate_Alarms: the alarms the issues name exist, watch what they
// say, take their thresholds from parameters with defaults, treat missing
// data as no breach, and notify the alarm topic, both ways.
func TestTemplate_Alarms(t *testing.T) {
	tpl := loadTemplate(t)
	alarms := tpl.alarms(t)
	var want []alarm
	for _, fn := range tpl.functions() {
		for _, m := range []string{"Errors", "Throttles"} {
			want = append(want, findAlarm(t, alarms, fn+" "+m, fmt.Sprintf("AWS/Lambda %s FunctionName=!Ref %s", m, fn)))
		}
	}
	api := "ApiId=!Ref HttpApi Stage=$default"
	rate := findAlarm(t, alarms, "API 5xx rate", "AWS/ApiGateway 5xx "+api, "AWS/ApiGateway Count "+api)
	if expr := returned(t, rate); !strings.Contains(expr, "100 * FILL(errors, 0) / FILL(requests, 0)") {
		t.Errorf("%s: expression %q is not a percentage of requests", rate.id, expr)
	}
	latency := findAlarm(t, alarms, "API p99 latency", "AWS/ApiGateway Latency "+api)
	if latency.props["ExtendedStatistic"] != "p99" {
		t.Errorf("%s: statistic %v, want p99", latency.id, latency.props["ExtendedStatistic"])
	}
	want = append(want, rate, latency)
	for _, index := range append([]string{""}, gsiNames()...) {
		dims, what := tableDim, "table"
		if index != "" {
			dims, what = "GlobalSecondaryIndexName="+index+" "+tableDim, "index "+index
		}
		want = append(want, findAlarm(t, alarms, "DynamoDB throttles on the "+what,
			"AWS/DynamoDB ReadThrottleEvents "+dims, "AWS/DynamoDB WriteThrottleEvents "+dims))
	}
	var sysErrs []string
	for _, op := range systemErrorOperations {
		sysErrs = append(sysErrs, "AWS/DynamoDB SystemErrors Operation="+op+" "+tableDim)
	}
	want = append(want, findAlarm(t, alarms, "DynamoDB system errors", sysErrs...))
	// The publisher's: how far EventBridge lags behind the table, what it
	// gave up on, and what it skipped (TestTemplate_Publisher checks the
	// metric filter behind the last).
	want = append(want,
		findAlarm(t, alarms, "publisher iterator age", "AWS/Lambda IteratorAge FunctionName=!Ref "+publisherID),
		findAlarm(t, alarms, "publisher dead-letter queue", `AWS/SQS ApproximateNumberOfMessagesVisible QueueName={"Fn::GetAtt":"PublisherDeadLetterQueue.QueueName"}`),
		findAlarm(t, alarms, "publisher skipped events", "map[Fn::Sub:Latchkey/${AWS::StackName}] SkippedEvents"),
		// Issue 34: the events EventBridge refused, before the retries
		// run out (TestTemplate_PublisherFailedEntries).
		findAlarm(t, alarms, "publisher failed entries", "map[Fn::Sub:Latchkey/${AWS::StackName}] PublishFailedEntries"))
	// Issue 22: API Gateway's own throttling, the account's concurrency,
	// each gradually deployed function's alias (errors and latency, which
	// roll a deployment back: TestTemplate_GradualDeployment), and every
	// function's longest invocation against its timeout.
	want = append(want,
		findAlarm(t, alarms, "API Gateway throttling", "map[Fn::Sub:Latchkey/${AWS::StackName}] ApiThrottled"),
		findAlarm(t, alarms, "account concurrency", "AWS/Lambda ConcurrentExecutions"))
	for _, fn := range []string{logicalID(lambdaapp.Auth), authorizerID} {
		alias := fmt.Sprintf(`FunctionName=!Ref %s Resource={"Fn::Sub":"${%s}:live"}`, fn, fn)
		want = append(want, findAlarm(t, alarms, fn+" alias errors", "AWS/Lambda Errors "+alias))
		latency := findAlarm(t, alarms, fn+" alias latency", "AWS/Lambda Duration "+alias)
		if latency.props["ExtendedStatistic"] != "p99" {
			t.Errorf("%s: statistic %v, want p99", latency.id, latency.props["ExtendedStatistic"])
		}
		want = append(want, latency)
	}
	// Issue 32: the verify URL's alias errors (it deploys gradually too)
	// and its 5xx, and the canary's alarms of each new version's answers
	// (TestTemplate_CanaryAlarms).
	verifyAlias := fmt.Sprintf(`FunctionName=!Ref %s Resource={"Fn::Sub":"${%s}:live"}`, verifyID, verifyID)
	want = append(want, findAlarm(t, alarms, "verify alias errors", "AWS/Lambda Errors "+verifyAlias),
		findAlarm(t, alarms, "verify URL 5xx", "AWS/Lambda Url5xxCount FunctionName=!Ref "+verifyID, "AWS/Lambda UrlRequestCount FunctionName=!Ref "+verifyID))
	for _, c := range canaryAlarms {
		for _, a := range alarms {
			if a.id == c.id {
				want = append(want, a)
			}
		}
	}
	for _, fn := range tpl.functions() {
		a := findAlarm(t, alarms, fn+" near its timeout", "AWS/Lambda Duration FunctionName=!Ref "+fn)
		if a.id == "" {
			continue
		}
		timeout := path(tpl.resource(t, fn, "AWS::Serverless::Function"), "Timeout")
		if timeout == nil {
			timeout = path(map[string]any(tpl), "Globals", "Function", "Timeout")
		}
		secs, _ := strconv.Atoi(fmt.Sprint(timeout))
		if expr, want := returned(t, a), fmt.Sprintf("/ %d", secs*1000); !strings.HasPrefix(expr, "100 * ") || !strings.HasSuffix(expr, want) {
			t.Errorf("%s: expression %q, want 100 * the longest duration %s (the function's timeout, %v s, in ms)", a.id, expr, want, timeout)
		}
		if a.threshold != "AlarmDurationPercentOfTimeout" {
			t.Errorf("%s: threshold %s, want AlarmDurationPercentOfTimeout", a.id, a.threshold)
		}
		want = append(want, a)
	}
	// Issue 34: the probe's paths that failed or were slow, and its runs
	// (TestTemplate_Probe).
	want = append(want,
		findAlarm(t, alarms, "probe problems", "map[Fn::Sub:Latchkey/${AWS::StackName}] ProbeProblems"),
		findAlarm(t, alarms, "probe runs", "map[Fn::Sub:Latchkey/${AWS::StackName}] ProbeRuns"))
	if t.Failed() {
		return
	}
	if len(alarms) != len(want) {
		t.Errorf("%d alarms, want the %d the issues name", len(alarms), len(want))
	}
	checkThrottledFilter(t, tpl)
	for _, a := range want {
		if a.threshold == "" {
			t.Errorf("%s: Threshold %v, want !Ref of a parameter", a.id, a.props["Threshold"])
		} else if p := tpl.parameter(t, a.threshold); p["Type"] != "Number" || p["Default"] == nil {
			t.Errorf("%s: threshold parameter %s has type %v, default %v", a.id, a.threshold, p["Type"], p["Default"])
		}
		if a.id == "ProbeMissingAlarm" {
			// No data is the probe not running: TestTemplate_Probe.
		} else if a.props["TreatMissingData"] != "notBreaching" {
			t.Errorf("%s: TreatMissingData %v, want notBreaching (no traffic is no error)", a.id, a.props["TreatMissingData"])
		}
		for _, k := range []string{"AlarmActions", "OKActions"} {
			if !notifiesTopic(a.props[k]) {
				t.Errorf("%s: %s is %v, want [!If [AlarmTopicSet, !Ref AlarmTopicArn, !Ref AlarmTopic]]", a.id, k, a.props[k])
			}
		}
		if a.props["Metrics"] != nil {
			returned(t, a)
		}
	}
}

// returned returns the expression of a metric math alarm's one returned
// series, failing unless it uses every other series, each through FILL (a
// series without a point in a period would otherwise blank the sum).
func returned(t *testing.T, a alarm) string {
	t.Helper()
	var expr string
	var ids []string
	for _, m := range list(a.props["Metrics"]) {
		if path(m, "ReturnData") == "true" {
			if expr != "" {
				t.Errorf("%s returns more than one series", a.id)
			}
			expr, _ = path(m, "Expression").(string)
		} else {
			ids = append(ids, fmt.Sprint(path(m, "Id")))
		}
	}
	for _, id := range ids {
		if !regexp.MustCompile(`FILL\(` + id + `, 0\)`).MatchString(expr) {
			t.Errorf("%s: expression %q does not use FILL(%s, 0)", a.id, expr, id)
		}
	}
	return expr
}

func gsiNames() []string {
	var out []string
	for _, g := range tablestore.TableDefinition("x").GlobalSecondaryIndexes {
		out = append(out, aws.ToString(g.IndexName))
	}
	return out
}

// TestTemplate_LogGroups: the access log group is under /aws/vendedlogs/,
// kept when the stack is deleted, for a retention of its own, as the
// verify URL's (its audit trail) is; each other
// function's log group has the stack's retention and is deleted with the
// stack; the access log line is JSON and carries what joins it to the
// function's log lines.
func TestTemplate_LogGroups(t *testing.T) {
	tpl := loadTemplate(t)
	api := tpl.resource(t, "HttpApi", "AWS::Serverless::HttpApi")
	access := strings.TrimSuffix(fmt.Sprint(path(api, "AccessLogSettings", "DestinationArn", "Fn::GetAtt")), ".Arn")
	groups := map[string]string{access: "the access log"}
	for _, fn := range tpl.functions() {
		groups[refOf(path(tpl.resource(t, fn, "AWS::Serverless::Function"), "LoggingConfig", "LogGroup"))] = fn
	}
	var all []string
	for id, r := range tpl["Resources"].(map[string]any) {
		if path(r, "Type") == "AWS::Logs::LogGroup" {
			all = append(all, id)
		}
	}
	if got, want := slices.Sorted(slices.Values(all)), slices.Sorted(maps.Keys(groups)); !slices.Equal(got, want) {
		t.Errorf("log groups %v, want one for the access log and one per function: %v", got, want)
	}
	for id, what := range groups {
		props := tpl.resource(t, id, "AWS::Logs::LogGroup")
		name, _ := path(props, "LogGroupName", "Fn::Sub").(string)
		if args := list(path(props, "LogGroupName", "Fn::Sub")); len(args) == 2 {
			name, _ = args[0].(string)
		}
		if !strings.Contains(name, "${AWS::StackName}") {
			t.Errorf("%s (%s): name %v does not hold the stack name", id, what, props["LogGroupName"])
		}
		r := tpl["Resources"].(map[string]any)[id]
		retention, policy := "LogRetentionDays", "Delete"
		if id == "VerifyLogGroup" {
			// Issue 34: the verify URL's request lines are its audit
			// trail, kept as the access log is.
			retention, policy = "AccessLogRetentionDays", "Retain"
			if !strings.HasSuffix(name, "-${StackUuid}") {
				t.Errorf("%s: name %q, want it ending with the stack's id", id, name)
			}
		}
		if id == access {
			// The audit trail outlives the stack, under a name of this
			// stack's own (its id), so that a stack created again under
			// the same name does not collide with the group kept.
			retention, policy = "AccessLogRetentionDays", "Retain"
			if !strings.HasPrefix(name, "/aws/vendedlogs/") || !strings.HasSuffix(name, "-${StackUuid}") {
				t.Errorf("%s: name %q, want it under /aws/vendedlogs/ and ending with the stack's id", id, name)
			}
			if got := fmt.Sprint(path(list(path(props, "LogGroupName", "Fn::Sub"))[1], "StackUuid")); got != "map[Fn::Select:[2 map[Fn::Split:[/ map[Ref:AWS::StackId]]]]]" {
				t.Errorf("%s: StackUuid is %s, want the stack id's last part", id, got)
			}
			if p := tpl.parameter(t, retention); p["Default"] != "365" {
				t.Errorf("%s defaults to %v days, want 365", retention, p["Default"])
			}
		}
		if refOf(props["RetentionInDays"]) != retention {
			t.Errorf("%s: RetentionInDays %v, want !Ref %s", id, props["RetentionInDays"], retention)
		}
		if path(r, "DeletionPolicy") != policy || path(r, "UpdateReplacePolicy") != policy {
			t.Errorf("%s: DeletionPolicy %v, UpdateReplacePolicy %v; want %s for both", id, path(r, "DeletionPolicy"), path(r, "UpdateReplacePolicy"), policy)
		}
	}

	format, _ := path(api, "AccessLogSettings", "Format").(string)
	vars := regexp.MustCompile(`\$context\.[A-Za-z.]+`).FindAllString(format, -1)
	for _, need := range []string{"$context.requestId", "$context.integration.requestId", "$context.error.message", "$context.status", "$context.routeKey"} {
		if !slices.Contains(vars, need) {
			t.Errorf("access log format has no %s", need)
		}
	}
	// Each variable inside a JSON string, so that any value gives JSON.
	var line map[string]string
	if err := json.Unmarshal([]byte(regexp.MustCompile(`\$context\.[A-Za-z.]+`).ReplaceAllString(format, "v")), &line); err != nil {
		t.Errorf("access log format is not a JSON object of strings: %v\n%s", err, format)
	}
}

// TestTemplate_Retention: what `sam delete` keeps. The table is retained
// (deleting or replacing the stack keeps it) and can be attached to a new
// stack by ExistingTableName, in which case the template creates no table
// and refers to none; the secrets are deleted with the stack.
func TestTemplate_Retention(t *testing.T) {
	tpl := loadTemplate(t)
	res := tpl["Resources"].(map[string]any)
	table := res["Table"]
	if path(table, "DeletionPolicy") != "Retain" || path(table, "UpdateReplacePolicy") != "Retain" {
		t.Errorf("Table: DeletionPolicy %v, UpdateReplacePolicy %v; want Retain for both", path(table, "DeletionPolicy"), path(table, "UpdateReplacePolicy"))
	}
	if path(table, "Condition") != "CreateTable" {
		t.Errorf("Table: Condition %v, want CreateTable", path(table, "Condition"))
	}
	if got := fmt.Sprint(path(map[string]any(tpl), "Conditions", "CreateTable")); got != "map[Fn::Equals:[map[Ref:ExistingTableName] ]]" {
		t.Errorf("condition CreateTable is %s, want !Equals [!Ref ExistingTableName, \"\"]", got)
	}
	if got := tpl.parameter(t, "ExistingTableName")["Default"]; got != "" {
		t.Errorf("ExistingTableName defaults to %q, want empty (create the table)", got)
	}
	for id, r := range res {
		if path(r, "Type") == "AWS::SecretsManager::Secret" && (path(r, "DeletionPolicy") != "Delete" || path(r, "UpdateReplacePolicy") != "Delete") {
			t.Errorf("%s: DeletionPolicy %v, UpdateReplacePolicy %v; want Delete for both", id, path(r, "DeletionPolicy"), path(r, "UpdateReplacePolicy"))
		}
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			resolved := tpl.under(v.conds)
			b, _ := json.Marshal(resolved["Resources"])
			out, _ := json.Marshal(resolved["Outputs"])
			doc := string(b) + string(out)
			mentionsTable := strings.Contains(doc, `{"Ref":"Table"}`) || strings.Contains(doc, `"Table.Arn"`) || strings.Contains(doc, "${Table.Arn}")
			mentionsExisting := strings.Contains(doc, `{"Ref":"ExistingTableName"}`) || strings.Contains(doc, "${ExistingTableName}")
			if v.conds["CreateTable"] && mentionsExisting || !v.conds["CreateTable"] && mentionsTable {
				t.Errorf("CreateTable %v: the template refers to the table resource: %v, to ExistingTableName: %v", v.conds["CreateTable"], mentionsTable, mentionsExisting)
			}
			for _, fn := range tpl.functions() {
				want := "Table"
				if !v.conds["CreateTable"] {
					want = "ExistingTableName"
				}
				if got := refOf(resolved.functionEnv(t, fn)[lambdaapp.EnvTableName]); got != want {
					t.Errorf("%s: %s is !Ref %q, want !Ref %s", fn, lambdaapp.EnvTableName, got, want)
				}
			}
		})
	}
}

// TestTemplate_EndpointVariables: the template declares, empty, exactly
// the endpoint variables the code honours, for every function, so that
// `sam local start-api --env-vars` can set them (it sets declared ones
// only) while AWS leaves them unset in effect.
func TestTemplate_EndpointVariables(t *testing.T) {
	tpl := loadTemplate(t)
	for _, fn := range tpl.functions() {
		env := tpl.functionEnv(t, fn)
		var endpoints []string
		for k, v := range env {
			if strings.HasPrefix(k, "AWS_ENDPOINT_URL") {
				endpoints = append(endpoints, k)
				if v != "" {
					t.Errorf("%s: %s is %v, want empty", fn, k, v)
				}
			}
		}
		// Every function has the two of the Globals (the publisher reads
		// neither, but SAM has no way to leave a global out); the
		// publisher has EventBridge's too.
		want := []string{lambdaapp.EnvDynamoDBEndpoint, lambdaapp.EnvSecretsManagerEndpoint}
		if fn == publisherID {
			want = append(want, publisherapp.EnvEventBridgeEndpoint)
		}
		if got := slices.Sorted(slices.Values(endpoints)); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
			t.Errorf("%s declares endpoint variables %v, want %v", fn, got, want)
		}
	}
}

// TestTemplate_Tracing: X-Ray is a parameter, off by default; the functions
// follow it, and each role may write traces only when it is on.
func TestTemplate_Tracing(t *testing.T) {
	tpl := loadTemplate(t)
	if p := tpl.parameter(t, "TracingEnabled"); p["Default"] != "false" {
		t.Errorf("TracingEnabled defaults to %v, want false", p["Default"])
	}
	mode := path(map[string]any(tpl), "Globals", "Function", "Tracing")
	if args := list(path(mode, "Fn::If")); len(args) != 3 || args[0] != "TracingEnabled" || args[1] != "Active" || args[2] != "PassThrough" {
		t.Errorf("Globals Function Tracing is %v, want !If [TracingEnabled, Active, PassThrough]", mode)
	}
	for _, on := range []bool{false, true} {
		resolved := tpl.under(map[string]bool{"TracingEnabled": on, "CreateTable": true})
		for _, fn := range tpl.functions() {
			var granted bool
			for _, st := range resolved.statements(t, fn) {
				for _, a := range strs(st["Action"]) {
					if strings.HasPrefix(a, "xray:") {
						granted = true
					}
				}
			}
			if granted != on {
				t.Errorf("TracingEnabled %v: %s's role grants X-Ray actions: %v", on, fn, granted)
			}
		}
	}
}

// TestTemplate_ReservedConcurrency: the auth function may have reserved
// concurrency, from a parameter whose default (0) reserves none; the
// verify function has it always, from a parameter whose default (100) is
// the HTTP API's verify throttle at Lambda's 10 requests a second per
// execution environment: a function URL has no throttle but this.
// No other function has any.
func TestTemplate_ReservedConcurrency(t *testing.T) {
	tpl := loadTemplate(t)
	if p := tpl.parameter(t, "AuthReservedConcurrency"); p["Default"] != "0" || p["Type"] != "Number" {
		t.Errorf("AuthReservedConcurrency: type %v, default %v; want a Number defaulting to 0", p["Type"], p["Default"])
	}
	if got := fmt.Sprint(path(map[string]any(tpl), "Conditions", "ReserveAuthConcurrency")); got != "map[Fn::Not:[map[Fn::Equals:[map[Ref:AuthReservedConcurrency] 0]]]]" {
		t.Errorf("condition ReserveAuthConcurrency is %s, want !Not [!Equals [!Ref AuthReservedConcurrency, \"0\"]]", got)
	}
	p := tpl.parameter(t, "VerifyReservedConcurrency")
	if rate := tpl.parameterValue(t, "VerifyThrottlingRateLimit", nil); p["Type"] != "Number" || p["Default"] != "100" || fmt.Sprint(p["MinValue"]) != "1" || rate != "1000" {
		t.Errorf("VerifyReservedConcurrency: type %v, default %v, min %v; want a Number defaulting to 100 (VerifyThrottlingRateLimit %s / 10), at least 1", p["Type"], p["Default"], p["MinValue"], rate)
	}
	for _, fn := range tpl.functions() {
		v := tpl.resource(t, fn, "AWS::Serverless::Function")["ReservedConcurrentExecutions"]
		if fn == verifyID {
			if refOf(v) != "VerifyReservedConcurrency" {
				t.Errorf("%s ReservedConcurrentExecutions is %v, want !Ref VerifyReservedConcurrency", fn, v)
			}
			continue
		}
		if fn != logicalID(lambdaapp.Auth) {
			if v != nil {
				t.Errorf("%s has reserved concurrency %v", fn, v)
			}
			continue
		}
		if args := list(path(v, "Fn::If")); len(args) != 3 || args[0] != "ReserveAuthConcurrency" || refOf(args[1]) != "AuthReservedConcurrency" || !isNoValue(args[2]) {
			t.Errorf("auth ReservedConcurrentExecutions is %v, want !If [ReserveAuthConcurrency, !Ref AuthReservedConcurrency, !Ref AWS::NoValue]", v)
		}
	}
}

// TestTemplate_CorsExposeHeaders: a browser may read every response header
// the API sends that is not CORS-safelisted, and send every request header
// it takes.
func TestTemplate_CorsExposeHeaders(t *testing.T) {
	tpl := loadTemplate(t)
	args := list(path(tpl.resource(t, "HttpApi", "AWS::Serverless::HttpApi"), "CorsConfiguration", "Fn::If"))
	if len(args) != 3 || args[0] != "CorsEnabled" {
		t.Fatalf("CorsConfiguration is not !If [CorsEnabled, ...]")
	}
	exposed := strs(path(args[1], "ExposeHeaders"))
	for _, h := range []string{"Location", "Retry-After", "X-Request-Id", "WWW-Authenticate", "Allow", "Idempotent-Replayed", "RateLimit", "RateLimit-Policy"} {
		if !slices.Contains(exposed, h) {
			t.Errorf("ExposeHeaders %v lacks %s", exposed, h)
		}
	}
	// And every request header a browser client sends that is not
	// safelisted: a retried write carries Idempotency-Key.
	allowed := strs(path(args[1], "AllowHeaders"))
	for _, h := range []string{"Authorization", "Content-Type", "Idempotency-Key"} {
		if !slices.Contains(allowed, h) {
			t.Errorf("AllowHeaders %v lacks %s", allowed, h)
		}
	}
}

// notifiesTopic reports whether actions is the one alarm topic: the one
// AlarmTopicArn names, else the stack's own.
func notifiesTopic(actions any) bool {
	l := list(actions)
	if len(l) != 1 {
		return false
	}
	args := list(path(l[0], "Fn::If"))
	return len(args) == 3 && args[0] == "AlarmTopicSet" && refOf(args[1]) == "AlarmTopicArn" && refOf(args[2]) == "AlarmTopic"
}

// checkThrottledFilter: the throttling alarm's metric counts the access
// log lines of API Gateway's own 429s, those with no integration (no
// function ran), and no other line: the filter is run, as CloudWatch Logs
// would, over lines made from the access log format.
func checkThrottledFilter(t *testing.T, tpl template) {
	t.Helper()
	var filter map[string]any
	for _, r := range tpl["Resources"].(map[string]any) {
		if path(r, "Type") == "AWS::Logs::MetricFilter" && path(r, "Properties", "MetricTransformations") != nil &&
			path(list(path(r, "Properties", "MetricTransformations"))[0], "MetricName") == "ApiThrottled" {
			filter = path(r, "Properties").(map[string]any)
		}
	}
	if filter == nil {
		t.Fatal("no metric filter makes ApiThrottled")
	}
	if got := refOf(filter["LogGroupName"]); got != "AccessLogGroup" {
		t.Errorf("ApiThrottled counts lines of %q, want the access log (AccessLogGroup)", got)
	}
	pattern := fmt.Sprint(filter["FilterPattern"])
	// The pattern's terms: { $.a = "x" && $.b = "y" }, equality only.
	terms := regexp.MustCompile(`\$\.([A-Za-z]+) = "([^"]*)"`).FindAllStringSubmatch(pattern, -1)
	if len(terms) == 0 || strings.Contains(pattern, "||") {
		t.Fatalf("ApiThrottled pattern %q: want equality terms joined by &&", pattern)
	}
	format, _ := path(tpl.resource(t, "HttpApi", "AWS::Serverless::HttpApi"), "AccessLogSettings", "Format").(string)
	line := func(vars map[string]string) map[string]string {
		// Each $context variable as API Gateway fills it: "-" when it has
		// no value (no integration ran).
		b := regexp.MustCompile(`\$context\.[A-Za-z.]+`).ReplaceAllStringFunc(format, func(v string) string {
			if x, ok := vars[v]; ok {
				return x
			}
			return "-"
		})
		var m map[string]string
		if err := json.Unmarshal([]byte(b), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	matches := func(m map[string]string) bool {
		for _, term := range terms {
			if m[term[1]] != term[2] {
				return false
			}
		}
		return true
	}
	throttled := line(map[string]string{"$context.status": "429", "$context.error.message": "Too Many Requests", "$context.routeKey": "GET /v1/auth/verify"})
	ownLimit := line(map[string]string{"$context.status": "429", "$context.integration.requestId": "8476a536-e9f4-11e8-9739-000000000001", "$context.integration.integrationStatus": "200", "$context.routeKey": "POST /v1/auth/token"})
	clientError := line(map[string]string{"$context.status": "400", "$context.integration.requestId": "8476a536-e9f4-11e8-9739-000000000002", "$context.integration.integrationStatus": "200"})
	notFound := line(map[string]string{"$context.status": "404", "$context.error.message": "Not Found"})
	if !matches(throttled) {
		t.Errorf("ApiThrottled pattern %q misses API Gateway's 429: %v", pattern, throttled)
	}
	for what, m := range map[string]map[string]string{"a function's own 429": ownLimit, "a client's 400": clientError, "API Gateway's 404": notFound} {
		if matches(m) {
			t.Errorf("ApiThrottled pattern %q counts %s: %v", pattern, what, m)
		}
	}
}

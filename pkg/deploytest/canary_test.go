package deploytest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	cdtypes "github.com/aws/aws-sdk-go-v2/service/codedeploy/types"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"latchkey/pkg/account"
	"latchkey/pkg/canary"
	"latchkey/pkg/httpapi/httpapitest"
	"latchkey/pkg/lambdaapp"
	"latchkey/pkg/lambdaapp/authevents"
	"latchkey/pkg/lambdaapp/canaryapp"
	"latchkey/pkg/lambdaapp/lambdaenv"
	"latchkey/pkg/lambdaapp/replay"
)

// canaryAlarms are the alarms of each new version's own answers: the share
// of errors among answers, counted by the metric filters on the
// function's log group from the lines of that version.
var canaryAlarms = []struct {
	id       string
	function string // the function's logical id
	logName  string // its "function" in log lines
	errors   string
	answers  string
}{
	{"AuthVersionServerErrorsAlarm", "AuthFunction", "auth", "ServerErrors", "Answers"},
	{"AuthVersionVerificationErrorsAlarm", "AuthFunction", "auth", "VerificationErrors", "Verifications"},
	{"AuthorizerVersionServerErrorsAlarm", authorizerID, "authorizer", "ServerErrors", "Answers"},
	{"VerifyVersionServerErrorsAlarm", verifyID, "verify", "ServerErrors", "Answers"},
	{"OrganizationsVersionServerErrorsAlarm", "OrganizationsFunction", "organizations", "ServerErrors", "Answers"},
	{"UsersVersionServerErrorsAlarm", "UsersFunction", "users", "ServerErrors", "Answers"},
}

// TestTemplate_CanaryAlarms: each canary alarm watches, over one minute,
// the percentage of errors among the answers of its function's newest
// version (ExecutedVersion is the version this deploy published), as the
// metric filters on that function's log group count them, at
// AlarmCanaryErrorPercentThreshold.
func TestTemplate_CanaryAlarms(t *testing.T) {
	tpl := loadTemplate(t)
	for _, a := range canaryAlarms {
		props := tpl.resource(t, a.id, "AWS::CloudWatch::Alarm")
		if refOf(props["Threshold"]) != "AlarmCanaryErrorPercentThreshold" || props["EvaluationPeriods"] != "1" || props["TreatMissingData"] != "notBreaching" {
			t.Errorf("%s: threshold %v, %v evaluation periods, missing data %v; want AlarmCanaryErrorPercentThreshold, 1, notBreaching", a.id, props["Threshold"], props["EvaluationPeriods"], props["TreatMissingData"])
		}
		byID := map[string]any{}
		for _, m := range list(props["Metrics"]) {
			byID[fmt.Sprint(path(m, "Id"))] = m
		}
		if e := path(byID["percent"], "Expression"); e != "IF(FILL(answers, 0) > 0, 100 * FILL(errors, 0) / FILL(answers, 0), 0)" {
			t.Errorf("%s: expression %v", a.id, e)
		}
		for id, name := range map[string]string{"errors": a.errors, "answers": a.answers} {
			stat := path(byID[id], "MetricStat")
			m := path(stat, "Metric")
			dims := map[string]string{}
			for _, d := range list(path(m, "Dimensions")) {
				v := path(d, "Value")
				if g, ok := path(v, "Fn::GetAtt").(string); ok {
					v = "GetAtt " + g
				}
				dims[fmt.Sprint(path(d, "Name"))] = fmt.Sprint(v)
			}
			want := map[string]string{"Function": a.logName, "ExecutedVersion": "GetAtt " + a.function + ".Version.Version"}
			if path(m, "MetricName") != name || path(m, "Namespace", "Fn::Sub") != "Latchkey/${AWS::StackName}" || fmt.Sprint(dims) != fmt.Sprint(want) ||
				path(stat, "Period") != "60" || path(stat, "Stat") != "Sum" {
				t.Errorf("%s %s: %v, want the 1-minute sum of Latchkey/${AWS::StackName} %s %v", a.id, id, stat, name, want)
			}
			if len(metricFilters(t, tpl, a.function, name)) == 0 {
				t.Errorf("%s: no metric filter on %s's log group counts %s", a.id, a.function, name)
			}
		}
	}
}

// TestTemplate_CanaryHook: the hook is named as CodeDeploy's role requires
// (CodeDeployHook_*), checks the versions this deploy published, and may
// invoke those versions, report to CodeDeploy, read the probe key (its
// IAM policy, the secret's resource policy and the KMS key's policy; not
// the admin or signing key), and nothing else.
func TestTemplate_CanaryHook(t *testing.T) {
	tpl := loadTemplate(t)
	props := tpl.resource(t, "CanaryHookFunction", "AWS::Serverless::Function")
	if name := fmt.Sprint(path(props, "FunctionName", "Fn::Sub")); !strings.HasPrefix(strings.TrimPrefix(name, "["), "CodeDeployHook_") {
		t.Errorf("FunctionName %v, want CodeDeployHook_…", props["FunctionName"])
	}
	env := tpl.functionEnv(t, "CanaryHookFunction")
	for k, want := range map[string]string{"AUTH_VERSION_ARN": "AuthFunction.Version", "AUTHORIZER_VERSION_ARN": authorizerID + ".Version", canaryapp.EnvKeySecretARN: "ProbeKeySecret",
		"ORGANIZATIONS_VERSION_ARN": "OrganizationsFunction.Version", "USERS_VERSION_ARN": "UsersFunction.Version"} {
		if refOf(env[k]) != want {
			t.Errorf("%s = %v, want !Ref %s", k, env[k], want)
		}
	}
	if b, _ := json.Marshal(env["VERIFY_VERSION_ARN"]); string(b) != `{"Fn::If":["ServeVerifyUrl",{"Ref":"VerifyFunction.Version"},""]}` {
		t.Errorf("VERIFY_VERSION_ARN = %s", b)
	}
	actions := roleActions(t, tpl, "CanaryHookRole", "CanaryHookInvokePolicy", "CanaryHookSecretsPolicy")
	want := map[string][]string{
		"lambda:InvokeFunction":                           {`{"Ref":"AuthFunction.Version"}`, `{"Ref":"AuthorizerFunction.Version"}`, `{"Fn::If":["ServeVerifyUrl",{"Ref":"VerifyFunction.Version"},{"Ref":"AWS::NoValue"}]}`, `{"Ref":"OrganizationsFunction.Version"}`, `{"Ref":"UsersFunction.Version"}`},
		"codedeploy:PutLifecycleEventHookExecutionStatus": {`{"Fn::Sub":"arn:${AWS::Partition}:codedeploy:${AWS::Region}:${AWS::AccountId}:deploymentgroup:${ServerlessDeploymentApplication}/*"}`},
		"secretsmanager:GetSecretValue":                   {`{"Ref":"ProbeKeySecret"}`},
		"logs:CreateLogStream":                            {`{"Fn::GetAtt":"CanaryHookLogGroup.Arn"}`},
		"logs:PutLogEvents":                               {`{"Fn::GetAtt":"CanaryHookLogGroup.Arn"}`},
	}
	if fmt.Sprint(actions) != fmt.Sprint(want) {
		t.Errorf("the hook may\n%v\nwant\n%v", actions, want)
	}

	// The probe key's resource policy lets the hook read it; the admin and
	// signing keys' do not; the KMS key lets it decrypt, through Secrets
	// Manager.
	checkReadsProbeKeyOnly(t, tpl, "CanaryHookRole")
}

// roleActions returns what role may do, by action, with the resources
// (as JSON), from its own policies and the role policies named; X-Ray's
// aside (TracingEnabled).
func roleActions(tb testing.TB, tpl template, role string, policies ...string) map[string][]string {
	tb.Helper()
	actions := map[string][]string{}
	add := func(doc any) {
		for _, st := range list(path(doc, "Statement")) {
			if path(st, "Effect") != "Allow" {
				continue
			}
			var res []string
			for _, r := range list(path(st, "Resource")) {
				b, _ := json.Marshal(r)
				res = append(res, string(b))
			}
			if r, ok := path(st, "Resource").(map[string]any); ok {
				b, _ := json.Marshal(r)
				res = append(res, string(b))
			}
			for _, a := range strs(path(st, "Action")) {
				if !strings.HasPrefix(a, "xray:") {
					actions[a] = append(actions[a], res...)
				}
			}
		}
	}
	for _, p := range list(tpl.resource(tb, role, "AWS::IAM::Role")["Policies"]) {
		add(path(p, "PolicyDocument"))
	}
	for _, id := range policies {
		add(tpl.resource(tb, id, "AWS::IAM::RolePolicy")["PolicyDocument"])
	}
	return actions
}

// checkReadsProbeKeyOnly: of the secrets under AuthSecretsKey, role may
// read the probe key alone, by the resource policies (the probe key's,
// beside auth's role; neither the admin key's nor the signing key's); the
// KMS key lets it decrypt, through Secrets Manager, and nothing else.
func checkReadsProbeKeyOnly(t *testing.T, tpl template, role string) {
	t.Helper()
	for secret, want := range map[string]bool{"ProbeKeySecret": true, "AdminApiKeySecret": false, "SigningKeySecret": false} {
		if got := !deniedBy(t, secretPolicy(t, tpl, secret), "role:"+role, "secretsmanager:GetSecretValue"); got != want {
			t.Errorf("%s: %s may read it: %v, want %v", secret, role, got, want)
		}
	}
	if deniedBy(t, secretPolicy(t, tpl, "ProbeKeySecret"), authPrincipal, "secretsmanager:GetSecretValue") {
		t.Errorf("ProbeKeySecret: auth's role may not read it, and so makes no probe key")
	}
	var decrypts []string
	for _, st := range list(path(tpl.resource(t, "AuthSecretsKey", "AWS::KMS::Key"), "KeyPolicy", "Statement")) {
		b, _ := json.Marshal(path(st, "Principal"))
		if strings.Contains(string(b), `"`+role+`.Arn"`) {
			decrypts = append(decrypts, strings.Join(strs(path(st, "Action")), " "))
			if path(st, "Condition", "StringEquals", "kms:ViaService") == nil {
				t.Errorf("AuthSecretsKey lets %s decrypt outside Secrets Manager: %v", role, st)
			}
		}
	}
	if !slices.Equal(decrypts, []string{"kms:Decrypt"}) {
		t.Errorf("AuthSecretsKey lets %s %v, want kms:Decrypt alone", role, decrypts)
	}
}

// metricFilters returns the filters on fn's log group that publish metric.
func metricFilters(tb testing.TB, tpl template, fn, metric string) []metricFilter {
	tb.Helper()
	group := strings.TrimSuffix(fn, "Function") + "LogGroup"
	var out []metricFilter
	for id, r := range tpl["Resources"].(map[string]any) {
		if path(r, "Type") != "AWS::Logs::MetricFilter" || refOf(path(r, "Properties", "LogGroupName")) != group {
			continue
		}
		for _, m := range list(path(r, "Properties", "MetricTransformations")) {
			if path(m, "MetricName") != metric {
				continue
			}
			f := metricFilter{id: id, pattern: fmt.Sprint(path(r, "Properties", "FilterPattern")), value: fmt.Sprint(path(m, "MetricValue")), dims: map[string]string{}}
			for _, d := range list(path(m, "Dimensions")) {
				f.dims[fmt.Sprint(path(d, "Key"))] = fmt.Sprint(path(d, "Value"))
			}
			out = append(out, f)
		}
	}
	return out
}

// metricFilter is a CloudWatch Logs metric filter of the template.
type metricFilter struct {
	id, pattern, value string
	dims               map[string]string
}

// apply returns the value the filter publishes for line, with the value of
// its dimensions, or ok false when the line does not match. It evaluates
// the part of CloudWatch's JSON filter syntax the template uses: terms
// joined by &&, a parenthesized || of terms, $.field = "string",
// $.field >= number (and the other comparisons), $.field NOT EXISTS; a
// comparison with a field the line lacks is false.
func (f metricFilter) apply(tb testing.TB, line map[string]any) (value float64, dims string, ok bool) {
	tb.Helper()
	body := strings.TrimSpace(f.pattern)
	if !strings.HasPrefix(body, "{") || !strings.HasSuffix(body, "}") {
		tb.Fatalf("%s: pattern %q is not a JSON filter", f.id, f.pattern)
	}
	for _, term := range splitTop(body[1:len(body)-1], "&&") {
		term = strings.TrimSpace(term)
		if strings.HasPrefix(term, "(") {
			any := false
			for _, alt := range splitTop(strings.TrimSuffix(strings.TrimPrefix(term, "("), ")"), "||") {
				any = any || compare(tb, f.id, strings.TrimSpace(alt), line)
			}
			if !any {
				return 0, "", false
			}
		} else if !compare(tb, f.id, term, line) {
			return 0, "", false
		}
	}
	value = 1
	if strings.HasPrefix(f.value, "$.") {
		v, isNum := line[strings.TrimPrefix(f.value, "$.")].(float64)
		if !isNum {
			return 0, "", false // CloudWatch publishes nothing without a number
		}
		value = v
	} else if v, err := strconv.ParseFloat(f.value, 64); err == nil {
		value = v
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(f.dims)) {
		parts = append(parts, fmt.Sprintf("%s=%v", k, line[strings.TrimPrefix(f.dims[k], "$.")]))
	}
	return value, strings.Join(parts, " "), true
}

// splitTop splits s at sep outside quotes and parentheses.
func splitTop(s, sep string) []string {
	var out []string
	depth, quoted, start := 0, false, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			quoted = !quoted
		case quoted:
		case c == '(':
			depth++
		case c == ')':
			depth--
		case depth == 0 && strings.HasPrefix(s[i:], sep):
			out = append(out, s[start:i])
			start = i + len(sep)
			i += len(sep) - 1
		}
	}
	return append(out, s[start:])
}

var termRE = regexp.MustCompile(`^\$\.([A-Za-z_]+)\s*(NOT EXISTS|=|!=|>=|<=|>|<)\s*(.*)$`)

func compare(tb testing.TB, id, term string, line map[string]any) bool {
	tb.Helper()
	m := termRE.FindStringSubmatch(term)
	if m == nil {
		tb.Fatalf("%s: term %q is not one this evaluator knows", id, term)
	}
	v, present := line[m[1]]
	if m[2] == "NOT EXISTS" {
		return !present
	}
	if !present {
		return false
	}
	if q, err := strconv.Unquote(m[3]); err == nil {
		s, _ := v.(string)
		switch m[2] {
		case "=":
			return s == q
		case "!=":
			return s != q
		}
		tb.Fatalf("%s: %q compares a string with %s", id, term, m[2])
	}
	want, err := strconv.ParseFloat(m[3], 64)
	if err != nil {
		tb.Fatalf("%s: %q: value %q", id, term, m[3])
	}
	got, ok := v.(float64)
	if !ok {
		return false
	}
	switch m[2] {
	case "=":
		return got == want
	case "!=":
		return got != want
	case ">=":
		return got >= want
	case "<=":
		return got <= want
	case ">":
		return got > want
	}
	return got < want
}

// firing returns the canary alarms of fn that the log lines logs would
// fire, each with its percentage: the metric filters applied to every
// line, summed by dimensions (one minute's worth), the alarm's expression
// over the sums of version, at the parameter's default threshold.
func firing(t *testing.T, tpl template, fn, version, logs string) map[string]float64 {
	t.Helper()
	threshold, err := strconv.ParseFloat(fmt.Sprint(tpl.parameter(t, "AlarmCanaryErrorPercentThreshold")["Default"]), 64)
	if err != nil {
		t.Fatal(err)
	}
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(logs), "\n") {
		if l == "" {
			continue // no line at all: no data
		}
		var line map[string]any
		if err := json.Unmarshal([]byte(l), &line); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		lines = append(lines, line)
	}
	out := map[string]float64{}
	for _, a := range canaryAlarms {
		if a.function != fn {
			continue
		}
		want := fmt.Sprintf("ExecutedVersion=%s Function=%s", version, a.logName)
		sum := func(metric string) (float64, bool) {
			total, seen := 0.0, false
			for _, f := range metricFilters(t, tpl, fn, metric) {
				for _, line := range lines {
					if v, dims, ok := f.apply(t, line); ok && dims == want {
						total, seen = total+v, true
					}
				}
			}
			return total, seen
		}
		errs, _ := sum(a.errors)
		answers, ok := sum(a.answers)
		if !ok {
			continue // no data: not breaching
		}
		if p := 100 * errs / answers; p > threshold {
			out[a.id] = p
		}
	}
	return out
}

// canaryBuild is one build of the three functions the hook checks, over
// one store, each logging as in Lambda (version 42) into its own buffer.
type canaryBuild struct {
	targets                                   canary.Targets
	auth, verify, authzLog, orgsLog, usersLog *httpapitest.SyncBuffer
}

const canaryVersion = "42"

// newCanaryBuild builds the real handlers over store b; wrap, when set,
// changes the store the functions see (a stand-in of a bad build).
func newCanaryBuild(t *testing.T, b backend, wrap func(account.Store) account.Store) canaryBuild {
	t.Helper()
	t.Setenv(lambdaenv.EnvFunctionVersion, canaryVersion)
	ctx := context.Background()
	store := b.store
	if wrap != nil {
		store = wrap(store)
	}
	cb := canaryBuild{auth: &httpapitest.SyncBuffer{}, verify: &httpapitest.SyncBuffer{}, authzLog: &httpapitest.SyncBuffer{}, orgsLog: &httpapitest.SyncBuffer{}, usersLog: &httpapitest.SyncBuffer{}}
	lists := map[lambdaapp.Function]canary.HTTPFunction{}
	for fn, buf := range map[lambdaapp.Function]*httpapitest.SyncBuffer{lambdaapp.Organizations: cb.orgsLog, lambdaapp.Users: cb.usersLog} {
		app, err := lambdaapp.New(ctx, replay.Config(fn, "latchkey"), lambdaapp.Deps{
			Store: store, Keys: b.keys, Secrets: replay.NewSecrets(), Logger: lambdaenv.NewLogger(buf, string(fn)),
		})
		if err != nil {
			t.Fatal(err)
		}
		lists[fn] = canary.HTTPFunction(app.Lambda())
	}
	auth, err := lambdaapp.New(ctx, replay.Config(lambdaapp.Auth, "latchkey"), lambdaapp.Deps{
		Store: store, Keys: b.keys, Secrets: replay.NewSecrets(), Logger: lambdaenv.NewLogger(cb.auth, "auth"),
	})
	if err != nil {
		t.Fatal(err)
	}
	verify, err := lambdaapp.NewVerifying(ctx, replay.Config(lambdaapp.Verify, "latchkey"),
		lambdaapp.Deps{Store: store, Keys: b.keys, Logger: lambdaenv.NewLogger(cb.verify, "verify")})
	if err != nil {
		t.Fatal(err)
	}
	authz := newAuthorizer(t, backend{store: store, keys: b.keys}, `{"*": {"audience": "https://orders.example.com"}}`, lambdaenv.NewLogger(cb.authzLog, "authorizer"))
	cb.targets = canary.Targets{Auth: canary.HTTPFunction(auth.Lambda()), Verify: canary.HTTPFunction(verify.Lambda()), Authorizer: canary.AuthorizerFunction(authz),
		Organizations: lists[lambdaapp.Organizations], Users: lists[lambdaapp.Users]}
	return cb
}

// forgetsRevocations is a build that answers a revocation as done and
// writes nothing.
type forgetsRevocations struct{ account.Store }

func (s forgetsRevocations) RevokeToken(_ context.Context, _ account.WriteOptions, r account.Revocation) (time.Time, error) {
	return r.RevokedAt, nil
}

// storeDown is a build whose every read of a credential fails as an
// unreachable table does: an API key's (issuance, revocation,
// introspection) and a token's status (verification).
// It goes down once the functions have started (down), as a start that
// fails is a Lambda error, which the alias's alarms see already.
type storeDown struct {
	account.Store
	down *atomic.Bool
}

var errStoreDown = &account.Error{Code: account.CodeUnavailable, Message: "the store is unavailable"}

func (s storeDown) GetAPIKeyByHash(ctx context.Context, hash []byte) (account.APIKey, error) {
	if s.down.Load() {
		return account.APIKey{}, errStoreDown
	}
	return s.Store.GetAPIKeyByHash(ctx, hash)
}

func (s storeDown) ListOrganizations(ctx context.Context, p account.ListParams) (account.Page[account.Organization], error) {
	if s.down.Load() {
		return account.Page[account.Organization]{}, errStoreDown
	}
	return s.Store.ListOrganizations(ctx, p)
}

func (s storeDown) TokenStatus(ctx context.Context, tokenID, keyID string, ancestors []string, orgID string, inline bool) (account.TokenStatus, error) {
	if s.down.Load() {
		return account.TokenStatus{}, errStoreDown
	}
	return s.Store.TokenStatus(ctx, tokenID, keyID, ancestors, orgID, inline)
}

// TestCanary runs the hook's check (canary.Check) against the real
// handlers of auth, verify and the authorizer, in process, over one store
// (DynamoDB Local in make test): a good build passes it; each stand-in of
// a bad build fails it at the step that sees it. Then the same build
// serves a minute of traffic (the check, and verifies of a valid token)
// and the template's metric filters and alarms are run over what it
// logged: which of the canary's alarms fire for it.
func TestCanary(t *testing.T) {
	tpl := loadTemplate(t)
	verifyEvent, err := replay.LoadEvent(filepath.Join(eventsDir, "auth-verify.json"))
	if err != nil {
		t.Fatal(err)
	}
	urlEvent, err := replay.LoadEvent(filepath.Join(verifyURLEventsDir, "valid.json"))
	if err != nil {
		t.Fatal(err)
	}
	authzEvent, err := replay.LoadAuthorizerEvent(filepath.Join(authorizerEventsDir, "valid.json"))
	if err != nil {
		t.Fatal(err)
	}
	var down atomic.Bool
	for _, c := range []struct {
		name string
		wrap func(account.Store) account.Store
		// build wraps the good build's targets, for a bad build no store
		// makes.
		build func(canary.Targets) canary.Targets
		// step is the step the check fails at; "" passes.
		step string
		// alarms are those of the new versions that fire.
		alarms []string
	}{
		{name: "good"},
		{name: "every token invalid", build: func(g canary.Targets) canary.Targets {
			bad := func(next canary.HTTPFunction) canary.HTTPFunction {
				return func(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
					if req.RawPath == "/v1/auth/verify" {
						return events.APIGatewayV2HTTPResponse{StatusCode: http.StatusOK, Body: `{"valid":false,"reason":"invalid"}`}, nil
					}
					return next(ctx, req)
				}
			}
			g.Auth, g.Verify = bad(g.Auth), bad(g.Verify)
			return g
		}, step: "verify before revocation"},
		{name: "revocation ignored", wrap: func(s account.Store) account.Store { return forgetsRevocations{s} }, step: "verify after revocation"},
		// A users version that lets the probe key list what its grant does
		// not cover.
		{name: "scope ignored", build: func(g canary.Targets) canary.Targets {
			g.Users = func(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
				return events.APIGatewayV2HTTPResponse{StatusCode: http.StatusOK, Body: `{"data":[],"next_cursor":null}`}, nil
			}
			return g
		}, step: "list users"},
		{name: "503 to everything", wrap: func(s account.Store) account.Store { return storeDown{s, &down} }, step: "list organizations",
			alarms: []string{"AuthVersionServerErrorsAlarm", "AuthVersionVerificationErrorsAlarm", "AuthorizerVersionServerErrorsAlarm", "OrganizationsVersionServerErrorsAlarm", "VerifyVersionServerErrorsAlarm"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			b := newBackend(t)
			cb := newCanaryBuild(t, b, c.wrap)
			targets := cb.targets
			if c.build != nil {
				targets = c.build(targets)
			}
			for _, buf := range []*httpapitest.SyncBuffer{cb.auth, cb.verify, cb.authzLog, cb.orgsLog, cb.usersLog} {
				buf.Reset()
			}
			down.Store(c.wrap != nil && c.step == "list organizations")
			defer down.Store(false)
			start := time.Now()
			err := canary.Check(ctx, targets, replay.ProbeSecret)
			took := time.Since(start)
			var f *canary.Failure
			switch {
			case c.step == "" && err != nil:
				t.Fatalf("the good build fails the check: %v", err)
			case c.step != "" && (!errors.As(err, &f) || f.Step != c.step):
				t.Fatalf("check: %v; want a failure at %q", err, c.step)
			}
			if strings.Contains(fmt.Sprint(err), replay.ProbeSecret) || strings.Contains(cb.auth.String(), replay.ProbeSecret) {
				t.Errorf("the key is in the error or the logs")
			}
			// A minute of traffic beside the check: ten requests of a
			// valid token to each function. A decision that fails is the
			// authorizer's error (API Gateway answers 500).
			for range 10 {
				if _, err := targets.Auth(ctx, verifyEvent); err != nil {
					t.Fatal(err)
				}
				if _, err := targets.Verify(ctx, urlEvent); err != nil {
					t.Fatal(err)
				}
				targets.Authorizer(ctx, authzEvent)
			}
			got := map[string]float64{}
			for fn, logs := range map[string]string{"AuthFunction": cb.auth.String(), verifyID: cb.verify.String(), authorizerID: cb.authzLog.String(),
				"OrganizationsFunction": cb.orgsLog.String(), "UsersFunction": cb.usersLog.String()} {
				maps.Copy(got, firing(t, tpl, fn, canaryVersion, logs))
				// None for the version before: the lines are the new one's.
				if old := firing(t, tpl, fn, "41", logs); len(old) != 0 {
					t.Errorf("alarms of version 41 firing: %v", old)
				}
			}
			if !slices.Equal(slices.Sorted(maps.Keys(got)), c.alarms) {
				t.Errorf("alarms firing %v, want %v", got, c.alarms)
			}
			t.Logf("check %v in %v; alarms firing (percent) %v", err, took.Round(time.Millisecond), got)
		})
	}
}

// lambdaFake invokes the handlers of a build as Lambda does: the payload
// decoded into the function's event, its answer encoded, and a handler's
// error as Lambda's function error.
type lambdaFake struct {
	t        *testing.T
	handlers map[string]func(ctx context.Context, payload []byte) (any, error)
	invoked  []string
}

func (f *lambdaFake) Invoke(ctx context.Context, in *lambda.InvokeInput, _ ...func(*lambda.Options)) (*lambda.InvokeOutput, error) {
	name := aws.ToString(in.FunctionName)
	f.invoked = append(f.invoked, name)
	h, ok := f.handlers[name]
	if !ok {
		return nil, fmt.Errorf("ResourceNotFoundException: %s", name)
	}
	res, err := h(ctx, in.Payload)
	if err != nil {
		b, _ := json.Marshal(map[string]string{"errorMessage": err.Error(), "errorType": "errorString"})
		return &lambda.InvokeOutput{StatusCode: 200, FunctionError: aws.String("Unhandled"), Payload: b}, nil
	}
	b, err := json.Marshal(res)
	if err != nil {
		f.t.Fatal(err)
	}
	return &lambda.InvokeOutput{StatusCode: 200, Payload: b}, nil
}

// TestCanaryHook_Lambda runs the hook's check as the hook does, through
// lambda:InvokeFunction on the versions' ARNs (a stand-in of Lambda that
// calls the real handlers, auth's through its one entry point for every
// event), and reads its outcome: Succeeded for a good build, Failed for a
// build whose store is down, with one log line that names the step and
// holds neither the key nor a token.
func TestCanaryHook_Lambda(t *testing.T) {
	const (
		authARN   = "arn:aws:lambda:us-east-1:123456789012:function:auth:7"
		verifyARN = "arn:aws:lambda:us-east-1:123456789012:function:verify:3"
		authzARN  = "arn:aws:lambda:us-east-1:123456789012:function:authorizer:5"
	)
	var down atomic.Bool
	for _, c := range []struct {
		name string
		down bool
		want cdtypes.LifecycleEventStatus
		line string
	}{
		{"good", false, cdtypes.LifecycleEventStatusSucceeded, "canary check passed"},
		{"store down", true, cdtypes.LifecycleEventStatusFailed, "canary check failed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			b := newBackend(t)
			t.Setenv(lambdaenv.EnvFunctionVersion, canaryVersion)
			store := storeDown{b.store, &down}
			fake, targets := lambdaTargets(t, store, b.keys, authARN, verifyARN, authzARN)
			down.Store(c.down)
			defer down.Store(false)
			var logs httpapitest.SyncBuffer
			got := canaryapp.Run(ctx, targets, func(context.Context) (string, error) { return replay.ProbeSecret, nil }, lambdaenv.NewLogger(&logs, canaryapp.Name))
			if got != c.want {
				t.Fatalf("outcome %s, want %s; logs:\n%s", got, c.want, logs.String())
			}
			// The logger's start line (the release), then the check's one.
			lines := logs.Lines()
			var start, line struct{ Msg, Error string }
			if len(lines) != 2 || json.Unmarshal([]byte(lines[0]), &start) != nil || start.Msg != "start" ||
				json.Unmarshal([]byte(lines[1]), &line) != nil || line.Msg != c.line {
				t.Fatalf("logs %q, want the start line and one line %q", lines, c.line)
			}
			if c.down && !strings.Contains(line.Error, "issue a token (auth): 503 unavailable") {
				t.Errorf("error %q, want the step, the function and the answer", line.Error)
			}
			if strings.Contains(logs.String(), replay.ProbeSecret) || strings.Contains(logs.String(), "eyJ") {
				t.Errorf("the key or a token is in the hook's log: %s", logs.String())
			}
			// Only the versions, each once at least; never an alias.
			for _, arn := range fake.invoked {
				if arn != authARN && arn != verifyARN && arn != authzARN {
					t.Errorf("invoked %s", arn)
				}
			}
			if !c.down && len(slices.Compact(slices.Sorted(slices.Values(fake.invoked)))) != 3 {
				t.Errorf("invoked %v, want each of the three versions", fake.invoked)
			}
		})
	}
}

// lambdaTargets builds the real handlers of auth, verify and the
// authorizer over store and returns a stand-in of Lambda that calls them
// by the ARNs given, auth's through its one entry point for every event,
// with the targets that invoke them through it.
func lambdaTargets(t *testing.T, store account.Store, keys lambdaapp.PublicKeyStore, authARN, verifyARN, authzARN string) (*lambdaFake, canary.Targets) {
	t.Helper()
	ctx := context.Background()
	auth, err := lambdaapp.New(ctx, replay.Config(lambdaapp.Auth, "latchkey"), lambdaapp.Deps{
		Store: store, Keys: keys, Secrets: replay.NewSecrets(), Logger: discard,
	})
	if err != nil {
		t.Fatal(err)
	}
	verify, err := lambdaapp.NewVerifying(ctx, replay.Config(lambdaapp.Verify, "latchkey"), lambdaapp.Deps{Store: store, Keys: keys, Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	authz := newAuthorizer(t, backend{store: store, keys: keys}, `{"*": {"audience": "https://orders.example.com"}}`, discard)
	authEntry := authevents.Handler(auth, auth.Lambda())
	fake := &lambdaFake{t: t, handlers: map[string]func(context.Context, []byte) (any, error){
		authARN: func(ctx context.Context, p []byte) (any, error) { return authEntry(ctx, p) },
		verifyARN: func(ctx context.Context, p []byte) (any, error) {
			var ev events.APIGatewayV2HTTPRequest
			if err := json.Unmarshal(p, &ev); err != nil {
				return nil, err
			}
			return verify.Lambda()(ctx, ev)
		},
		authzARN: func(ctx context.Context, p []byte) (any, error) {
			var ev events.APIGatewayV2CustomAuthorizerV2Request
			if err := json.Unmarshal(p, &ev); err != nil {
				return nil, err
			}
			return authz(ctx, ev)
		},
	}}
	targets := canary.Targets{
		Auth:       canaryapp.HTTPVersion(fake, authARN),
		Verify:     canaryapp.HTTPVersion(fake, verifyARN),
		Authorizer: canaryapp.AuthorizerVersion(fake, authzARN),
	}
	return fake, targets
}

package deploytest_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"latchkey/pkg/account"
	"latchkey/pkg/canary"
	"latchkey/pkg/httpapi/httpapitest"
	"latchkey/pkg/lambdaapp/lambdaenv"
	"latchkey/pkg/lambdaapp/probeapp"
	"latchkey/pkg/lambdaapp/replay"
)

// probeLine is one line of the probe's log.
type probeLine struct {
	Msg     string   `json:"msg"`
	Path    string   `json:"path"`
	Outcome string   `json:"outcome"`
	SeenMS  *float64 `json:"seen_ms"`
	Error   string   `json:"error"`
}

// stale answers every request under prefix with the first answer it got
// there: a build that caches its answers and never sees a revocation.
func stale(next canary.HTTPFunction, prefix string) canary.HTTPFunction {
	var once sync.Once
	var first events.APIGatewayV2HTTPResponse
	var firstErr error
	return func(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		if !strings.HasPrefix(req.RawPath, prefix) {
			return next(ctx, req)
		}
		once.Do(func() { first, firstErr = next(ctx, req) })
		return first, firstErr
	}
}

// lateAuthorizer answers with its first decision until d after its
// second request, then as next: an authorizer that caches its decisions
// for d (the probe asks it once before the revocation).
func lateAuthorizer(next canary.AuthorizerFunction, d time.Duration) canary.AuthorizerFunction {
	var first events.APIGatewayV2CustomAuthorizerSimpleResponse
	var calls int
	var second time.Time
	return func(ctx context.Context, req events.APIGatewayV2CustomAuthorizerV2Request) (events.APIGatewayV2CustomAuthorizerSimpleResponse, error) {
		calls++
		switch {
		case calls == 1:
			res, err := next(ctx, req)
			first = res
			return res, err
		case calls == 2:
			second = time.Now()
			return first, nil
		case time.Since(second) < d:
			return first, nil
		}
		return next(ctx, req)
	}
}

// withoutStatusClaim is a build whose tokens carry no status claim, as
// when the status-lists format is not in force: the probe is handed each
// token with the claim taken out of its payload, and each function gets
// the token as issued back (its signature covers the claim).
func withoutStatusClaim(t *testing.T, g canary.Targets) canary.Targets {
	var mu sync.Mutex
	issued := map[string]string{} // stripped: as issued
	restore := func(s string) string {
		mu.Lock()
		defer mu.Unlock()
		for stripped, orig := range issued {
			s = strings.ReplaceAll(s, stripped, orig)
			s = strings.ReplaceAll(s, url.QueryEscape(stripped), url.QueryEscape(orig))
		}
		return s
	}
	wrap := func(next canary.HTTPFunction) canary.HTTPFunction {
		return func(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
			req.Headers = maps.Clone(req.Headers)
			req.Headers["authorization"] = restore(req.Headers["authorization"])
			req.Body = restore(req.Body)
			res, err := next(ctx, req)
			if err != nil || req.RawPath != "/v1/auth/token" {
				return res, err
			}
			var body map[string]any
			if err := json.Unmarshal([]byte(res.Body), &body); err != nil {
				t.Fatal(err)
			}
			orig, _ := body["access_token"].(string)
			parts := strings.Split(orig, ".")
			payload, err := base64.RawURLEncoding.DecodeString(parts[1])
			if err != nil {
				t.Fatal(err)
			}
			var claims map[string]any
			if err := json.Unmarshal(payload, &claims); err != nil {
				t.Fatal(err)
			}
			if claims["status"] == nil {
				t.Fatal("the build's token has no status claim to take out")
			}
			delete(claims, "status")
			payload, _ = json.Marshal(claims)
			parts[1] = base64.RawURLEncoding.EncodeToString(payload)
			stripped := strings.Join(parts, ".")
			mu.Lock()
			issued[stripped] = orig
			mu.Unlock()
			body["access_token"] = stripped
			b, _ := json.Marshal(body)
			res.Body = string(b)
			return res, nil
		}
	}
	authz := g.Authorizer
	g.Authorizer = func(ctx context.Context, req events.APIGatewayV2CustomAuthorizerV2Request) (events.APIGatewayV2CustomAuthorizerSimpleResponse, error) {
		req.Headers = maps.Clone(req.Headers)
		req.Headers["authorization"] = restore(req.Headers["authorization"])
		return authz(ctx, req)
	}
	g.Auth, g.Verify = wrap(g.Auth), wrap(g.Verify)
	return g
}

// TestProbe runs the probe (probeapp.Run, canary.Probe) against the real
// handlers of auth, verify and the authorizer, in process, over one store
// (DynamoDB Local in make test), and reads its log: a good build refuses
// the revoked token on every path and each path's line holds the time it
// took; a verify URL that keeps answering as before the revocation is the
// one path that failed, and the run is not ok. Neither the key nor a token
// is ever in the log.
func TestProbe(t *testing.T) {
	tpl := loadTemplate(t)
	for _, c := range []struct {
		name   string
		build  func(canary.Targets) canary.Targets
		failed string // the path that fails; "" none
		// slow is the path that refuses after its bound; "" none.
		slow string
		// noStatus: the status list is not applicable.
		noStatus bool
		// ownAudience: the token is for Latchkey's own API, which no
		// authorizer rule admits: the authorizer is not applicable.
		ownAudience bool
	}{
		{name: "good"},
		{name: "verify URL never sees the revocation", build: func(g canary.Targets) canary.Targets { g.Verify = stale(g.Verify, ""); return g }, failed: canary.PathVerifyURL},
		{name: "status list never shows the revocation", build: func(g canary.Targets) canary.Targets { g.Auth = stale(g.Auth, account.StatusListPath); return g }, failed: canary.PathStatusList},
		{name: "no status claim", noStatus: true},
		{name: "no authorizer rule admits the token", ownAudience: true},
		{name: "authorizer later than its bound", build: func(g canary.Targets) canary.Targets {
			g.Authorizer = lateAuthorizer(g.Authorizer, 300*time.Millisecond)
			return g
		}, slow: canary.PathAuthorizer},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.slow != "" {
				bound := canary.Bounds[c.slow]
				canary.Bounds[c.slow] = 100 * time.Millisecond
				defer func() { canary.Bounds[c.slow] = bound }()
			}
			b := newBackend(t)
			targets := newCanaryBuild(t, b, nil).targets
			if c.build != nil {
				targets = c.build(targets)
			}
			if c.noStatus {
				targets = withoutStatusClaim(t, targets)
			}
			if !c.ownAudience {
				// The build's authorizer rule: "*" for this audience.
				targets.Audience = "https://orders.example.com"
			}
			var logs httpapitest.SyncBuffer
			start := time.Now()
			ok := probeapp.Run(context.Background(), targets, func(context.Context) (string, error) { return replay.ProbeSecret, nil }, time.Second, lambdaenv.NewLogger(&logs, probeapp.Name))
			took := time.Since(start)
			if ok != (c.failed == "" && c.slow == "") {
				t.Errorf("ok %v, want %v; logs:\n%s", ok, !ok, logs.String())
			}
			if strings.Contains(logs.String(), replay.ProbeSecret) || strings.Contains(logs.String(), "eyJ") {
				t.Errorf("the key or a token is in the probe's log: %s", logs.String())
			}
			got := map[string]probeLine{}
			var done bool
			for _, l := range logs.Lines() {
				var line probeLine
				if err := json.Unmarshal([]byte(l), &line); err != nil {
					t.Fatalf("line %q: %v", l, err)
				}
				switch line.Msg {
				case "probe path":
					got[line.Path] = line
				case "probe done":
					done = true
				case "start":
				default:
					t.Errorf("line %q", l)
				}
			}
			if !done {
				t.Errorf("no probe done line")
			}
			for _, p := range []string{canary.PathVerify, canary.PathVerifyURL, canary.PathIntrospect, canary.PathAuthorizer, canary.PathStatusList} {
				line, seen := got[p]
				switch {
				case !seen:
					t.Errorf("%s: no line", p)
				case p == c.failed:
					if line.Outcome != canary.Failed || line.SeenMS != nil || !strings.Contains(line.Error, "after revocation") {
						t.Errorf("%s: %+v, want failed with the wrong answer", p, line)
					}
				case p == c.slow:
					if line.Outcome != canary.Slow || line.SeenMS == nil || *line.SeenMS < 300 {
						t.Errorf("%s: %+v, want slow, seen after 300 ms", p, line)
					}
				case p == canary.PathStatusList && c.noStatus, p == canary.PathAuthorizer && c.ownAudience:
					if line.Outcome != canary.NotApplicable || line.SeenMS != nil {
						t.Errorf("%s: %+v, want not applicable", p, line)
					}
				case line.Outcome != canary.Refused || line.SeenMS == nil || *line.SeenMS < 0 || *line.SeenMS > float64(canary.Bounds[p].Milliseconds()):
					t.Errorf("%s: %+v, want refused within %v", p, line, canary.Bounds[p])
				}
			}
			// What the template's metric filters make of the lines: one
			// problem per failed path (ProbeFailedAlarm fires at one), one
			// run, and the time of each path that refused.
			problems, runs, seen := probeMetrics(t, tpl, logs.Lines())
			wantProblems := 0.0
			if c.failed != "" || c.slow != "" {
				wantProblems = 1
			}
			if problems != wantProblems || runs != 1 {
				t.Errorf("ProbeProblems %v, ProbeRuns %v; want %v, 1", problems, runs, wantProblems)
			}
			for p, line := range got {
				if v, ok := seen[p]; ok != (line.SeenMS != nil) || (ok && v != *line.SeenMS) {
					t.Errorf("ProbeSeenMs of %s: %v (%v), want %v", p, v, ok, line.SeenMS)
				}
			}
			t.Logf("probe in %v; ProbeSeenMs %v", took.Round(time.Millisecond), seen)
		})
	}
}

// TestTemplate_Probe (issue 34): the probe runs every minute on the live
// aliases of auth, the authorizer and (with the URL) verify, with the
// probe key; it may invoke those aliases, read the probe key (its IAM
// policy, the secret's resource policy, the KMS key's; not the admin or
// signing key) and write its log,
// and nothing else; its alarms fire on a failed or slow path in a minute,
// and on five minutes without a finished run.
func TestTemplate_Probe(t *testing.T) {
	tpl := loadTemplate(t)
	props := tpl.resource(t, "ProbeFunction", "AWS::Serverless::Function")
	var schedules []string
	for _, ev := range path(props, "Events").(map[string]any) {
		if path(ev, "Type") == "Schedule" {
			schedules = append(schedules, fmt.Sprint(path(ev, "Properties", "Schedule")))
		}
	}
	if !slices.Equal(schedules, []string{"rate(1 minute)"}) {
		t.Errorf("schedules %v, want rate(1 minute)", schedules)
	}
	env := tpl.functionEnv(t, "ProbeFunction")
	for k, want := range map[string]string{probeapp.EnvAuthAliasARN: "AuthFunctionAliaslive", probeapp.EnvAuthorizerAliasARN: authorizerID + "Aliaslive", probeapp.EnvKeySecretARN: "ProbeKeySecret", probeapp.EnvAudience: "ProbeAudience"} {
		if refOf(env[k]) != want {
			t.Errorf("%s = %v, want !Ref %s", k, env[k], want)
		}
	}
	if b, _ := json.Marshal(env[probeapp.EnvVerifyAliasARN]); string(b) != `{"Fn::If":["ServeVerifyUrl",{"Ref":"VerifyFunctionAliaslive"},""]}` {
		t.Errorf("%s = %s", probeapp.EnvVerifyAliasARN, b)
	}
	want := map[string][]string{
		"lambda:InvokeFunction":         {`{"Ref":"AuthFunctionAliaslive"}`, `{"Ref":"AuthorizerFunctionAliaslive"}`, `{"Fn::If":["ServeVerifyUrl",{"Ref":"VerifyFunctionAliaslive"},{"Ref":"AWS::NoValue"}]}`},
		"secretsmanager:GetSecretValue": {`{"Ref":"ProbeKeySecret"}`},
		"logs:CreateLogStream":          {`{"Fn::GetAtt":"ProbeLogGroup.Arn"}`},
		"logs:PutLogEvents":             {`{"Fn::GetAtt":"ProbeLogGroup.Arn"}`},
	}
	if got := roleActions(t, tpl, "ProbeRole", "ProbeInvokePolicy", "ProbeSecretsPolicy"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the probe may\n%v\nwant\n%v", got, want)
	}
	checkReadsProbeKeyOnly(t, tpl, "ProbeRole")

	for id, want := range map[string]string{
		"ProbeFailedAlarm":  "ProbeProblems Sum 60 1 GreaterThanOrEqualToThreshold AlarmProbeProblemsThreshold notBreaching",
		"ProbeMissingAlarm": "ProbeRuns Sum 300 1 LessThanThreshold AlarmProbeRunsThreshold breaching",
	} {
		a := tpl.resource(t, id, "AWS::CloudWatch::Alarm")
		got := fmt.Sprint(a["MetricName"], " ", a["Statistic"], " ", a["Period"], " ", a["EvaluationPeriods"], " ", a["ComparisonOperator"], " ", refOf(a["Threshold"]), " ", a["TreatMissingData"])
		if got != want || path(a, "Namespace", "Fn::Sub") != "Latchkey/${AWS::StackName}" {
			t.Errorf("%s: %s, want %s", id, got, want)
		}
	}
}

// probeMetrics applies the template's metric filters on the probe's log
// group to its lines: the ProbeProblems and ProbeRuns sums, and each
// path's ProbeSeenMs.
func probeMetrics(t *testing.T, tpl template, logs []string) (problems, runs float64, seen map[string]float64) {
	t.Helper()
	seen = map[string]float64{}
	for _, l := range logs {
		var line map[string]any
		if err := json.Unmarshal([]byte(l), &line); err != nil {
			t.Fatal(err)
		}
		for _, f := range metricFilters(t, tpl, "ProbeFunction", "ProbeProblems") {
			if v, _, ok := f.apply(t, line); ok {
				problems += v
			}
		}
		for _, f := range metricFilters(t, tpl, "ProbeFunction", "ProbeRuns") {
			if v, _, ok := f.apply(t, line); ok {
				runs += v
			}
		}
		for _, f := range metricFilters(t, tpl, "ProbeFunction", "ProbeSeenMs") {
			if v, dims, ok := f.apply(t, line); ok {
				seen[strings.TrimPrefix(dims, "Path=")] = v
			}
		}
	}
	return problems, runs, seen
}

// TestProbe_Lambda runs the probe as Lambda does: the schedule's event
// (events/schedule/probe.json) into the handler main starts, which invokes
// the live aliases through lambda:InvokeFunction (a stand-in of Lambda that
// calls the real handlers): every path refuses the revoked token, one line
// each, and each alias was invoked; an event that is not the schedule's
// is an error, and probes nothing.
func TestProbe_Lambda(t *testing.T) {
	const (
		authARN   = "arn:aws:lambda:us-east-1:123456789012:function:auth:live"
		verifyARN = "arn:aws:lambda:us-east-1:123456789012:function:verify:live"
		authzARN  = "arn:aws:lambda:us-east-1:123456789012:function:authorizer:live"
	)
	raw, err := os.ReadFile(filepath.Join(eventsDir, "schedule", "probe.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ev events.EventBridgeEvent
	if err := json.Unmarshal(raw, &ev); err != nil {
		t.Fatal(err)
	}
	b := newBackend(t)
	fake, targets := lambdaTargets(t, b.store, b.keys, authARN, verifyARN, authzARN)
	targets.Audience = "https://orders.example.com"
	var logs httpapitest.SyncBuffer
	handler := probeapp.NewHandler(targets, func(context.Context) (string, error) { return replay.ProbeSecret, nil }, lambdaenv.NewLogger(&logs, probeapp.Name))
	if err := handler(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	outcomes := map[string]string{}
	for _, l := range logs.Lines() {
		var line probeLine
		if err := json.Unmarshal([]byte(l), &line); err != nil {
			t.Fatal(err)
		}
		if line.Msg == "probe path" {
			outcomes[line.Path] = line.Outcome
		}
	}
	want := map[string]string{canary.PathVerify: canary.Refused, canary.PathVerifyURL: canary.Refused, canary.PathIntrospect: canary.Refused, canary.PathAuthorizer: canary.Refused, canary.PathStatusList: canary.Refused}
	if !maps.Equal(outcomes, want) {
		t.Errorf("outcomes %v, want %v; logs:\n%s", outcomes, want, logs.String())
	}
	if got := slices.Compact(slices.Sorted(slices.Values(fake.invoked))); !slices.Equal(got, []string{authARN, authzARN, verifyARN}) {
		t.Errorf("invoked %v, want the three aliases", got)
	}

	ev.DetailType = "Object Created"
	logs.Reset()
	if err := handler(context.Background(), ev); err == nil || logs.String() != "" {
		t.Errorf("another event: error %v, logs %q; want an error and no probe", err, logs.String())
	}
}

// TestProbe_CannotIssue: a probe whose key is refused asks no path; its
// one "probe failed" line names the step and the answer, and the
// template's filters count it a problem (ProbeFailedAlarm fires) and a
// run.
func TestProbe_CannotIssue(t *testing.T) {
	tpl := loadTemplate(t)
	targets := newCanaryBuild(t, newBackend(t), nil).targets
	var logs httpapitest.SyncBuffer
	if probeapp.Run(context.Background(), targets, func(context.Context) (string, error) { return "not-the-key-of-anyone-at-all-0123456789", nil }, time.Second, lambdaenv.NewLogger(&logs, probeapp.Name)) {
		t.Fatal("ok with a refused key")
	}
	var failed []probeLine
	for _, l := range logs.Lines() {
		var line probeLine
		if err := json.Unmarshal([]byte(l), &line); err != nil {
			t.Fatal(err)
		}
		if line.Msg == "probe path" {
			t.Errorf("a path was asked: %s", l)
		}
		if line.Msg == "probe failed" {
			failed = append(failed, line)
		}
	}
	if len(failed) != 1 || !strings.Contains(failed[0].Error, "issue a token (auth): 401") {
		t.Errorf("probe failed lines %+v, want one naming the step and the 401", failed)
	}
	if problems, runs, _ := probeMetrics(t, tpl, logs.Lines()); problems != 1 || runs != 1 {
		t.Errorf("ProbeProblems %v, ProbeRuns %v; want 1, 1", problems, runs)
	}
}

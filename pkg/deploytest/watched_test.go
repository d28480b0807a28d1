package deploytest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"

	"latchkey/pkg/httpapi/httpapitest"
	"latchkey/pkg/lambdaapp"
	"latchkey/pkg/lambdaapp/replay"
	"latchkey/pkg/publisher"
)

// insightRule is an AWS::CloudWatch::InsightRule's body, with the log group
// it reads (the !Ref behind its ${Group}).
type insightRule struct {
	id, group string
	body      struct {
		LogGroupNames []string
		LogFormat     string
		Contribution  struct {
			Keys    []string
			Filters []map[string]any
		}
		AggregateOn string
	}
}

func (t template) insightRules(tb testing.TB) map[string]insightRule {
	tb.Helper()
	out := map[string]insightRule{}
	for id, r := range t["Resources"].(map[string]any) {
		if path(r, "Type") != "AWS::CloudWatch::InsightRule" {
			continue
		}
		props := path(r, "Properties")
		if path(props, "RuleState") != "ENABLED" {
			tb.Errorf("%s: RuleState %v, want ENABLED", id, path(props, "RuleState"))
		}
		sub := list(path(props, "RuleBody", "Fn::Sub"))
		if len(sub) != 2 {
			tb.Fatalf("%s: RuleBody %v, want !Sub [body, {Group: !Ref <log group>}]", id, path(props, "RuleBody"))
		}
		rule := insightRule{id: id, group: refOf(path(sub[1], "Group"))}
		if err := json.Unmarshal([]byte(strings.ReplaceAll(fmt.Sprint(sub[0]), "${Group}", rule.group)), &rule.body); err != nil {
			tb.Fatalf("%s: RuleBody is not JSON: %v", id, err)
		}
		if len(rule.body.LogGroupNames) != 1 || rule.body.LogGroupNames[0] != rule.group || rule.body.LogFormat != "JSON" || rule.body.AggregateOn != "Count" {
			tb.Errorf("%s: log groups %v, format %s, aggregate %s; want its one group, JSON, Count", id, rule.body.LogGroupNames, rule.body.LogFormat, rule.body.AggregateOn)
		}
		out[id] = rule
	}
	return out
}

// contributor returns the contributor a log line counts for, or ok false
// when the rule's filters drop it: CloudWatch's filter operators as the
// template uses them (In, StartsWith on strings, GreaterThan and LessThan
// on numbers), all of them ANDed; a line without a key is not counted.
func (r insightRule) contributor(tb testing.TB, line map[string]any) (key string, ok bool) {
	tb.Helper()
	field := func(p string) (any, bool) {
		v, ok := line[strings.TrimPrefix(p, "$.")]
		return v, ok
	}
	for _, f := range r.body.Contribution.Filters {
		v, present := field(fmt.Sprint(f["Match"]))
		if !present {
			return "", false
		}
		s, isString := v.(string)
		n, isNumber := v.(float64)
		for op, arg := range f {
			switch op {
			case "Match":
			case "In":
				found := false
				for _, a := range arg.([]any) {
					found = found || a == v
				}
				if !found {
					return "", false
				}
			case "StartsWith":
				found := false
				for _, a := range arg.([]any) {
					found = found || isString && strings.HasPrefix(s, a.(string))
				}
				if !found {
					return "", false
				}
			case "GreaterThan":
				if !isNumber || n <= arg.(float64) {
					return "", false
				}
			case "LessThan":
				if !isNumber || n >= arg.(float64) {
					return "", false
				}
			default:
				tb.Fatalf("%s: filter operator %s is not evaluated here", r.id, op)
			}
		}
	}
	var parts []string
	for _, k := range r.body.Contribution.Keys {
		v, ok := field(k)
		if !ok {
			return "", false
		}
		parts = append(parts, fmt.Sprint(v))
	}
	return strings.Join(parts, " "), true
}

// count applies the rule to each JSON line of logs: contributions by key.
func (r insightRule) count(tb testing.TB, logs []string) map[string]int {
	tb.Helper()
	out := map[string]int{}
	for _, l := range logs {
		var line map[string]any
		if err := json.Unmarshal([]byte(l), &line); err != nil {
			tb.Fatalf("log line %q: %v", l, err)
		}
		if k, ok := r.contributor(tb, line); ok {
			out[k]++
		}
	}
	return out
}

// TestTemplate_ContributorInsights (issue 34): the table and each of its
// indexes report their most accessed and most throttled keys; the API's
// top clients by requests and by 4xx come from its access log, the verify
// URL's from its request lines, each rule run here over the lines those
// write: the access log's as API Gateway renders the template's format,
// the verify function's as it logs them.
func TestTemplate_ContributorInsights(t *testing.T) {
	tpl := loadTemplate(t)
	table := tpl.resource(t, "Table", "AWS::DynamoDB::Table")
	specs := map[string]any{"table": table["ContributorInsightsSpecification"]}
	for _, g := range list(table["GlobalSecondaryIndexes"]) {
		specs["index "+fmt.Sprint(path(g, "IndexName"))] = path(g, "ContributorInsightsSpecification")
	}
	if len(specs) != 1+len(gsiNames()) {
		t.Errorf("Contributor Insights on %d of the table and its %d indexes", len(specs), len(gsiNames()))
	}
	for what, spec := range specs {
		if path(spec, "Enabled") != "true" || path(spec, "Mode") != "ACCESSED_AND_THROTTLED_KEYS" {
			t.Errorf("%s: ContributorInsightsSpecification %v, want enabled, ACCESSED_AND_THROTTLED_KEYS", what, spec)
		}
	}

	rules := tpl.insightRules(t)
	if len(rules) != 4 {
		t.Errorf("%d insight rules, want 4 (the API's and the verify URL's top clients, by requests and by 4xx)", len(rules))
	}
	api := tpl.resource(t, "HttpApi", "AWS::Serverless::HttpApi")
	format := fmt.Sprint(path(api, "AccessLogSettings", "Format"))
	var access []string
	for i, status := range []int{200, 201, 404, 429, 401, 500} {
		ev := events.APIGatewayV2HTTPRequest{RouteKey: "GET /v1/auth/verify"}
		ev.RequestContext.RequestID = fmt.Sprintf("req-%d", i)
		ev.RequestContext.HTTP.SourceIP = []string{"198.51.100.7", "203.0.113.9"}[i%2]
		access = append(access, accessLogLine(t, format, ev, events.APIGatewayV2HTTPResponse{StatusCode: status}, "-", time.Millisecond))
	}
	for id, want := range map[string]map[string]int{
		"ApiTopClientsRule":    {"198.51.100.7": 3, "203.0.113.9": 3},
		"ApiTopClients4xxRule": {"198.51.100.7": 2, "203.0.113.9": 1}, // 404 and 401; 429
	} {
		r := rules[id]
		if r.group != "AccessLogGroup" {
			t.Errorf("%s reads %q, want the access log", id, r.group)
		}
		if got := r.count(t, access); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s over the access log: %v, want %v", id, got, want)
		}
	}

	// The verify URL's: its request lines, for one request that answers
	// 200 and one that answers 404 (no route), from two addresses.
	ctx := context.Background()
	var logs httpapitest.SyncBuffer
	b := newBackend(t)
	verify, err := lambdaapp.NewVerifying(ctx, replay.Config(lambdaapp.Verify, "latchkey"),
		lambdaapp.Deps{Store: b.store, Keys: b.keys, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []struct{ event, ip string }{{"valid.json", "198.51.100.7"}, {"unknown-path.json", "203.0.113.9"}, {"unknown-path.json", "203.0.113.9"}} {
		ev, err := replay.LoadEvent(filepath.Join(verifyURLEventsDir, e.event))
		if err != nil {
			t.Fatal(err)
		}
		ev.RequestContext.HTTP.SourceIP = e.ip
		if _, err := verify.Lambda()(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	for id, want := range map[string]map[string]int{
		"VerifyUrlTopClientsRule":    {"198.51.100.7": 1, "203.0.113.9": 2},
		"VerifyUrlTopClients4xxRule": {"203.0.113.9": 2},
	} {
		r := rules[id]
		if r.group != "VerifyLogGroup" || path(tpl["Resources"].(map[string]any)[id], "Condition") != "ServeVerifyUrl" {
			t.Errorf("%s reads %q under condition %v, want the verify function's log group, under ServeVerifyUrl", id, r.group, path(tpl["Resources"].(map[string]any)[id], "Condition"))
		}
		if got := r.count(t, lines); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s over the verify function's lines: %v, want %v\n%s", id, got, want, logs.String())
		}
	}
}

// refusingBus is EventBridge failing every entry whose event id fail
// names with that code, or every call with err.
type refusingBus struct {
	fail  map[string]string
	err   error
	calls int
	// refused is the entries EventBridge reported failed (the sum of
	// FailedEntryCount), or sent in a call that failed whole.
	refused int
}

func (b *refusingBus) PutEvents(_ context.Context, in *eventbridge.PutEventsInput, _ ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error) {
	b.calls++
	if b.err != nil {
		b.refused += len(in.Entries)
		return nil, b.err
	}
	out := &eventbridge.PutEventsOutput{Entries: make([]types.PutEventsResultEntry, len(in.Entries))}
	for i, e := range in.Entries {
		var ev struct{ ID string }
		json.Unmarshal([]byte(aws.ToString(e.Detail)), &ev)
		if code := b.fail[ev.ID]; code != "" {
			out.Entries[i] = types.PutEventsResultEntry{ErrorCode: aws.String(code), ErrorMessage: aws.String("refused by the test")}
			out.FailedEntryCount++
		} else {
			out.Entries[i] = types.PutEventsResultEntry{EventId: aws.String("eb-" + ev.ID)}
		}
	}
	b.refused += int(out.FailedEntryCount)
	return out, nil
}

// TestTemplate_PublisherFailedEntries (issue 34): the metric the
// publisher's failed-entries alarm watches sums, over the publisher's own
// lines, every entry EventBridge refused (FailedEntryCount, a retried
// entry each time) and every entry of a call that failed whole.
func TestTemplate_PublisherFailedEntries(t *testing.T) {
	tpl := loadTemplate(t)
	filters := metricFilters(t, tpl, publisherID, "PublishFailedEntries")
	alarm := tpl.resource(t, "PublisherFailedEntriesAlarm", "AWS::CloudWatch::Alarm")
	if alarm["MetricName"] != "PublishFailedEntries" || fmt.Sprint(alarm["Namespace"]) != "map[Fn::Sub:Latchkey/${AWS::StackName}]" {
		t.Errorf("PublisherFailedEntriesAlarm watches %v %v", alarm["Namespace"], alarm["MetricName"])
	}
	raw, err := os.ReadFile(filepath.Join(streamEventsDir, "mixed.json"))
	if err != nil {
		t.Fatal(err)
	}
	var batch events.DynamoDBEvent
	if err := json.Unmarshal(raw, &batch); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range batch.Records {
		if img := r.Change.NewImage; r.EventName == "INSERT" && strings.HasPrefix(img["pk"].String(), "EVENT#") {
			ids = append(ids, strings.TrimPrefix(img["pk"].String(), "EVENT#"))
		}
	}
	if len(ids) == 0 {
		t.Fatal("mixed.json has no event")
	}
	for _, tc := range []struct {
		name string
		bus  *refusingBus
	}{
		{"Delivered", &refusingBus{}},
		{"NotRetryable", &refusingBus{fail: map[string]string{ids[0]: "MalformedDetail"}}},
		{"ThrottledEveryTime", &refusingBus{fail: map[string]string{ids[0]: "ThrottlingException"}}},
		{"CallFails", &refusingBus{err: errors.New("AccessDeniedException: not authorized")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log bytes.Buffer
			p := publisher.New(tc.bus, publisher.Options{Logger: slog.New(slog.NewJSONHandler(&log, nil)), Backoff: func(int) time.Duration { return 0 }})
			if _, err := p.Handle(context.Background(), batch); err != nil {
				t.Fatal(err)
			}
			sum := 0.0
			for _, l := range strings.Split(strings.TrimSpace(log.String()), "\n") {
				var line map[string]any
				if l == "" {
					continue
				}
				if err := json.Unmarshal([]byte(l), &line); err != nil {
					t.Fatalf("log line %q: %v", l, err)
				}
				for _, f := range filters {
					if v, _, ok := f.apply(t, line); ok {
						sum += v
					}
				}
			}
			if tc.bus.calls == 0 {
				t.Fatal("the publisher sent nothing")
			}
			if int(sum) != tc.bus.refused {
				t.Errorf("PublishFailedEntries %v, EventBridge refused %d entries\n%s", sum, tc.bus.refused, log.String())
			}
		})
	}
}

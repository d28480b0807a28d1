package main

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"
)

const templatePath = "../../template.yaml"

// TestRender_InSync: docs/dashboard.svg is what this command draws from
// template.yaml's dashboard now. After a change to the dashboard, run
// go run ./cmd/dashboard > docs/dashboard.svg.
func TestRender_InSync(t *testing.T) {
	tpl, err := os.ReadFile(templatePath)
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if err := Render(&got, tpl, "Dashboard"); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("../../docs/dashboard.svg")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Fatal("docs/dashboard.svg differs from template.yaml's dashboard; run: go run ./cmd/dashboard > docs/dashboard.svg")
	}
}

// TestBody_Widgets: the dashboard is valid CloudWatch JSON whose widgets
// tile the 24-column grid without overlapping, and show what issue 22
// names: verify rate, latency p50 and p99, 4xx and 5xx by route,
// throttles, DynamoDB consumed capacity and throttles, the publisher's lag
// and dead letters.
func TestBody_Widgets(t *testing.T) {
	tpl, err := os.ReadFile(templatePath)
	if err != nil {
		t.Fatal(err)
	}
	body, err := Body(tpl, "Dashboard")
	if err != nil {
		t.Fatal(err)
	}
	ws, err := Widgets(body)
	if err != nil {
		t.Fatal(err)
	}
	taken := map[[2]int]string{}
	var shown []string
	verify := map[string]bool{} // what the verify widget shows
	for _, w := range ws {
		if w.Type != "metric" && w.Type != "text" || w.X < 0 || w.Width < 1 || w.X+w.Width > 24 || w.Height < 1 {
			t.Errorf("widget %q: type %s at x %d, width %d, height %d", w.Properties.Title, w.Type, w.X, w.Width, w.Height)
		}
		for x := w.X; x < w.X+w.Width; x++ {
			for y := w.Y; y < w.Y+w.Height; y++ {
				if other, ok := taken[[2]int{x, y}]; ok {
					t.Fatalf("widgets %q and %q overlap at %d,%d", other, w.Properties.Title, x, y)
				}
				taken[[2]int{x, y}] = w.Properties.Title
			}
		}
		if w.Type == "text" {
			shown = append(shown, w.Properties.Markdown)
			continue
		}
		if r := w.Properties.InsightRule; r != nil {
			shown = append(shown, "insight rule "+r.RuleName)
		}
		if w.Properties.Region != "us-east-1" || w.Properties.Period <= 0 {
			t.Errorf("widget %q: region %q, period %d", w.Properties.Title, w.Properties.Region, w.Properties.Period)
		}
		for _, m := range w.Properties.Metrics {
			_, what := Series(m, w.Properties.Stat)
			shown = append(shown, what)
			if strings.HasPrefix(w.Properties.Title, "Verify") {
				verify[what] = true
			}
		}
	}
	for _, want := range []string{
		"AWS/ApiGateway Count (Sum) ApiId=latchkey-HttpApi Stage=$default Method=GET Resource=/v1/auth/verify",
		"AWS/ApiGateway Latency (p50)", "AWS/ApiGateway Latency (p99)",
		`MetricName="4xx"`, `MetricName="5xx"`, "{AWS/ApiGateway,ApiId,Method,Resource,Stage}",
		"Latchkey/latchkey ApiThrottled", "AWS/Lambda Throttles",
		"AWS/DynamoDB ConsumedReadCapacityUnits", "AWS/DynamoDB ConsumedWriteCapacityUnits",
		"AWS/DynamoDB ReadThrottleEvents", "AWS/DynamoDB WriteThrottleEvents",
		"AWS/Lambda IteratorAge (Maximum) FunctionName=latchkey-PublisherFunction",
		"AWS/SQS ApproximateNumberOfMessagesVisible (Maximum) QueueName=latchkey-PublisherDeadLetterQueue",
		// Issue 34: who sends the traffic, and where the hot keys are.
		"insight rule latchkey-latchkey-api-top-clients", "insight rule latchkey-latchkey-api-top-clients-4xx",
		"insight rule latchkey-latchkey-verify-url-top-clients", "insight rule latchkey-latchkey-verify-url-top-clients-4xx",
		"(Contributor Insights for DynamoDB)", "#table?name=latchkey-Table&tab=monitoring",
		"Latchkey/latchkey PublishFailedEntries",
		"AWS/WAFV2 BlockedRequests (Sum) WebACL=latchkey-latchkey Rule=per-authorization",
		"AWS/WAFV2 BlockedRequests (Sum) WebACL=latchkey-latchkey Rule=per-ip",
	} {
		if !slices.ContainsFunc(shown, func(s string) bool { return strings.Contains(s, want) }) {
			t.Errorf("no widget shows %s; shown:\n%s", want, strings.Join(shown, "\n"))
		}
	}
	// Verification is the HTTP routes and the Lambda authorizer that other
	// APIs attach, which API Gateway does not count as this API's requests.
	for _, want := range []string{
		"AWS/ApiGateway Count (Sum) ApiId=latchkey-HttpApi Stage=$default Method=GET Resource=/v1/auth/verify",
		"AWS/ApiGateway Count (Sum) ApiId=latchkey-HttpApi Stage=$default Method=POST Resource=/oauth2/introspect",
		"AWS/Lambda Invocations (Sum) FunctionName=latchkey-AuthorizerFunction",
	} {
		if !verify[want] {
			t.Errorf("the verify widget does not show %s; it shows %v", want, verify)
		}
	}
}

package deploytest_test

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"latchkey/pkg/lambdaapp"
	"latchkey/pkg/lambdaapp/replay"
)

// The measured inputs of the README's cost per million verifies and token
// issuances: BenchmarkWarm.

// fullVCPUMemoryMB is the memory at which Lambda gives a function one full
// vCPU; below it, the CPU share is proportional to memory.
const fullVCPUMemoryMB = 1769

// processCPU returns the user and system CPU time the process pid has used,
// from /proc (Linux).
func processCPU(tb testing.TB, pid int) time.Duration {
	tb.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		tb.Fatal(err)
	}
	// Fields after the command, which is in parentheses and may hold spaces:
	// state is field 3, utime 14 and stime 15 (clock ticks, USER_HZ = 100).
	fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		tb.Fatalf("/proc/%d/stat: %s", pid, b)
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// accessLogLine renders template.yaml's access log Format for one request
// as API Gateway would: each $context variable replaced by the value of the
// event, the response, and the Lambda request id.
func accessLogLine(tb testing.TB, format string, ev events.APIGatewayV2HTTPRequest, res events.APIGatewayV2HTTPResponse, lambdaRequestID string, latency time.Duration) string {
	tb.Helper()
	values := map[string]string{
		"$context.requestId":                     ev.RequestContext.RequestID,
		"$context.identity.sourceIp":             ev.RequestContext.HTTP.SourceIP,
		"$context.requestTime":                   ev.RequestContext.Time,
		"$context.httpMethod":                    ev.RequestContext.HTTP.Method,
		"$context.routeKey":                      ev.RouteKey,
		"$context.status":                        strconv.Itoa(res.StatusCode),
		"$context.protocol":                      ev.RequestContext.HTTP.Protocol,
		"$context.responseLength":                strconv.Itoa(len(res.Body)),
		"$context.integration.requestId":         lambdaRequestID,
		"$context.integration.integrationStatus": "200",
		"$context.integrationLatency":            strconv.Itoa(int(latency.Milliseconds())),
		"$context.integrationErrorMessage":       "-",
		"$context.error.message":                 "-",
	}
	return regexp.MustCompile(`\$context\.[A-Za-z.]+`).ReplaceAllStringFunc(format, func(v string) string {
		s, ok := values[v]
		if !ok {
			tb.Fatalf("the access log format has %s, which this benchmark does not fill in; add it", v)
		}
		return s
	})
}

// platformLines are the two records Lambda writes per invocation to a
// function's log group in the JSON log format (system log level INFO), as
// AWS documents them: platform.start and platform.report.
func platformLines(tb testing.TB, requestID string, duration time.Duration, memoryMB, usedMB int) string {
	tb.Helper()
	type metrics struct {
		DurationMs       float64 `json:"durationMs"`
		BilledDurationMs int64   `json:"billedDurationMs"`
		MemorySizeMB     int     `json:"memorySizeMB"`
		MaxMemoryUsedMB  int     `json:"maxMemoryUsedMB"`
	}
	now := time.Date(2026, 11, 22, 9, 0, 3, 123e6, time.UTC).Format("2006-01-02T15:04:05.000Z")
	ms := float64(duration.Microseconds()) / 1000
	start, _ := json.Marshal(map[string]any{"time": now, "type": "platform.start", "record": map[string]any{"requestId": requestID, "version": "$LATEST"}})
	report, _ := json.Marshal(struct {
		Time   string `json:"time"`
		Type   string `json:"type"`
		Record struct {
			RequestID string  `json:"requestId"`
			Metrics   metrics `json:"metrics"`
			Status    string  `json:"status"`
		} `json:"record"`
	}{Time: now, Type: "platform.report", Record: struct {
		RequestID string  `json:"requestId"`
		Metrics   metrics `json:"metrics"`
		Status    string  `json:"status"`
	}{requestID, metrics{math.Round(ms*100) / 100, int64(math.Ceil(ms)), memoryMB, usedMB}, "success"}})
	return string(start) + "\n" + string(report) + "\n"
}

// BenchmarkWarm measures what a warm invocation of the auth function costs
// on the hot paths, verify and token issuance: the built binary, started
// once as Lambda starts it, serves each event of events/ b.N times through
// the fake Runtime API against DynamoDB Local and moto. It reports, per
// invocation:
//
//   - ms/invoke: wall time here, the Runtime API round trip and DynamoDB
//     Local included;
//   - cpu-ms/invoke: the process's CPU time (user and system);
//   - ms-at-NNNMB: that CPU time at the CPU share Lambda gives the
//     template's MemorySize (NNN/1769 of a vCPU): an upper bound of the
//     compute part of the billed duration on a CPU as fast as this one;
//   - fn-log-B, platform-log-B, access-log-B: the bytes written to
//     CloudWatch Logs per request: the function's own lines (measured),
//     Lambda's platform.start and platform.report records, and the API
//     access log line rendered from template.yaml's Format with this
//     request's values;
//   - body-B: the response body, for the data transferred out.
func BenchmarkWarm(b *testing.B) {
	l := newLive(b, true)
	tpl := loadTemplate(b)
	memoryMB, err := strconv.Atoi(fmt.Sprint(path(map[string]any(tpl), "Globals", "Function", "MemorySize")))
	if err != nil {
		b.Fatalf("Globals.Function.MemorySize: %v", err)
	}
	format, _ := path(tpl.resource(b, "HttpApi", "AWS::Serverless::HttpApi"), "AccessLogSettings", "Format").(string)
	bin := buildFunction(b, lambdaapp.Auth)
	for _, tc := range []struct {
		name, event string
		status      int
	}{
		{"Verify", "auth-verify.json", http.StatusOK},
		{"TokenIssuance", "auth-token.json", http.StatusCreated},
	} {
		b.Run(tc.name, func(b *testing.B) {
			ev, err := replay.LoadEvent(filepath.Join(eventsDir, tc.event))
			if err != nil {
				b.Fatal(err)
			}
			raw, err := json.Marshal(ev)
			if err != nil {
				b.Fatal(err)
			}
			p := startLambda(b, bin, l.env(lambdaapp.Auth))
			invoke := func() (events.APIGatewayV2HTTPResponse, time.Duration) {
				start := time.Now()
				out := p.invoke(raw)
				elapsed := time.Since(start)
				var res events.APIGatewayV2HTTPResponse
				if err := json.Unmarshal(out, &res); err != nil || res.StatusCode != tc.status {
					b.Fatalf("%s: got %d %v: %s", tc.event, res.StatusCode, err, res.Body)
				}
				return res, elapsed
			}
			for range 20 { // warm: init done, connections open, secrets cached
				invoke()
			}
			logsBefore := len(p.logs.String())
			cpuBefore := processCPU(b, p.cmd.Process.Pid)
			var wall time.Duration
			var last events.APIGatewayV2HTTPResponse
			for b.Loop() {
				res, elapsed := invoke()
				wall += elapsed
				last = res
			}
			cpu := processCPU(b, p.cmd.Process.Pid) - cpuBefore
			fnLog := float64(len(p.logs.String())-logsBefore) / float64(b.N)
			perInvoke := wall / time.Duration(b.N)
			requestID := "8476a536-e9f4-11e8-9739-000000000001" // the fake Runtime API's form, as Lambda's: a UUID
			b.ReportMetric(float64(perInvoke.Microseconds())/1000, "ms/invoke")
			cpuMs := float64(cpu.Microseconds()) / 1000 / float64(b.N)
			b.ReportMetric(cpuMs, "cpu-ms/invoke")
			b.ReportMetric(cpuMs*fullVCPUMemoryMB/float64(memoryMB), fmt.Sprintf("ms-at-%dMB", memoryMB))
			b.ReportMetric(fnLog, "fn-log-B")
			b.ReportMetric(float64(len(platformLines(b, requestID, perInvoke, memoryMB, 25))), "platform-log-B")
			b.ReportMetric(float64(len(accessLogLine(b, format, ev, last, requestID, perInvoke))+1), "access-log-B")
			b.ReportMetric(float64(len(last.Body)), "body-B")
		})
	}
}

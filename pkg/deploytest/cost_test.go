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
	"latchkey/pkg/lambdaapp/authorizerapp"
	"latchkey/pkg/lambdaapp/replay"
	"latchkey/pkg/logsample"
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
		"$context.requestTimeEpoch":              strconv.FormatInt(ev.RequestContext.TimeEpoch, 10),
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

// TestTemplate_LogCost holds the template to the logging the cost page
// counts (docs/cost.md): every function logs JSON with Lambda's system log
// level at WARN, so that an invocation that succeeds writes no
// platform.start or platform.report record, and its application log level
// at INFO, so that the request line of every refusal and error (INFO) is
// written; the functions that serve requests log one success in
// SuccessLogEvery (100 by default), as their configuration reads it; and
// the access log line of a verify stays within the bytes the page counts.
func TestTemplate_LogCost(t *testing.T) {
	tpl := loadTemplate(t)
	for _, id := range tpl.functions() {
		lc, _ := path(tpl.resource(t, id, "AWS::Serverless::Function"), "LoggingConfig").(map[string]any)
		for k, want := range map[string]string{"LogFormat": "JSON", "ApplicationLogLevel": "INFO", "SystemLogLevel": "WARN"} {
			if lc[k] != want {
				t.Errorf("%s: LoggingConfig.%s %v, want %s", id, k, lc[k], want)
			}
		}
	}
	every, err := strconv.Atoi(tpl.parameterValue(t, "SuccessLogEvery", nil))
	if err != nil || every != 100 {
		t.Errorf("SuccessLogEvery defaults to %d (%v), want 100", every, err)
	}
	for _, fn := range lambdaapp.Functions() {
		cfg, err := lambdaapp.ConfigFromEnv(fn, tpl.getenv(t, tpl.functionEnv(t, logicalID(fn)), nil))
		if err != nil || cfg.SuccessLogEvery != every {
			t.Errorf("%s: SuccessLogEvery %d (%v), want the parameter's %d", fn, cfg.SuccessLogEvery, err, every)
		}
	}
	azEnv := tpl.getenv(t, tpl.functionEnv(t, authorizerID), nil)
	cfg, err := authorizerapp.ConfigFromEnv(func(k string) string {
		if k == authorizerapp.EnvRoutes {
			return ""
		}
		return azEnv(k)
	})
	if err != nil || cfg.SuccessLogEvery != every {
		t.Errorf("the authorizer: SuccessLogEvery %d (%v), want the parameter's %d", cfg.SuccessLogEvery, err, every)
	}

	// The access log line of events/auth-verify.json, answered 200 with the
	// body BenchmarkWarm measured: 259 bytes with its newline, 371 before
	// the format lost the fields no one needs of every request.
	const maxAccessLine = 260
	ev, err := replay.LoadEvent(filepath.Join(eventsDir, "auth-verify.json"))
	if err != nil {
		t.Fatal(err)
	}
	format, _ := path(tpl.resource(t, "HttpApi", "AWS::Serverless::HttpApi"), "AccessLogSettings", "Format").(string)
	line := accessLogLine(t, format, ev, events.APIGatewayV2HTTPResponse{StatusCode: http.StatusOK, Body: strings.Repeat("x", 328)}, "8476a536-e9f4-11e8-9739-000000000001", 13*time.Millisecond)
	if n := len(line) + 1; n > maxAccessLine {
		t.Errorf("the access log line of a verify is %d bytes, over the %d docs/cost.md counts:\n%s", n, maxAccessLine, line)
	}
}

// TestDocs_CostArithmetic: the per-million table of docs/cost.md follows
// from the page's own measured inputs, its prices and the template's
// MemorySize, as the page says it is computed: billed duration = CPU time
// at MemorySize's share of a vCPU + 5 ms per DynamoDB round trip, rounded
// up to the millisecond; log bytes = the function's lines + Lambda's
// platform records + the access log line, at $0.50 per GB (2^30 bytes).
// A changed input, or a total not recomputed, fails it.
func TestDocs_CostArithmetic(t *testing.T) {
	b, err := os.ReadFile("../../docs/cost.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	const (
		apiPerM      = 1.00
		requestPerM  = 0.20
		gbSecond     = 0.0000133334
		rruPerM      = 0.125
		wruPerM      = 0.625
		logPerGB     = 0.50
		roundTripMs  = 5.0
		memoryGB     = 0.25
		columns      = 3 // verify, token issuance, authorizer decision
		bytesPerGB   = 1 << 30
		perMillion   = 1e6
		priceRows    = "| API Gateway HTTP API | $1.00 per million requests"
		lambdaPrices = "| Lambda, arm64 | $0.20 per million requests; $0.0000133334 per GB-second"
	)
	for _, want := range []string{priceRows, lambdaPrices, "| DynamoDB, on demand, standard table class | $0.125 per million read request units, $0.625 per million write units", "| CloudWatch Logs | $0.50 per GB ingested", "**5 ms each**"} {
		if !strings.Contains(doc, want) {
			t.Errorf("docs/cost.md no longer says %q, which this test computes with", want)
		}
	}
	tpl := loadTemplate(t)
	memoryMB, err := strconv.ParseFloat(fmt.Sprint(path(map[string]any(tpl), "Globals", "Function", "MemorySize")), 64)
	if err != nil || memoryMB/1024 != memoryGB {
		t.Fatalf("MemorySize %v MB, the page computes with %v GB", memoryMB, memoryGB)
	}
	// row returns the numbers of the table row whose label starts with
	// label, one per column ("none..." is 0).
	row := func(label string) [columns]float64 {
		t.Helper()
		var out [columns]float64
		for _, line := range strings.Split(doc, "\n") {
			if !strings.HasPrefix(line, "| "+label) {
				continue
			}
			cells := strings.Split(strings.Trim(line, "| "), " | ")
			if len(cells) != columns+1 {
				t.Fatalf("row %q: %d cells, want %d", label, len(cells), columns+1)
			}
			for i, c := range cells[1:] {
				if strings.HasPrefix(c, "none") {
					continue
				}
				f := strings.Fields(strings.Trim(c, "*$"))
				if out[i], err = strconv.ParseFloat(f[0], 64); err != nil {
					t.Fatalf("row %q, cell %q: %v", label, c, err)
				}
			}
			return out
		}
		t.Fatalf("docs/cost.md has no row %q", label)
		return out
	}
	cpu, trips := row("CPU time per request"), row("DynamoDB round trips")
	fnLog, platform, access := row("function log lines"), row("Lambda's `platform.start`"), row("API access log line")
	api := [columns]float64{1, 1, 0} // the authorizer's request is the protected API's
	// RRU, WRU: docs/dynamodb.md. A verify and a decision read one item,
	// the key's copy, for a token with the claim (irv).
	units := [columns][2]float64{{1, 0}, {1, 1}, {1, 0}}
	var duration, logs, total [columns]float64
	for i := range columns {
		billedMs := math.Ceil(cpu[i]*fullVCPUMemoryMB/memoryMB + roundTripMs*trips[i])
		duration[i] = billedMs / 1000 * memoryGB * perMillion * gbSecond
		logs[i] = (fnLog[i] + platform[i] + access[i]) * perMillion / bytesPerGB * logPerGB
		total[i] = api[i]*apiPerM + requestPerM + duration[i] + units[i][0]*rruPerM + units[i][1]*wruPerM + logs[i]
	}
	var dynamo [columns]float64
	for i := range columns {
		dynamo[i] = units[i][0]*rruPerM + units[i][1]*wruPerM
	}
	if got := row("DynamoDB:"); got != dynamo {
		t.Errorf("docs/cost.md DynamoDB: %v, computed %v", got, dynamo)
	}
	for label, want := range map[string][columns]float64{"Lambda duration:": duration, "CloudWatch Logs:": logs, "**Total**": total} {
		got := row(label)
		for i := range columns {
			if fmt.Sprintf("%.2f", got[i]) != fmt.Sprintf("%.2f", want[i]) {
				t.Errorf("docs/cost.md %s, column %d: $%.2f, computed $%.2f", label, i+1, got[i], want[i])
			}
		}
	}

	// Verify through the function URL (VerifyFunctionUrl), in a section
	// of its own, one column: no API Gateway request, no access log; the
	// function's every request line, and the same reads as a verify.
	t.Run("VerifyURL", func(t *testing.T) {
		_, section, ok := strings.Cut(doc, "\n## Verify through the function URL\n")
		if !ok {
			t.Fatal("docs/cost.md has no section \"Verify through the function URL\"")
		}
		section, _, _ = strings.Cut(section, "\n## ")
		cell := func(label string) float64 {
			t.Helper()
			for _, line := range strings.Split(section, "\n") {
				if !strings.HasPrefix(line, "| "+label) {
					continue
				}
				cells := strings.Split(strings.Trim(line, "| "), " | ")
				if len(cells) != 2 {
					t.Fatalf("row %q: %d cells, want 2", label, len(cells))
				}
				v, err := strconv.ParseFloat(strings.Fields(strings.Trim(cells[1], "*$"))[0], 64)
				if err != nil {
					t.Fatalf("row %q: %v", label, err)
				}
				return v
			}
			t.Fatalf("the function URL's section has no row %q", label)
			return 0
		}
		billedMs := math.Ceil(cell("CPU time per request")*fullVCPUMemoryMB/memoryMB + roundTripMs*cell("DynamoDB round trips"))
		duration := billedMs / 1000 * memoryGB * perMillion * gbSecond
		logs := (cell("function log lines") + cell("Lambda's `platform.start`")) * perMillion / bytesPerGB * logPerGB
		reads := 1 * rruPerM // as the API's verify of a token with the claim: docs/dynamodb.md
		total := requestPerM + duration + reads + logs
		for label, want := range map[string]float64{
			"Lambda requests": requestPerM, "Lambda duration:": duration, "DynamoDB:": reads, "CloudWatch Logs:": logs, "**Total**": total,
		} {
			if got := cell(label); fmt.Sprintf("%.2f", got) != fmt.Sprintf("%.2f", want) {
				t.Errorf("docs/cost.md, the function URL's %s: $%.2f, computed $%.2f", label, got, want)
			}
		}
		if total > 1.40 {
			t.Errorf("a verify through the function URL costs $%.2f a million, over issue 23's $1.40", total)
		}
	})

	// A use of a limited key adds one conditional UpdateItem (1 WRU) and
	// one more round trip; "Verify in all" is the verify's total above
	// plus that addition.
	t.Run("RateLimits", func(t *testing.T) {
		_, section, ok := strings.Cut(doc, "\n## Rate limits and credits\n")
		if !ok {
			t.Fatal("docs/cost.md has no section \"Rate limits and credits\"")
		}
		section, _, _ = strings.Cut(section, "\n## ")
		var header string
		cells := func(label string) []string {
			t.Helper()
			for _, line := range strings.Split(section, "\n") {
				if strings.HasPrefix(line, "| Per million") {
					header = line
				}
				if strings.HasPrefix(line, "| "+label) {
					return strings.Split(strings.Trim(line, "| "), " | ")
				}
			}
			t.Fatalf("the rate limits section has no row %q", label)
			return nil
		}
		money := func(c string) float64 {
			t.Helper()
			v, err := strconv.ParseFloat(strings.Fields(strings.Trim(c, "*$"))[0], 64)
			if err != nil {
				t.Fatalf("cell %q: %v", c, err)
			}
			return v
		}
		write := wruPerM
		extra := roundTripMs / 1000 * memoryGB * perMillion * gbSecond
		added := write + extra
		totals := cells("**Total**")
		if len(totals) != 3 {
			t.Fatalf("the rate limits total row has %d cells, want 3", len(totals))
		}
		for label, want := range map[string]float64{"DynamoDB: 1 WRU": write, "Lambda duration:": extra, "**Total**": added} {
			if got := money(cells(label)[1]); fmt.Sprintf("%.2f", got) != fmt.Sprintf("%.2f", want) {
				t.Errorf("docs/cost.md, a limited key's %s: $%.2f, computed $%.2f", label, got, want)
			}
		}
		// A use on the last credits of a key with 64 records: 2 failed
		// writes, the read of the 62 others, the write.
		if got, want := money(cells("DynamoDB of a use on a key's last credits")[1]), 3*wruPerM+62*rruPerM; fmt.Sprintf("%.2f", got) != fmt.Sprintf("%.2f", want) {
			t.Errorf("docs/cost.md, a use on a key's last credits: $%.3f, computed $%.3f", got, want)
		}
		// Starting record 0 of spread credits: one write.
		if got := money(cells("DynamoDB of starting record 0")[1]); fmt.Sprintf("%.3f", got) != fmt.Sprintf("%.3f", wruPerM) {
			t.Errorf("docs/cost.md, starting record 0 of spread credits: $%.3f, computed $%.3f", got, wruPerM)
		}
		verifyAll := total[0] + added
		if got := money(totals[2]); fmt.Sprintf("%.2f", got) != fmt.Sprintf("%.2f", verifyAll) {
			t.Errorf("docs/cost.md, a limited key's verify in all: $%.2f, computed $%.2f ($%.2f + $%.2f)", got, verifyAll, total[0], added)
		}
		// The header names the verify without limits: the total above.
		if want := fmt.Sprintf("without limits $%.2f", total[0]); !strings.Contains(header, want) {
			t.Errorf("docs/cost.md, the rate limits table's header %q does not say %q", header, want)
		}
	})
}

// BenchmarkWarm measures what a warm invocation costs on the hot paths,
// verify and token issuance through the auth function, a decision of the
// authorizer, and verify through the verify function's URL (VerifyURL:
// every request line logged, no access log): each built binary, started once as Lambda starts it,
// with the environment and logging configuration the template gives it,
// serves its event b.N times through the fake Runtime API against
// DynamoDB Local and moto. It reports, per invocation:
//
//   - ms/invoke: wall time here, the Runtime API round trip and DynamoDB
//     Local included;
//   - cpu-ms/invoke: the process's CPU time (user and system);
//   - ms-at-NNNMB: that CPU time at the CPU share Lambda gives the
//     template's MemorySize (NNN/1769 of a vCPU): an upper bound of the
//     compute part of the billed duration on a CPU as fast as this one;
//   - fn-log-B, platform-log-B, access-log-B: the bytes written to
//     CloudWatch Logs per request: the function's own lines (measured,
//     with the template's SUCCESS_LOG_EVERY), Lambda's platform.start and
//     platform.report records (none at the template's SystemLogLevel
//     WARN), and the API access log line rendered from template.yaml's
//     Format with this request's values (not the authorizer's: the line is
//     the protected API's, in its own log);
//   - body-B: the response body, for the data transferred out.
func BenchmarkWarm(b *testing.B) {
	l := newLive(b, true)
	tpl := loadTemplate(b)
	memoryMB, err := strconv.Atoi(fmt.Sprint(path(map[string]any(tpl), "Globals", "Function", "MemorySize")))
	if err != nil {
		b.Fatalf("Globals.Function.MemorySize: %v", err)
	}
	format, _ := path(tpl.resource(b, "HttpApi", "AWS::Serverless::HttpApi"), "AccessLogSettings", "Format").(string)
	// sampling is the environment and system log level the template gives
	// the function id.
	sampling := func(id string) (env string, platform bool) {
		every := tpl.getenv(b, tpl.functionEnv(b, id), nil)(logsample.EnvEvery)
		level := path(tpl.resource(b, id, "AWS::Serverless::Function"), "LoggingConfig", "SystemLogLevel")
		return logsample.EnvEvery + "=" + every, level == nil || level == "INFO" || level == "DEBUG"
	}
	routes, _, err := replay.AuthorizerManifest(authorizerEventsDir)
	if err != nil {
		b.Fatal(err)
	}
	authEnv, authPlatform := sampling(logicalID(lambdaapp.Auth))
	azEnv, azPlatform := sampling(authorizerID)
	verifyEnv, verifyPlatform := sampling(verifyID)
	for _, tc := range []struct {
		name, event string
		status      int  // of an HTTP API response; 0 for the authorizer's
		platform    bool // whether Lambda writes platform records
		// noAccessLog: a function URL's request, which no access log records.
		noAccessLog bool
		start       func() *lambdaProcess
	}{
		{"Verify", filepath.Join(eventsDir, "auth-verify.json"), http.StatusOK, authPlatform, false, func() *lambdaProcess {
			return startLambda(b, buildFunction(b, lambdaapp.Auth), append(l.env(lambdaapp.Auth), authEnv))
		}},
		{"TokenIssuance", filepath.Join(eventsDir, "auth-token.json"), http.StatusCreated, authPlatform, false, func() *lambdaProcess {
			return startLambda(b, buildFunction(b, lambdaapp.Auth), append(l.env(lambdaapp.Auth), authEnv))
		}},
		{"Authorizer", filepath.Join(authorizerEventsDir, "valid.json"), 0, azPlatform, false, func() *lambdaProcess {
			return startLambda(b, buildAuthorizer(b), append(l.authorizerEnv(routes), azEnv))
		}},
		{"VerifyURL", filepath.Join(verifyURLEventsDir, "valid.json"), http.StatusOK, verifyPlatform, true, func() *lambdaProcess {
			return startLambda(b, buildFunction(b, lambdaapp.Verify), append(l.env(lambdaapp.Verify), verifyEnv))
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			raw, err := os.ReadFile(tc.event)
			if err != nil {
				b.Fatal(err)
			}
			var ev events.APIGatewayV2HTTPRequest
			if tc.status != 0 {
				if ev, err = replay.LoadEvent(tc.event); err != nil {
					b.Fatal(err)
				}
				if raw, err = json.Marshal(ev); err != nil {
					b.Fatal(err)
				}
			}
			p := tc.start()
			invoke := func() (events.APIGatewayV2HTTPResponse, time.Duration) {
				start := time.Now()
				out := p.invoke(raw)
				elapsed := time.Since(start)
				var res events.APIGatewayV2HTTPResponse
				if tc.status == 0 {
					var az events.APIGatewayV2CustomAuthorizerSimpleResponse
					if err := json.Unmarshal(out, &az); err != nil || !az.IsAuthorized {
						b.Fatalf("%s: got %s %v", tc.event, out, err)
					}
					return res, elapsed
				}
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
			platform := 0
			if tc.platform {
				platform = len(platformLines(b, requestID, perInvoke, memoryMB, 25))
			}
			b.ReportMetric(float64(platform), "platform-log-B")
			if tc.status != 0 {
				access := 0
				if !tc.noAccessLog {
					access = len(accessLogLine(b, format, ev, last, requestID, perInvoke)) + 1
				}
				b.ReportMetric(float64(access), "access-log-B")
				b.ReportMetric(float64(len(last.Body)), "body-B")
			}
		})
	}
}

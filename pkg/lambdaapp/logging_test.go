package lambdaapp_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"latchkey/pkg/httpapi/httpapitest"
	"latchkey/pkg/lambdaapp"
	"latchkey/pkg/lambdaapp/lambdaenv"
	"latchkey/pkg/lambdaapp/replay"
	"latchkey/pkg/mock"
)

// TestLogger_RequestLine: a function's request line, through the handler
// that adds API Gateway's request id to other lines, is the line slog's
// own handler writes: the same fields with the same values, the
// function's name and the event's request id among them.
func TestLogger_RequestLine(t *testing.T) {
	event, err := replay.LoadEvent("../../events/auth-verify.json")
	if err != nil {
		t.Fatal(err)
	}
	invoke := func(logger *slog.Logger) {
		t.Helper()
		e := newEnv(t)
		app, err := lambdaapp.New(context.Background(), replay.Config(lambdaapp.Auth, "latchkey"), lambdaapp.Deps{
			Store: e.Store, Keys: e.Keys, Secrets: e.Secrets, Now: mock.NewClock(time.Now()).Now, Logger: logger,
		})
		if err != nil {
			t.Fatal(err)
		}
		res, err := app.Lambda()(context.Background(), event)
		if err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("got %d %v: %s", res.StatusCode, err, res.Body)
		}
	}
	lastLine := func(logs *httpapitest.SyncBuffer) map[string]any {
		t.Helper()
		lines := logs.Lines()
		var line map[string]any
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &line); err != nil {
			t.Fatalf("log line %q: %v", lines[len(lines)-1], err)
		}
		if line["msg"] != "request" {
			t.Fatalf("the last line is not the request line: %v", line)
		}
		delete(line, "time")
		delete(line, "duration_ms")
		return line
	}

	var logs httpapitest.SyncBuffer
	invoke(lambdaenv.NewLogger(&logs, "auth"))
	var std httpapitest.SyncBuffer
	invoke(slog.New(slog.NewJSONHandler(&std, nil)).With("function", "auth"))
	got, want := lastLine(&logs), lastLine(&std)
	if len(got) != len(want) || got["request_id"] != event.RequestContext.RequestID || got["function"] != "auth" {
		t.Fatalf("request line: got %v, want %v with request_id %s", got, want, event.RequestContext.RequestID)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: got %v, want %v", k, got[k], v)
		}
	}
	if !regexp.MustCompile(`"duration_ms":[0-9.]+,`).MatchString(logs.String()) {
		t.Errorf("no duration_ms in %s", logs.String())
	}
}

// TestApp_SuccessLogSampled: the function's configuration reaches its
// handler: with SuccessLogEvery 10, the auth function logs the request
// line of one verify in 10 that succeeds, with sample_every, and of every
// request refused, through the Lambda entry point and the function's
// logger.
func TestApp_SuccessLogSampled(t *testing.T) {
	ok, err := replay.LoadEvent("../../events/auth-verify.json")
	if err != nil {
		t.Fatal(err)
	}
	refused, err := replay.LoadEvent("../../events/auth-verify-no-credential.json")
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t)
	cfg := replay.Config(lambdaapp.Auth, "latchkey")
	cfg.SuccessLogEvery = 10
	var logs httpapitest.SyncBuffer
	app, err := lambdaapp.New(context.Background(), cfg, lambdaapp.Deps{
		Store: e.Store, Keys: e.Keys, Secrets: e.Secrets, Now: mock.NewClock(time.Now()).Now, Logger: lambdaenv.NewLogger(&logs, "auth"),
	})
	if err != nil {
		t.Fatal(err)
	}
	logs.Reset()
	for range 30 {
		for ev, status := range map[*events.APIGatewayV2HTTPRequest]int{&ok: http.StatusOK, &refused: http.StatusUnauthorized} {
			res, err := app.Lambda()(context.Background(), *ev)
			if err != nil || res.StatusCode != status {
				t.Fatalf("%s: got %d %v, want %d", ev.RawPath, res.StatusCode, err, status)
			}
		}
	}
	lines := map[int]int{}
	for _, l := range logs.Lines() {
		var line struct {
			Msg         string `json:"msg"`
			Status      int    `json:"status"`
			SampleEvery int    `json:"sample_every"`
		}
		if err := json.Unmarshal([]byte(l), &line); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		if line.Msg != "request" {
			continue
		}
		lines[line.Status]++
		if want := map[int]int{http.StatusOK: 10}[line.Status]; line.SampleEvery != want {
			t.Errorf("sample_every %d, want %d: %s", line.SampleEvery, want, l)
		}
	}
	if lines[http.StatusOK] != 3 || lines[http.StatusUnauthorized] != 30 || len(lines) != 2 {
		t.Errorf("request lines by status: got %v, want 3 of 200 and 30 of 401", lines)
	}
}

package deploytest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"

	"latchkey/pkg/dynamostore"
	"latchkey/pkg/dynamostore/dynamotest"
	"latchkey/pkg/httpapi/httpapitest"
	"latchkey/pkg/lambdaapp"
	"latchkey/pkg/lambdaapp/replay"
)

// TestTemplate_StoreTimeout: the STORE_TIMEOUT the template sets leaves a
// function time to answer 503 before its own timeout when the table stalls.
// A request on a frozen table waits out the timeout of its own first call
// and, now and then, of the store work a function does on the request path
// (a due reload of the public keys, the writes after a secret rotation):
// three timeouts must fit.
func TestTemplate_StoreTimeout(t *testing.T) {
	tpl := loadTemplate(t)
	checked := 0
	// Every function the template gives a STORE_TIMEOUT (the Globals
	// give it to all): auth, organizations, users, the verify URL, the
	// authorizer and the rest, each parsed as its main parses it.
	for _, id := range tpl.functions() {
		getenv := tpl.getenv(t, tpl.functionEnv(t, id), nil)
		if getenv(lambdaapp.EnvStoreTimeout) == "" {
			continue
		}
		storeTimeout, err := dynamostore.ParseTimeout(getenv(lambdaapp.EnvStoreTimeout))
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		timeout := path(map[string]any(tpl), "Resources", id, "Properties", "Timeout")
		if timeout == nil {
			timeout = path(map[string]any(tpl), "Globals", "Function", "Timeout")
		}
		secs, err := strconv.Atoi(fmt.Sprint(timeout))
		if err != nil {
			t.Fatalf("%s: Timeout %v is not a number of seconds", id, timeout)
		}
		if limit := time.Duration(secs) * time.Second; 3*storeTimeout >= limit {
			t.Errorf("%s: STORE_TIMEOUT %v: three of them reach the function's Timeout %v", id, storeTimeout, limit)
		}
		checked++
	}
	for _, id := range []string{"AuthFunction", "OrganizationsFunction", "UsersFunction", "VerifyFunction", "AuthorizerFunction"} {
		if tpl.getenv(t, tpl.functionEnv(t, id), nil)(lambdaapp.EnvStoreTimeout) == "" {
			t.Errorf("%s reads the table but has no STORE_TIMEOUT", id)
		}
	}
	if checked < 5 {
		t.Errorf("checked %d functions, want every one that reads the table", checked)
	}
}

// TestLambda_StoreStalls builds the users function with lambdaapp.FromEnv
// and NewVerifying, as its main does, configured by the environment (STORE_TIMEOUT=1s) on a
// DynamoDB Local of the test's own and moto, and feeds it API Gateway
// events while that DynamoDB Local is stopped with SIGSTOP: a read and a
// write are answered 503 unavailable with Retry-After in about the store
// timeout, not at the invocation's deadline; after SIGCONT they are
// answered as before; and a table that disappears is 503 with one log line
// saying so.
func TestLambda_StoreStalls(t *testing.T) {
	p := dynamotest.StartProcess(t)
	env := map[string]string{}
	for _, kv := range newLiveAt(t, p.Endpoint, p.Client(), true).env(lambdaapp.Users) {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	const timeout = time.Second
	env[lambdaapp.EnvStoreTimeout] = timeout.String()
	logs := &httpapitest.SyncBuffer{}
	cfg, deps, err := lambdaapp.FromEnv(lambdaapp.Users, func(k string) string { return env[k] }, slog.New(slog.NewJSONHandler(logs, nil)))
	if err != nil {
		t.Fatalf("init: %v", err)
	}
	app, err := lambdaapp.NewVerifying(t.Context(), cfg, deps)
	if err != nil {
		t.Fatalf("init: %v", err)
	}
	serve := httpadapter.NewV2(app).ProxyWithContext
	// h is the handler as Lambda runs it: the event decoded into the type
	// the handler takes.
	h := func(ctx context.Context, ev []byte) (any, error) {
		var req events.APIGatewayV2HTTPRequest
		if err := json.Unmarshal(ev, &req); err != nil {
			return nil, err
		}
		return serve(ctx, req)
	}
	invoke := func(name string) (events.APIGatewayV2HTTPResponse, time.Duration) {
		t.Helper()
		if _, err := replay.LoadEvent(filepath.Join(eventsDir, name)); err != nil {
			t.Fatal(err) // not an HTTP API payload 2.0 event
		}
		ev, err := os.ReadFile(filepath.Join(eventsDir, name))
		if err != nil {
			t.Fatal(err)
		}
		// The deadline Lambda gives an invocation: the template's 10 s.
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		start := time.Now()
		out, err := h(ctx, ev)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		res, ok := out.(events.APIGatewayV2HTTPResponse)
		if !ok {
			t.Fatalf("%s: answered %T, want an API Gateway response", name, out)
		}
		return res, time.Since(start)
	}
	wantUnavailable := func(frozen bool, name string) {
		t.Helper()
		res, elapsed := invoke(name)
		hdr := responseHeader(res)
		var p struct{ Code string }
		json.Unmarshal(responseBody(t, res), &p)
		if res.StatusCode != http.StatusServiceUnavailable || p.Code != "unavailable" ||
			hdr.Get("Content-Type") != "application/problem+json" || hdr.Get("Retry-After") != "2" {
			t.Errorf("%s: got %d %s (Content-Type %q, Retry-After %q), want 503 unavailable problem+json with Retry-After 2",
				name, res.StatusCode, responseBody(t, res), hdr.Get("Content-Type"), hdr.Get("Retry-After"))
		}
		// A frozen store: after its timeout, never before. The error line
		// checked below tells the store's timeout from the invocation's
		// 10 s deadline (which logs no error), with no upper bound on the
		// time for a loaded machine to break.
		if frozen && elapsed < timeout {
			t.Errorf("%s: answered after %v, before the store timeout %v", name, elapsed, timeout)
		}
	}
	errorLines := func() (lines []string) {
		for _, l := range logs.Lines() {
			if strings.Contains(l, `"level":"ERROR"`) {
				lines = append(lines, l)
			}
		}
		return lines
	}

	if res, _ := invoke("users-get.json"); res.StatusCode != http.StatusOK {
		t.Fatalf("before the freeze: got %d %s, want 200", res.StatusCode, responseBody(t, res))
	}

	p.Freeze(t)
	thawed := false
	defer func() {
		if !thawed {
			p.Thaw(t)
		}
	}()
	logs.Reset()
	wantUnavailable(true, "users-get.json")
	wantUnavailable(true, "users-create.json")
	if got := errorLines(); len(got) != 2 || !strings.Contains(got[0], "no answer from DynamoDB within 1s") {
		t.Errorf("want one error line per failed invocation, saying DynamoDB did not answer; got:\n%s", strings.Join(got, "\n"))
	}

	p.Thaw(t)
	thawed = true
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, _ := invoke("users-get.json")
		if res.StatusCode == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("30 s after SIGCONT: got %d %s, want 200", res.StatusCode, responseBody(t, res))
		}
		time.Sleep(100 * time.Millisecond)
	}

	if _, err := p.Client().DeleteTable(t.Context(), &dynamodb.DeleteTableInput{TableName: aws.String(env[lambdaapp.EnvTableName])}); err != nil {
		t.Fatalf("DeleteTable: %v", err)
	}
	logs.Reset()
	wantUnavailable(false, "users-get.json")
	if got := errorLines(); len(got) != 1 || !strings.Contains(got[0], "table "+env[lambdaapp.EnvTableName]+" does not exist") {
		t.Errorf("want one error line saying the table does not exist; got:\n%s", strings.Join(got, "\n"))
	}
}

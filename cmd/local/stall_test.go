package main_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"latchkey/pkg/dynamostore/dynamotest"
)

// TestServer_StoreStalls runs the built server on a DynamoDB Local of the
// test's own with STORE_TIMEOUT=1s, and stops that DynamoDB Local with
// SIGSTOP: reads and writes are answered 503 unavailable with Retry-After
// within about the timeout (before, reads hung and writes ended in an empty
// reply after the 30 s write timeout), a client that gives up is not logged
// as an outage, SIGCONT brings the answers back, and a DynamoDB Local
// restarted in memory (the table gone) is 503 with one log line saying so.
func TestServer_StoreStalls(t *testing.T) {
	p := dynamotest.StartProcess(t)
	admin := "lk_test_" + strings.Repeat("s", 40)
	const timeout = time.Second
	s := start(t, t.TempDir(), "ADMIN_API_KEY="+admin, "DYNAMODB_ENDPOINT="+p.Endpoint, "STORE_TIMEOUT="+timeout.String())
	// A generous client timeout: well above the store's, well below the
	// server's 30 s write timeout.
	client := &http.Client{Timeout: 10 * time.Second}
	requests := 0 // sent so far
	do := func(method, path, body string) (*http.Response, map[string]any, time.Duration) {
		t.Helper()
		req, err := http.NewRequest(method, s.base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+admin)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		start := time.Now()
		requests++
		res, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v (after %v)", method, path, err, time.Since(start).Round(time.Millisecond))
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		var out map[string]any
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatalf("%s %s: body is not JSON: %q", method, path, b)
		}
		return res, out, time.Since(start)
	}
	wantUnavailable := func(frozen bool, method, path, body string) {
		t.Helper()
		res, p, elapsed := do(method, path, body)
		if res.StatusCode != http.StatusServiceUnavailable || p["code"] != "unavailable" ||
			res.Header.Get("Content-Type") != "application/problem+json" || res.Header.Get("Retry-After") != "2" {
			t.Errorf("%s %s: got %d %v (Content-Type %q, Retry-After %q), want 503 unavailable problem+json with Retry-After 2",
				method, path, res.StatusCode, p, res.Header.Get("Content-Type"), res.Header.Get("Retry-After"))
		}
		// A frozen store: after the store's timeout, never before, which
		// shows it is the timeout that answered. No upper bound but the
		// client's 10 s, which a loaded machine could not break without a
		// bug.
		if frozen && elapsed < timeout {
			t.Errorf("%s %s: answered after %v, before the store timeout %v", method, path, elapsed, timeout)
		}
	}
	// The log arrives through a pipe, a little after the response: wait
	// for the access line of every request made so far, which the server
	// writes after any error line of the same request.
	logged := func(substr string) (lines []string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			var access int
			lines = nil
			for _, l := range strings.Split(s.stderr.String(), "\n") {
				if strings.Contains(l, `"msg":"request"`) {
					access++
				}
				if strings.Contains(l, substr) {
					lines = append(lines, l)
				}
			}
			if access >= requests {
				return lines
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d access log lines within 30 s, want %d:\n%s", access, requests, s.stderr.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	errorLines := func() []string { return logged(`"level":"ERROR"`) }

	if res, body, _ := do("GET", "/v1/users", ""); res.StatusCode != http.StatusOK {
		t.Fatalf("before the freeze: got %d %v, want 200", res.StatusCode, body)
	}

	p.Freeze(t)
	thawed := false
	defer func() {
		if !thawed {
			p.Thaw(t)
		}
	}()
	wantUnavailable(true, "GET", "/v1/users", "")
	wantUnavailable(true, "POST", "/v1/users", `{"email":"ada@example.com","name":"Ada"}`)
	if got := errorLines(); len(got) != 2 || !strings.Contains(got[0], "no answer from DynamoDB within 1s") {
		t.Errorf("want one error line per failed request, saying DynamoDB did not answer; got:\n%s", strings.Join(got, "\n"))
	}
	// A client that gives up before the store's timeout: its request is
	// logged as abandoned, not as a failure of the store.
	impatient := &http.Client{Timeout: 200 * time.Millisecond}
	req, _ := http.NewRequest("GET", s.base+"/v1/users", nil)
	req.Header.Set("Authorization", "Bearer "+admin)
	requests++
	if res, err := impatient.Do(req); err == nil {
		res.Body.Close()
		t.Fatalf("the impatient client got an answer (%d) from a frozen store", res.StatusCode)
	}
	if got := logged("request abandoned by the client"); len(got) != 1 {
		t.Errorf("want the impatient client's request logged once as abandoned; got:\n%s", strings.Join(got, "\n"))
	}
	if got := errorLines(); len(got) != 2 {
		t.Errorf("the abandoned request was logged as an error:\n%s", strings.Join(got, "\n"))
	}

	p.Thaw(t)
	thawed = true
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, body, _ := do("GET", "/v1/users", "")
		if res.StatusCode == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("30 s after SIGCONT: got %d %v, want 200", res.StatusCode, body)
		}
		time.Sleep(100 * time.Millisecond)
	}

	p.Restart(t)
	before := len(errorLines())
	wantUnavailable(false, "GET", "/v1/users", "")
	got := errorLines()[before:]
	if len(got) != 1 || !strings.Contains(got[0], "does not exist (deleted, or DynamoDB Local restarted in memory)") {
		t.Errorf("want one error line saying the table does not exist; got:\n%s", strings.Join(got, "\n"))
	}
}

// TestServer_BadStoreTimeout: a STORE_TIMEOUT outside its bounds stops the
// server before it listens, with one log line naming the variable.
func TestServer_BadStoreTimeout(t *testing.T) {
	cmd := exec.Command(binary)
	cmd.Env = []string{"ADDR=127.0.0.1:0", "DATA_DIR=" + t.TempDir(), "STORE_TIMEOUT=30s"}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != 1 {
		t.Fatalf("exit: got %v, want status 1", err)
	}
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "STORE_TIMEOUT") {
		t.Fatalf("want one log line naming STORE_TIMEOUT; got:\n%s", stderr.String())
	}
}

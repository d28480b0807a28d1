package main_test

// These tests run the built server as a user does: a process with an
// environment, a data directory, signals and a terminal.

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"latchkey/pkg/httpapi"
	"latchkey/pkg/httpapi/httpapitest"
	"latchkey/pkg/version"
)

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "latchkey-local")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "latchkey")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build ./cmd/local: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// server is one running process of the local server.
type server struct {
	cmd    *exec.Cmd
	base   string // http://127.0.0.1:PORT
	stdout *httpapitest.SyncBuffer
	stderr *httpapitest.SyncBuffer
	done   chan error
}

// start runs the server on a free port with env added to a minimal
// environment, and waits until it listens.
func start(t *testing.T, dataDir string, env ...string) *server {
	t.Helper()
	return startCmd(t, exec.Command(binary), dataDir, env...)
}

// withFileLimit is a command that runs the server with at most n open
// files (soft and hard limit, so that Go cannot raise it).
func withFileLimit(n int) *exec.Cmd {
	return exec.Command("/bin/sh", "-c", fmt.Sprintf(`ulimit -n %d && exec "$0"`, n), binary)
}

// startCmd is start with a command of the caller's, which runs the server.
func startCmd(t *testing.T, cmd *exec.Cmd, dataDir string, env ...string) *server {
	t.Helper()
	s := &server{stdout: &httpapitest.SyncBuffer{}, stderr: &httpapitest.SyncBuffer{}, done: make(chan error, 1)}
	s.cmd = cmd
	s.cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "ADDR=127.0.0.1:0", "DATA_DIR=" + dataDir}, env...)
	s.cmd.Stdout, s.cmd.Stderr = s.stdout, s.stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.done <- s.cmd.Wait() }()
	t.Cleanup(func() {
		s.cmd.Process.Kill()
		<-s.done
	})
	line := s.waitLog(t, "latchkey listening")
	var l struct{ Addr, Release string }
	json.Unmarshal([]byte(line), &l)
	if !strings.HasPrefix(l.Addr, "http://127.0.0.1:") {
		t.Fatalf("listening line has no loopback address: %s", line)
	}
	if l.Release != version.Version {
		t.Fatalf("listening line: release %q, want %q: %s", l.Release, version.Version, line)
	}
	s.base = l.Addr
	return s
}

// waitLog returns the first log line containing msg, failing the test if
// the process exits first or nothing comes within 30 s (a generous bound for
// a loaded machine; the wait normally ends within milliseconds).
func (s *server) waitLog(t *testing.T, msg string) string {
	t.Helper()
	find := func() string {
		for _, line := range strings.Split(s.stderr.String(), "\n") {
			if strings.Contains(line, msg) {
				return line
			}
		}
		return ""
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if line := find(); line != "" {
			return line
		}
		select {
		case err := <-s.done:
			s.done <- err
			if line := find(); line != "" { // logged just before exiting
				return line
			}
			t.Fatalf("server exited (%v) before logging %q:\n%s", err, msg, s.stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatalf("no %q in the log within 30 s:\n%s", msg, s.stderr.String())
	return ""
}

// stop sends SIGTERM and returns the process's exit error.
func (s *server) stop(t *testing.T) error {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-s.done:
		s.done <- err
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("server still running 30 s after SIGTERM")
		return nil
	}
}

func (s *server) call(t *testing.T, method, path, credential, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, s.base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if credential != "" {
		req.Header.Set("Authorization", "Bearer "+credential)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out map[string]any
	if b, _ := io.ReadAll(res.Body); len(b) > 0 {
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatalf("%s %s: body is not JSON: %s", method, path, b)
		}
	}
	return res.StatusCode, out
}

// form posts an empty form to path, with the credential (if any) as a
// Bearer credential: an OAuth request.
func (s *server) form(t *testing.T, method, path, credential, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, s.base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if credential != "" {
		req.Header.Set("Authorization", "Bearer "+credential)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out map[string]any
	json.NewDecoder(res.Body).Decode(&out)
	return res.StatusCode, out
}

var printedKey = regexp.MustCompile(`(?m)^\s+(lk_[a-z2-7]{52})$`)

// TestServer_FirstStartAndRestart: the first start creates the data
// directory and prints a generated admin key once; a restart prints nothing,
// and the key, an access token and the data from before all still work.
func TestServer_FirstStartAndRestart(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	// The default issuer names the port, which ADDR=…:0 changes at every
	// start; a fixed one, as a real installation has, keeps tokens valid.
	const issuer = "ISSUER=http://latchkey.localhost:8080"
	first := start(t, dataDir, issuer)
	admin := adminKey(t, first)

	status, tok := first.call(t, "POST", "/v1/auth/token", admin, `{"scopes":["read:users"],"expires_in":"1h"}`)
	if status != http.StatusCreated {
		t.Fatalf("issue token: %d %v", status, tok)
	}
	token := tok["access_token"].(string)
	status, user := first.call(t, "POST", "/v1/users", admin, `{"email":"ada@example.com","name":"Ada"}`)
	if status != http.StatusCreated {
		t.Fatalf("create user: %d %v", status, user)
	}
	if err := first.stop(t); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, first.stderr.String())
	}

	// Secrets and database: owner-only, so another local user cannot read them.
	if fi, err := os.Stat(dataDir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("data directory: %v, mode %v; want 0700", err, fi.Mode().Perm())
	}
	for _, name := range []string{"latchkey.db", "signing-key.pem", "cursor.key"} {
		fi, err := os.Stat(filepath.Join(dataDir, name))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", name, fi.Mode().Perm())
		}
	}

	second := start(t, dataDir, issuer)
	if strings.Contains(second.stdout.String(), "lk_") {
		t.Fatalf("restart printed a key again:\n%s", second.stdout.String())
	}
	status, v := second.call(t, "GET", "/v1/auth/verify", token, "")
	if status != http.StatusOK || v["valid"] != true {
		t.Fatalf("token from before the restart: %d %v", status, v)
	}
	if status, got := second.call(t, "GET", "/v1/users/"+user["id"].(string), token, ""); status != http.StatusOK || got["email"] != "ada@example.com" {
		t.Fatalf("user from before the restart, read with the old token: %d %v", status, got)
	}
	if err := second.stop(t); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}

	// One JSON line per request with the documented fields, and never a
	// credential, in either run's output.
	requests := 0
	for _, s := range []*server{first, second} {
		out := s.stdout.String() + s.stderr.String()
		if strings.Contains(s.stderr.String(), admin) || strings.Contains(out, token) {
			t.Errorf("a credential reached the output:\n%s", out)
		}
		sc := bufio.NewScanner(strings.NewReader(s.stderr.String()))
		for sc.Scan() {
			var l map[string]any
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				t.Errorf("log line is not JSON: %s", sc.Text())
				continue
			}
			if l["msg"] != "request" {
				continue
			}
			requests++
			for _, field := range []string{"method", "route", "status", "duration_ms", "request_id"} {
				if _, ok := l[field]; !ok {
					t.Errorf("request log line without %s: %s", field, sc.Text())
				}
			}
		}
	}
	if requests != 4 {
		t.Errorf("request log lines: got %d, want 4 (one per request)", requests)
	}
}

// TestServer_GracefulShutdown: a request whose body is being read when
// SIGTERM arrives is still answered, the process then exits 0, and new
// connections are refused meanwhile.
func TestServer_GracefulShutdown(t *testing.T) {
	admin := "lk_test_" + strings.Repeat("a", 40)
	s := start(t, t.TempDir(), "ADMIN_API_KEY="+admin)

	body := `{"email":"grace@example.com","name":"Grace Hopper"}`
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// net/http sends 100 Continue when the handler starts reading the body:
	// from then on the request is certainly in flight, not in a backlog.
	fmt.Fprintf(conn, "POST /v1/users HTTP/1.1\r\nHost: local\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/json\r\nContent-Length: %d\r\nExpect: 100-continue\r\n\r\n", admin, len(body))
	responses := bufio.NewReader(conn)
	if res, err := http.ReadResponse(responses, nil); err != nil || res.StatusCode != http.StatusContinue {
		t.Fatalf("want 100 Continue, got %v %v", res, err)
	}

	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	s.waitLog(t, "shutting down")
	if c, err := net.DialTimeout("tcp", strings.TrimPrefix(s.base, "http://"), 5*time.Second); err == nil {
		c.Close()
		t.Error("a new connection was accepted after shutdown began")
	}

	io.WriteString(conn, body)
	res, err := http.ReadResponse(responses, nil)
	if err != nil {
		t.Fatalf("in-flight request got no response: %v\n%s", err, s.stderr.String())
	}
	res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("in-flight request: got %d, want 201", res.StatusCode)
	}
	select {
	case err := <-s.done:
		s.done <- err
		if err != nil {
			t.Fatalf("exit: %v\n%s", err, s.stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("server still running 30 s after its last request")
	}
}

// TestServer_ServesEveryRoute: the local server mounts every group, so each
// route of the API answers as a protected (401) or public (200) route, not
// as an unknown path (404); template.yaml is held to the same list by
// pkg/deploytest.
func TestServer_ServesEveryRoute(t *testing.T) {
	s := start(t, t.TempDir(), "ADMIN_API_KEY=lk_test_"+strings.Repeat("b", 40))
	fill := strings.NewReplacer("{id}", "x", "{user_id}", "y")
	for _, r := range httpapi.Routes() {
		want := http.StatusUnauthorized
		if r.Public() {
			want = http.StatusOK
		}
		call := s.call
		if r.OAuth() {
			call = s.form // an OAuth client without client authentication
		}
		status, body := call(t, r.Method, fill.Replace(r.Path), "", "")
		if r.Public() && strings.Contains(r.Path, "{id}") {
			// A public resource by id (a status list): served, and there
			// is none by that id.
			if status != http.StatusNotFound || body["detail"] != "status list not found" {
				t.Errorf("%s %s: got %d %v, want 404, status list not found", r.Method, r.Path, status, body)
			}
			continue
		}
		if status != want {
			t.Errorf("%s %s: got %d %v, want %d", r.Method, r.Path, status, body, want)
		}
	}
	if status, _ := s.call(t, "GET", "/v1/nothing-here", "", ""); status != http.StatusNotFound {
		t.Errorf("unknown path: got %d, want 404", status)
	}
}

// TestServer_Issuer: by default the issuer is the URL the server is
// reached at, with the port it got; the metadata names it, every endpoint
// below it, and the tokens carry it; ISSUER overrides it.
func TestServer_Issuer(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  []string
		want func(s *server) string
	}{
		{"Default", nil, func(s *server) string { return s.base }},
		{"Configured", []string{"ISSUER=https://auth.example.com"}, func(*server) string { return "https://auth.example.com" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			admin := "lk_test_" + strings.Repeat("c", 40)
			s := start(t, t.TempDir(), append([]string{"ADMIN_API_KEY=" + admin}, tc.env...)...)
			want := tc.want(s)
			status, m := s.call(t, "GET", "/.well-known/oauth-authorization-server", "", "")
			if status != http.StatusOK || m["issuer"] != want || m["token_endpoint"] != want+"/oauth2/token" || m["jwks_uri"] != want+"/.well-known/jwks.json" {
				t.Fatalf("metadata: %d %v, want issuer %s", status, m, want)
			}
			status, tok := s.call(t, "POST", "/v1/auth/token", admin, `{"scopes":["read:users"]}`)
			if status != http.StatusCreated || tok["audience"] != want {
				t.Fatalf("token: %d %v, want audience %s", status, tok, want)
			}
		})
	}
}

// TestServer_InlineRevocation: the tokens the server issues carry the
// claim irv by default and not with INLINE_REVOCATION=false; either way
// a revoked token verifies as revoked.
func TestServer_InlineRevocation(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  []string
		irv  bool
	}{{"Default", nil, true}, {"True", []string{"INLINE_REVOCATION=true"}, true}, {"False", []string{"INLINE_REVOCATION=false"}, false}} {
		t.Run(tc.name, func(t *testing.T) {
			admin := "lk_test_" + strings.Repeat("i", 40)
			s := start(t, t.TempDir(), append([]string{"ADMIN_API_KEY=" + admin}, tc.env...)...)
			status, tok := s.call(t, "POST", "/v1/auth/token", admin, `{"scopes":["read:users"]}`)
			token, _ := tok["access_token"].(string)
			parts := strings.Split(token, ".")
			if status != http.StatusCreated || len(parts) != 3 {
				t.Fatalf("token: %d %v", status, tok)
			}
			raw, err := base64.RawURLEncoding.DecodeString(parts[1])
			if err != nil {
				t.Fatal(err)
			}
			var claims map[string]any
			if err := json.Unmarshal(raw, &claims); err != nil {
				t.Fatal(err)
			}
			if _, irv := claims["irv"]; irv != tc.irv {
				t.Errorf("payload %s: irv present %v, want %v", raw, irv, tc.irv)
			}
			body, _ := json.Marshal(map[string]string{"token": token})
			if status, r := s.call(t, "POST", "/v1/auth/revoke", admin, string(body)); status != http.StatusOK {
				t.Fatalf("revoke: %d %v", status, r)
			}
			if status, v := s.call(t, "GET", "/v1/auth/verify", token, ""); status != http.StatusOK || v["valid"] != false || v["reason"] != "revoked" {
				t.Fatalf("verify of the revoked token: %d %v, want valid false, reason revoked", status, v)
			}
		})
	}
}

// TestServer_BadConfiguration: a configuration value the server cannot
// use stops it before it listens, with one log line naming the variable
// (and never the value of a secret one).
func TestServer_BadConfiguration(t *testing.T) {
	for _, tc := range []struct {
		name string
		cmd  *exec.Cmd
		env  string // NAME=value
	}{
		{"ShortAdminKey", exec.Command(binary), "ADMIN_API_KEY=short"},
		{"MaxConnectionsZero", exec.Command(binary), "MAX_CONNECTIONS=0"},
		{"MaxConnectionsNotANumber", exec.Command(binary), "MAX_CONNECTIONS=many"},
		// 100 connections and the reserve do not fit under 128 open files:
		// the cap would not keep accept from failing.
		{"MaxConnectionsOverFileLimit", withFileLimit(128), "MAX_CONNECTIONS=100"},
		{"IdleTimeoutNegative", exec.Command(binary), "IDLE_TIMEOUT=-1s"},
		{"ReadHeaderTimeoutNoUnit", exec.Command(binary), "READ_HEADER_TIMEOUT=5"},
		{"IssuerNotABaseURL", exec.Command(binary), "ISSUER=latchkey"},
		{"InlineRevocationNotABoolean", exec.Command(binary), "INLINE_REVOCATION=yes"},
		{"CheckDataFileNotABoolean", exec.Command(binary), "CHECK_DATA_FILE=no"},
		{"UsageFlushOverTenSeconds", exec.Command(binary), "USAGE_FLUSH_INTERVAL=11s"},
		{"UsageRetentionUnderABucket", exec.Command(binary), "USAGE_RETENTION_HOUR=30m"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dataDir := filepath.Join(t.TempDir(), "data")
			stdout, stderr, err := runToExit(t, tc.cmd, dataDir, tc.env)
			if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != 1 {
				t.Fatalf("exit: got %v, want status 1", err)
			}
			name, value, _ := strings.Cut(tc.env, "=")
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			if len(lines) != 1 || !strings.Contains(lines[0], name) {
				t.Fatalf("want one log line naming %s; got:\n%s", name, stderr)
			}
			if name == "ADMIN_API_KEY" && strings.Contains(stderr, value) {
				t.Fatalf("the log shows the admin key's value:\n%s", stderr)
			}
			if stdout != "" {
				t.Fatalf("nothing should be printed to stdout: %s", stdout)
			}
			if _, err := os.Stat(dataDir); !os.IsNotExist(err) {
				t.Fatalf("data directory: %v; want none created", err)
			}
		})
	}
}

// runToExit runs cmd (the server, with env added to a minimal environment
// and to ADDR=127.0.0.1:0) until it exits, and returns its output and its
// exit error. stdout is cmd.Stdout's if the caller set one.
func runToExit(t *testing.T, cmd *exec.Cmd, dataDir string, env ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	if cmd.Stdout == nil {
		cmd.Stdout = &out
	}
	cmd.Stderr = &errOut
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "ADDR=127.0.0.1:0", "DATA_DIR=" + dataDir}, env...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("server still running after 30 s, want it to stop:\n%s", errOut.String())
	}
	return out.String(), errOut.String(), err
}

// adminKey returns the admin key a start printed, failing the test if it
// printed none.
func adminKey(t *testing.T, s *server) string {
	t.Helper()
	// The key is printed before the listening line, but to stdout, which
	// another goroutine copies: on a loaded machine it may arrive after
	// start has seen that line on stderr.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if m := printedKey.FindStringSubmatch(s.stdout.String()); m != nil {
			return m[1]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no admin key printed:\n%s", s.stdout.String())
		}
	}
}

// bootstrapKeys returns the ids of the bootstrap keys, listed with admin.
func bootstrapKeys(t *testing.T, s *server, admin string) []string {
	t.Helper()
	status, list := s.call(t, "GET", "/v1/api-keys?limit=100", admin, "")
	if status != http.StatusOK {
		t.Fatalf("list API keys with the admin key: %d %v", status, list)
	}
	var ids []string
	for _, k := range list["data"].([]any) {
		if k := k.(map[string]any); k["bootstrap"] == true {
			ids = append(ids, k["id"].(string))
		}
	}
	return ids
}

// TestServer_PortTaken: a first start whose port is taken stops (status 1,
// the address in its log line) before it creates or prints an admin key, so
// that the next start, on a free port, prints one, and that key works.
func TestServer_PortTaken(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	dataDir := filepath.Join(t.TempDir(), "data")
	stdout, stderr, err := runToExit(t, exec.Command(binary), dataDir, "ADDR="+taken.Addr().String())
	if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != 1 {
		t.Fatalf("exit: got %v, want status 1\n%s", err, stderr)
	}
	if stdout != "" {
		t.Fatalf("a start that cannot listen printed:\n%s", stdout)
	}
	if !strings.Contains(stderr, taken.Addr().String()) {
		t.Fatalf("the log does not name the taken address:\n%s", stderr)
	}

	s := start(t, dataDir)
	admin := adminKey(t, s)
	if ids := bootstrapKeys(t, s, admin); len(ids) != 1 {
		t.Fatalf("bootstrap keys: %v, want one", ids)
	}
}

// TestServer_DataDirInUse: a second server on the data directory of a
// running one stops (status 1), saying that another instance holds the
// store's file, and prints no admin key; the first one serves on.
func TestServer_DataDirInUse(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	admin := "lk_test_" + strings.Repeat("u", 40)
	first := start(t, dataDir, "ADMIN_API_KEY="+admin)
	stdout, stderr, err := runToExit(t, exec.Command(binary), dataDir, "ADMIN_API_KEY="+admin)
	if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != 1 {
		t.Fatalf("exit: got %v, want status 1\n%s", err, stderr)
	}
	if want := "another instance of the server holds " + filepath.Join(dataDir, "latchkey.db"); !strings.Contains(stderr, want) || stdout != "" {
		t.Fatalf("stdout %q, log:\n%s\nwant no output and a line saying %q", stdout, stderr, want)
	}
	if status, _ := first.call(t, "GET", "/v1/users", admin, ""); status != http.StatusOK {
		t.Fatalf("the first server: GET /v1/users got %d, want 200", status)
	}
}

// TestServer_AdminKeyNotShown: a first start that stores its generated key
// but dies printing it (here stdout is a pipe nobody reads: SIGPIPE) leaves
// the next start to replace that key and print the new one, which works;
// the unshown key is retired, and the start after prints nothing.
func TestServer_AdminKeyNotShown(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	cmd := exec.Command(binary)
	cmd.Stdout = w
	_, stderr, err := runToExit(t, cmd, dataDir)
	w.Close()
	if err == nil {
		t.Fatalf("a start whose stdout is a broken pipe exited 0:\n%s", stderr)
	}
	if strings.Contains(stderr, "latchkey listening") {
		t.Fatalf("a start that could not show its admin key went on to serve:\n%s", stderr)
	}

	second := start(t, dataDir)
	admin := adminKey(t, second)
	if ids := bootstrapKeys(t, second, admin); len(ids) != 1 {
		t.Fatalf("bootstrap keys: %v, want only the one just printed", ids)
	}
	if err := second.stop(t); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dataDir, "admin-key-pending")); !os.IsNotExist(err) {
		t.Fatalf("admin-key-pending after a key was shown: %v", err)
	}

	third := start(t, dataDir)
	if out := third.stdout.String(); out != "" {
		t.Fatalf("a start after the key was shown printed:\n%s", out)
	}
	if ids := bootstrapKeys(t, third, admin); len(ids) != 1 {
		t.Fatalf("bootstrap keys: %v, want one", ids)
	}
}

// TestServer_AdminKeyRecovery: a lost admin key is replaced by starting with
// ADMIN_API_KEY. The old key and the access tokens it issued stop working at
// once; the configured key stays the admin key when the variable is later
// unset, and no new key is generated.
func TestServer_AdminKeyRecovery(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	// A fixed issuer, as in TestServer_FirstStartAndRestart: with ADDR=…:0
	// the default one changes at every start, and the token below is to be
	// refused for its key, not for its issuer.
	const issuer = "ISSUER=http://latchkey.localhost:8080"
	first := start(t, dataDir, issuer)
	lost := adminKey(t, first)
	status, tok := first.call(t, "POST", "/v1/auth/token", lost, `{"scopes":["read:users"],"expires_in":"1h"}`)
	if status != http.StatusCreated {
		t.Fatalf("issue token: %d %v", status, tok)
	}
	if err := first.stop(t); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}

	configured := "lk_recovered_" + strings.Repeat("r", 40)
	second := start(t, dataDir, "ADMIN_API_KEY="+configured, issuer)
	if out := second.stdout.String(); out != "" {
		t.Fatalf("a start with ADMIN_API_KEY printed:\n%s", out)
	}
	if status, body := second.call(t, "GET", "/v1/api-keys", lost, ""); status != http.StatusUnauthorized {
		t.Fatalf("the replaced key: got %d %v, want 401", status, body)
	}
	if status, v := second.call(t, "GET", "/v1/auth/verify", tok["access_token"].(string), ""); status != http.StatusOK || v["valid"] != false || v["reason"] != "revoked" {
		t.Fatalf("a token of the replaced key: %d %v, want valid false, reason revoked", status, v)
	}
	if ids := bootstrapKeys(t, second, configured); len(ids) != 1 {
		t.Fatalf("bootstrap keys: %v, want only the configured one", ids)
	}
	if err := second.stop(t); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}

	third := start(t, dataDir)
	if out := third.stdout.String(); out != "" {
		t.Fatalf("a start after ADMIN_API_KEY was unset printed:\n%s", out)
	}
	if ids := bootstrapKeys(t, third, configured); len(ids) != 1 {
		t.Fatalf("bootstrap keys: %v, want only the configured one", ids)
	}
}

// TestServer_IdleConnectionsCannotLockOthersOut: one client holding more
// idle keep-alive connections than the server has file descriptors no
// longer makes accept fail for everyone: the server holds at most
// MAX_CONNECTIONS, closes the longest idle to make room, and another client
// is served at once.
func TestServer_IdleConnectionsCannotLockOthersOut(t *testing.T) {
	const fileLimit, maxConns, flood = 128, 16, 200
	s := startCmd(t, withFileLimit(fileLimit), t.TempDir(),
		"ADMIN_API_KEY=lk_test_"+strings.Repeat("c", 40), fmt.Sprintf("MAX_CONNECTIONS=%d", maxConns))
	addr := strings.TrimPrefix(s.base, "http://")

	conns := make([]net.Conn, 0, flood)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range flood {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		conns = append(conns, c)
		// One request each, then silence: a keep-alive connection, idle.
		io.WriteString(c, "GET /v1/auth/jwks HTTP/1.1\r\nHost: local\r\n\r\n")
	}

	client := &http.Client{Transport: &http.Transport{}, Timeout: 5 * time.Second}
	res, err := client.Get(s.base + "/v1/auth/jwks")
	if err != nil {
		t.Fatalf("another client, after %d idle connections: %v\n%s", flood, err, s.stderr.String())
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("another client: got %d, want 200", res.StatusCode)
	}

	// The server holds no more than MAX_CONNECTIONS connections: once the
	// client's is closed, any flood connection still queued is accepted,
	// and of the flood, at most MAX_CONNECTIONS are left open. The server
	// closes the others as it accepts the queue, which takes a while on a
	// loaded machine: wait for it (not a fixed second), bounded by 30 s.
	client.CloseIdleConnections()
	var closed atomic.Int32
	for _, c := range conns {
		go func() {
			io.Copy(io.Discard, c) // until the server closes c, or the deferred Close
			closed.Add(1)
		}()
	}
	want := int32(flood - maxConns)
	for deadline := time.Now().Add(30 * time.Second); closed.Load() < want; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("flood connections closed by the server after 30 s: %d, want at least %d (at most MAX_CONNECTIONS, %d, left open)", closed.Load(), want, maxConns)
		}
	}
}

// TestServer_ConnectionTimeouts: the server closes a keep-alive connection
// idle for IDLE_TIMEOUT, and one that sends no request within
// READ_HEADER_TIMEOUT, so neither holds its place for long.
//
// Each is told from its default by a bound a loaded machine cannot break:
// an idle connection is closed long before the 60 s default (within 30 s,
// for 300 ms), and a silent one not before READ_HEADER_TIMEOUT, set above
// the 5 s default (a slow machine closes it later, never sooner).
func TestServer_ConnectionTimeouts(t *testing.T) {
	const idle, readHeader, bound = 300 * time.Millisecond, 8 * time.Second, 30 * time.Second
	s := start(t, t.TempDir(), "ADMIN_API_KEY=lk_test_"+strings.Repeat("d", 40),
		"IDLE_TIMEOUT="+idle.String(), "READ_HEADER_TIMEOUT="+readHeader.String())
	addr := strings.TrimPrefix(s.base, "http://")

	for _, tc := range []struct {
		name, request string
		timeout       time.Duration
	}{
		{"Idle", "GET /v1/auth/jwks HTTP/1.1\r\nHost: local\r\n\r\n", idle},
		{"Silent", "", readHeader},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// Before the dial: the server's clock starts when it accepts,
			// which can come before Dial returns here.
			begin := time.Now()
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			io.WriteString(c, tc.request)
			c.SetReadDeadline(begin.Add(bound))
			if _, err := io.Copy(io.Discard, c); err != nil {
				t.Fatalf("connection still open after %v: %v", time.Since(begin), err)
			}
			if took := time.Since(begin); took < tc.timeout {
				t.Errorf("closed after %v, before the timeout of %v", took, tc.timeout)
			}
		})
	}
}

// TestServer_UsageFlushedOnShutdown: the counts of a server stopped
// within its flush interval are written on the way out, so the next start
// reads every verification and token of the last.
func TestServer_UsageFlushedOnShutdown(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	const issuer, flush = "ISSUER=http://latchkey.localhost:8080", "USAGE_FLUSH_INTERVAL=10s"
	first := start(t, dataDir, issuer, flush)
	admin := adminKey(t, first)
	status, tok := first.call(t, "POST", "/v1/auth/token", admin, `{"scopes":["read:users"],"expires_in":"1h"}`)
	if status != http.StatusCreated {
		t.Fatalf("issue token: %d %v", status, tok)
	}
	var keyID string
	for range 3 {
		status, v := first.call(t, "GET", "/v1/auth/verify", tok["access_token"].(string), "")
		if status != http.StatusOK || v["valid"] != true {
			t.Fatalf("verify: %d %v", status, v)
		}
		keyID, _ = v["key_id"].(string)
	}
	if err := first.stop(t); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, first.stderr.String())
	}
	second := start(t, dataDir, issuer, flush)
	status, got := second.call(t, "GET", "/v1/api-keys/"+keyID+"/usage?interval=minute", admin, "")
	if status != http.StatusOK {
		t.Fatalf("usage: %d %v", status, got)
	}
	var valid, issued float64
	for _, b := range got["data"].([]any) {
		b := b.(map[string]any)
		v, _ := b["verifications"].(map[string]any)["valid"].(float64)
		valid += v
		issued += b["tokens_issued"].(float64)
	}
	if valid != 3 || issued != 1 {
		t.Errorf("usage after a restart: got %v valid, %v tokens issued; want 3 and 1 (%v)", valid, issued, got)
	}
	if err := second.stop(t); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
}

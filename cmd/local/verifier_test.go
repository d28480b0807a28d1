package main_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2/clientcredentials"
)

// ordersMain returns the Go example of docs/protect-your-api.md: a
// service outside this repository that protects one handler with the
// verifier module, in the five lines from verifier.New to http.Handle.
// ONLINE=1 selects the online mode.
func ordersMain(t *testing.T) []byte {
	t.Helper()
	doc, err := os.ReadFile("../../docs/protect-your-api.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(doc), "\n```go\n")
	block, _, ok2 := strings.Cut(block, "\n```\n")
	if !ok || !ok2 {
		t.Fatal("docs/protect-your-api.md has no go block")
	}
	return []byte(block + "\n")
}

// buildOrders writes ordersMain as a module of its own in a directory
// outside the checkout, requiring latchkey.dev/verifier through a replace
// that points at this checkout's verifier/, as a user's module would
// before the library is published, and builds it with the go command.
func buildOrders(t *testing.T) string {
	t.Helper()
	lib, err := filepath.Abs("../../verifier")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if strings.HasPrefix(dir, filepath.Dir(lib)+string(filepath.Separator)) {
		t.Fatalf("the throwaway module's directory %s is inside the checkout", dir)
	}
	gomod := "module example.com/orders\n\ngo 1.24\n\nrequire latchkey.dev/verifier v0.0.0\n\nreplace latchkey.dev/verifier => " + lib + "\n"
	// The library's go.sum holds its one dependency's hashes: the build
	// then needs no checksum database, only the module cache or proxy.
	sum, err := os.ReadFile(filepath.Join(lib, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string][]byte{"go.mod": []byte(gomod), "go.sum": sum, "main.go": ordersMain(t)} {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "orders")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" -mod=mod"), "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build of a module outside the tree that imports latchkey.dev/verifier: %v\n%s", err, out)
	}
	// What the module needs: the library and golang-jwt, nothing of AWS.
	list := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".")
	list.Dir, list.Env = dir, cmd.Env
	out, err := list.Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep != "latchkey.dev/verifier" && dep != "github.com/golang-jwt/jwt/v5" && dep != "example.com/orders" {
			t.Errorf("the orders service links %s: the library should bring in nothing but golang-jwt", dep)
		}
	}
	return bin
}

// startOrders runs the built service against the issuer and returns its
// base URL.
func startOrders(t *testing.T, bin, issuer string, env ...string) string {
	t.Helper()
	cmd := exec.Command(bin)
	cmd.Env = append([]string{"ISSUER=" + issuer}, env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(stdout).ReadString('\n')
		line <- s
		io.Copy(io.Discard, stdout)
	}()
	select {
	case s := <-line:
		base, ok := strings.CutPrefix(strings.TrimSpace(s), "listening ")
		if !ok {
			t.Fatalf("the orders service printed %q", s)
		}
		return base
	case <-time.After(30 * time.Second):
		t.Fatal("the orders service did not listen within 30 s")
		return ""
	}
}

// getOrders calls GET /orders with an Authorization header (none if
// empty) and returns the status, the WWW-Authenticate header and the body.
func getOrders(t *testing.T, base, auth string) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/orders", nil)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header.Get("WWW-Authenticate"), string(body)
}

// tokenFor obtains a token with the client credentials of a new key
// holding scopes, for audience ("" for Latchkey's own).
func tokenFor(t *testing.T, s *server, admin, audience string, scopes ...string) (string, string) {
	t.Helper()
	id, secret := clientKey(t, s, admin, scopes...)
	cfg := clientcredentials.Config{ClientID: id, ClientSecret: secret, TokenURL: discover(t, s.base)["token_endpoint"].(string)}
	if audience != "" {
		cfg.EndpointParams = url.Values{"audience": {audience}}
	}
	tok, err := cfg.Token(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return tok.AccessToken, id
}

// hasStatusClaim reports whether an access token carries a status claim
// (draft-ietf-oauth-status-list), read without verifying it.
func hasStatusClaim(t *testing.T, tok string) bool {
	t.Helper()
	parts := strings.Split(tok, ".")
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Status *struct {
			StatusList *struct{ URI string } `json:"status_list"`
		} `json:"status"`
	}
	if err := json.Unmarshal(payload, &c); err != nil {
		t.Fatal(err)
	}
	return c.Status != nil && c.Status.StatusList != nil
}

// TestVerifierModule: the verifier module, imported by a module outside
// this repository through a replace, protects a service with tokens the
// real local server issues: a valid token passes (with its claims in the
// request), none, a forged one and one for another audience get 401 with
// RFC 6750's WWW-Authenticate, a token without the route's scope 403. A
// disabled key, its enabling and a revocation reach the online mode at
// once, and the offline mode through the status list within its ttl
// (SUSPENDED, VALID, INVALID); while the server's tokens carry no status
// claim, the offline mode keeps accepting the token until it expires,
// which the test asserts as the documented lag.
func TestVerifierModule(t *testing.T) {
	admin := "verifier-module-admin-key-" + strings.Repeat("v", 16)
	s := start(t, t.TempDir(), "ADMIN_API_KEY="+admin)
	bin := buildOrders(t)
	offline := startOrders(t, bin, s.base)
	online := startOrders(t, bin, s.base, "ONLINE=1")

	valid, keyID := tokenFor(t, s, admin, "https://orders.example.com", "read:orders")
	noScope, _ := tokenFor(t, s, admin, "https://orders.example.com", "read:users")
	ownAudience, _ := tokenFor(t, s, admin, "", "read:orders")
	realm := `Bearer realm="https://orders.example.com"`
	for _, base := range []string{offline, online} {
		for _, tc := range []struct {
			name, auth string
			status     int
			challenge  string
		}{
			{"Valid", "Bearer " + valid, 200, ""},
			{"NoToken", "", 401, realm},
			{"Forged", "Bearer " + valid[:len(valid)-6] + "AAAAAA", 401, realm + `, error="invalid_token", error_description="invalid"`},
			{"LatchkeysAudience", "Bearer " + ownAudience, 401, realm + `, error="invalid_token", error_description="wrong_audience"`},
			{"WrongScope", "Bearer " + noScope, 403, realm + `, error="insufficient_scope", scope="read:orders"`},
		} {
			status, challenge, body := getOrders(t, base, tc.auth)
			if status != tc.status || challenge != tc.challenge {
				t.Errorf("%s %s: %d %q, want %d %q (%s)", base, tc.name, status, challenge, tc.status, tc.challenge, body)
			}
			if status == 200 && body != "orders for "+keyID+"\n" {
				t.Errorf("%s %s: body %q, want the key id from the claims", base, tc.name, body)
			}
		}
	}

	// The token's key disabled, enabled again, then the token revoked:
	// the online service sees each change at once; the offline one
	// within the list's ttl (10 s by default) when the token names a
	// list, and never when it does not.
	withStatus := hasStatusClaim(t, valid)
	if withStatus {
		t.Log("the server's tokens carry a status claim: the offline service must follow each change within ttl")
	} else {
		t.Log("the server's tokens carry no status claim: the offline service must accept the token until it expires")
	}
	for _, step := range []struct {
		name, method, path, body string
		reason                   string // "": accepted
	}{
		{"disabled", "PATCH", "/v1/api-keys/" + keyID, `{"enabled": false}`, "disabled"},
		{"enabled", "PATCH", "/v1/api-keys/" + keyID, `{"enabled": true}`, ""},
		{"revoked", "POST", "/v1/auth/revoke", `{"token": "` + valid + `"}`, "revoked"},
	} {
		if status, _ := s.call(t, step.method, step.path, admin, step.body); status != http.StatusOK {
			t.Fatalf("%s: %d", step.name, status)
		}
		want := func(status int, challenge string) bool {
			if step.reason == "" {
				return status == 200
			}
			return status == 401 && strings.Contains(challenge, `error_description="`+step.reason+`"`)
		}
		if status, challenge, _ := getOrders(t, online, "Bearer "+valid); !want(status, challenge) {
			t.Errorf("online, just %s: %d %q, want %q", step.name, status, challenge, step.reason)
		}
		if !withStatus {
			if status, _, _ := getOrders(t, offline, "Bearer "+valid); status != 200 {
				t.Errorf("offline without a status claim, %s: %d, want 200 (the documented lag)", step.name, status)
			}
			continue
		}
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			status, challenge, _ := getOrders(t, offline, "Bearer "+valid)
			if want(status, challenge) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("offline, 30 s after %s: %d %q, want %q", step.name, status, challenge, step.reason)
			}
		}
	}
}

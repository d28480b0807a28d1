package httpapi_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"latchkey/pkg/account"
	"latchkey/pkg/httpapi"
	"latchkey/pkg/httpapi/httpapitest"
	"latchkey/pkg/logsample"
)

// TestServer_GroupVerify: the router of GroupVerify, the verify function's,
// answers verify (a valid token, one not valid, none) with the very
// status, headers and body the auth group answers, without the seal keys
// the auth group needs; any other path, an auth route included, is the
// API's 404 problem+json, and another method on verify, HEAD included,
// its 405.
// With Audit, every request's line is written whatever the sampler says,
// with source_ip, and the path of a request no route matched; never the
// token.
func TestServer_GroupVerify(t *testing.T) {
	env := httpapitest.NewServer(t)
	_, secret := env.CreateAPIKey(t, account.ScopeReadUsers)
	tok, _ := env.IssueToken(t, secret, "", account.ScopeReadUsers)
	// One request id for all, so that bodies compare byte for byte.
	base := env.Config
	base.RequestID = func(*http.Request) string { return "req_verifygroup" }
	auth := httpapi.New(base, httpapi.GroupAuth)
	full := httpapi.New(base)
	cfg := base
	cfg.SealKeys = nil
	cfg.SuccessLog = logsample.New(100)
	cfg.Audit = &httpapi.Audit{SourceIP: func(*http.Request) string { return "203.0.113.7" }}
	verify := httpapi.New(cfg, httpapi.GroupVerify)
	bearer := func(credential string) http.Header { return http.Header{"Authorization": {"Bearer " + credential}} }

	env.Logs.Reset()
	requests := 0
	for _, r := range []struct {
		method string
		header http.Header
		status int
	}{
		{http.MethodGet, bearer(tok), http.StatusOK},
		{http.MethodHead, bearer(tok), http.StatusMethodNotAllowed},
		{http.MethodGet, bearer("not-a-token"), http.StatusOK},
		{http.MethodGet, nil, http.StatusUnauthorized},
		{http.MethodPost, bearer(tok), http.StatusMethodNotAllowed},
	} {
		got := env.DoRaw(t, verify, r.method, "/v1/auth/verify", r.header, nil)
		want := env.DoRaw(t, auth, r.method, "/v1/auth/verify", r.header, nil)
		requests++
		if got.StatusCode != r.status || got.StatusCode != want.StatusCode || !bytes.Equal(got.Body, want.Body) {
			t.Errorf("%s verify: got %d %s, the auth group %d %s; want %d", r.method, got.StatusCode, got.Body, want.StatusCode, want.Body, r.status)
		}
		got.Header.Del("X-Request-Id")
		want.Header.Del("X-Request-Id")
		for k := range want.Header {
			if got.Header.Get(k) != want.Header.Get(k) {
				t.Errorf("%s verify: header %s %q, the auth group's %q", r.method, k, got.Header.Get(k), want.Header.Get(k))
			}
		}
	}
	notFound := env.DoRaw(t, full, http.MethodGet, "/v1/nowhere", nil, nil)
	for _, path := range []string{"/v1/auth/token", "/v1/auth/jwks", "/v1/users", "/oauth2/introspect", "/", "/v1/auth/verify/x"} {
		res := env.DoRaw(t, verify, http.MethodGet, path, bearer(tok), nil)
		requests++
		if res.StatusCode != http.StatusNotFound || !bytes.Equal(res.Body, notFound.Body) || res.Header.Get("Content-Type") != notFound.Header.Get("Content-Type") {
			t.Errorf("GET %s: got %d %s %s, want the API's 404 %s", path, res.StatusCode, res.Header.Get("Content-Type"), res.Body, notFound.Body)
		}
	}

	var lines int
	for _, l := range env.Logs.Lines() {
		var line struct {
			Msg         string `json:"msg"`
			Route       string `json:"route"`
			Status      int    `json:"status"`
			SourceIP    string `json:"source_ip"`
			Path        string `json:"path"`
			SampleEvery int    `json:"sample_every"`
			Refused     string `json:"refused"`
		}
		if err := json.Unmarshal([]byte(l), &line); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		if line.Msg != "request" || line.SourceIP == "" {
			continue // the other routers' lines
		}
		lines++
		if line.SourceIP != "203.0.113.7" || line.SampleEvery != 0 {
			t.Errorf("line %s: want source_ip 203.0.113.7 and no sample_every", l)
		}
		if (line.Route == "") != (line.Path != "") {
			t.Errorf("line %s: want the path exactly when no route matched", l)
		}
		if strings.Contains(l, tok) {
			t.Errorf("the token is in the line %s", l)
		}
	}
	if lines != requests {
		t.Errorf("%d request lines for %d requests; an audit line is never sampled:\n%s", lines, requests, env.Logs.String())
	}
}

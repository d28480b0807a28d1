package httpapi_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"latchkey/pkg/account"
	"latchkey/pkg/httpapi"
	"latchkey/pkg/httpapi/httpapitest"
	"latchkey/pkg/logsample"
)

// TestServer_SuccessLogSampled: with a sampler of one in 10, the request
// line of one verify in 10 of a valid token is written, with sample_every;
// the line of every refusal is written, without it: a verify of a token
// that is not valid (200, with the reason as refused), a request without
// a valid credential (401), an unknown route (404), a bad query (400). The
// requests of each kind interleave, so that the count of one cannot lean
// on another.
func TestServer_SuccessLogSampled(t *testing.T) {
	env := httpapitest.NewServer(t)
	_, secret := env.CreateAPIKey(t, account.ScopeReadUsers)
	tok, _ := env.IssueToken(t, secret, "", account.ScopeReadUsers)
	cfg := env.Config
	cfg.SuccessLog = logsample.New(10)
	h := httpapi.New(cfg)
	env.Logs.Reset()
	bearer := func(credential string) http.Header { return http.Header{"Authorization": {"Bearer " + credential}} }
	for i := range 100 {
		for _, r := range []struct {
			path   string
			header http.Header
			status int
		}{
			{"/v1/auth/verify", bearer(tok), http.StatusOK},
			{"/v1/auth/verify", bearer("not-a-token"), http.StatusOK},
			{"/v1/users", bearer("not-a-token"), http.StatusUnauthorized},
			{"/v1/nowhere", nil, http.StatusNotFound},
			{"/v1/users?limit=0", bearer(tok), http.StatusBadRequest},
		} {
			if res := env.DoRaw(t, h, http.MethodGet, r.path, r.header, nil); res.StatusCode != r.status {
				t.Fatalf("request %d, GET %s: got %d %s, want %d", i, r.path, res.StatusCode, res.Body, r.status)
			}
		}
	}
	lines := map[string]int{}
	for _, l := range env.Logs.Lines() {
		var line struct {
			Msg         string `json:"msg"`
			Status      int    `json:"status"`
			SampleEvery *int   `json:"sample_every"`
			Refused     string `json:"refused"`
		}
		if err := json.Unmarshal([]byte(l), &line); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		if line.Msg != "request" {
			continue
		}
		kind := http.StatusText(line.Status)
		if line.Refused != "" {
			kind = "refused " + line.Refused
		}
		lines[kind]++
		switch success := line.Status < 400 && line.Refused == ""; {
		case success && (line.SampleEvery == nil || *line.SampleEvery != 10):
			t.Errorf("a success's line without sample_every 10: %s", l)
		case !success && line.SampleEvery != nil:
			t.Errorf("a refusal's line with sample_every: %s", l)
		}
	}
	want := map[string]int{"OK": 10, "refused " + account.ReasonInvalid: 100, "Unauthorized": 100, "Not Found": 100, "Bad Request": 100}
	if len(lines) != len(want) {
		t.Errorf("request lines: got %v, want %v", lines, want)
	}
	for kind, n := range want {
		if lines[kind] != n {
			t.Errorf("%s: %d request lines of 100 requests, want %d", kind, lines[kind], n)
		}
	}
}

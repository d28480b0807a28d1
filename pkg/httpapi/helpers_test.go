package httpapi_test

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"latchkey/pkg/httpapi/httpapitest"
)

// api sends requests through the real handler and checks every response
// against openapi.yaml, so no test can pass with a response the document
// does not describe.
type api struct {
	*httpapitest.Env
	t testing.TB
}

func newAPI(t testing.TB) api {
	t.Helper()
	return api{Env: httpapitest.NewServer(t), t: t}
}

func (a api) do(method, path, credential string, body any) *httpapitest.Response {
	a.t.Helper()
	res := a.Do(a.t, method, path, credential, body)
	a.CheckResponse(a.t, res)
	return res
}

// want fails the test unless res has the status.
func want(t testing.TB, res *httpapitest.Response, status int) {
	t.Helper()
	if res.StatusCode != status {
		t.Fatalf("%s %s: got %d %s, want %d", res.Request.Method, res.Request.URL, res.StatusCode, res.Body, status)
	}
}

// problem is the problem+json body, decoded.
type problem struct {
	Type      string `json:"type"`
	Title     string `json:"title"`
	Status    int    `json:"status"`
	Detail    string `json:"detail"`
	Code      string `json:"code"`
	RequestID string `json:"request_id"`
	Errors    []struct {
		Field   string `json:"field"`
		Message string `json:"message"`
	} `json:"errors"`
}

// wantProblem fails the test unless res is a problem with status and code,
// and returns it.
func wantProblem(t testing.TB, res *httpapitest.Response, status int, code string) problem {
	t.Helper()
	want(t, res, status)
	if ct := res.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("Content-Type: got %q, want application/problem+json", ct)
	}
	var p problem
	res.Decode(t, &p)
	if p.Code != code {
		t.Fatalf("%s %s: got code %q (%s), want %q", res.Request.Method, res.Request.URL, p.Code, p.Detail, code)
	}
	return p
}

// wantField fails the test unless p names field among its field errors.
func wantField(t testing.TB, p problem, field string) {
	t.Helper()
	for _, e := range p.Errors {
		if e.Field == field && e.Message != "" {
			return
		}
	}
	t.Fatalf("problem %+v: want a field error for %q", p, field)
}

var seq atomic.Int64

// unique returns a string no other call in this test binary returns.
func unique(prefix string) string { return fmt.Sprintf("%s%d", prefix, seq.Add(1)) }

func uniqueEmail() string { return unique("user") + "@example.com" }

func uniqueSlug() string { return strings.ReplaceAll(unique("org-"), "_", "-") }

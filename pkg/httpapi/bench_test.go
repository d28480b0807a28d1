package httpapi_test

import (
	"fmt"
	"net/http"
	"testing"

	"latchkey/pkg/httpapi/httpapitest"
)

// The benchmarks run the full stack: New, the middleware, the service and
// bbolt in a temporary directory, with the response recorded in memory.

func BenchmarkIssueToken(b *testing.B) {
	env := httpapitest.NewServer(b)
	body := []byte(`{"scopes":["read:users"],"expires_in":"15m"}`)
	h := http.Header{"Authorization": {"Bearer " + env.AdminKey}, "Content-Type": {"application/json"}}
	b.ReportAllocs()
	for b.Loop() {
		if res := env.DoRaw(b, env.Handler, http.MethodPost, "/v1/auth/token", h, body); res.StatusCode != http.StatusCreated {
			b.Fatalf("got %d %s", res.StatusCode, res.Body)
		}
	}
}

func BenchmarkVerifyToken(b *testing.B) {
	env := httpapitest.NewServer(b)
	tok, _ := env.IssueToken(b, env.AdminKey, "", "read:users")
	h := http.Header{"Authorization": {"Bearer " + tok}}
	b.ReportAllocs()
	for b.Loop() {
		if res := env.DoRaw(b, env.Handler, http.MethodGet, "/v1/auth/verify", h, nil); res.StatusCode != http.StatusOK {
			b.Fatalf("got %d %s", res.StatusCode, res.Body)
		}
	}
}

func BenchmarkCreateUser(b *testing.B) {
	env := httpapitest.NewServer(b)
	h := http.Header{"Authorization": {"Bearer " + env.AdminKey}, "Content-Type": {"application/json"}}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		body := fmt.Sprintf(`{"email":"bench%d@example.com","name":"Bench"}`, i)
		if res := env.DoRaw(b, env.Handler, http.MethodPost, "/v1/users", h, body); res.StatusCode != http.StatusCreated {
			b.Fatalf("got %d %s", res.StatusCode, res.Body)
		}
	}
}

// BenchmarkWorstRequest measures, for every route, an ordinary request and
// the most expensive ones the server takes (see worstLoads): read the cost
// of each worst request as a multiple of its route's ordinary one.
func BenchmarkWorstRequest(b *testing.B) {
	env := httpapitest.NewServer(b)
	f := seedWorst(b, env)
	for _, rl := range f.worstLoads() {
		for _, l := range append([]load{rl.ordinary}, rl.worst...) {
			b.Run(benchName(rl.route)+"/"+l.name, func(b *testing.B) {
				b.ReportAllocs()
				l.serve(b, env.Handler, rl.route)
			})
		}
	}
}

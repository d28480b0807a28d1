package httpapi_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"latchkey/pkg/account"
	"latchkey/pkg/httpapi"
	"latchkey/pkg/httpapi/httpapitest"
)

// The benchmarks run the full stack: New, the middleware, the service and
// bbolt in a temporary directory (DynamoDB Local with
// LATCHKEY_TEST_STORE=dynamodb). The request line is logged as the local
// server logs it (slog's JSON handler), to io.Discard, so its
// formatting is measured and a growing buffer is not; the response goes
// to a writer that keeps nothing but its headers, so B/op and allocs/op
// are the handler's, not the harness's.

// benchHandler is env's handler with a logger that discards its output.
func benchHandler(tb testing.TB, env *httpapitest.Env) http.Handler {
	tb.Helper()
	cfg := env.Config
	cfg.Logger = slog.New(slog.NewJSONHandler(io.Discard, nil))
	return httpapi.New(cfg)
}

// discardWriter is an http.ResponseWriter that keeps its header map and
// status only, reset before each request.
type discardWriter struct {
	header http.Header
	status int
}

func (w *discardWriter) Header() http.Header         { return w.header }
func (w *discardWriter) WriteHeader(code int)        { w.status = code }
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }

func (w *discardWriter) reset() {
	clear(w.header)
	w.status = http.StatusOK
}

// serve runs one request through h and fails b unless it gets status.
func serve(b *testing.B, h http.Handler, w *discardWriter, r *http.Request, status int) {
	w.reset()
	h.ServeHTTP(w, r)
	if w.status != status {
		b.Fatalf("%s %s: got %d, want %d", r.Method, r.URL.Path, w.status, status)
	}
}

// newBenchRequest returns a request with credential as its Bearer token
// and body, when not empty, as its JSON body.
func newBenchRequest(method, path, credential, body string) *http.Request {
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	r.Header.Set("Authorization", "Bearer "+credential)
	if body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	return r
}

// BenchmarkIssueToken: POST /v1/auth/token with the admin API key (one
// key read, one signature, one token record written).
func BenchmarkIssueToken(b *testing.B) {
	env := httpapitest.NewServer(b)
	h := benchHandler(b, env)
	body := `{"scopes":["read:users"],"expires_in":"15m"}`
	w := &discardWriter{header: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		r := newBenchRequest(http.MethodPost, "/v1/auth/token", env.AdminKey, body)
		b.StartTimer()
		serve(b, h, w, r, http.StatusCreated)
	}
}

// BenchmarkVerifyToken: GET /v1/auth/verify. Warm: the same token on every
// request, as a resource server sees a client's token until it expires.
// Cold: a token never seen before on every request (signed outside the
// timer), so the signature is checked each time.
func BenchmarkVerifyToken(b *testing.B) {
	b.Run("Warm", func(b *testing.B) {
		env := httpapitest.NewServer(b)
		h := benchHandler(b, env)
		tok, _ := env.IssueToken(b, env.AdminKey, "", "read:users")
		r := newBenchRequest(http.MethodGet, "/v1/auth/verify", tok, "")
		w := &discardWriter{header: http.Header{}}
		b.ReportAllocs()
		for b.Loop() {
			serve(b, h, w, r, http.StatusOK)
		}
	})
	b.Run("Cold", func(b *testing.B) {
		env := httpapitest.NewServer(b)
		h := benchHandler(b, env)
		_, c := env.IssueToken(b, env.AdminKey, "", "read:users")
		w := &discardWriter{header: http.Header{}}
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			c.ID = account.NewID(account.PrefixToken, c.IssuedAt)
			tok, err := env.Signer.Sign(c)
			if err != nil {
				b.Fatal(err)
			}
			r := newBenchRequest(http.MethodGet, "/v1/auth/verify", tok, "")
			b.StartTimer()
			serve(b, h, w, r, http.StatusOK)
		}
	})
}

// BenchmarkAuthenticateAPIKey: GET /v1/api-keys/{id} of the admin key with
// the admin key itself: authentication (hash, one key read) and one more
// key read.
func BenchmarkAuthenticateAPIKey(b *testing.B) {
	env := httpapitest.NewServer(b)
	h := benchHandler(b, env)
	p, err := env.Service.Authenticate(context.Background(), env.AdminKey)
	if err != nil {
		b.Fatal(err)
	}
	r := newBenchRequest(http.MethodGet, "/v1/api-keys/"+p.KeyID, env.AdminKey, "")
	w := &discardWriter{header: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		serve(b, h, w, r, http.StatusOK)
	}
}

func BenchmarkCreateUser(b *testing.B) {
	env := httpapitest.NewServer(b)
	h := benchHandler(b, env)
	w := &discardWriter{header: http.Header{}}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		b.StopTimer()
		i++
		r := newBenchRequest(http.MethodPost, "/v1/users", env.AdminKey, fmt.Sprintf(`{"email":"bench%d@example.com","name":"Bench"}`, i))
		b.StartTimer()
		serve(b, h, w, r, http.StatusCreated)
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

// BenchmarkVerifyLimited: GET /v1/auth/verify of a token (warm) of a key
// without limits beside one with a rate limit and credits, on each store
// (httpapitest.Stores): what counting a use costs. The limit and the
// credits are too large to be reached, so every answer is valid.
func BenchmarkVerifyLimited(b *testing.B) {
	for _, name := range []string{"bbolt", "dynamodb"} {
		newStore, ok := httpapitest.Stores(b)[name]
		if !ok {
			continue
		}
		for _, limited := range []bool{false, true} {
			kind := "Unlimited"
			if limited {
				kind = "Limited"
			}
			b.Run(name+"/"+kind, func(b *testing.B) {
				env := httpapitest.NewServerOver(b, newStore(b))
				h := benchHandler(b, env)
				req := account.NewAPIKey{Name: "bench", Scopes: []string{"read:users"}}
				if limited {
					req.RateLimits = []account.RateLimitRequest{{Name: "second", Limit: account.MaxLimit, Period: "1s"}}
					req.Credits = &account.CreditsRequest{Remaining: account.MaxCredits}
				}
				admin, err := env.Service.Authenticate(context.Background(), env.AdminKey)
				if err != nil {
					b.Fatal(err)
				}
				_, secret, err := env.Service.CreateAPIKey(context.Background(), admin, req)
				if err != nil {
					b.Fatal(err)
				}
				tok, _ := env.IssueToken(b, secret, "", "read:users")
				r := newBenchRequest(http.MethodGet, "/v1/auth/verify", tok, "")
				w := &discardWriter{header: http.Header{}}
				b.ReportAllocs()
				for b.Loop() {
					serve(b, h, w, r, http.StatusOK)
					if limited && w.header.Get("RateLimit") == "" {
						b.Fatal("no RateLimit field: the use was not counted")
					}
				}
			})
		}
	}
}

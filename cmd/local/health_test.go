package main_test

import (
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"latchkey"
	"latchkey/pkg/dynamostore"
	"latchkey/pkg/dynamostore/dynamotest"
	"latchkey/pkg/httpapi"
)

// get returns the status, Content-Type and body of GET path.
func (s *server) get(t *testing.T, path string) (int, string, []byte) {
	t.Helper()
	res, err := http.Get(s.base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, res.Header.Get("Content-Type"), b
}

// TestServer_HealthRoutes: the built server answers its local routes
// without a credential: liveness, readiness over the embedded store, and
// the API description it was built with.
func TestServer_HealthRoutes(t *testing.T) {
	s := start(t, t.TempDir(), "ADMIN_API_KEY=lk_test_"+strings.Repeat("c", 40))
	for _, r := range httpapi.LocalRoutes() {
		if status, _, body := s.get(t, r.Path); status != http.StatusOK {
			t.Errorf("%s %s: got %d %s, want 200", r.Method, r.Path, status, body)
		}
	}
	if status, ct, body := s.get(t, "/openapi.yaml"); status != http.StatusOK || ct != "application/yaml" || string(body) != string(latchkey.OpenAPI) {
		t.Errorf("GET /openapi.yaml: got %d %s, %d bytes; want openapi.yaml", status, ct, len(body))
	}
}

// freezer is a TCP proxy to DynamoDB Local that can stop answering, as a
// database that hangs does: once frozen, it closes the connections it
// holds and accepts new ones without ever answering on them.
type freezer struct {
	ln       net.Listener
	upstream string
	mu       sync.Mutex
	frozen   bool
	conns    []net.Conn
}

func newFreezer(t *testing.T, upstream string) *freezer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &freezer{ln: ln, upstream: upstream}
	t.Cleanup(func() {
		ln.Close()
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, c := range f.conns {
			c.Close()
		}
	})
	go f.serve()
	return f
}

func (f *freezer) serve() {
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.mu.Lock()
		f.conns = append(f.conns, c)
		frozen := f.frozen
		f.mu.Unlock()
		if frozen {
			continue // held open, never answered
		}
		up, err := net.Dial("tcp", f.upstream)
		if err != nil {
			c.Close()
			continue
		}
		go func() { io.Copy(up, c); up.Close() }()
		go func() { io.Copy(c, up); c.Close() }()
	}
}

func (f *freezer) freeze() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.frozen = true
	for _, c := range f.conns {
		c.Close()
	}
	f.conns = nil
}

// TestServer_ReadyzDynamoDB: over DynamoDB, /readyz is 200 while DynamoDB
// answers and 503 unavailable, within httpapi.ReadyTimeout, once it stops
// answering; /healthz stays 200, since the process still serves.
func TestServer_ReadyzDynamoDB(t *testing.T) {
	endpoint := os.Getenv(dynamotest.EndpointEnv)
	if endpoint == "" {
		t.Skip(dynamotest.EndpointEnv + " is not set; run through scripts/dynamodb-local.sh (make test does)")
	}
	f := newFreezer(t, strings.TrimPrefix(endpoint, "http://"))
	// The store's own timeout at its longest, so that the readiness
	// check's shorter one shows with seconds of slack for a loaded machine.
	s := start(t, t.TempDir(), "ADMIN_API_KEY=lk_test_"+strings.Repeat("d", 40), "STORE_TIMEOUT="+dynamostore.MaxTimeout.String(),
		"DYNAMODB_ENDPOINT=http://"+f.ln.Addr().String(), "TABLE_NAME=readyz-"+strings.ToLower(strings.ReplaceAll(time.Now().Format("150405.000000"), ".", "")))
	if status, _, body := s.get(t, "/readyz"); status != http.StatusOK {
		t.Fatalf("GET /readyz while DynamoDB answers: got %d %s, want 200", status, body)
	}
	f.freeze()
	begin := time.Now()
	status, ct, body := s.get(t, "/readyz")
	elapsed := time.Since(begin)
	if status != http.StatusServiceUnavailable || ct != "application/problem+json" || !strings.Contains(string(body), `"code":"unavailable"`) {
		t.Fatalf("GET /readyz after DynamoDB froze: got %d %s %s, want 503 unavailable", status, ct, body)
	}
	// Within its own timeout: at once if the store's retries give up (a
	// pooled connection the freeze closed, and too little time left to
	// retry: dynamostore's retry sizing), at ReadyTimeout if a call hangs;
	// never the store's.
	if elapsed >= dynamostore.MaxTimeout {
		t.Errorf("GET /readyz took %v, want its own timeout (%v), not the store's (%v)", elapsed, httpapi.ReadyTimeout, dynamostore.MaxTimeout)
	}
	if status, _, body := s.get(t, "/healthz"); status != http.StatusOK {
		t.Errorf("GET /healthz after DynamoDB froze: got %d %s, want 200", status, body)
	}
}

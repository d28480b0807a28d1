// Package httpapitest builds a complete Latchkey HTTP stack for tests, as
// the servers build theirs (assembly.New): the real handler over a real
// store, a real Ed25519 signer, a controllable clock and a bootstrap admin
// key; and it checks responses against openapi.yaml.
//
// The store is bbolt in a temporary directory, or, with
// LATCHKEY_TEST_STORE=dynamodb, a fresh table in the DynamoDB Local at
// LATCHKEY_TEST_DYNAMODB_ENDPOINT: `make test` runs the HTTP suite both ways.
//
// Use it from any package that needs the API end to end, for instance to
// replay API Gateway events against a seeded store:
//
//	env := httpapitest.NewServer(t)
//	u := env.CreateUser(t, "ada@example.com")        // seed through the service
//	h := httpapi.New(env.Config, httpapi.GroupUsers)   // or env.Handler: all groups
//	res := env.Do(t, "GET", "/v1/users/"+u.ID, env.AdminKey, nil)
//	env.CheckResponse(t, res)                          // fails t on drift from openapi.yaml
package httpapitest

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"latchkey"
	"latchkey/pkg/account"
	"latchkey/pkg/assembly"
	"latchkey/pkg/console"
	"latchkey/pkg/httpapi"
	"latchkey/pkg/mock"
	"latchkey/pkg/teststore"
	"latchkey/pkg/token"
	"latchkey/pkg/version"
)

// Issuer is the iss claim of the tokens the test stack signs.
const Issuer = "https://latchkey.test"

// Env is one complete stack. Every field is ready to use; the store is
// closed when the test ends.
type Env struct {
	// Handler serves every group, GroupLocal included, as the local server
	// does: httpapi.New(Config).
	Handler http.Handler
	// Config is what Handler was built from, to build group handlers.
	Config  httpapi.Config
	Service *account.Service
	Store   account.Store
	// Clock is the service's clock; advance it to expire tokens.
	Clock *mock.Clock
	// Signer signs access tokens; PublicKey verifies them. PrivateKey is
	// the Signer's key, for tests that make tokens by hand.
	Signer     *token.Signer
	PublicKey  ed25519.PublicKey
	PrivateKey ed25519.PrivateKey
	// TokenCache remembers the tokens the service's parser has verified,
	// with the default bounds, as in every process that serves the API.
	TokenCache *token.Cache
	// AdminKey is the secret of the bootstrap admin key (grant "*:*").
	AdminKey string
	// Logs holds every line the handler logged, JSON, one per line.
	Logs *SyncBuffer
}

// NewServer returns a fresh stack with an empty store apart from the
// bootstrap admin key.
func NewServer(tb testing.TB) *Env {
	tb.Helper()
	return NewServerWith(tb, nil)
}

// NewServerWith is NewServer with the store wrapped by wrap (unless nil)
// before anything uses it: a test injects faults or observes calls with a
// wrapper that embeds the real store.
func NewServerWith(tb testing.TB, wrap func(account.Store) account.Store) *Env {
	tb.Helper()
	return newServer(tb, nil, wrap, Issuer)
}

// NewServerAt is NewServer with issuer as the issuer, for a test that
// serves the stack where a browser reaches it (the console's): its
// address, such as http://127.0.0.1:port.
func NewServerAt(tb testing.TB, issuer string) *Env {
	tb.Helper()
	return newServer(tb, nil, nil, issuer)
}

// NewServerOver is NewServer over store, which it closes when the test
// ends: for a test that runs on each store by name (Stores).
func NewServerOver(tb testing.TB, store account.Store) *Env {
	tb.Helper()
	return newServer(tb, store, nil, Issuer)
}

// Stores returns a constructor of a new, empty store for each store that
// runs here, by name (teststore.Each): bbolt always, DynamoDB Local when
// the test runs under scripts/dynamodb-local.sh.
func Stores(tb testing.TB) map[string]func(testing.TB) account.Store {
	tb.Helper()
	return teststore.Each(tb)
}

func newServer(tb testing.TB, store account.Store, wrap func(account.Store) account.Store, issuer string) *Env {
	tb.Helper()
	if store == nil {
		store = teststore.Open(tb)
	}
	tb.Cleanup(func() { store.Close() })
	if wrap != nil {
		store = wrap(store)
	}

	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		tb.Fatal(err)
	}
	// A whole second, so that lifetimes computed from truncated token times
	// come out exact.
	clock := mock.NewClock(time.Now().Truncate(time.Second))
	// As the local server over its data file: this release's formats in
	// force from the start (docs/deploying.md, "Formats in force").
	if _, err := account.PutFormatsInForce(context.Background(), store, clock.Now(), version.Version); err != nil {
		tb.Fatal(err)
	}
	logs := &SyncBuffer{}
	cache := token.NewCache(token.CacheOptions{})
	asm, err := assembly.New(assembly.Parts{
		Store:      store,
		CursorKey:  bytes.Repeat([]byte("k"), 32),
		Issuer:     issuer,
		SigningKey: priv,
		TokenCache: cache,
		Now:        clock.Now,
		Logger:     slog.New(slog.NewJSONHandler(logs, nil)),
		// As cmd/local: Handler is the local server's, health checks and
		// the console too.
		Local:   &httpapi.Local{Ready: httpapi.StoreReady(store), OpenAPI: latchkey.OpenAPI},
		Console: console.Mount,
	})
	if err != nil {
		tb.Fatalf("assembly.New: %v", err)
	}
	admin := account.NewAPIKeySecret()
	if err := asm.Service.EnsureBootstrapKey(context.Background(), admin, time.Time{}); err != nil {
		tb.Fatalf("EnsureBootstrapKey: %v", err)
	}
	return &Env{
		Handler:    asm.Handler(),
		Config:     asm.Config,
		Service:    asm.Service,
		Store:      store,
		Clock:      clock,
		Signer:     asm.Signer,
		PublicKey:  pub,
		PrivateKey: priv,
		TokenCache: cache,
		AdminKey:   admin,
		Logs:       logs,
	}
}

// StoreEnv names the variable that chooses the store: "bbolt" (the
// default) or "dynamodb" (teststore.Env).
const StoreEnv = teststore.Env

// Response is a recorded response with the request that produced it, so
// that it can be checked against the OpenAPI description.
type Response struct {
	*http.Response
	Body    []byte
	Request *http.Request
	// RequestBody is the body the request was sent with.
	RequestBody []byte
}

// Decode unmarshals the body into v, failing tb if it is not JSON.
func (r *Response) Decode(tb testing.TB, v any) {
	tb.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		tb.Fatalf("%s %s: decode %d response %q: %v", r.Request.Method, r.Request.URL, r.StatusCode, r.Body, err)
	}
}

// Map returns the body as a JSON object.
func (r *Response) Map(tb testing.TB) map[string]any {
	tb.Helper()
	var m map[string]any
	r.Decode(tb, &m)
	return m
}

// Do sends a request through env.Handler. credential, when not empty, is
// sent as a Bearer token. body is sent as JSON unless it is a []byte or a
// string, which are sent as they are; either way with Content-Type
// application/json.
func (e *Env) Do(tb testing.TB, method, path, credential string, body any) *Response {
	tb.Helper()
	h := http.Header{}
	if credential != "" {
		h.Set("Authorization", "Bearer "+credential)
	}
	if body != nil {
		h.Set("Content-Type", "application/json")
	}
	return e.DoRaw(tb, e.Handler, method, path, h, body)
}

// DoRaw sends a request with exactly the given headers through h.
func (e *Env) DoRaw(tb testing.TB, h http.Handler, method, path string, header http.Header, body any) *Response {
	tb.Helper()
	var raw []byte
	switch b := body.(type) {
	case nil:
	case []byte:
		raw = b
	case string:
		raw = []byte(b)
	default:
		var err error
		if raw, err = json.Marshal(b); err != nil {
			tb.Fatal(err)
		}
	}
	req := httptest.NewRequest(method, path, bytes.NewReader(raw))
	for k, vs := range header {
		req.Header[k] = vs
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	res := rec.Result()
	got, _ := io.ReadAll(res.Body)
	// A fresh request for validation: the handler consumed the original body.
	vreq := httptest.NewRequest(method, path, bytes.NewReader(raw))
	vreq.Header = req.Header.Clone()
	return &Response{Response: res, Body: got, Request: vreq, RequestBody: raw}
}

// admin returns the bootstrap key's principal, for seeding.
func (e *Env) admin(tb testing.TB) account.Principal {
	tb.Helper()
	p, err := e.Service.Authenticate(context.Background(), e.AdminKey)
	if err != nil {
		tb.Fatalf("authenticate admin key: %v", err)
	}
	return p
}

// CreateUser seeds a user named after its e-mail.
func (e *Env) CreateUser(tb testing.TB, email string) account.User {
	tb.Helper()
	u, err := e.Service.CreateUser(context.Background(), e.admin(tb), account.NewUser{Email: email, Name: strings.Split(email, "@")[0]})
	if err != nil {
		tb.Fatalf("CreateUser(%q): %v", email, err)
	}
	return u
}

// CreateOrganization seeds an organization named after its slug.
func (e *Env) CreateOrganization(tb testing.TB, slug string) account.Organization {
	tb.Helper()
	o, err := e.Service.CreateOrganization(context.Background(), e.admin(tb), account.NewOrganization{Name: slug, Slug: slug})
	if err != nil {
		tb.Fatalf("CreateOrganization(%q): %v", slug, err)
	}
	return o
}

// AddMember seeds a membership.
func (e *Env) AddMember(tb testing.TB, orgID, userID, role string) account.Membership {
	tb.Helper()
	m, err := e.Service.AddMember(context.Background(), e.admin(tb), orgID, account.NewMember{UserID: userID, Role: role})
	if err != nil {
		tb.Fatalf("AddMember: %v", err)
	}
	return m
}

// CreateAPIKey seeds an API key with the given grants, created by the admin
// key, and returns it with its secret.
func (e *Env) CreateAPIKey(tb testing.TB, scopes ...string) (account.APIKey, string) {
	tb.Helper()
	k, secret, err := e.Service.CreateAPIKey(context.Background(), e.admin(tb), account.NewAPIKey{Name: "test key", Scopes: scopes})
	if err != nil {
		tb.Fatalf("CreateAPIKey(%v): %v", scopes, err)
	}
	return k, secret
}

// IssueToken issues an access token for the API key secret with the given
// scopes and lifetime ("" for the default).
func (e *Env) IssueToken(tb testing.TB, keySecret, expiresIn string, scopes ...string) (string, account.TokenClaims) {
	tb.Helper()
	p, err := e.Service.Authenticate(context.Background(), keySecret)
	if err != nil {
		tb.Fatalf("authenticate key: %v", err)
	}
	tok, claims, err := e.Service.IssueToken(context.Background(), p, account.TokenRequest{Scopes: scopes, ExpiresIn: expiresIn})
	if err != nil {
		tb.Fatalf("IssueToken(%v): %v", scopes, err)
	}
	return tok, claims
}

// SyncBuffer is a bytes.Buffer safe for concurrent writers: a handler logs
// from every request goroutine, a child process from its output goroutines.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written since the last Reset.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Lines returns the lines written since the last Reset.
func (b *SyncBuffer) Lines() []string {
	return strings.Split(strings.TrimSpace(b.String()), "\n")
}

// Reset discards everything written so far.
func (b *SyncBuffer) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Reset()
}

package account_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"latchkey/pkg/account"
	"latchkey/pkg/mock"
	"latchkey/pkg/teststore"
	"latchkey/pkg/token"
)

// issuer is the iss of the test services' tokens.
const issuer = "https://latchkey.test"

// env is a Service over a real store, seen from the domain with no HTTP in
// between: an admin principal that holds "*:*", and a settable clock.
type env struct {
	svc   *account.Service
	store account.Store
	clock *mock.Clock
	// cache remembers the tokens the service's parser has verified.
	cache  *token.Cache
	admin  account.Principal
	secret string // the admin key's secret
	ctx    context.Context
	opts   account.Options // the service's
}

// newEnv returns a service over a fresh store (teststore.Open: bbolt, or
// DynamoDB Local with LATCHKEY_TEST_STORE=dynamodb) that holds the
// bootstrap admin key alone.
func newEnv(tb testing.TB) *env {
	tb.Helper()
	return newEnvOver(tb, teststore.Open(tb))
}

// newEnvOver is newEnv over store, which may wrap a real one to observe or
// fail calls.
func newEnvOver(tb testing.TB, store account.Store) *env {
	tb.Helper()
	e := newService(tb, store, nil)
	e.secret = account.NewAPIKeySecret()
	if err := e.svc.EnsureBootstrapKey(e.ctx, e.secret, time.Time{}); err != nil {
		tb.Fatalf("EnsureBootstrapKey: %v", err)
	}
	e.admin = e.auth(tb, e.secret)
	return e
}

// newService builds the service as the servers do (assembly.New), without
// the handler: over store, which it closes when the test ends, with a real
// Ed25519 signer, its parser with the token cache every serving process
// has, and a clock at a whole second, so that lifetimes computed from
// truncated token times come out exact. No key exists yet. opt, unless
// nil, changes the options first.
func newService(tb testing.TB, store account.Store, opt func(*account.Options)) *env {
	tb.Helper()
	tb.Cleanup(func() { store.Close() })
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		tb.Fatal(err)
	}
	e := &env{store: store, clock: mock.NewClock(time.Now().Truncate(time.Second)), cache: token.NewCache(token.CacheOptions{}), ctx: tb.Context()}
	opts := account.Options{
		CursorKey: bytes.Repeat([]byte("k"), 32),
		Signer:    token.NewSigner(priv, issuer),
		Parser:    token.NewParser(issuer, pub).WithCache(e.cache),
		Now:       e.clock.Now,
	}
	if opt != nil {
		opt(&opts)
	}
	e.opts = opts
	if e.svc, err = account.NewService(store, opts); err != nil {
		tb.Fatalf("NewService: %v", err)
	}
	return e
}

// auth authenticates a credential and fails the test if it is refused.
func (e *env) auth(tb testing.TB, credential string) account.Principal {
	tb.Helper()
	p, err := e.svc.Authenticate(e.ctx, credential)
	if err != nil {
		tb.Fatalf("Authenticate: %v", err)
	}
	return p
}

// key creates an API key with scopes (and an optional lifetime) and returns
// the principal that presents it, with its secret.
func (e *env) key(tb testing.TB, expiresIn string, scopes ...string) (account.Principal, string) {
	tb.Helper()
	_, secret, err := e.svc.CreateAPIKey(e.ctx, e.admin, account.NewAPIKey{Name: "test key", Scopes: scopes, ExpiresIn: expiresIn})
	if err != nil {
		tb.Fatalf("CreateAPIKey: %v", err)
	}
	return e.auth(tb, secret), secret
}

func (e *env) user(tb testing.TB, email string) account.User {
	tb.Helper()
	u, err := e.svc.CreateUser(e.ctx, e.admin, account.NewUser{Email: email, Name: "Test User"})
	if err != nil {
		tb.Fatalf("CreateUser(%s): %v", email, err)
	}
	return u
}

func (e *env) org(tb testing.TB, slug string) account.Organization {
	tb.Helper()
	o, err := e.svc.CreateOrganization(e.ctx, e.admin, account.NewOrganization{Name: "Test Org", Slug: slug})
	if err != nil {
		tb.Fatalf("CreateOrganization(%s): %v", slug, err)
	}
	return o
}

func wantCode(tb testing.TB, err error, code account.Code) {
	tb.Helper()
	if !account.IsCode(err, code) {
		tb.Fatalf("got error %v (code %q), want code %q", err, account.ErrorCode(err), code)
	}
}

func asError(tb testing.TB, err error) *account.Error {
	tb.Helper()
	var e *account.Error
	if !errors.As(err, &e) {
		tb.Fatalf("got %T %v, want *account.Error", err, err)
	}
	return e
}

// wantFields checks an invalid_request error that names exactly fields.
func wantFields(tb testing.TB, err error, fields ...string) {
	tb.Helper()
	wantCode(tb, err, account.CodeInvalidRequest)
	var got []string
	for _, f := range asError(tb, err).Fields {
		got = append(got, f.Field)
	}
	if !slices.Equal(got, fields) {
		tb.Errorf("fields: got %q, want %q", got, fields)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

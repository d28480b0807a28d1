package account_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"latchkey/pkg/account"
	"latchkey/pkg/boltstore"
	"latchkey/pkg/token"
)

const issuer = "https://latchkey.test"

// clock is a settable time source, so that expiry can be tested without
// sleeping.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// env is a Service over a real bbolt store and real Ed25519 tokens, with an
// admin principal that holds "*:*".
type env struct {
	svc    *account.Service
	store  *boltstore.Store
	clock  *clock
	admin  account.Principal
	secret string // the admin key's secret
	ctx    context.Context
}

func newEnv(t *testing.T) *env {
	t.Helper()
	store, err := boltstore.Open(filepath.Join(t.TempDir(), "latchkey.db"))
	if err != nil {
		t.Fatalf("boltstore.Open: %v", err)
	}
	t.Cleanup(func() { store.Close() })
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	c := &clock{now: time.Now().UTC()}
	svc, err := account.NewService(store, account.Options{
		CursorKey: []byte("0123456789abcdef0123456789abcdef"),
		Signer:    token.NewSigner(priv, issuer),
		Parser:    token.NewParser(issuer, pub),
		Now:       c.Now,
	})
	if err != nil {
		t.Fatalf("NewService: %v", err)
	}
	e := &env{svc: svc, store: store, clock: c, ctx: t.Context(), secret: account.NewAPIKeySecret()}
	if err := svc.EnsureBootstrapKey(e.ctx, e.secret, time.Time{}); err != nil {
		t.Fatalf("EnsureBootstrapKey: %v", err)
	}
	e.admin = e.auth(t, e.secret)
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

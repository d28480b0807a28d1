package account_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"

	"latchkey/pkg/account"
	"latchkey/pkg/httpapi/httpapitest"
	"latchkey/pkg/mock"
)

// issuer is the iss of the stack's tokens.
const issuer = httpapitest.Issuer

// env is the test stack's Service (httpapitest.NewServer: the one builder
// of a service over a real store with real Ed25519 tokens), seen from the
// domain: an admin principal that holds "*:*", and a settable clock.
type env struct {
	svc    *account.Service
	store  account.Store
	clock  *mock.Clock
	admin  account.Principal
	secret string // the admin key's secret
	ctx    context.Context
}

func newEnv(t *testing.T) *env {
	t.Helper()
	s := httpapitest.NewServer(t)
	e := &env{svc: s.Service, store: s.Store, clock: s.Clock, ctx: t.Context(), secret: s.AdminKey}
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

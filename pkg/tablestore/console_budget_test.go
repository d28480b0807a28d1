package tablestore_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"latchkey/pkg/account"
	"latchkey/pkg/dynamostore"
	"latchkey/pkg/dynamostore/dynamotest"
)

// TestConsoleRequestBudgets pins the DynamoDB requests of a view of the
// console's key page and organization page, over the DynamoDB store: the
// session's key, the page's key or organization read once, the uses left
// of its rate limits, its usage charts, and, on the organization's page,
// its members and its top keys (docs/console.md, "What a page reads").
func TestConsoleRequestBudgets(t *testing.T) {
	var m meter
	client := dynamotest.NewClient(t, m.option)
	store := dynamostore.New(client, dynamotest.NewTable(t, client), dynamostore.WithTimeout(dynamotest.Timeout)).ReadCopy(1)
	asm := newService(t, store)
	svc, h := asm.Service, asm.Handler()
	ctx := t.Context()
	secret := account.NewAPIKeySecret()
	if err := svc.EnsureBootstrapKey(ctx, secret, time.Time{}); err != nil {
		t.Fatal(err)
	}
	admin, err := svc.Authenticate(ctx, secret)
	if err != nil {
		t.Fatal(err)
	}
	// An organization with a rate limit, and three keys bound to it, each
	// with a rate limit, each verified once: three keys in its ranking.
	limits := []account.RateLimitRequest{{Name: "minute", Limit: 100, Period: "1m"}}
	org, err := svc.CreateOrganization(ctx, admin, account.NewOrganization{Name: "Acme", Slug: "acme", RateLimits: limits})
	if err != nil {
		t.Fatal(err)
	}
	var keys []account.APIKey
	for range 3 {
		k, s, err := svc.CreateAPIKey(ctx, admin, account.NewAPIKey{Name: "bound", Scopes: []string{account.ScopeReadUsers}, OrganizationID: org.ID, RateLimits: limits})
		if err != nil {
			t.Fatal(err)
		}
		p, err := svc.Authenticate(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		tok, _, err := svc.IssueToken(ctx, p, account.TokenRequest{Scopes: []string{account.ScopeReadUsers}})
		if err != nil {
			t.Fatal(err)
		}
		if v, err := svc.VerifyToken(ctx, tok); err != nil || !v.Valid {
			t.Fatalf("verify: %+v, %v", v, err)
		}
		keys = append(keys, k)
	}
	if err := svc.FlushUsage(ctx); err != nil {
		t.Fatal(err)
	}

	form := url.Values{"api_key": {secret}}
	req := httptest.NewRequest(http.MethodPost, testIssuer+"/console/sign-in", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	req.Header.Set("Origin", testIssuer)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var session *http.Cookie
	for _, c := range rec.Result().Cookies() {
		if strings.HasSuffix(c.Name, "latchkey_console") && c.Value != "" {
			session = c
		}
	}
	if session == nil {
		t.Fatalf("sign-in: %d, no session cookie", rec.Code)
	}

	const (
		get   = "GetItem"
		batch = "BatchGetItem"
		query = "Query"
	)
	view := func(path string, want ...string) {
		t.Helper()
		req := httptest.NewRequest(http.MethodGet, testIssuer+path, nil)
		req.AddCookie(session)
		rec := httptest.NewRecorder()
		calls := m.measure(func() { h.ServeHTTP(rec, req) })
		if rec.Code != http.StatusOK {
			t.Fatalf("GET %s: %d", path, rec.Code)
		}
		var ops []string
		for _, c := range calls {
			ops = append(ops, c.op)
		}
		if !slices.Equal(ops, want) {
			t.Errorf("GET %s made %d DynamoDB requests %v, want %d: %v", path, len(ops), ops, len(want), want)
		}
	}
	// The session's key (a BatchGetItem); the key, with its credits (two);
	// its tokens (four); its usage by hour and by day (a Query each); its
	// rate limit's usage record; its organization, for its name.
	view("/console/api-keys/"+keys[0].ID, batch, batch, batch, batch, batch, query, batch, query, query, batch, get)
	// The session's key; the organization; its members (two); its rate
	// limit's usage record; its usage by hour and by day; the ranking's
	// days; then each ranked key, read (two) and its own days for its
	// outcomes (docs/console.md); the users the add-member form offers.
	want := []string{batch, get, get, query, batch, query, query, query}
	for range keys {
		want = append(want, batch, batch, query)
	}
	view("/console/organizations/"+org.ID, append(want, query)...)
}

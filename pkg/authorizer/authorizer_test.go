package authorizer_test

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"latchkey/pkg/account"
	"latchkey/pkg/authorizer"
	"latchkey/pkg/httpapi/httpapitest"
	"latchkey/pkg/logsample"
	"latchkey/pkg/token"
)

func TestParseRoutes(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		r, err := authorizer.ParseRoutes(`{"GET /orders": {"scope": "read:orders", "audience": "https://orders.example.com"}, "*": {"audience": "orders-api"}}`)
		if err != nil {
			t.Fatal(err)
		}
		if r["GET /orders"].Scope != "read:orders" || r[authorizer.AnyRoute].Audience != "orders-api" {
			t.Fatalf("got %+v", r)
		}
		if r, err := authorizer.ParseRoutes(" "); err != nil || len(r) != 0 {
			t.Fatalf("empty: got %v, %v", r, err)
		}
	})
	for name, s := range map[string]string{
		"NotJSON":       `GET /orders=read:orders`,
		"UnknownField":  `{"GET /orders": {"scopes": ["read:orders"]}}`,
		"BadScope":      `{"GET /orders": {"scope": "orders"}}`,
		"BadAudience":   `{"GET /orders": {"audience": "https://x.example/#f"}}`,
		"NoAudience":    `{"GET /orders": {"scope": "read:orders"}}`,
		"AnyNoAudience": `{"*": {}}`,
		"EmptyKey":      `{"": {"scope": "read:orders"}}`,
		"Trailing":      `{} {}`,
	} {
		t.Run("Err"+name, func(t *testing.T) {
			if _, err := authorizer.ParseRoutes(s); err == nil {
				t.Fatal("got nil error")
			}
		})
	}
}

// stack is a real service and store (bbolt, or DynamoDB Local with
// LATCHKEY_TEST_STORE=dynamodb) that issues tokens, and an authorizer that
// verifies them with the public key only.
type stack struct {
	env  *httpapitest.Env
	logs *httpapitest.SyncBuffer
}

func newStack(t *testing.T) stack {
	t.Helper()
	return stack{env: httpapitest.NewServer(t), logs: &httpapitest.SyncBuffer{}}
}

func (s stack) authorizer(routes authorizer.Routes, store account.TokenStatusReader) *authorizer.Authorizer {
	if store == nil {
		store = s.env.Store
	}
	v := account.NewTokenVerifier(store, token.NewParser(httpapitest.Issuer, s.env.PublicKey), s.env.Clock.Now)
	return authorizer.New(v, routes, slog.New(slog.NewJSONHandler(s.logs, nil)), nil)
}

// issue issues a token for a new key holding grants.
func (s stack) issue(t *testing.T, audience, expiresIn string, grants ...string) (string, account.TokenClaims) {
	t.Helper()
	_, secret := s.env.CreateAPIKey(t, grants...)
	p, err := s.env.Service.Authenticate(context.Background(), secret)
	if err != nil {
		t.Fatal(err)
	}
	tok, c, err := s.env.Service.IssueToken(context.Background(), p, account.TokenRequest{Scopes: grants, Audience: audience, ExpiresIn: expiresIn})
	if err != nil {
		t.Fatal(err)
	}
	return tok, c
}

func request(routeKey, authorization string) events.APIGatewayV2CustomAuthorizerV2Request {
	req := events.APIGatewayV2CustomAuthorizerV2Request{
		Version: "2.0", Type: "REQUEST", RouteKey: routeKey, Headers: map[string]string{},
		RouteArn:       "arn:aws:execute-api:us-east-1:123456789012:abcdef1234/$default/GET/orders",
		RequestContext: events.APIGatewayV2HTTPRequestContext{RequestID: "Req" + strings.ReplaceAll(routeKey, " ", "")},
	}
	if authorization != "" {
		req.Headers["authorization"] = authorization
		req.IdentitySource = []string{authorization}
	}
	return req
}

func authorize(t *testing.T, a *authorizer.Authorizer, req events.APIGatewayV2CustomAuthorizerV2Request) events.APIGatewayV2CustomAuthorizerSimpleResponse {
	t.Helper()
	res, err := a.Authorize(context.Background(), req)
	if err != nil {
		t.Fatalf("Authorize: %v", err)
	}
	return res
}

func TestAuthorize(t *testing.T) {
	s := newStack(t)
	const orders = "https://orders.example.com"
	routes := authorizer.Routes{
		"GET /orders":         {Scope: "read:orders", Audience: orders},
		"DELETE /orders/{id}": {Scope: "delete:orders", Audience: orders},
		"GET /public-ish":     {},
		authorizer.AnyRoute:   {Audience: orders},
	}
	a := s.authorizer(routes, nil)
	tok, c := s.issue(t, orders, "", "read:orders")

	t.Run("Valid", func(t *testing.T) {
		res := authorize(t, a, request("GET /orders", "Bearer "+tok))
		want := map[string]any{"token_id": c.ID, "key_id": c.KeyID, "client_id": c.KeyID, "scope": "read:orders", "aud": orders}
		if !res.IsAuthorized || len(res.Context) != len(want) {
			t.Fatalf("got %+v, want authorized with context %v", res, want)
		}
		for k, v := range want {
			if res.Context[k] != v {
				t.Errorf("context %s: got %v, want %v", k, res.Context[k], v)
			}
		}
		// The scheme is case-insensitive.
		if res := authorize(t, a, request("GET /orders", "bearer "+tok)); !res.IsAuthorized {
			t.Error("lower-case scheme: refused")
		}
	})
	t.Run("WildcardGrantCoversTheScope", func(t *testing.T) {
		wide, _ := s.issue(t, orders, "", "*:orders")
		if res := authorize(t, a, request("DELETE /orders/{id}", "Bearer "+wide)); !res.IsAuthorized {
			t.Error("*:orders refused on a route that needs delete:orders")
		}
	})
	t.Run("NoRuleAuthorizesNothing", func(t *testing.T) {
		// A rule without an audience, or no rule at all, authorizes no
		// token: a token for one API never opens another's routes.
		if res := authorize(t, a, request("GET /public-ish", "Bearer "+tok)); res.IsAuthorized {
			t.Error("a route whose rule names no audience authorized a token")
		}
		if res := authorize(t, s.authorizer(nil, nil), request("GET /orders", "Bearer "+tok)); res.IsAuthorized {
			t.Error("without rules, a token was authorized")
		}
		if res := authorize(t, s.authorizer(authorizer.Routes{"GET /orders": {Audience: orders}}, nil), request("GET /elsewhere", "Bearer "+tok)); res.IsAuthorized {
			t.Error("a route neither listed nor covered by * authorized a token")
		}
	})
	t.Run("LatchkeyAudienceNever", func(t *testing.T) {
		// A token for Latchkey's own API (its issuer, the audience of a
		// token requested without one) or its console opens no route,
		// even one whose rule names that audience.
		own, _ := s.issue(t, "", "", "read:orders")
		_, secret := s.env.CreateAPIKey(t, "read:orders")
		kp, err := s.env.Service.Authenticate(context.Background(), secret)
		if err != nil {
			t.Fatal(err)
		}
		console, _, err := s.env.Service.StartSession(context.Background(), kp)
		if err != nil {
			t.Fatal(err)
		}
		latchkey := s.authorizer(authorizer.Routes{
			"GET /orders":  {Scope: "read:orders", Audience: httpapitest.Issuer},
			"GET /console": {Scope: "read:orders", Audience: account.ConsoleAudience(httpapitest.Issuer)},
		}, nil)
		for route, tk := range map[string]string{"GET /orders": own, "GET /console": console} {
			if res := authorize(t, latchkey, request(route, "Bearer "+tk)); res.IsAuthorized {
				t.Errorf("%s: a token for Latchkey's own audience was authorized", route)
			}
		}
		if !strings.Contains(s.logs.String(), `"reason":"latchkey_audience"`) {
			t.Errorf("no decision logged with reason latchkey_audience:\n%s", s.logs.String())
		}
	})

	refused := map[string]events.APIGatewayV2CustomAuthorizerV2Request{
		"MissingHeader":   request("GET /orders", ""),
		"NotBearer":       request("GET /orders", "Basic "+tok),
		"TwoCredentials":  request("GET /orders", "Bearer "+tok+","+tok),
		"NotAToken":       request("GET /orders", "Bearer not-a-token"),
		"APIKey":          request("GET /orders", "Bearer "+s.env.AdminKey),
		"WrongScope":      request("DELETE /orders/{id}", "Bearer "+tok),
		"UnlistedRoute":   request("GET /elsewhere", "Bearer "+func() string { t, _ := s.issue(t, "", "", "read:orders"); return t }()),
		"WrongAudience":   request("GET /orders", "Bearer "+func() string { t, _ := s.issue(t, "https://billing.example.com", "", "read:orders"); return t }()),
		"DefaultAudience": request("GET /orders", "Bearer "+func() string { t, _ := s.issue(t, "", "", "read:orders"); return t }()),
	}
	forged, err := token.NewSigner(newKey(t), httpapitest.Issuer).Sign(account.TokenClaims{
		ID: account.NewID(account.PrefixToken, time.Now()), KeyID: c.KeyID, Audience: orders, Scopes: []string{"*:*"},
		IssuedAt: time.Now(), ExpiresAt: time.Now().Add(time.Hour),
	})
	if err != nil {
		t.Fatal(err)
	}
	refused["Forged"] = request("GET /orders", "Bearer "+forged)
	revoked, _ := s.issue(t, orders, "", "read:orders")
	p, err := s.env.Service.Authenticate(context.Background(), s.env.AdminKey)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.env.Service.RevokeToken(context.Background(), p, revoked); err != nil {
		t.Fatal(err)
	}
	refused["Revoked"] = request("GET /orders", "Bearer "+revoked)
	for name, req := range refused {
		t.Run("Refused/"+name, func(t *testing.T) {
			if res := authorize(t, a, req); res.IsAuthorized || res.Context != nil {
				t.Fatalf("got %+v, want refused with no context", res)
			}
		})
	}

	t.Run("Refused/Expired", func(t *testing.T) {
		s := newStack(t)
		a := s.authorizer(routes, nil)
		tok, _ := s.issue(t, orders, "1m", "read:orders")
		if res := authorize(t, a, request("GET /orders", "Bearer "+tok)); !res.IsAuthorized {
			t.Fatal("refused before it expired")
		}
		s.env.Clock.Advance(time.Minute)
		if res := authorize(t, a, request("GET /orders", "Bearer "+tok)); res.IsAuthorized {
			t.Fatal("authorized once expired")
		}
	})
	t.Run("Refused/KeyDeleted", func(t *testing.T) {
		k, secret := s.env.CreateAPIKey(t, "read:orders")
		kp, _ := s.env.Service.Authenticate(context.Background(), secret)
		tok, _, err := s.env.Service.IssueToken(context.Background(), kp, account.TokenRequest{Scopes: []string{"read:orders"}, Audience: orders})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.env.Service.DeleteAPIKey(context.Background(), p, k.ID); err != nil {
			t.Fatal(err)
		}
		if res := authorize(t, a, request("GET /orders", "Bearer "+tok)); res.IsAuthorized {
			t.Fatal("authorized a token whose key is deleted")
		}
	})

	t.Run("LogsNoToken", func(t *testing.T) {
		if out := s.logs.String(); strings.Contains(out, tok) || strings.Contains(out, s.env.AdminKey) || !strings.Contains(out, `"reason":"insufficient_scope"`) {
			t.Fatalf("logs hold a credential, or no reason:\n%s", out)
		}
	})
}

// failingStore is a table that cannot be read, or written.
type failingStore struct{}

func (failingStore) ChangeKeyUsage(context.Context, string, int, account.UsageChange) (map[string]int64, bool, error) {
	return nil, false, account.Unavailable(errors.New("ProvisionedThroughputExceededException"))
}

func (failingStore) ChangeKeysUsage(context.Context, []account.KeyUsageChange) ([]map[string]int64, bool, error) {
	return nil, false, account.Unavailable(errors.New("ProvisionedThroughputExceededException"))
}

func (failingStore) KeyUsage(context.Context, ...account.UsageRecord) ([]map[string]int64, error) {
	return nil, account.Unavailable(errors.New("ProvisionedThroughputExceededException"))
}

func (failingStore) AddUsage(context.Context, account.UsageFlush) error {
	return account.Unavailable(errors.New("ProvisionedThroughputExceededException"))
}

func (failingStore) ReadUsage(context.Context, string, string, time.Time, time.Time) ([]account.UsageBucket, error) {
	return nil, account.Unavailable(errors.New("ProvisionedThroughputExceededException"))
}

func (failingStore) Formats(context.Context) (account.Formats, error) {
	return account.Formats{}, account.Unavailable(errors.New("ProvisionedThroughputExceededException"))
}

func (failingStore) TokenStatus(context.Context, string, string, []string, string, bool) (account.TokenStatus, error) {
	return account.TokenStatus{}, account.Unavailable(errors.New("ProvisionedThroughputExceededException"))
}

// TestAuthorize_StoreFailure: when the revocation entry cannot be read the
// authorizer returns an error (API Gateway answers 500) rather than
// authorizing a token it could not check, or refusing it as if it were bad.
func TestAuthorize_StoreFailure(t *testing.T) {
	s := newStack(t)
	a := s.authorizer(nil, failingStore{})
	tok, _ := s.issue(t, "", "", "read:orders")
	res, err := a.Authorize(context.Background(), request("GET /orders", "Bearer "+tok))
	if err == nil || res.IsAuthorized {
		t.Fatalf("got %+v, %v; want refused with an error", res, err)
	}
	if strings.Contains(err.Error(), "Provisioned") {
		t.Errorf("the error shows the store's message: %v", err)
	}
}

func newKey(t *testing.T) ed25519.PrivateKey {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	return priv
}

// TestAuthorize_SuccessLogSampled: with a sampler of one in 10, the line
// of one allowed request in 10 is written, with sample_every; the line of
// every refusal (no token, a wrong scope, a revoked token) is written,
// without it. The requests interleave.
func TestAuthorize_SuccessLogSampled(t *testing.T) {
	s := newStack(t)
	const orders = "https://orders.example.com"
	v := account.NewTokenVerifier(s.env.Store, token.NewParser(httpapitest.Issuer, s.env.PublicKey), s.env.Clock.Now)
	a := authorizer.New(v, authorizer.Routes{"GET /orders": {Scope: "read:orders", Audience: orders}, "DELETE /orders/{id}": {Scope: "delete:orders", Audience: orders}},
		slog.New(slog.NewJSONHandler(s.logs, nil)), logsample.New(10))
	tok, _ := s.issue(t, orders, "", "read:orders")
	revoked, _ := s.issue(t, orders, "", "read:orders")
	admin, err := s.env.Service.Authenticate(context.Background(), s.env.AdminKey)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.env.Service.RevokeToken(context.Background(), admin, revoked); err != nil {
		t.Fatal(err)
	}
	for range 100 {
		for _, r := range []struct {
			req     events.APIGatewayV2CustomAuthorizerV2Request
			allowed bool
		}{
			{request("GET /orders", "Bearer "+tok), true},
			{request("GET /orders", ""), false},
			{request("DELETE /orders/{id}", "Bearer "+tok), false},
			{request("GET /orders", "Bearer "+revoked), false},
		} {
			if res := authorize(t, a, r.req); res.IsAuthorized != r.allowed {
				t.Fatalf("%s: authorized %v, want %v", r.req.RouteKey, res.IsAuthorized, r.allowed)
			}
		}
	}
	lines := map[string]int{}
	for _, l := range s.logs.Lines() {
		var line struct {
			Authorized  bool   `json:"authorized"`
			Reason      string `json:"reason"`
			SampleEvery *int   `json:"sample_every"`
		}
		if err := json.Unmarshal([]byte(l), &line); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		kind := "allowed"
		if !line.Authorized {
			kind = line.Reason
		}
		lines[kind]++
		if line.Authorized != (line.SampleEvery != nil && *line.SampleEvery == 10) {
			t.Errorf("authorized %v, sample_every %v: %s", line.Authorized, line.SampleEvery, l)
		}
	}
	want := map[string]int{"allowed": 10, "no_bearer_token": 100, "insufficient_scope": 100, account.ReasonRevoked: 100}
	if len(lines) != len(want) {
		t.Errorf("lines: got %v, want %v", lines, want)
	}
	for kind, n := range want {
		if lines[kind] != n {
			t.Errorf("%s: %d lines of 100 requests, want %d", kind, lines[kind], n)
		}
	}
}

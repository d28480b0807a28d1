package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"latchkey/pkg/account"
	"latchkey/pkg/httpapi"
	"latchkey/pkg/httpapi/httpapitest"
)

func TestErrors(t *testing.T) {
	a := newAPI(t)
	admin := a.AdminKey

	t.Run("InvalidRequest", func(t *testing.T) {
		for _, tc := range []struct {
			name, method, path string
			body               any
			field              string // the field the problem must name; "" for none
		}{
			{"invalid e-mail", http.MethodPost, "/v1/users", `{"email":"not an address","name":"Ada"}`, "email"},
			{"display name in e-mail", http.MethodPost, "/v1/users", `{"email":"Ada <ada@example.com>","name":"Ada"}`, "email"},
			{"missing name", http.MethodPost, "/v1/users", `{"email":"ada@example.com"}`, "name"},
			{"unknown role", http.MethodPost, "/v1/users", `{"email":"ada@example.com","name":"Ada","role":"god"}`, "role"},
			{"wrong type", http.MethodPost, "/v1/users", `{"email":"ada@example.com","name":5}`, "name"},
			{"unknown field", http.MethodPost, "/v1/users", `{"email":"ada@example.com","name":"Ada","admin":true}`, "admin"},
			{"key in another case", http.MethodPost, "/v1/users", `{"Email":"ada@example.com","name":"Ada"}`, "Email"},
			{"repeated key", http.MethodPost, "/v1/users", `{"email":"ada@example.com","name":"A","name":"B"}`, "name"},
			{"array element type", http.MethodPost, "/v1/auth/token", `{"scopes":["read:users",1]}`, "scopes"},
			{"malformed JSON", http.MethodPost, "/v1/users", `{"email":`, ""},
			{"syntax error", http.MethodPost, "/v1/users", `{"email" "x"}`, ""},
			{"trailing data", http.MethodPost, "/v1/users", `{"email":"ada@example.com","name":"Ada"} {}`, ""},
			{"not an object", http.MethodPost, "/v1/users", `["ada@example.com"]`, ""},
			{"empty body", http.MethodPost, "/v1/users", ``, ""},
			{"PUT with another field", http.MethodPut, "/v1/users/" + a.CreateUser(t, uniqueEmail()).ID, `{"name":"Ada","email":"x@example.com"}`, "email"},
			{"bad slug", http.MethodPost, "/v1/organizations", `{"name":"Acme","slug":"-acme"}`, "slug"},
			{"bad plan", http.MethodPost, "/v1/organizations", `{"name":"Acme","slug":"acme","plan":"gold"}`, "plan"},
			{"PATCH of a user with an unknown field", http.MethodPatch, "/v1/users/" + a.CreateUser(t, uniqueEmail()).ID, `{"email":"x@example.com","slug":"x"}`, "slug"},
			{"metadata not an object", http.MethodPost, "/v1/users", `{"email":"m@example.com","name":"M","metadata":["a"]}`, "metadata"},
			{"metadata value not a string", http.MethodPatch, "/v1/organizations/" + a.CreateOrganization(t, uniqueSlug()).ID, `{"metadata":{"n":1}}`, "metadata.n"},
			{"metadata value too long", http.MethodPut, "/v1/users/" + a.CreateUser(t, uniqueEmail()).ID, `{"metadata":{"note":"` + strings.Repeat("x", 501) + `"}}`, "metadata.note"},
			{"external id not a string", http.MethodPut, "/v1/users/" + a.CreateUser(t, uniqueEmail()).ID, `{"external_id":42}`, "external_id"},
			{"bad external id", http.MethodPost, "/v1/organizations", `{"name":"Acme","slug":"acme-ext","external_id":" x"}`, "external_id"},
			{"bad e-mail in PATCH", http.MethodPatch, "/v1/users/" + a.CreateUser(t, uniqueEmail()).ID, `{"email":"nope"}`, "email"},
			{"bad role", http.MethodPut, "/v1/users/" + a.CreateUser(t, uniqueEmail()).ID, `{"role":"owner"}`, "role"},
			{"both lookups", http.MethodGet, "/v1/users?email=a@example.com&external_id=x", nil, "external_id"},
			{"scopes not an array", http.MethodPost, "/v1/auth/token", `{"scopes":"read:users"}`, "scopes"},
			{"malformed scope", http.MethodPost, "/v1/auth/token", `{"scopes":["READ USERS"]}`, "scopes[0]"},
			{"no scopes", http.MethodPost, "/v1/auth/token", `{"scopes":[]}`, "scopes"},
			{"lifetime too long", http.MethodPost, "/v1/auth/token", `{"scopes":["read:users"],"expires_in":"25h"}`, "expires_in"},
			{"lifetime too short", http.MethodPost, "/v1/auth/token", `{"scopes":["read:users"],"expires_in":"59s"}`, "expires_in"},
			{"lifetime grammar", http.MethodPost, "/v1/auth/token", `{"scopes":["read:users"],"expires_in":"1h30m"}`, "expires_in"},
			{"revoke a non-token", http.MethodPost, "/v1/auth/revoke", `{"token":"abc"}`, "token"},
			{"limit 0", http.MethodGet, "/v1/users?limit=0", nil, "limit"},
			{"limit 101", http.MethodGet, "/v1/users?limit=101", nil, "limit"},
			{"limit abc", http.MethodGet, "/v1/organizations?limit=abc", nil, "limit"},
			{"tampered cursor", http.MethodGet, "/v1/users?cursor=dGFtcGVyZWQ.AAAA", nil, "cursor"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				p := wantProblem(t, a.do(tc.method, tc.path, admin, tc.body), http.StatusBadRequest, "invalid_request")
				if tc.field != "" {
					wantField(t, p, tc.field)
				}
				if p.Detail == "" {
					t.Error("no detail")
				}
			})
		}
	})

	t.Run("ForeignCursor", func(t *testing.T) {
		for range 3 {
			a.CreateOrganization(t, uniqueSlug())
		}
		var page struct {
			NextCursor string `json:"next_cursor"`
		}
		a.do(http.MethodGet, "/v1/organizations?limit=1", admin, nil).Decode(t, &page)
		if page.NextCursor == "" {
			t.Fatal("no next_cursor with more organizations to come")
		}
		p := wantProblem(t, a.do(http.MethodGet, "/v1/users?cursor="+page.NextCursor, admin, nil), http.StatusBadRequest, "invalid_request")
		wantField(t, p, "cursor")
	})

	t.Run("Unauthorized", func(t *testing.T) {
		res := a.do(http.MethodGet, "/v1/users", "", nil)
		wantProblem(t, res, http.StatusUnauthorized, "unauthorized")
		if got := res.Header.Get("WWW-Authenticate"); got != `Bearer realm="latchkey"` {
			t.Errorf("WWW-Authenticate: got %q", got)
		}
		res = a.do(http.MethodGet, "/v1/users", "lk_nope", nil)
		wantProblem(t, res, http.StatusUnauthorized, "unauthorized")
		if got := res.Header.Get("WWW-Authenticate"); got != `Bearer realm="latchkey", error="invalid_token"` {
			t.Errorf("WWW-Authenticate: got %q", got)
		}
	})

	t.Run("InsufficientScope", func(t *testing.T) {
		_, key := a.CreateAPIKey(t, "read:users")
		res := a.do(http.MethodPost, "/v1/auth/token", key, map[string]any{"scopes": []string{"write:users"}})
		p := wantProblem(t, res, http.StatusForbidden, "insufficient_scope")
		// The key lacks the requested scope; the endpoint needs none.
		if want := "the API key does not hold the requested scope write:users"; !strings.HasPrefix(p.Detail, want) {
			t.Errorf("detail %q: want it to start %q", p.Detail, want)
		}
		if got := res.Header.Get("WWW-Authenticate"); got != `Bearer realm="latchkey", error="insufficient_scope", scope="write:users"` {
			t.Errorf("WWW-Authenticate: got %q", got)
		}
		wantProblem(t, a.do(http.MethodPost, "/v1/api-keys", key, map[string]any{"name": "k", "scopes": []string{"read:users"}}), http.StatusForbidden, "insufficient_scope")
	})

	t.Run("Forbidden", func(t *testing.T) {
		tok, _ := a.IssueToken(t, admin, "", "*:*")
		wantProblem(t, a.do(http.MethodPost, "/v1/auth/token", tok, map[string]any{"scopes": []string{"read:users"}}), http.StatusForbidden, "forbidden")
		wantProblem(t, a.do(http.MethodGet, "/v1/api-keys", tok, nil), http.StatusForbidden, "forbidden")
		wantProblem(t, a.do(http.MethodPost, "/v1/api-keys", tok, map[string]any{"name": "k", "scopes": []string{"read:users"}}), http.StatusForbidden, "forbidden")

		var keys struct {
			Data []struct {
				ID        string `json:"id"`
				Bootstrap bool   `json:"bootstrap"`
			} `json:"data"`
		}
		a.do(http.MethodGet, "/v1/api-keys?limit=100", admin, nil).Decode(t, &keys)
		for _, k := range keys.Data {
			if k.Bootstrap {
				wantProblem(t, a.do(http.MethodDelete, "/v1/api-keys/"+k.ID, admin, nil), http.StatusForbidden, "forbidden")
				want(t, a.do(http.MethodGet, "/v1/users", admin, nil), http.StatusOK)
				return
			}
		}
		t.Fatal("no bootstrap key in the list")
	})

	t.Run("NotFound", func(t *testing.T) {
		unknown := map[string]string{"usr_": "usr_01ARZ3NDEKTSV4RRFFQ69G5FAV", "org_": "org_01ARZ3NDEKTSV4RRFFQ69G5FAV", "key_": "key_01ARZ3NDEKTSV4RRFFQ69G5FAV"}
		u := a.CreateUser(t, uniqueEmail())
		o := a.CreateOrganization(t, uniqueSlug())
		for _, tc := range []struct {
			method, path string
			body         any
		}{
			{http.MethodGet, "/v1/users/" + unknown["usr_"], nil},
			{http.MethodGet, "/v1/users/usr_123", nil},
			{http.MethodGet, "/v1/users/" + o.ID, nil},
			{http.MethodPut, "/v1/users/" + unknown["usr_"], map[string]any{"name": "x"}},
			{http.MethodDelete, "/v1/users/nonsense", nil},
			{http.MethodGet, "/v1/users/" + unknown["usr_"] + "/organizations", nil},
			{http.MethodGet, "/v1/organizations/" + unknown["org_"], nil},
			{http.MethodGet, "/v1/organizations/org_", nil},
			{http.MethodPatch, "/v1/organizations/" + unknown["org_"], map[string]any{"plan": "pro"}},
			{http.MethodDelete, "/v1/organizations/" + unknown["org_"], nil},
			{http.MethodGet, "/v1/organizations/" + unknown["org_"] + "/members", nil},
			{http.MethodPost, "/v1/organizations/" + unknown["org_"] + "/members", map[string]any{"user_id": u.ID}},
			{http.MethodPost, "/v1/organizations/" + o.ID + "/members", map[string]any{"user_id": unknown["usr_"]}},
			{http.MethodPost, "/v1/organizations/" + o.ID + "/members", map[string]any{"user_id": "usr_bad"}},
			{http.MethodPatch, "/v1/organizations/" + o.ID + "/members/" + u.ID, map[string]any{"role": "admin"}},
			{http.MethodDelete, "/v1/organizations/" + o.ID + "/members/" + u.ID, nil},
			{http.MethodGet, "/v1/api-keys/" + unknown["key_"], nil},
			{http.MethodDelete, "/v1/api-keys/key_x", nil},
			{http.MethodGet, "/v1/nothing", nil},
			{http.MethodGet, "/v2/users", nil},
			{http.MethodGet, "/v1/users/" + u.ID + "/nothing", nil},
		} {
			wantProblem(t, a.do(tc.method, tc.path, admin, tc.body), http.StatusNotFound, "not_found")
		}
	})

	t.Run("MethodNotAllowed", func(t *testing.T) {
		for _, tc := range []struct{ method, path, allow string }{
			{http.MethodDelete, "/v1/users", "GET, POST, HEAD"},
			{http.MethodPost, "/v1/users/" + a.CreateUser(t, uniqueEmail()).ID, "GET, PUT, PATCH, DELETE, HEAD"},
			{http.MethodPost, "/v1/auth/verify", "GET"},
			{http.MethodHead, "/v1/auth/verify", "GET"}, // a HEAD would pay for a verdict it never gets
			{http.MethodGet, "/v1/auth/token", "POST"},
			{http.MethodPut, "/v1/organizations/org_x/members/usr_y", "GET, PATCH, DELETE, HEAD"},
		} {
			res := a.do(tc.method, tc.path, admin, nil)
			wantProblem(t, res, http.StatusMethodNotAllowed, "method_not_allowed")
			if got := res.Header.Get("Allow"); got != tc.allow {
				t.Errorf("%s %s: Allow %q, want %q", tc.method, tc.path, got, tc.allow)
			}
		}
	})

	t.Run("Conflicts", func(t *testing.T) {
		email := uniqueEmail()
		want(t, a.do(http.MethodPost, "/v1/users", admin, map[string]any{"email": email, "name": "A"}), http.StatusCreated)
		wantProblem(t, a.do(http.MethodPost, "/v1/users", admin, map[string]any{"email": strings.ToUpper(email), "name": "B"}), http.StatusConflict, "email_taken")

		slug := uniqueSlug()
		want(t, a.do(http.MethodPost, "/v1/organizations", admin, map[string]any{"name": "A", "slug": slug}), http.StatusCreated)
		wantProblem(t, a.do(http.MethodPost, "/v1/organizations", admin, map[string]any{"name": "B", "slug": slug}), http.StatusConflict, "slug_taken")

		o, u := a.CreateOrganization(t, uniqueSlug()), a.CreateUser(t, uniqueEmail())
		path := "/v1/organizations/" + o.ID + "/members"
		want(t, a.do(http.MethodPost, path, admin, map[string]any{"user_id": u.ID}), http.StatusCreated)
		wantProblem(t, a.do(http.MethodPost, path, admin, map[string]any{"user_id": u.ID, "role": "owner"}), http.StatusConflict, "already_member")
	})

	t.Run("PayloadTooLarge", func(t *testing.T) {
		big := `{"email":"ada@example.com","name":"` + strings.Repeat("a", httpapi.MaxBodyBytes) + `"}`
		wantProblem(t, a.do(http.MethodPost, "/v1/users", admin, big), http.StatusRequestEntityTooLarge, "payload_too_large")
	})

	t.Run("UnsupportedMediaType", func(t *testing.T) {
		body := `{"email":"` + uniqueEmail() + `","name":"Ada"}`
		for _, tc := range []struct {
			contentType string
			status      int
		}{
			{"", http.StatusUnsupportedMediaType},
			{"text/plain", http.StatusUnsupportedMediaType},
			{"application/x-www-form-urlencoded", http.StatusUnsupportedMediaType},
			{"application/json; charset=latin1", http.StatusUnsupportedMediaType},
			{"application/json; charset=UTF-8", http.StatusCreated},
		} {
			h := http.Header{"Authorization": {"Bearer " + admin}}
			if tc.contentType != "" {
				h.Set("Content-Type", tc.contentType)
			}
			res := a.DoRaw(t, a.Handler, http.MethodPost, "/v1/users", h, body)
			a.CheckResponse(t, res)
			if tc.status == http.StatusCreated {
				want(t, res, tc.status)
			} else {
				wantProblem(t, res, tc.status, "unsupported_media_type")
			}
		}
	})
}

// TestFailures checks the answers to failures of dependencies: a generic 500
// whose cause is logged with the request id, recovery from a panic, and 503
// with Retry-After.
func TestFailures(t *testing.T) {
	env := httpapitest.NewServer(t)
	newHandler := func(jwks func(context.Context) ([]byte, error)) (http.Handler, *httpapitest.SyncBuffer) {
		logs := &httpapitest.SyncBuffer{}
		cfg := env.Config
		cfg.JWKS = jwks
		cfg.Logger = slog.New(slog.NewJSONHandler(logs, nil))
		return httpapi.New(cfg, httpapi.GroupAuth), logs
	}

	t.Run("Internal", func(t *testing.T) {
		h, logs := newHandler(func(context.Context) ([]byte, error) { return nil, errors.New("disk on fire at /secret/path") })
		res := env.DoRaw(t, h, http.MethodGet, "/v1/auth/jwks", nil, nil)
		env.CheckResponse(t, res)
		p := wantProblem(t, res, http.StatusInternalServerError, "internal")
		if strings.Contains(string(res.Body), "disk on fire") {
			t.Errorf("the internal message reached the client: %s", res.Body)
		}
		if !strings.Contains(logs.String(), "disk on fire") || !strings.Contains(logs.String(), p.RequestID) {
			t.Errorf("the cause is not logged with request id %s: %s", p.RequestID, logs)
		}
	})

	t.Run("Panic", func(t *testing.T) {
		h, logs := newHandler(func(context.Context) ([]byte, error) { panic("boom") })
		res := env.DoRaw(t, h, http.MethodGet, "/v1/auth/jwks", nil, nil)
		env.CheckResponse(t, res)
		wantProblem(t, res, http.StatusInternalServerError, "internal")
		if !strings.Contains(logs.String(), "boom") || !strings.Contains(logs.String(), `"status":500`) {
			t.Errorf("the panic is not logged: %s", logs)
		}
	})

	t.Run("Unavailable", func(t *testing.T) {
		h, _ := newHandler(func(context.Context) ([]byte, error) { return nil, account.Unavailable(errors.New("throttled")) })
		res := env.DoRaw(t, h, http.MethodGet, "/v1/auth/jwks", nil, nil)
		env.CheckResponse(t, res)
		wantProblem(t, res, http.StatusServiceUnavailable, "unavailable")
		if res.Header.Get("Retry-After") == "" {
			t.Error("503 without Retry-After")
		}
	})

	t.Run("Abandoned", func(t *testing.T) {
		// The client goes away while a dependency works for it, and the
		// dependency stops with the request's context error (as the
		// DynamoDB store does): nothing failed, so nothing is logged as an
		// error or an outage, only that the request was abandoned.
		ctx, cancel := context.WithCancel(t.Context())
		h, logs := newHandler(func(ctx context.Context) ([]byte, error) {
			cancel() // the client goes away while the dependency works
			<-ctx.Done()
			return nil, fmt.Errorf("dynamostore: GetItem abandoned by the caller: %w", ctx.Err())
		})
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequestWithContext(ctx, http.MethodGet, "/v1/auth/jwks", nil))
		for _, line := range logs.Lines() {
			var l struct{ Level, Msg string }
			if err := json.Unmarshal([]byte(line), &l); err != nil {
				t.Fatalf("log line is not JSON: %s", line)
			}
			if l.Level != "INFO" {
				t.Errorf("abandoned request logged at %s: %s", l.Level, line)
			}
		}
		if !strings.Contains(logs.String(), `"msg":"request abandoned by the client"`) {
			t.Errorf("the abandoned request is not logged as such: %s", logs)
		}
	})
}

// TestGroups checks that a group's handler serves only its own routes.
func TestGroups(t *testing.T) {
	env := httpapitest.NewServer(t)
	h := httpapi.New(env.Config, httpapi.GroupUsers)
	auth := http.Header{"Authorization": {"Bearer " + env.AdminKey}}
	for _, tc := range []struct {
		path   string
		status int
	}{
		{"/v1/users", http.StatusOK},
		{"/v1/organizations", http.StatusNotFound},
		{"/v1/auth/jwks", http.StatusNotFound},
	} {
		res := env.DoRaw(t, h, http.MethodGet, tc.path, auth, nil)
		if tc.status == http.StatusOK {
			env.CheckResponse(t, res)
			want(t, res, tc.status)
		} else {
			// openapi.yaml describes the whole API; this handler serves one
			// group, so other groups' paths are unknown to it.
			wantProblem(t, res, tc.status, "not_found")
		}
	}
}

var generatedID = regexp.MustCompile(`^[0-9a-f]{32}$`)

// TestRequestIDAndLogs checks the request id and the one log line per
// request, which must never hold a credential.
func TestRequestIDAndLogs(t *testing.T) {
	env := httpapitest.NewServer(t)
	tok, _ := env.IssueToken(t, env.AdminKey, "", "read:users")
	res := env.Do(t, http.MethodGet, "/v1/users?limit=5", tok, nil)
	want(t, res, http.StatusOK)
	id := res.Header.Get("X-Request-Id")
	if len(id) < 16 {
		t.Fatalf("X-Request-Id %q: want a generated id", id)
	}
	var line map[string]any
	lines := strings.Split(strings.TrimSpace(env.Logs.String()), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &line); err != nil {
		t.Fatalf("log line %q: %v", lines[len(lines)-1], err)
	}
	if line["method"] != "GET" || line["route"] != "GET /v1/users" || line["status"] != float64(200) || line["request_id"] != id || line["duration_ms"] == nil {
		t.Errorf("log line: got %v", line)
	}
	env.Do(t, http.MethodPost, "/v1/users", env.AdminKey, map[string]any{"email": "secret-body@example.com", "name": "Ada"})
	for _, secret := range []string{tok, env.AdminKey, "secret-body", "Authorization", "limit=5"} {
		if strings.Contains(env.Logs.String(), secret) {
			t.Errorf("the logs hold %.20q…", secret)
		}
	}

	cfg := env.Config
	cfg.RequestID = func(r *http.Request) string { return r.Header.Get("X-Upstream-Id") }
	h := httpapi.New(cfg)
	res = env.DoRaw(t, h, http.MethodGet, "/v1/nothing", http.Header{"X-Upstream-Id": {"gw-123"}}, nil)
	if got := res.Header.Get("X-Request-Id"); got != "gw-123" {
		t.Errorf("upstream id: got %q, want gw-123", got)
	}
	if p := wantProblem(t, res, http.StatusNotFound, "not_found"); p.RequestID != "gw-123" {
		t.Errorf("problem request_id: got %q", p.RequestID)
	}
	if res = env.DoRaw(t, h, http.MethodGet, "/v1/nothing", nil, nil); len(res.Header.Get("X-Request-Id")) < 16 {
		t.Errorf("an empty upstream id must be replaced by a generated one, got %q", res.Header.Get("X-Request-Id"))
	}
	// Generated ids are 128 bits in hex, and never repeat.
	ids := map[string]bool{}
	for range 500 {
		id := env.DoRaw(t, h, http.MethodGet, "/v1/nothing", nil, nil).Header.Get("X-Request-Id")
		if !generatedID.MatchString(id) || ids[id] {
			t.Fatalf("generated id %q: want 32 hex digits, new each time", id)
		}
		ids[id] = true
	}

	// A logger with attributes of its own (a function's name) writes them
	// on the request line, beside the same fields with the same values.
	var logs httpapitest.SyncBuffer
	cfg = env.Config
	cfg.Logger = slog.New(slog.NewJSONHandler(&logs, nil)).With("function", "users")
	res = env.DoRaw(t, httpapi.New(cfg), http.MethodGet, "/v1/users?limit=5", http.Header{"Authorization": {"Bearer " + tok}}, nil)
	want(t, res, http.StatusOK)
	line = nil
	if err := json.Unmarshal([]byte(logs.String()), &line); err != nil {
		t.Fatalf("log line %q: %v", logs.String(), err)
	}
	if line["msg"] != "request" || line["level"] != "INFO" || line["function"] != "users" || line["method"] != "GET" || line["route"] != "GET /v1/users" ||
		line["status"] != float64(200) || line["request_id"] != res.Header.Get("X-Request-Id") || line["duration_ms"] == nil || line["time"] == nil || len(line) != 9 {
		t.Errorf("log line: got %v", line)
	}
}

// TestAuthorizationBeforeValidation: a caller without the route's scope is
// refused before its body is read, so a 403 is all it learns.
func TestAuthorizationBeforeValidation(t *testing.T) {
	a := newAPI(t)
	_, readOnly := a.CreateAPIKey(t, account.ScopeReadUsers)
	token, _ := a.IssueToken(t, readOnly, "15m", account.ScopeReadUsers)

	for _, tc := range []struct {
		name, method, path, credential string
		body                           any
		code                           string
	}{
		{"malformed body, key without the scope", http.MethodPost, "/v1/users", readOnly, `{"email":`, "insufficient_scope"},
		{"invalid body, key without the scope", http.MethodPost, "/v1/organizations", readOnly, `{"slug":"-"}`, "insufficient_scope"},
		{"malformed body, token on a key-only route", http.MethodPost, "/v1/api-keys", token, `{"name":`, "forbidden"},
		{"malformed body, token on token issuance", http.MethodPost, "/v1/auth/token", token, `[`, "forbidden"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantProblem(t, a.do(tc.method, tc.path, tc.credential, tc.body), http.StatusForbidden, tc.code)
		})
	}
}

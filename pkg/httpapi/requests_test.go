package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"latchkey/pkg/account"
	"latchkey/pkg/httpapi"
	"latchkey/pkg/httpapi/httpapitest"
)

// TestInvalidUTF8: a JSON string that is not valid UTF-8, raw or through an
// unpaired surrogate escape, is refused with 400 naming the field, instead
// of reaching the store with U+FFFD in its place.
func TestInvalidUTF8(t *testing.T) {
	a := newAPI(t)
	admin := a.AdminKey
	user := a.CreateUser(t, uniqueEmail())

	t.Run("Refused", func(t *testing.T) {
		for _, tc := range []struct {
			name, method, path, body, field string
		}{
			{"raw byte in a value", http.MethodPost, "/v1/users", "{\"email\":\"utf8-a@example.com\",\"name\":\"A\xffda\"}", "name"},
			{"truncated sequence in a value", http.MethodPost, "/v1/users", "{\"email\":\"utf8-b@example.com\",\"name\":\"Zo\xc3\"}", "name"},
			{"overlong encoding", http.MethodPost, "/v1/users", "{\"email\":\"utf8-c@example.com\",\"name\":\"\xc0\xaf\"}", "name"},
			{"encoded surrogate", http.MethodPost, "/v1/users", "{\"email\":\"utf8-d@example.com\",\"name\":\"\xed\xa0\x80\"}", "name"},
			{"array element", http.MethodPost, "/v1/auth/token", "{\"scopes\":[\"read:users\",\"read:\xfe\"]}", "scopes[1]"},
			{"nested value", http.MethodPost, "/v1/users", "{\"meta\":{\"tags\":[\"x\",{\"k\":\"\xff\"}]}}", "meta.tags[1].k"},
			{"key", http.MethodPost, "/v1/users", "{\"email\":\"utf8-e@example.com\",\"na\xffme\":\"Ada\"}", "na\uFFFDme"},
			{"unpaired high surrogate escape", http.MethodPost, "/v1/users", `{"email":"utf8-f@example.com","name":"A\ud800da"}`, "name"},
			{"unpaired low surrogate escape", http.MethodPut, "/v1/users/" + user.ID, `{"name":"\uDC00"}`, "name"},
			{"high surrogate escape then a character", http.MethodPost, "/v1/organizations", `{"name":"\ud83d\u0041","slug":"utf8"}`, "name"},
			{"after a valid field", http.MethodPatch, "/v1/organizations/" + a.CreateOrganization(t, uniqueSlug()).ID, "{\"plan\":\"pro\",\"name\":\"\x80\"}", "name"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				p := wantProblem(t, a.do(tc.method, tc.path, admin, tc.body), http.StatusBadRequest, "invalid_request")
				wantField(t, p, tc.field)
			})
		}
		// Nothing was stored: the e-mail addresses of the refused creates are free.
		var list struct {
			Data []struct{ Name string } `json:"data"`
		}
		a.do(http.MethodGet, "/v1/users?limit=100", admin, nil).Decode(t, &list)
		for _, u := range list.Data {
			if strings.ContainsRune(u.Name, '\uFFFD') {
				t.Errorf("a user named %q was stored", u.Name)
			}
		}
	})

	t.Run("OutsideStrings", func(t *testing.T) {
		p := wantProblem(t, a.do(http.MethodPost, "/v1/users", admin, "{\"email\":\"utf8-g@example.com\",\"name\":\"Ada\"}\xff"), http.StatusBadRequest, "invalid_request")
		if !strings.Contains(p.Detail, "UTF-8") {
			t.Errorf("detail %q does not say what is wrong", p.Detail)
		}
	})

	t.Run("Accepted", func(t *testing.T) {
		for _, tc := range []struct{ body, name string }{
			{`{"email":"` + uniqueEmail() + `","name":"Zoë Ångström 李"}`, "Zoë Ångström 李"},
			{`{"email":"` + uniqueEmail() + `","name":"Ada \ud83d\ude00"}`, "Ada 😀"},
			{`{"email":"` + uniqueEmail() + `","name":"back\\ud800slash"}`, `back\ud800slash`},
		} {
			res := a.do(http.MethodPost, "/v1/users", admin, tc.body)
			want(t, res, http.StatusCreated)
			if got := res.Map(t)["name"]; got != tc.name {
				t.Errorf("name: got %q, want %q", got, tc.name)
			}
		}
	})
}

// routePath returns r's path with its parameters filled in from ids
// (parameter name in braces -> value, per path prefix where names repeat).
func routePath(r httpapi.Route, ids map[string]string) string {
	out := r.Path
	for _, prefix := range []string{"/v1/users/", "/v1/organizations/", "/v1/api-keys/"} {
		if strings.HasPrefix(out, prefix+"{id}") {
			out = prefix + ids[prefix] + strings.TrimPrefix(out, prefix+"{id}")
		}
	}
	return strings.ReplaceAll(out, "{user_id}", ids["{user_id}"])
}

// seedAll seeds one of everything a path can name and returns the ids by
// routePath's keys.
func seedAll(t *testing.T, a api) map[string]string {
	t.Helper()
	u := a.CreateUser(t, uniqueEmail())
	o := a.CreateOrganization(t, uniqueSlug())
	a.AddMember(t, o.ID, u.ID, "member")
	k, _ := a.CreateAPIKey(t, "read:users")
	return map[string]string{"/v1/users/": u.ID, "/v1/organizations/": o.ID, "/v1/api-keys/": k.ID, "{user_id}": u.ID}
}

// TestQueryParameters: every route refuses a query parameter it does not
// take, as it refuses an unknown body field, before doing anything.
func TestQueryParameters(t *testing.T) {
	a := newAPI(t)
	admin := a.AdminKey
	ids := seedAll(t, a)

	t.Run("Unknown", func(t *testing.T) {
		for _, r := range httpapi.Routes() {
			t.Run(r.Method+" "+r.Path, func(t *testing.T) {
				if r.OAuth() {
					// Its parameters go in the body; in the URI they could
					// carry a client secret into logs (RFC 6749 2.3.1).
					wantOAuthError(t, a.form(routePath(r, ids)+"?limit=5&plan=x", client{bearer: admin}, nil), http.StatusBadRequest, "invalid_request")
					return
				}
				p := wantProblem(t, a.do(r.Method, routePath(r, ids)+"?limit=5&plan=x", admin, nil), http.StatusBadRequest, "invalid_request")
				wantField(t, p, "plan")
				if !slices.Contains(r.Query, "limit") {
					wantField(t, p, "limit") // every unknown one is named
				} else {
					for _, e := range p.Errors {
						if e.Field == "limit" {
							t.Errorf("limit is refused: %s", e.Message)
						}
					}
				}
			})
		}
		// The DELETEs above were refused before they ran.
		for _, path := range []string{"/v1/users/" + ids["/v1/users/"], "/v1/organizations/" + ids["/v1/organizations/"], "/v1/api-keys/" + ids["/v1/api-keys/"]} {
			want(t, a.do(http.MethodGet, path, admin, nil), http.StatusOK)
		}
	})

	t.Run("Malformed", func(t *testing.T) {
		for _, tc := range []struct{ query, field string }{
			{"limit=1&limit=2", "limit"}, // repeated: which one counts?
			{"email=a@example.com&email=", "email"},
			{"LIMIT=1", "LIMIT"},     // names are case-sensitive
			{"limit=%zz", ""},        // a bad escape would be dropped silently
			{"limit=1;cursor=x", ""}, // so would a semicolon
			{"=x", ""},               // a value without a name
		} {
			t.Run(tc.query, func(t *testing.T) {
				p := wantProblem(t, a.do(http.MethodGet, "/v1/users?"+tc.query, admin, nil), http.StatusBadRequest, "invalid_request")
				if tc.field != "" {
					wantField(t, p, tc.field)
				}
			})
		}
	})

	t.Run("EmptyLookup", func(t *testing.T) {
		// A lookup of nothing is refused, not answered with the whole
		// list, which is what leaving the parameter out asks for: a client
		// that sends ?external_id= with an unset variable must not take the
		// newest user for the one it looked up.
		for _, tc := range []struct{ path, field string }{
			{"/v1/users?email=", "email"},
			{"/v1/users?external_id=", "external_id"},
			{"/v1/organizations?slug=", "slug"},
			{"/v1/organizations?external_id=&limit=1", "external_id"},
			{"/v1/api-keys?organization_id=", "organization_id"},
			{"/v1/api-keys?owner_id", "owner_id"},
		} {
			t.Run(tc.path, func(t *testing.T) {
				wantField(t, wantProblem(t, a.do(http.MethodGet, tc.path, admin, nil), http.StatusBadRequest, "invalid_request"), tc.field)
			})
		}
	})

	t.Run("Accepted", func(t *testing.T) {
		for _, path := range []string{"/v1/users?", "/v1/users?&", "/v1/users?limit=2", "/v1/users?email=nobody%40example.com&limit=1", "/v1/organizations?limit=1"} {
			want(t, a.do(http.MethodGet, path, admin, nil), http.StatusOK)
		}
	})
}

// TestNonCanonicalPaths: a path that is not in canonical form is no route's
// path, 404 problem+json, never a redirect to the route it would clean to.
func TestNonCanonicalPaths(t *testing.T) {
	a := newAPI(t)
	admin := a.AdminKey
	ids := seedAll(t, a)
	user := "/v1/users/" + ids["/v1/users/"]
	for _, tc := range []struct{ method, path string }{
		{http.MethodGet, "//v1/users"},
		{http.MethodGet, "/v1//users"},
		{http.MethodGet, "/v1/users/"},
		{http.MethodGet, "/v1/./users"},
		{http.MethodGet, "/v1/users/../api-keys"},
		{http.MethodGet, "/v1/users/%2E%2E/api-keys"},
		{http.MethodGet, "/v1/users/%2e/"},
		{http.MethodGet, "/v1/users%2F" + ids["/v1/users/"]},
		{http.MethodGet, user + "%2Forganizations"},
		{http.MethodGet, user + "/."},
		{http.MethodGet, user + "/organizations/"},
		{http.MethodGet, "/v1/auth/jwks/"},
		{http.MethodGet, "*"},
		{http.MethodHead, "//v1/users"},
		{http.MethodPost, "//v1/users"},
		{http.MethodDelete, user + "/"},
		{http.MethodDelete, "/v1/organizations/../users/" + ids["/v1/users/"]},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			if tc.method == http.MethodHead { // no body to check against the document
				res := a.Do(t, tc.method, tc.path, admin, nil)
				want(t, res, http.StatusNotFound)
				if ct := res.Header.Get("Content-Type"); ct != "application/problem+json" {
					t.Errorf("Content-Type %q", ct)
				}
				return
			}
			res := a.do(tc.method, tc.path, admin, nil)
			wantProblem(t, res, http.StatusNotFound, "not_found")
			if loc := res.Header.Get("Location"); loc != "" {
				t.Errorf("Location %q: a non-canonical path is not redirected", loc)
			}
		})
	}
	want(t, a.do(http.MethodGet, user, admin, nil), http.StatusOK) // the DELETEs did nothing
}

// TestLongPathsAndQueries: a path longer than httpapi.MaxPathBytes names
// no resource, 404 before anything else, even before the credential is
// looked at; a query string longer than httpapi.MaxQueryBytes is 400 as a
// whole, before its parameters are parsed. One byte less is an ordinary
// request.
func TestLongPathsAndQueries(t *testing.T) {
	a := newAPI(t)
	admin := a.AdminKey
	pathOf := func(n int) string {
		return "/v1/users/" + strings.Repeat("a", n-len("/v1/users/"))
	}

	t.Run("Path", func(t *testing.T) {
		wantProblem(t, a.do(http.MethodGet, pathOf(httpapi.MaxPathBytes+1), "", nil), http.StatusNotFound, "not_found")
		wantProblem(t, a.do(http.MethodDelete, pathOf(httpapi.MaxPathBytes+1), admin, nil), http.StatusNotFound, "not_found")
		// Percent-encoded, the path as sent is what counts.
		escaped := "/v1/users/" + strings.Repeat("%61", (httpapi.MaxPathBytes-len("/v1/users/"))/3+1)
		wantProblem(t, a.do(http.MethodGet, escaped, "", nil), http.StatusNotFound, "not_found")
		// At the limit, the route answers: no credential, 401.
		wantProblem(t, a.do(http.MethodGet, pathOf(httpapi.MaxPathBytes), "", nil), http.StatusUnauthorized, "unauthorized")
	})

	t.Run("Query", func(t *testing.T) {
		query := func(n int) string {
			return "?email=" + strings.Repeat("a", n-len("email=")-len("@example.com")) + "@example.com"
		}
		p := wantProblem(t, a.do(http.MethodGet, "/v1/users"+query(httpapi.MaxQueryBytes+1), admin, nil), http.StatusBadRequest, "invalid_request")
		if len(p.Errors) != 0 || !strings.Contains(p.Detail, "query string is longer than") {
			t.Errorf("got %+v, want the query string refused as a whole", p)
		}
		// Like every query error, after authorization.
		wantProblem(t, a.do(http.MethodGet, "/v1/users"+query(httpapi.MaxQueryBytes+1), "", nil), http.StatusUnauthorized, "unauthorized")
		// At the limit, the parameter is checked: too long an e-mail.
		p = wantProblem(t, a.do(http.MethodGet, "/v1/users"+query(httpapi.MaxQueryBytes), admin, nil), http.StatusBadRequest, "invalid_request")
		wantField(t, p, "email")
	})

	t.Run("LongestLegitimate", func(t *testing.T) {
		// An external id or owner id is 256 characters of up to 4 bytes
		// each: percent-encoded, 3 KiB. Its lookup, with the other
		// parameters of the route at their longest but the cursor, which
		// the service checks before the lookup, is answered.
		id := strings.Repeat("😀", account.MaxExternalIDLength)
		org := a.CreateOrganization(t, uniqueSlug())
		res := a.do(http.MethodPost, "/v1/api-keys", admin, map[string]any{"name": "longest", "scopes": []string{"read:users"}, "organization_id": org.ID, "owner_id": id})
		want(t, res, http.StatusCreated)
		keyID := res.Map(t)["id"]
		res = a.do(http.MethodPost, "/v1/users", admin, map[string]any{"email": uniqueEmail(), "name": "Longest", "external_id": id})
		want(t, res, http.StatusCreated)
		userID := res.Map(t)["id"]
		for path, wantID := range map[string]any{
			"/v1/api-keys?limit=100&organization_id=" + org.ID + "&owner_id=" + url.QueryEscape(id): keyID,
			"/v1/users?limit=100&external_id=" + url.QueryEscape(id):                                userID,
		} {
			var list struct {
				Data []map[string]any `json:"data"`
			}
			res := a.do(http.MethodGet, path, admin, nil)
			want(t, res, http.StatusOK)
			res.Decode(t, &list)
			if len(list.Data) != 1 || list.Data[0]["id"] != wantID {
				t.Errorf("GET %.40s… (%d bytes of query): got %v, want %v", path, len(path)-strings.IndexByte(path, '?')-1, list.Data, wantID)
			}
		}
	})
}

// TestErrorsAreProblems sends every route the requests it must refuse, and
// checks that every refusal is problem+json as openapi.yaml describes: the
// only responses that are not are the OAuth endpoints' own errors (RFC 6749
// section 5.2 JSON, also described there) and those from net/http before
// any handler runs (see cmd/local's TestServer_ProtocolErrors).
func TestErrorsAreProblems(t *testing.T) {
	a := newAPI(t)
	ids := seedAll(t, a)
	_, other := a.CreateAPIKey(t, "read:invoices") // holds none of the route scopes
	token, _ := a.IssueToken(t, a.AdminKey, "", "*:*")
	unknown := map[string]string{"/v1/users/": "usr_01ARZ3NDEKTSV4RRFFQ69G5FAV", "/v1/organizations/": "org_01ARZ3NDEKTSV4RRFFQ69G5FAV", "/v1/api-keys/": "key_01ARZ3NDEKTSV4RRFFQ69G5FAV", "{user_id}": "usr_01ARZ3NDEKTSV4RRFFQ69G5FAV"}
	type request struct {
		name, method, path, credential string
		header                         http.Header
		body                           any
		noContentType                  bool
		// router: refused by the router, before the route (an unknown
		// path or method): problem+json on every path.
		router bool
	}
	for _, r := range httpapi.Routes() {
		path := routePath(r, ids)
		reqs := []request{
			{"unknown query parameter", r.Method, path + "?unknown=1", a.AdminKey, nil, nil, false, false},
			{"trailing slash", r.Method, path + "/", a.AdminKey, nil, nil, false, true},
			{"double slash", r.Method, "/" + path, a.AdminKey, nil, nil, false, true},
			{"dot segment", r.Method, dotSegment(path), a.AdminKey, nil, nil, false, true},
			{"method not allowed", "TRACE", path, a.AdminKey, nil, nil, false, true},
		}
		if !r.Public() {
			reqs = append(reqs,
				request{"no credential", r.Method, path, "", nil, nil, false, false},
				request{"malformed header", r.Method, path, "", http.Header{"Authorization": {"Basic YTpi"}}, nil, false, false},
			)
		}
		if !r.Public() && r.Path != "/v1/auth/verify" {
			reqs = append(reqs, request{"unknown credential", r.Method, path, "lk_unknown", nil, nil, false, false})
		}
		if r.Scope() != "" {
			reqs = append(reqs, request{"without the scope", r.Method, path, other, nil, nil, false, false})
		}
		if strings.Contains(r.Path, "{") {
			reqs = append(reqs, request{"unknown id", r.Method, routePath(r, unknown), a.AdminKey, nil, nil, false, false})
		}
		if strings.HasPrefix(r.Path, "/v1/api-keys") || r.Path == "/v1/auth/token" {
			reqs = append(reqs, request{"access token on a key-only route", r.Method, path, token, nil, nil, false, false})
		}
		if r.Method == http.MethodPost || r.Method == http.MethodPut || r.Method == http.MethodPatch {
			reqs = append(reqs,
				request{"no content type", r.Method, path, a.AdminKey, nil, `{}`, true, false},
				request{"empty body", r.Method, path, a.AdminKey, nil, "", false, false},
				request{"malformed JSON", r.Method, path, a.AdminKey, nil, `{"`, false, false},
				request{"unknown field", r.Method, path, a.AdminKey, nil, `{"unknown":1}`, false, false},
				request{"invalid UTF-8", r.Method, path, a.AdminKey, nil, "{\"name\":\"\xff\"}", false, false},
				request{"too large", r.Method, path, a.AdminKey, nil, `{"name":"` + strings.Repeat("a", httpapi.MaxBodyBytes) + `"}`, false, false},
			)
		}
		for _, req := range reqs {
			t.Run(r.Method+" "+r.Path+"/"+req.name, func(t *testing.T) {
				h := http.Header{}
				if req.credential != "" {
					h.Set("Authorization", "Bearer "+req.credential)
				}
				if req.body != nil && !req.noContentType {
					h.Set("Content-Type", "application/json")
				}
				for k, v := range req.header {
					h[k] = v
				}
				res := a.DoRaw(t, a.Handler, req.method, req.path, h, req.body)
				a.CheckResponse(t, res)
				if res.StatusCode < 400 {
					t.Fatalf("got %d %s, want an error", res.StatusCode, res.Body)
				}
				want := "application/problem+json"
				if r.OAuth() && !req.router {
					want = "application/json" // checked as an OAuth error by CheckResponse
				}
				if ct := res.Header.Get("Content-Type"); ct != want {
					t.Fatalf("got %d with Content-Type %q, want %s", res.StatusCode, ct, want)
				}
			})
		}
	}
}

// dotSegment inserts a "." segment after the path's first segment.
func dotSegment(path string) string {
	i := strings.Index(path[1:], "/") + 1
	return path[:i] + "/." + path[i:]
}

// TestStaticRoutes: each route without wildcards is served as ServeMux
// serves it: each route's request reaches that route (the request line
// names it), a path spelled with an escape ServeMux decodes reaches it
// too, HEAD of a GET route is that route's, and another method is 405.
func TestStaticRoutes(t *testing.T) {
	env := httpapitest.NewServer(t)
	h := httpapi.New(env.Config)
	route := func(method, path string) (int, string) {
		t.Helper()
		env.Logs.Reset()
		res := env.DoRaw(t, h, method, path, nil, nil)
		var line struct{ Route string }
		if err := json.Unmarshal([]byte(env.Logs.String()), &line); err != nil {
			t.Fatalf("%s %s: log %q: %v", method, path, env.Logs.String(), err)
		}
		return res.StatusCode, line.Route
	}
	n := 0
	for _, r := range httpapi.Routes() {
		if strings.Contains(r.Path, "{") {
			continue
		}
		n++
		if _, got := route(r.Method, r.Path); got != r.Method+" "+r.Path {
			t.Errorf("%s %s: served by %q", r.Method, r.Path, got)
		}
	}
	if n < 10 {
		t.Fatalf("only %d routes without wildcards", n)
	}
	if _, got := route(http.MethodGet, "/v1/auth/%76erify"); got != "GET /v1/auth/verify" {
		t.Errorf("GET /v1/auth/%%76erify: served by %q, as ServeMux would by GET /v1/auth/verify", got)
	}
	// An escaped slash, which ServeMux keeps inside its segment, must not
	// make /v1/auth%2Fverify the verify route (canonicalPath refuses it
	// first).
	if status, got := route(http.MethodGet, "/v1/auth%2Fverify"); status != http.StatusNotFound || got != "" {
		t.Errorf("GET /v1/auth%%2Fverify: %d, served by %q; want 404 from no route", status, got)
	}
	if status, got := route(http.MethodHead, "/v1/auth/jwks"); status != http.StatusOK || got != "GET /v1/auth/jwks" {
		t.Errorf("HEAD /v1/auth/jwks: %d, served by %q", status, got)
	}
	if status, _ := route(http.MethodPut, "/v1/auth/verify"); status != http.StatusMethodNotAllowed {
		t.Errorf("PUT /v1/auth/verify: %d, want 405", status)
	}
}

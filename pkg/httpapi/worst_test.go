package httpapi_test

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"latchkey/pkg/account"
	"latchkey/pkg/httpapi"
	"latchkey/pkg/httpapi/httpapitest"
	"latchkey/pkg/token"
)

// The worst requests: for every route, an ordinary request and the most
// expensive requests a client can send it, as large as the server lets them
// be. BenchmarkWorstRequest measures both, so that the cost of the worst can
// be read as a multiple of the ordinary one; TestWorstRequests checks that
// the table covers every route and that each request gets the answer it is
// meant to get, so that the benchmark measures what it claims to.

// maxHeaderInput is the size of the credentials of the worst requests, and
// of the paths and query strings beyond the longest the handler works on:
// the most the local server reads of a request line and headers
// (httpapi.MaxHeaderBytes), more than API Gateway passes (10240 bytes of
// request line and header values).
const maxHeaderInput = httpapi.MaxHeaderBytes

// load is one request of the table.
type load struct {
	name   string
	path   string
	header http.Header
	// body returns the body of a request, a new one for each, so that
	// creates can be repeated without a conflict; nil sends none.
	body   func() []byte
	status int
}

// routeLoad is one route's ordinary request and its worst ones.
type routeLoad struct {
	route    httpapi.Route
	ordinary load
	worst    []load
}

// worstFixture is what the table's requests refer to: a full page of every
// list, and the ids of seeded items.
type worstFixture struct {
	env       *httpapitest.Env
	key       account.APIKey
	keySecret string // key's, the OAuth client's secret
	token     string
	listPath  string // the path of token's status list
	user      account.User
	org       account.Organization
}

// seedWorst fills every list with more than a page (100) of items, so that
// the largest page a client can ask for is full.
func seedWorst(tb testing.TB, env *httpapitest.Env) *worstFixture {
	tb.Helper()
	f := &worstFixture{env: env}
	const n = 101
	f.user = env.CreateUser(tb, "worst-0@example.com")
	f.org = env.CreateOrganization(tb, "worst-0")
	for i := 1; i < n; i++ {
		u := env.CreateUser(tb, fmt.Sprintf("worst-%d@example.com", i))
		o := env.CreateOrganization(tb, fmt.Sprintf("worst-%d", i))
		env.AddMember(tb, f.org.ID, u.ID, "member")
		env.AddMember(tb, o.ID, f.user.ID, "member")
		env.CreateAPIKey(tb, "read:users")
	}
	f.key, f.keySecret = env.CreateAPIKey(tb, "read:users")
	env.AddMember(tb, f.org.ID, f.user.ID, "member")
	f.token, _ = env.IssueToken(tb, env.AdminKey, "", "read:users")
	f.listPath = strings.TrimPrefix(refOf(tb, f.token).URI, httpapitest.Issuer)
	return f
}

// repeatTo returns prefix, then elem(0), elem(1), ... separated by sep, then
// suffix, with as many elements as fit in size bytes.
func repeatTo(size int, prefix, sep, suffix string, elem func(i int) string) []byte {
	b := []byte(prefix)
	for i := 0; ; i++ {
		e := elem(i)
		if i > 0 {
			e = sep + e
		}
		if len(b)+len(e)+len(suffix) > size {
			break
		}
		b = append(b, e...)
	}
	return append(b, suffix...)
}

// padded is body with whitespace after its opening brace up to the largest
// size the decoder takes.
func padded(body string) []byte {
	return []byte("{" + strings.Repeat(" ", httpapi.MaxBodyBytes-len(body)) + body[1:])
}

// longString is a JSON body of one field holding the longest string that
// fits in the largest body.
func longString(field string) []byte {
	head := `{"` + field + `":"`
	return []byte(head + strings.Repeat("a", httpapi.MaxBodyBytes-len(head)-2) + `"}`)
}

// manyMetadataKeys is a body of as many metadata entries as fit: the
// object the decoder walks entry by entry, and the service counts.
func manyMetadataKeys() []byte {
	return repeatTo(httpapi.MaxBodyBytes, `{"metadata":{`, ",", `}}`, func(i int) string {
		return fmt.Sprintf(`"k%d":"v"`, i)
	})
}

// manyScopes is a body of as many distinct well-formed scopes as fit, after
// the other fields: the list whose de-duplication was once quadratic.
func manyScopes(otherFields string) []byte {
	return repeatTo(httpapi.MaxBodyBytes, `{`+otherFields+`"scopes":[`, ",", `]}`, func(i int) string {
		return fmt.Sprintf(`"a:r%d"`, i)
	})
}

// manyMetadata is a body whose metadata holds as many entries as fit, after
// the other fields: every one is decoded before the count is checked.
func manyMetadata(otherFields string) []byte {
	return repeatTo(httpapi.MaxBodyBytes, `{`+otherFields+`"metadata":{`, ",", `}}`, func(i int) string {
		return fmt.Sprintf(`"k%d":"v"`, i)
	})
}

// forgedJWT is a token-shaped credential of size bytes: a header naming the
// real kid and EdDSA, a payload of claims with one long scope, a signature
// that does not verify. Everything a verifier does before it checks the
// signature, it does on the whole payload.
func forgedJWT(kid string, size int) string {
	enc := base64.RawURLEncoding
	header := enc.EncodeToString([]byte(`{"alg":"EdDSA","kid":"` + kid + `","typ":"JWT"}`))
	sig := enc.EncodeToString(bytes.Repeat([]byte{7}, 64))
	room := (size-len(header)-len(sig)-2)/4*3 - 200
	payload := enc.EncodeToString([]byte(`{"jti":"tok_01JD3Q6ZK8M3V8N6W2B4X5Y7Z9","sub":"key_01JD3Q5T2H7R9C4M8P1Q6W3E5R","iss":"` +
		httpapitest.Issuer + `","iat":1,"exp":99999999999,"scope":"` + strings.Repeat("read:users ", room/11) + `"}`))
	return header + "." + payload + "." + sig
}

func fixed(b []byte) func() []byte { return func() []byte { return b } }

// worstLoads is the table. Ordinary requests are the everyday ones and,
// where a route changes state, the cheapest repeatable one (a 404 delete,
// an already-member add), so that the ratios err on the high side.
func (f *worstFixture) worstLoads() []routeLoad {
	env := f.env
	auth := func(credential string) http.Header {
		return http.Header{"Authorization": {"Bearer " + credential}, "Content-Type": {"application/json"}}
	}
	admin := auth(env.AdminKey)
	// The longest path and query the handler works on (httpapi.MaxPathBytes,
	// httpapi.MaxQueryBytes), and ones as long as the server reads, which
	// it refuses before any work that grows with their length.
	longPath := func(prefix string) string { return prefix + strings.Repeat("a", httpapi.MaxPathBytes-len(prefix)) }
	hugeID := strings.Repeat("a", maxHeaderInput)
	longCursor := "?limit=100&cursor=" + strings.Repeat("A", httpapi.MaxQueryBytes-len("limit=100&cursor="))
	hugeCursor := "?limit=100&cursor=" + strings.Repeat("A", maxHeaderInput)
	longEmail := "?email=" + strings.Repeat("a", httpapi.MaxQueryBytes-len("email=@example.com")) + "@example.com"
	hugeToken := forgedJWT(env.Signer.KeyID(), maxHeaderInput)
	// The longest string the parser decodes: everything but the signature
	// check passes.
	maxToken := forgedJWT(env.Signer.KeyID(), token.MaxTokenBytes)
	bodyToken := forgedJWT(env.Signer.KeyID(), httpapi.MaxBodyBytes-len(`{"token":""}`))
	missing := func(prefix string) string { return account.NewID(prefix, env.Clock.Now()) }
	user, org, members := "/v1/users/"+f.user.ID, "/v1/organizations/"+f.org.ID, "/v1/organizations/"+f.org.ID+"/members"
	noBody := func(name, path string, status int) load {
		return load{name: name, path: path, header: admin, status: status}
	}
	withBody := func(name, path string, status int, body []byte) load {
		return load{name: name, path: path, header: admin, status: status, body: fixed(body)}
	}
	// The OAuth endpoints' client: the fixture key, by client_secret_basic.
	client := func(id, secret string) http.Header {
		return http.Header{
			"Authorization": {"Basic " + base64.StdEncoding.EncodeToString([]byte(id+":"+secret))},
			"Content-Type":  {"application/x-www-form-urlencoded"},
		}
	}
	basic := client(f.key.ID, f.keySecret)
	form := func(name, path string, status int, body string) load {
		return load{name: name, path: path, header: basic, status: status, body: fixed([]byte(body))}
	}
	// The largest form: every byte of the body in one parameter.
	fullForm := func(prefix, param string) string {
		return prefix + "&" + param + "=" + strings.Repeat("a", httpapi.MaxBodyBytes-len(prefix)-len(param)-2)
	}
	// longIDs are the id requests of a route whose path ends in an id.
	longIDs := func(prefix string) []load {
		return []load{noBody("long_id", longPath(prefix), http.StatusNotFound), noBody("huge_id", prefix+hugeID, http.StatusNotFound)}
	}
	// longCursors are the cursor requests of a list.
	longCursors := func(path string) []load {
		return []load{noBody("long_cursor", path+longCursor, http.StatusBadRequest), noBody("huge_cursor", path+hugeCursor, http.StatusBadRequest)}
	}
	route := func(method, path string) httpapi.Route {
		for _, r := range httpapi.Routes() {
			if r.Method == method && r.Path == path {
				return r
			}
		}
		panic("no route " + method + " " + path)
	}
	return []routeLoad{
		{
			route:    route(http.MethodPost, "/v1/auth/token"),
			ordinary: withBody("ordinary", "/v1/auth/token", http.StatusCreated, []byte(`{"scopes":["read:users"],"expires_in":"15m"}`)),
			worst: []load{
				withBody("many_scopes", "/v1/auth/token", http.StatusBadRequest, manyScopes(`"expires_in":"15m",`)),
				// The most a token may carry: 32 scopes of the longest form.
				withBody("longest_token", "/v1/auth/token", http.StatusCreated, padded(`{"scopes":[`+strings.Join(longScopes(32), ",")+`]}`)),
			},
		},
		{
			route:    route(http.MethodPost, "/v1/auth/revoke"),
			ordinary: withBody("ordinary", "/v1/auth/revoke", http.StatusOK, []byte(`{"token":"`+f.token+`"}`)),
			worst:    []load{withBody("forged_token", "/v1/auth/revoke", http.StatusBadRequest, []byte(`{"token":"`+bodyToken+`"}`))},
		},
		{
			route:    route(http.MethodGet, "/v1/auth/verify"),
			ordinary: load{name: "ordinary", path: "/v1/auth/verify", header: auth(f.token), status: http.StatusOK},
			worst: []load{
				{name: "forged_token", path: "/v1/auth/verify", header: auth(hugeToken), status: http.StatusOK},
				{name: "forged_token_max", path: "/v1/auth/verify", header: auth(maxToken), status: http.StatusOK},
			},
		},
		{
			route:    route(http.MethodGet, "/v1/auth/jwks"),
			ordinary: load{name: "ordinary", path: "/v1/auth/jwks", status: http.StatusOK},
			worst: []load{
				{name: "long_query", path: "/v1/auth/jwks" + longCursor, status: http.StatusBadRequest},
				{name: "huge_query", path: "/v1/auth/jwks" + hugeCursor, status: http.StatusBadRequest},
			},
		},
		{
			route:    route(http.MethodGet, "/v1/auth/status-lists"),
			ordinary: load{name: "ordinary", path: "/v1/auth/status-lists", status: http.StatusOK},
			worst: []load{
				{name: "long_query", path: "/v1/auth/status-lists" + longCursor, status: http.StatusBadRequest},
				{name: "huge_query", path: "/v1/auth/status-lists" + hugeCursor, status: http.StatusBadRequest},
			},
		},
		{
			route:    route(http.MethodGet, "/v1/auth/status-lists/{id}"),
			ordinary: load{name: "ordinary", path: f.listPath, status: http.StatusOK},
			worst: []load{
				{name: "long_id", path: "/v1/auth/status-lists/" + strings.Repeat("9", 2000), status: http.StatusNotFound},
				{name: "huge_query", path: f.listPath + hugeCursor, status: http.StatusBadRequest},
			},
		},
		{
			route:    route(http.MethodPost, "/oauth2/token"),
			ordinary: form("ordinary", "/oauth2/token", http.StatusOK, "grant_type=client_credentials&scope=read%3Ausers"),
			worst: []load{
				// As many scope tokens as fit: refused by their count.
				form("many_scopes", "/oauth2/token", http.StatusBadRequest, string(repeatTo(httpapi.MaxBodyBytes,
					"grant_type=client_credentials&scope=", "+", "", func(i int) string { return fmt.Sprintf("a%%3Ar%d", i) }))),
				// An unknown parameter is ignored (RFC 6749 3.1), after it is read.
				form("full_body", "/oauth2/token", http.StatusOK, fullForm("grant_type=client_credentials", "padding")),
				{name: "long_secret", path: "/oauth2/token", header: client(f.key.ID, strings.Repeat("a", maxHeaderInput/4*3-64)),
					status: http.StatusUnauthorized, body: fixed([]byte("grant_type=client_credentials"))},
			},
		},
		{
			route:    route(http.MethodPost, "/oauth2/introspect"),
			ordinary: form("ordinary", "/oauth2/introspect", http.StatusOK, "token="+f.token),
			worst: []load{
				form("forged_token", "/oauth2/introspect", http.StatusOK, "token="+forgedJWT(env.Signer.KeyID(), httpapi.MaxBodyBytes-len("token="))),
				form("forged_token_max", "/oauth2/introspect", http.StatusOK, "token="+maxToken),
			},
		},
		{
			route: route(http.MethodPost, "/oauth2/revoke"),
			// The fixture token is the admin key's; a client authenticated as
			// the admin key (by a Bearer API key) may revoke it.
			ordinary: load{name: "ordinary", path: "/oauth2/revoke", status: http.StatusOK, body: fixed([]byte("token=" + f.token)),
				header: http.Header{"Authorization": {"Bearer " + env.AdminKey}, "Content-Type": {"application/x-www-form-urlencoded"}}},
			worst: []load{form("forged_token", "/oauth2/revoke", http.StatusOK, "token="+forgedJWT(env.Signer.KeyID(), httpapi.MaxBodyBytes-len("token=")))},
		},
		{
			route:    route(http.MethodGet, "/.well-known/oauth-authorization-server"),
			ordinary: load{name: "ordinary", path: "/.well-known/oauth-authorization-server", status: http.StatusOK},
			worst: []load{
				{name: "long_query", path: "/.well-known/oauth-authorization-server" + longCursor, status: http.StatusBadRequest},
				{name: "huge_query", path: "/.well-known/oauth-authorization-server" + hugeCursor, status: http.StatusBadRequest},
			},
		},
		{
			route:    route(http.MethodGet, "/.well-known/openid-configuration"),
			ordinary: load{name: "ordinary", path: "/.well-known/openid-configuration", status: http.StatusOK},
			worst: []load{
				{name: "long_query", path: "/.well-known/openid-configuration" + longCursor, status: http.StatusBadRequest},
				{name: "huge_query", path: "/.well-known/openid-configuration" + hugeCursor, status: http.StatusBadRequest},
			},
		},
		{
			route:    route(http.MethodGet, "/.well-known/jwks.json"),
			ordinary: load{name: "ordinary", path: "/.well-known/jwks.json", status: http.StatusOK},
			worst: []load{
				{name: "long_query", path: "/.well-known/jwks.json" + longCursor, status: http.StatusBadRequest},
				{name: "huge_query", path: "/.well-known/jwks.json" + hugeCursor, status: http.StatusBadRequest},
			},
		},
		{
			route:    route(http.MethodPost, "/v1/api-keys"),
			ordinary: withBody("ordinary", "/v1/api-keys", http.StatusCreated, []byte(`{"name":"k","scopes":["read:users"]}`)),
			worst: []load{
				withBody("many_scopes", "/v1/api-keys", http.StatusBadRequest, manyScopes(`"name":"k",`)),
				withBody("long_name", "/v1/api-keys", http.StatusBadRequest, longString("name")),
				withBody("many_metadata", "/v1/api-keys", http.StatusBadRequest, manyMetadata(`"name":"k","scopes":["read:users"],`)),
			},
		},
		{
			route:    route(http.MethodGet, "/v1/api-keys"),
			ordinary: noBody("ordinary", "/v1/api-keys", http.StatusOK),
			worst:    append([]load{noBody("full_page", "/v1/api-keys?limit=100", http.StatusOK)}, longCursors("/v1/api-keys")...),
		},
		{
			route:    route(http.MethodGet, "/v1/api-keys/{id}"),
			ordinary: noBody("ordinary", "/v1/api-keys/"+f.key.ID, http.StatusOK),
			worst:    longIDs("/v1/api-keys/"),
		},
		{
			route:    route(http.MethodPatch, "/v1/api-keys/{id}"),
			ordinary: withBody("ordinary", "/v1/api-keys/"+f.key.ID, http.StatusOK, []byte(`{"name":"k","metadata":{"team":"billing"}}`)),
			worst: []load{
				withBody("long_name", "/v1/api-keys/"+f.key.ID, http.StatusBadRequest, longString("name")),
				withBody("many_metadata", "/v1/api-keys/"+f.key.ID, http.StatusBadRequest, manyMetadata("")),
				withBody("long_id", "/v1/api-keys/"+hugeID, http.StatusNotFound, []byte(`{"name":"k"}`)),
			},
		},
		{
			route:    route(http.MethodPost, "/v1/api-keys/{id}/rotate"),
			ordinary: withBody("ordinary", "/v1/api-keys/"+f.key.ID+"/rotate", http.StatusOK, []byte(`{"expires_in":"1h"}`)),
			worst: []load{
				withBody("long_expires_in", "/v1/api-keys/"+f.key.ID+"/rotate", http.StatusBadRequest,
					[]byte(`{"expires_in":"`+strings.Repeat("9", httpapi.MaxBodyBytes-20)+`s"}`)),
				withBody("long_id", "/v1/api-keys/"+hugeID+"/rotate", http.StatusNotFound, []byte(`{}`)),
			},
		},
		{
			route:    route(http.MethodGet, "/v1/api-keys/{id}/usage"),
			ordinary: noBody("ordinary", "/v1/api-keys/"+f.key.ID+"/usage", http.StatusOK),
			worst: []load{
				noBody("most_buckets", "/v1/api-keys/"+f.key.ID+"/usage?interval=day&from=2024-01-01T00:00:00Z&to=2026-09-01T00:00:00Z", http.StatusOK),
				noBody("long_id", "/v1/api-keys/"+hugeID+"/usage", http.StatusNotFound),
			},
		},
		{
			route:    route(http.MethodGet, "/v1/api-keys/{id}/tokens"),
			ordinary: noBody("ordinary", "/v1/api-keys/"+f.key.ID+"/tokens", http.StatusOK),
			worst: append([]load{
				noBody("full_page", "/v1/api-keys/"+f.key.ID+"/tokens?limit=100", http.StatusOK),
				noBody("long_id", "/v1/api-keys/"+hugeID+"/tokens", http.StatusNotFound),
			}, longCursors("/v1/api-keys/"+f.key.ID+"/tokens")...),
		},
		{
			route:    route(http.MethodPost, "/v1/api-keys/{id}/tokens/revoke"),
			ordinary: withBody("ordinary", "/v1/api-keys/"+f.key.ID+"/tokens/revoke", http.StatusOK, []byte(`{}`)),
			worst: []load{
				withBody("long_body", "/v1/api-keys/"+f.key.ID+"/tokens/revoke", http.StatusBadRequest,
					[]byte(`{"x":"`+strings.Repeat("9", httpapi.MaxBodyBytes-20)+`"}`)),
				withBody("long_id", "/v1/api-keys/"+hugeID+"/tokens/revoke", http.StatusNotFound, []byte(`{}`)),
			},
		},
		{
			route:    route(http.MethodGet, "/v1/events"),
			ordinary: noBody("ordinary", "/v1/events", http.StatusOK),
			worst: append([]load{
				noBody("full_page", "/v1/events?limit=100", http.StatusOK),
				noBody("all_types", "/v1/events?types="+strings.Join(account.EventTypes(), ","), http.StatusOK),
				noBody("long_types", "/v1/events?types="+strings.Repeat("user.created,", 500), http.StatusBadRequest),
			}, longCursors("/v1/events")...),
		},
		{
			route:    route(http.MethodDelete, "/v1/api-keys/{id}"),
			ordinary: noBody("ordinary", "/v1/api-keys/"+missing(account.PrefixAPIKey), http.StatusNotFound),
			worst:    longIDs("/v1/api-keys/"),
		},
		{
			route:    route(http.MethodGet, "/v1/organizations"),
			ordinary: noBody("ordinary", "/v1/organizations", http.StatusOK),
			worst:    append([]load{noBody("full_page", "/v1/organizations?limit=100", http.StatusOK)}, longCursors("/v1/organizations")...),
		},
		{
			route: route(http.MethodPost, "/v1/organizations"),
			ordinary: load{name: "ordinary", path: "/v1/organizations", header: admin, status: http.StatusCreated, body: func() []byte {
				return []byte(`{"name":"Acme","slug":"` + uniqueSlug() + `"}`)
			}},
			worst: []load{
				withBody("long_name", "/v1/organizations", http.StatusBadRequest, longString("name")),
				withBody("long_slug", "/v1/organizations", http.StatusBadRequest, longString("slug")),
			},
		},
		{
			route:    route(http.MethodGet, "/v1/organizations/{id}"),
			ordinary: noBody("ordinary", org, http.StatusOK),
			worst:    longIDs("/v1/organizations/"),
		},
		{
			route:    route(http.MethodGet, "/v1/organizations/{id}/usage"),
			ordinary: noBody("ordinary", org+"/usage", http.StatusOK),
			worst: []load{
				noBody("most_buckets", org+"/usage?interval=day&from=2024-01-01T00:00:00Z&to=2026-09-01T00:00:00Z", http.StatusOK),
				noBody("too_many_buckets", org+"/usage?interval=minute&from=2000-01-01T00:00:00Z", http.StatusBadRequest),
			},
		},
		{
			route:    route(http.MethodPatch, "/v1/organizations/{id}"),
			ordinary: withBody("ordinary", org, http.StatusOK, []byte(`{"name":"Acme"}`)),
			worst:    []load{withBody("long_name", org, http.StatusBadRequest, longString("name"))},
		},
		{
			route:    route(http.MethodDelete, "/v1/organizations/{id}"),
			ordinary: noBody("ordinary", "/v1/organizations/"+missing(account.PrefixOrganization), http.StatusNotFound),
			worst:    longIDs("/v1/organizations/"),
		},
		{
			route:    route(http.MethodGet, "/v1/organizations/{id}/members"),
			ordinary: noBody("ordinary", members, http.StatusOK),
			worst:    append([]load{noBody("full_page", members+"?limit=100", http.StatusOK)}, longCursors(members)...),
		},
		{
			route:    route(http.MethodPost, "/v1/organizations/{id}/members"),
			ordinary: withBody("ordinary", members, http.StatusConflict, []byte(`{"user_id":"`+f.user.ID+`"}`)),
			worst:    []load{withBody("long_user_id", members, http.StatusNotFound, longString("user_id"))},
		},
		{
			route:    route(http.MethodGet, "/v1/organizations/{id}/members/{user_id}"),
			ordinary: noBody("ordinary", members+"/"+f.user.ID, http.StatusOK),
			worst:    []load{noBody("long_id", members+"/"+hugeID, http.StatusNotFound)},
		},
		{
			route:    route(http.MethodPatch, "/v1/organizations/{id}/members/{user_id}"),
			ordinary: withBody("ordinary", members+"/"+f.user.ID, http.StatusOK, []byte(`{"role":"member"}`)),
			worst:    []load{withBody("long_role", members+"/"+f.user.ID, http.StatusBadRequest, longString("role"))},
		},
		{
			route:    route(http.MethodDelete, "/v1/organizations/{id}/members/{user_id}"),
			ordinary: noBody("ordinary", members+"/"+missing(account.PrefixUser), http.StatusNotFound),
			worst:    longIDs(members + "/"),
		},
		{
			route:    route(http.MethodGet, "/v1/users"),
			ordinary: noBody("ordinary", "/v1/users", http.StatusOK),
			worst: append([]load{
				noBody("full_page", "/v1/users?limit=100", http.StatusOK),
				noBody("long_email", "/v1/users"+longEmail, http.StatusBadRequest),
			}, longCursors("/v1/users")...),
		},
		{
			route: route(http.MethodPost, "/v1/users"),
			ordinary: load{name: "ordinary", path: "/v1/users", header: admin, status: http.StatusCreated, body: func() []byte {
				return []byte(`{"email":"` + uniqueEmail() + `","name":"Bench"}`)
			}},
			worst: []load{
				withBody("long_email", "/v1/users", http.StatusBadRequest,
					[]byte(`{"name":"x","email":"`+strings.Repeat("a", httpapi.MaxBodyBytes-50)+`@example.com"}`)),
				withBody("long_name", "/v1/users", http.StatusBadRequest, longString("name")),
			},
		},
		{
			route:    route(http.MethodGet, "/v1/users/{id}"),
			ordinary: noBody("ordinary", user, http.StatusOK),
			worst: []load{
				noBody("long_id", longPath("/v1/users/"), http.StatusNotFound),
				noBody("huge_id", "/v1/users/"+hugeID, http.StatusNotFound),
				// Every authenticated route hashes an API key first.
				{name: "long_api_key", path: user, header: auth("lk_" + strings.Repeat("a", maxHeaderInput)), status: http.StatusUnauthorized},
			},
		},
		{
			route:    route(http.MethodPut, "/v1/users/{id}"),
			ordinary: withBody("ordinary", user, http.StatusOK, []byte(`{"name":"worst-0"}`)),
			worst: []load{
				withBody("long_name", user, http.StatusBadRequest, longString("name")),
				withBody("many_metadata_keys", user, http.StatusBadRequest, manyMetadataKeys()),
			},
		},
		{
			route:    route(http.MethodPatch, "/v1/users/{id}"),
			ordinary: withBody("ordinary", user, http.StatusOK, []byte(`{"name":"worst-1"}`)),
			worst: []load{
				withBody("long_email", user, http.StatusBadRequest, longString("email")),
				withBody("many_metadata_keys", user, http.StatusBadRequest, manyMetadataKeys()),
			},
		},
		{
			route:    route(http.MethodDelete, "/v1/users/{id}"),
			ordinary: noBody("ordinary", "/v1/users/"+missing(account.PrefixUser), http.StatusNotFound),
			worst:    longIDs("/v1/users/"),
		},
		{
			route:    route(http.MethodGet, "/v1/users/{id}/organizations"),
			ordinary: noBody("ordinary", user+"/organizations", http.StatusOK),
			worst:    append([]load{noBody("full_page", user+"/organizations?limit=100", http.StatusOK)}, longCursors(user+"/organizations")...),
		},
	}
}

// longScopes returns n distinct scopes of the longest form a scope may take.
func longScopes(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf(`"%s:%s%02d"`, "a"+strings.Repeat("b", 31), "r"+strings.Repeat("s", 61), i)
	}
	return out
}

// do sends l to the route, and checks the status of its answer.
func (l load) do(tb testing.TB, env *httpapitest.Env, r httpapi.Route) *httpapitest.Response {
	tb.Helper()
	var body any
	if l.body != nil {
		body = l.body()
	}
	res := env.DoRaw(tb, env.Handler, r.Method, l.path, l.header, body)
	if res.StatusCode != l.status {
		tb.Fatalf("%s %.100s: got %d %.300s, want %d", r.Method, l.path, res.StatusCode, res.Body, l.status)
	}
	return res
}

// serve is do without the test harness: the request is parsed once, so
// that only the handler's own work is measured, not the parsing of a
// request line and headers that the server (net/http, or API Gateway) has
// done before the handler runs.
func (l load) serve(b *testing.B, h http.Handler, r httpapi.Route) {
	req := httptest.NewRequest(r.Method, l.path, nil)
	req.Header = l.header.Clone()
	for b.Loop() {
		rr := req.Clone(req.Context())
		if l.body != nil {
			body := l.body()
			rr.Body, rr.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, rr)
		if rec.Code != l.status {
			b.Fatalf("%s %.100s: got %d %.300s, want %d", r.Method, l.path, rec.Code, rec.Body, l.status)
		}
	}
}

// benchName names a route without slashes, which -run and -bench would
// take for levels of subtests: POST_auth.token for POST /v1/auth/token.
func benchName(r httpapi.Route) string {
	return r.Method + "_" + strings.ReplaceAll(strings.TrimPrefix(strings.TrimPrefix(r.Path, "/v1/"), "/"), "/", ".")
}

// TestWorstRequests keeps the table of BenchmarkWorstRequest honest: every
// route has a row, and each request gets the answer it is meant to get.
func TestWorstRequests(t *testing.T) {
	env := httpapitest.NewServer(t)
	f := seedWorst(t, env)
	loads := f.worstLoads()

	t.Run("EveryRoute", func(t *testing.T) {
		covered := map[string]bool{}
		for _, l := range loads {
			covered[l.route.Method+" "+l.route.Path] = true
		}
		for _, r := range httpapi.Routes() {
			if !covered[r.Method+" "+r.Path] {
				t.Errorf("%s %s has no worst request in the table", r.Method, r.Path)
			}
		}
	})
	for _, rl := range loads {
		for _, l := range append([]load{rl.ordinary}, rl.worst...) {
			t.Run(benchName(rl.route)+"/"+l.name, func(t *testing.T) {
				env.CheckResponse(t, l.do(t, env, rl.route))
			})
		}
	}
}

package httpapi_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"latchkey/pkg/account"
	"latchkey/pkg/assembly"
	"latchkey/pkg/boltstore"
	"latchkey/pkg/httpapi"
	"latchkey/pkg/httpapi/httpapitest"
	"latchkey/pkg/tablestore"
)

// leak is in the message of every store failure below: it must never reach
// a client.
const leak = "/var/lib/secret-table-path"

// TestStoreFailures sends every route a request that reaches the store,
// over a table that fails (failingTable), and checks that the failure is
// answered as README and openapi.yaml say: 503 unavailable with Retry-After
// when the store reports itself unavailable (account.Unavailable, which the
// DynamoDB store returns for throttling, a call without an answer within
// STORE_TIMEOUT and a missing table), 500 internal for anything else, and on
// the OAuth endpoints the same statuses as temporarily_unavailable and
// server_error; the store's message never in the answer, always in the
// error log line, with the request id. It does so for the credential's
// lookup, which every authenticated route makes first, and for the
// operation's own calls.
func TestStoreFailures(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Second)
	secret := account.NewAPIKeySecret()
	admin := account.APIKey{
		ID: account.NewID(account.PrefixAPIKey, now), Name: "admin", Hash: account.HashAPIKey(secret),
		Scopes: []string{account.ScopeAll}, Bootstrap: true, CreatedAt: now,
	}
	_, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}

	for _, failure := range []struct {
		name            string
		err             error
		status          int
		code, oauthCode string // problem+json's, and the OAuth endpoints' (RFC 6749 section 5.2)
	}{
		{"Unavailable", account.Unavailable(errors.New("throttled reading " + leak)), http.StatusServiceUnavailable, "unavailable", "temporarily_unavailable"},
		{"UnavailableWrapped", fmt.Errorf("dynamostore: GetItem on %s: %w", leak, account.Unavailable(errors.New("no answer within 3s"))), http.StatusServiceUnavailable, "unavailable", "temporarily_unavailable"},
		{"Internal", errors.New("disk on fire at " + leak), http.StatusInternalServerError, "internal", "server_error"},
	} {
		for _, stage := range []string{"Authentication", "Operation"} {
			t.Run(failure.name+"/"+stage, func(t *testing.T) {
				// In the operation's stage the credential's lookup works:
				// its read of the key, and its record of the key's use
				// (whose failure fails no request anyway).
				store, calls := failingStore(t, admin, now, failure.err, stage == "Operation")
				logs := &httpapitest.SyncBuffer{}
				asm, err := assembly.New(assembly.Parts{
					Store: store, CursorKey: bytes.Repeat([]byte("c"), 32), Issuer: httpapitest.Issuer,
					SigningKey: priv, Now: func() time.Time { return now }, Logger: slog.New(slog.NewJSONHandler(logs, nil)),
				})
				if err != nil {
					t.Fatal(err)
				}
				api := &httpapitest.Env{Handler: asm.Handler()}
				token, err := asm.Signer.Sign(account.TokenClaims{
					ID: account.NewID(account.PrefixToken, now), KeyID: admin.ID, Audience: httpapitest.Issuer,
					Scopes: []string{account.ScopeReadUsers}, IssuedAt: now, ExpiresAt: now.Add(time.Hour),
				})
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range httpapi.Routes() {
					name := r.Method + " " + r.Path
					reqs, ok := storeFailureRequests(now, token)[name]
					if !ok {
						t.Errorf("%s: no request for it here: add one that reaches the store", name)
						continue
					}
					for _, req := range reqs {
						if stage == "Authentication" && r.Op == "" && !r.OAuth() {
							continue // verify and the public documents look up no credential
						}
						t.Run(name+req.query, func(t *testing.T) {
							calls.reset()
							logs.Reset()
							credential := secret
							if req.verify {
								credential = token
							}
							path := strings.NewReplacer("{id}", req.id(now), "{user_id}", account.NewID(account.PrefixUser, now)).Replace(r.Path)
							var res *httpapitest.Response
							if r.OAuth() {
								res = api.DoRaw(t, api.Handler, r.Method, path+req.query, http.Header{
									"Authorization": {"Basic " + base64.StdEncoding.EncodeToString([]byte(admin.ID+":"+secret))},
									"Content-Type":  {"application/x-www-form-urlencoded"},
								}, req.body)
							} else {
								res = api.Do(t, r.Method, path+req.query, credential, req.body)
							}
							httpapitest.CheckResponse(t, res)
							switch ops := calls.operations(); {
							case stage == "Authentication" && len(ops) > 0:
								t.Fatalf("got %d %s: the store was called (%v) after the credential's lookup failed", res.StatusCode, res.Body, ops)
							case stage == "Operation" && len(ops) == 0:
								t.Fatalf("got %d %s without a store call: the request does not reach the store", res.StatusCode, res.Body)
							}
							var requestID string
							if r.OAuth() {
								wantOAuthError(t, res, failure.status, failure.oauthCode)
								requestID = res.Header.Get("X-Request-Id")
							} else {
								requestID = wantProblem(t, res, failure.status, failure.code).RequestID
							}
							if strings.Contains(string(res.Body), leak) {
								t.Errorf("the store's message reached the client: %s", res.Body)
							}
							if (failure.status == http.StatusServiceUnavailable) != (res.Header.Get("Retry-After") != "") {
								t.Errorf("Retry-After %q with %d", res.Header.Get("Retry-After"), res.StatusCode)
							}
							if l := logs.String(); !strings.Contains(l, leak) || !strings.Contains(l, requestID) || !strings.Contains(l, `"level":"ERROR"`) {
								t.Errorf("the failure is not logged as an error with request id %s: %s", requestID, l)
							}
						})
					}
				}
			})
		}
	}
}

// storeFailureRequest is a request to a route that reaches the store.
type storeFailureRequest struct {
	prefix string // of the id in place of {id}
	fixed  string // or the id itself
	query  string // after the path
	body   any
	verify bool // the bearer credential is the access token, not the API key
}

func (r storeFailureRequest) id(now time.Time) string {
	if r.prefix == "" {
		return r.fixed
	}
	return account.NewID(r.prefix, now)
}

func storeFailureRequests(now time.Time, token string) map[string][]storeFailureRequest {
	user := account.NewID(account.PrefixUser, now)
	org, usr, key := account.PrefixOrganization, account.PrefixUser, account.PrefixAPIKey
	return map[string][]storeFailureRequest{
		"POST /v1/auth/token":  {{body: map[string]any{"scopes": []string{"read:users"}}}},
		"POST /v1/auth/revoke": {{body: map[string]any{"token": token}}},
		"GET /v1/auth/verify":  {{verify: true}},
		"GET /v1/auth/jwks":    {}, // served from the keys in memory: no store
		// Public, no credential: read from the store.
		"GET /v1/auth/status-lists":      {{}},
		"GET /v1/auth/status-lists/{id}": {{fixed: account.StatusListID(now, now, 0)}},
		// The OAuth endpoints, their client authenticated by
		// client_secret_basic, bodies in form encoding.
		"POST /oauth2/token":      {{body: "grant_type=client_credentials&scope=read%3Ausers"}},
		"POST /oauth2/introspect": {{body: "token=" + token}},
		"POST /oauth2/revoke":     {{body: "token=" + token}},
		// Documents built from configuration: no store.
		"GET /.well-known/oauth-authorization-server": {},
		"GET /.well-known/openid-configuration":       {},
		"GET /.well-known/jwks.json":                  {},

		"POST /v1/api-keys":                               {{body: map[string]any{"name": "k", "scopes": []string{"read:users"}}}},
		"GET /v1/api-keys":                                {{}},
		"GET /v1/api-keys/{id}":                           {{prefix: key}},
		"PATCH /v1/api-keys/{id}":                         {{prefix: key, body: map[string]any{"enabled": false}}},
		"DELETE /v1/api-keys/{id}":                        {{prefix: key}},
		"POST /v1/api-keys/{id}/rotate":                   {{prefix: key, body: map[string]any{"expires_in": "1h"}}},
		"GET /v1/api-keys/{id}/tokens":                    {{prefix: key}},
		"GET /v1/api-keys/{id}/usage":                     {{prefix: key}},
		"POST /v1/api-keys/{id}/tokens/revoke":            {{prefix: key, body: map[string]any{}}},
		"GET /v1/events":                                  {{}, {query: "?after=evt_01JD3Q9V3C8XG4Q6Z8Y2KAB7RT"}},
		"GET /v1/organizations":                           {{}, {query: "?slug=acme"}, {query: "?external_id=acct-1"}},
		"POST /v1/organizations":                          {{body: map[string]any{"name": "Acme", "slug": "acme"}}},
		"GET /v1/organizations/{id}":                      {{prefix: org}},
		"PATCH /v1/organizations/{id}":                    {{prefix: org, body: map[string]any{"name": "Acme 2"}}},
		"DELETE /v1/organizations/{id}":                   {{prefix: org}},
		"GET /v1/organizations/{id}/members":              {{prefix: org}},
		"GET /v1/organizations/{id}/usage":                {{prefix: org}},
		"POST /v1/organizations/{id}/members":             {{prefix: org, body: map[string]any{"user_id": user}}},
		"GET /v1/organizations/{id}/members/{user_id}":    {{prefix: org}},
		"PATCH /v1/organizations/{id}/members/{user_id}":  {{prefix: org, body: map[string]any{"role": "admin"}}},
		"DELETE /v1/organizations/{id}/members/{user_id}": {{prefix: org}},
		"GET /v1/users":                                   {{}, {query: "?email=ada%40example.com"}, {query: "?external_id=crm-1"}},
		"POST /v1/users":                                  {{body: map[string]any{"email": "ada@example.com", "name": "Ada"}}},
		"GET /v1/users/{id}":                              {{prefix: usr}},
		"PUT /v1/users/{id}":                              {{prefix: usr, body: map[string]any{"name": "Ada"}}},
		"PATCH /v1/users/{id}":                            {{prefix: usr, body: map[string]any{"email": "ada@example.com"}}},
		"DELETE /v1/users/{id}":                           {{prefix: usr}},
		"GET /v1/users/{id}/organizations":                {{prefix: usr}},
	}
}

// failingTable is a store's port that fails every call with err, but
// for the admin key's lookup (Authenticate's reads of the key and its
// update of the key's use) when lookupWorks: those reach a real table
// that holds the key. It records the calls that are not the lookup's.
type failingTable struct {
	tablestore.Port
	err         error
	lookupWorks bool

	mu       sync.Mutex
	learning bool            // the lookup is made once, to note its items
	lookup   map[string]bool // the items the lookup reads and updates
	names    []string        // the calls other than the lookup's
}

// failingStore returns a store over a failingTable, and that table.
func failingStore(t *testing.T, admin account.APIKey, now time.Time, failure error, lookupWorks bool) (*tablestore.Store, *failingTable) {
	t.Helper()
	table, err := boltstore.OpenTable(filepath.Join(t.TempDir(), "table.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { table.Close() })
	ctx := context.Background()
	if err := tablestore.New(table.Port()).CreateAPIKey(ctx, account.WriteOptions{}, admin); err != nil {
		t.Fatal(err)
	}
	failing := &failingTable{Port: table.Port(), err: failure, lookupWorks: lookupWorks, learning: true, lookup: map[string]bool{}}
	store := tablestore.New(failing)
	if _, err := store.GetAPIKeyByHash(ctx, admin.Hash); err != nil {
		t.Fatal(err)
	}
	if _, err := store.RecordAPIKeyUse(ctx, admin, now); err != nil {
		t.Fatal(err)
	}
	failing.mu.Lock()
	failing.learning = false
	failing.mu.Unlock()
	return store, failing
}

// fail records a call other than the lookup's, and fails it.
func (t *failingTable) fail(op string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.names = append(t.names, op)
	return t.err
}

// pass returns nil if a read or update of the items at keys may reach the
// table: the lookup's, when it works. It records and fails the others.
func (t *failingTable) pass(op string, keys ...tablestore.Key) error {
	t.mu.Lock()
	lookup, learning := len(keys) > 0, t.learning
	for _, k := range keys {
		item := k.PK + "\x00" + k.SK
		if learning {
			t.lookup[item] = true
		}
		lookup = lookup && t.lookup[item]
	}
	t.mu.Unlock()
	switch {
	case lookup && (t.lookupWorks || learning):
		return nil
	case lookup:
		return t.err
	}
	return t.fail(op)
}

func (t *failingTable) Get(ctx context.Context, k tablestore.Key) (tablestore.Item, error) {
	if err := t.pass("Get", k); err != nil {
		return nil, err
	}
	return t.Port.Get(ctx, k)
}

func (t *failingTable) BatchGet(ctx context.Context, keys []tablestore.Key, consistent bool) ([]tablestore.Item, error) {
	if err := t.pass("BatchGet", keys...); err != nil {
		return nil, err
	}
	return t.Port.BatchGet(ctx, keys, consistent)
}

func (t *failingTable) Write(ctx context.Context, w tablestore.Write, returnNew bool) (tablestore.Item, error) {
	if w.Kind == tablestore.WriteUpdate {
		if err := t.pass("Update", w.Key); err != nil {
			return nil, err
		}
		return t.Port.Write(ctx, w, returnNew)
	}
	return nil, t.fail("Write")
}

func (t *failingTable) Query(context.Context, tablestore.Query) (tablestore.Page, error) {
	return tablestore.Page{}, t.fail("Query")
}

func (t *failingTable) Transact(context.Context, []tablestore.Write) error {
	return t.fail("Transact")
}

func (t *failingTable) reset() { t.mu.Lock(); t.names = nil; t.mu.Unlock() }

// operations returns the calls other than the lookup's since the last
// reset.
func (t *failingTable) operations() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.names)
}

// TestStoreFailures_ConcurrentUpdate: a write that lost every try to
// concurrent ones (account.ErrConcurrentUpdate, which the DynamoDB store
// returns when its transaction conflicts persist) is no failure of the
// service: 409 concurrent_update, or on the OAuth endpoints 503
// temporarily_unavailable with Retry-After (RFC 6749 has no conflict
// code), and nothing logged at ERROR.
func TestStoreFailures_ConcurrentUpdate(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Second)
	secret := account.NewAPIKeySecret()
	admin := account.APIKey{
		ID: account.NewID(account.PrefixAPIKey, now), Name: "admin", Hash: account.HashAPIKey(secret),
		Scopes: []string{account.ScopeAll}, Bootstrap: true, CreatedAt: now,
	}
	_, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	store, calls := failingStore(t, admin, now, account.ErrConcurrentUpdate("resource"), true)
	logs := &httpapitest.SyncBuffer{}
	asm, err := assembly.New(assembly.Parts{
		Store: store, CursorKey: bytes.Repeat([]byte("c"), 32), Issuer: httpapitest.Issuer,
		SigningKey: priv, Now: func() time.Time { return now }, Logger: slog.New(slog.NewJSONHandler(logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	api := &httpapitest.Env{Handler: asm.Handler()}
	token, err := asm.Signer.Sign(account.TokenClaims{
		ID: account.NewID(account.PrefixToken, now), KeyID: admin.ID, Audience: httpapitest.Issuer,
		Scopes: []string{account.ScopeReadUsers}, IssuedAt: now, ExpiresAt: now.Add(time.Hour),
	})
	if err != nil {
		t.Fatal(err)
	}
	res := api.Do(t, http.MethodPost, "/v1/auth/revoke", secret, map[string]any{"token": token})
	httpapitest.CheckResponse(t, res)
	wantProblem(t, res, http.StatusConflict, "concurrent_update")
	res = api.DoRaw(t, api.Handler, http.MethodPost, "/oauth2/revoke", http.Header{
		"Authorization": {"Basic " + base64.StdEncoding.EncodeToString([]byte(admin.ID+":"+secret))},
		"Content-Type":  {"application/x-www-form-urlencoded"},
	}, "token="+token)
	httpapitest.CheckResponse(t, res)
	wantOAuthError(t, res, http.StatusServiceUnavailable, "temporarily_unavailable")
	if res.Header.Get("Retry-After") == "" {
		t.Errorf("POST /oauth2/revoke: no Retry-After")
	}
	if !slices.Contains(calls.operations(), "Transact") {
		t.Errorf("the table's calls %v: the revocation was not written", calls.operations())
	}
	if l := logs.String(); strings.Contains(l, `"level":"ERROR"`) {
		t.Errorf("a lost race logged as an error: %s", l)
	}
}

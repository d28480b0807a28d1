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
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"latchkey/pkg/account"
	"latchkey/pkg/assembly"
	"latchkey/pkg/httpapi"
	"latchkey/pkg/httpapi/httpapitest"
	"latchkey/pkg/mock"
)

// leak is in the message of every store failure below: it must never reach
// a client.
const leak = "/var/lib/secret-table-path"

// TestStoreFailures sends every route a request that reaches the store,
// over a store that fails (mock.Store), and checks that the failure is
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
				store, calls := failingStore(failure.err)
				if stage == "Operation" {
					store.GetAPIKeyByHashFn = func(_ context.Context, hash []byte) (account.APIKey, error) {
						if !bytes.Equal(hash, admin.Hash) {
							return account.APIKey{}, account.Errorf(account.CodeNotFound, "no such key")
						}
						return admin, nil
					}
					// Recording the key's use, part of its authentication,
					// succeeds too (its failure fails no request anyway).
					store.RecordAPIKeyUseFn = func(_ context.Context, _ account.APIKey, at time.Time) (time.Time, error) { return at, nil }
				}
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
	query  string // after the path
	body   any
	verify bool // the bearer credential is the access token, not the API key
}

func (r storeFailureRequest) id(now time.Time) string {
	if r.prefix == "" {
		return ""
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
		"POST /v1/api-keys/{id}/tokens/revoke":            {{prefix: key, body: map[string]any{}}},
		"GET /v1/events":                                  {{}, {query: "?after=evt_01JD3Q9V3C8XG4Q6Z8Y2KAB7RT"}},
		"GET /v1/organizations":                           {{}, {query: "?slug=acme"}, {query: "?external_id=acct-1"}},
		"POST /v1/organizations":                          {{body: map[string]any{"name": "Acme", "slug": "acme"}}},
		"GET /v1/organizations/{id}":                      {{prefix: org}},
		"PATCH /v1/organizations/{id}":                    {{prefix: org, body: map[string]any{"name": "Acme 2"}}},
		"DELETE /v1/organizations/{id}":                   {{prefix: org}},
		"GET /v1/organizations/{id}/members":              {{prefix: org}},
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

// storeCalls records the store methods a request called.
type storeCalls struct {
	mu    sync.Mutex
	names []string
}

func (c *storeCalls) add(name string) { c.mu.Lock(); c.names = append(c.names, name); c.mu.Unlock() }
func (c *storeCalls) reset()          { c.mu.Lock(); c.names = nil; c.mu.Unlock() }

// operations returns the calls other than the credential's lookup.
func (c *storeCalls) operations() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, n := range c.names {
		if n != "GetAPIKeyByHash" && n != "RecordAPIKeyUse" {
			out = append(out, n)
		}
	}
	return out
}

// failingStore returns a store whose every method fails with err, and the
// record of the methods called.
func failingStore(err error) (*mock.Store, *storeCalls) {
	c := &storeCalls{}
	return &mock.Store{
		CreateUserFn: func(context.Context, account.User) error { c.add("CreateUser"); return err },
		GetUserFn:    func(context.Context, string) (account.User, error) { c.add("GetUser"); return account.User{}, err },
		GetUserByEmailFn: func(context.Context, string) (account.User, error) {
			c.add("GetUserByEmail")
			return account.User{}, err
		},
		GetUserByExternalIDFn: func(context.Context, string) (account.User, error) {
			c.add("GetUserByExternalID")
			return account.User{}, err
		},
		GetOrganizationBySlugFn: func(context.Context, string) (account.Organization, error) {
			c.add("GetOrganizationBySlug")
			return account.Organization{}, err
		},
		GetOrganizationByExternalIDFn: func(context.Context, string) (account.Organization, error) {
			c.add("GetOrganizationByExternalID")
			return account.Organization{}, err
		},
		UpdateUserFn: func(context.Context, string, account.UserPatch) (account.User, error) {
			c.add("UpdateUser")
			return account.User{}, err
		},
		DeleteUserFn: func(context.Context, string) error { c.add("DeleteUser"); return err },
		ListUsersFn: func(context.Context, account.ListParams) (account.Page[account.User], error) {
			c.add("ListUsers")
			return account.Page[account.User]{}, err
		},
		CreateOrganizationFn: func(context.Context, account.Organization) error { c.add("CreateOrganization"); return err },
		GetOrganizationFn: func(context.Context, string) (account.Organization, error) {
			c.add("GetOrganization")
			return account.Organization{}, err
		},
		UpdateOrganizationFn: func(context.Context, string, account.OrganizationPatch) (account.Organization, error) {
			c.add("UpdateOrganization")
			return account.Organization{}, err
		},
		DeleteOrganizationFn: func(context.Context, string) error { c.add("DeleteOrganization"); return err },
		ListOrganizationsFn: func(context.Context, account.ListParams) (account.Page[account.Organization], error) {
			c.add("ListOrganizations")
			return account.Page[account.Organization]{}, err
		},
		AddMemberFn: func(context.Context, account.Membership) error { c.add("AddMember"); return err },
		GetMemberFn: func(context.Context, string, string) (account.Membership, error) {
			c.add("GetMember")
			return account.Membership{}, err
		},
		UpdateMemberFn: func(context.Context, string, string, account.MemberPatch) (account.Membership, error) {
			c.add("UpdateMember")
			return account.Membership{}, err
		},
		RemoveMemberFn: func(context.Context, string, string) error { c.add("RemoveMember"); return err },
		ListMembersFn: func(context.Context, string, account.ListParams) (account.Page[account.Membership], error) {
			c.add("ListMembers")
			return account.Page[account.Membership]{}, err
		},
		ListUserMembershipsFn: func(context.Context, string, account.ListParams) (account.Page[account.UserMembership], error) {
			c.add("ListUserMemberships")
			return account.Page[account.UserMembership]{}, err
		},
		CreateAPIKeyFn: func(context.Context, account.APIKey) error { c.add("CreateAPIKey"); return err },
		GetAPIKeyFn: func(context.Context, string) (account.APIKey, error) {
			c.add("GetAPIKey")
			return account.APIKey{}, err
		},
		GetAPIKeyByHashFn: func(context.Context, []byte) (account.APIKey, error) {
			c.add("GetAPIKeyByHash")
			return account.APIKey{}, err
		},
		UpdateAPIKeyFn: func(context.Context, string, account.APIKeyPatch, func(account.APIKey) error) (account.APIKey, error) {
			c.add("UpdateAPIKey")
			return account.APIKey{}, err
		},
		DeleteAPIKeyFn: func(context.Context, string, func(account.APIKey) error) error { c.add("DeleteAPIKey"); return err },
		RecordAPIKeyUseFn: func(context.Context, account.APIKey, time.Time) (time.Time, error) {
			c.add("RecordAPIKeyUse")
			return time.Time{}, err
		},
		ListAPIKeysFn: func(context.Context, account.APIKeyFilter, account.ListParams) (account.Page[account.APIKey], error) {
			c.add("ListAPIKeys")
			return account.Page[account.APIKey]{}, err
		},
		CreateTokenFn: func(context.Context, account.TokenRecord) error { c.add("CreateToken"); return err },
		RevokeTokenFn: func(context.Context, account.Revocation) (time.Time, error) {
			c.add("RevokeToken")
			return time.Time{}, err
		},
		TokenStatusFn: func(context.Context, string, string, []string, string, bool) (account.TokenStatus, error) {
			c.add("TokenStatus")
			return account.TokenStatus{}, err
		},
		ListEventsFn: func(context.Context, account.EventQuery) (account.Page[account.StoredEvent], error) {
			c.add("ListEvents")
			return account.Page[account.StoredEvent]{}, err
		},
	}, c
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
	store, calls := failingStore(account.ErrConcurrentUpdate("resource"))
	store.GetAPIKeyByHashFn = func(_ context.Context, hash []byte) (account.APIKey, error) {
		if !bytes.Equal(hash, admin.Hash) {
			return account.APIKey{}, account.Errorf(account.CodeNotFound, "no such key")
		}
		return admin, nil
	}
	store.RecordAPIKeyUseFn = func(_ context.Context, _ account.APIKey, at time.Time) (time.Time, error) { return at, nil }
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
	if !slices.Contains(calls.operations(), "RevokeToken") {
		t.Errorf("the store's calls %v: RevokeToken was not called", calls.operations())
	}
	if l := logs.String(); strings.Contains(l, `"level":"ERROR"`) {
		t.Errorf("a lost race logged as an error: %s", l)
	}
}

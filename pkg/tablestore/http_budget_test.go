package tablestore_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"latchkey/pkg/account"
	"latchkey/pkg/assembly"
	"latchkey/pkg/console"
	"latchkey/pkg/dynamostore"
	"latchkey/pkg/dynamostore/dynamotest"
	"latchkey/pkg/tablestore"
)

// testIssuer is the issuer of newService's tokens, and its console's
// origin.
const testIssuer = "https://latchkey.test"

// newService returns the stack the servers that sign build (assembly.New)
// over store, console included, signing and checking tokens with a new
// Ed25519 key.
func newService(t *testing.T, store account.Store) *assembly.Assembly {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	return newServiceSigning(t, store, priv)
}

// newServiceSigning is newService signing with priv: another process of
// the same deployment.
func newServiceSigning(t *testing.T, store account.Store, priv ed25519.PrivateKey) *assembly.Assembly {
	t.Helper()
	// The clock stands still, so that each key's use is recorded once, at
	// its first request, however long the test takes.
	now := time.Now()
	// As after a deployment's step: this release's formats in force.
	if _, err := account.PutFormatsInForce(t.Context(), store, now, "test"); err != nil {
		t.Fatal(err)
	}
	asm, err := assembly.New(assembly.Parts{
		Store:      store,
		CursorKey:  bytes.Repeat([]byte("c"), 32),
		Issuer:     testIssuer,
		SigningKey: priv,
		Logger:     slog.New(slog.NewTextHandler(io.Discard, nil)),
		Now:        func() time.Time { return now },
		Console:    console.Mount,
	})
	if err != nil {
		t.Fatal(err)
	}
	return asm
}

// TestHTTPRequestBudgets measures whole API requests, authentication
// included, through the real handler over the DynamoDB store: the figures a
// Lambda function pays per request. It fails if a request makes other
// DynamoDB calls than docs/dynamodb.md says, in particular if verify is not
// exactly one BatchGetItem or token issuance more than two requests.
func TestHTTPRequestBudgets(t *testing.T) {
	var m meter
	client := dynamotest.NewClient(t, m.option)
	// A verify reads copy 1 of its items (shards.go), as 15 in 16 do:
	// the capacity measured is then the same on every run.
	store := dynamostore.New(client, dynamotest.NewTable(t, client), dynamostore.WithTimeout(dynamotest.Timeout)).ReadCopy(1)
	asm := newService(t, store)
	svc, h := asm.Service, asm.Handler()
	admin := account.NewAPIKeySecret()
	if err := svc.EnsureBootstrapKey(t.Context(), admin, time.Time{}); err != nil {
		t.Fatalf("EnsureBootstrapKey: %v", err)
	}
	// The admin key's first use, unmeasured: the rows below show what a
	// request costs once the key's use this minute is recorded.
	p, err := svc.Authenticate(t.Context(), admin)
	if err != nil {
		t.Fatalf("Authenticate: %v", err)
	}
	// And the process's read of the formats item (one GetItem every
	// FormatsRefresh) and its lease of a block of status list indexes (one
	// UpdateItem per StatusBlock tokens), unmeasured too: not a request's.
	if _, _, err := svc.IssueToken(t.Context(), p, account.TokenRequest{Scopes: []string{"read:users"}}); err != nil {
		t.Fatalf("IssueToken: %v", err)
	}

	// idemKey, when set, is sent as Idempotency-Key.
	idemKey := ""
	var report strings.Builder
	fmt.Fprintf(&report, "| request | status | DynamoDB requests | capacity units (DynamoDB Local) |\n|---|---|---|---|\n")
	// do sends one request, checks its status and its DynamoDB calls
	// (exactly want, in order), adds a row to the report (the route, and
	// the case when label says one), and returns the decoded JSON body.
	do := func(label, method, path, credential string, body any, status int, want ...string) map[string]any {
		t.Helper()
		var rd io.Reader
		contentType := "application/json"
		switch b := body.(type) {
		case nil:
		case url.Values: // an OAuth endpoint's form
			rd, contentType = strings.NewReader(b.Encode()), "application/x-www-form-urlencoded"
		default:
			raw, err := json.Marshal(body)
			if err != nil {
				t.Fatal(err)
			}
			rd = bytes.NewReader(raw)
		}
		req := httptest.NewRequestWithContext(t.Context(), method, path, rd)
		if body != nil {
			req.Header.Set("Content-Type", contentType)
		}
		switch {
		case strings.HasPrefix(credential, "Basic "):
			req.Header.Set("Authorization", credential)
		case credential != "":
			req.Header.Set("Authorization", "Bearer "+credential)
		}
		if idemKey != "" {
			req.Header.Set("Idempotency-Key", idemKey)
		}
		rec := httptest.NewRecorder()
		calls := m.measure(func() { h.ServeHTTP(rec, req) })
		if rec.Code != status {
			t.Fatalf("%s %s: got status %d, want %d: %s", method, path, rec.Code, status, rec.Body)
		}
		var ops []string
		var units float64
		for _, c := range calls {
			ops = append(ops, c.op)
			units += c.capacity
		}
		if !slices.Equal(ops, want) {
			t.Errorf("%s %s made DynamoDB requests %v, want %v", method, path, ops, want)
		}
		request := method + " " + route(path)
		if label != "" {
			request += " (" + label + ")"
		}
		fmt.Fprintf(&report, "| %s | %d | %d (%s) | %g |\n", request, rec.Code, len(ops), strings.Join(ops, ", "), units)
		out := map[string]any{}
		if rec.Body.Len() > 0 {
			if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
				t.Fatalf("%s %s: body is not JSON: %v", method, path, err)
			}
		}
		return out
	}
	const (
		get   = "GetItem"
		batch = "BatchGetItem"
		put   = "PutItem"
		upd   = "UpdateItem"
		query = "Query"
		tx    = "TransactWriteItems"
	)
	str := func(m map[string]any, k string) string { s, _ := m[k].(string); return s }
	// shards is the Queries of a page of events that reads the shards of
	// days days once each.
	shards := func(days int) []string { return slices.Repeat([]string{query}, days*tablestore.EventShards) }

	key := do("", "POST", "/v1/api-keys", admin, map[string]any{"name": "svc", "scopes": []string{"read:users", "write:users", "write:api_keys"}}, 201, get, tx)
	secret := str(key, "key")
	// A key's first request in a minute records its last use: one
	// UpdateItem more.
	do("first use of the key in a minute", "POST", "/v1/auth/token", secret, map[string]any{"scopes": []string{"read:users"}}, 201, get, upd, put)
	tok := do("", "POST", "/v1/auth/token", secret, map[string]any{"scopes": []string{"read:users"}}, 201, get, put)
	access := str(tok, "access_token")
	do("token valid", "GET", "/v1/auth/verify", access, nil, 200, batch)

	// A key with a rate limit (2 a minute) and credits: each use is one
	// conditional UpdateItem more, token issuance included. A use over
	// the limit is that write, refused; the next ones in the window cost
	// none, the process knowing the window full.
	limited := do("with a rate limit and credits", "POST", "/v1/api-keys", admin, map[string]any{
		"name": "metered", "scopes": []string{"read:users"},
		"rate_limits": []map[string]any{{"name": "minute", "limit": 2, "period": "1m"}}, "credits": map[string]any{"remaining": 100},
	}, 201, get, tx)
	limitedTok := do("key with limits, its first use in a minute", "POST", "/v1/auth/token", str(limited, "key"), map[string]any{"scopes": []string{"read:users"}}, 201, get, upd, upd, put)
	do("token of a key with limits", "GET", "/v1/auth/verify", str(limitedTok, "access_token"), nil, 200, batch, upd)
	if v := do("over the key's rate limit", "GET", "/v1/auth/verify", str(limitedTok, "access_token"), nil, 200, batch, upd); v["reason"] != account.ReasonRateLimited {
		t.Errorf("verify over the limit: got %v, want rate_limited", v)
	}
	do("over the key's rate limit, again in the window", "GET", "/v1/auth/verify", str(limitedTok, "access_token"), nil, 200, batch)
	do("a key with credits, its count read with it", "GET", "/v1/api-keys/"+str(limited, "id"), admin, nil, 200, get, batch, batch)

	// A key below a key with credits: its verifications spend the credits
	// of both, in one transaction of the two usage records, read back
	// after it for the credits left that the answer shows.
	seller := do("with credits, creating keys", "POST", "/v1/api-keys", admin, map[string]any{
		"name": "reseller", "scopes": []string{"read:users", "write:api_keys"}, "credits": map[string]any{"remaining": 100},
	}, 201, get, tx)
	sold := do("below a key with credits, the key's first use in a minute", "POST", "/v1/api-keys", str(seller, "key"), map[string]any{
		"name": "customer", "scopes": []string{"read:users"}, "credits": map[string]any{"remaining": 10},
	}, 201, get, upd, tx)
	soldTok := do("key below a key with credits, its first use in a minute", "POST", "/v1/auth/token", str(sold, "key"), map[string]any{"scopes": []string{"read:users"}}, 201, get, batch, upd, put)
	do("token of a key below a key with credits", "GET", "/v1/auth/verify", str(soldTok, "access_token"), nil, 200, batch, tx, batch)

	// A key below a key: its requests check its ancestor too, its token's
	// verify in the same round trip.
	child := do("below a key", "POST", "/v1/api-keys", secret, map[string]any{"name": "svc child", "scopes": []string{"read:users"}}, 201, get, tx)
	do("key below a key, its first use in a minute", "POST", "/v1/auth/token", str(child, "key"), map[string]any{"scopes": []string{"read:users"}}, 201, get, batch, upd, put)
	childTok := do("key below a key", "POST", "/v1/auth/token", str(child, "key"), map[string]any{"scopes": []string{"read:users"}}, 201, get, batch, put)
	do("token of a key below a key", "GET", "/v1/auth/verify", str(childTok, "access_token"), nil, 200, batch)
	leaf := do("another", "POST", "/v1/api-keys", admin, map[string]any{"name": "leaf", "scopes": []string{"read:users"}}, 201, get, tx)

	u := do("", "POST", "/v1/users", admin, map[string]any{"email": "Ada@Example.com", "name": "Ada"}, 201, get, tx)
	uid := str(u, "id")
	do("email_taken", "POST", "/v1/users", admin, map[string]any{"email": "ada@example.com", "name": "Ada"}, 409, get, tx, get)
	do("", "GET", "/v1/users/"+uid, admin, nil, 200, get, get)
	do("with an access token", "GET", "/v1/users/"+uid, access, nil, 200, batch, get)
	do("", "GET", "/v1/users?limit=20", admin, nil, 200, get, query)
	do("", "GET", "/v1/users?email=ada@example.com", admin, nil, 200, get, get, get)
	// An update records its event with the user as it leaves it: it
	// reads the user, then writes the update and the event in one
	// transaction.
	do("", "PUT", "/v1/users/"+uid, admin, map[string]any{"name": "Ada L."}, 200, get, get, tx)
	do("role and metadata", "PUT", "/v1/users/"+uid, admin, map[string]any{"role": "admin", "metadata": map[string]string{"plan": "pro"}}, 200, get, get, tx)
	do("external_id", "PUT", "/v1/users/"+uid, admin, map[string]any{"external_id": "crm-42"}, 200, get, get, tx)
	do("", "GET", "/v1/users?external_id=crm-42", admin, nil, 200, get, get, get)
	do("email", "PATCH", "/v1/users/"+uid, admin, map[string]any{"email": "ada.king@example.com"}, 200, get, get, tx)
	bob := do("another", "POST", "/v1/users", admin, map[string]any{"email": "bob@example.com", "name": "Bob"}, 201, get, tx)
	do("email_taken", "PATCH", "/v1/users/"+str(bob, "id"), admin, map[string]any{"email": "ada.king@example.com"}, 409, get, get, tx, get)

	// With Idempotency-Key: the claim (a conditional PutItem), the record
	// in the change's own transaction, the answer stored (a PutItem); a
	// replay is the authentication and the claim, which fails its
	// condition and brings the answer back.
	idemKey = "budget-create-user"
	grace := do("Idempotency-Key", "POST", "/v1/users", admin, map[string]any{"email": "grace@example.com", "name": "Grace"}, 201, get, put, tx, put)
	do("Idempotency-Key, replayed", "POST", "/v1/users", admin, map[string]any{"email": "grace@example.com", "name": "Grace"}, 201, get, put)
	idemKey = "budget-token"
	do("Idempotency-Key", "POST", "/v1/auth/token", secret, map[string]any{"scopes": []string{"read:users"}}, 201, get, put, tx, put)
	idemKey = "budget-delete-user"
	do("Idempotency-Key", "DELETE", "/v1/users/"+str(grace, "id"), admin, nil, 204, get, put, upd, query, tx, put)
	idemKey = ""

	o := do("", "POST", "/v1/organizations", admin, map[string]any{"name": "Engines", "slug": "engines"}, 201, get, tx)
	oid := str(o, "id")
	do("slug_taken", "POST", "/v1/organizations", admin, map[string]any{"name": "Engines", "slug": "engines"}, 409, get, tx, get)
	do("", "GET", "/v1/organizations?limit=20", admin, nil, 200, get, query)
	do("", "GET", "/v1/organizations/"+oid, admin, nil, 200, get, get)
	do("", "PATCH", "/v1/organizations/"+oid, admin, map[string]any{"plan": "pro"}, 200, get, get, tx)
	do("external_id", "PATCH", "/v1/organizations/"+oid, admin, map[string]any{"external_id": "acct-7"}, 200, get, get, tx)
	do("", "GET", "/v1/organizations?slug=engines", admin, nil, 200, get, get, get)
	do("", "GET", "/v1/organizations?external_id=acct-7", admin, nil, 200, get, get, get)
	do("", "POST", "/v1/organizations/"+oid+"/members", admin, map[string]any{"user_id": uid, "role": "admin"}, 201, get, tx)
	do("already_member", "POST", "/v1/organizations/"+oid+"/members", admin, map[string]any{"user_id": uid}, 409, get, tx)
	do("", "GET", "/v1/organizations/"+oid+"/members?limit=20", admin, nil, 200, get, get, query)
	do("", "GET", "/v1/users/"+uid+"/organizations?limit=20", admin, nil, 200, get, get, query, batch)
	do("", "GET", "/v1/organizations/"+oid+"/members/"+uid, admin, nil, 200, get, get)
	do("admin to owner", "PATCH", "/v1/organizations/"+oid+"/members/"+uid, admin, map[string]any{"role": "owner"}, 200, get, get, tx)
	do("last_owner", "PATCH", "/v1/organizations/"+oid+"/members/"+uid, admin, map[string]any{"role": "admin"}, 409, get, get, tx)
	do("owner", "POST", "/v1/organizations/"+oid+"/members", admin, map[string]any{"user_id": str(bob, "id"), "role": "owner"}, 201, get, tx)
	// A removal records the membership as it was: read, then one
	// transaction.
	do("one of two owners", "DELETE", "/v1/organizations/"+oid+"/members/"+uid, admin, nil, 204, get, get, tx)
	do("last_owner", "DELETE", "/v1/organizations/"+oid+"/members/"+str(bob, "id"), admin, nil, 409, get, get, tx)
	do("member", "POST", "/v1/organizations/"+oid+"/members", admin, map[string]any{"user_id": uid}, 201, get, tx)
	do("member", "DELETE", "/v1/organizations/"+oid+"/members/"+uid, admin, nil, 204, get, get, tx)

	// The page holds a key with credits: their counts in one more read.
	do("", "GET", "/v1/api-keys?limit=20", admin, nil, 200, get, query, batch, batch)
	do("", "GET", "/v1/api-keys/"+str(key, "id"), admin, nil, 200, get, batch)
	do("", "GET", "/v1/api-keys/"+str(key, "id")+"/tokens", admin, nil, 200, get, batch, query, batch)
	// Then the revoked tokens' records, and their status list entries.
	do("", "POST", "/v1/api-keys/"+str(key, "id")+"/tokens/revoke", admin, map[string]any{}, 200, get, batch, tx, query, upd)
	do("", "PATCH", "/v1/api-keys/"+str(leaf, "id"), admin, map[string]any{"name": "leaf ✓", "metadata": map[string]string{"team": "billing"}}, 200, get, batch, tx)
	rotated := do("", "POST", "/v1/api-keys/"+str(leaf, "id")+"/rotate", admin, map[string]any{"expires_in": "1h"}, 200, get, batch, tx)
	do("previous secret, during its grace, first use", "GET", "/v1/users/"+uid, str(leaf, "key"), nil, 200, get, upd, get)
	do("new secret", "GET", "/v1/users/"+uid, str(rotated, "key"), nil, 200, get, get)
	// Then the status list entries of its tokens: the versions of the keys
	// above, the key and its tokens, the entries, the versions again.
	do("disable, key below a key", "PATCH", "/v1/api-keys/"+str(child, "id"), admin, map[string]any{"enabled": false}, 200, get, batch, batch, tx, batch, query, query, upd, batch)
	if v := do("key disabled", "GET", "/v1/auth/verify", str(childTok, "access_token"), nil, 200, batch); v["valid"] != false || v["reason"] != "disabled" {
		t.Errorf("verify of a disabled key's token: got %v, want invalid, disabled", v)
	}
	// A revocation of a token with the claim (every token issued now): a
	// change of its key, read strongly consistently, written with the entry
	// and the event in one transaction.
	do("", "POST", "/v1/auth/revoke", secret, map[string]any{"token": access}, 200, get, get, tx)
	// Again: the key holds the revocation already, and nothing is written.
	do("already revoked", "POST", "/v1/auth/revoke", secret, map[string]any{"token": access}, 200, get, get)
	if v := do("token revoked", "GET", "/v1/auth/verify", access, nil, 200, batch); v["valid"] != false {
		t.Errorf("verify after revoke: got %v, want valid false", v)
	}
	// The tree's token records before the last transaction and after, for
	// their status list entries.
	do("no keys below", "DELETE", "/v1/api-keys/"+str(leaf, "id"), admin, nil, 204, get, query, query, tx, query)
	do("1 key below", "DELETE", "/v1/api-keys/"+str(key, "id"), admin, nil, 204, get, query, query, query, query, upd, tx, query, query)
	if v := do("key deleted", "GET", "/v1/auth/verify", str(childTok, "access_token"), nil, 200, batch); v["valid"] != false {
		t.Errorf("verify of a token of a key below a deleted key: got %v, want valid false", v)
	}
	do("", "DELETE", "/v1/users/"+uid, admin, nil, 204, get, upd, query, tx)
	// A key bound to an organization: its requests read the organization
	// with the key, its token's verify in the same round trip; deleting
	// the organization deletes it.
	orgKey := do("bound to an organization, with an owner", "POST", "/v1/api-keys", admin, map[string]any{"name": "tenant", "scopes": []string{"read:users"}, "organization_id": oid, "owner_id": "crm:4711"}, 201, get, tx)
	do("key bound to an organization, its first use in a minute", "POST", "/v1/auth/token", str(orgKey, "key"), map[string]any{"scopes": []string{"read:users"}}, 201, get, batch, upd, put)
	orgTok := do("key bound to an organization", "POST", "/v1/auth/token", str(orgKey, "key"), map[string]any{"scopes": []string{"read:users"}}, 201, get, batch, put)
	do("token of a key bound to an organization", "GET", "/v1/auth/verify", str(orgTok, "access_token"), nil, 200, batch)
	do("", "GET", "/v1/api-keys?organization_id="+oid, admin, nil, 200, get, query, batch)
	do("", "GET", "/v1/api-keys?owner_id=crm:4711", admin, nil, 200, get, query, batch)
	// A key bound to an organization acts inside it only (account's
	// tenant.go): what its filtered reads and its changes to users cost.
	// Its own requests read the organization with the key (get, batch).
	tenant := do("bound to an organization, every grant", "POST", "/v1/api-keys", admin, map[string]any{"name": "tenant admin", "scopes": []string{"*:*"}, "organization_id": oid}, 201, get, tx)
	ts := str(tenant, "key")
	do("key bound to an organization, its first use in a minute", "GET", "/v1/organizations", ts, nil, 200, get, batch, upd, get)
	do("key bound to an organization", "GET", "/v1/organizations", ts, nil, 200, get, batch, get)
	do("key bound to an organization", "GET", "/v1/users", ts, nil, 200, get, batch, query, batch)
	do("key bound to an organization", "GET", "/v1/users/"+str(bob, "id"), ts, nil, 200, get, batch, get, get)
	do("key bound to an organization", "GET", "/v1/users?email=bob@example.com", ts, nil, 200, get, batch, get, get, get)
	do("key bound to an organization, a user outside it", "GET", "/v1/users/"+str(grace, "id"), ts, nil, 404, get, batch, get)
	tu := do("key bound to an organization", "POST", "/v1/users", ts, map[string]any{"email": "tenant@example.com", "name": "Tenant's"}, 201, get, batch, tx)
	do("key bound to an organization", "PATCH", "/v1/users/"+str(tu, "id"), ts, map[string]any{"name": "Tenant's own"}, 200, get, batch, get, query, batch, get, tx)
	do("key bound to an organization", "GET", "/v1/users/"+str(tu, "id")+"/organizations", ts, nil, 200, get, batch, get, get)
	// A page merges 16 shards: a Query of each, more as the merge needs.
	do("key bound to an organization", "GET", "/v1/events", ts, nil, 200, append([]string{get, batch}, shards(1)...)...)
	// A filter that keeps few events reads no more than
	// account.MaxEventsRead items in at most 48 Queries, then answers a
	// short page with a cursor: the organization's 16 shards, or the
	// shards of today and the two days before for a key bound to none.
	do("key bound to an organization, a rare type", "GET", "/v1/events?types=token.revoked&limit=1", ts, nil, 200, append([]string{get, batch}, shards(1)...)...)
	do("a rare type", "GET", "/v1/events?types=token.revoked&limit=1", admin, nil, 200, append([]string{get}, shards(3)...)...)
	// Its keys' token records once it is flagged and at the end, for their
	// status list entries.
	do("with a key bound to it", "DELETE", "/v1/organizations/"+oid, admin, nil, 204, get, tx, get, query, query, query, upd, query, batch, query, tx, query, query)
	if v := do("organization deleted", "GET", "/v1/auth/verify", str(orgTok, "access_token"), nil, 200, batch); v["valid"] != false {
		t.Errorf("verify of a token of a deleted organization's key: got %v, want valid false", v)
	}
	// A key bound to an organization with credits: the organization's
	// limits come with the copy of it that verify reads anyway, and its
	// usage record alone is one conditional write, as a key's own.
	customer := do("organization with credits", "POST", "/v1/organizations", admin, map[string]any{
		"name": "Customer", "slug": "budget-customer", "credits": map[string]any{"remaining": 10},
	}, 201, get, tx)
	bound := do("bound to an organization with credits", "POST", "/v1/api-keys", admin, map[string]any{
		"name": "bound", "scopes": []string{"read:users"}, "organization_id": str(customer, "id"),
	}, 201, get, tx)
	boundTok := do("key of an organization with credits, its first use in a minute", "POST", "/v1/auth/token", str(bound, "key"), map[string]any{"scopes": []string{"read:users"}}, 201, get, batch, upd, put)
	do("token of a key of an organization with credits", "GET", "/v1/auth/verify", str(boundTok, "access_token"), nil, 200, batch, upd)
	// A change of its limits writes its item and its 15 read copies in
	// one transaction.
	do("its limits", "PATCH", "/v1/organizations/"+str(customer, "id"), admin, map[string]any{"credits": map[string]any{"remaining": 20}}, 200, get, get, tx, batch)

	do("", "GET", "/v1/auth/jwks", "", nil, 200)

	// The OAuth endpoints cost what the calls they stand for cost, with
	// the client authenticated by its key id and secret: one GetItem.
	oclient := do("for an OAuth client", "POST", "/v1/api-keys", admin, map[string]any{"name": "client", "scopes": []string{"read:users"}}, 201, get, tx)
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte(str(oclient, "id")+":"+str(oclient, "key")))
	do("first use of the key in a minute", "POST", "/oauth2/token", basic, url.Values{"grant_type": {"client_credentials"}}, 200, get, upd, put)
	otok := do("", "POST", "/oauth2/token", basic, url.Values{"grant_type": {"client_credentials"}}, 200, get, put)
	oaccess := str(otok, "access_token")
	do("active", "POST", "/oauth2/introspect", basic, url.Values{"token": {oaccess}}, 200, get, batch)
	do("not a token", "POST", "/oauth2/introspect", basic, url.Values{"token": {"not-a-token"}}, 200, get)
	do("", "POST", "/oauth2/revoke", basic, url.Values{"token": {oaccess}}, 200, get, get, tx)
	do("", "GET", "/.well-known/oauth-authorization-server", "", nil, 200)
	if !t.Failed() {
		checkDocTable(t, "http", report.String())
	}
}

// route turns a request path back into its route, for the report.
func route(path string) string {
	path, query, _ := strings.Cut(path, "?")
	suffix := ""
	for _, p := range []string{"email", "external_id", "slug", "organization_id", "owner_id"} {
		if strings.HasPrefix(query, p+"=") {
			suffix = "?" + p + "="
		}
	}
	parts := strings.Split(path, "/")
	for i, p := range parts {
		switch {
		case strings.HasPrefix(p, account.PrefixUser) && i == len(parts)-1 && parts[i-1] == "members":
			parts[i] = "{user_id}"
		case strings.HasPrefix(p, account.PrefixUser), strings.HasPrefix(p, account.PrefixOrganization), strings.HasPrefix(p, account.PrefixAPIKey):
			parts[i] = "{id}"
		}
	}
	return strings.Join(parts, "/") + suffix
}

package httpapi_test

import (
	"bytes"
	"compress/zlib"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"latchkey/pkg/account"
	"latchkey/pkg/httpapi/httpapitest"
)

// statusRef is a token's status claim (draft-ietf-oauth-status-list,
// section 6.1).
type statusRef struct {
	Idx int64  `json:"idx"`
	URI string `json:"uri"`
}

// refOf returns the status claim of the access token tok, failing the
// test if it has none.
func refOf(t testing.TB, tok string) statusRef {
	t.Helper()
	var c struct {
		Status struct {
			StatusList *statusRef `json:"status_list"`
		} `json:"status"`
	}
	if err := json.Unmarshal(jwtPart(t, tok, 1), &c); err != nil || c.Status.StatusList == nil {
		t.Fatalf("the token has no status claim: %s (%v)", jwtPart(t, tok, 1), err)
	}
	return *c.Status.StatusList
}

// jwtPart returns part i of a compact JWS, decoded.
func jwtPart(t testing.TB, tok string, i int) []byte {
	t.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("not a compact JWS: %q", tok)
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[i])
	if err != nil {
		t.Fatalf("part %d: %v", i, err)
	}
	return b
}

// fetchList gets the Status List Token at uri, with no credential, checks
// it as a relying party would (typ, kid, signature, sub, iat, exp, ttl,
// bits) and returns its statuses, decompressed.
func (a api) fetchList(uri string) []byte {
	a.t.Helper()
	path, ok := strings.CutPrefix(uri, httpapitest.Issuer)
	if !ok {
		a.t.Fatalf("status list uri %q is not under the issuer", uri)
	}
	res := a.do(http.MethodGet, path, "", nil)
	want(a.t, res, http.StatusOK)
	if got := res.Header.Get("Content-Type"); got != "application/statuslist+jwt" {
		a.t.Errorf("Content-Type %q", got)
	}
	if got := res.Header.Get("Access-Control-Allow-Origin"); got != "*" {
		a.t.Errorf("Access-Control-Allow-Origin %q, want *", got)
	}
	if got := res.Header.Get("Cache-Control"); got != "public, max-age=10" {
		a.t.Errorf("Cache-Control %q, want public, max-age=10", got)
	}
	tok := string(res.Body)
	var h struct{ Alg, Kid, Typ string }
	json.Unmarshal(jwtPart(a.t, tok, 0), &h)
	if h.Typ != "statuslist+jwt" || h.Kid != a.Signer.KeyID() || h.Alg != "EdDSA" {
		a.t.Errorf("header %+v", h)
	}
	dot := strings.LastIndexByte(tok, '.')
	if !ed25519.Verify(a.PublicKey, []byte(tok[:dot]), jwtPart(a.t, tok, 2)) {
		a.t.Errorf("the signature does not verify")
	}
	var c struct {
		Sub        string
		Iat, Exp   int64
		TTL        int64
		StatusList struct {
			Bits int
			Lst  string
		} `json:"status_list"`
	}
	json.Unmarshal(jwtPart(a.t, tok, 1), &c)
	// A public list says nothing but the statuses: no key, token or
	// organization ID (docs/security.md).
	var members map[string]json.RawMessage
	json.Unmarshal(jwtPart(a.t, tok, 1), &members)
	if got := slices.Sorted(maps.Keys(members)); !slices.Equal(got, []string{"exp", "iat", "status_list", "sub", "ttl"}) {
		a.t.Errorf("claims %q, want exp, iat, status_list, sub and ttl only", got)
	}
	if c.Sub != uri || c.Iat == 0 || c.Exp <= c.Iat || c.TTL != 10 || c.StatusList.Bits != 2 {
		a.t.Errorf("claims %+v", c)
	}
	z, err := base64.RawURLEncoding.DecodeString(c.StatusList.Lst)
	if err != nil {
		a.t.Fatalf("lst: %v", err)
	}
	r, err := zlib.NewReader(bytes.NewReader(z))
	if err != nil {
		a.t.Fatalf("lst is not ZLIB: %v", err)
	}
	statuses, err := io.ReadAll(r)
	if err != nil {
		a.t.Fatal(err)
	}
	return statuses
}

// statusOf returns the status of the token tok in a fresh fetch of its list.
func (a api) statusOf(tok string) int {
	a.t.Helper()
	ref := refOf(a.t, tok)
	statuses := a.fetchList(ref.URI)
	if ref.Idx/4 >= int64(len(statuses)) {
		a.t.Fatalf("index %d beyond the list's %d bytes", ref.Idx, len(statuses))
	}
	return int(statuses[ref.Idx/4]>>(uint(ref.Idx%4)*2)) & 3
}

// wantStatus fails unless each token has the status in its list.
func (a api) wantStatus(what string, status int, toks ...string) {
	a.t.Helper()
	for i, tok := range toks {
		if got := a.statusOf(tok); got != status {
			a.t.Errorf("%s: token %d: status %d, want %d", what, i, got, status)
		}
	}
}

// TestStatusList: every token carries a status list entry of its own, and
// the list, fetched fresh, shows each change once it has answered: a
// revocation (INVALID), a disable of the key or of a key above it
// (SUSPENDED, then VALID again on enable unless revoked meanwhile), a
// revoke-all (INVALID) and a delete of the key, of a key above it or of its
// organization (INVALID). Tokens from /v1/auth/token, /oauth2/token and the
// console's sign-in alike.
func TestStatusList(t *testing.T) {
	a := newAPI(t)
	grants := []string{"read:users", account.ScopeWriteAPIKeys, account.ScopeReadAPIKeys, account.ScopeRevokeTokens}
	root := a.createKey(a.AdminKey, grants...)
	child := a.createKey(root.secret, grants...)
	grandchild := a.createKey(child.secret, "read:users")
	other := a.createKey(a.AdminKey, grants...)
	oauth := a.clientToken(basicClient(root.id, root.secret), url.Values{}).AccessToken
	p, err := a.Service.Authenticate(t.Context(), root.secret)
	if err != nil {
		t.Fatal(err)
	}
	session, _, err := a.Service.StartSession(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	revoked := a.tokenOf(t, child.secret)
	all := []string{root.token, child.token, grandchild.token, other.token, oauth, session, revoked}

	t.Run("Distinct", func(t *testing.T) {
		seen := map[statusRef]bool{}
		for _, tok := range all {
			ref := refOf(t, tok)
			if seen[ref] {
				t.Errorf("two tokens share the entry %+v", ref)
			}
			seen[ref] = true
		}
		a.wantStatus("fresh", account.StatusValid, all...)
	})

	t.Run("Aggregation", func(t *testing.T) {
		meta := a.do(http.MethodGet, "/.well-known/oauth-authorization-server", "", nil).Map(t)
		agg, _ := meta["status_list_aggregation_endpoint"].(string)
		path, ok := strings.CutPrefix(agg, httpapitest.Issuer)
		if !ok {
			t.Fatalf("status_list_aggregation_endpoint %q", agg)
		}
		res := a.do(http.MethodGet, path, "", nil)
		want(t, res, http.StatusOK)
		var got struct {
			StatusLists []string `json:"status_lists"`
		}
		res.Decode(t, &got)
		if uri := refOf(t, root.token).URI; !slices.Contains(got.StatusLists, uri) {
			t.Errorf("status_lists %v, want %s among them", got.StatusLists, uri)
		}
	})

	t.Run("ETag", func(t *testing.T) {
		uri := refOf(t, root.token).URI
		path := strings.TrimPrefix(uri, httpapitest.Issuer)
		first := a.do(http.MethodGet, path, "", nil)
		etag := first.Header.Get("ETag")
		if etag == "" {
			t.Fatal("no ETag")
		}
		res := a.DoRaw(t, a.Handler, http.MethodGet, path, http.Header{"If-None-Match": {etag}}, nil)
		if res.StatusCode != http.StatusNotModified || len(res.Body) != 0 {
			t.Errorf("If-None-Match the ETag: %d %q, want 304", res.StatusCode, res.Body)
		}
		res = a.DoRaw(t, a.Handler, http.MethodGet, path, http.Header{"If-None-Match": {`"other"`}}, nil)
		if res.StatusCode != http.StatusOK {
			t.Errorf("If-None-Match another: %d, want 200", res.StatusCode)
		}
		res = a.do(http.MethodGet, "/v1/auth/status-lists/2000010100-0", "", nil)
		want(t, res, http.StatusNotFound)
	})

	t.Run("Revoke", func(t *testing.T) {
		want(t, a.do(http.MethodPost, "/v1/auth/revoke", child.secret, map[string]any{"token": revoked}), http.StatusOK)
		a.wantStatus("revoked", account.StatusInvalid, revoked)
		a.wantStatus("the others", account.StatusValid, child.token, root.token)
	})

	t.Run("DisableEnable", func(t *testing.T) {
		want(t, a.do(http.MethodPatch, "/v1/api-keys/"+child.id, a.AdminKey, map[string]any{"enabled": false}), http.StatusOK)
		a.wantStatus("key disabled", account.StatusSuspended, child.token, grandchild.token)
		a.wantStatus("revoked before", account.StatusInvalid, revoked)
		a.wantStatus("above and beside", account.StatusValid, root.token, oauth, session, other.token)

		want(t, a.do(http.MethodPatch, "/v1/api-keys/"+root.id, a.AdminKey, map[string]any{"enabled": false}), http.StatusOK)
		a.wantStatus("root disabled", account.StatusSuspended, root.token, oauth, session, child.token, grandchild.token)
		want(t, a.do(http.MethodPatch, "/v1/api-keys/"+child.id, a.AdminKey, map[string]any{"enabled": true}), http.StatusOK)
		a.wantStatus("child enabled below a disabled root", account.StatusSuspended, child.token, grandchild.token)
		want(t, a.do(http.MethodPatch, "/v1/api-keys/"+root.id, a.AdminKey, map[string]any{"enabled": true}), http.StatusOK)
		a.wantStatus("all enabled", account.StatusValid, root.token, oauth, session, child.token, grandchild.token)
		a.wantStatus("revoked stays", account.StatusInvalid, revoked)
	})

	t.Run("RevokeAll", func(t *testing.T) {
		before := a.tokenOf(t, other.secret)
		want(t, a.do(http.MethodPost, "/v1/api-keys/"+other.id+"/tokens/revoke", a.AdminKey, map[string]any{}), http.StatusOK)
		after := a.tokenOf(t, other.secret)
		a.wantStatus("revoked all", account.StatusInvalid, other.token, before)
		a.wantStatus("issued after", account.StatusValid, after)
	})

	t.Run("Delete", func(t *testing.T) {
		want(t, a.do(http.MethodPatch, "/v1/api-keys/"+child.id, a.AdminKey, map[string]any{"enabled": false}), http.StatusOK)
		want(t, a.do(http.MethodDelete, "/v1/api-keys/"+child.id, a.AdminKey, nil), http.StatusNoContent)
		a.wantStatus("deleted with a key above", account.StatusInvalid, child.token, grandchild.token)
		a.wantStatus("above", account.StatusValid, root.token)
		// A delete is for good: an enable cannot follow, and a disable of
		// the key above leaves them INVALID.
		want(t, a.do(http.MethodPatch, "/v1/api-keys/"+root.id, a.AdminKey, map[string]any{"enabled": false}), http.StatusOK)
		a.wantStatus("deleted, above disabled", account.StatusInvalid, child.token, grandchild.token)
		a.wantStatus("root disabled", account.StatusSuspended, root.token)
	})

	t.Run("OrganizationDeleted", func(t *testing.T) {
		org := a.CreateOrganization(t, "acme")
		res := a.do(http.MethodPost, "/v1/api-keys", a.AdminKey, map[string]any{"name": "bound", "scopes": grants, "organization_id": org.ID})
		want(t, res, http.StatusCreated)
		var created struct{ Key string }
		res.Decode(t, &created)
		bound := a.tokenOf(t, created.Key)
		below := a.createKey(created.Key, "read:users")
		a.wantStatus("bound", account.StatusValid, bound, below.token)
		want(t, a.do(http.MethodDelete, "/v1/organizations/"+org.ID, a.AdminKey, nil), http.StatusNoContent)
		a.wantStatus("organization deleted", account.StatusInvalid, bound, below.token)
	})

	t.Run("OutOfForce", func(t *testing.T) {
		// A rollback's first step: the previous release, which flips no
		// entry, may serve from now on, so no list of this period is
		// served, now or once the format is in force again (a new
		// period); tokens issued meanwhile carry no claim.
		path := strings.TrimPrefix(refOf(t, root.token).URI, httpapitest.Issuer)
		if err := account.PutFormatsOutOfForce(t.Context(), a.Store, "test"); err != nil {
			t.Fatal(err)
		}
		// Every process has read the item once the rollback lets the
		// previous release serve.
		a.Clock.Advance(account.FormatsRefresh + time.Second)
		wantProblem(t, a.do(http.MethodGet, path, "", nil), http.StatusNotFound, "not_found")
		var got struct {
			StatusLists []string `json:"status_lists"`
		}
		res := a.do(http.MethodGet, "/v1/auth/status-lists", "", nil)
		want(t, res, http.StatusOK)
		if res.Decode(t, &got); len(got.StatusLists) != 0 {
			t.Errorf("status_lists out of force: %v, want none", got.StatusLists)
		}
		if tok := a.tokenOf(t, other.secret); strings.Contains(string(jwtPart(t, tok, 1)), `"status"`) {
			t.Errorf("a token issued out of force carries the claim status: %s", string(jwtPart(t, tok, 1)))
		}

		a.Clock.Advance(time.Second)
		if _, err := account.PutFormatsInForce(t.Context(), a.Store, a.Clock.Now(), "test"); err != nil {
			t.Fatal(err)
		}
		a.Clock.Advance(account.FormatsRefresh + time.Second)
		wantProblem(t, a.do(http.MethodGet, path, "", nil), http.StatusNotFound, "not_found")
		fresh := a.tokenOf(t, other.secret)
		a.wantStatus("in force again", account.StatusValid, fresh)
		res = a.do(http.MethodGet, "/v1/auth/status-lists", "", nil)
		want(t, res, http.StatusOK)
		if res.Decode(t, &got); len(got.StatusLists) != 1 || got.StatusLists[0] != refOf(t, fresh).URI {
			t.Errorf("status_lists in force again: %v, want %s alone", got.StatusLists, refOf(t, fresh).URI)
		}
	})
}

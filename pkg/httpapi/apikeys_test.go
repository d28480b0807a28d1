package httpapi_test

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"latchkey/pkg/account"
	"latchkey/pkg/httpapi/httpapitest"
)

// apiKey is a key created through the API: its id, its secret and an
// access token issued for it.
type apiKey struct {
	id, secret, token string
}

// createKey creates a key with the given grants through POST /v1/api-keys,
// authenticated by creator (a secret), and issues it a token for its first
// grant.
func (a api) createKey(creator string, scopes ...string) apiKey {
	a.t.Helper()
	res := a.do(http.MethodPost, "/v1/api-keys", creator, map[string]any{"name": "tree", "scopes": scopes})
	want(a.t, res, http.StatusCreated)
	var created struct {
		ID  string `json:"id"`
		Key string `json:"key"`
	}
	res.Decode(a.t, &created)
	tok, _ := a.IssueToken(a.t, created.Key, "", scopes[0])
	return apiKey{id: created.ID, secret: created.Key, token: tok}
}

// wantAlive fails unless k's secret authenticates (a 200, or a 403 for a
// key without read:users, is past authentication), its token verifies, and
// the admin key can read it.
func (a api) wantAlive(what string, k apiKey) {
	a.t.Helper()
	if res := a.do(http.MethodGet, "/v1/api-keys/"+k.id, a.AdminKey, nil); res.StatusCode != http.StatusOK {
		a.t.Errorf("%s: GET by the admin key: got %d, want 200", what, res.StatusCode)
	}
	if res := a.do(http.MethodGet, "/v1/users", k.secret, nil); res.StatusCode == http.StatusUnauthorized {
		a.t.Errorf("%s: its secret: got 401, want it accepted", what)
	}
	if v := a.do(http.MethodGet, "/v1/auth/verify", k.token, nil).Map(a.t); v["valid"] != true {
		a.t.Errorf("%s: verify of its token: got %v, want valid", what, v)
	}
}

// wantGone fails unless k is gone in every way a caller can look: its
// secret and its token are refused, verify says revoked, and the admin key
// can neither read nor delete it.
func (a api) wantGone(what string, k apiKey) {
	a.t.Helper()
	if res := a.do(http.MethodGet, "/v1/users", k.secret, nil); res.StatusCode != http.StatusUnauthorized {
		a.t.Errorf("%s: its secret: got %d, want 401", what, res.StatusCode)
	}
	if res := a.do(http.MethodGet, "/v1/users", k.token, nil); res.StatusCode != http.StatusUnauthorized {
		a.t.Errorf("%s: its token: got %d, want 401", what, res.StatusCode)
	}
	if v := a.do(http.MethodGet, "/v1/auth/verify", k.token, nil).Map(a.t); v["valid"] != false || v["reason"] != account.ReasonRevoked {
		a.t.Errorf("%s: verify of its token: got %v, want invalid, revoked", what, v)
	}
	if res := a.do(http.MethodGet, "/v1/api-keys/"+k.id, a.AdminKey, nil); res.StatusCode != http.StatusNotFound {
		a.t.Errorf("%s: GET by the admin key: got %d, want 404", what, res.StatusCode)
	}
	if res := a.do(http.MethodDelete, "/v1/api-keys/"+k.id, a.AdminKey, nil); res.StatusCode != http.StatusNotFound {
		a.t.Errorf("%s: DELETE by the admin key: got %d, want 404", what, res.StatusCode)
	}
}

// listed returns the ids of every key the caller sees, following the
// cursor with pages of limit keys, and fails on an id seen twice.
func (a api) listed(credential, limit string) []string {
	a.t.Helper()
	var ids []string
	path := "/v1/api-keys?limit=" + limit
	for range 100 {
		res := a.do(http.MethodGet, path, credential, nil)
		want(a.t, res, http.StatusOK)
		var page struct {
			Data []struct {
				ID string `json:"id"`
			} `json:"data"`
			NextCursor *string `json:"next_cursor"`
		}
		res.Decode(a.t, &page)
		for _, k := range page.Data {
			if slices.Contains(ids, k.ID) {
				a.t.Fatalf("list: %s on two pages", k.ID)
			}
			ids = append(ids, k.ID)
		}
		if page.NextCursor == nil {
			return ids
		}
		path = "/v1/api-keys?limit=" + limit + "&cursor=" + *page.NextCursor
	}
	a.t.Fatal("list: more than 100 pages")
	return nil
}

// TestDeleteAPIKey_DeletesDescendants: deleting a key deletes every key it
// created, and every key those created, at once: secrets, tokens, reads.
// A leaked write:api_keys key can no longer leave children behind.
func TestDeleteAPIKey_DeletesDescendants(t *testing.T) {
	a := newAPI(t)
	grants := []string{"read:users", account.ScopeWriteAPIKeys, account.ScopeReadAPIKeys}
	root := a.createKey(a.AdminKey, grants...)
	child := a.createKey(root.secret, grants...)
	grandchild := a.createKey(child.secret, grants...)
	greatGrandchild := a.createKey(grandchild.secret, "read:users")
	sibling := a.createKey(root.secret, "read:users")
	unrelated := a.createKey(a.AdminKey, grants...)
	unrelatedChild := a.createKey(unrelated.secret, "read:users")

	t.Run("Subtree", func(t *testing.T) {
		a := api{Env: a.Env, t: t}
		// The key deletes its own grandchild: within its grants.
		want(t, a.do(http.MethodDelete, "/v1/api-keys/"+grandchild.id, child.secret, nil), http.StatusNoContent)
		a.wantGone("grandchild", grandchild)
		a.wantGone("great-grandchild", greatGrandchild)
		a.wantAlive("child", child)
		a.wantAlive("root", root)
	})
	t.Run("Tree", func(t *testing.T) {
		a := api{Env: a.Env, t: t}
		grandchild2 := a.createKey(child.secret, "read:users")
		want(t, a.do(http.MethodDelete, "/v1/api-keys/"+root.id, a.AdminKey, nil), http.StatusNoContent)
		for _, k := range []struct {
			what string
			key  apiKey
		}{{"root", root}, {"child", child}, {"sibling", sibling}, {"second grandchild", grandchild2}} {
			a.wantGone(k.what, k.key)
		}
		a.wantAlive("unrelated key", unrelated)
		a.wantAlive("unrelated key's child", unrelatedChild)
		ids := a.listed(a.AdminKey, "100")
		for _, gone := range []apiKey{root, child, grandchild, grandchild2, greatGrandchild, sibling} {
			if slices.Contains(ids, gone.id) {
				t.Errorf("list: shows deleted key %s", gone.id)
			}
		}
		if !slices.Contains(ids, unrelatedChild.id) {
			t.Errorf("list: lacks %s, a key of another tree", unrelatedChild.id)
		}
	})
}

// TestAPIKeyGrants: a key reads, lists and deletes only keys whose grants
// are within its own, the rule that already held for creating them.
func TestAPIKeyGrants(t *testing.T) {
	a := newAPI(t)
	manager := a.createKey(a.AdminKey, account.ScopeWriteAPIKeys, account.ScopeReadAPIKeys)
	admin2 := a.createKey(a.AdminKey, account.ScopeAll)
	reader := a.createKey(a.AdminKey, "read:users")
	wider := a.createKey(a.AdminKey, account.ScopeWriteAPIKeys, account.ScopeReadAPIKeys, "read:users")
	wildcard := a.createKey(a.AdminKey, "read:*")

	wantScope := func(t *testing.T, res *httpapitest.Response, scope string) {
		t.Helper()
		p := wantProblem(t, res, http.StatusForbidden, "insufficient_scope")
		if !strings.Contains(p.Detail, scope) {
			t.Errorf("detail %q does not name %s", p.Detail, scope)
		}
		if got, want := res.Header.Get("WWW-Authenticate"), `error="insufficient_scope", scope="`+scope+`"`; !strings.Contains(got, want) {
			t.Errorf("WWW-Authenticate %q, want it to contain %q", got, want)
		}
	}
	t.Run("DeleteOutside", func(t *testing.T) {
		wantScope(t, a.do(http.MethodDelete, "/v1/api-keys/"+admin2.id, manager.secret, nil), account.ScopeAll)
		wantScope(t, a.do(http.MethodDelete, "/v1/api-keys/"+reader.id, manager.secret, nil), "read:users")
		// read:* is not within read:users: a wildcard is only covered by a wildcard.
		wantScope(t, a.do(http.MethodDelete, "/v1/api-keys/"+wildcard.id, wider.secret, nil), "read:*")
		for _, k := range a.listed(a.AdminKey, "100") {
			if k == manager.id {
				continue // the only key within its own grants
			}
			if res := a.do(http.MethodDelete, "/v1/api-keys/"+k, manager.secret, nil); res.StatusCode != http.StatusForbidden {
				t.Errorf("DELETE of %s by a key with narrower grants: got %d, want 403", k, res.StatusCode)
			}
		}
		a.wantAlive("the *:* key", admin2)
		a.wantAlive("the read:users key", reader)
	})
	t.Run("GetOutside", func(t *testing.T) {
		wantScope(t, a.do(http.MethodGet, "/v1/api-keys/"+admin2.id, manager.secret, nil), account.ScopeAll)
		wantScope(t, a.do(http.MethodGet, "/v1/api-keys/"+reader.id, manager.secret, nil), "read:users")
		want(t, a.do(http.MethodGet, "/v1/api-keys/"+reader.id, wider.secret, nil), http.StatusOK)
		want(t, a.do(http.MethodGet, "/v1/api-keys/"+manager.id, wider.secret, nil), http.StatusOK)
		want(t, a.do(http.MethodGet, "/v1/api-keys/"+manager.id, manager.secret, nil), http.StatusOK)
	})
	t.Run("List", func(t *testing.T) {
		// Keys outside the caller's grants are left out, so a page may be
		// short, even empty; following next_cursor still visits every key
		// within them exactly once.
		wantIDs := []string{manager.id, reader.id, wider.id}
		for _, limit := range []string{"1", "2", "100"} {
			got := a.listed(wider.secret, limit)
			slices.Sort(got)
			sorted := slices.Sorted(slices.Values(wantIDs))
			if !slices.Equal(got, sorted) {
				t.Errorf("list by the wider key, limit %s: got %v, want %v", limit, got, sorted)
			}
		}
		if got := a.listed(manager.secret, "100"); !slices.Equal(got, []string{manager.id}) {
			t.Errorf("list by the manager key: got %v, want only itself", got)
		}
	})
	t.Run("DeleteWithin", func(t *testing.T) {
		want(t, a.do(http.MethodDelete, "/v1/api-keys/"+reader.id, wider.secret, nil), http.StatusNoContent)
		a.wantGone("the read:users key", reader)
		want(t, a.do(http.MethodDelete, "/v1/api-keys/"+admin2.id, a.AdminKey, nil), http.StatusNoContent)
	})
}

// TestCreateAPIKey_Depth: a key may create keys only down to a fixed depth
// below the keys the admin key creates, so that the keys a verify must
// check stay few.
func TestCreateAPIKey_Depth(t *testing.T) {
	a := newAPI(t)
	k := a.createKey(a.AdminKey, account.ScopeWriteAPIKeys)
	for range account.MaxKeyAncestors {
		k = a.createKey(k.secret, account.ScopeWriteAPIKeys)
	}
	res := a.do(http.MethodPost, "/v1/api-keys", k.secret, map[string]any{"name": "too deep", "scopes": []string{account.ScopeWriteAPIKeys}})
	p := wantProblem(t, res, http.StatusForbidden, "forbidden")
	if !strings.Contains(p.Detail, "levels") {
		t.Errorf("detail %q does not say why", p.Detail)
	}
	a.wantAlive("the deepest key", k)
}

// TestAPIKeyUpdate: PATCH renames a key, replaces its metadata, and
// disables and enables it; a disabled key and the keys below it are
// refused everywhere, and their tokens verify as disabled, until it is
// enabled again.
func TestAPIKeyUpdate(t *testing.T) {
	a := newAPI(t)
	parent := a.createKey(a.AdminKey, account.ScopeWriteAPIKeys, "read:users")
	child := a.createKey(parent.secret, "read:users")

	res := a.do(http.MethodPatch, "/v1/api-keys/"+parent.id, a.AdminKey, map[string]any{"name": "renamed", "metadata": map[string]string{"team": "billing"}})
	want(t, res, http.StatusOK)
	if got := res.Map(t); got["name"] != "renamed" || got["enabled"] != true || got["metadata"].(map[string]any)["team"] != "billing" {
		t.Errorf("PATCH name and metadata: got %v", got)
	}
	res = a.do(http.MethodPatch, "/v1/api-keys/"+parent.id, a.AdminKey, map[string]any{"metadata": nil})
	want(t, res, http.StatusOK)
	if got := res.Map(t); got["name"] != "renamed" || len(got["metadata"].(map[string]any)) != 0 {
		t.Errorf("PATCH metadata null: got %v, want the name kept and metadata {}", got)
	}

	res = a.do(http.MethodPatch, "/v1/api-keys/"+parent.id, a.AdminKey, map[string]any{"enabled": false})
	want(t, res, http.StatusOK)
	if got := res.Map(t); got["enabled"] != false {
		t.Errorf("PATCH enabled false: got %v", got)
	}
	for _, k := range []apiKey{parent, child} {
		p := wantProblem(t, a.do(http.MethodGet, "/v1/users", k.secret, nil), http.StatusUnauthorized, "unauthorized")
		if !strings.Contains(p.Detail, "disabled") {
			t.Errorf("a paused key's secret: detail %q, want it to say disabled", p.Detail)
		}
		wantProblem(t, a.do(http.MethodGet, "/v1/users", k.token, nil), http.StatusUnauthorized, "unauthorized")
		wantProblem(t, a.do(http.MethodPost, "/v1/auth/token", k.secret, map[string]any{"scopes": []string{"read:users"}}), http.StatusUnauthorized, "unauthorized")
		if v := a.do(http.MethodGet, "/v1/auth/verify", k.token, nil).Map(t); v["valid"] != false || v["reason"] != account.ReasonDisabled {
			t.Errorf("verify of a paused key's token: got %v, want invalid, disabled", v)
		}
	}
	if got := a.do(http.MethodGet, "/v1/api-keys/"+child.id, a.AdminKey, nil).Map(t); got["enabled"] != true {
		t.Errorf("the key below keeps its own switch: got %v, want enabled true", got)
	}

	want(t, a.do(http.MethodPatch, "/v1/api-keys/"+parent.id, a.AdminKey, map[string]any{"enabled": true}), http.StatusOK)
	a.wantAlive("the enabled key", parent)
	a.wantAlive("the key below it", child)

	t.Run("ErrBootstrap", func(t *testing.T) {
		admin, err := a.Service.Authenticate(t.Context(), a.AdminKey)
		if err != nil {
			t.Fatal(err)
		}
		wantProblem(t, a.do(http.MethodPatch, "/v1/api-keys/"+admin.KeyID, a.AdminKey, map[string]any{"enabled": false}), http.StatusForbidden, "forbidden")
		want(t, a.do(http.MethodGet, "/v1/users", a.AdminKey, nil), http.StatusOK)
	})
	t.Run("ErrAbove", func(t *testing.T) {
		wantProblem(t, a.do(http.MethodPatch, "/v1/api-keys/"+parent.id, child.secret, map[string]any{"enabled": false}), http.StatusForbidden, "insufficient_scope")
		writer := a.createKey(parent.secret, account.ScopeWriteAPIKeys, "read:users")
		wantProblem(t, a.do(http.MethodPatch, "/v1/api-keys/"+parent.id, writer.secret, map[string]any{"enabled": false}), http.StatusForbidden, "forbidden")
		a.wantAlive("the key above", parent)
	})
	t.Run("ErrInvalidRequest", func(t *testing.T) {
		// A change of nothing names no field, as for users and organizations.
		if p := wantProblem(t, a.do(http.MethodPatch, "/v1/api-keys/"+parent.id, a.AdminKey, map[string]any{}), http.StatusBadRequest, "invalid_request"); len(p.Errors) != 0 || !strings.Contains(p.Detail, "changes nothing") {
			t.Errorf("PATCH {}: got %+v, want the request refused as a whole", p)
		}
		wantField(t, wantProblem(t, a.do(http.MethodPatch, "/v1/api-keys/"+parent.id, a.AdminKey, map[string]any{"scopes": []string{"*:*"}}), http.StatusBadRequest, "invalid_request"), "scopes")
		wantField(t, wantProblem(t, a.do(http.MethodPatch, "/v1/api-keys/"+parent.id, a.AdminKey, map[string]any{"enabled": "no"}), http.StatusBadRequest, "invalid_request"), "enabled")
		wantField(t, wantProblem(t, a.do(http.MethodPatch, "/v1/api-keys/"+parent.id, a.AdminKey, map[string]any{"metadata": map[string]any{"n": 1}}), http.StatusBadRequest, "invalid_request"), "metadata.n")
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		wantProblem(t, a.do(http.MethodPatch, "/v1/api-keys/"+account.NewID(account.PrefixAPIKey, time.Now()), a.AdminKey, map[string]any{"name": "x"}), http.StatusNotFound, "not_found")
	})
}

// TestAPIKeyRotate: POST /v1/api-keys/{id}/rotate returns the key with a
// new secret; the old secret works until the grace period ends, the key's
// tokens stay.
func TestAPIKeyRotate(t *testing.T) {
	a := newAPI(t)
	k := a.createKey(a.AdminKey, "read:users")
	res := a.do(http.MethodPost, "/v1/api-keys/"+k.id+"/rotate", a.AdminKey, map[string]any{"expires_in": "24h"})
	want(t, res, http.StatusOK)
	if got := res.Header.Get("Cache-Control"); got != "no-store" {
		t.Errorf("Cache-Control: got %q, want no-store", got)
	}
	var rotated struct {
		ID                   string  `json:"id"`
		Key                  string  `json:"key"`
		MaskedKey            string  `json:"masked_key"`
		PreviousKeyExpiresAt *string `json:"previous_key_expires_at"`
	}
	res.Decode(t, &rotated)
	if rotated.ID != k.id || rotated.Key == "" || rotated.Key == k.secret || !strings.HasSuffix(rotated.MaskedKey, rotated.Key[len(rotated.Key)-4:]) {
		t.Errorf("rotate: got %+v, want the same key with a new secret", rotated)
	}
	if want := a.Clock.Now().Add(24 * time.Hour).UTC().Format("2006-01-02T15:04:05.000Z"); rotated.PreviousKeyExpiresAt == nil || *rotated.PreviousKeyExpiresAt != want {
		t.Errorf("previous_key_expires_at: got %v, want %s", rotated.PreviousKeyExpiresAt, want)
	}
	for _, cred := range []string{rotated.Key, k.secret} {
		want(t, a.do(http.MethodGet, "/v1/users", cred, nil), http.StatusOK)
	}
	if v := a.do(http.MethodGet, "/v1/auth/verify", k.token, nil).Map(t); v["valid"] != true {
		t.Errorf("verify of a token issued before the rotation: got %v, want valid", v)
	}

	a.Clock.Advance(24 * time.Hour)
	wantProblem(t, a.do(http.MethodGet, "/v1/users", k.secret, nil), http.StatusUnauthorized, "unauthorized")
	want(t, a.do(http.MethodGet, "/v1/users", rotated.Key, nil), http.StatusOK)
	if got := a.do(http.MethodGet, "/v1/api-keys/"+k.id, a.AdminKey, nil).Map(t); got["previous_key_expires_at"] != nil {
		t.Errorf("previous_key_expires_at after the grace period: got %v, want null", got["previous_key_expires_at"])
	}

	// Without a grace period, the old secret stops at once.
	res = a.do(http.MethodPost, "/v1/api-keys/"+k.id+"/rotate", a.AdminKey, map[string]any{})
	want(t, res, http.StatusOK)
	wantProblem(t, a.do(http.MethodGet, "/v1/users", rotated.Key, nil), http.StatusUnauthorized, "unauthorized")
	if got := res.Map(t); got["previous_key_expires_at"] != nil {
		t.Errorf("previous_key_expires_at without a grace period: got %v, want null", got["previous_key_expires_at"])
	}

	t.Run("ErrInvalidRequest", func(t *testing.T) {
		for _, body := range []map[string]any{{"expires_in": "8d"}, {"expires_in": "x"}, {"expires_in": 60}, {"scopes": []string{"*:*"}}} {
			p := wantProblem(t, a.do(http.MethodPost, "/v1/api-keys/"+k.id+"/rotate", a.AdminKey, body), http.StatusBadRequest, "invalid_request")
			if len(p.Errors) != 1 {
				t.Errorf("body %v: got errors %v, want one naming the field", body, p.Errors)
			}
		}
	})
	t.Run("ErrBootstrap", func(t *testing.T) {
		admin, err := a.Service.Authenticate(t.Context(), a.AdminKey)
		if err != nil {
			t.Fatal(err)
		}
		wantProblem(t, a.do(http.MethodPost, "/v1/api-keys/"+admin.KeyID+"/rotate", a.AdminKey, map[string]any{}), http.StatusForbidden, "forbidden")
		want(t, a.do(http.MethodGet, "/v1/users", a.AdminKey, nil), http.StatusOK)
	})
	t.Run("ErrToken", func(t *testing.T) {
		tok, _ := a.IssueToken(t, a.AdminKey, "", account.ScopeWriteAPIKeys)
		wantProblem(t, a.do(http.MethodPost, "/v1/api-keys/"+k.id+"/rotate", tok, map[string]any{}), http.StatusForbidden, "forbidden")
	})
}

// TestAPIKeyRotate_PreviousSecret: during a rotation's grace period the
// previous secret authenticates, reads and issues tokens, but manages no
// key: it cannot rotate its key again (with no grace period, which would
// lock the rightful holder out and leave it a secret of its own), change
// or delete it, create a key, or act on a key below it, nor obtain, with
// the holder's Idempotency-Key, the replay of the holder's rotation.
func TestAPIKeyRotate_PreviousSecret(t *testing.T) {
	a := newAPI(t)
	k := a.createKey(a.AdminKey, account.ScopeWriteAPIKeys, account.ScopeReadAPIKeys, "read:users")
	child := a.createKey(k.secret, "read:users")
	res := a.do(http.MethodPost, "/v1/api-keys/"+k.id+"/rotate", a.AdminKey, map[string]any{"expires_in": "1h"})
	want(t, res, http.StatusOK)
	current := res.Map(t)["key"].(string)
	// The holder rotates again, as a client that may retry does.
	res = a.doKey(http.MethodPost, "/v1/api-keys/"+k.id+"/rotate", current, "holder-rotation", map[string]any{"expires_in": "1h"})
	want(t, res, http.StatusOK)
	holder := res.Map(t)
	current, previous := holder["key"].(string), current

	for _, tc := range []struct {
		method, path string
		body         any
	}{
		{http.MethodPost, "/v1/api-keys/" + k.id + "/rotate", map[string]any{"expires_in": "0s"}},
		{http.MethodPatch, "/v1/api-keys/" + k.id, map[string]any{"name": "mine now"}},
		{http.MethodDelete, "/v1/api-keys/" + k.id, nil},
		{http.MethodPost, "/v1/api-keys", map[string]any{"name": "mine", "scopes": []string{"read:users"}}},
		{http.MethodPost, "/v1/api-keys/" + child.id + "/rotate", map[string]any{}},
		{http.MethodPatch, "/v1/api-keys/" + child.id, map[string]any{"enabled": false}},
		{http.MethodDelete, "/v1/api-keys/" + child.id, nil},
	} {
		wantProblem(t, a.do(tc.method, tc.path, previous, tc.body), http.StatusForbidden, string(account.CodePreviousSecret))
	}
	res = a.doKey(http.MethodPost, "/v1/api-keys/"+k.id+"/rotate", previous, "holder-rotation", map[string]any{"expires_in": "1h"})
	wantProblem(t, res, http.StatusForbidden, string(account.CodePreviousSecret))
	if strings.Contains(string(res.Body), current) {
		t.Fatalf("the previous secret got the current one: %s", res.Body)
	}

	// What it may still do.
	want(t, a.do(http.MethodGet, "/v1/users", previous, nil), http.StatusOK)
	want(t, a.do(http.MethodGet, "/v1/api-keys/"+k.id, previous, nil), http.StatusOK)
	want(t, a.form("/oauth2/token", basicClient(k.id, previous), url.Values{"grant_type": {"client_credentials"}, "scope": {"read:users"}}), http.StatusOK)

	// Nothing changed: the holder's secret works and manages the key, and
	// the child is as it was.
	got := a.do(http.MethodGet, "/v1/api-keys/"+k.id, current, nil).Map(t)
	if got["name"] != "tree" || got["masked_key"] != holder["masked_key"] {
		t.Errorf("the key after the refused requests: got %v", got)
	}
	a.wantAlive("the child", child)
	want(t, a.do(http.MethodPost, "/v1/api-keys/"+k.id+"/rotate", current, map[string]any{}), http.StatusOK)
}

// TestAPIKeyLastUse: a key shows when its secret last authenticated a
// request, to within a minute, by id and in the list; its tokens do not
// count.
func TestAPIKeyLastUse(t *testing.T) {
	a := newAPI(t)
	res := a.do(http.MethodPost, "/v1/api-keys", a.AdminKey, map[string]any{"name": "ci", "scopes": []string{"read:users"}})
	want(t, res, http.StatusCreated)
	created := res.Map(t)
	if created["last_used_at"] != nil {
		t.Errorf("a new key: last_used_at %v, want null", created["last_used_at"])
	}
	id, secret := created["id"].(string), created["key"].(string)
	lastUse := func() any {
		t.Helper()
		return a.do(http.MethodGet, "/v1/api-keys/"+id, a.AdminKey, nil).Map(t)["last_used_at"]
	}
	stamp := func(at time.Time) string { return at.UTC().Format("2006-01-02T15:04:05.000Z") }

	first := a.Clock.Now()
	tok, _ := a.IssueToken(t, secret, "", "read:users")
	if got := lastUse(); got != stamp(first) {
		t.Errorf("after the first request: last_used_at %v, want %s", got, stamp(first))
	}
	a.Clock.Advance(2 * time.Minute)
	want(t, a.do(http.MethodGet, "/v1/users", tok, nil), http.StatusOK)
	if got := lastUse(); got != stamp(first) {
		t.Errorf("after a request with a token of the key: last_used_at %v, want still %s", got, stamp(first))
	}
	want(t, a.do(http.MethodGet, "/v1/users", secret, nil), http.StatusOK)
	if got := lastUse(); got != stamp(a.Clock.Now()) {
		t.Errorf("after a request with the secret: last_used_at %v, want %s", got, stamp(a.Clock.Now()))
	}
	var list struct {
		Data []map[string]any `json:"data"`
	}
	a.do(http.MethodGet, "/v1/api-keys", a.AdminKey, nil).Decode(t, &list)
	for _, k := range list.Data {
		if k["id"] == id && k["last_used_at"] != stamp(a.Clock.Now()) {
			t.Errorf("in the list: last_used_at %v, want %s", k["last_used_at"], stamp(a.Clock.Now()))
		}
	}
}

// TestAPIKeyOwners: a key's organization and owner are on the key, in its
// tokens and in what verify and introspection say of them; lists filter
// by them; a key bound to an organization stays in it; deleting the
// organization deletes its keys.
func TestAPIKeyOwners(t *testing.T) {
	a := newAPI(t)
	o, other := a.CreateOrganization(t, uniqueSlug()), a.CreateOrganization(t, uniqueSlug())
	res := a.do(http.MethodPost, "/v1/api-keys", a.AdminKey, map[string]any{
		"name": "tenant", "scopes": []string{account.ScopeReadAPIKeys, account.ScopeWriteAPIKeys, "read:users"},
		"organization_id": o.ID, "owner_id": "crm:4711",
	})
	want(t, res, http.StatusCreated)
	created := res.Map(t)
	if created["organization_id"] != o.ID || created["owner_id"] != "crm:4711" {
		t.Errorf("POST: got organization_id %v, owner_id %v", created["organization_id"], created["owner_id"])
	}
	tenant := created["key"].(string)
	tok, _ := a.IssueToken(t, tenant, "", "read:users")
	v := a.do(http.MethodGet, "/v1/auth/verify", tok, nil).Map(t)
	if v["organization_id"] != o.ID || v["owner_id"] != "crm:4711" {
		t.Errorf("verify: got %v", v)
	}
	in := a.form("/oauth2/introspect", client{bearer: a.AdminKey}, url.Values{"token": {tok}}).Map(t)
	if in["active"] != true || in["org_id"] != o.ID || in["owner_id"] != "crm:4711" {
		t.Errorf("introspection: got %v", in)
	}
	if v := a.do(http.MethodGet, "/v1/auth/verify", a.tokenOf(t, a.AdminKey), nil).Map(t); v["organization_id"] != nil || v["owner_id"] != nil {
		t.Errorf("verify of a key without them: got %v, want nulls", v)
	}

	// The tenant's own key, without naming them, is bound to its
	// organization and has its owner, and it may name no other owner.
	res = a.do(http.MethodPost, "/v1/api-keys", tenant, map[string]any{"name": "tenant ci", "scopes": []string{"read:users"}})
	want(t, res, http.StatusCreated)
	if got := res.Map(t); got["organization_id"] != o.ID || got["owner_id"] != "crm:4711" {
		t.Errorf("a key created by a bound key with an owner: organization_id %v, owner_id %v, want %s and crm:4711", got["organization_id"], got["owner_id"], o.ID)
	}
	wantProblem(t, a.do(http.MethodPost, "/v1/api-keys", tenant, map[string]any{"name": "x", "scopes": []string{"read:users"}, "organization_id": other.ID}), http.StatusForbidden, "forbidden")
	wantProblem(t, a.do(http.MethodPost, "/v1/api-keys", tenant, map[string]any{"name": "x", "scopes": []string{"read:users"}, "owner_id": "crm:42"}), http.StatusForbidden, "forbidden")
	res = a.do(http.MethodPost, "/v1/api-keys", a.AdminKey, map[string]any{"name": "tenant ci", "scopes": []string{"read:users"}, "organization_id": o.ID, "owner_id": "crm:42"})
	want(t, res, http.StatusCreated)
	otherOwners := res.Map(t)["id"].(string)
	wantProblem(t, a.do(http.MethodPost, "/v1/api-keys", a.AdminKey, map[string]any{"name": "x", "scopes": []string{"read:users"}, "organization_id": account.NewID(account.PrefixOrganization, time.Now())}), http.StatusNotFound, "not_found")
	wantField(t, wantProblem(t, a.do(http.MethodPost, "/v1/api-keys", a.AdminKey, map[string]any{"name": "x", "scopes": []string{"read:users"}, "owner_id": strings.Repeat("x", 257)}), http.StatusBadRequest, "invalid_request"), "owner_id")
	a.createKey(a.AdminKey, "read:users") // bound to nothing

	count := func(credential, query string) int {
		t.Helper()
		var list struct {
			Data []map[string]any `json:"data"`
		}
		a.do(http.MethodGet, "/v1/api-keys?limit=100"+query, credential, nil).Decode(t, &list)
		return len(list.Data)
	}
	for _, tc := range []struct {
		credential, query string
		want              int
	}{
		{a.AdminKey, "&organization_id=" + o.ID, 3},
		{a.AdminKey, "&owner_id=crm:4711", 2},
		{a.AdminKey, "&organization_id=" + o.ID + "&owner_id=crm:42", 1},
		{a.AdminKey, "&organization_id=" + other.ID, 0},
		{tenant, "", 2}, // its organization's and its owner's only
	} {
		if got := count(tc.credential, tc.query); got != tc.want {
			t.Errorf("list%s: %d keys, want %d", tc.query, got, tc.want)
		}
	}
	wantProblem(t, a.do(http.MethodGet, "/v1/api-keys?organization_id="+other.ID, tenant, nil), http.StatusForbidden, "forbidden")
	wantProblem(t, a.do(http.MethodGet, "/v1/api-keys?owner_id=crm:42", tenant, nil), http.StatusForbidden, "forbidden")
	wantField(t, wantProblem(t, a.do(http.MethodGet, "/v1/api-keys?organization_id=acme", a.AdminKey, nil), http.StatusBadRequest, "invalid_request"), "organization_id")

	// Nor does it see, rotate, change or delete the key of another owner
	// in its organization: rotating it would hand it that key's secret.
	wantProblem(t, a.do(http.MethodGet, "/v1/api-keys/"+otherOwners, tenant, nil), http.StatusNotFound, "not_found")
	wantProblem(t, a.do(http.MethodPost, "/v1/api-keys/"+otherOwners+"/rotate", tenant, map[string]any{}), http.StatusNotFound, "not_found")
	wantProblem(t, a.do(http.MethodPatch, "/v1/api-keys/"+otherOwners, tenant, map[string]any{"enabled": false}), http.StatusNotFound, "not_found")
	wantProblem(t, a.do(http.MethodDelete, "/v1/api-keys/"+otherOwners, tenant, nil), http.StatusNotFound, "not_found")

	want(t, a.do(http.MethodDelete, "/v1/organizations/"+o.ID, a.AdminKey, nil), http.StatusNoContent)
	wantProblem(t, a.do(http.MethodGet, "/v1/users", tenant, nil), http.StatusUnauthorized, "unauthorized")
	if v := a.do(http.MethodGet, "/v1/auth/verify", tok, nil).Map(t); v["valid"] != false || v["reason"] != account.ReasonRevoked {
		t.Errorf("verify after the organization's delete: got %v, want revoked", v)
	}
	if got := count(a.AdminKey, "&owner_id=crm:4711"); got != 0 {
		t.Errorf("the owner's keys after the organization's delete: %d, want none", got)
	}
}

// tokenOf issues a token for the key with secret, for one of its scopes.
func (a api) tokenOf(t *testing.T, secret string) string {
	t.Helper()
	tok, _ := a.IssueToken(t, secret, "", "read:users")
	return tok
}

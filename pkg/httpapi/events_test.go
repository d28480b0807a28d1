package httpapi_test

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"latchkey/pkg/account"
)

// feedEvent is an event as GET /v1/events returns it.
type feedEvent struct {
	ID        string         `json:"id"`
	Type      string         `json:"type"`
	CreatedAt string         `json:"created_at"`
	Actor     map[string]any `json:"actor"`
	RequestID string         `json:"request_id"`
	Data      map[string]any `json:"data"`
	raw       string
}

// feedStart is an event id before every event.
var feedStart = account.EventIDAt(time.UnixMilli(0))

// tail reads the feed after after with the credential, as a consumer does,
// until it has n events: on DynamoDB the newest events show a few seconds
// late (the store's call timeout plus 2 s; the tests' stores have a long
// one).
func (a api) tail(credential, after string, n int) []feedEvent {
	a.t.Helper()
	var out []feedEvent
	deadline := time.Now().Add(90 * time.Second)
	for len(out) < n && time.Now().Before(deadline) {
		res := a.do(http.MethodGet, "/v1/events?limit=100&after="+after, credential, nil)
		want(a.t, res, http.StatusOK)
		var page struct {
			Data    []json.RawMessage `json:"data"`
			HasMore bool              `json:"has_more"`
		}
		res.Decode(a.t, &page)
		for _, raw := range page.Data {
			var e feedEvent
			if err := json.Unmarshal(raw, &e); err != nil {
				a.t.Fatal(err)
			}
			e.raw = string(raw)
			out = append(out, e)
			after = e.ID
		}
		if !page.HasMore && len(out) < n {
			time.Sleep(50 * time.Millisecond)
		}
	}
	return out
}

func TestEvents(t *testing.T) {
	t.Run("Feed", func(t *testing.T) {
		t.Parallel()
		a := newAPI(t)
		created := a.do(http.MethodPost, "/v1/users", a.AdminKey, map[string]any{"email": uniqueEmail(), "name": "Ada"})
		want(t, created, http.StatusCreated)
		user := created.Map(t)
		id := user["id"].(string)
		patched := a.do(http.MethodPatch, "/v1/users/"+id, a.AdminKey, map[string]any{"name": "Ada King"})
		want(t, patched, http.StatusOK)
		keyRes := a.do(http.MethodPost, "/v1/api-keys", a.AdminKey, map[string]any{"name": "ci", "scopes": []string{"read:users"}})
		want(t, keyRes, http.StatusCreated)
		key := keyRes.Map(t)
		secret := key["key"].(string)
		rotated := a.do(http.MethodPost, "/v1/api-keys/"+key["id"].(string)+"/rotate", a.AdminKey, map[string]any{"expires_in": "1h"})
		want(t, rotated, http.StatusOK)
		newSecret := rotated.Map(t)["key"].(string)
		deleted := a.do(http.MethodDelete, "/v1/users/"+id, a.AdminKey, nil)
		want(t, deleted, http.StatusNoContent)
		// An access token's change names the token too.
		tok, claims := a.IssueToken(t, a.AdminKey, "", account.ScopeWriteUsers)
		byToken := a.do(http.MethodPost, "/v1/users", tok, map[string]any{"email": uniqueEmail(), "name": "Grace"})
		want(t, byToken, http.StatusCreated)
		// And an OAuth revocation of a token is a change.
		revoked, revokedClaims := a.IssueToken(t, a.AdminKey, "", "read:users")
		res := a.form("/oauth2/revoke", postClient(key["created_by"].(string), a.AdminKey), url.Values{"token": {revoked}})
		want(t, res, http.StatusOK)

		got := a.tail(a.AdminKey, feedStart, 7)
		wantTypes := []string{account.EventUserCreated, account.EventUserUpdated, account.EventAPIKeyCreated, account.EventAPIKeyRotated, account.EventUserDeleted, account.EventUserCreated, account.EventTokenRevoked}
		var types []string
		for _, e := range got {
			types = append(types, e.Type)
		}
		if !reflect.DeepEqual(types, wantTypes) {
			t.Fatalf("types: got %v, want %v", types, wantTypes)
		}
		// Read oldest first, next_cursor goes on forwards from the last
		// event read: the only way on from a page a filter left empty.
		var fw struct {
			Data       []feedEvent `json:"data"`
			HasMore    bool        `json:"has_more"`
			NextCursor *string     `json:"next_cursor"`
		}
		a.do(http.MethodGet, "/v1/events?limit=2&after="+feedStart, a.AdminKey, nil).Decode(t, &fw)
		if len(fw.Data) != 2 || !fw.HasMore || fw.NextCursor == nil {
			t.Fatalf("after=, limit=2: got %d events, has_more %v, next_cursor %v; want 2, true and a cursor", len(fw.Data), fw.HasMore, fw.NextCursor)
		}
		a.do(http.MethodGet, "/v1/events?limit=2&cursor="+url.QueryEscape(*fw.NextCursor), a.AdminKey, nil).Decode(t, &fw)
		if len(fw.Data) != 2 || fw.Data[0].ID != got[2].ID || fw.Data[1].ID != got[3].ID {
			t.Errorf("the forward cursor's page: got %v, want events %s and %s", fw.Data, got[2].ID, got[3].ID)
		}
		admin := key["created_by"].(string)
		changes := []*struct {
			body      map[string]any
			requestID string
		}{
			{user, created.Header.Get("X-Request-Id")},
			{patched.Map(t), patched.Header.Get("X-Request-Id")},
			{key, keyRes.Header.Get("X-Request-Id")},
			{rotated.Map(t), rotated.Header.Get("X-Request-Id")},
			{patched.Map(t), deleted.Header.Get("X-Request-Id")},
			{byToken.Map(t), byToken.Header.Get("X-Request-Id")},
		}
		for i, c := range changes {
			e := got[i]
			delete(c.body, "key") // the secret is shown once, in the answer only
			if !reflect.DeepEqual(e.Data, c.body) {
				t.Errorf("%s: data %v, want the API's %v", e.Type, e.Data, c.body)
			}
			if e.RequestID != c.requestID || e.RequestID == "" {
				t.Errorf("%s: request_id %q, want the change's X-Request-Id %q", e.Type, e.RequestID, c.requestID)
			}
			if e.Actor["key_id"] != admin {
				t.Errorf("%s: actor %v, want key %s", e.Type, e.Actor, admin)
			}
			if _, ok := e.Actor["token_id"]; ok != (i == 5) {
				t.Errorf("%s: actor %v: a token_id only for the change made with a token", e.Type, e.Actor)
			}
		}
		if got[5].Actor["token_id"] != claims.ID {
			t.Errorf("actor of the change made with a token: %v, want token_id %s", got[5].Actor, claims.ID)
		}
		if got[6].Data["token_id"] != revokedClaims.ID || got[6].Actor["key_id"] != admin {
			t.Errorf("token.revoked by /oauth2/revoke: %s", got[6].raw)
		}
		// Never a secret, nor a hash of one.
		for _, s := range []string{secret, newSecret} {
			h := account.HashAPIKey(s)
			for _, e := range got {
				for _, leak := range []string{s, hex.EncodeToString(h), base64.StdEncoding.EncodeToString(h), base64.RawURLEncoding.EncodeToString(h)} {
					if strings.Contains(e.raw, leak) {
						t.Errorf("%s holds a secret or its hash: %s", e.Type, e.raw)
					}
				}
			}
		}

		// Newest first, by type.
		res = a.do(http.MethodGet, "/v1/events?types=user.deleted,token.revoked", a.AdminKey, nil)
		want(t, res, http.StatusOK)
		var page struct {
			Data []feedEvent `json:"data"`
		}
		res.Decode(t, &page)
		if len(page.Data) != 2 || page.Data[0].Type != account.EventTokenRevoked || page.Data[1].Type != account.EventUserDeleted {
			t.Errorf("?types=user.deleted,token.revoked: %s", res.Body)
		}
		// Before: strictly before the id given.
		res = a.do(http.MethodGet, "/v1/events?limit=1&before="+got[1].ID, a.AdminKey, nil)
		want(t, res, http.StatusOK)
		res.Decode(t, &page)
		if len(page.Data) != 1 || page.Data[0].ID != got[0].ID {
			t.Errorf("?before=%s: %s, want only %s", got[1].ID, res.Body, got[0].ID)
		}
	})

	t.Run("BadQueries", func(t *testing.T) {
		t.Parallel()
		a := newAPI(t)
		res := a.do(http.MethodGet, "/v1/events?types=user.created,user.exploded", a.AdminKey, nil)
		if p := wantProblem(t, res, http.StatusBadRequest, "unknown_event_type"); !strings.Contains(p.Detail, "user.exploded") {
			t.Errorf("detail %q does not name the unknown type", p.Detail)
		}
		res = a.do(http.MethodGet, "/v1/events?after=evt_nope", a.AdminKey, nil)
		wantField(t, wantProblem(t, res, http.StatusBadRequest, "invalid_request"), "after")
		res = a.do(http.MethodGet, "/v1/events?after="+feedStart+"&before="+feedStart, a.AdminKey, nil)
		wantField(t, wantProblem(t, res, http.StatusBadRequest, "invalid_request"), "after")
		// read:events is a scope of its own.
		_, secret := a.CreateAPIKey(t, account.ScopeReadUsers)
		res = a.do(http.MethodGet, "/v1/events", secret, nil)
		wantProblem(t, res, http.StatusForbidden, "insufficient_scope")
	})
}

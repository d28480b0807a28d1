package httpapi_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"latchkey/pkg/account"
)

// keyTokens returns the ids of the live tokens GET /v1/api-keys/{id}/tokens
// lists, following the cursor with pages of one.
func (a api) keyTokens(credential, keyID string) []string {
	a.t.Helper()
	var ids []string
	path := "/v1/api-keys/" + keyID + "/tokens?limit=1"
	for range 20 {
		res := a.do(http.MethodGet, path, credential, nil)
		want(a.t, res, http.StatusOK)
		if strings.Contains(string(res.Body), "eyJ") {
			a.t.Fatalf("the list shows a token itself: %s", res.Body)
		}
		var page struct {
			Data []struct {
				ID    string `json:"id"`
				KeyID string `json:"key_id"`
			} `json:"data"`
			HasMore    bool   `json:"has_more"`
			NextCursor string `json:"next_cursor"`
		}
		res.Decode(a.t, &page)
		for _, d := range page.Data {
			if d.KeyID != keyID {
				a.t.Errorf("listed token %s of key %s, want key %s", d.ID, d.KeyID, keyID)
			}
			ids = append(ids, d.ID)
		}
		if !page.HasMore {
			return ids
		}
		path = "/v1/api-keys/" + keyID + "/tokens?limit=1&cursor=" + url.QueryEscape(page.NextCursor)
	}
	a.t.Fatal("paging does not end")
	return nil
}

func TestAPIKeyTokens(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		// The key's tokens are listed newest first; revoking them all
		// refuses each at once through verify, introspection and the API,
		// lists none, records one event; a token issued afterwards works.
		a := newAPI(t)
		k := a.createKey(a.AdminKey, "read:users")
		_, second := a.IssueToken(t, k.secret, "", "read:users")
		_, third := a.IssueToken(t, k.secret, "", "read:users")
		ids := a.keyTokens(a.AdminKey, k.id)
		if len(ids) != 3 || ids[0] != third.ID || ids[1] != second.ID {
			t.Fatalf("listed %v, want 3 tokens, %s and %s first", ids, third.ID, second.ID)
		}

		res := a.do(http.MethodPost, "/v1/api-keys/"+k.id+"/tokens/revoke", a.AdminKey, map[string]any{})
		want(t, res, http.StatusOK)
		if got := res.Map(t)["tokens_revoked_before"]; got == nil {
			t.Errorf("tokens_revoked_before: got null, want the time of the revocation")
		}
		if v := a.do(http.MethodGet, "/v1/auth/verify", k.token, nil).Map(t); v["valid"] != false || v["reason"] != account.ReasonRevoked {
			t.Errorf("verify: got %v, want revoked", v)
		}
		if v := a.introspect(basicClient(k.id, k.secret), k.token); v["active"] != false {
			t.Errorf("introspect: got %v, want inactive", v)
		}
		wantProblem(t, a.do(http.MethodGet, "/v1/users", k.token, nil), http.StatusUnauthorized, "unauthorized")
		if ids := a.keyTokens(a.AdminKey, k.id); len(ids) != 0 {
			t.Errorf("listed %v after the revocation, want none", ids)
		}
		// The key itself still works.
		want(t, a.do(http.MethodGet, "/v1/users", k.secret, nil), http.StatusOK)

		a.Clock.Advance(time.Millisecond)
		tok, fresh := a.IssueToken(t, k.secret, "", "read:users")
		want(t, a.do(http.MethodGet, "/v1/users", tok, nil), http.StatusOK)
		if ids := a.keyTokens(a.AdminKey, k.id); len(ids) != 1 || ids[0] != fresh.ID {
			t.Errorf("listed %v, want only %s", ids, fresh.ID)
		}

		// On DynamoDB the newest events show a few seconds late (see tail).
		var revoked []feedEvent
		for _, e := range a.tail(a.AdminKey, feedStart, 2) {
			if e.Type == account.EventAPIKeyTokensRevoked {
				revoked = append(revoked, e)
			}
		}
		if len(revoked) != 1 || !strings.Contains(revoked[0].raw, `"id":"`+k.id+`"`) || !strings.Contains(revoked[0].raw, `"tokens_revoked_before":"`) {
			t.Errorf("api_key.tokens_revoked events: got %+v, want one, of the key with tokens_revoked_before", revoked)
		}
	})
	t.Run("Body", func(t *testing.T) {
		a := newAPI(t)
		k := a.createKey(a.AdminKey, "read:users")
		p := wantProblem(t, a.do(http.MethodPost, "/v1/api-keys/"+k.id+"/tokens/revoke", a.AdminKey, map[string]any{"all": true}), http.StatusBadRequest, "invalid_request")
		wantField(t, p, "all")
	})
	t.Run("ErrAuthorization", func(t *testing.T) {
		a := newAPI(t)
		k := a.createKey(a.AdminKey, "read:users")
		reader := a.createKey(a.AdminKey, "read:api_keys", "read:users")
		wantProblem(t, a.do(http.MethodPost, "/v1/api-keys/"+k.id+"/tokens/revoke", reader.secret, map[string]any{}), http.StatusForbidden, "insufficient_scope")
		wantProblem(t, a.do(http.MethodPost, "/v1/api-keys/"+k.id+"/tokens/revoke", k.token, map[string]any{}), http.StatusForbidden, "forbidden")
		revoker := a.createKey(a.AdminKey, "revoke:tokens", "read:users")
		wantProblem(t, a.do(http.MethodPost, "/v1/api-keys/"+revoker.id+"/tokens/revoke", revoker.token, map[string]any{}), http.StatusForbidden, "forbidden")
		wantProblem(t, a.do(http.MethodGet, "/v1/api-keys/"+k.id+"/tokens", k.secret, nil), http.StatusForbidden, "insufficient_scope")
		wantProblem(t, a.do(http.MethodGet, "/v1/api-keys/key_nope/tokens", a.AdminKey, nil), http.StatusNotFound, "not_found")
		// Neither key was changed: their tokens verify.
		for _, tok := range []string{k.token, revoker.token} {
			if v := a.do(http.MethodGet, "/v1/auth/verify", tok, nil).Map(t); v["valid"] != true {
				t.Errorf("verify: got %v, want valid", v)
			}
		}
	})
}

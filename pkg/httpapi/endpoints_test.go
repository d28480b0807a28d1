package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"latchkey/pkg/httpapi/httpapitest"
)

// TestEndpoints walks every endpoint's success path in the order a client
// meets them, checking the bodies and headers the contract promises.
func TestEndpoints(t *testing.T) {
	a := newAPI(t)
	admin := a.AdminKey

	t.Run("APIKeys", func(t *testing.T) {
		res := a.do(http.MethodPost, "/v1/api-keys", admin, map[string]any{"name": "billing", "scopes": []string{"read:users", "write:users"}, "expires_in": "30d"})
		want(t, res, http.StatusCreated)
		if got := res.Header.Get("Cache-Control"); got != "no-store" {
			t.Errorf("Cache-Control: got %q, want no-store", got)
		}
		created := res.Map(t)
		secret, _ := created["key"].(string)
		id, _ := created["id"].(string)
		if !strings.HasPrefix(secret, "lk_") || created["masked_key"] != "lk_…"+secret[len(secret)-4:] {
			t.Fatalf("create: key %q, masked_key %v: want the secret and its mask", secret, created["masked_key"])
		}
		if res.Header.Get("Location") != "/v1/api-keys/"+id {
			t.Errorf("Location: got %q", res.Header.Get("Location"))
		}

		got := a.do(http.MethodGet, "/v1/api-keys/"+id, admin, nil)
		want(t, got, http.StatusOK)
		if strings.Contains(string(got.Body), secret) || got.Map(t)["key"] != nil {
			t.Errorf("get: the secret is shown again: %s", got.Body)
		}
		list := a.do(http.MethodGet, "/v1/api-keys?limit=100", admin, nil)
		want(t, list, http.StatusOK)
		if strings.Contains(string(list.Body), secret) || strings.Contains(strings.ToLower(string(list.Body)), "hash") {
			t.Errorf("list: shows a secret or hash: %s", list.Body)
		}
		var keys struct {
			Data []map[string]any `json:"data"`
		}
		list.Decode(t, &keys)
		if len(keys.Data) != 2 || keys.Data[0]["id"] != id || keys.Data[1]["bootstrap"] != true {
			t.Errorf("list: got %v, want the new key then the bootstrap key", keys.Data)
		}
		want(t, a.do(http.MethodDelete, "/v1/api-keys/"+id, admin, nil), http.StatusNoContent)
		wantProblem(t, a.do(http.MethodGet, "/v1/api-keys/"+id, admin, nil), http.StatusNotFound, "not_found")
	})

	t.Run("Tokens", func(t *testing.T) {
		res := a.do(http.MethodPost, "/v1/auth/token", admin, map[string]any{"scopes": []string{"read:users", "read:users", "write:things"}, "expires_in": "15m"})
		want(t, res, http.StatusCreated)
		if got := res.Header.Get("Cache-Control"); got != "no-store" {
			t.Errorf("Cache-Control: got %q, want no-store", got)
		}
		var tok struct {
			AccessToken string   `json:"access_token"`
			TokenType   string   `json:"token_type"`
			TokenID     string   `json:"token_id"`
			Scopes      []string `json:"scopes"`
			IssuedAt    string   `json:"issued_at"`
			ExpiresAt   string   `json:"expires_at"`
			ExpiresIn   int      `json:"expires_in"`
		}
		res.Decode(t, &tok)
		if tok.TokenType != "Bearer" || tok.ExpiresIn != 900 || len(tok.Scopes) != 2 {
			t.Errorf("token: got %+v, want Bearer, 900 s, scopes deduplicated", tok)
		}

		def := a.do(http.MethodPost, "/v1/auth/token", admin, map[string]any{"scopes": []string{"read:users"}}).Map(t)
		if def["expires_in"] != float64(3600) {
			t.Errorf("default lifetime: got %v s, want 3600", def["expires_in"])
		}
		if def["audience"] != httpapitest.Issuer {
			t.Errorf("default audience: got %v, want the issuer %s", def["audience"], httpapitest.Issuer)
		}
		aud := a.do(http.MethodPost, "/v1/auth/token", admin, map[string]any{"scopes": []string{"read:users"}, "audience": "https://orders.example.com"})
		want(t, aud, http.StatusCreated)
		audTok, _ := aud.Map(t)["access_token"].(string)
		if got := a.do(http.MethodGet, "/v1/auth/verify", audTok, nil).Map(t); got["audience"] != "https://orders.example.com" {
			t.Errorf("verify a token with an audience: got %v, want audience https://orders.example.com", got)
		}
		p := wantProblem(t, a.do(http.MethodPost, "/v1/auth/token", admin, map[string]any{"scopes": []string{"read:users"}, "audience": "https://x.example/#f"}), http.StatusBadRequest, "invalid_request")
		if len(p.Errors) != 1 || p.Errors[0].Field != "audience" {
			t.Errorf("a bad audience: got %+v, want a field error on audience", p.Errors)
		}

		a.Clock.Advance(time.Minute)
		v := a.do(http.MethodGet, "/v1/auth/verify", tok.AccessToken, nil)
		want(t, v, http.StatusOK)
		if got := v.Header.Get("Cache-Control"); got != "no-store" {
			t.Errorf("verify Cache-Control: got %q, want no-store", got)
		}
		vm := v.Map(t)
		if vm["valid"] != true || vm["token_id"] != tok.TokenID || vm["expires_in"] != float64(840) || vm["issued_at"] != tok.IssuedAt || vm["expires_at"] != tok.ExpiresAt || vm["audience"] != httpapitest.Issuer {
			t.Errorf("verify: got %v, want valid, token %s, 840 s left", vm, tok.TokenID)
		}
		if !strings.HasPrefix(vm["key_id"].(string), "key_") {
			t.Errorf("verify: key_id %v", vm["key_id"])
		}
		for _, bad := range []string{"not-a-token", tok.AccessToken[:len(tok.AccessToken)-4] + "AAAA", "eyJ.eyJ.sig"} {
			if got := a.do(http.MethodGet, "/v1/auth/verify", bad, nil).Map(t); got["valid"] != false || got["reason"] != "invalid" {
				t.Errorf("verify %q: got %v, want invalid", bad, got)
			}
		}

		r := a.do(http.MethodPost, "/v1/auth/revoke", admin, map[string]any{"token": tok.AccessToken})
		want(t, r, http.StatusOK)
		if got := a.do(http.MethodGet, "/v1/auth/verify", tok.AccessToken, nil).Map(t); got["valid"] != false || got["reason"] != "revoked" {
			t.Errorf("verify after revoke: got %v", got)
		}
	})

	t.Run("JWKS", func(t *testing.T) {
		res := a.do(http.MethodGet, "/v1/auth/jwks", "", nil)
		want(t, res, http.StatusOK)
		if got := res.Header.Get("Cache-Control"); !strings.Contains(got, "max-age=") {
			t.Errorf("Cache-Control: got %q, want a max-age", got)
		}
		var set struct {
			Keys []struct {
				Kid string `json:"kid"`
			} `json:"keys"`
		}
		res.Decode(t, &set)
		if len(set.Keys) != 1 || set.Keys[0].Kid != a.Signer.KeyID() {
			t.Errorf("JWKS: got %+v, want the signing key %s", set, a.Signer.KeyID())
		}
	})

	var userID, orgID string
	t.Run("Users", func(t *testing.T) {
		res := a.do(http.MethodPost, "/v1/users", admin, map[string]any{"email": "Ada@Example.com", "name": "  Ada Lovelace ", "role": "admin"})
		want(t, res, http.StatusCreated)
		u := res.Map(t)
		userID = u["id"].(string)
		if u["email"] != "ada@example.com" || u["name"] != "Ada Lovelace" || u["role"] != "admin" {
			t.Errorf("create: got %v, want the e-mail lower-cased and the name trimmed", u)
		}
		if res.Header.Get("Location") != "/v1/users/"+userID {
			t.Errorf("Location: got %q", res.Header.Get("Location"))
		}
		def := a.do(http.MethodPost, "/v1/users", admin, map[string]any{"email": "grace@example.com", "name": "Grace"}).Map(t)
		if def["role"] != "member" {
			t.Errorf("default role: got %v, want member", def["role"])
		}

		if got := a.do(http.MethodGet, "/v1/users/"+userID, admin, nil).Map(t); got["email"] != "ada@example.com" {
			t.Errorf("get: got %v", got)
		}
		a.Clock.Advance(time.Second)
		up := a.do(http.MethodPut, "/v1/users/"+userID, admin, map[string]any{"name": "Ada King"})
		want(t, up, http.StatusOK)
		if got := up.Map(t); got["name"] != "Ada King" || got["updated_at"] == got["created_at"] {
			t.Errorf("update: got %v, want the new name and a new updated_at", got)
		}

		var list struct {
			Data       []map[string]any `json:"data"`
			HasMore    bool             `json:"has_more"`
			NextCursor *string          `json:"next_cursor"`
		}
		a.do(http.MethodGet, "/v1/users", admin, nil).Decode(t, &list)
		if len(list.Data) != 2 || list.Data[0]["email"] != "grace@example.com" || list.HasMore || list.NextCursor != nil {
			t.Errorf("list: got %+v, want both users newest first and no more", list)
		}
		a.do(http.MethodGet, "/v1/users?email=ADA@example.COM", admin, nil).Decode(t, &list)
		if len(list.Data) != 1 || list.Data[0]["id"] != userID {
			t.Errorf("find by e-mail: got %+v, want ada", list)
		}
		a.do(http.MethodGet, "/v1/users?email=nobody@example.com", admin, nil).Decode(t, &list)
		if len(list.Data) != 0 {
			t.Errorf("find unknown e-mail: got %+v, want an empty list", list)
		}
	})

	t.Run("Organizations", func(t *testing.T) {
		res := a.do(http.MethodPost, "/v1/organizations", admin, map[string]any{"name": "Acme", "slug": "acme"})
		want(t, res, http.StatusCreated)
		o := res.Map(t)
		orgID = o["id"].(string)
		if o["plan"] != "free" || o["slug"] != "acme" {
			t.Errorf("create: got %v, want plan free by default", o)
		}
		if got := a.do(http.MethodGet, "/v1/organizations/"+orgID, admin, nil).Map(t); got["name"] != "Acme" {
			t.Errorf("get: got %v", got)
		}
		if got := a.do(http.MethodPatch, "/v1/organizations/"+orgID, admin, map[string]any{"plan": "pro"}).Map(t); got["plan"] != "pro" || got["name"] != "Acme" {
			t.Errorf("patch plan: got %v, want plan pro and the name unchanged", got)
		}
		if got := a.do(http.MethodPatch, "/v1/organizations/"+orgID, admin, map[string]any{"name": "Acme Corp"}).Map(t); got["plan"] != "pro" || got["name"] != "Acme Corp" {
			t.Errorf("patch name: got %v, want the plan unchanged", got)
		}
		var list struct {
			Data []map[string]any `json:"data"`
		}
		a.do(http.MethodGet, "/v1/organizations", admin, nil).Decode(t, &list)
		if len(list.Data) != 1 || list.Data[0]["id"] != orgID {
			t.Errorf("list: got %v", list)
		}
	})

	t.Run("Members", func(t *testing.T) {
		base := "/v1/organizations/" + orgID + "/members"
		res := a.do(http.MethodPost, base, admin, map[string]any{"user_id": userID})
		want(t, res, http.StatusCreated)
		if got := res.Map(t); got["role"] != "member" || got["organization_id"] != orgID || got["user_id"] != userID {
			t.Errorf("add: got %v, want role member by default", got)
		}
		if got := a.do(http.MethodPatch, base+"/"+userID, admin, map[string]any{"role": "owner"}).Map(t); got["role"] != "owner" {
			t.Errorf("update: got %v", got)
		}
		var list struct {
			Data []map[string]any `json:"data"`
		}
		a.do(http.MethodGet, base, admin, nil).Decode(t, &list)
		if len(list.Data) != 1 || list.Data[0]["role"] != "owner" {
			t.Errorf("members: got %v", list)
		}
		a.do(http.MethodGet, "/v1/users/"+userID+"/organizations", admin, nil).Decode(t, &list)
		if len(list.Data) != 1 || list.Data[0]["organization_id"] != orgID {
			t.Errorf("user's organizations: got %v", list)
		}
		if org, _ := list.Data[0]["organization"].(map[string]any); org["id"] != orgID || org["name"] == "" || org["slug"] == "" {
			t.Errorf("user's organizations: got organization %v, want its id, name and slug", list.Data[0]["organization"])
		}
		if got := a.do(http.MethodGet, base+"/"+userID, admin, nil).Map(t); got["role"] != "owner" || got["user_id"] != userID {
			t.Errorf("get: got %v", got)
		}
		// The only owner stays: neither removed nor demoted.
		wantProblem(t, a.do(http.MethodDelete, base+"/"+userID, admin, nil), http.StatusConflict, "last_owner")
		wantProblem(t, a.do(http.MethodPatch, base+"/"+userID, admin, map[string]any{"role": "admin"}), http.StatusConflict, "last_owner")
		other := a.CreateUser(t, uniqueEmail())
		want(t, a.do(http.MethodPost, base, admin, map[string]any{"user_id": other.ID, "role": "owner"}), http.StatusCreated)
		want(t, a.do(http.MethodDelete, base+"/"+userID, admin, nil), http.StatusNoContent)
		wantProblem(t, a.do(http.MethodDelete, base+"/"+userID, admin, nil), http.StatusNotFound, "not_found")
		wantProblem(t, a.do(http.MethodGet, base+"/"+userID, admin, nil), http.StatusNotFound, "not_found")
	})

	t.Run("Deletes", func(t *testing.T) {
		want(t, a.do(http.MethodPost, "/v1/organizations/"+orgID+"/members", admin, map[string]any{"user_id": userID}), http.StatusCreated)
		want(t, a.do(http.MethodDelete, "/v1/users/"+userID, admin, nil), http.StatusNoContent)
		wantProblem(t, a.do(http.MethodGet, "/v1/users/"+userID, admin, nil), http.StatusNotFound, "not_found")
		var list struct {
			Data []map[string]any `json:"data"`
		}
		a.do(http.MethodGet, "/v1/organizations/"+orgID+"/members", admin, nil).Decode(t, &list)
		for _, m := range list.Data {
			if m["user_id"] == userID {
				t.Errorf("members after deleting the user: got %v, want the user gone", list.Data)
			}
		}
		want(t, a.do(http.MethodPost, "/v1/users", admin, map[string]any{"email": "ada@example.com", "name": "Ada"}), http.StatusCreated)

		want(t, a.do(http.MethodDelete, "/v1/organizations/"+orgID, admin, nil), http.StatusNoContent)
		wantProblem(t, a.do(http.MethodGet, "/v1/organizations/"+orgID, admin, nil), http.StatusNotFound, "not_found")
		want(t, a.do(http.MethodPost, "/v1/organizations", admin, map[string]any{"name": "Acme", "slug": "acme"}), http.StatusCreated)
	})
}

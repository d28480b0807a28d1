package httpapi_test

import (
	"net/http"
	"testing"

	"latchkey/pkg/account"
	"latchkey/pkg/httpapi/httpapitest"
)

// TestDecide_Limits is issue 29's hole 2 through the API, on each store:
// a sibling, or an organization's manager key, changes no key's limits or
// credits; a key above does.
func TestDecide_Limits(t *testing.T) {
	for name, newStore := range httpapitest.Stores(t) {
		t.Run(name, func(t *testing.T) {
			env := httpapitest.NewServerOver(t, newStore(t))
			o := env.CreateOrganization(t, "tenant")
			create := func(credential string, body map[string]any) keyJSON {
				t.Helper()
				res := env.Do(t, http.MethodPost, "/v1/api-keys", credential, body)
				env.CheckResponse(t, res)
				if res.StatusCode != http.StatusCreated {
					t.Fatalf("create %v: %d %s", body, res.StatusCode, res.Body)
				}
				var k keyJSON
				res.Decode(t, &k)
				return k
			}
			limited := map[string]any{"rate_limits": []map[string]any{{"name": "uses", "limit": 10, "period": "1m"}}, "credits": map[string]any{"remaining": 2}}
			plan := create(env.AdminKey, map[string]any{"name": "plan", "scopes": []string{"read:orders"}, "organization_id": o.ID,
				"rate_limits": limited["rate_limits"], "credits": limited["credits"]})
			manager := create(env.AdminKey, map[string]any{"name": "manager", "scopes": []string{account.ScopeWriteAPIKeys, "read:orders"}, "organization_id": o.ID})
			sibling := create(env.AdminKey, map[string]any{"name": "sibling", "scopes": []string{account.ScopeWriteAPIKeys, "read:orders"}})
			child := create(manager.Key, map[string]any{"name": "child", "scopes": []string{"read:orders"}})

			for _, c := range []struct {
				name, credential, id string
				body                 map[string]any
				want                 int
			}{
				{"manager lifts the plan key's limits", manager.Key, plan.ID, map[string]any{"rate_limits": nil, "credits": nil}, http.StatusForbidden},
				{"sibling resets the plan key's credits", sibling.Key, plan.ID, map[string]any{"credits": map[string]any{"remaining": 2}}, http.StatusForbidden},
				{"sibling removes the plan key's rate limits", sibling.Key, plan.ID, map[string]any{"rate_limits": []any{}}, http.StatusForbidden},
				{"manager limits its child", manager.Key, child.ID, limited, http.StatusOK},
				{"admin lifts the plan key's limits", env.AdminKey, plan.ID, map[string]any{"rate_limits": nil, "credits": nil}, http.StatusOK},
			} {
				res := env.Do(t, http.MethodPatch, "/v1/api-keys/"+c.id, c.credential, c.body)
				env.CheckResponse(t, res)
				if res.StatusCode != c.want {
					t.Errorf("%s: %d %s, want %d", c.name, res.StatusCode, res.Body, c.want)
				}
			}
		})
	}
}

// TestDecide_RevokeAdminTokens is issue 29's hole 6c through the API, on
// each store: another *:* key cannot revoke every token of the bootstrap
// admin key, which is managed by configuration; the admin key can.
func TestDecide_RevokeAdminTokens(t *testing.T) {
	for name, newStore := range httpapitest.Stores(t) {
		t.Run(name, func(t *testing.T) {
			env := httpapitest.NewServerOver(t, newStore(t))
			admin, err := env.Service.Authenticate(t.Context(), env.AdminKey)
			if err != nil {
				t.Fatal(err)
			}
			_, other := env.CreateAPIKey(t, account.ScopeAll)
			path := "/v1/api-keys/" + admin.KeyID + "/tokens/revoke"
			res := env.Do(t, http.MethodPost, path, other, map[string]any{})
			env.CheckResponse(t, res)
			if res.StatusCode != http.StatusForbidden {
				t.Errorf("a *:* key revokes the admin key's tokens: %d %s, want 403", res.StatusCode, res.Body)
			}
			res = env.Do(t, http.MethodPost, path, env.AdminKey, map[string]any{})
			env.CheckResponse(t, res)
			if res.StatusCode != http.StatusOK {
				t.Errorf("the admin key revokes its own tokens: %d %s, want 200", res.StatusCode, res.Body)
			}
		})
	}
}

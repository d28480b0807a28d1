package httpapi_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"latchkey/pkg/account"
	"latchkey/pkg/httpapi"
	"latchkey/pkg/httpapi/httpapitest"
)

// TestProbeKey (issue 34): the probe key, which the canary and the probe
// hold, issues a token of its one grant, verifies, introspects and revokes
// it, through the API, on each store; every route that needs a scope of
// Latchkey's (keys, users, organizations, events) refuses it 403
// insufficient_scope, it issues no token of another scope, and it neither
// revokes nor reads another key's token. The admin key neither rotates
// nor deletes it (403 forbidden): it is managed by configuration.
func TestProbeKey(t *testing.T) {
	for name, newStore := range httpapitest.Stores(t) {
		t.Run(name, func(t *testing.T) {
			env := httpapitest.NewServerOver(t, newStore(t))
			a := api{Env: env, t: t}
			probe := account.NewAPIKeySecret()
			if err := env.Service.EnsureProbeKey(t.Context(), probe, time.Time{}); err != nil {
				t.Fatalf("EnsureProbeKey: %v", err)
			}

			// What the probe does.
			res := a.do(http.MethodPost, "/v1/auth/token", probe, map[string]any{"scopes": []string{account.ProbeScope}, "expires_in": "5m"})
			want(t, res, http.StatusCreated)
			var issued struct {
				AccessToken string `json:"access_token"`
				TokenID     string `json:"token_id"`
			}
			res.Decode(t, &issued)
			verify := func(tok string) map[string]any {
				t.Helper()
				res := a.do(http.MethodGet, "/v1/auth/verify", tok, nil)
				want(t, res, http.StatusOK)
				return res.Map(t)
			}
			if v := verify(issued.AccessToken); v["valid"] != true || v["owner_id"] != account.ProbeOwnerID {
				t.Fatalf("verify the probe's token: %v, want valid, owner_id %s", v, account.ProbeOwnerID)
			}
			in := a.form("/oauth2/introspect", client{bearer: probe}, url.Values{"token": {issued.AccessToken}}).Map(t)
			probeID, _ := in["client_id"].(string)
			if in["active"] != true || probeID == "" {
				t.Fatalf("introspect the probe's token: %v, want active, with its key's id", in)
			}

			// What it may not do: every route that needs a scope.
			user := env.CreateUser(t, uniqueEmail())
			org := env.CreateOrganization(t, uniqueSlug())
			other, otherSecret := env.CreateAPIKey(t, "read:orders")
			ids := strings.NewReplacer("{id}", other.ID, "{user_id}", user.ID)
			refused := map[string]bool{}
			for _, r := range httpapi.Routes() {
				scope := r.Op.Scope()
				if scope == "" {
					continue
				}
				p := r.Path
				if r.Group == httpapi.GroupOrganizations {
					p = strings.Replace(p, "{id}", org.ID, 1)
				} else if r.Group == httpapi.GroupUsers {
					p = strings.Replace(p, "{id}", user.ID, 1)
				}
				var body any
				if r.Method != http.MethodGet && r.Method != http.MethodDelete {
					body = map[string]any{}
				}
				res := env.Do(t, r.Method, ids.Replace(p), probe, body)
				if pr := wantProblem(t, res, http.StatusForbidden, string(account.CodeInsufficientScope)); !strings.Contains(pr.Detail, scope) {
					t.Errorf("%s %s: %q, want the scope %s named", r.Method, r.Path, pr.Detail, scope)
				}
				refused[r.Method+" "+r.Path] = true
			}
			for _, r := range []string{"GET /v1/api-keys", "POST /v1/api-keys", "PATCH /v1/api-keys/{id}", "DELETE /v1/api-keys/{id}", "POST /v1/api-keys/{id}/rotate",
				"GET /v1/users", "POST /v1/users", "DELETE /v1/users/{id}", "GET /v1/organizations", "POST /v1/organizations", "DELETE /v1/organizations/{id}", "GET /v1/events"} {
				if !refused[r] {
					t.Errorf("%s was not tried", r)
				}
			}
			wantProblem(t, a.do(http.MethodPost, "/v1/auth/token", probe, map[string]any{"scopes": []string{account.ScopeReadUsers}}), http.StatusForbidden, string(account.CodeInsufficientScope))
			wantOAuthError(t, a.form("/oauth2/token", basicClient(probeID, probe), url.Values{"grant_type": {"client_credentials"}, "scope": {account.ScopeAll}}), http.StatusBadRequest, "invalid_scope")
			// Another key's token: the probe key's owner is not its owner.
			otherToken, _ := env.IssueToken(t, otherSecret, "5m", "read:orders")
			wantProblem(t, a.do(http.MethodPost, "/v1/auth/revoke", probe, map[string]any{"token": otherToken}), http.StatusForbidden, string(account.CodeForbidden))
			if in := a.form("/oauth2/introspect", client{bearer: probe}, url.Values{"token": {otherToken}}).Map(t); in["active"] != false || len(in) != 1 {
				t.Errorf("introspect another key's token: %v, want only active false", in)
			}
			if v := verify(otherToken); v["valid"] != true {
				t.Errorf("another key's token after the probe key's attempts: %v, want valid", v)
			}

			// The admin key neither rotates nor deletes it: its record follows
			// its configured secret.
			wantProblem(t, a.do(http.MethodPost, "/v1/api-keys/"+probeID+"/rotate", env.AdminKey, map[string]any{}), http.StatusForbidden, string(account.CodeForbidden))
			wantProblem(t, a.do(http.MethodDelete, "/v1/api-keys/"+probeID, env.AdminKey, nil), http.StatusForbidden, string(account.CodeForbidden))

			// And it revokes its own.
			res = a.do(http.MethodPost, "/v1/auth/revoke", probe, map[string]any{"token": issued.AccessToken})
			want(t, res, http.StatusOK)
			if v := verify(issued.AccessToken); v["valid"] != false || v["reason"] != "revoked" {
				t.Errorf("verify the revoked probe token: %v, want revoked", v)
			}
		})
	}
}

package deploytest_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"latchkey/pkg/account"
	"latchkey/pkg/httpapi"
	"latchkey/pkg/lambdaapp"
	"latchkey/pkg/lambdaapp/replay"
	"latchkey/pkg/token"
)

// TestLambda_LargestToken issues, through the auth function's Lambda
// handler, the largest token the limits allow (a key 8 keys deep below the
// fixture key, bound to the fixture organization, with 32 scopes of the
// longest form and an owner id of 256 '<', for an audience of 256
// characters of '&'), and finds it valid at GET /v1/auth/verify and POST
// /oauth2/introspect (the auth function) and in the authorizer function's
// handler. With HTML-escaped claims it was 9,160 bytes, over
// token.MaxTokenBytes, and all three called it invalid.
func TestLambda_LargestToken(t *testing.T) {
	b := newBackend(t)
	auth, err := lambdaapp.New(context.Background(), replay.Config(lambdaapp.Auth, "latchkey"), lambdaapp.Deps{
		Store: b.store, Keys: b.keys, Secrets: replay.NewSecrets(), Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	call := func(method, path, credential, contentType, body string) (int, map[string]any) {
		t.Helper()
		r := routeOf(httpapi.GroupAuth, method+" "+path)
		if r == nil {
			t.Fatalf("no route %s %s", method, path)
		}
		ev := routeEvent(*r)
		ev.RequestContext.RequestID = "LargestToken="
		ev.Headers["authorization"] = "Bearer " + credential
		ev.Headers["content-type"], ev.Body = contentType, body
		res, err := auth.Lambda()(context.Background(), ev)
		if err != nil {
			t.Fatalf("%s %s: handler error: %v", method, path, err)
		}
		var out map[string]any
		if res.Body != "" {
			if err := json.Unmarshal(responseBody(t, res), &out); err != nil {
				t.Fatalf("%s %s: %v", method, path, err)
			}
		}
		return res.StatusCode, out
	}
	createKey := func(creator string, req map[string]any) string {
		t.Helper()
		b, _ := json.Marshal(req)
		status, out := call(http.MethodPost, "/v1/api-keys", creator, "application/json", string(b))
		if status != http.StatusCreated {
			t.Fatalf("create a key: got %d %v", status, out)
		}
		return out["key"].(string)
	}

	parent := replay.KeySecret
	for range account.MaxKeyAncestors - 1 {
		parent = createKey(parent, map[string]any{"name": "chain", "scopes": []string{account.ScopeAll}})
	}
	var scopes []string
	for i := range 32 {
		scopes = append(scopes, fmt.Sprintf("%s:%s%02d", strings.Repeat("a", 32), strings.Repeat("r", 62), i))
	}
	leaf := createKey(parent, map[string]any{
		"name": "largest", "scopes": scopes, "organization_id": replay.OrgID,
		"owner_id": strings.Repeat("<", account.MaxExternalIDLength),
	})
	audience := "https://a/?" + strings.Repeat("&", account.MaxAudienceLength-len("https://a/?"))
	req, _ := json.Marshal(map[string]any{"scopes": scopes, "audience": audience})
	status, out := call(http.MethodPost, "/v1/auth/token", leaf, "application/json", string(req))
	if status != http.StatusCreated {
		t.Fatalf("issue: got %d %v", status, out)
	}
	tok := out["access_token"].(string)
	t.Logf("%d bytes (token.MaxTokenBytes %d)", len(tok), token.MaxTokenBytes)
	var claims struct {
		Anc []string `json:"anc"`
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.Split(tok, ".")[1])
	if err != nil || json.Unmarshal(payload, &claims) != nil || len(claims.Anc) != account.MaxKeyAncestors {
		t.Fatalf("the token names ancestors %v (%v), want %d of them", claims.Anc, err, account.MaxKeyAncestors)
	}

	if status, out := call(http.MethodGet, "/v1/auth/verify", tok, "", ""); status != http.StatusOK || out["valid"] != true {
		t.Errorf("verify: got %d %v, want valid", status, out)
	}
	form := url.Values{"token": {tok}}.Encode()
	if status, out := call(http.MethodPost, "/oauth2/introspect", replay.KeySecret, "application/x-www-form-urlencoded", form); status != http.StatusOK || out["active"] != true {
		t.Errorf("introspect: got %d %v, want active", status, out)
	}
	routes, _ := json.Marshal(map[string]any{"GET /orders": map[string]string{"audience": audience}})
	authorizer := newAuthorizer(t, b, string(routes), slog.New(slog.DiscardHandler))
	decision, err := authorizer(context.Background(), events.APIGatewayV2CustomAuthorizerV2Request{
		Version: "2.0", Type: "REQUEST", RouteKey: "GET /orders",
		Headers:        map[string]string{"authorization": "Bearer " + tok},
		RequestContext: events.APIGatewayV2HTTPRequestContext{RequestID: "LargestToken="},
	})
	if err != nil || !decision.IsAuthorized {
		t.Errorf("authorizer: got %+v, %v, want authorized", decision, err)
	}
}

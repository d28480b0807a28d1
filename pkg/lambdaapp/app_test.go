package lambdaapp_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/cfn"
	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"latchkey/pkg/account"
	"latchkey/pkg/dynamostore"
	"latchkey/pkg/httpapi/httpapitest"
	"latchkey/pkg/lambdaapp"
	"latchkey/pkg/lambdaapp/authevents"
	"latchkey/pkg/lambdaapp/authorizerapp"
	"latchkey/pkg/lambdaapp/replay"
	"latchkey/pkg/lambdaapp/replay/replaytest"
	"latchkey/pkg/logsample"
	"latchkey/pkg/mock"
	"latchkey/pkg/secrets"
	"latchkey/pkg/token"
)

// env is replaytest's store and Secrets Manager, shared by the functions
// as in a deployment, with the helpers these tests build on it.
type env struct{ replaytest.Env }

func newEnv(t testing.TB) env {
	t.Helper()
	return env{replaytest.NewEnv(t)}
}

// handler is auth's handler over app, as functions/auth's main builds it.
func handler(app *lambdaapp.App) authevents.EventHandler {
	return authevents.Handler(app, app.Lambda())
}

func (e env) app(t testing.TB, fn lambdaapp.Function, c *mock.Clock) *lambdaapp.App {
	t.Helper()
	a, err := lambdaapp.New(context.Background(), replay.Config(fn, "latchkey"), lambdaapp.Deps{
		Store: e.Store, Keys: e.Keys, Secrets: e.Secrets, Now: c.Now,
	})
	if err != nil {
		t.Fatalf("init %s: %v", fn, err)
	}
	return a
}

func do(t *testing.T, h http.Handler, method, path, credential, body string) (int, map[string]any) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if credential != "" {
		req.Header.Set("Authorization", "Bearer "+credential)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var m map[string]any
	json.Unmarshal(rec.Body.Bytes(), &m)
	return rec.Code, m
}

func TestConfigFromEnv(t *testing.T) {
	full := map[string]string{
		lambdaapp.EnvTableName: "latchkey", lambdaapp.EnvIssuer: "https://auth.example.com",
		lambdaapp.EnvAdminKeySecret: "arn:a", lambdaapp.EnvCursorKeySecret: "arn:c", lambdaapp.EnvSigningKeySecret: "arn:s",
	}
	t.Run("OK", func(t *testing.T) {
		cfg, err := lambdaapp.ConfigFromEnv(lambdaapp.Auth, func(k string) string { return full[k] })
		if err != nil {
			t.Fatal(err)
		}
		if cfg.SigningKeySecret != "arn:s" || cfg.TableName != "latchkey" {
			t.Fatalf("got %+v", cfg)
		}
		// Only auth reads the signing secret, even when it is set.
		cfg, err = lambdaapp.ConfigFromEnv(lambdaapp.Users, func(k string) string { return full[k] })
		if err != nil {
			t.Fatal(err)
		}
		if cfg.SigningKeySecret != "" || cfg.AdminKeySecret != "" {
			t.Fatalf("users got the signing secret %q or the admin key secret %q", cfg.SigningKeySecret, cfg.AdminKeySecret)
		}
		// Nor does it need them.
		cfg, err = lambdaapp.ConfigFromEnv(lambdaapp.Users, func(k string) string {
			if k == lambdaapp.EnvSigningKeySecret || k == lambdaapp.EnvAdminKeySecret {
				return ""
			}
			return full[k]
		})
		if err != nil {
			t.Fatalf("users without the signing and admin key secrets: %v", err)
		}
	})
	t.Run("InlineRevocation", func(t *testing.T) {
		// Tokens carry the claim unless it is false; anything but true or
		// false fails auth's init, naming it. The others sign nothing and
		// do not read it.
		for in, want := range map[string]string{"": "on", "true": "on", "false": "off", "yes": "error", "TRUE": "error", "0": "error", " false": "error"} {
			cfg, err := lambdaapp.ConfigFromEnv(lambdaapp.Auth, func(k string) string {
				if k == lambdaapp.EnvInlineRevocation {
					return in
				}
				return full[k]
			})
			got := map[bool]string{false: "on", true: "off"}[cfg.NoInlineRevocation]
			if err != nil {
				got = "error"
				if !strings.Contains(err.Error(), "INLINE_REVOCATION") {
					t.Errorf("INLINE_REVOCATION=%q: %v, want an error naming INLINE_REVOCATION", in, err)
				}
			}
			if got != want {
				t.Errorf("auth INLINE_REVOCATION=%q: got %s (%v), want %s", in, got, err, want)
			}
			if _, err := lambdaapp.ConfigFromEnv(lambdaapp.Users, func(k string) string {
				if k == lambdaapp.EnvInlineRevocation {
					return in
				}
				return full[k]
			}); err != nil {
				t.Errorf("users INLINE_REVOCATION=%q: %v, want it ignored", in, err)
			}
		}
	})
	t.Run("IssuerOptional", func(t *testing.T) {
		// The template sets none: the functions read the recorded one.
		cfg, err := lambdaapp.ConfigFromEnv(lambdaapp.Auth, func(k string) string {
			if k == lambdaapp.EnvIssuer {
				return ""
			}
			return full[k]
		})
		if err != nil || cfg.Issuer != "" {
			t.Fatalf("without ISSUER: got %+v, %v", cfg, err)
		}
	})
	t.Run("ErrIssuerNotABaseURL", func(t *testing.T) {
		_, err := lambdaapp.ConfigFromEnv(lambdaapp.Users, func(k string) string {
			if k == lambdaapp.EnvIssuer {
				return "latchkey"
			}
			return full[k]
		})
		if err == nil || !strings.Contains(err.Error(), "ISSUER") {
			t.Fatalf("ISSUER=latchkey: got %v, want an error naming ISSUER", err)
		}
	})
	t.Run("ErrMissing", func(t *testing.T) {
		_, err := lambdaapp.ConfigFromEnv(lambdaapp.Auth, func(k string) string {
			if k == lambdaapp.EnvSigningKeySecret || k == lambdaapp.EnvTableName {
				return ""
			}
			return full[k]
		})
		if err == nil || !strings.Contains(err.Error(), "TABLE_NAME") || !strings.Contains(err.Error(), "SIGNING_KEY_SECRET_ARN") {
			t.Fatalf("got %v, want both missing variables named", err)
		}
		_, err = lambdaapp.ConfigFromEnv(lambdaapp.Auth, func(k string) string {
			if k == lambdaapp.EnvAdminKeySecret {
				return ""
			}
			return full[k]
		})
		if err == nil || !strings.Contains(err.Error(), "ADMIN_KEY_SECRET_ARN") {
			t.Fatalf("auth without the admin key secret: got %v, want it named", err)
		}
	})
	t.Run("SuccessLogEvery", func(t *testing.T) {
		for value, want := range map[string]int{"": 1, "100": 100} {
			cfg, err := lambdaapp.ConfigFromEnv(lambdaapp.Auth, func(k string) string {
				if k == logsample.EnvEvery {
					return value
				}
				return full[k]
			})
			if err != nil || cfg.SuccessLogEvery != want {
				t.Errorf("%s=%q: got %d, %v; want %d", logsample.EnvEvery, value, cfg.SuccessLogEvery, err, want)
			}
		}
		_, err := lambdaapp.ConfigFromEnv(lambdaapp.Users, func(k string) string {
			if k == logsample.EnvEvery {
				return "0"
			}
			return full[k]
		})
		if err == nil || !strings.Contains(err.Error(), logsample.EnvEvery) {
			t.Errorf("%s=0: got %v, want an error naming it", logsample.EnvEvery, err)
		}
	})
	t.Run("StoreTimeout", func(t *testing.T) {
		for _, tc := range []struct {
			value string
			want  time.Duration
		}{{"", dynamostore.DefaultTimeout}, {"750ms", 750 * time.Millisecond}} {
			cfg, err := lambdaapp.ConfigFromEnv(lambdaapp.Users, func(k string) string {
				if k == lambdaapp.EnvStoreTimeout {
					return tc.value
				}
				return full[k]
			})
			if err != nil || cfg.StoreTimeout != tc.want {
				t.Errorf("STORE_TIMEOUT=%q: got %v, %v; want %v", tc.value, cfg.StoreTimeout, err, tc.want)
			}
		}
	})
	t.Run("ErrStoreTimeout", func(t *testing.T) {
		// Named together with a missing variable: one fix for both.
		_, err := lambdaapp.ConfigFromEnv(lambdaapp.Users, func(k string) string {
			switch k {
			case lambdaapp.EnvStoreTimeout:
				return "30s"
			case lambdaapp.EnvTableName:
				return ""
			}
			return full[k]
		})
		if err == nil || !strings.Contains(err.Error(), "STORE_TIMEOUT") || !strings.Contains(err.Error(), "TABLE_NAME") {
			t.Fatalf("got %v, want STORE_TIMEOUT and TABLE_NAME named", err)
		}
	})
	t.Run("TokenCache", func(t *testing.T) {
		cfg, err := lambdaapp.ConfigFromEnv(lambdaapp.Users, func(k string) string {
			if k == token.EnvCacheMaxBytes {
				return "1048576"
			}
			return full[k]
		})
		if err != nil || cfg.TokenCache != (token.CacheOptions{MaxBytes: 1 << 20}) {
			t.Fatalf("got %+v, %v; want MaxBytes 1 MiB", cfg.TokenCache, err)
		}
		_, err = lambdaapp.ConfigFromEnv(lambdaapp.Users, func(k string) string {
			if k == token.EnvCacheMaxEntries {
				return "many"
			}
			return full[k]
		})
		if err == nil || !strings.Contains(err.Error(), token.EnvCacheMaxEntries) {
			t.Fatalf("got %v, want an error naming %s", err, token.EnvCacheMaxEntries)
		}
	})
	t.Run("ErrUnknownFunction", func(t *testing.T) {
		if _, err := lambdaapp.ConfigFromEnv("billing", func(k string) string { return full[k] }); err == nil {
			t.Fatal("got nil error")
		}
	})
}

// TestApp_SigningKeyRotation: after the signing secret is rotated, auth
// signs with the new key once its refresh is due, tokens signed with the
// old key stay valid, and the users function, which never reads the
// secret, accepts the new tokens at once by reloading the published keys
// on the unknown kid.
func TestApp_SigningKeyRotation(t *testing.T) {
	e := newEnv(t)
	c := mock.NewClock(time.Now())
	auth := e.app(t, lambdaapp.Auth, c)
	// The users function's clock stays a second short of its periodic
	// refresh, so only the unknown kid can make it reload the keys; it may
	// not stand still, or the new token, issued by auth after its clock
	// moved on, would be from further in the future than token.ClockSkew.
	usersClock := mock.NewClock(c.Now())
	users := e.app(t, lambdaapp.Users, usersClock)
	oldToken := replay.Token()
	if code, _ := do(t, users, "GET", "/v1/users/"+replay.UserID, oldToken, ""); code != http.StatusOK {
		t.Fatalf("old token before rotation: got %d, want 200", code)
	}

	e.Secrets.Put(replay.SigningARN, replay.SigningSecret+"-rotated")
	c.Advance(secrets.DefaultRefreshInterval)
	usersClock.Advance(secrets.DefaultRefreshInterval - time.Second)
	code, body := do(t, auth, "POST", "/v1/auth/token", replay.KeySecret, `{"scopes":["read:users"]}`)
	if code != http.StatusCreated {
		t.Fatalf("issue after rotation: got %d, want 201: %v", code, body)
	}
	newToken, _ := body["access_token"].(string)
	if newToken == "" || strings.Split(newToken, ".")[0] == strings.Split(oldToken, ".")[0] {
		t.Fatal("the token after rotation has the old key's header")
	}
	_, jwks := do(t, auth, "GET", "/v1/auth/jwks", "", "")
	if keys, _ := jwks["keys"].([]any); len(keys) != 2 {
		t.Fatalf("JWKS after rotation: got %d keys, want the new and the previous", len(keys))
	}
	if code, _ := do(t, users, "GET", "/v1/users/"+replay.UserID, newToken, ""); code != http.StatusOK {
		t.Fatalf("users with the new token: got %d, want 200", code)
	}
	if code, _ := do(t, users, "GET", "/v1/users/"+replay.UserID, oldToken, ""); code != http.StatusOK {
		t.Fatalf("users with the old token: got %d, want 200", code)
	}
	if code, body := do(t, auth, "GET", "/v1/auth/verify", oldToken, ""); code != http.StatusOK || body["valid"] != true {
		t.Fatalf("verify the old token: got %d %v, want valid", code, body)
	}
}

// TestApp_RetiredKeyRefusedFromCache: a token whose signature both
// functions remember stops working in each once its key is retired (a
// second rotation drops it from the key set), as it would with no cache.
func TestApp_RetiredKeyRefusedFromCache(t *testing.T) {
	e := newEnv(t)
	c := mock.NewClock(time.Now())
	auth := e.app(t, lambdaapp.Auth, c)
	users := e.app(t, lambdaapp.Users, c)
	oldToken := replay.Token()
	if code, body := do(t, auth, "GET", "/v1/auth/verify", oldToken, ""); code != http.StatusOK || body["valid"] != true {
		t.Fatalf("verify before rotation: got %d %v, want valid", code, body)
	}
	if code, _ := do(t, users, "GET", "/v1/users/"+replay.UserID, oldToken, ""); code != http.StatusOK {
		t.Fatalf("users before rotation: got %d, want 200", code)
	}
	for i, v := range []string{"-rotated", "-rotated-again"} {
		e.Secrets.Put(replay.SigningARN, replay.SigningSecret+v)
		c.Advance(secrets.DefaultRefreshInterval)
		// A request to auth applies the rotation and publishes the keys.
		if code, _ := do(t, auth, "GET", "/v1/auth/jwks", "", ""); code != http.StatusOK {
			t.Fatalf("rotation %d: jwks got %d", i+1, code)
		}
	}
	if code, body := do(t, auth, "GET", "/v1/auth/verify", oldToken, ""); code != http.StatusOK || body["valid"] != false || body["reason"] != account.ReasonInvalid {
		t.Errorf("verify the retired key's token: got %d %v, want valid false, reason invalid", code, body)
	}
	if code, _ := do(t, users, "GET", "/v1/users/"+replay.UserID, oldToken, ""); code != http.StatusUnauthorized {
		t.Errorf("users with the retired key's token: got %d, want 401", code)
	}
}

// TestApp_AdminKeyRotation: only auth reads the admin key secret and
// writes the bootstrap key. A new admin key works in every function once
// auth's refresh is due and it serves a request, and the old one stops
// working; the users function never reads the secret.
func TestApp_AdminKeyRotation(t *testing.T) {
	e := newEnv(t)
	c := mock.NewClock(time.Now())
	auth := e.app(t, lambdaapp.Auth, c)
	users := e.app(t, lambdaapp.Users, c)
	if code, _ := do(t, users, "GET", "/v1/users", replay.AdminSecret, ""); code != http.StatusOK {
		t.Fatalf("admin key: got %d, want 200", code)
	}
	rotated := replay.AdminSecret + "-rotated"
	e.Secrets.Put(replay.AdminARN, rotated)
	c.Advance(secrets.DefaultRefreshInterval)
	if code, _ := do(t, users, "GET", "/v1/users", rotated, ""); code != http.StatusUnauthorized {
		t.Fatalf("new admin key before auth applied it: got %d, want 401", code)
	}
	if code, _ := do(t, auth, "GET", "/v1/auth/jwks", "", ""); code != http.StatusOK {
		t.Fatalf("auth: got %d, want 200", code)
	}
	if code, _ := do(t, users, "GET", "/v1/users", rotated, ""); code != http.StatusOK {
		t.Fatalf("new admin key after auth's refresh: got %d, want 200", code)
	}
	if code, _ := do(t, users, "GET", "/v1/users", replay.AdminSecret, ""); code != http.StatusUnauthorized {
		t.Fatalf("old admin key after auth's refresh: got %d, want 401", code)
	}
}

// TestApp_ProbeKeyRotation (issue 34): auth makes the probe key from its
// secret at its start, as it makes the admin key: the key authenticates in
// every function and holds no scope of theirs (403 insufficient_scope). A
// new probe secret works once auth's refresh is due and it serves a
// request, and the old key is retired (401); the admin key is untouched.
func TestApp_ProbeKeyRotation(t *testing.T) {
	e := newEnv(t)
	c := mock.NewClock(time.Now())
	auth := e.app(t, lambdaapp.Auth, c)
	users := e.app(t, lambdaapp.Users, c)
	if code, body := do(t, users, "GET", "/v1/users", replay.ProbeSecret, ""); code != http.StatusForbidden || body["code"] != string(account.CodeInsufficientScope) {
		t.Fatalf("probe key: got %d %v, want 403 insufficient_scope", code, body["code"])
	}
	rotated := replay.ProbeSecret + "-rotated"
	e.Secrets.Put(replay.ProbeARN, rotated)
	c.Advance(secrets.DefaultRefreshInterval)
	if code, _ := do(t, auth, "GET", "/v1/auth/jwks", "", ""); code != http.StatusOK {
		t.Fatalf("auth: got %d, want 200", code)
	}
	if code, body := do(t, users, "GET", "/v1/users", rotated, ""); code != http.StatusForbidden || body["code"] != string(account.CodeInsufficientScope) {
		t.Fatalf("new probe key after auth's refresh: got %d %v, want 403 insufficient_scope", code, body["code"])
	}
	if code, _ := do(t, users, "GET", "/v1/users", replay.ProbeSecret, ""); code != http.StatusUnauthorized {
		t.Fatalf("old probe key after auth's refresh: got %d, want 401", code)
	}
	if code, _ := do(t, users, "GET", "/v1/users", replay.AdminSecret, ""); code != http.StatusOK {
		t.Fatalf("admin key after the probe key's rotation: got %d, want 200", code)
	}
}

// TestApp_OnlyAuthReadsTheAdminKey: organizations and users start, serve
// and refresh without the admin key secret, and cannot be made to bootstrap.
func TestApp_OnlyAuthReadsTheAdminKey(t *testing.T) {
	for _, fn := range []lambdaapp.Function{lambdaapp.Organizations, lambdaapp.Users} {
		t.Run(string(fn), func(t *testing.T) {
			e := newEnv(t)
			c := mock.NewClock(time.Now())
			app := e.app(t, fn, c)
			c.Advance(secrets.DefaultRefreshInterval)
			do(t, app, "GET", "/v1/"+string(fn), replay.KeySecret, "")
			if e.Secrets.Read()[replay.AdminARN] {
				t.Errorf("%s read the admin key secret", fn)
			}
			if err := app.Bootstrap(context.Background()); err == nil {
				t.Errorf("%s: Bootstrap: got nil error, want a refusal", fn)
			}
			// Their handler takes API Gateway requests alone, so Lambda
			// decodes a bootstrap invocation into an empty request.
			var req events.APIGatewayV2HTTPRequest
			if err := json.Unmarshal([]byte(`{"action":"bootstrap"}`), &req); err != nil {
				t.Fatal(err)
			}
			var res any
			res, err := app.Lambda()(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := res.(authevents.BootstrapResult); ok {
				t.Errorf("%s answered a bootstrap invocation: %v", fn, res)
			}
			if e.Secrets.Read()[replay.AdminARN] {
				t.Errorf("%s read the admin key secret", fn)
			}
		})
	}
}

// TestApp_Bootstrap: invoked with {"action":"bootstrap"}, auth reads the
// admin key secret afresh, even with a cached value well within the
// refresh interval, so that a rotated admin key works in every function at
// once.
func TestApp_Bootstrap(t *testing.T) {
	e := newEnv(t)
	c := mock.NewClock(time.Now())
	auth := e.app(t, lambdaapp.Auth, c)
	users := e.app(t, lambdaapp.Users, c)
	rotated := replay.AdminSecret + "-rotated"
	e.Secrets.Put(replay.AdminARN, rotated)
	res, err := handler(auth)(context.Background(), json.RawMessage(`{"action":"bootstrap"}`))
	if err != nil {
		t.Fatalf("Invoke: %v", err)
	}
	if res != (authevents.BootstrapResult{Bootstrapped: true}) {
		t.Fatalf("Invoke: got %#v", res)
	}
	if code, _ := do(t, users, "GET", "/v1/users", rotated, ""); code != http.StatusOK {
		t.Fatalf("new admin key after the bootstrap: got %d, want 200", code)
	}
	if code, _ := do(t, users, "GET", "/v1/users", replay.AdminSecret, ""); code != http.StatusUnauthorized {
		t.Fatalf("old admin key after the bootstrap: got %d, want 401", code)
	}
	// An API Gateway event still reaches the router through Invoke.
	ev, err := replay.LoadEvent("../../events/auth-jwks.json")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	res, err = handler(auth)(context.Background(), raw)
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := res.(events.APIGatewayV2HTTPResponse); !ok || r.StatusCode != http.StatusOK {
		t.Fatalf("JWKS event through Invoke: got %#v, want a 200 response", res)
	}
}

// TestApp_CustomResource: auth answers each CloudFormation custom resource
// request with one PUT of the response document to the request's
// pre-signed URL, with no Content-Type (a pre-signed S3 URL is signed
// without one): SUCCESS after a bootstrap for Create and Update, SUCCESS
// without one for Delete, and FAILED with the reason when the bootstrap
// fails.
func TestApp_CustomResource(t *testing.T) {
	type put struct {
		header http.Header
		body   cfn.Response
	}
	puts := make(chan put, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var p put
		p.header = r.Header.Clone()
		if r.Method != http.MethodPut {
			t.Errorf("response sent with %s, want PUT", r.Method)
		}
		if err := json.NewDecoder(r.Body).Decode(&p.body); err != nil {
			t.Errorf("response body: %v", err)
		}
		puts <- p
	}))
	defer srv.Close()
	event := func(requestType cfn.RequestType, physicalID string) json.RawMessage {
		b, err := json.Marshal(cfn.Event{
			RequestType: requestType, RequestID: "4b5a3c2d-" + string(requestType), ResponseURL: srv.URL + "/cloudformation-custom-resource-response?X-Amz-Signature=x",
			ResourceType: "Custom::Bootstrap", LogicalResourceID: "Bootstrap", PhysicalResourceID: physicalID,
			StackID:            "arn:aws:cloudformation:us-east-1:123456789012:stack/latchkey/1f0c5a10-0000-0000-0000-000000000000",
			ResourceProperties: map[string]any{"ServiceToken": "arn:aws:lambda:us-east-1:123456789012:function:latchkey-AuthFunction"},
		})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	send := func(t *testing.T, app *lambdaapp.App, ev json.RawMessage) cfn.Response {
		t.Helper()
		if _, err := handler(app)(context.Background(), ev); err != nil {
			t.Fatalf("Invoke: %v", err)
		}
		select {
		case p := <-puts:
			if ct := p.header.Get("Content-Type"); ct != "" {
				t.Errorf("response sent with Content-Type %q", ct)
			}
			return p.body
		default:
			t.Fatal("no response was PUT")
			return cfn.Response{}
		}
	}

	e := newEnv(t)
	c := mock.NewClock(time.Now())
	auth := e.app(t, lambdaapp.Auth, c)
	users := e.app(t, lambdaapp.Users, c)
	rotated := replay.AdminSecret + "-rotated"
	e.Secrets.Put(replay.AdminARN, rotated)
	res := send(t, auth, event(cfn.RequestCreate, ""))
	if res.Status != cfn.StatusSuccess || res.RequestID != "4b5a3c2d-Create" || res.LogicalResourceID != "Bootstrap" || res.PhysicalResourceID == "" || !strings.HasSuffix(res.StackID, "/latchkey/1f0c5a10-0000-0000-0000-000000000000") {
		t.Fatalf("Create: got %+v", res)
	}
	if code, _ := do(t, users, "GET", "/v1/users", rotated, ""); code != http.StatusOK {
		t.Fatalf("admin key after Create: got %d, want 200", code)
	}
	physical := res.PhysicalResourceID
	if res := send(t, auth, event(cfn.RequestUpdate, physical)); res.Status != cfn.StatusSuccess || res.PhysicalResourceID != physical {
		t.Fatalf("Update: got %+v, want SUCCESS with the same physical id", res)
	}
	if res := send(t, auth, event(cfn.RequestDelete, physical)); res.Status != cfn.StatusSuccess || res.PhysicalResourceID != physical {
		t.Fatalf("Delete: got %+v", res)
	}
	if code, _ := do(t, users, "GET", "/v1/users", rotated, ""); code != http.StatusOK {
		t.Fatalf("admin key after Delete: got %d, want 200 (the table outlives the stack)", code)
	}

	t.Run("Failed", func(t *testing.T) {
		// Secrets Manager fails from now on. The instance holds the
		// secrets in its cache, but a bootstrap reads afresh, fails, and
		// says so to CloudFormation, which fails the deploy; the instance
		// keeps serving with what it has.
		sm := &flakySecrets{Secrets: e.Secrets}
		app, err := lambdaapp.New(context.Background(), replay.Config(lambdaapp.Auth, "latchkey"), lambdaapp.Deps{
			Store: e.Store, Keys: e.Keys, Secrets: sm, Now: c.Now, Logger: slog.New(slog.DiscardHandler),
		})
		if err != nil {
			t.Fatal(err)
		}
		sm.mu.Lock()
		sm.down = true
		sm.mu.Unlock()
		res := send(t, app, event(cfn.RequestUpdate, physical))
		if res.Status != cfn.StatusFailed || res.PhysicalResourceID != physical || !strings.Contains(res.Reason, "connection refused") {
			t.Fatalf("Update with Secrets Manager down: got %+v, want FAILED with the cause", res)
		}
		for _, secret := range []string{replay.AdminSecret, rotated, replay.SigningSecret, replay.CursorSecret} {
			if strings.Contains(res.Reason, secret) {
				t.Fatalf("the reason holds a secret: %s", res.Reason)
			}
		}
		if code, _ := do(t, app, "GET", "/v1/api-keys", rotated, ""); code != http.StatusOK {
			t.Fatalf("after the failed bootstrap: got %d, want 200", code)
		}
	})
}

// TestApp_StaleInstanceDuringRotation: an auth instance that cold-starts
// with secrets read just before a rotation neither publishes the old keys
// over the new ones nor brings the old admin key back, so a function that
// starts afterwards accepts the new token and admin key and refuses the old
// admin key.
func TestApp_StaleInstanceDuringRotation(t *testing.T) {
	e := newEnv(t)
	c := mock.NewClock(time.Now())
	e.app(t, lambdaapp.Auth, c) // before the rotation
	rotatedAdmin := replay.AdminSecret + "-rotated"
	e.Secrets.Put(replay.SigningARN, replay.SigningSecret+"-rotated")
	e.Secrets.Put(replay.AdminARN, rotatedAdmin)
	fresh := e.app(t, lambdaapp.Auth, c)
	_, err := lambdaapp.New(context.Background(), replay.Config(lambdaapp.Auth, "latchkey"), lambdaapp.Deps{
		Store: e.Store, Keys: e.Keys, Secrets: replay.NewSecrets(), Now: c.Now, // holds only the old versions
	})
	if err != nil {
		t.Fatalf("init the stale auth instance: %v", err)
	}
	code, body := do(t, fresh, "POST", "/v1/auth/token", replay.KeySecret, `{"scopes":["read:users"]}`)
	if code != http.StatusCreated {
		t.Fatalf("issue: got %d, want 201: %v", code, body)
	}
	newToken, _ := body["access_token"].(string)
	users := e.app(t, lambdaapp.Users, c)
	if code, _ := do(t, users, "GET", "/v1/users/"+replay.UserID, newToken, ""); code != http.StatusOK {
		t.Errorf("users with the new token: got %d, want 200", code)
	}
	if code, _ := do(t, users, "GET", "/v1/users", rotatedAdmin, ""); code != http.StatusOK {
		t.Errorf("users with the new admin key: got %d, want 200", code)
	}
	if code, _ := do(t, users, "GET", "/v1/users", replay.AdminSecret, ""); code != http.StatusUnauthorized {
		t.Errorf("users with the old admin key: got %d, want 401", code)
	}
}

// TestApp_NoPublishedKeys: a function that starts before auth ever ran
// refuses tokens (none can exist) and starts accepting them as soon as
// auth publishes its keys.
func TestApp_NoPublishedKeys(t *testing.T) {
	e := newEnv(t)
	c := mock.NewClock(time.Now())
	users := e.app(t, lambdaapp.Users, c)
	if code, _ := do(t, users, "GET", "/v1/users/"+replay.UserID, replay.Token(), ""); code != http.StatusUnauthorized {
		t.Fatalf("token before auth started: got %d, want 401", code)
	}
	e.app(t, lambdaapp.Auth, c) // publishes at init
	c.Advance(15 * time.Second) // past the unknown-kid reload interval
	if code, _ := do(t, users, "GET", "/v1/users/"+replay.UserID, replay.Token(), ""); code != http.StatusOK {
		t.Fatalf("token after auth started: got %d, want 200", code)
	}
}

// flakySecrets fails every read once down is set, like Secrets Manager in
// an outage.
type flakySecrets struct {
	*replay.Secrets
	mu   sync.Mutex
	down bool
}

func (f *flakySecrets) GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, opts ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	f.mu.Lock()
	down := f.down
	f.mu.Unlock()
	if down {
		return nil, errors.New("connect: connection refused")
	}
	return f.Secrets.GetSecretValue(ctx, in, opts...)
}

// TestApp_RefreshFailure: when Secrets Manager fails at a refresh, the
// function keeps serving with the keys it has and logs the failure once,
// with the request id of the request that hit it.
func TestApp_RefreshFailure(t *testing.T) {
	e := newEnv(t)
	c := mock.NewClock(time.Now())
	sm := &flakySecrets{Secrets: e.Secrets}
	if err := replay.PublishKeys(context.Background(), e.Keys); err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	var mu sync.Mutex
	logger := slog.New(slog.NewJSONHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return logs.Write(p)
	}), nil))
	app, err := lambdaapp.New(context.Background(), replay.Config(lambdaapp.Users, "latchkey"), lambdaapp.Deps{
		Store: e.Store, Keys: e.Keys, Secrets: sm, Now: c.Now, Logger: logger,
	})
	if err != nil {
		t.Fatal(err)
	}
	sm.mu.Lock()
	sm.down = true
	sm.mu.Unlock()
	c.Advance(secrets.DefaultRefreshInterval)
	ev, err := replay.LoadEvent("../../events/users-get.json")
	if err != nil {
		t.Fatal(err)
	}
	res, err := app.Lambda()(context.Background(), ev)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("during the outage: got %d %v, want 200", res.StatusCode, err)
	}
	mu.Lock()
	defer mu.Unlock()
	var found bool
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		if strings.Contains(line, "secret refresh failed") {
			found = true
			if !strings.Contains(line, `"request_id":"`+ev.RequestContext.RequestID+`"`) {
				t.Errorf("refresh failure logged without the request id: %s", line)
			}
		}
	}
	if !found {
		t.Fatalf("no refresh failure logged:\n%s", logs.String())
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// downKeys fails every read once down is set, like a table that cannot be
// reached.
type downKeys struct {
	*replay.MemoryKeys
	mu   sync.Mutex
	down bool
}

func (d *downKeys) Published(ctx context.Context) ([]byte, string, error) {
	d.mu.Lock()
	down := d.down
	d.mu.Unlock()
	if down {
		return nil, "", errors.New("connect: connection refused")
	}
	return d.MemoryKeys.Published(ctx)
}

// TestApp_UnknownKidLogsRequestID: a token signed by a key the verifying
// function does not know makes it reload the published keys on the request
// path; every line that request logs, the reload's included, carries API
// Gateway's request id.
func TestApp_UnknownKidLogsRequestID(t *testing.T) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	forged, err := token.NewSigner(priv, replay.Issuer).Sign(account.TokenClaims{
		ID: replay.TokenID, KeyID: replay.KeyID, Audience: replay.Issuer, Scopes: []string{"*:*"},
		IssuedAt: time.Now().Add(-time.Minute), ExpiresAt: time.Now().Add(time.Hour),
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		published bool // whether auth has published its keys
		down      bool // whether the reload fails
		wantLine  string
	}{
		{"NoKeysPublished", false, false, "no public keys published yet"},
		{"ReloadFails", true, true, "public key reload for an unknown kid failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			keys := &downKeys{MemoryKeys: e.Keys}
			if tc.published {
				if err := replay.PublishKeys(context.Background(), keys); err != nil {
					t.Fatal(err)
				}
			}
			logs := &httpapitest.SyncBuffer{}
			for _, fn := range []lambdaapp.Function{lambdaapp.Organizations, lambdaapp.Users} {
				keys.mu.Lock()
				keys.down = false // the keys are read at init
				keys.mu.Unlock()
				app, err := lambdaapp.New(context.Background(), replay.Config(fn, "latchkey"), lambdaapp.Deps{
					Store: e.Store, Keys: keys, Secrets: e.Secrets, Logger: slog.New(slog.NewJSONHandler(logs, nil)),
				})
				if err != nil {
					t.Fatalf("init %s: %v", fn, err)
				}
				keys.mu.Lock()
				keys.down = tc.down
				keys.mu.Unlock()
				logs.Reset() // init lines belong to no request
				ev, err := replay.LoadEvent("../../events/" + string(fn) + "-get.json")
				if err != nil {
					t.Fatal(err)
				}
				ev.Headers["authorization"] = "Bearer " + forged
				res, err := app.Lambda()(context.Background(), ev)
				if err != nil || res.StatusCode != http.StatusUnauthorized {
					t.Fatalf("%s: got %d %v, want 401", fn, res.StatusCode, err)
				}
				lines := logs.Lines()
				var found bool
				for _, line := range lines {
					var l struct {
						Msg       string `json:"msg"`
						RequestID string `json:"request_id"`
					}
					if err := json.Unmarshal([]byte(line), &l); err != nil {
						t.Fatalf("%s: log line is not JSON: %s", fn, line)
					}
					found = found || strings.Contains(l.Msg, tc.wantLine)
					if got, want := l.RequestID, ev.RequestContext.RequestID; got != want {
						t.Errorf("%s: request_id: got %q, want %q in %s", fn, got, want, line)
					}
				}
				if !found {
					t.Errorf("%s: no %q line; the logs:\n%s", fn, tc.wantLine, strings.Join(lines, "\n"))
				}
			}
		})
	}
}

// TestApp_RecordedIssuer: deployed as the template deploys them, without
// ISSUER, the functions take the issuer the IssuerConfig custom resource
// records in the table. Before it is recorded auth publishes its keys but
// issues no token (503) and serves no metadata (503); once it is, the auth
// instance that recorded it issues tokens with it at once, and a users
// instance that was already warm accepts them as soon as it looks again.
func TestApp_RecordedIssuer(t *testing.T) {
	e := newEnv(t)
	c := mock.NewClock(time.Now())
	newApp := func(fn lambdaapp.Function) *lambdaapp.App {
		t.Helper()
		cfg := replay.Config(fn, "latchkey")
		cfg.Issuer = "" // as the template sets it
		a, err := lambdaapp.New(context.Background(), cfg, lambdaapp.Deps{Store: e.Store, Keys: e.Keys, Secrets: e.Secrets, Now: c.Now})
		if err != nil {
			t.Fatalf("init %s: %v", fn, err)
		}
		return a
	}
	auth := newApp(lambdaapp.Auth)
	users := newApp(lambdaapp.Users)
	if jwks, _, err := e.Keys.Published(context.Background()); err != nil || jwks == nil {
		t.Fatalf("auth did not publish its keys before the issuer was recorded: %v", err)
	}
	if code, body := do(t, auth, "POST", "/v1/auth/token", replay.KeySecret, `{"scopes":["read:users"]}`); code != http.StatusServiceUnavailable {
		t.Fatalf("issue before the issuer is recorded: got %d %v, want 503", code, body)
	}
	if code, _ := do(t, auth, "GET", "/.well-known/oauth-authorization-server", "", ""); code != http.StatusServiceUnavailable {
		t.Fatalf("metadata before the issuer is recorded: got %d, want 503", code)
	}

	const issuer = "https://a1b2c3d4e5.execute-api.us-east-1.amazonaws.com"
	if err := auth.RecordIssuer(context.Background(), "latchkey"); err == nil {
		t.Fatal("RecordIssuer(latchkey): got nil error, want the issuer refused")
	}
	if err := users.RecordIssuer(context.Background(), issuer); err == nil {
		t.Fatal("users.RecordIssuer: got nil error; only auth writes the config item")
	}
	if err := auth.RecordIssuer(context.Background(), issuer); err != nil {
		t.Fatalf("RecordIssuer: %v", err)
	}
	_, meta := do(t, auth, "GET", "/.well-known/openid-configuration", "", "")
	if meta["issuer"] != issuer {
		t.Fatalf("metadata issuer: got %v, want %s", meta["issuer"], issuer)
	}
	code, body := do(t, auth, "POST", "/v1/auth/token", replay.KeySecret, `{"scopes":["read:users"]}`)
	if code != http.StatusCreated || body["audience"] != issuer {
		t.Fatalf("issue: got %d %v, want 201 with the issuer as audience", code, body)
	}
	tok, _ := body["access_token"].(string)
	c.Advance(token.UnknownKidReloadInterval) // the users instance looks again this often until it has an issuer
	if code, _ := do(t, users, "GET", "/v1/users/"+replay.UserID, tok, ""); code != http.StatusOK {
		t.Fatalf("users with the token: got %d, want 200", code)
	}
}

// concurrencyProbe is a secrets.Client over the fixture's secrets that
// holds each call until want calls are in flight together (or 500 ms have
// passed) and records the most it saw at once.
type concurrencyProbe struct {
	inner    *replay.Secrets
	want     int
	mu       sync.Mutex
	cond     *sync.Cond
	inFlight int
	most     int
	released bool
}

func (p *concurrencyProbe) GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, opts ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	p.mu.Lock()
	p.inFlight++
	p.most = max(p.most, p.inFlight)
	if p.inFlight >= p.want {
		p.released = true
		p.cond.Broadcast()
	}
	// Generous, for a loaded machine that starts the other reads late:
	// reads made at once meet here long before it; reads made one after
	// another each wait it out, and the test fails.
	deadline := time.Now().Add(10 * time.Second)
	for !p.released && time.Now().Before(deadline) {
		go func() { time.Sleep(10 * time.Millisecond); p.cond.Broadcast() }()
		p.cond.Wait()
	}
	p.inFlight--
	p.mu.Unlock()
	return p.inner.GetSecretValue(ctx, in, opts...)
}

// TestApp_ColdStartReadsSecretsAtOnce: a cold start reads its secrets
// concurrently: auth's five reads (cursor key, admin key, probe key,
// signing key current and previous) are in flight together, so its init
// waits for one round trip to Secrets Manager, not five. The others read
// one secret.
func TestApp_ColdStartReadsSecretsAtOnce(t *testing.T) {
	for fn, want := range map[lambdaapp.Function]int{lambdaapp.Auth: 5, lambdaapp.Organizations: 1, lambdaapp.Users: 1} {
		t.Run(string(fn), func(t *testing.T) {
			e := newEnv(t)
			if fn != lambdaapp.Auth {
				if err := replay.PublishKeys(context.Background(), e.Keys); err != nil {
					t.Fatal(err)
				}
			}
			probe := &concurrencyProbe{inner: e.Secrets, want: want}
			probe.cond = sync.NewCond(&probe.mu)
			if _, err := lambdaapp.New(context.Background(), replay.Config(fn, "latchkey"), lambdaapp.Deps{
				Store: e.Store, Keys: e.Keys, Secrets: probe,
			}); err != nil {
				t.Fatal(err)
			}
			if probe.most != want {
				t.Errorf("at most %d secret reads in flight at once, want %d", probe.most, want)
			}
		})
	}
}

// TestAuthorizerConfigFromEnv_TokenCache: the authorizer reads the token
// cache's bounds as the other functions do.
func TestAuthorizerConfigFromEnv_TokenCache(t *testing.T) {
	env := map[string]string{lambdaapp.EnvTableName: "latchkey", token.EnvCacheMaxEntries: "100"}
	cfg, err := authorizerapp.ConfigFromEnv(func(k string) string { return env[k] })
	if err != nil || cfg.TokenCache != (token.CacheOptions{MaxEntries: 100}) {
		t.Fatalf("got %+v, %v; want MaxEntries 100", cfg.TokenCache, err)
	}
	env[token.EnvCacheMaxEntries] = "0"
	if _, err := authorizerapp.ConfigFromEnv(func(k string) string { return env[k] }); err == nil || !strings.Contains(err.Error(), token.EnvCacheMaxEntries) {
		t.Fatalf("got %v, want an error naming %s", err, token.EnvCacheMaxEntries)
	}
}

// TestApp_SigningKeyRotation_TokensLiveOut: a rotation of the signing key
// ends no outstanding token. A token signed with the old key just before
// the rotation, for the longest lifetime there is, verifies in auth and is
// accepted by users through every refresh of the keys until it expires;
// then it is refused as expired, not as signed by an unknown key. The key
// set holds the old public key (the secret's AWSPREVIOUS version) as long
// as that, until the next rotation: rotate at most once per
// account.MaxTokenLifetime (docs/security.md).
func TestApp_SigningKeyRotation_TokensLiveOut(t *testing.T) {
	e := newEnv(t)
	c := mock.NewClock(time.Now())
	auth := e.app(t, lambdaapp.Auth, c)
	users := e.app(t, lambdaapp.Users, c)
	code, body := do(t, auth, "POST", "/v1/auth/token", replay.KeySecret, `{"scopes":["read:users"],"expires_in":"24h"}`)
	if code != http.StatusCreated {
		t.Fatalf("issue: got %d %v", code, body)
	}
	old, _ := body["access_token"].(string)
	issued := c.Now()

	e.Secrets.Put(replay.SigningARN, replay.SigningSecret+"-rotated")
	for at := secrets.DefaultRefreshInterval; at < account.MaxTokenLifetime; at += time.Hour {
		c.Set(issued.Add(at))
		// Each step is past the refresh interval: both functions read the
		// secret and the published keys again before they answer.
		if code, body := do(t, auth, "GET", "/v1/auth/verify", old, ""); code != http.StatusOK || body["valid"] != true {
			t.Fatalf("%v after the rotation: auth verifies the old key's token as %d %v, want valid", at, code, body)
		}
		if code, _ := do(t, users, "GET", "/v1/users/"+replay.UserID, old, ""); code != http.StatusOK {
			t.Fatalf("%v after the rotation: users answers %d to the old key's token, want 200", at, code)
		}
	}
	if _, jwks := do(t, auth, "GET", "/v1/auth/jwks", "", ""); len(jwks["keys"].([]any)) != 2 {
		t.Fatalf("JWKS before the old token expires: %v, want the new key and the old", jwks)
	}
	c.Set(issued.Add(account.MaxTokenLifetime + token.ClockSkew + time.Second))
	if code, body := do(t, auth, "GET", "/v1/auth/verify", old, ""); code != http.StatusOK || body["valid"] != false || body["reason"] != account.ReasonExpired {
		t.Fatalf("after its expiry: auth verifies the old key's token as %d %v, want expired", code, body)
	}
	if code, _ := do(t, users, "GET", "/v1/users/"+replay.UserID, old, ""); code != http.StatusUnauthorized {
		t.Fatalf("after its expiry: users answers %d, want 401", code)
	}
}

// TestApp_InlineRevocation: the auth function signs the claim irv on its
// tokens by default, and leaves it out with NoInlineRevocation
// (INLINE_REVOCATION=false); either way its token, revoked, verifies as
// revoked.
func TestApp_InlineRevocation(t *testing.T) {
	for _, off := range []bool{false, true} {
		e := newEnv(t)
		cfg := replay.Config(lambdaapp.Auth, "latchkey")
		cfg.NoInlineRevocation = off
		auth, err := lambdaapp.New(context.Background(), cfg, lambdaapp.Deps{Store: e.Store, Keys: e.Keys, Secrets: e.Secrets, Now: mock.NewClock(time.Now()).Now})
		if err != nil {
			t.Fatalf("init auth: %v", err)
		}
		code, body := do(t, auth, "POST", "/v1/auth/token", replay.KeySecret, `{"scopes":["read:users"]}`)
		tok, _ := body["access_token"].(string)
		parts := strings.Split(tok, ".")
		if code != http.StatusCreated || len(parts) != 3 {
			t.Fatalf("NoInlineRevocation %v: token: %d %v", off, code, body)
		}
		raw, err := base64.RawURLEncoding.DecodeString(parts[1])
		if err != nil {
			t.Fatal(err)
		}
		var claims map[string]any
		if err := json.Unmarshal(raw, &claims); err != nil {
			t.Fatal(err)
		}
		if _, irv := claims["irv"]; irv == off {
			t.Errorf("NoInlineRevocation %v: payload %s, irv present %v", off, raw, irv)
		}
		revoke, _ := json.Marshal(map[string]string{"token": tok})
		if code, body := do(t, auth, "POST", "/v1/auth/revoke", replay.KeySecret, string(revoke)); code != http.StatusOK {
			t.Fatalf("NoInlineRevocation %v: revoke: %d %v", off, code, body)
		}
		if code, v := do(t, auth, "GET", "/v1/auth/verify", tok, ""); code != http.StatusOK || v["valid"] != false || v["reason"] != "revoked" {
			t.Fatalf("NoInlineRevocation %v: verify of the revoked token: %d %v", off, code, v)
		}
	}
}

// TestApp_OriginSecret (issue 34): with ORIGIN_SECRET set, as the template
// sets it when the edge is on, each function serves only the requests that
// carry it in X-Origin-Secret (CloudFront adds it), and answers any other
// 403 forbidden as problem+json, before it reads a key or spends a credit;
// its log line never holds what was sent. Without it, nothing changes.
func TestApp_OriginSecret(t *testing.T) {
	const secret = "k3v9QZ2m8TtYwR4pL6nB1xC7dF0gH5jA9sE2uV8yN4qM3rK6"
	t.Run("ConfigFromEnv", func(t *testing.T) {
		env := map[string]string{lambdaapp.EnvTableName: "latchkey", lambdaapp.EnvCursorKeySecret: "arn:c", lambdaapp.EnvOriginSecret: secret}
		cfg, err := lambdaapp.ConfigFromEnv(lambdaapp.Users, func(k string) string { return env[k] })
		if err != nil || cfg.OriginSecret != secret {
			t.Fatalf("got %q, %v; want the secret", cfg.OriginSecret, err)
		}
		env[lambdaapp.EnvOriginSecret] = "short-and-guessable"
		_, err = lambdaapp.ConfigFromEnv(lambdaapp.Users, func(k string) string { return env[k] })
		if err == nil || strings.Contains(err.Error(), "short-and-guessable") {
			t.Fatalf("a short secret: %v, want refused without repeating it", err)
		}
	})
	e := newEnv(t)
	for _, fn := range []lambdaapp.Function{lambdaapp.Auth, lambdaapp.Organizations, lambdaapp.Users, lambdaapp.Verify} {
		t.Run(string(fn), func(t *testing.T) {
			logs := &httpapitest.SyncBuffer{}
			cfg := replay.Config(fn, "latchkey")
			cfg.OriginSecret = secret
			deps := lambdaapp.Deps{Store: e.Store, Keys: e.Keys, Secrets: e.Secrets, Logger: slog.New(slog.NewJSONHandler(logs, nil))}
			if fn == lambdaapp.Verify {
				deps.Secrets = nil
			}
			app, err := lambdaapp.New(context.Background(), cfg, deps)
			if err != nil {
				t.Fatal(err)
			}
			open := cfg
			open.OriginSecret = ""
			withoutEdge, err := lambdaapp.New(context.Background(), open, deps)
			if err != nil {
				t.Fatal(err)
			}
			ev, err := replay.LoadEvent("../../events/auth-verify-no-credential.json")
			if err != nil {
				t.Fatal(err)
			}
			if fn == lambdaapp.Organizations || fn == lambdaapp.Users {
				if ev, err = replay.LoadEvent("../../events/" + string(fn) + "-get.json"); err != nil {
					t.Fatal(err)
				}
				delete(ev.Headers, "authorization")
			}
			// What the function answers without the edge: the reference.
			want, err := withoutEdge.Lambda()(context.Background(), ev)
			if err != nil {
				t.Fatal(err)
			}
			for name, sent := range map[string]string{"Missing": "", "Wrong": secret[:len(secret)-1] + "X", "Prefix": secret[:40]} {
				logs.Reset()
				ev := ev
				ev.Headers = maps.Clone(ev.Headers)
				if sent != "" {
					ev.Headers[strings.ToLower(lambdaapp.OriginSecretHeader)] = sent
				}
				res, err := app.Lambda()(context.Background(), ev)
				if err != nil {
					t.Fatal(err)
				}
				var body map[string]any
				if err := json.Unmarshal([]byte(res.Body), &body); err != nil {
					t.Fatalf("%s: body %q: %v", name, res.Body, err)
				}
				if res.StatusCode != http.StatusForbidden || res.Headers["Content-Type"] != "application/problem+json" || body["code"] != "forbidden" ||
					body["status"] != float64(403) || body["type"] != "https://latchkey.dev/problems/forbidden" || body["request_id"] != ev.RequestContext.RequestID {
					t.Errorf("%s: %d %v %s, want 403 forbidden as problem+json with the request id", name, res.StatusCode, res.Headers, res.Body)
				}
				if !strings.Contains(logs.String(), "request refused: not through the edge") || sent != "" && strings.Contains(logs.String(), sent) {
					t.Errorf("%s: the log says:\n%s", name, logs.String())
				}
			}
			ev.Headers = maps.Clone(ev.Headers)
			ev.Headers[strings.ToLower(lambdaapp.OriginSecretHeader)] = secret
			logs.Reset()
			got, err := app.Lambda()(context.Background(), ev)
			if err != nil {
				t.Fatal(err)
			}
			if got.StatusCode != want.StatusCode || got.StatusCode == http.StatusForbidden {
				t.Errorf("through the edge: %d %s, want %d as without it", got.StatusCode, got.Body, want.StatusCode)
			}
			if strings.Contains(logs.String(), secret) {
				t.Errorf("the secret is in the log:\n%s", logs.String())
			}
		})
	}
}

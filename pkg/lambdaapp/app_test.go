package lambdaapp_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"latchkey/pkg/account"
	"latchkey/pkg/boltstore"
	"latchkey/pkg/httpapi/httpapitest"
	"latchkey/pkg/lambdaapp"
	"latchkey/pkg/lambdaapp/replay"
	"latchkey/pkg/secrets"
	"latchkey/pkg/token"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// env is one store and one Secrets Manager shared by the functions, as in
// a deployment.
type env struct {
	store   *boltstore.Store
	keys    *replay.MemoryKeys
	secrets *replay.Secrets
}

func newEnv(t *testing.T) env {
	t.Helper()
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "latchkey.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := replay.Seed(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	return env{store: s, keys: &replay.MemoryKeys{}, secrets: replay.NewSecrets()}
}

func (e env) app(t *testing.T, fn lambdaapp.Function, c *clock) *lambdaapp.App {
	t.Helper()
	a, err := lambdaapp.New(context.Background(), replay.Config(fn, "latchkey"), lambdaapp.Deps{
		Store: e.store, Keys: e.keys, Secrets: e.secrets, Now: c.Now,
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
		lambdaapp.EnvTableName: "latchkey", lambdaapp.EnvIssuer: "latchkey",
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
		if cfg.SigningKeySecret != "" {
			t.Fatalf("users got the signing secret %q", cfg.SigningKeySecret)
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
	c := &clock{t: time.Now()}
	auth := e.app(t, lambdaapp.Auth, c)
	// The users function's clock stands still: its periodic refresh is not
	// due, so only the unknown kid can make it reload the keys.
	users := e.app(t, lambdaapp.Users, &clock{t: c.Now()})
	oldToken := replay.Token()
	if code, _ := do(t, users, "GET", "/v1/users/"+replay.UserID, oldToken, ""); code != http.StatusOK {
		t.Fatalf("old token before rotation: got %d, want 200", code)
	}

	e.secrets.Put(replay.SigningARN, replay.SigningSecret+"-rotated")
	c.Add(secrets.DefaultRefreshInterval)
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

// TestApp_AdminKeyRotation: a new admin key works once the refresh is due,
// and the old one stops working.
func TestApp_AdminKeyRotation(t *testing.T) {
	e := newEnv(t)
	c := &clock{t: time.Now()}
	users := e.app(t, lambdaapp.Users, c)
	if code, _ := do(t, users, "GET", "/v1/users", replay.AdminSecret, ""); code != http.StatusOK {
		t.Fatalf("admin key: got %d, want 200", code)
	}
	rotated := replay.AdminSecret + "-rotated"
	e.secrets.Put(replay.AdminARN, rotated)
	if code, _ := do(t, users, "GET", "/v1/users", rotated, ""); code != http.StatusUnauthorized {
		t.Fatalf("new admin key before the refresh: got %d, want 401", code)
	}
	c.Add(secrets.DefaultRefreshInterval)
	if code, _ := do(t, users, "GET", "/v1/users", rotated, ""); code != http.StatusOK {
		t.Fatalf("new admin key after the refresh: got %d, want 200", code)
	}
	if code, _ := do(t, users, "GET", "/v1/users", replay.AdminSecret, ""); code != http.StatusUnauthorized {
		t.Fatalf("old admin key after the refresh: got %d, want 401", code)
	}
}

// TestApp_StaleInstanceDuringRotation: an auth instance that cold-starts
// with secrets read just before a rotation neither publishes the old keys
// over the new ones nor brings the old admin key back, so a function that
// starts afterwards accepts the new token and admin key and refuses the old
// admin key.
func TestApp_StaleInstanceDuringRotation(t *testing.T) {
	e := newEnv(t)
	c := &clock{t: time.Now()}
	e.app(t, lambdaapp.Auth, c) // before the rotation
	rotatedAdmin := replay.AdminSecret + "-rotated"
	e.secrets.Put(replay.SigningARN, replay.SigningSecret+"-rotated")
	e.secrets.Put(replay.AdminARN, rotatedAdmin)
	fresh := e.app(t, lambdaapp.Auth, c)
	_, err := lambdaapp.New(context.Background(), replay.Config(lambdaapp.Auth, "latchkey"), lambdaapp.Deps{
		Store: e.store, Keys: e.keys, Secrets: replay.NewSecrets(), Now: c.Now, // holds only the old versions
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
	c := &clock{t: time.Now()}
	users := e.app(t, lambdaapp.Users, c)
	if code, _ := do(t, users, "GET", "/v1/users/"+replay.UserID, replay.Token(), ""); code != http.StatusUnauthorized {
		t.Fatalf("token before auth started: got %d, want 401", code)
	}
	e.app(t, lambdaapp.Auth, c) // publishes at init
	c.Add(15 * time.Second)     // past the unknown-kid reload interval
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
	c := &clock{t: time.Now()}
	sm := &flakySecrets{Secrets: e.secrets}
	if err := replay.PublishKeys(context.Background(), e.keys); err != nil {
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
		Store: e.store, Keys: e.keys, Secrets: sm, Now: c.Now, Logger: logger,
	})
	if err != nil {
		t.Fatal(err)
	}
	sm.mu.Lock()
	sm.down = true
	sm.mu.Unlock()
	c.Add(secrets.DefaultRefreshInterval)
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

func (d *downKeys) PublicKeys(ctx context.Context) ([]byte, error) {
	d.mu.Lock()
	down := d.down
	d.mu.Unlock()
	if down {
		return nil, errors.New("connect: connection refused")
	}
	return d.MemoryKeys.PublicKeys(ctx)
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
		ID: replay.TokenID, KeyID: replay.KeyID, Scopes: []string{"*:*"},
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
			keys := &downKeys{MemoryKeys: e.keys}
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
					Store: e.store, Keys: keys, Secrets: e.secrets, Logger: slog.New(slog.NewJSONHandler(logs, nil)),
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

package lambdaapp_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"latchkey/pkg/authorizer"
	"latchkey/pkg/lambdaapp"
	"latchkey/pkg/lambdaapp/authorizerapp"
	"latchkey/pkg/lambdaapp/replay"
	"latchkey/pkg/mock"
	"latchkey/pkg/secrets"
	"latchkey/pkg/token"
)

// motoClient returns the real SDK client pointed at moto_server, or skips.
func motoClient(t *testing.T) *secretsmanager.Client {
	t.Helper()
	endpoint := os.Getenv("LATCHKEY_TEST_SECRETSMANAGER_ENDPOINT")
	if endpoint == "" {
		t.Skip("LATCHKEY_TEST_SECRETSMANAGER_ENDPOINT is not set; run through scripts/moto.sh (make test does)")
	}
	return secretsmanager.New(secretsmanager.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(endpoint),
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""),
	})
}

func motoSecret(t *testing.T, sm *secretsmanager.Client, value string) string {
	t.Helper()
	b := make([]byte, 6)
	rand.Read(b)
	out, err := sm.CreateSecret(context.Background(), &secretsmanager.CreateSecretInput{
		Name: aws.String("latchkey-rs256-" + hex.EncodeToString(b)), SecretString: aws.String(value),
	})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.ARN)
}

func headerAlg(t *testing.T, tok string) string {
	t.Helper()
	raw, err := base64.RawURLEncoding.DecodeString(strings.Split(tok, ".")[0])
	if err != nil {
		t.Fatal(err)
	}
	var h struct{ Alg string }
	json.Unmarshal(raw, &h)
	return h.Alg
}

// TestApp_RS256 runs the functions with SIGNING_ALG=RS256 over Secrets
// Manager (moto_server, the real SDK) with the signing secret as the
// template creates it, a random string. Auth's start puts a generated RSA
// key into it as a new version and signs RS256 tokens; the JWKS holds that
// key alone (the string, now previous, signed with no RS256 key) and the
// discovery document names RS256; users and the authorizer configured
// RS256 accept the token, and, configured EdDSA, refuse it, as RS256 ones
// refuse the EdDSA fixture token. A rotation to a new PEM keeps the old
// token valid through the previous version.
func TestApp_RS256(t *testing.T) {
	sm := motoClient(t)
	ctx := context.Background()
	e := newEnv(t)
	signingARN := motoSecret(t, sm, "generated-0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQR")
	cfgFor := func(fn lambdaapp.Function, alg token.Algorithm) lambdaapp.Config {
		cfg := replay.Config(fn, "latchkey")
		cfg.CursorKeySecret = motoSecret(t, sm, replay.CursorSecret)
		if fn.WritesCredentials() {
			cfg.AdminKeySecret = motoSecret(t, sm, replay.AdminSecret)
			cfg.ProbeKeySecret = motoSecret(t, sm, replay.ProbeSecret)
		}
		if fn.SignsTokens() {
			cfg.SigningKeySecret = signingARN
		}
		cfg.SigningAlgorithm = alg
		return cfg
	}
	c := mock.NewClock(time.Now())
	newApp := func(fn lambdaapp.Function, alg token.Algorithm) *lambdaapp.App {
		t.Helper()
		a, err := lambdaapp.New(ctx, cfgFor(fn, alg), lambdaapp.Deps{Store: e.Store, Keys: e.Keys, Secrets: sm, Now: c.Now})
		if err != nil {
			t.Fatalf("init %s %s: %v", fn, alg, err)
		}
		return a
	}
	auth := newApp(lambdaapp.Auth, token.RS256)
	cur, err := secrets.NewCache(sm, secrets.Options{}).Get(ctx, signingARN)
	if err != nil || !secrets.IsRSASigningKey(cur.Current.Value) {
		t.Fatalf("the signing secret after auth's start is not an RSA key (%v)", err)
	}
	code, body := do(t, auth, "POST", "/v1/auth/token", replay.KeySecret, `{"scopes":["read:users"]}`)
	if code != http.StatusCreated {
		t.Fatalf("issue: got %d %v", code, body)
	}
	tok, _ := body["access_token"].(string)
	if got := headerAlg(t, tok); got != "RS256" {
		t.Fatalf("token alg: got %q, want RS256", got)
	}
	_, jwks := do(t, auth, "GET", "/v1/auth/jwks", "", "")
	if keys, _ := jwks["keys"].([]any); len(keys) != 1 || keys[0].(map[string]any)["alg"] != "RS256" || keys[0].(map[string]any)["kty"] != "RSA" {
		t.Fatalf("JWKS: got %v, want the RSA key alone", jwks)
	}
	// API Gateway's JWT authorizer finds the key set at this address.
	if _, meta := do(t, auth, "GET", "/.well-known/openid-configuration", "", ""); meta["jwks_uri"] == nil {
		t.Fatalf("discovery: got %v, want a jwks_uri", meta)
	}

	usersRS := newApp(lambdaapp.Users, token.RS256)
	usersEd := newApp(lambdaapp.Users, token.EdDSA)
	for name, tc := range map[string]struct {
		app  *lambdaapp.App
		path string
		tok  string
		want int
	}{
		"RS256AcceptsRS256":     {usersRS, "/v1/users/" + replay.UserID, tok, http.StatusOK},
		"EdDSARefusesRS256":     {usersEd, "/v1/users/" + replay.UserID, tok, http.StatusUnauthorized},
		"RS256RefusesEdDSA":     {usersRS, "/v1/users/" + replay.UserID, replay.Token(), http.StatusUnauthorized},
		"AuthVerifiesRS256":     {auth, "/v1/auth/verify", tok, http.StatusOK},
		"AuthRefusesEdDSAToken": {auth, "/v1/auth/verify", replay.Token(), http.StatusOK},
	} {
		code, body := do(t, tc.app, "GET", tc.path, tc.tok, "")
		if tc.path == "/v1/auth/verify" && body["valid"] != (name == "AuthVerifiesRS256") {
			t.Errorf("%s: got %v", name, body)
		}
		if code != tc.want {
			t.Errorf("%s: got %d %v, want %d", name, code, body, tc.want)
		}
	}

	ev, err := replay.LoadAuthorizerEvent("../../events/authorizer/valid.json")
	if err != nil {
		t.Fatal(err)
	}
	// The authorizer takes tokens for the API it guards, never Latchkey's
	// own: one for the orders API, under a rule that names it.
	code, body = do(t, auth, "POST", "/v1/auth/token", replay.KeySecret, `{"scopes":["read:orders"],"audience":"`+replay.OrdersAudience+`"}`)
	if code != http.StatusCreated {
		t.Fatalf("issue for the orders API: got %d %v", code, body)
	}
	orders, _ := body["access_token"].(string)
	ev.Headers["authorization"] = "Bearer " + orders
	routes := authorizer.Routes{"GET /orders": {Scope: "read:orders", Audience: replay.OrdersAudience}}
	for alg, want := range map[token.Algorithm]bool{token.RS256: true, token.EdDSA: false} {
		az, err := authorizerapp.New(ctx, authorizerapp.Config{TableName: "latchkey", Issuer: replay.Issuer, SigningAlgorithm: alg, Routes: routes},
			authorizerapp.Deps{Store: e.Store, Keys: e.Keys, Now: c.Now})
		if err != nil {
			t.Fatal(err)
		}
		res, err := az(ctx, ev)
		if err != nil || res.IsAuthorized != want {
			t.Errorf("authorizer %s: got %v (%v), want %v", alg, res.IsAuthorized, err, want)
		}
	}

	// Rotation: a new PEM; the old token stays valid through the previous version.
	pemKey, err := secrets.GenerateRSASigningKey()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sm.PutSecretValue(ctx, &secretsmanager.PutSecretValueInput{SecretId: aws.String(signingARN), SecretString: aws.String(pemKey)}); err != nil {
		t.Fatal(err)
	}
	c.Advance(secrets.DefaultRefreshInterval)
	code, body = do(t, auth, "POST", "/v1/auth/token", replay.KeySecret, `{"scopes":["read:users"]}`)
	newTok, _ := body["access_token"].(string)
	if code != http.StatusCreated || strings.Split(newTok, ".")[0] == strings.Split(tok, ".")[0] {
		t.Fatalf("issue after rotation: got %d, and the old key's header: %v", code, strings.Split(newTok, ".")[0] == strings.Split(tok, ".")[0])
	}
	for name, tk := range map[string]string{"New": newTok, "Old": tok} {
		if code, body := do(t, usersRS, "GET", "/v1/users/"+replay.UserID, tk, ""); code != http.StatusOK {
			t.Errorf("users after rotation, %s token: got %d %v", name, code, body)
		}
	}
}

// TestConfigFromEnv_SigningAlg: SIGNING_ALG is EdDSA when unset, and any
// value but EdDSA or RS256 fails the init, in every function and the
// authorizer.
func TestConfigFromEnv_SigningAlg(t *testing.T) {
	for in, want := range map[string]token.Algorithm{"": token.EdDSA, "EdDSA": token.EdDSA, "RS256": token.RS256, "HS256": "", "rs256": "", "none": ""} {
		getenv := func(k string) string {
			return map[string]string{
				lambdaapp.EnvTableName: "t", lambdaapp.EnvCursorKeySecret: "c", lambdaapp.EnvAdminKeySecret: "a",
				lambdaapp.EnvSigningKeySecret: "s", lambdaapp.EnvSigningAlg: in,
			}[k]
		}
		for _, fn := range lambdaapp.Functions() {
			cfg, err := lambdaapp.ConfigFromEnv(fn, getenv)
			if (want == "") != (err != nil) || cfg.SigningAlgorithm != want {
				t.Errorf("%s SIGNING_ALG=%q: got %q, %v; want %q", fn, in, cfg.SigningAlgorithm, err, want)
			}
		}
		cfg, err := authorizerapp.ConfigFromEnv(getenv)
		if (want == "") != (err != nil) || cfg.SigningAlgorithm != want {
			t.Errorf("authorizer SIGNING_ALG=%q: got %q, %v; want %q", in, cfg.SigningAlgorithm, err, want)
		}
	}
}

package deploytest_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"latchkey/pkg/lambdaapp"
	"latchkey/pkg/lambdaapp/authorizerapp"
	"latchkey/pkg/lambdaapp/replay"
	"latchkey/pkg/mock"
	"latchkey/pkg/token"
)

// TestTemplate_SigningAlgorithm proves how the SigningAlgorithm parameter
// reaches the code, and that it alone opens the one write to a secret any
// role holds: every function and the authorizer are given it as
// SIGNING_ALG and accept both values; the Bootstrap custom resource names
// it, so that switching runs the bootstrap again; with EdDSA (the default)
// no role may write a secret, and the auth function, bootstrapped, writes
// none; with RS256 the auth role alone may PutSecretValue, on the signing
// key secret alone, which is exactly what the auth function, bootstrapped
// with RS256, writes.
func TestTemplate_SigningAlgorithm(t *testing.T) {
	tpl := loadTemplate(t)
	param := path(map[string]any(tpl), "Parameters", "SigningAlgorithm")
	if got := strs(path(param, "AllowedValues")); !slices.Equal(got, []string{"EdDSA", "RS256"}) {
		t.Errorf("SigningAlgorithm AllowedValues: got %v, want [EdDSA RS256]", got)
	}
	if got := path(param, "Default"); got != "EdDSA" {
		t.Errorf("SigningAlgorithm Default: got %v, want EdDSA", got)
	}
	if got := refOf(path(tpl.resource(t, "Bootstrap", "Custom::Bootstrap"), "SigningAlgorithm")); got != "SigningAlgorithm" {
		t.Errorf("Bootstrap SigningAlgorithm: got !Ref %q, want !Ref SigningAlgorithm", got)
	}
	ids := []string{"AuthorizerFunction"}
	for _, fn := range lambdaapp.Functions() {
		ids = append(ids, logicalID(fn))
	}
	for _, alg := range []token.Algorithm{token.EdDSA, token.RS256} {
		params := map[string]string{"SigningAlgorithm": string(alg)}
		for _, fn := range lambdaapp.Functions() {
			env := tpl.functionEnv(t, logicalID(fn))
			if got := refOf(env[lambdaapp.EnvSigningAlg]); got != "SigningAlgorithm" {
				t.Errorf("%s %s: got %v, want !Ref SigningAlgorithm", fn, lambdaapp.EnvSigningAlg, env[lambdaapp.EnvSigningAlg])
			}
			cfg, err := lambdaapp.ConfigFromEnv(fn, tpl.getenv(t, env, params))
			if err != nil || cfg.SigningAlgorithm != alg {
				t.Errorf("%s with %s: algorithm %q, error %v", fn, alg, cfg.SigningAlgorithm, err)
			}
		}
		env := tpl.functionEnv(t, "AuthorizerFunction")
		getenv := tpl.getenv(t, env, params)
		cfg, err := authorizerapp.ConfigFromEnv(func(k string) string {
			if k == authorizerapp.EnvRoutes {
				return "" // the parameter's default
			}
			return getenv(k)
		})
		if err != nil || cfg.SigningAlgorithm != alg {
			t.Errorf("authorizer with %s: algorithm %q, error %v", alg, cfg.SigningAlgorithm, err)
		}

		var writers []string
		for _, id := range ids {
			for _, st := range tpl.statementsWith(t, id, params) {
				var writes bool
				for _, a := range strs(st["Action"]) {
					a = strings.ToLower(a)
					writes = writes || (strings.HasPrefix(a, "secretsmanager:") && a != "secretsmanager:getsecretvalue")
				}
				if !writes {
					continue
				}
				writers = append(writers, id)
				if got := strs(st["Action"]); st["Effect"] != "Allow" || !slices.Equal(got, []string{"secretsmanager:PutSecretValue"}) || st["Condition"] != nil {
					t.Errorf("%s with %s: statement %v grants %v %v; want Allow secretsmanager:PutSecretValue alone", id, alg, st["Sid"], st["Effect"], got)
				}
				if got := refOf(st["Resource"]); got != "SigningKeySecret" {
					t.Errorf("%s with %s: PutSecretValue on %v, want !Ref SigningKeySecret alone", id, alg, st["Resource"])
				}
			}
		}
		var want []string
		if alg == token.RS256 {
			want = []string{logicalID(lambdaapp.Auth)}
		}
		if !slices.Equal(writers, want) {
			t.Errorf("with %s, the roles that may write a secret: %v, want %v", alg, writers, want)
		}

		// What the code writes, through its cold start and the bootstrap a
		// deploy runs.
		b := newBackend(t)
		sm := replay.NewSecrets()
		appCfg := replay.Config(lambdaapp.Auth, "latchkey")
		appCfg.SigningAlgorithm = alg
		clock := mock.NewClock(time.Now())
		app, err := lambdaapp.New(context.Background(), appCfg, lambdaapp.Deps{Store: b.store, Keys: b.keys, Secrets: sm, Logger: discard, Now: clock.Now})
		if err != nil {
			t.Fatalf("auth with %s: %v", alg, err)
		}
		if err := app.Bootstrap(context.Background()); err != nil {
			t.Fatalf("auth with %s: bootstrap: %v", alg, err)
		}
		var wrote []string
		for arn := range sm.Written() {
			wrote = append(wrote, logicalFromARN(arn))
		}
		var wantWrote []string
		if alg == token.RS256 {
			wantWrote = []string{"SigningKeySecret"}
		}
		if !slices.Equal(wrote, wantWrote) {
			t.Errorf("auth with %s wrote the secrets %v, want %v", alg, wrote, wantWrote)
		}
	}
}

// TestTemplate_InlineRevocation: the InlineRevocation parameter, "true"
// by default, reaches the auth function, the only signer, as
// INLINE_REVOCATION, and its two values are the two settings the
// function reads; no other function is given it.
func TestTemplate_InlineRevocation(t *testing.T) {
	tpl := loadTemplate(t)
	param := path(map[string]any(tpl), "Parameters", "InlineRevocation")
	if got := strs(path(param, "AllowedValues")); !slices.Equal(got, []string{"false", "true"}) {
		t.Errorf("InlineRevocation AllowedValues: got %v, want [false true]", got)
	}
	if got := path(param, "Default"); got != "true" {
		t.Errorf("InlineRevocation Default: got %v, want true", got)
	}
	env := tpl.functionEnv(t, logicalID(lambdaapp.Auth))
	if got := refOf(env[lambdaapp.EnvInlineRevocation]); got != "InlineRevocation" {
		t.Errorf("auth %s: got %v, want !Ref InlineRevocation", lambdaapp.EnvInlineRevocation, env[lambdaapp.EnvInlineRevocation])
	}
	for _, c := range []struct {
		params map[string]string
		off    bool
	}{{nil, false}, {map[string]string{"InlineRevocation": "true"}, false}, {map[string]string{"InlineRevocation": "false"}, true}} {
		cfg, err := lambdaapp.ConfigFromEnv(lambdaapp.Auth, tpl.getenv(t, env, c.params))
		if err != nil || cfg.NoInlineRevocation != c.off {
			t.Errorf("auth with %v: NoInlineRevocation %v (%v), want %v", c.params, cfg.NoInlineRevocation, err, c.off)
		}
	}
	for _, id := range append(tpl.functions(), "AuthorizerFunction") {
		if _, ok := tpl.functionEnv(t, id)[lambdaapp.EnvInlineRevocation]; ok && id != logicalID(lambdaapp.Auth) {
			t.Errorf("%s is given %s: only auth signs tokens", id, lambdaapp.EnvInlineRevocation)
		}
	}
}

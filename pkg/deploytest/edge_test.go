package deploytest_test

import (
	"context"
	"errors"
	"testing"

	"latchkey/pkg/canary"
	"latchkey/pkg/lambdaapp"
	"latchkey/pkg/lambdaapp/canaryapp"
	"latchkey/pkg/lambdaapp/lambdaenv"
	"latchkey/pkg/lambdaapp/replay"
)

// TestCanary_ThroughEdge (issue 34): with the edge on, the functions the
// canary checks refuse what does not carry the origin secret, so the hook,
// given it as they are (ORIGIN_SECRET), sends it, and its check of a good
// build passes; without it, the check fails at its first step.
func TestCanary_ThroughEdge(t *testing.T) {
	const secret = "pW7rT2yU9iO4aS1dF6gH3jK8lZ5xC0vB7nM2qE9wR4tY1uI6"
	ctx := context.Background()
	b := newBackend(t)
	build := func(fn lambdaapp.Function) canary.HTTPFunction {
		t.Helper()
		cfg := replay.Config(fn, "latchkey")
		cfg.OriginSecret = secret
		deps := lambdaapp.Deps{Store: b.store, Keys: b.keys, Secrets: replay.NewSecrets(), Logger: discard}
		if fn == lambdaapp.Verify {
			deps.Secrets = nil
		}
		app, err := lambdaapp.New(ctx, cfg, deps)
		if err != nil {
			t.Fatal(err)
		}
		return canary.HTTPFunction(app.Lambda())
	}
	targets := canary.Targets{
		Auth: build(lambdaapp.Auth), Verify: build(lambdaapp.Verify), Organizations: build(lambdaapp.Organizations), Users: build(lambdaapp.Users),
		Authorizer: canary.AuthorizerFunction(newAuthorizer(t, b, `{"*": {"audience": "https://orders.example.com"}}`, discard)),
	}
	var f *canary.Failure
	if err := canary.Check(ctx, targets, replay.KeySecret); !errors.As(err, &f) {
		t.Fatalf("without the origin secret: %v, want the check to fail", err)
	}
	edge := targets
	for _, fn := range []*canary.HTTPFunction{&edge.Auth, &edge.Verify, &edge.Organizations, &edge.Users} {
		*fn = canaryapp.ThroughEdge(*fn, secret)
	}
	if err := canary.Check(ctx, edge, replay.KeySecret); err != nil {
		t.Fatalf("through the edge: %v", err)
	}
	if canaryapp.EnvOriginSecret != lambdaenv.EnvOriginSecret || lambdaapp.EnvOriginSecret != lambdaenv.EnvOriginSecret {
		t.Error("the hook and the functions read the origin secret from different variables")
	}
}

// Package probeapp is the probe's Lambda wiring: an EventBridge schedule
// invokes it every minute (template.yaml ProbeFunction); it runs
// canary.Probe against the live aliases of auth, the authorizer and verify
// through lambda:InvokeFunction, with the probe key (the canary's), and
// logs one line per path: the metric filters on its log group make of them
// the probe's metrics, and its alarms watch those.
package probeapp

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"latchkey/pkg/canary"
	"latchkey/pkg/lambdaapp/canaryapp"
	"latchkey/pkg/lambdaapp/lambdaenv"
)

// Name is the probe's name in logs.
const Name = "probe"

// The probe's environment (template.yaml): the secret of the key it
// issues its token with, and the ARNs of the aliases it asks.
const (
	EnvKeySecretARN       = "PROBE_KEY_SECRET_ARN"
	EnvAuthAliasARN       = "AUTH_ALIAS_ARN"
	EnvAuthorizerAliasARN = "AUTHORIZER_ALIAS_ARN"
	EnvVerifyAliasARN     = "VERIFY_ALIAS_ARN" // empty without the verify URL
	// EnvAudience is optional: the probe token's audience (canary.Targets
	// Audience), one the authorizer's rules admit on GET /canary.
	EnvAudience     = "PROBE_AUDIENCE"
	EnvOriginSecret = lambdaenv.EnvOriginSecret
)

const (
	// probeTimeout bounds one run below the function's timeout (60 s).
	probeTimeout = 40 * time.Second
	// Wait is how long after the revocation a path may yet refuse the
	// token before the probe calls it failed.
	Wait = 20 * time.Second
	// The messages of the lines the template's metric filters read.
	msgPath, msgFailed, msgDone = "probe path", "probe failed", "probe done"
)

// Handler is what the probe's main passes to lambda.Start: a scheduled
// event (events/schedule/probe.json).
type Handler func(ctx context.Context, ev events.EventBridgeEvent) error

// FromEnv reads the environment and builds the clients, at init.
func FromEnv(getenv func(string) string, logger *slog.Logger) (Handler, error) {
	secretARN, authARN, authorizerARN := getenv(EnvKeySecretARN), getenv(EnvAuthAliasARN), getenv(EnvAuthorizerAliasARN)
	if secretARN == "" || authARN == "" || authorizerARN == "" {
		return nil, fmt.Errorf("%s, %s and %s are required", EnvKeySecretARN, EnvAuthAliasARN, EnvAuthorizerAliasARN)
	}
	_, lc, key, err := canaryapp.Clients(getenv, secretARN)
	if err != nil {
		return nil, err
	}
	origin := getenv(EnvOriginSecret)
	targets := canary.Targets{
		Auth:       canaryapp.ThroughEdge(canaryapp.HTTPVersion(lc, authARN), origin),
		Authorizer: canaryapp.AuthorizerVersion(lc, authorizerARN),
		Audience:   getenv(EnvAudience),
	}
	if v := getenv(EnvVerifyAliasARN); v != "" {
		targets.Verify = canaryapp.ThroughEdge(canaryapp.HTTPVersion(lc, v), origin)
	}
	return NewHandler(targets, key, logger), nil
}

// NewHandler runs the probe on t with the key that key reads, once per
// scheduled event.
func NewHandler(t canary.Targets, key func(context.Context) (string, error), logger *slog.Logger) Handler {
	return func(ctx context.Context, ev events.EventBridgeEvent) error {
		if ev.DetailType != "Scheduled Event" {
			// Only the schedule invokes it (its role and the template).
			return fmt.Errorf("probe: unexpected event %q", ev.DetailType)
		}
		Run(ctx, t, key, Wait, logger)
		// A failed probe is its log lines and its alarm, not a Lambda
		// error: Lambda would retry the invocation, a second probe.
		return nil
	}
}

// Run reads the key and runs the probe, and logs its outcome: a line per
// path (outcome and seen_ms, the milliseconds from the revocation's answer
// to the path's refusal), or one "probe failed" line when no path could be
// asked, then "probe done". A path that has not refused the token wait
// after the revocation has failed. It returns whether every path refused the token
// within its bound or does not apply. Neither the key nor the token is
// ever logged.
func Run(ctx context.Context, t canary.Targets, key func(context.Context) (string, error), wait time.Duration, logger *slog.Logger) bool {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	start := time.Now()
	secret, err := key(ctx)
	var results []canary.PathResult
	if err == nil {
		results, err = canary.Probe(ctx, t, secret, wait)
	}
	ok := err == nil
	if err != nil {
		logger.ErrorContext(ctx, msgFailed, "outcome", canary.Failed, "error", err.Error())
	}
	for _, r := range results {
		attrs := []any{"path", r.Path, "outcome", r.Outcome}
		switch r.Outcome {
		case canary.Refused, canary.Slow:
			attrs = append(attrs, "seen_ms", ms(r.Seen), "bound_ms", ms(canary.Bounds[r.Path]))
		case canary.Failed:
			attrs = append(attrs, "error", r.Err.Error())
		}
		level := slog.LevelInfo
		if r.Outcome == canary.Failed || r.Outcome == canary.Slow {
			level, ok = slog.LevelError, false
		}
		logger.Log(ctx, level, msgPath, attrs...)
	}
	logger.InfoContext(ctx, msgDone, "ok", ok, "duration_ms", ms(time.Since(start)))
	return ok
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

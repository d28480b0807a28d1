// Command auth is the Lambda function of Latchkey's auth routes, the only
// one that signs tokens and writes the items that decide which credentials
// are valid. Three kinds of event reach it, and Lambda hands them all to
// the one handler a function has, authevents.Handler, which tells them
// apart:
//
//   - API Gateway HTTP API requests (payload 2.0) of the auth routes and of
//     the operators' console (pkg/console), served by the App through
//     aws-lambda-go-api-proxy's httpadapter.NewV2;
//   - CloudFormation custom resource requests of the template's Bootstrap
//     and IssuerConfig resources, at deploy time;
//   - {"action":"bootstrap"}, an operator's invocation after rotating the
//     admin key;
//   - {"latchkey":"grow-copies","key_id":…}, the verify URL's and the
//     authorizer's asynchronous invocation for a busy key, whose copies
//     their roles may not write (pkg/lambdaapp/copygrowth).
//
// See template.yaml for its routes, environment and role.
package main

import (
	"context"
	"log/slog"
	"os"
	"sync/atomic"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"

	"latchkey/pkg/console"
	"latchkey/pkg/lambdaapp"
	"latchkey/pkg/lambdaapp/authevents"
	"latchkey/pkg/lambdaapp/lambdaenv"
)

func main() {
	logger := lambdaenv.NewLogger(os.Stdout, string(lambdaapp.Auth))
	slog.SetDefault(logger)
	ctx, cancel := context.WithTimeout(context.Background(), lambdaenv.InitTimeout)
	h, err := start(ctx, logger)
	cancel()
	if err != nil {
		// Unlike the other functions, auth does not exit: CloudFormation's
		// requests wait on it, so it answers them whatever its state
		// (authevents.AfterFailedStart).
		logger.Error("init failed: " + err.Error())
		h = authevents.AfterFailedStart(func(ctx context.Context) (authevents.EventHandler, error) {
			return start(ctx, logger)
		}, logger)
	}
	lambda.StartWithOptions(h, lambdaenv.FlushOnShutdown(logger, func(ctx context.Context) error {
		if a := app.Load(); a != nil {
			return a.FlushUsage(ctx)
		}
		return nil
	}))
}

// app is the function's, once start has built it (maybe in a request,
// after a failed init): its usage counts are flushed when Lambda stops
// the instance.
var app atomic.Pointer[lambdaapp.App]

// start reads the configuration, builds the clients and the App (which
// reads the secrets, publishes the public keys and ensures the bootstrap
// admin key), and returns the handler of the four kinds of event.
func start(ctx context.Context, logger *slog.Logger) (authevents.EventHandler, error) {
	cfg, deps, err := lambdaapp.FromEnv(lambdaapp.Auth, os.Getenv, logger)
	if err != nil {
		return nil, err
	}
	cfg.Console = console.Mount
	a, err := lambdaapp.NewSigning(ctx, cfg, deps)
	if err != nil {
		return nil, err
	}
	app.Store(a)
	return authevents.Handler(a, httpadapter.NewV2(a).ProxyWithContext), nil
}

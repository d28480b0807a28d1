// Command authorizer is the API Gateway HTTP API Lambda authorizer
// (payload format 2.0, simple responses) that users attach to the routes
// of their own APIs to accept Latchkey access tokens, revocation included.
// It takes authorizer requests and nothing else; the decisions are
// pkg/authorizer's, over the published keys and the token statuses in the
// table. See template.yaml for its environment and its read-only role, and
// examples/protected-api for a stack that uses it.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"latchkey/pkg/lambdaapp/authorizerapp"
	"latchkey/pkg/lambdaapp/lambdaenv"
)

func main() {
	logger := lambdaenv.NewLogger(os.Stdout, authorizerapp.Name)
	slog.SetDefault(logger)
	ctx, cancel := context.WithTimeout(context.Background(), lambdaenv.InitTimeout)
	authorize, err := authorizerapp.FromEnv(ctx, os.Getenv, logger)
	cancel()
	if err != nil {
		lambdaenv.Fail(logger, err)
	}
	lambda.StartWithOptions(authorize, lambdaenv.FlushOnShutdown(logger, authorizerapp.FlushUsage))
}

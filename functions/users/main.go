// Command users is the Lambda function of Latchkey's users routes: it
// serves API Gateway HTTP API requests (payload 2.0), and nothing else,
// through aws-lambda-go-api-proxy's httpadapter.NewV2. It verifies tokens
// with the keys auth publishes in the table and signs none; see
// template.yaml for its routes, environment and role.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"

	"latchkey/pkg/lambdaapp"
	"latchkey/pkg/lambdaapp/lambdaenv"
)

func main() {
	logger := lambdaenv.NewLogger(os.Stdout, string(lambdaapp.Users))
	slog.SetDefault(logger)
	cfg, deps, err := lambdaapp.FromEnv(lambdaapp.Users, os.Getenv, logger)
	if err != nil {
		lambdaenv.Fail(logger, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), lambdaenv.InitTimeout)
	app, err := lambdaapp.NewVerifying(ctx, cfg, deps)
	cancel()
	if err != nil {
		lambdaenv.Fail(logger, err)
	}
	lambda.Start(httpadapter.NewV2(app).ProxyWithContext)
}

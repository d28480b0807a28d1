// Command verify is the Lambda function of GET /v1/auth/verify alone,
// served from a Lambda function URL rather than the HTTP API, so that a
// verify pays no API Gateway request (template.yaml VerifyFunctionUrl, off
// by default; docs/cost.md). A function URL's events are HTTP API payload
// 2.0, served through aws-lambda-go-api-proxy's httpadapter.NewV2 by the
// handler auth serves verify with; every other path is the API's 404. It
// verifies tokens with the keys auth publishes in the table, and reads no
// secret. A function URL has no access log: it logs every request, never
// sampled, with the client's address. See template.yaml for its URL,
// environment and role.
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
	logger := lambdaenv.NewLogger(os.Stdout, string(lambdaapp.Verify))
	slog.SetDefault(logger)
	cfg, deps, err := lambdaapp.VerifyFromEnv(os.Getenv, logger)
	if err != nil {
		lambdaenv.Fail(logger, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), lambdaenv.InitTimeout)
	app, err := lambdaapp.NewVerifying(ctx, cfg, deps)
	cancel()
	if err != nil {
		lambdaenv.Fail(logger, err)
	}
	lambda.StartWithOptions(httpadapter.NewV2(app).ProxyWithContext, lambdaenv.FlushOnShutdown(logger, app.FlushUsage))
}

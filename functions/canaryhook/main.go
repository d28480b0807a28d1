// Command canary is CodeDeploy's pre-traffic hook of the auth, authorizer
// and verify functions: it checks their new versions before they take any
// traffic (pkg/canary) and reports the outcome to CodeDeploy. See
// template.yaml CanaryHookFunction for its environment and role.
package main

import (
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"latchkey/pkg/lambdaapp/canaryapp"
	"latchkey/pkg/lambdaapp/lambdaenv"
)

func main() {
	logger := lambdaenv.NewLogger(os.Stdout, canaryapp.Name)
	slog.SetDefault(logger)
	handler, err := canaryapp.FromEnv(os.Getenv, logger)
	if err != nil {
		lambdaenv.Fail(logger, err)
	}
	lambda.Start(handler)
}

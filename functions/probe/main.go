// Command probe is the end-to-end probe of revocation: every minute it
// issues a token, revokes it and times how long each path takes to refuse
// it (pkg/canary Probe). See template.yaml ProbeFunction for its schedule,
// environment, role and alarms.
package main

import (
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"latchkey/pkg/lambdaapp/lambdaenv"
	"latchkey/pkg/lambdaapp/probeapp"
)

func main() {
	logger := lambdaenv.NewLogger(os.Stdout, probeapp.Name)
	slog.SetDefault(logger)
	handler, err := probeapp.FromEnv(os.Getenv, logger)
	if err != nil {
		lambdaenv.Fail(logger, err)
	}
	lambda.Start(handler)
}

// Package lambdaenv is what every Lambda function's main starts from: the
// AWS configuration of a Lambda execution environment, the variables the
// template sets for more than one function, the JSON logger, and the rule
// that an init failure is one log line and exit status 1. It imports no
// AWS service and of Latchkey's packages only version (a constant), so
// that each main links only the clients and the code of what it serves.
package lambdaenv

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"latchkey/pkg/version"
)

// Environment variables, set by template.yaml, that more than one function
// reads.
const (
	EnvTableName = "TABLE_NAME"
	EnvIssuer    = "ISSUER"
	// EnvSigningAlg is optional: the one algorithm tokens are signed and
	// accepted with, EdDSA (the default) or RS256 (token.ParseAlgorithm).
	EnvSigningAlg = "SIGNING_ALG"
	// EnvStoreTimeout is optional: see dynamostore.ParseTimeout.
	EnvStoreTimeout = "STORE_TIMEOUT"
	// EnvOriginSecret is set with the edge on (template.yaml
	// EdgeProtection): the value CloudFront sends in OriginSecretHeader,
	// which the functions behind it require (lambdaapp) and the canary
	// sends them.
	EnvOriginSecret = "ORIGIN_SECRET"
)

// OriginSecretHeader is the header CloudFront adds to every request it
// sends to the API and the verify URL when the edge is on: the proof that
// a request came through the web ACL, as neither an HTTP API nor a
// function URL serving a bearer token can be closed to all but
// CloudFront otherwise.
const OriginSecretHeader = "X-Origin-Secret"

// EnvFunctionVersion is the version of the function that Lambda runs,
// which Lambda sets: a number, or $LATEST.
const EnvFunctionVersion = "AWS_LAMBDA_FUNCTION_VERSION"

// Endpoint variables, the service-specific ones the AWS SDKs define. The
// template declares them empty (the SDK then finds the regional endpoint);
// set, they point the clients elsewhere: DynamoDB Local and moto in the
// tests and under `sam local start-api --env-vars local/env.json`.
const (
	EnvDynamoDBEndpoint       = "AWS_ENDPOINT_URL_DYNAMODB"
	EnvSecretsManagerEndpoint = "AWS_ENDPOINT_URL_SECRETS_MANAGER"
	EnvEventBridgeEndpoint    = "AWS_ENDPOINT_URL_EVENTBRIDGE"
	EnvLambdaEndpoint         = "AWS_ENDPOINT_URL_LAMBDA"
)

// InitTimeout bounds the init work (secrets, bootstrap key, public keys)
// below Lambda's 10-second init limit, so that a hung dependency ends in our
// clear log line rather than the platform's timeout.
const InitTimeout = 8 * time.Second

// NewLogger returns the logger of the function named name: JSON lines on w
// (os.Stdout, which Lambda sends to CloudWatch Logs), each with the
// function's name and, in Lambda, the version that wrote it (the canary's
// metric filters count each version's answers apart: template.yaml), each
// written before the call that logs it returns (a line held back would
// wait for the next invocation of a frozen environment, or be lost with
// it). Its first line is the start line, with the release
// (version.Version): the log of an execution environment says which
// release answered, whichever alias version ran it.
func NewLogger(w io.Writer, name string) *slog.Logger {
	logger := slog.New(slog.NewJSONHandler(w, nil)).With("function", name)
	if v := os.Getenv(EnvFunctionVersion); v != "" {
		logger = logger.With("version", v)
	}
	logger.Info("start", "release", version.Version)
	return logger
}

// Fail ends a function whose init failed: one JSON log line that says why,
// and exit status 1, so that Lambda reports a failed init, never a panic
// at the first request.
func Fail(logger *slog.Logger, err error) {
	logger.Error("init failed: " + err.Error())
	os.Exit(1)
}

// AWSConfig is the AWS configuration of a Lambda execution environment:
// Lambda sets the region and the execution role's credentials (valid for
// the environment's lifetime) in these variables, and the SDK's default
// chain takes them from there. It stands in for config.LoadDefaultConfig,
// whose other sources (shared files, SSO, STS, IMDS, processes) Lambda never
// uses and which add 1.8 MB to each binary; each client applies its own
// endpoint variable (Endpoint), for local runs.
func AWSConfig(getenv func(string) string) (aws.Config, error) {
	vars := map[string]string{}
	var missing []string
	for _, name := range []string{"AWS_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} {
		if vars[name] = getenv(name); vars[name] == "" {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return aws.Config{}, fmt.Errorf("missing AWS environment variables %v (Lambda sets them)", missing)
	}
	creds := credentials.NewStaticCredentialsProvider(vars["AWS_ACCESS_KEY_ID"], vars["AWS_SECRET_ACCESS_KEY"], getenv("AWS_SESSION_TOKEN"))
	return aws.Config{Region: vars["AWS_REGION"], Credentials: aws.NewCredentialsCache(creds)}, nil
}

// Endpoint is the value of the endpoint variable name for a client's
// BaseEndpoint: nil, the SDK's regional endpoint, when it is unset or
// empty.
func Endpoint(getenv func(string) string, name string) *string {
	if u := getenv(name); u != "" {
		return aws.String(u)
	}
	return nil
}

// ShutdownFlushTimeout is how long a function's flush on SIGTERM may take:
// Lambda sends SIGKILL about 500 ms after SIGTERM.
const ShutdownFlushTimeout = 400 * time.Millisecond

// FlushOnShutdown has Lambda send the runtime SIGTERM before it stops the
// instance (lambda.WithEnableSIGTERM registers an internal extension for
// it), and runs flush then, with ShutdownFlushTimeout: the usage counts
// an idle instance holds are written rather than lost (docs/usage.md).
func FlushOnShutdown(logger *slog.Logger, flush func(context.Context) error) lambda.Option {
	return lambda.WithEnableSIGTERM(func() {
		ctx, cancel := context.WithTimeout(context.Background(), ShutdownFlushTimeout)
		defer cancel()
		if err := flush(ctx); err != nil {
			logger.Error("usage: the flush at shutdown failed; its counts are lost", "error", err.Error())
		}
	})
}

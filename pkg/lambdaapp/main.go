package lambdaapp

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"latchkey/pkg/dynamostore"
)

// initTimeout bounds the init work (secrets, bootstrap key, public keys)
// below Lambda's 10-second init limit, so that a hung dependency ends in our
// clear log line rather than the platform's timeout.
const initTimeout = 8 * time.Second

// Main is the whole of each function's main: it builds fn once at init and
// hands its handler to lambda.Start. A configuration or init error is one
// JSON log line and exit status 1, so Lambda reports a failed init, never a
// panic at the first request; auth, which CloudFormation's custom resource
// requests wait on, logs it and serves on (AfterFailedStart).
func Main(fn Function, opts ...Option) {
	logger := NewLogger(os.Stdout, string(fn))
	slog.SetDefault(logger)
	ctx, cancel := context.WithTimeout(context.Background(), initTimeout)
	h, err := FromEnv(ctx, fn, os.Getenv, logger, opts...)
	cancel()
	if err != nil {
		logger.Error("init failed: " + err.Error())
		if !fn.WritesCredentials() {
			os.Exit(1)
		}
		// Auth answers CloudFormation whatever its state: see
		// AfterFailedStart.
		h = AfterFailedStart(func(ctx context.Context) (EventHandler, error) {
			return FromEnv(ctx, fn, os.Getenv, logger, opts...)
		}, logger)
	}
	lambda.Start(h)
}

// FromEnv reads fn's configuration with getenv, applies opts, builds the
// AWS clients and the DynamoDB store, and returns the handler that Main
// passes to lambda.Start (App.Invoke).
func FromEnv(ctx context.Context, fn Function, getenv func(string) string, logger *slog.Logger, opts ...Option) (EventHandler, error) {
	cfg, err := ConfigFromEnv(fn, getenv)
	if err != nil {
		return nil, err
	}
	for _, o := range opts {
		o(&cfg)
	}
	awsCfg, err := awsConfig(getenv)
	if err != nil {
		return nil, err
	}
	db := dynamodb.NewFromConfig(awsCfg, func(o *dynamodb.Options) {
		if u := getenv(EnvDynamoDBEndpoint); u != "" {
			o.BaseEndpoint = aws.String(u)
		}
	})
	sm := secretsmanager.NewFromConfig(awsCfg, func(o *secretsmanager.Options) {
		if u := getenv(EnvSecretsManagerEndpoint); u != "" {
			o.BaseEndpoint = aws.String(u)
		}
	})
	store := dynamostore.New(db, cfg.TableName, dynamostore.WithTimeout(cfg.StoreTimeout))
	app, err := New(ctx, cfg, Deps{Store: store, Keys: store, Secrets: sm, Logger: logger})
	if err != nil {
		return nil, err
	}
	return app.Invoke, nil
}

// awsConfig is the AWS configuration of a Lambda execution environment:
// Lambda sets the region and the execution role's credentials (valid for
// the environment's lifetime) in these variables, and the SDK's default
// chain takes them from there. It stands in for config.LoadDefaultConfig,
// whose other sources (shared files, SSO, STS, IMDS, processes) Lambda never
// uses and which add 1.8 MB to each binary; the service-specific endpoint
// variables the SDK honours are applied by FromEnv, for local runs.
func awsConfig(getenv func(string) string) (aws.Config, error) {
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

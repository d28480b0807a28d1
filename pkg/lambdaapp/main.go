package lambdaapp

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
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
// panic at the first request.
func Main(fn Function) {
	logger := slog.New(slog.NewJSONHandler(os.Stdout, nil)).With("function", string(fn))
	slog.SetDefault(logger)
	ctx, cancel := context.WithTimeout(context.Background(), initTimeout)
	h, err := FromEnv(ctx, fn, os.Getenv, logger)
	cancel()
	if err != nil {
		logger.Error("init failed: " + err.Error())
		os.Exit(1)
	}
	lambda.Start(h)
}

// FromEnv reads fn's configuration with getenv, builds the AWS clients from
// the default credential chain (the function's role in Lambda) and the
// DynamoDB store, and returns the handler that Main passes to lambda.Start.
func FromEnv(ctx context.Context, fn Function, getenv func(string) string, logger *slog.Logger) (Handler, error) {
	cfg, err := ConfigFromEnv(fn, getenv)
	if err != nil {
		return nil, err
	}
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("load the AWS configuration: %w", err)
	}
	store := dynamostore.New(dynamodb.NewFromConfig(awsCfg), cfg.TableName)
	app, err := New(ctx, cfg, Deps{Store: store, Keys: store, Secrets: secretsmanager.NewFromConfig(awsCfg), Logger: logger})
	if err != nil {
		return nil, err
	}
	return app.Lambda(), nil
}

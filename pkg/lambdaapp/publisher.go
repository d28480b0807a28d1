package lambdaapp

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"

	"latchkey/pkg/publisher"
)

// PublisherName is the publisher function's name in logs.
const PublisherName = "publisher"

// The publisher's environment, set by template.yaml.
const (
	// EnvEventBusName is the bus the events go on, by name or ARN;
	// optional, the account's default bus when unset.
	EnvEventBusName = "EVENT_BUS_NAME"
	// EnvEventBridgeEndpoint is the SDK's service-specific endpoint
	// variable, declared empty by the template like the others; the tests
	// point it at moto.
	EnvEventBridgeEndpoint = "AWS_ENDPOINT_URL_EVENTBRIDGE"
)

// PublisherHandler is what the publisher's main passes to lambda.Start.
type PublisherHandler func(ctx context.Context, batch events.DynamoDBEvent) (events.DynamoDBEventResponse, error)

// PublisherFromEnv builds the publisher from its environment: the AWS
// configuration Lambda gives every function and EVENT_BUS_NAME. It reads
// no table and no secret: the stream brings it what it sends.
func PublisherFromEnv(getenv func(string) string, logger *slog.Logger) (PublisherHandler, error) {
	awsCfg, err := awsConfig(getenv)
	if err != nil {
		return nil, err
	}
	client := eventbridge.NewFromConfig(awsCfg, func(o *eventbridge.Options) {
		if u := getenv(EnvEventBridgeEndpoint); u != "" {
			o.BaseEndpoint = aws.String(u)
		}
	})
	p := publisher.New(client, publisher.Options{EventBusName: getenv(EnvEventBusName), Logger: logger})
	return p.Handle, nil
}

// MainPublisher is the whole of the publisher's main, as Main is of the
// API functions': init once, one JSON log line and exit status 1 if it
// fails.
func MainPublisher() {
	logger := slog.New(slog.NewJSONHandler(os.Stdout, nil)).With("function", PublisherName)
	slog.SetDefault(logger)
	h, err := PublisherFromEnv(os.Getenv, logger)
	if err != nil {
		logger.Error("init failed: " + err.Error())
		os.Exit(1)
	}
	lambda.Start(h)
}

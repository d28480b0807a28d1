// Package publisherapp is the publisher function's wiring: the
// EventBridge client from the environment and the handler of the table's
// stream batches. The work is package publisher's. It shares only
// lambdaenv with the other functions: the publisher's binary links no
// table client, no secret and no HTTP API.
package publisherapp

import (
	"context"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"

	"latchkey/pkg/lambdaapp/lambdaenv"
	"latchkey/pkg/publisher"
)

// Name is the publisher function's name in logs.
const Name = "publisher"

// The publisher's environment, set by template.yaml.
const (
	// EnvEventBusName is the bus the events go on, by name or ARN;
	// optional, the account's default bus when unset.
	EnvEventBusName = "EVENT_BUS_NAME"
	// EnvEventBridgeEndpoint is the SDK's service-specific endpoint
	// variable, declared empty by the template like the others; the tests
	// point it at moto.
	EnvEventBridgeEndpoint = lambdaenv.EnvEventBridgeEndpoint
)

// Handler is what the publisher's main passes to lambda.Start.
type Handler func(ctx context.Context, batch events.DynamoDBEvent) (events.DynamoDBEventResponse, error)

// FromEnv builds the publisher from its environment: the AWS
// configuration Lambda gives every function and EVENT_BUS_NAME. It reads
// no table and no secret: the stream brings it what it sends.
func FromEnv(getenv func(string) string, logger *slog.Logger) (Handler, error) {
	awsCfg, err := lambdaenv.AWSConfig(getenv)
	if err != nil {
		return nil, err
	}
	client := eventbridge.NewFromConfig(awsCfg, func(o *eventbridge.Options) {
		o.BaseEndpoint = lambdaenv.Endpoint(getenv, EnvEventBridgeEndpoint)
	})
	p := publisher.New(client, publisher.Options{EventBusName: getenv(EnvEventBusName), Logger: logger})
	return p.Handle, nil
}

// Command publisher is the Lambda function that the DynamoDB table's stream
// invokes with the event items the stores write: it takes stream batches
// and nothing else, and puts each event on an Amazon EventBridge bus
// (source latchkey, detail-type the event's type, detail the event). The
// work is pkg/publisher's; see template.yaml for its event source mapping,
// its dead-letter queue and its role, which may read the stream and put
// events and nothing else.
package main

import (
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"latchkey/pkg/lambdaapp/lambdaenv"
	"latchkey/pkg/lambdaapp/publisherapp"
)

func main() {
	logger := lambdaenv.NewLogger(os.Stdout, publisherapp.Name)
	slog.SetDefault(logger)
	publish, err := publisherapp.FromEnv(os.Getenv, logger)
	if err != nil {
		lambdaenv.Fail(logger, err)
	}
	lambda.Start(publish)
}

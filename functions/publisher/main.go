// Command publisher is the Lambda function that the DynamoDB table's stream
// invokes with the event items the stores write: it puts each event on an
// Amazon EventBridge bus (source latchkey, detail-type the event's type,
// detail the event). All wiring is in lambdaapp, the logic in
// pkg/publisher; see template.yaml for its event source mapping, its
// dead-letter queue and its role, which may read the stream and put events
// and nothing else.
package main

import "latchkey/pkg/lambdaapp"

func main() { lambdaapp.MainPublisher() }

// Package copygrowth hands the growth of a busy key's verify copies
// (pkg/tablestore/sizing.go) from the functions whose roles may not write
// them, the verify URL and the authorizer, to the auth function, whose
// role may: their stores' usage flushes call Invoker's function for a
// busy key (tablestore.WithCopyGrowthBy), which invokes auth's alias
// Alias asynchronously with Request; auth reads the key's rate itself and grows
// its copies (authevents.Handler, tablestore.Store.GrowCopies). Those
// roles may invoke that alias and nothing else of Lambda: they still
// cannot write, nor have auth write, anything a verify reads but the
// copies a key's rate calls for.
package copygrowth

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"latchkey/pkg/dynamostore"
	"latchkey/pkg/lambdaapp/lambdaenv"
)

// EnvAuthAliasARN is the ARN of auth's alias Alias (template.yaml
// AuthGrowAlias): unset, a function grows no copies and asks for none (a
// local run).
const EnvAuthAliasARN = "AUTH_GROW_ALIAS_ARN"

// Alias is the name of the alias of auth that the requests go through,
// and the only one their senders' roles may invoke. Auth serves an
// invocation through it as Request and as nothing else (an API event, a
// custom resource's or a bootstrap is ignored there): a holder of those
// roles can ask for a growth, and cannot make auth record an issuer,
// take the formats out of force or serve a forged API request.
const Alias = "grow"

// Event is the value of Request's Latchkey field.
const Event = "grow-copies"

// Request is the payload of the invocation, e.g.
// {"latchkey":"grow-copies","key_id":"key_…"}: no secret, no token.
type Request struct {
	Latchkey string `json:"latchkey"`
	KeyID    string `json:"key_id"`
}

// invokeTimeout bounds one invocation: an asynchronous Invoke is answered
// once Lambda has queued the event, in milliseconds. It runs in a usage
// flush, never in a verify.
const invokeTimeout = 2 * time.Second

// invoker is the one call of the Lambda API the function makes.
type invoker interface {
	Invoke(ctx context.Context, in *lambda.InvokeInput, opts ...func(*lambda.Options)) (*lambda.InvokeOutput, error)
}

// Invoker returns the function a store hands a busy key's growth to: one
// asynchronous Invoke (InvocationType Event) of arn with Request, bounded
// by invokeTimeout; a failure is logged and dropped (the next busy flush,
// a minute on, asks again).
func Invoker(lc invoker, arn string, logger *slog.Logger) func(ctx context.Context, keyID string) {
	if logger == nil {
		logger = slog.Default()
	}
	return func(ctx context.Context, keyID string) {
		payload, err := json.Marshal(Request{Latchkey: Event, KeyID: keyID})
		if err == nil {
			ctx, cancel := context.WithTimeout(ctx, invokeTimeout)
			defer cancel()
			_, err = lc.Invoke(ctx, &lambda.InvokeInput{
				FunctionName: aws.String(arn), InvocationType: types.InvocationTypeEvent, Payload: payload,
			})
		}
		if err != nil {
			logger.WarnContext(ctx, "copies: asking auth to grow a busy key's copies failed", "key_id", keyID, "error", err.Error())
		}
	}
}

// StoreOption is the copy growth of the store of a function whose role
// may not write a key's copies: handed to the alias EnvAuthAliasARN names,
// through Invoker over a Lambda client of cfg (AWS_ENDPOINT_URL_LAMBDA
// points it elsewhere); none when the variable is unset.
func StoreOption(cfg aws.Config, getenv func(string) string, logger *slog.Logger) dynamostore.Option {
	arn := getenv(EnvAuthAliasARN)
	if arn == "" {
		return dynamostore.WithoutCopyGrowth()
	}
	lc := lambda.NewFromConfig(cfg, func(o *lambda.Options) {
		o.BaseEndpoint = lambdaenv.Endpoint(getenv, lambdaenv.EnvLambdaEndpoint)
	})
	return dynamostore.WithCopyGrowthBy(Invoker(lc, arn, logger))
}

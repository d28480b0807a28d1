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
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/smithy-go/encoding/httpbinding"

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

// Invoker returns the function a store hands a busy key's growth to: one
// asynchronous Invoke (InvocationType Event) of the alias arn with
// Request, through invoke, bounded by invokeTimeout; a failure is logged
// and dropped (the next busy flush, a minute on, asks again).
func Invoker(invoke func(ctx context.Context, payload []byte) error, logger *slog.Logger) func(ctx context.Context, keyID string) {
	if logger == nil {
		logger = slog.Default()
	}
	return func(ctx context.Context, keyID string) {
		payload, err := json.Marshal(Request{Latchkey: Event, KeyID: keyID})
		if err == nil {
			ctx, cancel := context.WithTimeout(ctx, invokeTimeout)
			defer cancel()
			err = invoke(ctx, payload)
		}
		if err != nil {
			logger.WarnContext(ctx, "copies: asking auth to grow a busy key's copies failed", "key_id", keyID, "error", err.Error())
		}
	}
}

// asyncInvoke returns Lambda's Invoke of the function arn with
// InvocationType Event, signed with SigV4 with cfg's credentials, sent to
// endpoint (Lambda's regional endpoint when empty). Not the SDK's Lambda
// client: it adds 0.7 MB to a binary, and the verify function's must stay
// under 10 MB (deploytest TestBinary_Size). The request is the client's:
// the path escaped as the SDK's REST serializer does, then signed by the
// SDK's signer, which escapes it again as SigV4 wants of every service
// but S3 (TestAsyncInvoke_SignedAsTheSDK).
func asyncInvoke(cfg aws.Config, arn, endpoint string, client *http.Client) func(ctx context.Context, payload []byte) error {
	region, partitionHost := regionOf(arn)
	if endpoint == "" {
		endpoint = "https://lambda." + region + "." + partitionHost
	}
	target := strings.TrimSuffix(endpoint, "/") + "/2015-03-31/functions/" + httpbinding.EscapePath(arn, true) + "/invocations"
	signer := v4.NewSigner()
	return func(ctx context.Context, payload []byte) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(payload))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/octet-stream") // as the SDK sends a Payload
		req.Header.Set("X-Amz-Invocation-Type", "Event")
		creds, err := cfg.Credentials.Retrieve(ctx)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(payload)
		if err := signer.SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), "lambda", region, time.Now()); err != nil {
			return err
		}
		res, err := client.Do(req)
		if err != nil {
			return err
		}
		defer res.Body.Close()
		io.Copy(io.Discard, io.LimitReader(res.Body, 4096))
		if res.StatusCode != http.StatusAccepted {
			return fmt.Errorf("lambda Invoke answered %d %s", res.StatusCode, res.Header.Get("X-Amzn-ErrorType"))
		}
		return nil
	}
}

// regionOf returns the region of the function ARN
// arn:<partition>:lambda:<region>:…, and the domain of its partition's
// endpoints.
func regionOf(arn string) (region, domain string) {
	parts := strings.SplitN(arn, ":", 5)
	if len(parts) < 5 {
		return "", "amazonaws.com"
	}
	if parts[1] == "aws-cn" {
		return parts[3], "amazonaws.com.cn"
	}
	return parts[3], "amazonaws.com"
}

// StoreOption is the copy growth of the store of a function whose role
// may not write a key's copies: handed to the alias EnvAuthAliasARN names,
// invoked with cfg's credentials (AWS_ENDPOINT_URL_LAMBDA points it
// elsewhere); none when the variable is unset.
func StoreOption(cfg aws.Config, getenv func(string) string, logger *slog.Logger) dynamostore.Option {
	arn := getenv(EnvAuthAliasARN)
	if arn == "" {
		return dynamostore.WithoutCopyGrowth()
	}
	invoke := asyncInvoke(cfg, arn, getenv(lambdaenv.EnvLambdaEndpoint), &http.Client{})
	return dynamostore.WithCopyGrowthBy(Invoker(invoke, logger))
}

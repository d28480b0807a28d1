// Package canaryapp is the canary hook's Lambda wiring: CodeDeploy invokes
// it before it moves traffic to the new versions (template.yaml
// CanaryHookFunction); it runs canary.Check against those versions through
// lambda:InvokeFunction, with the probe key (account.EnsureProbeKey: it
// may issue, check and revoke its own tokens and nothing else), and
// reports the
// outcome with codedeploy:PutLifecycleEventHookExecutionStatus.
package canaryapp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/codedeploy"
	cdtypes "github.com/aws/aws-sdk-go-v2/service/codedeploy/types"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"latchkey/pkg/canary"
	"latchkey/pkg/lambdaapp/lambdaenv"
)

// Name is the hook's name in logs.
const Name = "canary"

// The hook's environment (template.yaml): the secret of the key the check
// issues its token with, and the ARNs of the versions it checks.
const (
	EnvKeySecretARN         = "PROBE_KEY_SECRET_ARN"
	EnvAuthVersionARN       = "AUTH_VERSION_ARN"
	EnvAuthorizerVersionARN = "AUTHORIZER_VERSION_ARN"
	// EnvVerifyVersionARN is empty in a stack without the verify URL.
	EnvVerifyVersionARN        = "VERIFY_VERSION_ARN"
	EnvOrganizationsVersionARN = "ORGANIZATIONS_VERSION_ARN"
	EnvUsersVersionARN         = "USERS_VERSION_ARN"
	// EnvOriginSecret is the functions' own (lambdaenv.EnvOriginSecret),
	// set with the edge on: the check's requests carry it as CloudFront's
	// do, or the versions would refuse them.
	EnvOriginSecret = lambdaenv.EnvOriginSecret
)

// checkTimeout bounds one check below the function's timeout (60 s), so
// that the outcome is always reported.
const checkTimeout = 45 * time.Second

// Event is CodeDeploy's invocation of a lifecycle hook.
type Event struct {
	DeploymentID                  string `json:"DeploymentId"`
	LifecycleEventHookExecutionID string `json:"LifecycleEventHookExecutionId"`
}

// Handler is what the hook's main passes to lambda.Start.
type Handler func(ctx context.Context, ev Event) error

// FromEnv reads the environment and builds the clients, at init.
func FromEnv(getenv func(string) string, logger *slog.Logger) (Handler, error) {
	secretARN, authARN, authorizerARN := getenv(EnvKeySecretARN), getenv(EnvAuthVersionARN), getenv(EnvAuthorizerVersionARN)
	if secretARN == "" || authARN == "" || authorizerARN == "" {
		return nil, fmt.Errorf("%s, %s and %s are required", EnvKeySecretARN, EnvAuthVersionARN, EnvAuthorizerVersionARN)
	}
	cfg, lc, key, err := Clients(getenv, secretARN)
	if err != nil {
		return nil, err
	}
	cd := codedeploy.NewFromConfig(cfg)
	origin := getenv(EnvOriginSecret)
	targets := canary.Targets{
		Auth:       ThroughEdge(HTTPVersion(lc, authARN), origin),
		Authorizer: AuthorizerVersion(lc, authorizerARN),
	}
	for env, fn := range map[string]*canary.HTTPFunction{EnvVerifyVersionARN: &targets.Verify, EnvOrganizationsVersionARN: &targets.Organizations, EnvUsersVersionARN: &targets.Users} {
		if v := getenv(env); v != "" {
			*fn = ThroughEdge(HTTPVersion(lc, v), origin)
		}
	}
	return func(ctx context.Context, ev Event) error {
		outcome := Run(ctx, targets, key, logger)
		// Reported whatever happened: CodeDeploy otherwise waits an hour.
		_, err := cd.PutLifecycleEventHookExecutionStatus(ctx, &codedeploy.PutLifecycleEventHookExecutionStatusInput{
			DeploymentId:                  aws.String(ev.DeploymentID),
			LifecycleEventHookExecutionId: aws.String(ev.LifecycleEventHookExecutionID),
			Status:                        outcome,
		})
		if err != nil {
			logger.ErrorContext(ctx, "canary: the outcome could not be reported", "deployment_id", ev.DeploymentID, "error", err.Error())
		}
		return err
	}, nil
}

// Clients builds, at init, what a check of the functions needs: the
// Lambda client that invokes them, and the reader of the secret of the
// key it issues its token with (secretARN), read at each check so that a
// rotated key is used at once. The hook and the probe share it.
func Clients(getenv func(string) string, secretARN string) (aws.Config, *lambda.Client, func(context.Context) (string, error), error) {
	cfg, err := lambdaenv.AWSConfig(getenv)
	if err != nil {
		return aws.Config{}, nil, nil, err
	}
	sm := secretsmanager.NewFromConfig(cfg, func(o *secretsmanager.Options) {
		o.BaseEndpoint = lambdaenv.Endpoint(getenv, lambdaenv.EnvSecretsManagerEndpoint)
	})
	key := func(ctx context.Context) (string, error) {
		out, err := sm.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(secretARN)})
		if err != nil {
			return "", err
		}
		return aws.ToString(out.SecretString), nil
	}
	return cfg, lambda.NewFromConfig(cfg), key, nil
}

// Run reads the key and runs the check, logging its outcome: one line,
// with the failed step when there is one (never the key or the token).
func Run(ctx context.Context, t canary.Targets, key func(context.Context) (string, error), logger *slog.Logger) cdtypes.LifecycleEventStatus {
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	start := time.Now()
	secret, err := key(ctx)
	if err == nil {
		err = canary.Check(ctx, t, secret)
	}
	ms := float64(time.Since(start).Microseconds()) / 1000
	if err != nil {
		logger.ErrorContext(ctx, "canary check failed", "error", err.Error(), "duration_ms", ms)
		return cdtypes.LifecycleEventStatusFailed
	}
	logger.InfoContext(ctx, "canary check passed", "duration_ms", ms)
	return cdtypes.LifecycleEventStatusSucceeded
}

// invoker is the one call of the Lambda API the hook makes.
type invoker interface {
	Invoke(ctx context.Context, in *lambda.InvokeInput, opts ...func(*lambda.Options)) (*lambda.InvokeOutput, error)
}

// HTTPVersion calls the function version arn with an HTTP API event.
func HTTPVersion(lc invoker, arn string) canary.HTTPFunction {
	return func(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		var res events.APIGatewayV2HTTPResponse
		return res, invoke(ctx, lc, arn, req, &res)
	}
}

// ThroughEdge adds the origin secret to each request fn is sent, as
// CloudFront adds it; fn itself when there is none (the edge is off).
func ThroughEdge(fn canary.HTTPFunction, secret string) canary.HTTPFunction {
	if secret == "" {
		return fn
	}
	return func(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		req.Headers = maps.Clone(req.Headers)
		if req.Headers == nil {
			req.Headers = map[string]string{}
		}
		req.Headers[strings.ToLower(lambdaenv.OriginSecretHeader)] = secret
		return fn(ctx, req)
	}
}

// AuthorizerVersion calls the authorizer version arn with an authorizer
// request.
func AuthorizerVersion(lc invoker, arn string) canary.AuthorizerFunction {
	return func(ctx context.Context, req events.APIGatewayV2CustomAuthorizerV2Request) (events.APIGatewayV2CustomAuthorizerSimpleResponse, error) {
		var res events.APIGatewayV2CustomAuthorizerSimpleResponse
		return res, invoke(ctx, lc, arn, req, &res)
	}
}

func invoke(ctx context.Context, lc invoker, arn string, in, out any) error {
	payload, err := json.Marshal(in)
	if err != nil {
		return err
	}
	res, err := lc.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String(arn), Payload: payload})
	if err != nil {
		return err
	}
	if res.FunctionError != nil {
		// The payload is Lambda's {"errorType", "errorMessage"}: the
		// function's own message, which holds no secret.
		var e struct {
			ErrorType string `json:"errorType"`
		}
		json.Unmarshal(res.Payload, &e)
		return errors.New("function error " + aws.ToString(res.FunctionError) + " " + e.ErrorType)
	}
	return json.Unmarshal(res.Payload, out)
}

// Package authorizerapp is the authorizer function's wiring: its
// configuration from the environment, and the handler over the published
// keys and the token statuses in the table. The decisions are package
// authorizer's. It shares only lambdaenv with the HTTP API functions, so
// that the authorizer's binary links no HTTP API, no secret and no signer.
package authorizerapp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"latchkey/pkg/account"
	"latchkey/pkg/authorizer"
	"latchkey/pkg/dynamostore"
	"latchkey/pkg/lambdaapp/copygrowth"
	"latchkey/pkg/lambdaapp/lambdaenv"
	"latchkey/pkg/logsample"
	"latchkey/pkg/token"
)

// EnvAuthorizerRoutes configures the authorizer's rules per route: the JSON
// of authorizer.Routes, e.g.
// {"GET /orders": {"scope": "read:orders", "audience": "https://orders.example.com"}}.
// Every rule names an audience; a route without a rule, and every route
// without the variable, authorizes no token, and a token for Latchkey's own
// API or its console opens no route (see package authorizer).
const EnvRoutes = "AUTHORIZER_ROUTES"

// Name is the authorizer function's name in logs.
const Name = "authorizer"

// Handler is what the authorizer's main passes to lambda.Start.
type Handler func(ctx context.Context, req events.APIGatewayV2CustomAuthorizerV2Request) (events.APIGatewayV2CustomAuthorizerSimpleResponse, error)

// Config is the authorizer's configuration, read once at init.
type Config struct {
	// TableName is the DynamoDB table. Required.
	TableName string
	// Issuer overrides the issuer recorded in the table, as for the other
	// functions; empty in a deployment.
	Issuer string
	// Routes are the rules per route.
	Routes authorizer.Routes
	// StoreTimeout bounds each DynamoDB call (STORE_TIMEOUT), as in the
	// other functions.
	StoreTimeout time.Duration
	// SigningAlgorithm is the one algorithm tokens are accepted with
	// (SIGNING_ALG), as in the other functions; EdDSA by default.
	SigningAlgorithm token.Algorithm
	// TokenCache bounds the verified-token cache, as in the other
	// functions (token.EnvCacheMaxEntries, token.EnvCacheMaxBytes).
	TokenCache token.CacheOptions
	// SuccessLogEvery is N of SUCCESS_LOG_EVERY, as in the other
	// functions: the line of one allowed request in N is logged, of every
	// refusal always.
	SuccessLogEvery int
	// Usage is how the authorizer flushes its usage counts
	// (account.UsageOptionsFromEnv).
	Usage account.UsageOptions
}

// ConfigFromEnv reads the authorizer's configuration: TABLE_NAME,
// and optionally ISSUER, AUTHORIZER_ROUTES, STORE_TIMEOUT, SIGNING_ALG and
// the token cache's bounds. It needs no secret: it verifies with the public
// keys only.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	cfg := Config{TableName: getenv(lambdaenv.EnvTableName), Issuer: getenv(lambdaenv.EnvIssuer)}
	if strings.TrimSpace(cfg.TableName) == "" {
		return Config{}, errors.New("missing environment variables: " + lambdaenv.EnvTableName)
	}
	if cfg.Issuer != "" {
		if err := account.CheckIssuer(cfg.Issuer); err != nil {
			return Config{}, fmt.Errorf("%s: %w", lambdaenv.EnvIssuer, err)
		}
	}
	routes, err := authorizer.ParseRoutes(getenv(EnvRoutes))
	if err != nil {
		return Config{}, fmt.Errorf("%s: %w", EnvRoutes, err)
	}
	cfg.Routes = routes
	if cfg.SigningAlgorithm, err = token.ParseAlgorithm(getenv(lambdaenv.EnvSigningAlg)); err != nil {
		return Config{}, fmt.Errorf("%s: %w", lambdaenv.EnvSigningAlg, err)
	}
	if cfg.StoreTimeout, err = dynamostore.ParseTimeout(getenv(lambdaenv.EnvStoreTimeout)); err != nil {
		return Config{}, fmt.Errorf("%s: %w", lambdaenv.EnvStoreTimeout, err)
	}
	if cfg.TokenCache, err = token.CacheOptionsFromEnv(getenv); err != nil {
		return Config{}, err
	}
	if cfg.SuccessLogEvery, err = logsample.ParseEvery(getenv(logsample.EnvEvery)); err != nil {
		return Config{}, err
	}
	if cfg.Usage, err = account.UsageOptionsFromEnv(getenv); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// Deps are what the authorizer reads: token statuses and the
// published keys, both from the table (tablestore.Store is both).
type Deps struct {
	Store account.TokenStatusReader
	Keys  token.KeySource
	// Logger; slog.Default() when nil.
	Logger *slog.Logger
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// RefreshInterval of the public keys; token.DefaultKeySetRefresh when
	// zero.
	RefreshInterval time.Duration
}

// New reads the published keys and returns the authorizer's
// handler. The keys are refreshed on the request path, as in the other
// functions, since a Lambda's background goroutines are frozen between
// invocations.
func New(ctx context.Context, cfg Config, deps Deps) (Handler, error) {
	if deps.Store == nil || deps.Keys == nil {
		return nil, errors.New("authorizerapp: Store and Keys are required")
	}
	if deps.Logger == nil {
		deps.Logger = slog.Default()
	}
	keys, err := token.NewKeySet(ctx, cfg.Issuer, deps.Keys, token.KeySetOptions{
		Logger: deps.Logger, Now: deps.Now, RefreshInterval: deps.RefreshInterval, Algorithm: cfg.SigningAlgorithm,
		Cache: token.NewCache(cfg.TokenCache),
	})
	if err != nil {
		return nil, fmt.Errorf("read the public keys from the table: %w", err)
	}
	verifier := account.NewTokenVerifier(deps.Store, keys, deps.Now)
	cfg.Usage.Logger = deps.Logger
	tally := account.NewUsageTally(deps.Store, cfg.Usage, deps.Now)
	usage.Store(tally)
	verifier.UseTally(tally)
	az := authorizer.New(verifier, cfg.Routes, deps.Logger, logsample.New(cfg.SuccessLogEvery))
	return func(ctx context.Context, req events.APIGatewayV2CustomAuthorizerV2Request) (events.APIGatewayV2CustomAuthorizerSimpleResponse, error) {
		keys.RefreshIfStale(ctx)
		return az.Authorize(ctx, req)
	}, nil
}

// usage is the tally of the authorizer New built last: one per process,
// which main flushes when Lambda stops it (FlushUsage).
var usage atomic.Pointer[account.UsageTally]

// FlushUsage writes the usage counts of the authorizer New built, if
// any: main's hook for Lambda's SIGTERM (docs/usage.md).
func FlushUsage(ctx context.Context) error {
	if u := usage.Load(); u != nil {
		return u.Flush(ctx)
	}
	return nil
}

// FromEnv builds the authorizer from its environment: ConfigFromEnv, and
// a DynamoDB client and store for New.
func FromEnv(ctx context.Context, getenv func(string) string, logger *slog.Logger) (Handler, error) {
	cfg, err := ConfigFromEnv(getenv)
	if err != nil {
		return nil, err
	}
	awsCfg, err := lambdaenv.AWSConfig(getenv)
	if err != nil {
		return nil, err
	}
	db := dynamodb.NewFromConfig(awsCfg, func(o *dynamodb.Options) {
		o.BaseEndpoint = lambdaenv.Endpoint(getenv, lambdaenv.EnvDynamoDBEndpoint)
	})
	// Its role may not write a key's copies: it asks the auth function to
	// grow a busy key's (AUTH_ALIAS_ARN).
	store := dynamostore.New(db, cfg.TableName, dynamostore.WithTimeout(cfg.StoreTimeout), copygrowth.StoreOption(awsCfg, getenv, logger))
	return New(ctx, cfg, Deps{Store: store, Keys: store, Logger: logger})
}

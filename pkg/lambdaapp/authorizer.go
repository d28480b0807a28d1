package lambdaapp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"latchkey/pkg/account"
	"latchkey/pkg/authorizer"
	"latchkey/pkg/dynamostore"
	"latchkey/pkg/token"
)

// EnvAuthorizerRoutes configures the authorizer's rules per route: the JSON
// of authorizer.Routes, e.g.
// {"GET /orders": {"scope": "read:orders", "audience": "https://orders.example.com"}}.
// Every rule names an audience; a route without a rule, and every route
// without the variable, authorizes no token, and a token for Latchkey's own
// API or its console opens no route (see package authorizer).
const EnvAuthorizerRoutes = "AUTHORIZER_ROUTES"

// AuthorizerName is the authorizer function's name in logs.
const AuthorizerName = "authorizer"

// AuthorizerHandler is what the authorizer's main passes to lambda.Start.
type AuthorizerHandler func(ctx context.Context, req events.APIGatewayV2CustomAuthorizerV2Request) (events.APIGatewayV2CustomAuthorizerSimpleResponse, error)

// AuthorizerConfig is the authorizer's configuration, read once at init.
type AuthorizerConfig struct {
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
}

// AuthorizerConfigFromEnv reads the authorizer's configuration: TABLE_NAME,
// and optionally ISSUER, AUTHORIZER_ROUTES, STORE_TIMEOUT, SIGNING_ALG and
// the token cache's bounds. It needs no secret: it verifies with the public
// keys only.
func AuthorizerConfigFromEnv(getenv func(string) string) (AuthorizerConfig, error) {
	cfg := AuthorizerConfig{TableName: getenv(EnvTableName), Issuer: getenv(EnvIssuer)}
	if strings.TrimSpace(cfg.TableName) == "" {
		return AuthorizerConfig{}, errors.New("missing environment variables: " + EnvTableName)
	}
	if cfg.Issuer != "" {
		if err := account.CheckIssuer(cfg.Issuer); err != nil {
			return AuthorizerConfig{}, fmt.Errorf("%s: %w", EnvIssuer, err)
		}
	}
	routes, err := authorizer.ParseRoutes(getenv(EnvAuthorizerRoutes))
	if err != nil {
		return AuthorizerConfig{}, fmt.Errorf("%s: %w", EnvAuthorizerRoutes, err)
	}
	cfg.Routes = routes
	if cfg.SigningAlgorithm, err = token.ParseAlgorithm(getenv(EnvSigningAlg)); err != nil {
		return AuthorizerConfig{}, fmt.Errorf("%s: %w", EnvSigningAlg, err)
	}
	if cfg.StoreTimeout, err = dynamostore.ParseTimeout(getenv(EnvStoreTimeout)); err != nil {
		return AuthorizerConfig{}, fmt.Errorf("%s: %w", EnvStoreTimeout, err)
	}
	if cfg.TokenCache, err = token.CacheOptionsFromEnv(getenv); err != nil {
		return AuthorizerConfig{}, err
	}
	return cfg, nil
}

// AuthorizerDeps are what the authorizer reads: token statuses and the
// published keys, both from the table (dynamostore.Store is both).
type AuthorizerDeps struct {
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

// NewAuthorizer reads the published keys and returns the authorizer's
// handler. The keys are refreshed on the request path, as in the other
// functions, since a Lambda's background goroutines are frozen between
// invocations.
func NewAuthorizer(ctx context.Context, cfg AuthorizerConfig, deps AuthorizerDeps) (AuthorizerHandler, error) {
	if deps.Store == nil || deps.Keys == nil {
		return nil, errors.New("lambdaapp: Store and Keys are required")
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
	az := authorizer.New(account.NewTokenVerifier(deps.Store, keys, deps.Now), cfg.Routes, deps.Logger)
	return func(ctx context.Context, req events.APIGatewayV2CustomAuthorizerV2Request) (events.APIGatewayV2CustomAuthorizerSimpleResponse, error) {
		keys.RefreshIfStale(ctx)
		return az.Authorize(ctx, req)
	}, nil
}

// AuthorizerFromEnv builds the authorizer from its environment, as Main
// builds the other functions.
func AuthorizerFromEnv(ctx context.Context, getenv func(string) string, logger *slog.Logger) (AuthorizerHandler, error) {
	cfg, err := AuthorizerConfigFromEnv(getenv)
	if err != nil {
		return nil, err
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
	store := dynamostore.New(db, cfg.TableName, dynamostore.WithTimeout(cfg.StoreTimeout))
	return NewAuthorizer(ctx, cfg, AuthorizerDeps{Store: store, Keys: store, Logger: logger})
}

// MainAuthorizer is the whole of the authorizer's main, as Main is of the
// other functions': init once, one JSON log line and exit status 1 if it
// fails.
func MainAuthorizer() {
	logger := NewLogger(os.Stdout, AuthorizerName)
	slog.SetDefault(logger)
	ctx, cancel := context.WithTimeout(context.Background(), initTimeout)
	h, err := AuthorizerFromEnv(ctx, os.Getenv, logger)
	cancel()
	if err != nil {
		logger.Error("init failed: " + err.Error())
		os.Exit(1)
	}
	lambda.Start(h)
}

package lambdaapp

import (
	"fmt"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"latchkey/pkg/dynamostore"
	"latchkey/pkg/lambdaapp/copygrowth"
	"latchkey/pkg/lambdaapp/lambdaenv"
)

// FromEnv reads fn's configuration with getenv (os.Getenv in main) and
// builds its clients: DynamoDB and the store over it, and Secrets Manager.
// Each main passes them to its constructor, NewSigning (auth) or
// NewVerifying (organizations, users). The verify function, which reads no
// secret, has VerifyFromEnv.
func FromEnv(fn Function, getenv func(string) string, logger *slog.Logger) (Config, Deps, error) {
	if !fn.ListsItems() {
		return Config{}, Deps{}, fmt.Errorf("lambdaapp: the %s function reads no secret; VerifyFromEnv builds it", fn)
	}
	cfg, awsCfg, deps, err := storeFromEnv(fn, getenv, logger)
	if err != nil {
		return Config{}, Deps{}, err
	}
	deps.Secrets = secretsmanager.NewFromConfig(awsCfg, func(o *secretsmanager.Options) {
		o.BaseEndpoint = lambdaenv.Endpoint(getenv, EnvSecretsManagerEndpoint)
	})
	return cfg, deps, nil
}

// VerifyFromEnv is FromEnv for the verify function: its configuration,
// and DynamoDB and the store over it, with no Secrets Manager client,
// which its role may not call and its binary does not link.
func VerifyFromEnv(getenv func(string) string, logger *slog.Logger) (Config, Deps, error) {
	cfg, _, deps, err := storeFromEnv(Verify, getenv, logger)
	return cfg, deps, err
}

func storeFromEnv(fn Function, getenv func(string) string, logger *slog.Logger) (Config, aws.Config, Deps, error) {
	cfg, err := ConfigFromEnv(fn, getenv)
	if err != nil {
		return Config{}, aws.Config{}, Deps{}, err
	}
	awsCfg, err := lambdaenv.AWSConfig(getenv)
	if err != nil {
		return Config{}, aws.Config{}, Deps{}, err
	}
	db := dynamodb.NewFromConfig(awsCfg, func(o *dynamodb.Options) {
		o.BaseEndpoint = lambdaenv.Endpoint(getenv, EnvDynamoDBEndpoint)
	})
	opts := []dynamostore.Option{dynamostore.WithTimeout(cfg.StoreTimeout)}
	if fn != Auth {
		// Only the auth function's role may write a key's copies: the
		// verify URL asks it to grow a busy key's (AUTH_ALIAS_ARN).
		opts = append(opts, copygrowth.StoreOption(awsCfg, getenv, logger))
	}
	store := dynamostore.New(db, cfg.TableName, opts...)
	return cfg, awsCfg, Deps{Store: store, Keys: store, Logger: logger}, nil
}

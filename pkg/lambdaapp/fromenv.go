package lambdaapp

import (
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"latchkey/pkg/dynamostore"
	"latchkey/pkg/lambdaapp/lambdaenv"
)

// FromEnv reads fn's configuration with getenv (os.Getenv in main) and
// builds its clients: DynamoDB and the store over it, and Secrets Manager.
// Each main passes them to its constructor, NewSigning (auth) or
// NewVerifying (organizations, users).
func FromEnv(fn Function, getenv func(string) string, logger *slog.Logger) (Config, Deps, error) {
	cfg, err := ConfigFromEnv(fn, getenv)
	if err != nil {
		return Config{}, Deps{}, err
	}
	awsCfg, err := lambdaenv.AWSConfig(getenv)
	if err != nil {
		return Config{}, Deps{}, err
	}
	db := dynamodb.NewFromConfig(awsCfg, func(o *dynamodb.Options) {
		o.BaseEndpoint = lambdaenv.Endpoint(getenv, EnvDynamoDBEndpoint)
	})
	sm := secretsmanager.NewFromConfig(awsCfg, func(o *secretsmanager.Options) {
		o.BaseEndpoint = lambdaenv.Endpoint(getenv, EnvSecretsManagerEndpoint)
	})
	store := dynamostore.New(db, cfg.TableName, dynamostore.WithTimeout(cfg.StoreTimeout))
	return cfg, Deps{Store: store, Keys: store, Secrets: sm, Logger: logger}, nil
}

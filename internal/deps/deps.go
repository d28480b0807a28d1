// Package deps pins the modules the project is being built with while
// several packages are written at once. It is removed once they all import
// what they need.
package deps

import (
	_ "github.com/aws/aws-lambda-go/lambda"
	_ "github.com/aws/aws-sdk-go-v2/config"
	_ "github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	_ "github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	_ "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	_ "github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	_ "github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"
	_ "github.com/getkin/kin-openapi/openapi3filter"
	_ "github.com/golang-jwt/jwt/v5"
	_ "go.etcd.io/bbolt"
	_ "golang.org/x/sync/errgroup"
	_ "gopkg.in/yaml.v3"
)

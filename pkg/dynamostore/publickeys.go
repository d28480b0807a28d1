package dynamostore

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"latchkey/pkg/account"
)

// publicKeysItem is the JWKS item as PutPublicKeys writes it: with the
// version of the signing secret it was derived from.
type publicKeysItem struct {
	jwksItem
	// Version is the creation time of that secret version, in Unix
	// milliseconds: Secrets Manager's precision, and a number, so that the
	// condition can compare it.
	Version int64 `dynamodbav:"version"`
}

// PutPublicKeys stores the JSON Web Key Set of the token signing keys, so
// that the functions that only verify tokens get the public keys from the
// table and never need access to the private key. version is the creation
// time of the signing secret version the set was derived from; the set is
// written only if the stored one is from the same or an older version (or
// there is none), so that an auth instance that read the secret just before
// a rotation cannot put the old keys back over the new ones. Keeping a
// newer set is not an error.
func (s *Store) PutPublicKeys(ctx context.Context, jwks []byte, version time.Time) error {
	v := version.UnixMilli()
	av, err := attributevalue.MarshalMap(publicKeysItem{jwksItem: jwksItem{key: jwksKey(), JWKS: jwks}, Version: v})
	if err != nil {
		return account.Internal(err)
	}
	// An item written before versions were recorded has none: replace it.
	cond := expression.Or(
		expression.AttributeNotExists(expression.Name("version")),
		expression.Name("version").LessThanEqual(expression.Value(v)),
	)
	expr, err := expression.NewBuilder().WithCondition(cond).Build()
	if err != nil {
		return account.Internal(err)
	}
	_, err = s.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                 s.table,
		Item:                      av,
		ConditionExpression:       expr.Condition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
	})
	if _, newer := conditionFailed(err); newer {
		return nil
	}
	return storeErr(err)
}

// PublicKeys returns the JSON Web Key Set stored by PutPublicKeys, read
// strongly consistently so that a rotation is seen at once. CodeNotFound
// when none has been stored.
func (s *Store) PublicKeys(ctx context.Context) ([]byte, error) {
	var it jwksItem
	found, err := s.getItem(ctx, jwksKey(), &it)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, notFound("public signing keys")
	}
	return it.JWKS, nil
}

package dynamostore

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"latchkey/pkg/account"
)

// PutPublicKeys stores the JSON Web Key Set of the token signing keys, so
// that the functions that only verify tokens get the public keys from the
// table and never need access to the private key.
func (s *Store) PutPublicKeys(ctx context.Context, jwks []byte) error {
	av, err := attributevalue.MarshalMap(jwksItem{key: jwksKey(), JWKS: jwks})
	if err != nil {
		return account.Internal(err)
	}
	_, err = s.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: s.table, Item: av})
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

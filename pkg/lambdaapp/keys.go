package lambdaapp

import (
	"context"
	"time"

	"latchkey/pkg/token"
)

// PublicKeyStore holds the JSON Web Key Set that the auth function publishes
// for the others: the only way the organizations and users functions learn
// the public key, since they may not read the signing secret. They read it
// through a token.KeySet. dynamostore.Store implements it.
type PublicKeyStore interface {
	// PutPublicKeys replaces the published key set, unless that was
	// derived from a newer signing secret version than version (the
	// version's creation time): publication is monotonic, so that an auth
	// instance that read the secret just before a rotation cannot put the
	// old keys back, which would make the other functions refuse the new
	// tokens until their next refresh. Keeping the newer set is not an error.
	PutPublicKeys(ctx context.Context, jwks []byte, version time.Time) error
	// PublicKeys returns the published key set; account.CodeNotFound before
	// the auth function has ever started.
	token.KeySource
}

package lambdaapp

import (
	"context"
	"time"

	"latchkey/pkg/token"
)

// PublicKeyStore holds what the auth function publishes for the others:
// the JSON Web Key Set of its public keys, the only way the organizations
// and users functions learn them, since they may not read the signing
// secret, and the issuer identifier the deployment recorded. Every function
// reads both through a token.KeySet. tablestore.Store implements it.
type PublicKeyStore interface {
	// PutPublicKeys replaces the published key set, unless that was
	// derived from a newer signing secret version than version (the
	// version's creation time): publication is monotonic, so that an auth
	// instance that read the secret just before a rotation cannot put the
	// old keys back, which would make the other functions refuse the new
	// tokens until their next refresh. Keeping the newer set is not an error.
	PutPublicKeys(ctx context.Context, jwks []byte, version time.Time) error
	// PutIssuer records the issuer identifier (the template's IssuerConfig
	// custom resource, at deploy time), beside the key set.
	PutIssuer(ctx context.Context, issuer string) error
	// Published returns the key set and the issuer; account.CodeNotFound
	// before either was ever published.
	token.KeySource
}

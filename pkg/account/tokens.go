package account

import (
	"context"
	"errors"
	"time"
)

// TokenClaims is what a signed access token asserts.
type TokenClaims struct {
	ID    string // tok_…, the JWT's jti
	KeyID string // key_…, the JWT's sub: the API key the token was issued for
	// KeyAncestors are the key's Ancestors as they were at issuance (they
	// never change), so that a verify can read them in the same round trip
	// as the key. A hint only: the store checks the key's own list.
	KeyAncestors []string
	Scopes       []string
	IssuedAt     time.Time
	ExpiresAt    time.Time
}

// Errors of TokenParser.Parse.
var (
	// ErrTokenInvalid: not a token, tampered with, signed by an unknown key
	// or with an algorithm other than the pinned one, or breaking a rule of
	// JWT (a crit header, a time claim that is not a number, an nbf or iat
	// in the future).
	ErrTokenInvalid = errors.New("token invalid")
	// ErrTokenExpired: well signed, but past its expiry. Parse returns the
	// claims along with it.
	ErrTokenExpired = errors.New("token expired")
)

// TokenSigner signs access tokens. Only the function that issues tokens
// holds one, because only it may read the private key.
type TokenSigner interface {
	Sign(c TokenClaims) (string, error)
}

// TokenParser checks the signature of access tokens with public keys only.
type TokenParser interface {
	// Parse verifies token at now, the service's clock, and returns its claims. ErrTokenInvalid,
	// or ErrTokenExpired together with the claims. ctx is the request's: a
	// parser that has to fetch keys (for a kid it does not know yet) does so,
	// and logs, with the request's values, such as its id.
	Parse(ctx context.Context, token string, now time.Time) (TokenClaims, error)
}

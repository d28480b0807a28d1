// Package token signs and verifies Latchkey's access tokens: JWTs signed
// with Ed25519 (JWS alg "EdDSA"). Verification accepts that one algorithm
// and keys it knows by kid, and nothing else: no "none", no HMAC, no RSA.
//
// It wraps github.com/golang-jwt/jwt/v5, a well-kept library that verifies
// the signature before it looks at any claim, so an expired-but-forged
// token is reported invalid, never expired.
package token

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"latchkey/pkg/account"
)

// algorithm is the only JWS algorithm Latchkey signs with or accepts.
const algorithm = "EdDSA"

// claims is the JWT payload. scope is space-separated, as in OAuth 2.0 (RFC 8693).
type claims struct {
	Scope string `json:"scope"`
	jwt.RegisteredClaims
}

// KeyID returns the RFC 7638 JWK thumbprint of an Ed25519 public key: a kid
// that any party can recompute from the key itself.
func KeyID(pub ed25519.PublicKey) string {
	// Members in lexicographic order, no whitespace, as RFC 7638 requires.
	canonical := fmt.Sprintf(`{"crv":"Ed25519","kty":"OKP","x":"%s"}`, base64.RawURLEncoding.EncodeToString(pub))
	sum := sha256.Sum256([]byte(canonical))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// Signer issues access tokens with one private key.
type Signer struct {
	key    ed25519.PrivateKey
	kid    string
	issuer string
}

var _ account.TokenSigner = (*Signer)(nil)

// NewSigner returns a Signer for priv, naming issuer in the iss claim.
func NewSigner(priv ed25519.PrivateKey, issuer string) *Signer {
	return &Signer{key: priv, kid: KeyID(priv.Public().(ed25519.PublicKey)), issuer: issuer}
}

// KeyID returns the kid of the signing key.
func (s *Signer) KeyID() string { return s.kid }

// PublicKey returns the public half of the signing key.
func (s *Signer) PublicKey() ed25519.PublicKey { return s.key.Public().(ed25519.PublicKey) }

// Sign returns the compact JWS of c.
func (s *Signer) Sign(c account.TokenClaims) (string, error) {
	t := jwt.NewWithClaims(jwt.SigningMethodEdDSA, claims{
		Scope: strings.Join(c.Scopes, " "),
		RegisteredClaims: jwt.RegisteredClaims{
			ID:        c.ID,
			Subject:   c.KeyID,
			Issuer:    s.issuer,
			IssuedAt:  jwt.NewNumericDate(c.IssuedAt),
			ExpiresAt: jwt.NewNumericDate(c.ExpiresAt),
		},
	})
	t.Header["kid"] = s.kid
	return t.SignedString(s.key)
}

// Parser verifies access tokens against a set of public keys, so that a
// process can check tokens without holding the private key, and keys can
// be rotated by publishing the new one beside the old.
type Parser struct {
	keys   map[string]ed25519.PublicKey
	issuer string
}

var _ account.TokenParser = (*Parser)(nil)

// NewParser returns a Parser that accepts tokens from issuer signed by any of keys.
func NewParser(issuer string, keys ...ed25519.PublicKey) *Parser {
	p := &Parser{keys: make(map[string]ed25519.PublicKey, len(keys)), issuer: issuer}
	for _, k := range keys {
		p.keys[KeyID(k)] = k
	}
	return p
}

// Parse verifies token at now. It returns account.ErrTokenInvalid, or
// account.ErrTokenExpired together with the claims of a well-signed token
// whose expiry has passed. Its keys are fixed, so it never uses ctx.
func (p *Parser) Parse(_ context.Context, token string, now time.Time) (account.TokenClaims, error) {
	var c claims
	// The library checks the algorithm and the signature; the claims are
	// checked below, each on its own, so that only a token that is wrong in
	// nothing but its expiry is reported expired.
	// Strict base64: a token has exactly one encoding, so flipping the unused
	// bits of its last character does not yield a second valid string.
	parser := jwt.NewParser(jwt.WithValidMethods([]string{algorithm}), jwt.WithoutClaimsValidation(), jwt.WithStrictDecoding())
	if _, err := parser.ParseWithClaims(token, &c, p.key); err != nil {
		return account.TokenClaims{}, account.ErrTokenInvalid
	}
	if c.Issuer != p.issuer || c.IssuedAt == nil || c.ExpiresAt == nil ||
		!account.ValidID(account.PrefixToken, c.ID) || !account.ValidID(account.PrefixAPIKey, c.Subject) {
		return account.TokenClaims{}, account.ErrTokenInvalid
	}
	tc := account.TokenClaims{
		ID:        c.ID,
		KeyID:     c.Subject,
		Scopes:    strings.Fields(c.Scope),
		IssuedAt:  c.IssuedAt.UTC(),
		ExpiresAt: c.ExpiresAt.UTC(),
	}
	if !now.Before(tc.ExpiresAt) {
		return tc, account.ErrTokenExpired
	}
	return tc, nil
}

// key is the jwt.Keyfunc: the public key named by the token's kid.
func (p *Parser) key(t *jwt.Token) (any, error) {
	kid, _ := t.Header["kid"].(string)
	if k, ok := p.keys[kid]; ok {
		return k, nil
	}
	return nil, errors.New("unknown kid")
}

// jwk is one JSON Web Key (RFC 8037 for OKP/Ed25519).
type jwk struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Kid string `json:"kid"`
	Alg string `json:"alg"`
	Use string `json:"use"`
}

// JWKS returns the JSON Web Key Set of keys, as served at /v1/auth/jwks.
func JWKS(keys ...ed25519.PublicKey) []byte {
	set := struct {
		Keys []jwk `json:"keys"`
	}{Keys: make([]jwk, 0, len(keys))}
	for _, k := range keys {
		set.Keys = append(set.Keys, jwk{
			Kty: "OKP", Crv: "Ed25519", X: base64.RawURLEncoding.EncodeToString(k),
			Kid: KeyID(k), Alg: algorithm, Use: "sig",
		})
	}
	b, _ := json.Marshal(set) // plain strings: cannot fail
	return b
}

// ParserFromJWKS returns a Parser for the Ed25519 keys of a JSON Web Key Set.
// Keys of any other type are refused rather than skipped, so a tampered set
// cannot slip in an algorithm Latchkey does not accept.
func ParserFromJWKS(issuer string, set []byte) (*Parser, error) {
	var s struct {
		Keys []jwk `json:"keys"`
	}
	if err := json.Unmarshal(set, &s); err != nil {
		return nil, fmt.Errorf("token: decode JWKS: %w", err)
	}
	if len(s.Keys) == 0 {
		return nil, errors.New("token: JWKS has no keys")
	}
	keys := make([]ed25519.PublicKey, 0, len(s.Keys))
	for _, k := range s.Keys {
		x, err := base64.RawURLEncoding.DecodeString(k.X)
		if k.Kty != "OKP" || k.Crv != "Ed25519" || err != nil || len(x) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("token: JWKS key %q is not an Ed25519 public key", k.Kid)
		}
		if k.Kid != KeyID(x) {
			return nil, fmt.Errorf("token: JWKS key %q does not match its thumbprint", k.Kid)
		}
		keys = append(keys, x)
	}
	return NewParser(issuer, keys...), nil
}

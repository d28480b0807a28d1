package token

import (
	"crypto"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"math/big"

	"github.com/golang-jwt/jwt/v5"
)

// Algorithm is the one JWS algorithm a deployment signs and verifies with.
// It is configuration (SIGNING_ALG, the template's SigningAlgorithm), never
// read from a token: a Parser accepts its own algorithm only, whatever a
// token's header names.
type Algorithm string

// The algorithms Latchkey can be configured with.
const (
	// EdDSA (Ed25519, RFC 8037) is the default: small tokens, fast signing.
	EdDSA Algorithm = "EdDSA"
	// RS256 (RSASSA-PKCS1-v1_5 with SHA-256, RFC 7518 section 3.3) is for
	// deployments whose gateway accepts only RSA, as API Gateway's built-in
	// JWT authorizer does.
	RS256 Algorithm = "RS256"
)

// RSAKeyBits is the size of the RSA keys Latchkey generates. 2048 bits is
// the size RFC 7518 (section 3.3) requires at least and NIST SP 800-57
// accepts through 2030 (112-bit security); 3072 would cost about three
// times as much per signature on every token issued, for keys that are
// rotated, and whose tokens live an hour at most.
const RSAKeyBits = 2048

// MinRSAKeyBits is the smallest RSA public key a Parser accepts from a
// JSON Web Key Set (RFC 7518, section 3.3).
const MinRSAKeyBits = 2048

// MaxRSAKeyBits is the largest RSA key a Parser accepts from a JSON Web
// Key Set, and the largest signing key a deployment may configure
// (secrets.RSASigningKey): its 512-byte signature keeps the longest token
// the limits allow within MaxTokenBytes (TestSigner_Longest), which a
// larger key's would not, so that Latchkey never fails to issue a token
// its limits allow.
const MaxRSAKeyBits = 4096

// ParseAlgorithm reads a configured algorithm: "EdDSA" or "RS256", exactly;
// empty is EdDSA, the default.
func ParseAlgorithm(s string) (Algorithm, error) {
	switch Algorithm(s) {
	case "", EdDSA:
		return EdDSA, nil
	case RS256:
		return RS256, nil
	}
	return "", fmt.Errorf("token: unknown signing algorithm %q (want %s or %s)", s, EdDSA, RS256)
}

// method is the library's implementation of the algorithm.
func (a Algorithm) method() jwt.SigningMethod {
	if a == RS256 {
		return jwt.SigningMethodRS256
	}
	return jwt.SigningMethodEdDSA
}

// AlgorithmOf returns the algorithm a key signs or verifies with: EdDSA
// for Ed25519 keys, RS256 for RSA keys, and false for any other.
func AlgorithmOf(key any) (Algorithm, bool) {
	switch key.(type) {
	case ed25519.PublicKey, ed25519.PrivateKey:
		return EdDSA, true
	case *rsa.PublicKey, *rsa.PrivateKey:
		return RS256, true
	}
	return "", false
}

// KeyID returns the RFC 7638 JWK thumbprint of a public key (Ed25519 or
// RSA): a kid that any party can recompute from the key itself. It panics
// on a key of another type, which Latchkey never makes.
func KeyID(pub crypto.PublicKey) string {
	// Required members in lexicographic order, no whitespace, as RFC 7638 requires.
	var canonical string
	switch k := pub.(type) {
	case ed25519.PublicKey:
		canonical = fmt.Sprintf(`{"crv":"Ed25519","kty":"OKP","x":"%s"}`, b64(k))
	case *rsa.PublicKey:
		canonical = fmt.Sprintf(`{"e":"%s","kty":"RSA","n":"%s"}`, b64(big.NewInt(int64(k.E)).Bytes()), b64(k.N.Bytes()))
	default:
		panic(fmt.Sprintf("token: KeyID of a %T", pub))
	}
	sum := sha256.Sum256([]byte(canonical))
	return b64(sum[:])
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// toJWK returns the JSON Web Key of a public key: RFC 8037 for Ed25519,
// RFC 7518 section 6.3 for RSA.
func toJWK(pub crypto.PublicKey) jwk {
	alg, ok := AlgorithmOf(pub)
	if !ok {
		panic(fmt.Sprintf("token: JWKS of a %T", pub))
	}
	k := jwk{Kid: KeyID(pub), Alg: string(alg), Use: "sig"}
	switch p := pub.(type) {
	case ed25519.PublicKey:
		k.Kty, k.Crv, k.X = "OKP", "Ed25519", b64(p)
	case *rsa.PublicKey:
		k.Kty, k.N, k.E = "RSA", b64(p.N.Bytes()), b64(big.NewInt(int64(p.E)).Bytes())
	}
	return k
}

// publicKey decodes k, an Ed25519 or RSA public key, and returns it with
// its algorithm. A key of another type, a malformed one, an RSA key of
// fewer than MinRSAKeyBits or more than MaxRSAKeyBits, one that names an alg other than its type's,
// or one whose kid is not its thumbprint, is an error.
func (k jwk) publicKey() (crypto.PublicKey, Algorithm, error) {
	var pub crypto.PublicKey
	switch {
	case k.Kty == "OKP" && k.Crv == "Ed25519":
		x, err := base64.RawURLEncoding.DecodeString(k.X)
		if err != nil || len(x) != ed25519.PublicKeySize {
			return nil, "", fmt.Errorf("token: JWKS key %q is not an Ed25519 public key", k.Kid)
		}
		pub = ed25519.PublicKey(x)
	case k.Kty == "RSA":
		n, nerr := base64.RawURLEncoding.DecodeString(k.N)
		e, eerr := base64.RawURLEncoding.DecodeString(k.E)
		if nerr != nil || eerr != nil || len(n) == 0 || n[0] == 0 || len(e) == 0 || len(e) > 4 || e[0] == 0 {
			return nil, "", fmt.Errorf("token: JWKS key %q is not an RSA public key", k.Kid)
		}
		r := &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
		if r.N.BitLen() < MinRSAKeyBits || r.N.BitLen() > MaxRSAKeyBits || r.E < 3 || r.E%2 == 0 {
			return nil, "", fmt.Errorf("token: JWKS key %q is not an RSA public key of %d to %d bits", k.Kid, MinRSAKeyBits, MaxRSAKeyBits)
		}
		pub = r
	default:
		return nil, "", fmt.Errorf("token: JWKS key %q is neither an Ed25519 nor an RSA public key", k.Kid)
	}
	alg, _ := AlgorithmOf(pub)
	if k.Alg != "" && k.Alg != string(alg) {
		return nil, "", fmt.Errorf("token: JWKS key %q names alg %q, not %s", k.Kid, k.Alg, alg)
	}
	if k.Kid != KeyID(pub) {
		return nil, "", fmt.Errorf("token: JWKS key %q does not match its thumbprint", k.Kid)
	}
	return pub, alg, nil
}

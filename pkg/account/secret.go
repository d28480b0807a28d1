package account

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"strings"
)

// APIKeyPrefix starts every generated API key secret, so that a leaked key is
// recognisable (and greppable by secret scanners).
const APIKeyPrefix = "lk_"

var keyEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// NewAPIKeySecret returns a new secret: the prefix and 32 random bytes.
func NewAPIKeySecret() string {
	b := make([]byte, 32)
	rand.Read(b) // never fails (crypto/rand documents it)
	return APIKeyPrefix + strings.ToLower(keyEncoding.EncodeToString(b))
}

// HashAPIKey returns the SHA-256 of a secret: the only form ever stored.
func HashAPIKey(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}

func last4(secret string) string { return secret[len(secret)-4:] }

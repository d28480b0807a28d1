package verifier

import (
	"context"
	"crypto"
	"sync"
	"time"
)

// maxCachedTokens bounds the verified-token cache: 10,000 entries of a few
// hundred bytes each.
const maxCachedTokens = 10_000

// tokenCache remembers the tokens whose signature and claims have been
// checked, by the SHA-256 of the token, so that a token seen again costs a
// hash and a map read instead of a signature check. An entry is honoured
// only while the key set still holds the key that verified it, and its
// exp is checked again each time; the status is always checked.
type tokenCache struct {
	mu sync.RWMutex
	m  map[[32]byte]*verified
}

type verified struct {
	claims Claims
	kid    string
	key    crypto.PublicKey
}

// get returns the claims of a token verified before, if the key that
// verified it is still published: a copy, so that a caller changing it
// does not change the cache.
func (c *tokenCache) get(ctx context.Context, k *keySet, sum [32]byte) (*Claims, bool) {
	c.mu.RLock()
	e := c.m[sum]
	c.mu.RUnlock()
	if e == nil {
		return nil, false
	}
	st, err := k.current(ctx)
	if err != nil {
		return nil, false
	}
	pk, ok := st.keys[e.kid]
	if !ok || !e.key.(interface{ Equal(crypto.PublicKey) bool }).Equal(pk.key) {
		return nil, false
	}
	claims := e.claims
	return &claims, true
}

// put remembers a verified token. When the cache is full, the entries of
// expired tokens go first, then arbitrary ones.
func (c *tokenCache) put(sum [32]byte, claims *Claims, kid string, key crypto.PublicKey, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[[32]byte]*verified{}
	}
	if len(c.m) >= maxCachedTokens {
		for s, e := range c.m {
			if !now.Before(e.claims.ExpiresAt) {
				delete(c.m, s)
			}
		}
		for s := range c.m {
			if len(c.m) < maxCachedTokens*9/10 {
				break
			}
			delete(c.m, s)
		}
	}
	c.m[sum] = &verified{claims: *claims, kid: kid, key: key}
}

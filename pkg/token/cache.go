package token

import (
	"container/heap"
	"crypto"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"latchkey/pkg/account"
)

// Default bounds of a Cache. An entry takes about 450 bytes with a handful
// of scopes (entryOverhead plus the claims' strings), and the token itself,
// some 500 bytes more, so 16 MiB holds about 16,000 tokens: the byte bound
// binds before the count unless tokens are short. 16 MiB is 6% of a
// 256 MB Lambda, whose cold start and first request peak at about 22 MiB.
const (
	DefaultCacheEntries = 32 << 10
	DefaultCacheBytes   = 16 << 20
)

// entryOverhead is what an entry costs besides its strings: the entry
// itself (key header, claims headers and times, bookkeeping), its slot in
// the map and its slot in the expiry heap, rounded up.
const entryOverhead = 320

// CacheOptions bound a Cache. Zero fields take the defaults.
type CacheOptions struct {
	// MaxEntries is the most tokens remembered; DefaultCacheEntries when zero.
	MaxEntries int
	// MaxBytes bounds the memory the entries take, as estimated by the
	// cache (entryOverhead and the claims' strings per entry);
	// DefaultCacheBytes when zero.
	MaxBytes int64
}

// Environment variables that bound a process's Cache (see
// CacheOptionsFromEnv), read by the local server and by each Lambda function.
const (
	EnvCacheMaxEntries = "TOKEN_CACHE_MAX_ENTRIES"
	EnvCacheMaxBytes   = "TOKEN_CACHE_MAX_BYTES"
)

// CacheOptionsFromEnv reads a Cache's bounds with getenv (os.Getenv in a
// main): EnvCacheMaxEntries and EnvCacheMaxBytes, positive integers, the
// defaults when unset. Anything else is an error naming the variable, for
// the process to refuse to start with.
func CacheOptionsFromEnv(getenv func(string) string) (CacheOptions, error) {
	var opts CacheOptions
	for _, v := range []struct {
		name string
		set  func(n int64)
	}{
		{EnvCacheMaxEntries, func(n int64) { opts.MaxEntries = int(n) }},
		{EnvCacheMaxBytes, func(n int64) { opts.MaxBytes = n }},
	} {
		s := getenv(v.name)
		if s == "" {
			continue
		}
		n, err := strconv.ParseInt(s, 10, 32)
		if err != nil || n <= 0 {
			return CacheOptions{}, fmt.Errorf("%s must be a positive integer below 2^31, not %q", v.name, s)
		}
		v.set(n)
	}
	return opts, nil
}

// Cache remembers the tokens whose signature and claims a Parser has
// verified, keyed by the whole token, so that the same bytes presented
// again are not verified again until they expire. The token itself is the
// key, not a digest of it: the map compares it in full on a hit, and its
// hash costs a few dozen instructions where the SHA-256 of a token cost
// some 18,000, 14% of a warm verify of the local server. It remembers
// only successes, so a forged token costs a signature check every time,
// never a cache slot.
//
// An entry keeps the exact public key that verified the token, and a hit is
// honoured only while the parser that looks it up still holds that key
// under the same kid, and accepts the token's issuer: a key retired from
// the set (a rotation that drops the previous key, a KeySet reloaded
// without it) or an issuer changed stops the token at once, as a full
// check would. An entry is never used at or after the token's exp,
// nor at a time before the one at which it was verified (a clock set back),
// because the checks a Parser makes on time (exp, and any rule on iat or
// nbf) hold at every instant between those two.
//
// The cache says only that the signature and claims are good. Revocation
// and the issuing key are the service's to check on every request; the
// cache never answers "valid" on its own.
//
// Memory is bounded by MaxEntries and MaxBytes: an insert beyond either
// evicts the entries that expire soonest. Expired entries are dropped when
// they are looked up, and by the next insert. Safe for concurrent use; one
// Cache may serve several Parsers (successive key sets of one process).
type Cache struct {
	maxEntries int
	maxBytes   int64

	mu      sync.RWMutex
	entries map[string]*cacheEntry
	expiry  expiryHeap
	bytes   int64
}

type cacheEntry struct {
	token      string
	kid        string
	key        crypto.PublicKey
	claims     account.TokenClaims
	verifiedAt time.Time
	size       int64
	index      int // in Cache.expiry
}

// NewCache returns an empty Cache with the given bounds.
func NewCache(opts CacheOptions) *Cache {
	if opts.MaxEntries <= 0 {
		opts.MaxEntries = DefaultCacheEntries
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultCacheBytes
	}
	return &Cache{maxEntries: opts.MaxEntries, maxBytes: opts.MaxBytes, entries: map[string]*cacheEntry{}}
}

// Len returns the number of tokens remembered, expired ones not yet dropped
// included.
func (c *Cache) Len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.entries)
}

// Bytes returns the estimated memory the entries take.
func (c *Cache) Bytes() int64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.bytes
}

// get returns the claims remembered for tok if they may be used at now by a
// parser that accepts issuer and holds keys, by kid.
func (c *Cache) get(tok string, now time.Time, issuer string, keys map[string]crypto.PublicKey) (account.TokenClaims, bool) {
	c.mu.RLock()
	e, ok := c.entries[tok]
	c.mu.RUnlock()
	if !ok {
		return account.TokenClaims{}, false
	}
	if !now.Before(e.claims.ExpiresAt) {
		c.remove(e)
		return account.TokenClaims{}, false
	}
	if now.Before(e.verifiedAt) || e.claims.Issuer != issuer {
		return account.TokenClaims{}, false
	}
	if k, ok := keys[e.kid].(interface{ Equal(crypto.PublicKey) bool }); !ok || !k.Equal(e.key) {
		return account.TokenClaims{}, false
	}
	return e.claims, true
}

// put remembers that the token tok was verified at now by key, named kid,
// with claims tc. The claims are kept as they are and handed to
// every later caller, so they must not be changed: their slices are clipped
// so that an append by a caller copies them instead.
func (c *Cache) put(tok string, kid string, key crypto.PublicKey, tc account.TokenClaims, now time.Time) {
	tc.Scopes, tc.KeyAncestors = slices.Clip(tc.Scopes), slices.Clip(tc.KeyAncestors)
	// A copy: tok may be part of a larger string (a request's header or
	// body), which the cache would keep whole.
	tok = strings.Clone(tok)
	e := &cacheEntry{token: tok, kid: kid, key: key, claims: tc, verifiedAt: now}
	e.size = entryOverhead + int64(len(tok)+len(kid)+len(tc.ID)+len(tc.KeyID)+len(tc.Issuer)+len(tc.Audience)+len(tc.OrganizationID)+len(tc.OwnerID))
	for _, list := range [][]string{tc.Scopes, tc.KeyAncestors} {
		for _, s := range list {
			e.size += int64(16 + len(s)) // string header and bytes
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.entries[tok]; ok {
		c.removeLocked(old) // verified again, by another key set: keep the newer
	}
	// Drop what has expired, then what expires soonest while over a bound.
	for len(c.expiry) > 0 && !now.Before(c.expiry[0].claims.ExpiresAt) {
		c.removeLocked(c.expiry[0])
	}
	for len(c.expiry) > 0 && (len(c.entries)+1 > c.maxEntries || c.bytes+e.size > c.maxBytes) {
		c.removeLocked(c.expiry[0])
	}
	if e.size > c.maxBytes {
		return // larger than the whole cache: not remembered
	}
	c.entries[tok] = e
	heap.Push(&c.expiry, e)
	c.bytes += e.size
}

// remove drops e unless it has been replaced or dropped already.
func (c *Cache) remove(e *cacheEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries[e.token] == e {
		c.removeLocked(e)
	}
}

func (c *Cache) removeLocked(e *cacheEntry) {
	delete(c.entries, e.token)
	heap.Remove(&c.expiry, e.index)
	c.bytes -= e.size
}

// expiryHeap orders entries by expiry, soonest first.
type expiryHeap []*cacheEntry

func (h expiryHeap) Len() int { return len(h) }
func (h expiryHeap) Less(i, j int) bool {
	return h[i].claims.ExpiresAt.Before(h[j].claims.ExpiresAt)
}
func (h expiryHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *expiryHeap) Push(x any) {
	e := x.(*cacheEntry)
	e.index = len(*h)
	*h = append(*h, e)
}
func (h *expiryHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return e
}

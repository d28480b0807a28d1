package verifier

import (
	"context"
	"crypto/ed25519"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// maxDocumentBytes bounds what is read of a discovery document, a key set
// or a verify answer.
const maxDocumentBytes = 1 << 20

// keySet is the issuer's JSON Web Key Set, fetched when first needed,
// again after KeyRefreshInterval, and for an unknown kid at most once per
// KeyRefetchInterval.
type keySet struct {
	v       *Verifier
	jwksURL once[string]
	cur     atomic.Pointer[keyState]
	// mu serialises fetches; a token whose kid is known never waits on it.
	mu          sync.Mutex
	lastUnknown time.Time
	fetches     atomic.Int64 // for the tests: key set requests made
}

type keyState struct {
	keys      map[string]publicKey
	fetchedAt time.Time
}

type publicKey struct {
	alg string
	key any // ed25519.PublicKey or *rsa.PublicKey
}

// key is the jwt.Keyfunc: the key named by the token's kid, for the
// algorithm it names, which the parser has already checked is allowed.
func (k *keySet) key(ctx context.Context, t *jwt.Token) (any, error) {
	if _, ok := t.Header["crit"]; ok {
		// RFC 7515, section 4.1.11: an extension not understood must be
		// refused; Latchkey uses none.
		return nil, refuse(ReasonInvalid, "critical header extension", nil)
	}
	kid, _ := t.Header["kid"].(string)
	st, err := k.current(ctx)
	if err != nil {
		return nil, err
	}
	pk, ok := st.keys[kid]
	if !ok && k.mayRefetch() {
		err := k.fetch(ctx)
		k.mu.Unlock()
		if err != nil {
			return nil, refuse(ReasonUnavailable, "the key set cannot be fetched for an unknown kid", err)
		}
		pk, ok = k.cur.Load().keys[kid]
	}
	if !ok {
		return nil, refuse(ReasonInvalid, "unknown kid", nil)
	}
	if pk.alg != t.Method.Alg() {
		return nil, refuse(ReasonInvalid, "the key's algorithm is not the token's", nil)
	}
	return pk.key, nil
}

// current returns the key set, fetching it when there is none yet, and
// again when it is older than KeyRefreshInterval (a failure then keeps the
// set in use, and is tried again after KeyRefetchInterval).
func (k *keySet) current(ctx context.Context) (*keyState, error) {
	st := k.cur.Load()
	if st == nil {
		k.mu.Lock()
		defer k.mu.Unlock()
		if st = k.cur.Load(); st != nil {
			return st, nil
		}
		if err := k.fetch(ctx); err != nil {
			return nil, refuse(ReasonUnavailable, "the key set cannot be fetched", err)
		}
		return k.cur.Load(), nil
	}
	if k.v.now().Sub(st.fetchedAt) >= KeyRefreshInterval && k.mu.TryLock() {
		defer k.mu.Unlock()
		if err := k.fetch(ctx); err != nil {
			retry := *st
			retry.fetchedAt = k.v.now().Add(KeyRefetchInterval - KeyRefreshInterval)
			k.cur.Store(&retry)
		}
		return k.cur.Load(), nil
	}
	return st, nil
}

// mayRefetch takes mu (the caller unlocks) if a fetch for an unknown kid
// is due.
func (k *keySet) mayRefetch() bool {
	k.mu.Lock()
	if now := k.v.now(); now.Sub(k.lastUnknown) >= KeyRefetchInterval {
		k.lastUnknown = now
		return true
	}
	k.mu.Unlock()
	return false
}

// fetch reads the key set; the caller holds mu.
func (k *keySet) fetch(ctx context.Context) error {
	u, err := k.jwksURL.get(func() (string, error) { return k.v.discover(ctx) })
	if err != nil {
		return err
	}
	k.fetches.Add(1)
	var set struct {
		Keys []jwk `json:"keys"`
	}
	if err := k.v.getJSON(ctx, u, &set); err != nil {
		return err
	}
	st := &keyState{keys: map[string]publicKey{}, fetchedAt: k.v.now()}
	for _, j := range set.Keys {
		if pk, ok := j.publicKey(); ok {
			st.keys[j.Kid] = pk
		}
	}
	k.cur.Store(st)
	return nil
}

// discover returns the jwks_uri of the issuer's discovery document (RFC
// 8414), or Config.JWKSURL.
func (v *Verifier) discover(ctx context.Context) (string, error) {
	if v.cfg.JWKSURL != "" {
		return v.cfg.JWKSURL, nil
	}
	var meta struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	if err := v.getJSON(ctx, strings.TrimSuffix(v.cfg.Issuer, "/")+"/.well-known/oauth-authorization-server", &meta); err != nil {
		return "", err
	}
	// RFC 8414, section 3.3: the document must name the issuer it was
	// fetched for.
	if meta.Issuer != v.cfg.Issuer {
		return "", fmt.Errorf("the discovery document names the issuer %q, not %q", meta.Issuer, v.cfg.Issuer)
	}
	if u, err := url.Parse(meta.JWKSURI); err != nil || !u.IsAbs() {
		return "", fmt.Errorf("the discovery document's jwks_uri %q is not an absolute URL", meta.JWKSURI)
	}
	return meta.JWKSURI, nil
}

// getJSON GETs u and decodes its 200 answer into dst.
func (v *Verifier) getJSON(ctx context.Context, u string, dst any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	res, err := v.client.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", u, res.Status)
	}
	body, err := io.ReadAll(io.LimitReader(res.Body, maxDocumentBytes))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(body, dst); err != nil {
		return fmt.Errorf("GET %s: %w", u, err)
	}
	return nil
}

// jwk is one JSON Web Key: Ed25519 (RFC 8037) or RSA (RFC 7518, 6.3).
type jwk struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	N   string `json:"n"`
	E   string `json:"e"`
	Kid string `json:"kid"`
	Alg string `json:"alg"`
	Use string `json:"use"`
}

// publicKey decodes k; false for a key this package does not use: another
// type, another use, no kid, an RSA key under 2048 bits, an alg that is
// not its type's.
func (k jwk) publicKey() (publicKey, bool) {
	if k.Kid == "" || (k.Use != "" && k.Use != "sig") {
		return publicKey{}, false
	}
	dec := base64.RawURLEncoding
	switch {
	case k.Kty == "OKP" && k.Crv == "Ed25519" && (k.Alg == "" || k.Alg == "EdDSA"):
		x, err := dec.DecodeString(k.X)
		if err != nil || len(x) != ed25519.PublicKeySize {
			return publicKey{}, false
		}
		return publicKey{alg: "EdDSA", key: ed25519.PublicKey(x)}, true
	case k.Kty == "RSA" && (k.Alg == "" || k.Alg == "RS256"):
		n, nerr := dec.DecodeString(k.N)
		e, eerr := dec.DecodeString(k.E)
		if nerr != nil || eerr != nil || len(e) == 0 || len(e) > 4 {
			return publicKey{}, false
		}
		pub := &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
		if pub.N.BitLen() < 2048 || pub.E < 3 || pub.E%2 == 0 {
			return publicKey{}, false
		}
		return publicKey{alg: "RS256", key: pub}, true
	}
	return publicKey{}, false
}

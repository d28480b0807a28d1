package verifier_test

import (
	"bytes"
	"compress/zlib"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"latchkey.dev/verifier"
)

// The audience the tests' service protects itself for.
const audience = "https://orders.example.com"

// clock is a settable clock, shared by a test issuer and its verifiers.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// signingKey is a key the test issuer signs with.
type signingKey struct {
	kid  string
	alg  jwt.SigningMethod
	priv any
}

func newEd25519Key(t testing.TB, kid string) *signingKey {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return &signingKey{kid: kid, alg: jwt.SigningMethodEdDSA, priv: priv}
}

func newRSAKey(t testing.TB, kid string) *signingKey {
	t.Helper()
	priv, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return &signingKey{kid: kid, alg: jwt.SigningMethodRS256, priv: priv}
}

func (k *signingKey) jwk() map[string]string {
	b64 := base64.RawURLEncoding.EncodeToString
	switch p := k.priv.(type) {
	case ed25519.PrivateKey:
		return map[string]string{"kty": "OKP", "crv": "Ed25519", "x": b64(p.Public().(ed25519.PublicKey)), "kid": k.kid, "alg": "EdDSA", "use": "sig"}
	case *rsa.PrivateKey:
		return map[string]string{"kty": "RSA", "n": b64(p.N.Bytes()), "e": b64(big.NewInt(int64(p.E)).Bytes()), "kid": k.kid, "alg": "RS256", "use": "sig"}
	}
	panic("key type")
}

// sign returns the compact JWS of claims with header typ and the key's kid.
func (k *signingKey) sign(t testing.TB, typ string, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(k.alg, claims)
	tok.Header["kid"] = k.kid
	if typ != "" {
		tok.Header["typ"] = typ
	} else {
		delete(tok.Header, "typ")
	}
	s, err := tok.SignedString(k.priv)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// issuer is a test Latchkey: an httptest server that serves the discovery
// document, the key set, status lists (bits 2, with ETag and 304) and
// /v1/auth/verify, signing with real keys, and counts the requests it
// answers.
type issuer struct {
	t     testing.TB
	srv   *httptest.Server
	clock *clock

	mu       sync.Mutex
	signer   *signingKey
	keys     []*signingKey       // published
	statuses map[string][]byte   // list path -> status per index
	revoked  map[string]string   // token id -> verify's reason
	hits     map[string]int      // path -> requests
	conds    map[string][]string // path -> If-None-Match headers received
	down     bool                // every answer is 503
	ttl      any                 // the lists' ttl claim; nil: none
	// listToken, when set, changes a list token's header and claims
	// before it is signed.
	listToken func(header map[string]any, claims jwt.MapClaims)
	// listSigner, when set, signs the lists instead of signer.
	listSigner *signingKey
	discovered string // the issuer the discovery document names; "" its own
}

func newIssuer(t testing.TB) *issuer {
	t.Helper()
	is := &issuer{t: t, clock: &clock{t: time.Unix(1_800_000_000, 0)}, signer: newEd25519Key(t, "k1"),
		statuses: map[string][]byte{"/statuslists/1": make([]byte, 64)}, revoked: map[string]string{},
		hits: map[string]int{}, conds: map[string][]string{}, ttl: 10}
	is.keys = []*signingKey{is.signer}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", is.discovery)
	mux.HandleFunc("GET /v1/auth/jwks", is.jwks)
	mux.HandleFunc("GET /statuslists/{n}", is.statusList)
	mux.HandleFunc("GET /v1/auth/verify", is.verify)
	is.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		is.mu.Lock()
		is.hits[r.URL.Path]++
		down := is.down
		is.mu.Unlock()
		if down {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(is.srv.Close)
	return is
}

func (is *issuer) url() string { return is.srv.URL }

func (is *issuer) listURI(n int) string { return fmt.Sprintf("%s/statuslists/%d", is.srv.URL, n) }

// verifier returns a Verifier of the issuer's tokens for audience, on the
// issuer's clock, with cfg's other fields.
func (is *issuer) verifier(cfg verifier.Config) *verifier.Verifier {
	is.t.Helper()
	cfg.Issuer, cfg.Now = is.url(), is.clock.Now
	if cfg.Audience == "" {
		cfg.Audience = audience
	}
	v, err := verifier.New(cfg)
	if err != nil {
		is.t.Fatal(err)
	}
	return v
}

// requests returns how many requests the issuer has answered, all paths.
func (is *issuer) requests() int {
	is.mu.Lock()
	defer is.mu.Unlock()
	n := 0
	for _, c := range is.hits {
		n += c
	}
	return n
}

func (is *issuer) hitsOf(path string) int {
	is.mu.Lock()
	defer is.mu.Unlock()
	return is.hits[path]
}

func (is *issuer) set(f func()) {
	is.mu.Lock()
	defer is.mu.Unlock()
	f()
}

// setStatus sets the status of index idx of list n (bits 2).
func (is *issuer) setStatus(n, idx int, status byte) {
	is.set(func() {
		l := is.statuses[fmt.Sprintf("/statuslists/%d", n)]
		l[idx/4] = l[idx/4]&^(3<<(idx%4*2)) | status<<(idx%4*2)
	})
}

// claims are the claims of a valid token at list 1, index idx.
func (is *issuer) claims(idx int) jwt.MapClaims {
	now := is.clock.Now()
	return jwt.MapClaims{
		"iss": is.url(), "aud": audience, "sub": "key_01JD3Q5T2H7R9C4M8P1Q6W3E5R", "client_id": "key_01JD3Q5T2H7R9C4M8P1Q6W3E5R",
		"jti": fmt.Sprintf("tok_%026d", idx), "scope": "read:orders write:orders",
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix(), "org_id": "org_01JD3Q8B2C3D4E5F6G7H8J9K0M",
		"status": map[string]any{"status_list": map[string]any{"idx": idx, "uri": is.listURI(1)}},
	}
}

// token signs claims as an access token with the current key.
func (is *issuer) token(claims jwt.MapClaims) string {
	is.mu.Lock()
	k := is.signer
	is.mu.Unlock()
	return k.sign(is.t, "at+jwt", claims)
}

func (is *issuer) discovery(w http.ResponseWriter, r *http.Request) {
	is.mu.Lock()
	iss := is.discovered
	is.mu.Unlock()
	if iss == "" {
		iss = is.url()
	}
	json.NewEncoder(w).Encode(map[string]string{"issuer": iss, "jwks_uri": is.url() + "/v1/auth/jwks"})
}

func (is *issuer) jwks(w http.ResponseWriter, r *http.Request) {
	is.mu.Lock()
	defer is.mu.Unlock()
	set := []map[string]string{}
	for _, k := range is.keys {
		set = append(set, k.jwk())
	}
	json.NewEncoder(w).Encode(map[string]any{"keys": set})
}

// statusList serves the Status List Token of a list: its ETag is the hash
// of the list's statuses and ttl, and If-None-Match with it answers 304.
func (is *issuer) statusList(w http.ResponseWriter, r *http.Request) {
	is.mu.Lock()
	statuses, ok := is.statuses[r.URL.Path]
	statuses = bytes.Clone(statuses)
	ttl, edit, signer := is.ttl, is.listToken, is.listSigner
	if signer == nil {
		signer = is.signer
	}
	if inm := r.Header.Get("If-None-Match"); inm != "" {
		is.conds[r.URL.Path] = append(is.conds[r.URL.Path], inm)
	}
	is.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	sum := sha256.Sum256(append(statuses, fmt.Sprint(ttl)...))
	etag := fmt.Sprintf(`"%x"`, sum[:8])
	w.Header().Set("ETag", etag)
	if r.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	var z bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&z, zlib.BestCompression)
	zw.Write(statuses)
	zw.Close()
	now := is.clock.Now()
	claims := jwt.MapClaims{
		"sub": "http://" + r.Host + r.URL.Path, "iss": is.url(), "iat": now.Unix(), "exp": now.Add(24 * time.Hour).Unix(),
		"status_list": map[string]any{"bits": 2, "lst": base64.RawURLEncoding.EncodeToString(z.Bytes())},
	}
	if ttl != nil {
		claims["ttl"] = ttl
	}
	tok := jwt.NewWithClaims(signer.alg, claims)
	tok.Header["kid"], tok.Header["typ"] = signer.kid, "statuslist+jwt"
	if edit != nil {
		edit(tok.Header, claims)
	}
	s, err := tok.SignedString(signer.priv)
	if err != nil {
		is.t.Error(err)
	}
	w.Header().Set("Content-Type", "application/statuslist+jwt")
	w.Write([]byte(s))
}

// verify answers as /v1/auth/verify does: the token's signature against
// the published keys, then the revocations the test set.
func (is *issuer) verify(w http.ResponseWriter, r *http.Request) {
	tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	var c jwt.MapClaims
	_, err := jwt.ParseWithClaims(tok, &c, func(t *jwt.Token) (any, error) {
		is.mu.Lock()
		defer is.mu.Unlock()
		for _, k := range is.keys {
			if k.kid == t.Header["kid"] {
				return k.priv.(crypto.Signer).Public(), nil
			}
		}
		return nil, fmt.Errorf("unknown kid")
	}, jwt.WithTimeFunc(is.clock.Now))
	w.Header().Set("Content-Type", "application/json")
	if err != nil {
		json.NewEncoder(w).Encode(map[string]any{"valid": false, "reason": "invalid"})
		return
	}
	is.mu.Lock()
	reason := is.revoked[c["jti"].(string)]
	is.mu.Unlock()
	if reason != "" {
		json.NewEncoder(w).Encode(map[string]any{"valid": false, "reason": reason})
		return
	}
	json.NewEncoder(w).Encode(map[string]any{"valid": true, "token_id": c["jti"], "key_id": c["sub"], "audience": c["aud"]})
}

package token_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/big"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"latchkey/pkg/account"
	"latchkey/pkg/token"
)

var (
	rsaOnce sync.Once
	rsaKey  *rsa.PrivateKey
)

// newRSAKey returns one 2048-bit key per test binary: generating one takes
// tens of milliseconds to seconds on a loaded machine.
func newRSAKey(tb testing.TB) *rsa.PrivateKey {
	tb.Helper()
	rsaOnce.Do(func() {
		k, err := rsa.GenerateKey(rand.Reader, token.RSAKeyBits)
		if err != nil {
			panic(err)
		}
		rsaKey = k
	})
	return rsaKey
}

// TestSigner_RS256: an RSA key signs RS256 tokens (typ at+jwt, kid its RFC
// 7638 thumbprint) that a Parser built from the published JWKS accepts;
// the JWKS names alg RS256 and kty RSA.
func TestSigner_RS256(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Second)
	signer := token.NewSigner(newRSAKey(t), issuer)
	if signer.Algorithm() != token.RS256 {
		t.Fatalf("Algorithm: got %s, want RS256", signer.Algorithm())
	}
	want := sampleClaims(now)
	tok := sign(t, signer, want)
	raw, _ := base64.RawURLEncoding.DecodeString(strings.Split(tok, ".")[0])
	var h map[string]any
	if err := json.Unmarshal(raw, &h); err != nil {
		t.Fatal(err)
	}
	if h["alg"] != "RS256" || h["typ"] != "at+jwt" || h["kid"] != signer.KeyID() {
		t.Errorf("header: got %v", h)
	}
	set := token.JWKS(signer.PublicKey())
	var s struct {
		Keys []map[string]string `json:"keys"`
	}
	if err := json.Unmarshal(set, &s); err != nil || len(s.Keys) != 1 {
		t.Fatalf("JWKS %s: %v", set, err)
	}
	if k := s.Keys[0]; k["kty"] != "RSA" || k["alg"] != "RS256" || k["use"] != "sig" || k["kid"] != signer.KeyID() || k["e"] != "AQAB" || k["x"] != "" {
		t.Errorf("JWKS key: got %v", k)
	}
	p, err := token.ParserFromJWKS(token.RS256, issuer, set)
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.Parse(t.Context(), tok, now)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if got.ID != want.ID || got.KeyID != want.KeyID || got.Audience != want.Audience || strings.Join(got.Scopes, " ") != strings.Join(want.Scopes, " ") {
		t.Errorf("claims: got %+v, want %+v", got, want)
	}
}

// TestKeyID_RSA: the thumbprint of RFC 7638's example RSA key (section 3.1).
func TestKeyID_RSA(t *testing.T) {
	n, _ := base64.RawURLEncoding.DecodeString("0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw")
	pub := &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: 65537}
	if got, want := token.KeyID(pub), "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs"; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

// TestParser_Pinned: a deployment accepts its one configured algorithm.
// Given a key set that holds keys of both (as it may for a moment after a
// switch), an EdDSA Parser refuses a well-signed RS256 token and an RS256
// Parser a well-signed EdDSA one; and an RS256 Parser refuses tokens whose
// header names another algorithm with its RSA key: HS256 keyed with the
// public key (the classic confusion), RS384, PS256, none.
func TestParser_Pinned(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Second)
	ed := token.NewSigner(newKey(t), issuer)
	rs := token.NewSigner(newRSAKey(t), issuer)
	set := token.JWKS(ed.PublicKey(), rs.PublicKey())
	edParser, err := token.ParserFromJWKS(token.EdDSA, issuer, set)
	if err != nil {
		t.Fatal(err)
	}
	rsParser, err := token.ParserFromJWKS(token.RS256, issuer, set)
	if err != nil {
		t.Fatal(err)
	}
	c := sampleClaims(now)
	edTok, rsTok := sign(t, ed, c), sign(t, rs, c)
	for name, tc := range map[string]struct {
		p   *token.Parser
		tok string
		ok  bool
	}{
		"EdDSAAcceptsEdDSA":  {edParser, edTok, true},
		"RS256AcceptsRS256":  {rsParser, rsTok, true},
		"EdDSARefusesRS256":  {edParser, rsTok, false},
		"RS256RefusesEdDSA":  {rsParser, edTok, false},
		"RS256RefusesHS256":  {rsParser, forge(t, jwt.SigningMethodHS256, pemOf(t, rs.PublicKey().(*rsa.PublicKey)), rs.KeyID(), c), false},
		"RS256RefusesRS384":  {rsParser, forge(t, jwt.SigningMethodRS384, newRSAKey(t), rs.KeyID(), c), false},
		"RS256RefusesPS256":  {rsParser, forge(t, jwt.SigningMethodPS256, newRSAKey(t), rs.KeyID(), c), false},
		"RS256RefusesNone":   {rsParser, forge(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, rs.KeyID(), c), false},
		"EdDSARefusesRSAKid": {edParser, forge(t, jwt.SigningMethodEdDSA, ed25519.PrivateKey(newKey(t)), rs.KeyID(), c), false},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := tc.p.Parse(t.Context(), tc.tok, now)
			if tc.ok && err != nil {
				t.Fatalf("got %v, want it accepted", err)
			}
			if !tc.ok && !errors.Is(err, account.ErrTokenInvalid) {
				t.Fatalf("got %v, want ErrTokenInvalid", err)
			}
		})
	}
}

// TestParserFromJWKS_RSA: a weak or malformed RSA key fails the whole set.
func TestParserFromJWKS_RSA(t *testing.T) {
	small, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	large, err := rsa.GenerateKey(rand.Reader, token.MaxRSAKeyBits+8)
	if err != nil {
		t.Fatal(err)
	}
	good := string(token.JWKS(newRSAKey(t).Public()))
	for name, s := range map[string]string{
		"Small1024":   string(token.JWKS(small.Public())),
		"Large4104":   string(token.JWKS(large.Public())),
		"WrongAlg":    strings.Replace(good, `"alg":"RS256"`, `"alg":"RS384"`, 1),
		"WrongKid":    strings.Replace(good, token.KeyID(newRSAKey(t).Public()), "forged", 1),
		"EvenE":       strings.Replace(good, `"e":"AQAB"`, `"e":"AQAC"`, 1),
		"LeadingZero": strings.Replace(good, `"n":"`, `"n":"AA`, 1),
	} {
		t.Run(name, func(t *testing.T) {
			for _, alg := range []token.Algorithm{token.RS256, token.EdDSA} {
				if _, err := token.ParserFromJWKS(alg, issuer, []byte(s)); err == nil {
					t.Fatalf("%s: got nil error", alg)
				}
			}
		})
	}
}

func TestParseAlgorithm(t *testing.T) {
	for in, want := range map[string]token.Algorithm{"": token.EdDSA, "EdDSA": token.EdDSA, "RS256": token.RS256} {
		if got, err := token.ParseAlgorithm(in); err != nil || got != want {
			t.Errorf("%q: got %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"rs256", "eddsa", "HS256", "none", "RS384", "ES256"} {
		if _, err := token.ParseAlgorithm(in); err == nil {
			t.Errorf("%q: got nil error", in)
		}
	}
}

func pemOf(tb testing.TB, pub *rsa.PublicKey) []byte {
	tb.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		tb.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// BenchmarkSignAlg and BenchmarkParseAlg compare the two algorithms' cost
// per token (README, "Signing algorithm").
func BenchmarkSignAlg(b *testing.B) {
	for _, s := range []*token.Signer{token.NewSigner(newKey(b), issuer), token.NewSigner(newRSAKey(b), issuer)} {
		b.Run(string(s.Algorithm()), func(b *testing.B) {
			c := sampleClaims(time.Now())
			for b.Loop() {
				if _, err := s.Sign(c); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkParseAlg(b *testing.B) {
	for _, s := range []*token.Signer{token.NewSigner(newKey(b), issuer), token.NewSigner(newRSAKey(b), issuer)} {
		b.Run(string(s.Algorithm()), func(b *testing.B) {
			p := token.NewParser(issuer, s.PublicKey())
			now := time.Now()
			tok := sign(b, s, sampleClaims(now))
			for b.Loop() {
				if _, err := p.Parse(b.Context(), tok, now); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(tok)), "token-bytes")
		})
	}
}

package token_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"latchkey/pkg/account"
	"latchkey/pkg/token"
)

const issuer = "https://latchkey.test"

func newKey(tb testing.TB) ed25519.PrivateKey {
	tb.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	return priv
}

func sampleClaims(now time.Time) account.TokenClaims {
	return account.TokenClaims{
		ID:        account.NewID(account.PrefixToken, now),
		KeyID:     account.NewID(account.PrefixAPIKey, now),
		Scopes:    []string{"read:users", "write:widgets"},
		IssuedAt:  now,
		ExpiresAt: now.Add(15 * time.Minute),
	}
}

func sign(tb testing.TB, s *token.Signer, c account.TokenClaims) string {
	tb.Helper()
	tok, err := s.Sign(c)
	if err != nil {
		tb.Fatal(err)
	}
	return tok
}

func TestParser_Parse(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	priv := newKey(t)
	signer := token.NewSigner(priv, issuer)
	parser := token.NewParser(issuer, signer.PublicKey())
	want := sampleClaims(now)
	tok := sign(t, signer, want)

	t.Run("OK", func(t *testing.T) {
		got, err := parser.Parse(t.Context(), tok, now.Add(time.Minute))
		if err != nil {
			t.Fatalf("Parse: %v", err)
		}
		if got.ID != want.ID || got.KeyID != want.KeyID || !slices.Equal(got.Scopes, want.Scopes) ||
			!got.IssuedAt.Equal(want.IssuedAt) || !got.ExpiresAt.Equal(want.ExpiresAt) {
			t.Fatalf("got %+v, want %+v", got, want)
		}
	})

	t.Run("HeaderNamesAlgorithmAndKid", func(t *testing.T) {
		header, _, _ := strings.Cut(tok, ".")
		raw, _ := base64.RawURLEncoding.DecodeString(header)
		var h map[string]string
		if err := json.Unmarshal(raw, &h); err != nil {
			t.Fatal(err)
		}
		if h["alg"] != "EdDSA" || h["kid"] != signer.KeyID() || h["typ"] != "JWT" {
			t.Fatalf("header %v", h)
		}
	})

	t.Run("ErrTokenExpired", func(t *testing.T) {
		got, err := parser.Parse(t.Context(), tok, want.ExpiresAt.Add(time.Second))
		if !errors.Is(err, account.ErrTokenExpired) {
			t.Fatalf("got %v, want ErrTokenExpired", err)
		}
		if got.ID != want.ID {
			t.Fatalf("expired token should still yield its claims, got %+v", got)
		}
	})

	invalid := map[string]string{
		"Empty":          "",
		"NotAJWT":        "lk_notatoken",
		"Tampered":       tamperPayload(t, tok),
		"TruncatedSig":   tok[:len(tok)-4],
		"LastCharBits":   lastCharVariant(tok),
		"AlgNone":        forge(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, signer.KeyID(), want),
		"HMACWithPubKey": forge(t, jwt.SigningMethodHS256, []byte(signer.PublicKey()), signer.KeyID(), want),
		"OtherKey":       sign(t, token.NewSigner(newKey(t), issuer), want),
		"OtherIssuer":    sign(t, token.NewSigner(priv, "https://evil.test"), want),
		"UnknownKid":     forge(t, jwt.SigningMethodEdDSA, priv, "not-a-known-kid", want),
		"MalformedID":    sign(t, signer, account.TokenClaims{ID: "tok_123", KeyID: want.KeyID, IssuedAt: now, ExpiresAt: want.ExpiresAt}),
	}
	for name, tok := range invalid {
		t.Run("ErrTokenInvalid/"+name, func(t *testing.T) {
			if _, err := parser.Parse(t.Context(), tok, now); !errors.Is(err, account.ErrTokenInvalid) {
				t.Fatalf("got %v, want ErrTokenInvalid", err)
			}
			// An invalid token is invalid however late: never "expired".
			if _, err := parser.Parse(t.Context(), tok, now.Add(48*time.Hour)); !errors.Is(err, account.ErrTokenInvalid) {
				t.Fatalf("later: got %v, want ErrTokenInvalid", err)
			}
		})
	}
}

// forge signs the claims with any method and key, as an attacker would.
func forge(tb testing.TB, m jwt.SigningMethod, key any, kid string, c account.TokenClaims) string {
	tb.Helper()
	t := jwt.NewWithClaims(m, jwt.MapClaims{
		"jti": c.ID, "sub": c.KeyID, "iss": issuer, "scope": "*:*",
		"iat": c.IssuedAt.Unix(), "exp": c.ExpiresAt.Unix(),
	})
	t.Header["kid"] = kid
	s, err := t.SignedString(key)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// tamperPayload widens the scope of a real token and keeps its signature.
func tamperPayload(tb testing.TB, tok string) string {
	tb.Helper()
	parts := strings.Split(tok, ".")
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		tb.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		tb.Fatal(err)
	}
	m["scope"] = "*:*"
	raw, _ = json.Marshal(m)
	parts[1] = base64.RawURLEncoding.EncodeToString(raw)
	return strings.Join(parts, ".")
}

func TestParserFromJWKS(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Second)
	oldKey, newKey := newKey(t), newKey(t)
	set := token.JWKS(oldKey.Public().(ed25519.PublicKey), newKey.Public().(ed25519.PublicKey))

	t.Run("OK", func(t *testing.T) {
		p, err := token.ParserFromJWKS(issuer, set)
		if err != nil {
			t.Fatal(err)
		}
		// Both keys of a rotation verify.
		for _, k := range []ed25519.PrivateKey{oldKey, newKey} {
			if _, err := p.Parse(t.Context(), sign(t, token.NewSigner(k, issuer), sampleClaims(now)), now); err != nil {
				t.Fatalf("Parse: %v", err)
			}
		}
	})

	t.Run("ThumbprintIsRFC7638", func(t *testing.T) {
		// RFC 8037 appendix A.3: the thumbprint of its example Ed25519 key.
		x, _ := base64.RawURLEncoding.DecodeString("11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo")
		if got, want := token.KeyID(x), "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k"; got != want {
			t.Fatalf("got %s, want %s", got, want)
		}
	})

	bad := map[string]string{
		"NotJSON":    "{",
		"NoKeys":     `{"keys":[]}`,
		"RSAKey":     `{"keys":[{"kty":"RSA","n":"AQAB","e":"AQAB","kid":"r"}]}`,
		"WrongKid":   strings.Replace(string(set), token.KeyID(oldKey.Public().(ed25519.PublicKey)), "forged", 1),
		"ShortX":     `{"keys":[{"kty":"OKP","crv":"Ed25519","x":"AAAA","kid":"x"}]}`,
		"OtherCurve": `{"keys":[{"kty":"OKP","crv":"X25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo","kid":"kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k"}]}`,
	}
	for name, s := range bad {
		t.Run("Err/"+name, func(t *testing.T) {
			if _, err := token.ParserFromJWKS(issuer, []byte(s)); err == nil {
				t.Fatal("got nil error")
			}
		})
	}
}

func BenchmarkSign(b *testing.B) {
	s := token.NewSigner(newKey(b), issuer)
	c := sampleClaims(time.Now())
	for b.Loop() {
		if _, err := s.Sign(c); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParse(b *testing.B) {
	s := token.NewSigner(newKey(b), issuer)
	p := token.NewParser(issuer, s.PublicKey())
	now := time.Now()
	tok := sign(b, s, sampleClaims(now))
	for b.Loop() {
		if _, err := p.Parse(b.Context(), tok, now); err != nil {
			b.Fatal(err)
		}
	}
}

// lastCharVariant re-encodes the signature's last character with different
// unused low bits: the same bytes, a different string. Strict decoding must
// refuse it, so that a token has exactly one valid encoding.
func lastCharVariant(tok string) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	last := strings.IndexByte(alphabet, tok[len(tok)-1])
	// 64 bytes encode to 86 characters; the last one carries 2 bits, 4 unused.
	return tok[:len(tok)-1] + string(alphabet[last^1])
}

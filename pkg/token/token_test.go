package token_test

import (
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
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
		Audience:  "https://api.example.com",
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
			got.Audience != want.Audience || got.Issuer != issuer ||
			!got.IssuedAt.Equal(want.IssuedAt) || !got.ExpiresAt.Equal(want.ExpiresAt) {
			t.Fatalf("got %+v, want %+v", got, want)
		}
	})

	t.Run("KeyAncestors", func(t *testing.T) {
		// Named in anc, in order; a token without them has no anc claim.
		c := sampleClaims(now)
		c.KeyAncestors = []string{account.NewID(account.PrefixAPIKey, now), account.NewID(account.PrefixAPIKey, now)}
		got, err := parser.Parse(t.Context(), sign(t, signer, c), now)
		if err != nil {
			t.Fatalf("Parse: %v", err)
		}
		if !slices.Equal(got.KeyAncestors, c.KeyAncestors) {
			t.Errorf("KeyAncestors: got %v, want %v", got.KeyAncestors, c.KeyAncestors)
		}
		_, payload, _ := strings.Cut(tok, ".")
		payload, _, _ = strings.Cut(payload, ".")
		raw, _ := base64.RawURLEncoding.DecodeString(payload)
		if strings.Contains(string(raw), `"anc"`) {
			t.Errorf("payload of a token without ancestors names anc: %s", raw)
		}
	})

	t.Run("InlineRevocation", func(t *testing.T) {
		// irv: true when the claims say so, and absent (false) otherwise: a
		// token issued before the claim existed reads as one without it.
		c := sampleClaims(now)
		c.InlineRevocation = true
		with := sign(t, signer, c)
		got, err := parser.Parse(t.Context(), with, now)
		if err != nil || !got.InlineRevocation {
			t.Errorf("Parse of a token with irv: got %+v, %v; want InlineRevocation", got, err)
		}
		_, payload, _ := strings.Cut(with, ".")
		payload, _, _ = strings.Cut(payload, ".")
		raw, _ := base64.RawURLEncoding.DecodeString(payload)
		if !strings.Contains(string(raw), `"irv":true`) {
			t.Errorf("payload of a token with InlineRevocation: %s, want irv true", raw)
		}
		got, err = parser.Parse(t.Context(), tok, now)
		if err != nil || got.InlineRevocation {
			t.Errorf("Parse of a token without irv: got %+v, %v; want no InlineRevocation", got, err)
		}
	})

	t.Run("HeaderNamesAlgorithmAndKid", func(t *testing.T) {
		header, _, _ := strings.Cut(tok, ".")
		raw, _ := base64.RawURLEncoding.DecodeString(header)
		var h map[string]string
		if err := json.Unmarshal(raw, &h); err != nil {
			t.Fatal(err)
		}
		if h["alg"] != "EdDSA" || h["kid"] != signer.KeyID() || h["typ"] != "at+jwt" {
			t.Fatalf("header %v", h)
		}
	})

	t.Run("ClaimsAreRFC9068", func(t *testing.T) {
		_, payload, _ := strings.Cut(tok, ".")
		payload, _, _ = strings.Cut(payload, ".")
		raw, _ := base64.RawURLEncoding.DecodeString(payload)
		var got map[string]any
		if err := json.Unmarshal(raw, &got); err != nil {
			t.Fatal(err)
		}
		wantClaims := map[string]any{
			"iss": issuer, "sub": want.KeyID, "client_id": want.KeyID, "aud": want.Audience,
			"exp": float64(want.ExpiresAt.Unix()), "iat": float64(want.IssuedAt.Unix()), "jti": want.ID,
			"scope": "read:users write:widgets",
		}
		if len(got) != len(wantClaims) {
			t.Errorf("claims: got %v, want exactly %v", got, wantClaims)
		}
		for k, v := range wantClaims {
			if got[k] != v {
				t.Errorf("%s: got %v (%T), want %v", k, got[k], got[k], v)
			}
		}
	})

	t.Run("MediaTypeAndAudienceArray", func(t *testing.T) {
		// RFC 9068 section 4 accepts the full media type too, in any case,
		// and RFC 7519 a one-element audience array.
		for _, typ := range []string{"application/at+jwt", "AT+JWT"} {
			if _, err := parser.Parse(t.Context(), forgeWith(t, priv, signer.KeyID(), typ, want, nil), now); err != nil {
				t.Errorf("typ %q: %v", typ, err)
			}
		}
		tok := forgeWith(t, priv, signer.KeyID(), "at+jwt", want, func(m jwt.MapClaims) { m["aud"] = []string{want.Audience} })
		if got, err := parser.Parse(t.Context(), tok, now); err != nil || got.Audience != want.Audience {
			t.Errorf("aud array: got %+v, %v", got, err)
		}
	})

	t.Run("ErrSignWithoutAudience", func(t *testing.T) {
		c := want
		c.Audience = ""
		if _, err := signer.Sign(c); err == nil {
			t.Fatal("got nil error")
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
		"Empty":             "",
		"NotAJWT":           "lk_notatoken",
		"Tampered":          tamperPayload(t, tok),
		"TruncatedSig":      tok[:len(tok)-4],
		"LastCharBits":      lastCharVariant(tok),
		"AlgNone":           forge(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, signer.KeyID(), want),
		"HMACWithPubKey":    forge(t, jwt.SigningMethodHS256, []byte(signer.PublicKey().(ed25519.PublicKey)), signer.KeyID(), want),
		"OtherKey":          sign(t, token.NewSigner(newKey(t), issuer), want),
		"OtherIssuer":       sign(t, token.NewSigner(priv, "https://evil.test"), want),
		"UnknownKid":        forge(t, jwt.SigningMethodEdDSA, priv, "not-a-known-kid", want),
		"MalformedID":       sign(t, signer, account.TokenClaims{ID: "tok_123", KeyID: want.KeyID, Audience: want.Audience, IssuedAt: now, ExpiresAt: want.ExpiresAt}),
		"MalformedAncestor": sign(t, signer, account.TokenClaims{ID: want.ID, KeyID: want.KeyID, Audience: want.Audience, KeyAncestors: []string{"key_123"}, IssuedAt: now, ExpiresAt: want.ExpiresAt}),
		"TooManyAncestors":  sign(t, signer, account.TokenClaims{ID: want.ID, KeyID: want.KeyID, Audience: want.Audience, KeyAncestors: slices.Repeat([]string{want.KeyID}, account.MaxKeyAncestors+1), IssuedAt: now, ExpiresAt: want.ExpiresAt}),
		// RFC 9068 section 4: a JWT of another type (an ID token, or one
		// that says nothing) is not an access token.
		"TypJWT":             forgeWith(t, priv, signer.KeyID(), "JWT", want, nil),
		"NoTyp":              forgeWith(t, priv, signer.KeyID(), "", want, nil),
		"NoAudience":         forgeWith(t, priv, signer.KeyID(), "at+jwt", want, func(m jwt.MapClaims) { delete(m, "aud") }),
		"EmptyAudience":      forgeWith(t, priv, signer.KeyID(), "at+jwt", want, func(m jwt.MapClaims) { m["aud"] = "" }),
		"TwoAudiences":       forgeWith(t, priv, signer.KeyID(), "at+jwt", want, func(m jwt.MapClaims) { m["aud"] = []string{"a", "b"} }),
		"NoClientID":         forgeWith(t, priv, signer.KeyID(), "at+jwt", want, func(m jwt.MapClaims) { delete(m, "client_id") }),
		"ClientIDNotSubject": forgeWith(t, priv, signer.KeyID(), "at+jwt", want, func(m jwt.MapClaims) { m["client_id"] = account.NewID(account.PrefixAPIKey, now) }),
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

// TestParser_ParseRules covers tokens signed with the real key that break a
// rule of JWT or of the form Latchkey signs: each is invalid, never
// expired, at any time.
func TestParser_ParseRules(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	priv := newKey(t)
	signer := token.NewSigner(priv, issuer)
	parser := token.NewParser(issuer, signer.PublicKey())
	header := func() map[string]any { return map[string]any{"alg": "EdDSA", "typ": "at+jwt", "kid": signer.KeyID()} }
	payload := func() map[string]any {
		c := sampleClaims(now)
		return map[string]any{"jti": c.ID, "sub": c.KeyID, "client_id": c.KeyID, "aud": c.Audience, "iss": issuer, "scope": "read:users",
			"iat": c.IssuedAt.Unix(), "exp": c.ExpiresAt.Unix()}
	}
	with := func(m map[string]any, k string, v any) map[string]any { m[k] = v; return m }

	t.Run("OK", func(t *testing.T) {
		// The hand-made token of the tests below, unchanged, is valid: what
		// makes each of them invalid is the one thing it changes.
		if _, err := parser.Parse(t.Context(), signRaw(t, priv, header(), payload()), now); err != nil {
			t.Fatalf("Parse: %v", err)
		}
	})
	t.Run("OKNotBeforePast", func(t *testing.T) {
		if _, err := parser.Parse(t.Context(), signRaw(t, priv, header(), with(payload(), "nbf", now.Unix())), now); err != nil {
			t.Fatalf("Parse with nbf = now: %v", err)
		}
	})
	t.Run("OKIssuedWithinSkew", func(t *testing.T) {
		// Another instance's clock may run a little ahead.
		tok := signRaw(t, priv, header(), with(payload(), "iat", now.Add(token.ClockSkew).Unix()))
		if _, err := parser.Parse(t.Context(), tok, now); err != nil {
			t.Fatalf("Parse with iat = now + ClockSkew: %v", err)
		}
	})

	invalid := map[string]string{
		"CritHeader":       signRaw(t, priv, with(header(), "crit", []string{"exp"}), payload()),
		"CritEmpty":        signRaw(t, priv, with(header(), "crit", []string{}), payload()),
		"IssuedAtFarAhead": signRaw(t, priv, header(), with(payload(), "iat", now.Add(24*time.Hour).Unix())),
		"ExpString":        signRaw(t, priv, header(), with(payload(), "exp", "123")),
		"ExpStringFuture":  signRaw(t, priv, header(), with(payload(), "exp", strconv.FormatInt(now.Add(time.Hour).Unix(), 10))),
		"IatString":        signRaw(t, priv, header(), with(payload(), "iat", strconv.FormatInt(now.Unix(), 10))),
		"NbfBool":          signRaw(t, priv, header(), with(payload(), "nbf", true)),
		"NbfNull":          signRaw(t, priv, header(), with(payload(), "nbf", nil)),
		"ExpNull":          signRaw(t, priv, header(), with(payload(), "exp", nil)),
		"ExpFraction":      signRaw(t, priv, header(), with(payload(), "exp", float64(now.Add(time.Hour).Unix())+0.5)),
		"ExpMissing":       signRaw(t, priv, header(), func() map[string]any { m := payload(); delete(m, "exp"); return m }()),
		"IatMissing":       signRaw(t, priv, header(), func() map[string]any { m := payload(); delete(m, "iat"); return m }()),
		"TooLong":          signRaw(t, priv, header(), with(payload(), "pad", strings.Repeat("a", token.MaxTokenBytes))),
		"OrgIDNotAnID":     signRaw(t, priv, header(), with(payload(), "org_id", "acme")),
		"OrgIDNumber":      signRaw(t, priv, header(), with(payload(), "org_id", 7)),
		"OwnerIDPadded":    signRaw(t, priv, header(), with(payload(), "owner_id", " ada")),
	}
	t.Run("OrgAndOwner", func(t *testing.T) {
		// A key's organization and owner travel in org_id and owner_id.
		c := sampleClaims(now)
		c.OrganizationID, c.OwnerID = account.NewID(account.PrefixOrganization, now), "crm:4711"
		got, err := parser.Parse(t.Context(), sign(t, signer, c), now)
		if err != nil || got.OrganizationID != c.OrganizationID || got.OwnerID != c.OwnerID {
			t.Fatalf("Parse: got %+v, %v; want organization %s and owner %s", got, err, c.OrganizationID, c.OwnerID)
		}
		got, err = parser.Parse(t.Context(), sign(t, signer, sampleClaims(now)), now)
		if err != nil || got.OrganizationID != "" || got.OwnerID != "" {
			t.Fatalf("Parse of a token without them: got %+v, %v", got, err)
		}
	})
	for name, tok := range invalid {
		t.Run("ErrTokenInvalid/"+name, func(t *testing.T) {
			for _, at := range []time.Time{now, now.Add(2 * time.Hour)} {
				if _, err := parser.Parse(t.Context(), tok, at); !errors.Is(err, account.ErrTokenInvalid) {
					t.Fatalf("at %v: got %v, want ErrTokenInvalid", at, err)
				}
			}
		})
	}
	// Tokens not valid yet: invalid now, valid once the parser's clock
	// reaches them.
	notYet := map[string]struct {
		tok   string
		valid time.Time
	}{
		"NotBeforeFuture": {signRaw(t, priv, header(), with(payload(), "nbf", now.Add(time.Second).Unix())), now.Add(time.Second)},
		"IssuedAtFuture":  {signRaw(t, priv, header(), with(payload(), "iat", now.Add(token.ClockSkew+time.Second).Unix())), now.Add(time.Second)},
	}
	for name, tt := range notYet {
		t.Run("ErrTokenInvalid/"+name, func(t *testing.T) {
			if _, err := parser.Parse(t.Context(), tt.tok, now); !errors.Is(err, account.ErrTokenInvalid) {
				t.Fatalf("got %v, want ErrTokenInvalid", err)
			}
			if _, err := parser.Parse(t.Context(), tt.tok, tt.valid); err != nil {
				t.Fatalf("at %v: got %v, want valid", tt.valid, err)
			}
		})
	}
}

// TestSigner_Longest: the longest token the limits allow, with either
// algorithm, fits MaxTokenBytes and parses; Sign refuses claims beyond the
// limits rather than sign a token that every verifier refuses. The limits:
// 32 scopes of the longest form, MaxKeyAncestors ancestors, an
// organization, the longest audience and owner id, the longest issuer.
// JSON escapes none of their characters beyond what they cost in UTF-8,
// but for '"' and '\', two bytes each: an owner id of four-byte characters
// is the longest, one of '<' (six bytes each when encoding/json escaped
// HTML) no longer is.
func TestSigner_Longest(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	iss := "https://" + strings.Repeat("a", account.MaxIssuerLength-len("https://"))
	if err := account.CheckIssuer(iss); err != nil {
		t.Fatal(err)
	}
	c := sampleClaims(now)
	c.Scopes = nil
	for i := range 32 {
		c.Scopes = append(c.Scopes, fmt.Sprintf("%s:%s%02d", strings.Repeat("a", 32), strings.Repeat("r", 62), i))
	}
	for range account.MaxKeyAncestors {
		c.KeyAncestors = append(c.KeyAncestors, account.NewID(account.PrefixAPIKey, now))
	}
	c.Audience = "https://a/?" + strings.Repeat("&", account.MaxAudienceLength-len("https://a/?"))
	c.OrganizationID = account.NewID(account.PrefixOrganization, now)
	c.InlineRevocation = true
	// The status claim at its longest: the last index of the last part.
	c.Status = &account.StatusRef{List: "2026112210-9999-20261122100000", Index: account.MaxStatusListSize - 1}
	// The largest RSA key allowed, whose signature is the longest.
	largest, err := rsa.GenerateKey(rand.Reader, token.MaxRSAKeyBits)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []crypto.Signer{newKey(t), newRSAKey(t), largest} {
		signer := token.NewSigner(key, iss)
		parser := token.NewParser(iss, signer.PublicKey())
		for _, owner := range []string{"😀", "<", `"`, "\\"} {
			c.OwnerID = strings.Repeat(owner, account.MaxExternalIDLength)
			tok, err := signer.Sign(c)
			if err != nil {
				t.Fatalf("%s, owner of %q: %v", signer.Algorithm(), owner, err)
			}
			t.Logf("%s, owner of %q: %d bytes", signer.Algorithm(), owner, len(tok))
			if got, err := parser.Parse(t.Context(), tok, now); err != nil || got.OwnerID != c.OwnerID || got.Audience != c.Audience {
				t.Errorf("%s, owner of %q: Parse: %v", signer.Algorithm(), owner, err)
			}
		}
		over := c
		over.Scopes = append(slices.Clone(c.Scopes), c.Scopes...) // twice the limit
		if tok, err := signer.Sign(over); !errors.Is(err, token.ErrTokenTooLong) {
			t.Errorf("%s: Sign beyond the limits: got %d bytes, %v; want ErrTokenTooLong", signer.Algorithm(), len(tok), err)
		}
	}
}

// signRaw signs a header and a payload, marshalled as they are, with key:
// a token made by hand, as a holder of the signing key could make any.
func signRaw(tb testing.TB, key ed25519.PrivateKey, header, payload map[string]any) string {
	tb.Helper()
	h, err := json.Marshal(header)
	if err != nil {
		tb.Fatal(err)
	}
	p, err := json.Marshal(payload)
	if err != nil {
		tb.Fatal(err)
	}
	enc := base64.RawURLEncoding
	input := enc.EncodeToString(h) + "." + enc.EncodeToString(p)
	return input + "." + enc.EncodeToString(ed25519.Sign(key, []byte(input)))
}

// forge signs the claims with any method and key, as an attacker would.
func forge(tb testing.TB, m jwt.SigningMethod, key any, kid string, c account.TokenClaims) string {
	tb.Helper()
	t := jwt.NewWithClaims(m, jwt.MapClaims{
		"jti": c.ID, "sub": c.KeyID, "client_id": c.KeyID, "aud": c.Audience, "iss": issuer, "scope": "*:*",
		"iat": c.IssuedAt.Unix(), "exp": c.ExpiresAt.Unix(),
	})
	t.Header["kid"] = kid
	t.Header["typ"] = "at+jwt"
	s, err := t.SignedString(key)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// forgeWith signs c with the right key and algorithm, with the given typ
// header ("" for none) and the claims changed by edit: a token that is
// well signed and wrong in nothing else.
func forgeWith(tb testing.TB, key ed25519.PrivateKey, kid, typ string, c account.TokenClaims, edit func(jwt.MapClaims)) string {
	tb.Helper()
	m := jwt.MapClaims{
		"jti": c.ID, "sub": c.KeyID, "client_id": c.KeyID, "aud": c.Audience, "iss": issuer,
		"scope": strings.Join(c.Scopes, " "), "iat": c.IssuedAt.Unix(), "exp": c.ExpiresAt.Unix(),
	}
	if edit != nil {
		edit(m)
	}
	t := jwt.NewWithClaims(jwt.SigningMethodEdDSA, m)
	t.Header["kid"] = kid
	if typ == "" {
		delete(t.Header, "typ")
	} else {
		t.Header["typ"] = typ
	}
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
		p, err := token.ParserFromJWKS(token.EdDSA, issuer, set)
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
		if got, want := token.KeyID(ed25519.PublicKey(x)), "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k"; got != want {
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
			if _, err := token.ParserFromJWKS(token.EdDSA, issuer, []byte(s)); err == nil {
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

// BenchmarkParse: a full check (signature and claims), and a token found in
// the cache (a map read).
func BenchmarkParse(b *testing.B) {
	s := token.NewSigner(newKey(b), issuer)
	now := time.Now()
	tok := sign(b, s, sampleClaims(now))
	for name, p := range map[string]*token.Parser{
		"Full":   token.NewParser(issuer, s.PublicKey()),
		"Cached": token.NewParser(issuer, s.PublicKey()).WithCache(token.NewCache(token.CacheOptions{})),
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.Parse(b.Context(), tok, now); err != nil {
					b.Fatal(err)
				}
			}
		})
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

// TestParser_WithAudience: a Parser given an audience accepts only tokens
// for it, checked by the library's validator, and a token another Parser
// put in a shared cache is checked against it too. A token for another
// audience is invalid, never expired.
func TestParser_WithAudience(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	signer := token.NewSigner(newKey(t), issuer)
	ours, theirs := sampleClaims(now), sampleClaims(now)
	ours.Audience, theirs.Audience = "https://latchkey.test/v1", "https://orders.example.com"
	cache := token.NewCache(token.CacheOptions{})
	anyAud := token.NewParser(issuer, signer.PublicKey()).WithCache(cache)
	p := anyAud.WithAudience(ours.Audience)

	if got, err := p.Parse(t.Context(), sign(t, signer, ours), now); err != nil || got.Audience != ours.Audience {
		t.Fatalf("a token for the audience: got %+v, %v", got, err)
	}
	other := sign(t, signer, theirs)
	if _, err := anyAud.Parse(t.Context(), other, now); err != nil {
		t.Fatalf("without an audience: got %v, want valid (and cached)", err)
	}
	for _, at := range []time.Time{now, theirs.ExpiresAt.Add(time.Second)} {
		if _, err := p.Parse(t.Context(), other, at); !errors.Is(err, account.ErrTokenInvalid) {
			t.Errorf("a token for another audience at %v: got %v, want ErrTokenInvalid", at, err)
		}
	}
}

// TestParser_NoIssuer: a Parser without an issuer (an authorizer before the
// deployment has recorded one) accepts no token, not even one without iss.
func TestParser_NoIssuer(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	signer := token.NewSigner(newKey(t), "")
	if _, err := token.NewParser("", signer.PublicKey()).Parse(t.Context(), sign(t, signer, sampleClaims(now)), now); !errors.Is(err, account.ErrTokenInvalid) {
		t.Fatalf("got %v, want ErrTokenInvalid", err)
	}
}

// TestParser_ParseCredential: a token presented to the service itself must
// be for its issuer, also when another caller has cached it through Parse,
// which takes any one audience (verify, introspection); a Parser and a
// KeySet over the same key agree.
func TestParser_ParseCredential(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	key := newKey(t)
	signer := token.NewSigner(key, issuer)
	ours, theirs := sampleClaims(now), sampleClaims(now)
	ours.Audience, theirs.Audience = issuer, "https://orders.example.com"
	src := &source{}
	src.publish(key)
	ks, err := token.NewKeySet(t.Context(), issuer, src, token.KeySetOptions{Now: func() time.Time { return now }, Cache: token.NewCache(token.CacheOptions{})})
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range map[string]account.TokenParser{
		"Parser": token.NewParser(issuer, signer.PublicKey()).WithCache(token.NewCache(token.CacheOptions{})),
		"KeySet": ks,
	} {
		t.Run(name, func(t *testing.T) {
			own, other := sign(t, signer, ours), sign(t, signer, theirs)
			for _, tok := range []string{own, other} {
				if _, err := p.Parse(t.Context(), tok, now); err != nil {
					t.Fatalf("Parse: %v, want any audience accepted (and cached)", err)
				}
			}
			if got, err := p.ParseCredential(t.Context(), own, now); err != nil || got.Audience != issuer {
				t.Errorf("ParseCredential of a token for the issuer: got %+v, %v", got, err)
			}
			if _, err := p.ParseCredential(t.Context(), other, now); !errors.Is(err, account.ErrTokenInvalid) {
				t.Errorf("ParseCredential of a token for another audience: got %v, want ErrTokenInvalid", err)
			}
		})
	}
}

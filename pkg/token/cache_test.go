package token_test

import (
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"latchkey/pkg/account"
	"latchkey/pkg/mock"
	"latchkey/pkg/token"
)

// parseOK parses tok with p at now and fails tb unless it is valid.
func parseOK(tb testing.TB, p account.TokenParser, tok string, now time.Time) account.TokenClaims {
	tb.Helper()
	c, err := p.Parse(tb.Context(), tok, now)
	if err != nil {
		tb.Fatalf("Parse: %v", err)
	}
	return c
}

// TestCache_RemembersSuccessesOnly: a verified token is remembered, with
// the same claims a full check returns; a forged, tampered or expired one
// is not.
func TestCache_RemembersSuccessesOnly(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Second)
	signer := token.NewSigner(newKey(t), issuer)
	cache := token.NewCache(token.CacheOptions{})
	p := token.NewParser(issuer, signer.PublicKey()).WithCache(cache)
	want := sampleClaims(now)
	want.KeyAncestors = []string{account.NewID(account.PrefixAPIKey, now)}
	tok := sign(t, signer, want)

	first := parseOK(t, p, tok, now)
	if got := cache.Len(); got != 1 {
		t.Fatalf("Len after a valid token: got %d, want 1", got)
	}
	second := parseOK(t, p, tok, now.Add(time.Minute))
	if second.ID != want.ID || second.KeyID != want.KeyID || !slices.Equal(second.Scopes, want.Scopes) ||
		!slices.Equal(second.KeyAncestors, want.KeyAncestors) ||
		!second.IssuedAt.Equal(first.IssuedAt) || !second.ExpiresAt.Equal(first.ExpiresAt) {
		t.Errorf("claims from the cache: got %+v, want %+v", second, first)
	}

	forged := sign(t, token.NewSigner(newKey(t), issuer), sampleClaims(now))
	expired := sign(t, signer, sampleClaims(now.Add(-time.Hour)))
	for name, bad := range map[string]string{"Forged": forged, "Tampered": flipFirstSigChar(tok), "Expired": expired, "Garbage": "eyJ.x.y"} {
		if _, err := p.Parse(t.Context(), bad, now); err == nil {
			t.Errorf("%s: got nil error", name)
		}
	}
	if got := cache.Len(); got != 1 {
		t.Errorf("Len after refused tokens: got %d, want 1 (only successes are remembered)", got)
	}
}

// TestCache_Expiry: a remembered token is expired at its exp, as a full
// check says (ErrTokenExpired with its claims), and its entry is dropped.
func TestCache_Expiry(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Second)
	signer := token.NewSigner(newKey(t), issuer)
	cache := token.NewCache(token.CacheOptions{})
	p := token.NewParser(issuer, signer.PublicKey()).WithCache(cache)
	c := sampleClaims(now)
	tok := sign(t, signer, c)
	parseOK(t, p, tok, now)
	parseOK(t, p, tok, c.ExpiresAt.Add(-time.Second))

	got, err := p.Parse(t.Context(), tok, c.ExpiresAt)
	if !errors.Is(err, account.ErrTokenExpired) || got.ID != c.ID {
		t.Fatalf("at exp: got %+v, %v; want the claims and ErrTokenExpired", got, err)
	}
	if n := cache.Len(); n != 0 {
		t.Errorf("Len after the token expired: got %d, want 0", n)
	}

	// An expired entry no one asks for again is dropped by the next insert.
	parseOK(t, p, tok2(t, signer, now), now)
	later := c.ExpiresAt.Add(time.Minute)
	parseOK(t, p, tok2(t, signer, later), later)
	if n := cache.Len(); n != 1 {
		t.Errorf("Len after an insert past the first token's exp: got %d, want 1", n)
	}
}

// tok2 signs a fresh token valid from now for 15 minutes.
func tok2(tb testing.TB, s *token.Signer, now time.Time) string {
	tb.Helper()
	return sign(tb, s, sampleClaims(now))
}

// TestCache_MemoryBound: the cache never holds more entries or bytes than
// its bounds, and evicting never changes an answer.
func TestCache_MemoryBound(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Second)
	signer := token.NewSigner(newKey(t), issuer)
	toks := make([]string, 20)
	for i := range toks {
		c := sampleClaims(now)
		c.ExpiresAt = now.Add(time.Duration(i+1) * time.Minute)
		toks[i] = sign(t, signer, c)
	}

	t.Run("Entries", func(t *testing.T) {
		cache := token.NewCache(token.CacheOptions{MaxEntries: 5})
		p := token.NewParser(issuer, signer.PublicKey()).WithCache(cache)
		for round := range 2 {
			for i, tok := range toks {
				parseOK(t, p, tok, now)
				if n := cache.Len(); n > 5 {
					t.Fatalf("round %d, token %d: Len %d, want at most 5", round, i, n)
				}
			}
		}
		if n := cache.Len(); n != 5 {
			t.Errorf("Len: got %d, want 5", n)
		}
	})
	t.Run("Bytes", func(t *testing.T) {
		probe := token.NewCache(token.CacheOptions{})
		parseOK(t, token.NewParser(issuer, signer.PublicKey()).WithCache(probe), toks[0], now)
		per := probe.Bytes()
		if per <= 0 {
			t.Fatalf("Bytes of one entry: got %d", per)
		}
		limit := 3*per + per/2 // room for three entries, not four
		cache := token.NewCache(token.CacheOptions{MaxBytes: limit})
		p := token.NewParser(issuer, signer.PublicKey()).WithCache(cache)
		for i, tok := range toks {
			parseOK(t, p, tok, now)
			if b := cache.Bytes(); b > limit {
				t.Fatalf("token %d: Bytes %d, want at most %d", i, b, limit)
			}
		}
		if n := cache.Len(); n != 3 {
			t.Errorf("Len: got %d, want 3", n)
		}
	})
}

// TestCache_RetiredKey: a token verified by a key is refused by a parser
// sharing the cache that no longer holds that key, as the full check
// refuses it.
func TestCache_RetiredKey(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Second)
	old, cur := token.NewSigner(newKey(t), issuer), token.NewSigner(newKey(t), issuer)
	cache := token.NewCache(token.CacheOptions{})
	both := token.NewParser(issuer, cur.PublicKey(), old.PublicKey()).WithCache(cache)
	tok := tok2(t, old, now)
	parseOK(t, both, tok, now)

	rotated := token.NewParser(issuer, cur.PublicKey()).WithCache(cache)
	if _, err := rotated.Parse(t.Context(), tok, now); !errors.Is(err, account.ErrTokenInvalid) {
		t.Fatalf("token of the retired key: got %v, want ErrTokenInvalid", err)
	}
	// The parser that still holds the key keeps accepting it.
	parseOK(t, both, tok, now)
}

// TestKeySet_CacheRotation: a KeySet reloaded without the key that signed a
// remembered token refuses it; one reloaded with the key still there keeps
// the entry.
func TestKeySet_CacheRotation(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Second)
	c := mock.NewClock(now)
	a, b := newKey(t), newKey(t)
	src := &source{}
	src.publish(a)
	cache := token.NewCache(token.CacheOptions{})
	ks, err := token.NewKeySet(t.Context(), issuer, src, token.KeySetOptions{Now: c.Now, RefreshInterval: time.Minute, Cache: cache})
	if err != nil {
		t.Fatal(err)
	}
	tokA := tok2(t, token.NewSigner(a, issuer), now)
	parseOK(t, ks, tokA, now)

	src.publish(b, a) // rotation: b is current, a the previous key
	c.Advance(time.Minute)
	ks.RefreshIfStale(t.Context())
	parseOK(t, ks, tokA, c.Now())
	if n := cache.Len(); n != 1 {
		t.Fatalf("Len after a reload that keeps the key: got %d, want 1", n)
	}

	src.publish(b) // a retired
	c.Advance(time.Minute)
	ks.RefreshIfStale(t.Context())
	if _, err := ks.Parse(t.Context(), tokA, c.Now()); !errors.Is(err, account.ErrTokenInvalid) {
		t.Fatalf("token of the retired key: got %v, want ErrTokenInvalid", err)
	}
}

// TestCache_Concurrent: many goroutines verify valid and forged tokens
// through a small cache shared by two key sets; every answer is the one a
// full check gives. Run with -race.
func TestCache_Concurrent(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Second)
	a, b := token.NewSigner(newKey(t), issuer), token.NewSigner(newKey(t), issuer)
	cache := token.NewCache(token.CacheOptions{MaxEntries: 8})
	both := token.NewParser(issuer, a.PublicKey(), b.PublicKey()).WithCache(cache)
	onlyA := token.NewParser(issuer, a.PublicKey()).WithCache(cache)
	var toksA, toksB []string
	for range 16 {
		toksA = append(toksA, tok2(t, a, now))
		toksB = append(toksB, tok2(t, b, now))
	}
	forged := tok2(t, token.NewSigner(newKey(t), issuer), now)

	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				at := now.Add(time.Duration(i) * time.Millisecond)
				check := func(p *token.Parser, tok string, valid bool) {
					_, err := p.Parse(t.Context(), tok, at)
					if (err == nil) != valid {
						t.Errorf("goroutine %d: got %v, want valid %v", g, err, valid)
					}
				}
				check(both, toksA[(g+i)%16], true)
				check(both, toksB[(g*3+i)%16], true)
				check(onlyA, toksA[(g+2*i)%16], true)
				check(onlyA, toksB[(g+i)%16], false)
				check(both, forged, false)
			}
		})
	}
	wg.Wait()
	if n := cache.Len(); n > 8 {
		t.Errorf("Len: got %d, want at most 8", n)
	}
}

// TestCache_RS256: the cache serves RS256 parsers as it serves EdDSA ones,
// and refuses the token of an RSA key no longer held.
func TestCache_RS256(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Second)
	other, err := rsa.GenerateKey(rand.Reader, token.RSAKeyBits) // newRSAKey gives one key per binary
	if err != nil {
		t.Fatal(err)
	}
	old, cur := token.NewSigner(other, issuer), token.NewSigner(newRSAKey(t), issuer)
	cache := token.NewCache(token.CacheOptions{})
	both := token.NewParser(issuer, cur.PublicKey(), old.PublicKey()).WithCache(cache)
	tok := tok2(t, old, now)
	parseOK(t, both, tok, now)
	parseOK(t, both, tok, now.Add(time.Second))
	if n := cache.Len(); n != 1 {
		t.Fatalf("Len: got %d, want 1", n)
	}
	rotated := token.NewParser(issuer, cur.PublicKey()).WithCache(cache)
	if _, err := rotated.Parse(t.Context(), tok, now); !errors.Is(err, account.ErrTokenInvalid) {
		t.Fatalf("token of the retired RSA key: got %v, want ErrTokenInvalid", err)
	}
}

func TestCacheOptionsFromEnv(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	t.Run("Defaults", func(t *testing.T) {
		got, err := token.CacheOptionsFromEnv(env(nil))
		if err != nil || got != (token.CacheOptions{}) {
			t.Fatalf("got %+v, %v; want the zero options (the defaults)", got, err)
		}
	})
	t.Run("OK", func(t *testing.T) {
		got, err := token.CacheOptionsFromEnv(env(map[string]string{token.EnvCacheMaxEntries: "1000", token.EnvCacheMaxBytes: "1048576"}))
		if err != nil || got != (token.CacheOptions{MaxEntries: 1000, MaxBytes: 1 << 20}) {
			t.Fatalf("got %+v, %v", got, err)
		}
	})
	for _, bad := range []string{"0", "-1", "16MiB", "1e6", "4294967296"} {
		t.Run("Err/"+bad, func(t *testing.T) {
			_, err := token.CacheOptionsFromEnv(env(map[string]string{token.EnvCacheMaxBytes: bad}))
			if err == nil || !strings.Contains(err.Error(), token.EnvCacheMaxBytes) {
				t.Fatalf("got %v, want an error naming %s", err, token.EnvCacheMaxBytes)
			}
		})
	}
}

// flipFirstSigChar changes the signature's first character, which carries 6
// bits of its first byte: always other bytes. (Overwriting the last two with
// "AA" left a valid token whenever they already decoded to the same bytes,
// one signature in 256.)
func flipFirstSigChar(tok string) string {
	i := strings.LastIndexByte(tok, '.') + 1
	c := byte('A')
	if tok[i] == 'A' {
		c = 'B'
	}
	return tok[:i] + string(c) + tok[i+1:]
}

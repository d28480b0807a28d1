package token

import (
	"crypto/ed25519"
	"errors"
	"strings"
	"testing"
	"time"

	"latchkey/pkg/account"
)

func internalToken(t *testing.T, priv ed25519.PrivateKey, now, exp time.Time) string {
	t.Helper()
	tok, err := NewSigner(priv, "iss").Sign(account.TokenClaims{
		ID:        account.NewID(account.PrefixToken, now),
		KeyID:     account.NewID(account.PrefixAPIKey, now),
		Audience:  "iss",
		Scopes:    []string{"read:users"},
		IssuedAt:  now,
		ExpiresAt: exp,
	})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestCache_ExactKey: an entry is honoured only with the very key that
// verified it, not merely one filed under the same kid.
func TestCache_ExactKey(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Second)
	_, priv, _ := ed25519.GenerateKey(nil)
	other, _, _ := ed25519.GenerateKey(nil)
	pub := priv.Public().(ed25519.PublicKey)
	cache := NewCache(CacheOptions{})
	p := NewParser("iss", pub).WithCache(cache)
	tok := internalToken(t, priv, now, now.Add(time.Hour))
	if _, err := p.Parse(t.Context(), tok, now); err != nil {
		t.Fatal(err)
	}
	swapped := NewParser("iss").WithCache(cache)
	swapped.keys[KeyID(pub)] = other
	if _, ok := cache.get(tok, now, "iss", swapped.keys); ok {
		t.Fatal("an entry was honoured with another key under its kid")
	}
	if _, ok := cache.get(tok, now, "iss", p.keys); !ok {
		t.Fatal("the entry is not honoured with its own key")
	}
}

// TestCache_EvictsSoonestExpiry: beyond its bound the cache drops the entry
// whose token expires first, which has the least use left.
func TestCache_EvictsSoonestExpiry(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Second)
	_, priv, _ := ed25519.GenerateKey(nil)
	cache := NewCache(CacheOptions{MaxEntries: 2})
	p := NewParser("iss", priv.Public().(ed25519.PublicKey)).WithCache(cache)
	late := internalToken(t, priv, now, now.Add(time.Hour))
	early := internalToken(t, priv, now, now.Add(time.Minute))
	mid := internalToken(t, priv, now, now.Add(30*time.Minute))
	for _, tok := range []string{late, early, mid} {
		if _, err := p.Parse(t.Context(), tok, now); err != nil {
			t.Fatal(err)
		}
	}
	for name, tc := range map[string]struct {
		tok  string
		want bool
	}{"Late": {late, true}, "Early": {early, false}, "Mid": {mid, true}} {
		if _, ok := cache.get(tc.tok, now, "iss", p.keys); ok != tc.want {
			t.Errorf("%s: cached %v, want %v", name, ok, tc.want)
		}
	}
}

// TestCache_Issuer: an entry is honoured only by a parser that accepts the
// token's issuer (a KeySet's issuer can change when the deployment records
// a new one).
func TestCache_Issuer(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Second)
	_, priv, _ := ed25519.GenerateKey(nil)
	pub := priv.Public().(ed25519.PublicKey)
	cache := NewCache(CacheOptions{})
	tok := internalToken(t, priv, now, now.Add(time.Hour))
	if _, err := NewParser("iss", pub).WithCache(cache).Parse(t.Context(), tok, now); err != nil {
		t.Fatal(err)
	}
	if _, err := NewParser("https://other.example", pub).WithCache(cache).Parse(t.Context(), tok, now); !errors.Is(err, account.ErrTokenInvalid) {
		t.Fatalf("a parser for another issuer: got %v, want ErrTokenInvalid", err)
	}
}

// TestCache_ClockSetBack: an entry is not used at a time before the one at
// which its token was verified, so every check on time is made afresh.
func TestCache_ClockSetBack(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Second)
	_, priv, _ := ed25519.GenerateKey(nil)
	cache := NewCache(CacheOptions{})
	p := NewParser("iss", priv.Public().(ed25519.PublicKey)).WithCache(cache)
	tok := internalToken(t, priv, now, now.Add(time.Hour))
	at := now.Add(time.Minute)
	if _, err := p.Parse(t.Context(), tok, at); err != nil {
		t.Fatal(err)
	}
	if _, ok := cache.get(tok, at.Add(-time.Second), "iss", p.keys); ok {
		t.Error("the entry was used before the time it was verified at")
	}
	if _, ok := cache.get(tok, at, "iss", p.keys); !ok {
		t.Error("the entry was not used at the time it was verified at")
	}
}

// TestCache_BytesCountTheToken: the cache keeps each token whole, as its
// key, so the memory bound counts the token's bytes with the claims'.
func TestCache_BytesCountTheToken(t *testing.T) {
	now := time.Now()
	tc := account.TokenClaims{ID: "tok_1", KeyID: "key_1", Issuer: "iss", Audience: "iss", ExpiresAt: now.Add(time.Hour)}
	short, long := NewCache(CacheOptions{}), NewCache(CacheOptions{})
	short.put("a.b.c", "kid", nil, tc, now)
	long.put(strings.Repeat("x", 1005), "kid", nil, tc, now)
	if d := long.Bytes() - short.Bytes(); d != 1000 {
		t.Errorf("a token 1,000 bytes longer: Bytes %d more, want 1000", d)
	}
	if _, ok := long.get(strings.Repeat("x", 1004)+"y", now, "iss", nil); ok {
		t.Error("a token differing in its last byte was found in the cache")
	}
}

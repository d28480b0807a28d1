package token_test

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ed25519"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"latchkey/pkg/account"
	"latchkey/pkg/mock"
	"latchkey/pkg/token"
)

// source is a token.KeySource in memory that counts its reads.
type source struct {
	mu     sync.Mutex
	set    []byte
	issuer string
	err    error
	reads  int
}

func (s *source) Published(context.Context) ([]byte, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	if s.err != nil {
		return nil, "", s.err
	}
	if s.set == nil && s.issuer == "" {
		return nil, "", account.Errorf(account.CodeNotFound, "nothing published")
	}
	return s.set, s.issuer, nil
}

func (s *source) record(issuer string) { s.mu.Lock(); s.issuer = issuer; s.mu.Unlock() }

func (s *source) publish(keys ...ed25519.PrivateKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	pub := make([]crypto.PublicKey, 0, len(keys))
	for _, k := range keys {
		pub = append(pub, k.Public())
	}
	s.set = token.JWKS(pub...)
}

func (s *source) fail(err error) { s.mu.Lock(); s.err = err; s.mu.Unlock() }
func (s *source) count() int     { s.mu.Lock(); defer s.mu.Unlock(); return s.reads }

func newKeySet(t *testing.T, src *source, c *mock.Clock, logger *slog.Logger) *token.KeySet {
	t.Helper()
	ks, err := token.NewKeySet(t.Context(), issuer, src, token.KeySetOptions{Logger: logger, Now: c.Now, RefreshInterval: time.Minute})
	if err != nil {
		t.Fatalf("NewKeySet: %v", err)
	}
	return ks
}

// TestKeySet_UnknownKid: a token signed by a key the set does not know
// makes it reload the source once, at most once per
// token.UnknownKidReloadInterval; a known kid never reads the source.
func TestKeySet_UnknownKid(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Second)
	c := mock.NewClock(now)
	a, b, d := newKey(t), newKey(t), newKey(t)
	src := &source{}
	src.publish(a)
	ks := newKeySet(t, src, c, nil)
	tokA := sign(t, token.NewSigner(a, issuer), sampleClaims(now))
	tokB := sign(t, token.NewSigner(b, issuer), sampleClaims(now))
	tokD := sign(t, token.NewSigner(d, issuer), sampleClaims(now))

	if _, err := ks.Parse(t.Context(), tokA, now); err != nil {
		t.Fatalf("known kid: %v", err)
	}
	if got, want := src.count(), 1; got != want {
		t.Fatalf("reads after a known kid: got %d, want %d (the init read only)", got, want)
	}
	src.publish(a, b) // a rotation: the new key is published before it signs
	if _, err := ks.Parse(t.Context(), tokB, now); err != nil {
		t.Fatalf("first token of the new key: %v", err)
	}
	if got, want := src.count(), 2; got != want {
		t.Fatalf("reads after an unknown kid: got %d, want %d", got, want)
	}
	src.publish(a, b, d)
	if _, err := ks.Parse(t.Context(), tokD, now); !errors.Is(err, account.ErrTokenInvalid) {
		t.Fatalf("second unknown kid within the interval: got %v, want ErrTokenInvalid", err)
	}
	if got, want := src.count(), 2; got != want {
		t.Fatalf("reads after a second unknown kid within the interval: got %d, want %d", got, want)
	}
	c.Set(now.Add(token.UnknownKidReloadInterval))
	if _, err := ks.Parse(t.Context(), tokD, now); err != nil {
		t.Fatalf("unknown kid after the interval: %v", err)
	}
	if got, want := src.count(), 3; got != want {
		t.Fatalf("reads after the interval: got %d, want %d", got, want)
	}
}

// TestKeySet_NotPublished: before the issuer has published keys the set
// starts, refuses every token (none can exist), and accepts them once the
// keys are published.
func TestKeySet_NotPublished(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Second)
	c := mock.NewClock(now)
	src := &source{}
	logs := &bytes.Buffer{}
	ks := newKeySet(t, src, c, slog.New(slog.NewJSONHandler(logs, nil)))
	if !strings.Contains(logs.String(), "no public keys published yet") {
		t.Fatalf("no line says the keys are not published yet:\n%s", logs.String())
	}
	key := newKey(t)
	tok := sign(t, token.NewSigner(key, issuer), sampleClaims(now))
	if _, err := ks.Parse(t.Context(), "not-a-token", now); !errors.Is(err, account.ErrTokenInvalid) {
		t.Fatalf("garbage: got %v, want ErrTokenInvalid", err)
	}
	src.publish(key)
	if _, err := ks.Parse(t.Context(), tok, now); err != nil {
		t.Fatalf("after publication: %v", err)
	}
}

// TestKeySet_RefreshIfStale: the set is reloaded once it is older than the
// refresh interval, never before; a failed reload keeps the keys in use,
// is logged, and is retried after token.UnknownKidReloadInterval rather
// than on every request.
func TestKeySet_RefreshIfStale(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Second)
	c := mock.NewClock(now)
	key := newKey(t)
	src := &source{}
	src.publish(key)
	logs := &bytes.Buffer{}
	ks := newKeySet(t, src, c, slog.New(slog.NewJSONHandler(logs, nil)))
	tok := sign(t, token.NewSigner(key, issuer), sampleClaims(now))

	ks.RefreshIfStale(t.Context())
	if got, want := src.count(), 1; got != want {
		t.Fatalf("reads before the interval: got %d, want %d", got, want)
	}
	c.Set(now.Add(time.Minute))
	src.fail(errors.New("connect: connection refused"))
	ks.RefreshIfStale(t.Context())
	if got, want := src.count(), 2; got != want {
		t.Fatalf("reads after the interval: got %d, want %d", got, want)
	}
	if !strings.Contains(logs.String(), "public key refresh failed; keeping the keys in use") {
		t.Fatalf("the failure is not logged:\n%s", logs.String())
	}
	if _, err := ks.Parse(t.Context(), tok, now); err != nil {
		t.Fatalf("after a failed refresh: %v", err)
	}
	ks.RefreshIfStale(t.Context())
	if got, want := src.count(), 2; got != want {
		t.Fatalf("reads right after a failure: got %d, want %d", got, want)
	}
	c.Advance(token.UnknownKidReloadInterval)
	src.fail(nil)
	src.publish(newKey(t)) // the old key is gone: the reload must take effect
	ks.RefreshIfStale(t.Context())
	if got, want := src.count(), 3; got != want {
		t.Fatalf("reads after the retry interval: got %d, want %d", got, want)
	}
	if _, err := ks.Parse(t.Context(), tok, now); !errors.Is(err, account.ErrTokenInvalid) {
		t.Fatalf("a key no longer published: got %v, want ErrTokenInvalid", err)
	}
}

func TestNewKeySet_Err(t *testing.T) {
	for name, src := range map[string]*source{
		"SourceFails": {err: errors.New("connect: connection refused")},
		"NotAJWKS":    {set: []byte("{"), issuer: issuer},
		"RSAKey":      {set: []byte(`{"keys":[{"kty":"RSA","n":"AQAB","e":"AQAB","kid":"r"}]}`), issuer: issuer},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := token.NewKeySet(t.Context(), issuer, src, token.KeySetOptions{}); err == nil {
				t.Fatal("got nil error")
			}
		})
	}
}

// TestKeySet_IssuerFromSource: a KeySet given no issuer takes the one the
// source records. Until there is one it refuses every token and looks again
// every token.UnknownKidReloadInterval, not every refresh interval, since a
// deployment records it moments after the functions start; a new issuer
// replaces the old at the next reload, and a configured issuer is never
// replaced by the source's.
func TestKeySet_IssuerFromSource(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Second)
	c := mock.NewClock(now)
	key := newKey(t)
	src := &source{}
	src.publish(key)
	ks, err := token.NewKeySet(t.Context(), "", src, token.KeySetOptions{Now: c.Now, RefreshInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	tok := sign(t, token.NewSigner(key, issuer), sampleClaims(now))
	if _, err := ks.Parse(t.Context(), tok, now); !errors.Is(err, account.ErrTokenInvalid) || ks.Issuer() != "" {
		t.Fatalf("before an issuer is recorded: got %v, issuer %q; want ErrTokenInvalid and none", err, ks.Issuer())
	}
	src.record(issuer)
	c.Set(now.Add(token.UnknownKidReloadInterval))
	ks.RefreshIfStale(t.Context())
	if _, err := ks.Parse(t.Context(), tok, now); err != nil || ks.Issuer() != issuer {
		t.Fatalf("once it is recorded: got %v, issuer %q; want valid, %s", err, ks.Issuer(), issuer)
	}
	// A new issuer (a custom domain): old tokens are not the new issuer's.
	src.record("https://auth.example.com")
	if err := ks.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := ks.Parse(t.Context(), tok, now); !errors.Is(err, account.ErrTokenInvalid) || ks.Issuer() != "https://auth.example.com" {
		t.Fatalf("after the issuer changed: got %v, issuer %q", err, ks.Issuer())
	}
	fixed, err := token.NewKeySet(t.Context(), issuer, src, token.KeySetOptions{Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fixed.Parse(t.Context(), tok, now); err != nil || fixed.Issuer() != issuer {
		t.Fatalf("a configured issuer: got %v, issuer %q; want valid, %s", err, fixed.Issuer(), issuer)
	}
}

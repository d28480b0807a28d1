package account_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"latchkey/pkg/account"
	"latchkey/pkg/teststore"
	"latchkey/pkg/token"
)

func TestService_Authenticate(t *testing.T) {
	t.Run("ErrUnauthorized", func(t *testing.T) {
		e := newEnv(t)
		for _, c := range []string{"", "lk_unknown", e.secret + "x", "eyJ.eyJ.sig", strings.ToUpper(e.secret)} {
			_, err := e.svc.Authenticate(e.ctx, c)
			if !account.IsCode(err, account.CodeUnauthorized) {
				t.Errorf("Authenticate(%q): got %v, want unauthorized", c, err)
			}
		}
	})
	t.Run("ErrExpiredKey", func(t *testing.T) {
		e := newEnv(t)
		_, secret := e.key(t, "1h", "read:users")
		e.clock.Advance(time.Hour)
		_, err := e.svc.Authenticate(e.ctx, secret)
		wantCode(t, err, account.CodeUnauthorized)
	})
}

func TestService_AuthenticateClient(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		e := newEnv(t)
		p, secret := e.key(t, "", "read:users")
		got, err := e.svc.AuthenticateClient(e.ctx, p.KeyID, secret)
		if err != nil {
			t.Fatalf("AuthenticateClient: %v", err)
		}
		if got.KeyID != p.KeyID || got.IsToken() || !slices.Equal(got.Scopes, []string{"read:users"}) {
			t.Errorf("principal: got %+v, want the key's", got)
		}
	})
	t.Run("ErrUnauthorized", func(t *testing.T) {
		e := newEnv(t)
		p, secret := e.key(t, "", "read:users")
		other, _ := e.key(t, "", "read:users")
		tok, _, err := e.svc.IssueToken(e.ctx, p, account.TokenRequest{Scopes: []string{"read:users"}})
		if err != nil {
			t.Fatal(err)
		}
		for name, c := range map[string][2]string{
			"OtherKeysSecret": {other.KeyID, secret}, // a secret that does not belong to the client_id
			"AdminSecret":     {p.KeyID, e.secret},
			"UnknownKey":      {account.NewID(account.PrefixAPIKey, time.Now()), secret},
			"NotAKeyID":       {"client", secret},
			"NoSecret":        {p.KeyID, ""},
			"WrongSecret":     {p.KeyID, secret + "x"},
			"AccessToken":     {p.KeyID, tok}, // a token is not a client secret
		} {
			if _, err := e.svc.AuthenticateClient(e.ctx, c[0], c[1]); !account.IsCode(err, account.CodeUnauthorized) {
				t.Errorf("%s: got %v, want unauthorized", name, err)
			}
		}
	})
	t.Run("ErrExpiredKey", func(t *testing.T) {
		e := newEnv(t)
		p, secret := e.key(t, "1h", "read:users")
		e.clock.Advance(time.Hour)
		_, err := e.svc.AuthenticateClient(e.ctx, p.KeyID, secret)
		wantCode(t, err, account.CodeUnauthorized)
	})
}
func TestCheckIssuer(t *testing.T) {
	for _, ok := range []string{"https://auth.example.com", "http://127.0.0.1:8080", "https://abc123.execute-api.us-east-1.amazonaws.com", "http://[::1]:8080"} {
		if err := account.CheckIssuer(ok); err != nil {
			t.Errorf("CheckIssuer(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", "latchkey", "auth.example.com", "ftp://auth.example.com", "https://", "https://auth.example.com/",
		"https://auth.example.com/v1", "https://auth.example.com?x=1", "https://auth.example.com#f", "https://u:p@auth.example.com", "https://auth.example.com?"} {
		if err := account.CheckIssuer(bad); err == nil {
			t.Errorf("CheckIssuer(%q): got nil error", bad)
		}
	}
	// A service that signs tokens refuses an issuer that is not a URL.
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	store := teststore.Open(t)
	defer store.Close()
	_, err := account.NewService(store, account.Options{
		CursorKey: []byte("0123456789abcdef0123456789abcdef"),
		Signer:    token.NewSigner(priv, "latchkey"),
		Parser:    token.NewParser("latchkey", priv.Public().(ed25519.PublicKey)),
	})
	if err == nil {
		t.Error("NewService with the issuer \"latchkey\": got nil error")
	}
}

// useCounter is a store that counts the uses of API keys recorded, and can
// be made to fail them.
type useCounter struct {
	account.Store
	mu    sync.Mutex
	calls int
	fail  error
}

func (c *useCounter) RecordAPIKeyUse(ctx context.Context, k account.APIKey, at time.Time) (time.Time, error) {
	c.mu.Lock()
	c.calls++
	fail := c.fail
	c.mu.Unlock()
	if fail != nil {
		return time.Time{}, fail
	}
	return c.Store.RecordAPIKeyUse(ctx, k, at)
}

func (c *useCounter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls
}

// TestService_LastUse: a key's secret authenticating a request records its
// last use, at most once a minute per key in a process; a token of the key
// records nothing (it is not the key's secret); a failure to record is
// logged and the request goes on.
func TestService_LastUse(t *testing.T) {
	counter := &useCounter{Store: teststore.Open(t)}
	var logs bytes.Buffer
	e := newService(t, counter, func(o *account.Options) { o.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
	svc, c, ctx := e.svc, e.clock, e.ctx
	secret := account.NewAPIKeySecret()
	if err := svc.EnsureBootstrapKey(ctx, secret, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if n := counter.count(); n != 0 {
		t.Fatalf("EnsureBootstrapKey recorded %d uses, want none: it authenticates no request", n)
	}
	admin, err := svc.Authenticate(ctx, secret)
	if err != nil {
		t.Fatal(err)
	}
	first := c.Now()
	lastUse := func() time.Time {
		t.Helper()
		k, err := svc.GetAPIKey(ctx, admin, admin.KeyID)
		if err != nil {
			t.Fatal(err)
		}
		return k.LastUsedAt
	}
	if got := lastUse(); !got.Equal(first) {
		t.Errorf("LastUsedAt after the first request: got %v, want %v", got, first)
	}
	tok, _, err := svc.IssueToken(ctx, admin, account.TokenRequest{Scopes: []string{"read:users"}})
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		c.Advance(10 * time.Second)
		if _, err := svc.Authenticate(ctx, secret); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Authenticate(ctx, tok); err != nil {
			t.Fatal(err)
		}
	}
	if n := counter.count(); n != 1 {
		t.Errorf("uses recorded within a minute: got %d, want 1", n)
	}
	if got := lastUse(); !got.Equal(first) {
		t.Errorf("LastUsedAt within the minute: got %v, want the first use %v", got, first)
	}
	c.Advance(10 * time.Second) // a minute after the first
	if _, err := svc.Authenticate(ctx, secret); err != nil {
		t.Fatal(err)
	}
	if n, got := counter.count(), lastUse(); n != 2 || !got.Equal(c.Now()) {
		t.Errorf("a minute later: %d uses recorded, LastUsedAt %v; want 2 and %v", n, got, c.Now())
	}

	// The store fails: the request authenticates all the same, the
	// failure is logged, and the process waits a minute before trying again.
	counter.mu.Lock()
	counter.fail = errors.New("disk on fire")
	counter.mu.Unlock()
	c.Advance(time.Minute)
	for range 3 {
		if _, err := svc.Authenticate(ctx, secret); err != nil {
			t.Fatalf("Authenticate while the last use cannot be recorded: %v", err)
		}
	}
	if n := counter.count(); n != 3 {
		t.Errorf("uses recorded: got %d, want 3 (one failed try)", n)
	}
	if !strings.Contains(logs.String(), "the last use of an API key was not recorded") || !strings.Contains(logs.String(), admin.KeyID) {
		t.Errorf("log: %q, want a warning naming the key", logs.String())
	}
}

package account_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"latchkey/pkg/account"
	"latchkey/pkg/boltstore"
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
	store, err := boltstore.Open(filepath.Join(t.TempDir(), "latchkey.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	_, err = account.NewService(store, account.Options{
		CursorKey: []byte("0123456789abcdef0123456789abcdef"),
		Signer:    token.NewSigner(priv, "latchkey"),
		Parser:    token.NewParser("latchkey", priv.Public().(ed25519.PublicKey)),
	})
	if err == nil {
		t.Error("NewService with the issuer \"latchkey\": got nil error")
	}
}

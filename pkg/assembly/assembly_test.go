package assembly_test

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"latchkey/pkg/account"
	"latchkey/pkg/assembly"
	"latchkey/pkg/boltstore"
	"latchkey/pkg/token"
)

const issuer = "https://latchkey.test"

func newStore(t *testing.T) account.Store {
	t.Helper()
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "latchkey.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func sealKey(t *testing.T, priv ed25519.PrivateKey) []byte {
	t.Helper()
	k, err := assembly.SealKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func newKey(t *testing.T) ed25519.PrivateKey {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	return priv
}

// TestNew checks the one way a service is put together: a process with a
// signing key signs, publishes and accepts its own key and the previous
// ones, current first; a process without one verifies with what it is given.
func TestNew(t *testing.T) {
	cursorKey := bytes.Repeat([]byte("c"), 32)

	t.Run("Signing", func(t *testing.T) {
		current, previous := newKey(t), newKey(t)
		asm, err := assembly.New(assembly.Parts{
			Store: newStore(t), CursorKey: cursorKey, Issuer: issuer,
			SigningKey: current, PreviousKeys: []crypto.PublicKey{previous.Public()},
			PreviousSealKeys: [][]byte{sealKey(t, previous)},
		})
		if err != nil {
			t.Fatal(err)
		}
		// Answers stored for Idempotency-Key are sealed under the signing
		// key's seal key, and those of the previous key still open.
		if got, want := asm.Config.SealKeys, [][]byte{sealKey(t, current), sealKey(t, previous)}; !slices.EqualFunc(got, want, bytes.Equal) {
			t.Errorf("SealKeys: got %x, want %x", got, want)
		}
		var set struct{ Keys []struct{ Kid string } }
		if err := json.Unmarshal(asm.JWKS, &set); err != nil {
			t.Fatalf("JWKS %s: %v", asm.JWKS, err)
		}
		var kids []string
		for _, k := range set.Keys {
			kids = append(kids, k.Kid)
		}
		want := []string{token.KeyID(current.Public().(ed25519.PublicKey)), token.KeyID(previous.Public().(ed25519.PublicKey))}
		if !slices.Equal(kids, want) {
			t.Errorf("JWKS kids: got %q, want %q", kids, want)
		}
		if served, err := asm.Config.JWKS(context.Background()); err != nil || !bytes.Equal(served, asm.JWKS) {
			t.Errorf("served JWKS: got %s, %v; want the published one", served, err)
		}
		// A token signed before the rotation is still accepted.
		now := time.Now().Truncate(time.Second)
		old, err := token.NewSigner(previous, issuer).Sign(account.TokenClaims{
			ID: account.NewID(account.PrefixToken, now), KeyID: account.NewID(account.PrefixAPIKey, now),
			Audience: issuer, Scopes: []string{"read:users"}, IssuedAt: now, ExpiresAt: now.Add(time.Hour),
		})
		if err != nil {
			t.Fatal(err)
		}
		v, err := asm.Service.VerifyToken(context.Background(), old)
		if err != nil || v.Reason == account.ReasonInvalid {
			t.Errorf("token of the previous key: got %+v, %v; want its signature accepted", v, err)
		}
	})

	t.Run("Verifying", func(t *testing.T) {
		signer := token.NewSigner(newKey(t), issuer)
		asm, err := assembly.New(assembly.Parts{
			Store: newStore(t), CursorKey: cursorKey, Issuer: issuer,
			Verifier: token.NewParser(issuer, signer.PublicKey()),
		})
		if err != nil {
			t.Fatal(err)
		}
		if asm.Signer != nil || asm.JWKS != nil || asm.Config.JWKS != nil || asm.Config.SealKeys != nil {
			t.Errorf("a verifying process got a signer, a key set to serve or seal keys: %+v", asm)
		}
	})

	t.Run("NoKeys", func(t *testing.T) {
		if _, err := assembly.New(assembly.Parts{Store: newStore(t), CursorKey: cursorKey, Issuer: issuer}); err == nil {
			t.Fatal("no signing key and no verifier: got no error")
		}
	})
}

// TestNew_Algorithm: the keys must be of the one configured algorithm; an
// RS256 assembly signs RS256 tokens and names RS256 in its handler's
// configuration, which the discovery documents serve.
func TestNew_Algorithm(t *testing.T) {
	cursorKey := bytes.Repeat([]byte("c"), 32)
	rsaKey, err := rsa.GenerateKey(rand.Reader, token.RSAKeyBits)
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range map[string]assembly.Parts{
		"EdDSAKeyForRS256":       {SigningKey: newKey(t), Algorithm: token.RS256},
		"RSAKeyForEdDSA":         {SigningKey: rsaKey},
		"PreviousOfTheOtherKind": {SigningKey: rsaKey, Algorithm: token.RS256, PreviousKeys: []crypto.PublicKey{newKey(t).Public()}},
	} {
		p.Store, p.CursorKey, p.Issuer = newStore(t), cursorKey, issuer
		if _, err := assembly.New(p); err == nil {
			t.Errorf("%s: got nil error", name)
		}
	}
	asm, err := assembly.New(assembly.Parts{Store: newStore(t), CursorKey: cursorKey, Issuer: issuer, SigningKey: rsaKey, Algorithm: token.RS256})
	if err != nil {
		t.Fatal(err)
	}
	if asm.Signer.Algorithm() != token.RS256 || asm.Config.SigningAlgorithm != "RS256" {
		t.Fatalf("got signer %s, handler %q; want RS256", asm.Signer.Algorithm(), asm.Config.SigningAlgorithm)
	}
}

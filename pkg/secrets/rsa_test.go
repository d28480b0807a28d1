package secrets_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"sync"
	"testing"

	"latchkey/pkg/secrets"
)

// TestEnsureRSASigningKey runs against moto_server with the real SDK: an
// RS256 deployment's bootstrap replaces the random string the template
// generates by a 2048-bit RSA key in PEM, as a new version, so that the
// string becomes AWSPREVIOUS; it leaves an RSA key in place; and two
// instances that replace the same version at once make one new version.
func TestEnsureRSASigningKey(t *testing.T) {
	sm := newClient(t)
	ctx := context.Background()
	const generated = "generated-0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQR"

	t.Run("ReplacesRandomString", func(t *testing.T) {
		arn := createSecret(t, sm, generated)
		replaced, err := secrets.EnsureRSASigningKey(ctx, sm, arn)
		if err != nil || !replaced {
			t.Fatalf("got %v, %v; want replaced", replaced, err)
		}
		got, err := secrets.NewCache(sm, secrets.Options{}).GetWithPrevious(ctx, arn)
		if err != nil {
			t.Fatal(err)
		}
		key, err := secrets.RSASigningKey(got.Current.Value)
		if err != nil || key.N.BitLen() != secrets.RSAKeyBits {
			t.Fatalf("current: %v, %v; want an RSA key of %d bits", key, err, secrets.RSAKeyBits)
		}
		if got.Previous.Value != generated {
			t.Fatalf("previous: got %q, want the generated string", got.Previous.Value)
		}
		// Again: the key stays.
		if replaced, err := secrets.EnsureRSASigningKey(ctx, sm, arn); err != nil || replaced {
			t.Fatalf("second run: got %v, %v; want it kept", replaced, err)
		}
		again, err := secrets.NewCache(sm, secrets.Options{}).Get(ctx, arn)
		if err != nil || again.Current.ID != got.Current.ID {
			t.Fatalf("second run: version %q, want %q (%v)", again.Current.ID, got.Current.ID, err)
		}
	})

	t.Run("Concurrent", func(t *testing.T) {
		arn := createSecret(t, sm, generated)
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = secrets.EnsureRSASigningKey(ctx, sm, arn)
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("instance %d: %v", i, err)
			}
		}
		got, err := secrets.NewCache(sm, secrets.Options{}).GetWithPrevious(ctx, arn)
		if err != nil {
			t.Fatal(err)
		}
		// One new version: the one before the RSA key is the generated string.
		if !secrets.IsRSASigningKey(got.Current.Value) || got.Previous.Value != generated {
			t.Fatalf("current is RSA: %v; previous %q, want the generated string", secrets.IsRSASigningKey(got.Current.Value), got.Previous.Value)
		}
	})
}

func TestRSASigningKey(t *testing.T) {
	pemOf := func(typ string, der []byte) string {
		return string(pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}))
	}
	k2048, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	k1024, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	// A byte more than the largest: its signatures would
	// make the longest token too long to issue.
	kLarge, err := rsa.GenerateKey(rand.Reader, secrets.MaxRSAKeyBits+8)
	if err != nil {
		t.Fatal(err)
	}
	pkcs8 := func(k any) []byte {
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return der
	}
	_, edKey, _ := ed25519.GenerateKey(nil)
	for name, s := range map[string]string{
		"PKCS8": pemOf("PRIVATE KEY", pkcs8(k2048)),
		"PKCS1": pemOf("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(k2048)),
	} {
		if _, err := secrets.RSASigningKey(s); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	for name, s := range map[string]string{
		"RandomString": "generated-0123456789abcdefghijklmnopqrstuvwxyz",
		"RSA1024":      pemOf("PRIVATE KEY", pkcs8(k1024)),
		"RSA4104":      pemOf("PRIVATE KEY", pkcs8(kLarge)),
		"Ed25519":      pemOf("PRIVATE KEY", pkcs8(edKey)),
		"PublicKey":    pemOf("PUBLIC KEY", []byte("x")),
	} {
		if _, err := secrets.RSASigningKey(s); err == nil {
			t.Errorf("%s: got nil error", name)
		}
	}
	generated, err := secrets.GenerateRSASigningKey()
	if err != nil {
		t.Fatal(err)
	}
	if k, err := secrets.RSASigningKey(generated); err != nil || k.N.BitLen() != secrets.RSAKeyBits {
		t.Fatalf("generated: %v, %v", k, err)
	}
}

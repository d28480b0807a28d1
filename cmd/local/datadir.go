package main

import (
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"latchkey/pkg/token"
)

// dataDir holds the local server's state: the database and the secrets that
// Secrets Manager holds in the cloud. Files are created 0600 in a 0700
// directory, once, so restarting keeps tokens and cursors valid.
type dataDir string

func openDataDir(path string) (dataDir, error) {
	if err := os.MkdirAll(path, 0o700); err != nil {
		return "", fmt.Errorf("create data directory %s: %w", path, err)
	}
	return dataDir(path), nil
}

func (d dataDir) path(name string) string { return filepath.Join(string(d), name) }

// signingKey loads the signing key of alg, generating it on first start:
// the Ed25519 key for EdDSA, and for RS256 an RSA key of token.RSAKeyBits
// in a file of its own beside it, so that switching back and forth keeps
// each key (though not the tokens: a server accepts one algorithm).
func (d dataDir) signingKey(alg token.Algorithm) (crypto.Signer, error) {
	if alg == token.RS256 {
		return d.rsaSigningKey()
	}
	return d.ed25519SigningKey()
}

// rsaSigningKey loads the RSA signing key, generating it on first start.
func (d dataDir) rsaSigningKey() (*rsa.PrivateKey, error) {
	const name = "signing-key-rs256.pem"
	raw, err := d.secretFile(name, func() ([]byte, error) {
		priv, err := rsa.GenerateKey(rand.Reader, token.RSAKeyBits)
		if err != nil {
			return nil, err
		}
		der, err := x509.MarshalPKCS8PrivateKey(priv)
		if err != nil {
			return nil, err
		}
		return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
	})
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(raw)
	if block == nil || block.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("%s is not a PEM private key", d.path(name))
	}
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", d.path(name), err)
	}
	priv, ok := key.(*rsa.PrivateKey)
	if !ok || priv.N.BitLen() < token.MinRSAKeyBits {
		return nil, fmt.Errorf("%s is not an RSA key of at least %d bits", d.path(name), token.MinRSAKeyBits)
	}
	return priv, nil
}

// ed25519SigningKey loads the Ed25519 signing key, generating it on first start.
func (d dataDir) ed25519SigningKey() (ed25519.PrivateKey, error) {
	raw, err := d.secretFile("signing-key.pem", func() ([]byte, error) {
		_, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return nil, err
		}
		der, err := x509.MarshalPKCS8PrivateKey(priv)
		if err != nil {
			return nil, err
		}
		return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
	})
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(raw)
	if block == nil || block.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("%s is not a PEM private key", d.path("signing-key.pem"))
	}
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", d.path("signing-key.pem"), err)
	}
	priv, ok := key.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("%s is not an Ed25519 key", d.path("signing-key.pem"))
	}
	return priv, nil
}

// cursorKey loads the HMAC key that signs list cursors, generating it on first start.
func (d dataDir) cursorKey() ([]byte, error) {
	key, err := d.secretFile("cursor.key", func() ([]byte, error) {
		b := make([]byte, 32)
		_, err := rand.Read(b)
		return b, err
	})
	if err == nil && len(key) < 32 {
		err = fmt.Errorf("%s is shorter than 32 bytes", d.path("cursor.key"))
	}
	return key, err
}

// secretFile reads a file, creating it with generate on first use. O_EXCL
// makes two servers started at once agree on one value.
func (d dataDir) secretFile(name string, generate func() ([]byte, error)) ([]byte, error) {
	path := d.path(name)
	if b, err := os.ReadFile(path); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return b, err
	}
	b, err := generate()
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return os.ReadFile(path)
	}
	if err != nil {
		return nil, err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		os.Remove(path)
		return nil, err
	}
	return b, f.Close()
}

// adminKeyPending names the file that exists while a generated admin key is
// stored but not yet shown: from just before the key is created until it has
// been printed. A start that finds it knows that the key in the store was
// never shown (the start that made it failed or was killed), and replaces it.
const adminKeyPending = "admin-key-pending"

func (d dataDir) adminKeyPending() (bool, error) {
	_, err := os.Stat(d.path(adminKeyPending))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// markAdminKeyPending creates the file durably, before the key it stands for
// is stored, so that no crash can leave a stored key unshown and unmarked.
func (d dataDir) markAdminKeyPending() error {
	f, err := os.OpenFile(d.path(adminKeyPending), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.WriteString("A generated admin key was stored but not yet shown; the next start replaces it and prints the new one.\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	dir, err := os.Open(string(d))
	if err != nil {
		return err
	}
	defer dir.Close()
	return dir.Sync()
}

// clearAdminKeyPending removes the file once the key has been shown, or
// replaced by a configured one.
func (d dataDir) clearAdminKeyPending() error {
	err := os.Remove(d.path(adminKeyPending))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

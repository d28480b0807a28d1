// Package secrets loads Latchkey's secrets from AWS Secrets Manager, keeps
// them in memory and refreshes them on a schedule, so that a rotated secret
// reaches every warm Lambda within one refresh interval without a redeploy.
//
// The template creates each secret with GenerateSecretString, which yields a
// random printable string. The functions here turn those strings into keys:
// SigningKey derives the Ed25519 signing key from one (the seed is the
// SHA-256 of the string), CursorKey derives the list-cursor HMAC key, and
// the bootstrap admin API key is the string itself.
//
// Refresh policy. A value is fetched on first use and then again on the
// first Get after RefreshInterval (DefaultRefreshInterval, 5 minutes) has
// passed. A Lambda's background goroutines are frozen between invocations,
// so the refresh happens on the request path, at most once per interval.
// If a refresh fails, the last good value stays in use, the failure is
// logged (the secret id and the error, never a value), and the next attempt
// waits RetryAfterFailure (30 seconds), so that an outage of Secrets Manager
// neither takes the API down nor adds a timed-out call to every request.
// Only a secret that has never been fetched makes Get fail.
package secrets

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"
)

// DefaultRefreshInterval is how old a value may get before Get fetches it
// again. Five minutes bounds how long a rotated admin key or signing key
// takes to reach every warm function, while costing each warm container
// only 12 GetSecretValue calls an hour per secret.
const DefaultRefreshInterval = 5 * time.Minute

// RetryAfterFailure is how long Get keeps serving the last good value after
// a failed refresh before it tries Secrets Manager again.
const RetryAfterFailure = 30 * time.Second

// MinSecretLength is the shortest secret string accepted by SigningKey and
// CursorKey: 32 characters of a generated string carry well over 128 bits.
const MinSecretLength = 32

// Client is the part of the Secrets Manager API that Cache calls.
// *secretsmanager.Client satisfies it.
type Client interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, optFns ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

var _ Client = (*secretsmanager.Client)(nil)

// Version is one version of a secret.
type Version struct {
	// ID is Secrets Manager's version id; it changes when the secret is
	// rotated, so callers compare it to know when to rebuild derived keys.
	ID string
	// Value is the SecretString.
	Value string
	// CreatedAt is when Secrets Manager created the version. Unlike ID it
	// orders versions, so that what is derived from a secret (the published
	// public keys, the bootstrap admin key) is never replaced by what an
	// instance still holding an older version derives.
	CreatedAt time.Time
}

// Value is what Cache holds of one secret.
type Value struct {
	// Current is the version labelled AWSCURRENT.
	Current Version
	// Previous is the version labelled AWSPREVIOUS, fetched only by
	// GetWithPrevious; zero when the secret has never been rotated.
	Previous Version
}

// Options configure a Cache.
type Options struct {
	// RefreshInterval is DefaultRefreshInterval when zero.
	RefreshInterval time.Duration
	// Logger receives failed refreshes; slog.Default() when nil.
	Logger *slog.Logger
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Cache holds secrets in memory and refreshes them. It is safe for
// concurrent use.
type Cache struct {
	client   Client
	interval time.Duration
	logger   *slog.Logger
	now      func() time.Time

	mu      sync.Mutex
	entries map[string]*entry
}

type entry struct {
	// mu serialises fetches of one secret, so that concurrent requests that
	// find it stale make one call, not one each.
	mu          sync.Mutex
	value       Value
	loaded      bool
	fetchedAt   time.Time
	attemptedAt time.Time
}

// NewCache returns an empty Cache that reads through client.
func NewCache(client Client, opts Options) *Cache {
	c := &Cache{client: client, interval: opts.RefreshInterval, logger: opts.Logger, now: opts.Now, entries: map[string]*entry{}}
	if c.interval <= 0 {
		c.interval = DefaultRefreshInterval
	}
	if c.logger == nil {
		c.logger = slog.Default()
	}
	if c.now == nil {
		c.now = time.Now
	}
	return c
}

// Get returns the current version of the secret id (a name or an ARN),
// fetching it on first use and when the cached value is older than the
// refresh interval. After a failed refresh it returns the last good value
// and a nil error; it fails only if the secret was never fetched.
func (c *Cache) Get(ctx context.Context, id string) (Value, error) {
	return c.get(ctx, id, false)
}

// GetWithPrevious is Get that also fetches the AWSPREVIOUS version, for a
// signing key whose tokens must stay verifiable after a rotation. It keys
// its cache entry apart from Get's, so mixing the two on one id is safe.
func (c *Cache) GetWithPrevious(ctx context.Context, id string) (Value, error) {
	return c.get(ctx, id, true)
}

// Key names a secret for Load: its id, and whether it is read with
// GetWithPrevious.
type Key struct {
	ID       string
	Previous bool
}

// Load fetches, all at once, those of the keys that Get (or
// GetWithPrevious) would fetch now, so that a cold start, or a refresh of
// several secrets, waits for one round trip to Secrets Manager instead of
// one per secret; the Gets that follow answer from the cache. It starts no
// goroutine when nothing is due, which is the case on all but a few
// requests. Its error joins those Get would return: only a secret never
// fetched fails.
func (c *Cache) Load(ctx context.Context, keys ...Key) error {
	var due []Key
	for _, k := range keys {
		e := c.entry(k.ID, k.Previous)
		e.mu.Lock()
		fresh := c.fresh(e, c.now())
		e.mu.Unlock()
		if !fresh {
			due = append(due, k)
		}
	}
	errs := make([]error, len(due))
	var wg sync.WaitGroup
	for i, k := range due {
		wg.Go(func() { _, errs[i] = c.get(ctx, k.ID, k.Previous) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// entry returns the cache entry of id, creating it.
func (c *Cache) entry(id string, previous bool) *entry {
	key := id
	if previous {
		key = "previous\x00" + id
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[key]
	if e == nil {
		e = &entry{}
		c.entries[key] = e
	}
	return e
}

// fresh reports whether e's value is served without a fetch at now: it is
// younger than the refresh interval, or a refresh failed too recently to
// try again. e.mu must be held.
func (c *Cache) fresh(e *entry, now time.Time) bool {
	return e.loaded && (now.Sub(e.fetchedAt) < c.interval || now.Sub(e.attemptedAt) < RetryAfterFailure)
}

func (c *Cache) get(ctx context.Context, id string, previous bool) (Value, error) {
	e := c.entry(id, previous)
	e.mu.Lock()
	defer e.mu.Unlock()
	now := c.now()
	if c.fresh(e, now) {
		return e.value, nil
	}
	e.attemptedAt = now
	v, err := c.fetch(ctx, id, previous)
	if err != nil {
		if !e.loaded {
			return Value{}, err
		}
		c.logger.WarnContext(ctx, "secret refresh failed; keeping the last good value",
			"secret", id, "age", now.Sub(e.fetchedAt).Round(time.Second).String(), "retry_in", RetryAfterFailure.String(), "error", err.Error())
		return e.value, nil
	}
	e.value, e.loaded, e.fetchedAt = v, true, now
	return v, nil
}

// fetch reads the current version of id and, with previous, the previous
// one, both at once.
func (c *Cache) fetch(ctx context.Context, id string, previous bool) (Value, error) {
	var prev Version
	var prevErr error
	var wg sync.WaitGroup
	if previous {
		wg.Go(func() { prev, prevErr = c.version(ctx, id, "AWSPREVIOUS") })
	}
	cur, err := c.version(ctx, id, "AWSCURRENT")
	wg.Wait()
	if err != nil {
		return Value{}, err
	}
	v := Value{Current: cur}
	if previous {
		var nf *types.ResourceNotFoundException
		switch {
		case errors.As(prevErr, &nf):
			// Never rotated: there is no previous version.
		case prevErr != nil:
			return Value{}, prevErr
		default:
			v.Previous = prev
		}
	}
	return v, nil
}

func (c *Cache) version(ctx context.Context, id, stage string) (Version, error) {
	out, err := c.client.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(id), VersionStage: aws.String(stage)})
	if err != nil {
		return Version{}, fmt.Errorf("secrets: get %s of %s: %w", stage, id, err)
	}
	if out.SecretString == nil {
		return Version{}, fmt.Errorf("secrets: %s of %s has no SecretString; Latchkey's secrets are strings", stage, id)
	}
	return Version{ID: aws.ToString(out.VersionId), Value: *out.SecretString, CreatedAt: aws.ToTime(out.CreatedDate)}, nil
}

// SigningKey derives the Ed25519 signing key from a secret string: the
// private key's seed is SHA-256(secret). GenerateSecretString cannot make an
// Ed25519 key, but it can make a long random string, and hashing it gives a
// uniformly random 32-byte seed. The same string always gives the same key,
// so every instance of the auth function signs with one key.
func SigningKey(secret string) (ed25519.PrivateKey, error) {
	if len(secret) < MinSecretLength {
		return nil, fmt.Errorf("secrets: the signing key secret must be at least %d characters", MinSecretLength)
	}
	seed := sha256.Sum256([]byte(secret))
	return ed25519.NewKeyFromSeed(seed[:]), nil
}

// CursorKey derives the HMAC key that signs list cursors from a secret
// string: SHA-256(secret), 32 uniformly random bytes whatever the string's
// alphabet.
func CursorKey(secret string) ([]byte, error) {
	if len(secret) < MinSecretLength {
		return nil, fmt.Errorf("secrets: the cursor key secret must be at least %d characters", MinSecretLength)
	}
	sum := sha256.Sum256([]byte(secret))
	return sum[:], nil
}

// RSAKeyBits is the size of the RSA signing keys GenerateRSASigningKey
// makes: token.RSAKeyBits, which says why 2048.
const RSAKeyBits = 2048

// MaxRSAKeyBits is the largest RSA signing key RSASigningKey accepts:
// token.MaxRSAKeyBits, which says why (a larger key's signature would make
// the longest token too long to issue).
const MaxRSAKeyBits = 4096

// IsRSASigningKey reports whether a signing secret string holds an RSA
// private key in PEM (PKCS #8, as GenerateRSASigningKey writes, or PKCS #1,
// as older openssl writes), as a deployment that signs with RS256 keeps.
func IsRSASigningKey(secret string) bool {
	_, err := RSASigningKey(secret)
	return err == nil
}

// RSASigningKey parses the RSA signing key of an RS256 deployment from a
// secret string, a PEM private key of at least RSAKeyBits bits.
func RSASigningKey(secret string) (*rsa.PrivateKey, error) {
	block, _ := pem.Decode([]byte(secret))
	if block == nil {
		return nil, errors.New("secrets: the signing key secret is not a PEM RSA private key")
	}
	var key any
	var err error
	switch block.Type {
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	default:
		return nil, errors.New("secrets: the signing key secret is not a PEM RSA private key")
	}
	if err != nil {
		return nil, errors.New("secrets: the signing key secret is not a valid PEM RSA private key")
	}
	rk, ok := key.(*rsa.PrivateKey)
	// A larger key's signatures would make the longest tokens too long to
	// issue (MaxRSAKeyBits).
	if !ok || rk.N.BitLen() < RSAKeyBits || rk.N.BitLen() > MaxRSAKeyBits {
		return nil, fmt.Errorf("secrets: the signing key secret is not an RSA private key of %d to %d bits", RSAKeyBits, MaxRSAKeyBits)
	}
	return rk, nil
}

// GenerateRSASigningKey returns a new RSAKeyBits-bit RSA private key in
// PKCS #8 PEM, the value an RS256 deployment keeps in its signing secret.
func GenerateRSASigningKey() (string, error) {
	k, err := rsa.GenerateKey(rand.Reader, RSAKeyBits)
	if err != nil {
		return "", err
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return "", err
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})), nil
}

// Writer is the part of the Secrets Manager API that PutRSASigningKey
// calls. *secretsmanager.Client satisfies it.
type Writer interface {
	PutSecretValue(ctx context.Context, in *secretsmanager.PutSecretValueInput, optFns ...func(*secretsmanager.Options)) (*secretsmanager.PutSecretValueOutput, error)
}

var _ Writer = (*secretsmanager.Client)(nil)

// PutRSASigningKey stores a new RSA signing key as the current version of
// the secret id, replacing current, a value that is not one (the random
// string the template generates, or an Ed25519 deployment's). Secrets
// Manager labels the replaced version AWSPREVIOUS. The request token is
// derived from current's version id, so that two instances replacing the
// same version at once make one new version: the second's differing value
// is refused, and it is told to read the secret again. It never logs or
// returns the value.
func PutRSASigningKey(ctx context.Context, w Writer, id string, current Version) error {
	value, err := GenerateRSASigningKey()
	if err != nil {
		return fmt.Errorf("secrets: generate an RSA signing key: %w", err)
	}
	sum := sha256.Sum256([]byte("rs256\x00" + current.ID))
	_, err = w.PutSecretValue(ctx, &secretsmanager.PutSecretValueInput{
		SecretId:           aws.String(id),
		SecretString:       aws.String(value),
		ClientRequestToken: aws.String(hex.EncodeToString(sum[:16])),
	})
	if err != nil {
		return fmt.Errorf("secrets: put an RSA signing key into %s: %w", id, err)
	}
	return nil
}

// ReadWriter reads and writes secrets: what EnsureRSASigningKey calls.
type ReadWriter interface {
	Client
	Writer
}

// EnsureRSASigningKey makes the current version of the signing secret id
// an RSA private key in PEM, for a deployment that signs with RS256: if it
// holds anything else, it puts a new one (PutRSASigningKey), and reports
// that it did. If that fails because another instance replaced the same
// version at that moment, the secret is read again and the other's key is
// kept.
func EnsureRSASigningKey(ctx context.Context, c ReadWriter, id string) (replaced bool, err error) {
	cache := NewCache(c, Options{})
	cur, err := cache.version(ctx, id, "AWSCURRENT")
	if err != nil {
		return false, err
	}
	if IsRSASigningKey(cur.Value) {
		return false, nil
	}
	putErr := PutRSASigningKey(ctx, c, id, cur)
	if putErr == nil {
		return true, nil
	}
	if again, err := cache.version(ctx, id, "AWSCURRENT"); err == nil && IsRSASigningKey(again.Value) {
		return false, nil
	}
	return false, putErr
}

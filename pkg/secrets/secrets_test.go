package secrets_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"

	"latchkey/pkg/mock"
	"latchkey/pkg/secrets"
)

// EndpointEnv names the moto_server endpoint that scripts/moto.sh exports.
const EndpointEnv = "LATCHKEY_TEST_SECRETSMANAGER_ENDPOINT"

// newClient returns the real SDK client pointed at moto_server, or skips.
func newClient(tb testing.TB) *secretsmanager.Client {
	tb.Helper()
	endpoint := os.Getenv(EndpointEnv)
	if endpoint == "" {
		tb.Skip(EndpointEnv + " is not set; run through scripts/moto.sh (make test does)")
	}
	return secretsmanager.New(secretsmanager.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
	})
}

// createSecret creates a uniquely named secret and returns its ARN.
func createSecret(tb testing.TB, c *secretsmanager.Client, value string) string {
	tb.Helper()
	b := make([]byte, 6)
	rand.Read(b)
	out, err := c.CreateSecret(context.Background(), &secretsmanager.CreateSecretInput{
		Name:         aws.String("latchkey-test-" + hex.EncodeToString(b)),
		SecretString: aws.String(value),
	})
	if err != nil {
		tb.Fatalf("CreateSecret: %v", err)
	}
	return aws.ToString(out.ARN)
}

func putValue(tb testing.TB, c *secretsmanager.Client, id, value string) {
	tb.Helper()
	if _, err := c.PutSecretValue(context.Background(), &secretsmanager.PutSecretValueInput{SecretId: aws.String(id), SecretString: aws.String(value)}); err != nil {
		tb.Fatalf("PutSecretValue: %v", err)
	}
}

// countingClient counts the calls that reach Secrets Manager.
type countingClient struct {
	secrets.Client
	mu    sync.Mutex
	calls int
}

func (c *countingClient) GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, optFns ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	c.mu.Lock()
	c.calls++
	c.mu.Unlock()
	return c.Client.GetSecretValue(ctx, in, optFns...)
}

func (c *countingClient) Calls() int { c.mu.Lock(); defer c.mu.Unlock(); return c.calls }

func TestCache_Get(t *testing.T) {
	sm := newClient(t)
	ctx := context.Background()

	t.Run("OK", func(t *testing.T) {
		arn := createSecret(t, sm, "first-value-0123456789abcdefghijklmnop")
		client := &countingClient{Client: sm}
		clk := mock.NewClock(time.Unix(1_700_000_000, 0))
		cache := secrets.NewCache(client, secrets.Options{Now: clk.Now})
		got, err := cache.Get(ctx, arn)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := got.Current.Value, "first-value-0123456789abcdefghijklmnop"; got != want {
			t.Fatalf("value: got %q, want %q", got, want)
		}
		if got.Current.ID == "" {
			t.Fatal("version id is empty")
		}
		// Within the interval the value comes from memory.
		clk.Advance(secrets.DefaultRefreshInterval - time.Second)
		if _, err := cache.Get(ctx, arn); err != nil {
			t.Fatal(err)
		}
		if got, want := client.Calls(), 1; got != want {
			t.Fatalf("calls within the interval: got %d, want %d", got, want)
		}
	})

	t.Run("RefreshAfterRotation", func(t *testing.T) {
		arn := createSecret(t, sm, "old-value-0123456789abcdefghijklmnopqr")
		clk := mock.NewClock(time.Unix(1_700_000_000, 0))
		cache := secrets.NewCache(sm, secrets.Options{Now: clk.Now})
		before, err := cache.Get(ctx, arn)
		if err != nil {
			t.Fatal(err)
		}
		putValue(t, sm, arn, "new-value-0123456789abcdefghijklmnopqr")
		if got, _ := cache.Get(ctx, arn); got.Current.Value != before.Current.Value {
			t.Fatalf("value changed before the interval: got %q", got.Current.Value)
		}
		clk.Advance(secrets.DefaultRefreshInterval)
		after, err := cache.Get(ctx, arn)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := after.Current.Value, "new-value-0123456789abcdefghijklmnopqr"; got != want {
			t.Fatalf("value after the interval: got %q, want %q", got, want)
		}
		if after.Current.ID == before.Current.ID {
			t.Fatalf("version id did not change on rotation: %q", after.Current.ID)
		}
		// moto records creation times to the second, so the two versions
		// may share one; the new one is never older.
		if before.Current.CreatedAt.IsZero() || after.Current.CreatedAt.Before(before.Current.CreatedAt) {
			t.Fatalf("CreatedAt: got %v after rotation, %v before; want set and not older", after.Current.CreatedAt, before.Current.CreatedAt)
		}
	})

	t.Run("KeepsLastGoodValueOnFailure", func(t *testing.T) {
		arn := createSecret(t, sm, "good-value-0123456789abcdefghijklmnopq")
		client := &countingClient{Client: sm}
		clk := mock.NewClock(time.Unix(1_700_000_000, 0))
		var logs bytes.Buffer
		cache := secrets.NewCache(client, secrets.Options{Now: clk.Now, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
		if _, err := cache.Get(ctx, arn); err != nil {
			t.Fatal(err)
		}
		// A real failure: the secret is gone, Secrets Manager answers
		// ResourceNotFoundException.
		if _, err := sm.DeleteSecret(ctx, &secretsmanager.DeleteSecretInput{SecretId: aws.String(arn), ForceDeleteWithoutRecovery: aws.Bool(true)}); err != nil {
			t.Fatalf("DeleteSecret: %v", err)
		}
		clk.Advance(secrets.DefaultRefreshInterval)
		got, err := cache.Get(ctx, arn)
		if err != nil {
			t.Fatalf("Get after a failed refresh: %v", err)
		}
		if got, want := got.Current.Value, "good-value-0123456789abcdefghijklmnopq"; got != want {
			t.Fatalf("value: got %q, want %q", got, want)
		}
		if !strings.Contains(logs.String(), "secret refresh failed") || !strings.Contains(logs.String(), arn) {
			t.Fatalf("log does not report the failed refresh: %s", logs.String())
		}
		if strings.Contains(logs.String(), "good-value") {
			t.Fatalf("log contains the secret value: %s", logs.String())
		}
		// The next attempt waits RetryAfterFailure, so an outage adds no
		// call to every request.
		calls := client.Calls()
		clk.Advance(secrets.RetryAfterFailure - time.Second)
		if _, err := cache.Get(ctx, arn); err != nil {
			t.Fatal(err)
		}
		if got, want := client.Calls(), calls; got != want {
			t.Fatalf("calls during the back-off: got %d, want %d", got, want)
		}
		clk.Advance(time.Second)
		if _, err := cache.Get(ctx, arn); err != nil {
			t.Fatal(err)
		}
		if got, want := client.Calls(), calls+1; got != want {
			t.Fatalf("calls after the back-off: got %d, want %d", got, want)
		}
	})

	t.Run("ErrNeverFetched", func(t *testing.T) {
		cache := secrets.NewCache(sm, secrets.Options{})
		if _, err := cache.Get(ctx, "arn:aws:secretsmanager:us-east-1:123456789012:secret:latchkey-missing-AbCdEf"); err == nil {
			t.Fatal("Get of a missing secret: got nil error")
		}
	})
}

func TestCache_GetWithPrevious(t *testing.T) {
	sm := newClient(t)
	ctx := context.Background()

	t.Run("NeverRotated", func(t *testing.T) {
		arn := createSecret(t, sm, "only-value-0123456789abcdefghijklmnopq")
		got, err := secrets.NewCache(sm, secrets.Options{}).GetWithPrevious(ctx, arn)
		if err != nil {
			t.Fatal(err)
		}
		if got.Previous != (secrets.Version{}) {
			t.Fatalf("previous of a never-rotated secret: got %+v, want zero", got.Previous)
		}
	})

	t.Run("Rotated", func(t *testing.T) {
		arn := createSecret(t, sm, "v1-value-0123456789abcdefghijklmnopqrs")
		putValue(t, sm, arn, "v2-value-0123456789abcdefghijklmnopqrs")
		got, err := secrets.NewCache(sm, secrets.Options{}).GetWithPrevious(ctx, arn)
		if err != nil {
			t.Fatal(err)
		}
		if got.Current.Value != "v2-value-0123456789abcdefghijklmnopqrs" || got.Previous.Value != "v1-value-0123456789abcdefghijklmnopqrs" {
			t.Fatalf("got current %q previous %q, want v2 and v1", got.Current.Value, got.Previous.Value)
		}
	})
}

func TestSigningKey(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		secret := "Zt9bKq2LmWx7YpR4sNvD8cFhJ3gT6uAe"
		k1, err := secrets.SigningKey(secret)
		if err != nil {
			t.Fatal(err)
		}
		k2, _ := secrets.SigningKey(secret)
		if !k1.Equal(k2) {
			t.Fatal("the same secret gave two keys")
		}
		// The documented derivation: the seed is SHA-256 of the string.
		if got, want := k1.Seed(), sha256.Sum256([]byte(secret)); !bytes.Equal(got, want[:]) {
			t.Fatalf("seed: got %x, want SHA-256 of the secret %x", got, want)
		}
		msg := []byte("latchkey")
		if !ed25519.Verify(k1.Public().(ed25519.PublicKey), msg, ed25519.Sign(k1, msg)) {
			t.Fatal("derived key does not sign and verify")
		}
		other, _ := secrets.SigningKey(secret + "x")
		if k1.Equal(other) {
			t.Fatal("different secrets gave the same key")
		}
	})
	t.Run("ErrTooShort", func(t *testing.T) {
		if _, err := secrets.SigningKey(strings.Repeat("a", secrets.MinSecretLength-1)); err == nil {
			t.Fatal("got nil error for a short secret")
		}
	})
}

func TestCursorKey(t *testing.T) {
	k, err := secrets.CursorKey(strings.Repeat("c", 40))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(k), 32; got != want {
		t.Fatalf("length: got %d, want %d", got, want)
	}
	if _, err := secrets.CursorKey("short"); err == nil {
		t.Fatal("got nil error for a short secret")
	}
}

// barrierClient answers from a map of values, holding each call until
// want calls are in flight together or a second has passed, and records
// the most it saw at once: calls made one after another see one.
type barrierClient struct {
	values map[string]string // id -> current value; no previous versions
	want   int

	mu       sync.Mutex
	cond     *sync.Cond
	inFlight int
	max      int
	calls    int
	released bool // want calls were in flight together: let all go
}

func newBarrierClient(want int, values map[string]string) *barrierClient {
	b := &barrierClient{values: values, want: want}
	b.cond = sync.NewCond(&b.mu)
	return b
}

func (b *barrierClient) GetSecretValue(_ context.Context, in *secretsmanager.GetSecretValueInput, _ ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	b.mu.Lock()
	b.calls++
	b.inFlight++
	b.max = max(b.max, b.inFlight)
	if b.inFlight >= b.want {
		b.released = true
		b.cond.Broadcast()
	}
	// Generous, for a loaded machine that starts the other reads late:
	// reads made at once meet here long before it; reads made one after
	// another each wait it out, and the test fails.
	deadline := time.Now().Add(10 * time.Second)
	for !b.released && time.Now().Before(deadline) {
		go func() { time.Sleep(10 * time.Millisecond); b.cond.Broadcast() }()
		b.cond.Wait()
	}
	b.inFlight--
	b.mu.Unlock()
	v, ok := b.values[aws.ToString(in.SecretId)]
	if !ok || aws.ToString(in.VersionStage) == "AWSPREVIOUS" {
		return nil, &types.ResourceNotFoundException{Message: aws.String("not found")}
	}
	return &secretsmanager.GetSecretValueOutput{SecretString: aws.String(v), VersionId: aws.String("v1")}, nil
}

func (b *barrierClient) stats() (calls, max int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	calls, max = b.calls, b.max
	b.calls, b.max, b.released = 0, 0, false
	return calls, max
}

// TestCache_Load: Load reads every due secret at once, the current and
// previous versions of one too, so that a cold start waits for one round
// trip; then Get answers from the cache, and Load makes no call until the
// refresh interval has passed. A secret that does not exist fails Load,
// named, without keeping the others from loading.
func TestCache_Load(t *testing.T) {
	values := map[string]string{"cursor": strings.Repeat("c", 40), "admin": strings.Repeat("a", 40), "signing": strings.Repeat("s", 64)}
	keys := []secrets.Key{{ID: "cursor"}, {ID: "admin"}, {ID: "signing", Previous: true}}
	client := newBarrierClient(4, values) // signing is two calls: current and previous
	c := mock.NewClock(time.Now())
	cache := secrets.NewCache(client, secrets.Options{Now: c.Now, Logger: slog.New(slog.DiscardHandler)})

	if err := cache.Load(context.Background(), keys...); err != nil {
		t.Fatal(err)
	}
	if calls, most := client.stats(); calls != 4 || most != 4 {
		t.Fatalf("cold Load: %d calls, at most %d at once; want 4, all at once", calls, most)
	}
	for _, k := range keys {
		get := cache.Get
		if k.Previous {
			get = cache.GetWithPrevious
		}
		if v, err := get(context.Background(), k.ID); err != nil || v.Current.Value != values[k.ID] {
			t.Fatalf("Get %s after Load: %q, %v", k.ID, v.Current.Value, err)
		}
	}
	if err := cache.Load(context.Background(), keys...); err != nil {
		t.Fatal(err)
	}
	if calls, _ := client.stats(); calls != 0 {
		t.Fatalf("Get and Load within the refresh interval made %d calls, want 0", calls)
	}
	c.Advance(secrets.DefaultRefreshInterval)
	if err := cache.Load(context.Background(), keys...); err != nil {
		t.Fatal(err)
	}
	if calls, most := client.stats(); calls != 4 || most != 4 {
		t.Fatalf("Load after the refresh interval: %d calls, at most %d at once; want 4, all at once", calls, most)
	}

	missing := newBarrierClient(2, values)
	cache = secrets.NewCache(missing, secrets.Options{Now: c.Now, Logger: slog.New(slog.DiscardHandler)})
	err := cache.Load(context.Background(), secrets.Key{ID: "cursor"}, secrets.Key{ID: "nope"})
	if err == nil || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("Load with a missing secret: got %v, want an error naming it", err)
	}
	if _, err := cache.Get(context.Background(), "cursor"); err != nil {
		t.Fatal(err)
	}
	if calls, _ := missing.stats(); calls != 2 {
		t.Fatalf("%d calls, want 2: the secret that exists was loaded by Load", calls)
	}
}

// delayedClient adds a fixed latency to every call, as the network does
// between a function and Secrets Manager (moto on loopback has none).
type delayedClient struct {
	secrets.Client
	delay time.Duration
}

func (d delayedClient) GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, optFns ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	time.Sleep(d.delay)
	return d.Client.GetSecretValue(ctx, in, optFns...)
}

// BenchmarkCache_ColdStart reads, against moto, what the auth function
// reads at a cold start (three secrets, one with its previous version: four
// calls) from an empty cache: one after another, as before Load, and at
// once with Load; then both again with 10 ms added to each call, a network
// round trip of that order. Each iteration is a new cache. Run with -count
// to alternate them on a busy machine.
func BenchmarkCache_ColdStart(b *testing.B) {
	moto := newClient(b)
	ids := []string{createSecret(b, moto, strings.Repeat("c", 40)), createSecret(b, moto, strings.Repeat("a", 40)), createSecret(b, moto, strings.Repeat("s", 64))}
	putValue(b, moto, ids[2], strings.Repeat("t", 64)) // a previous version, as after a rotation
	quiet := secrets.Options{Logger: slog.New(slog.DiscardHandler)}
	ctx := context.Background()
	for _, c := range []struct {
		name   string
		client secrets.Client
	}{{"", moto}, {"+10ms", delayedClient{moto, 10 * time.Millisecond}}} {
		b.Run("OneAfterAnother"+c.name, func(b *testing.B) {
			for b.Loop() {
				cache := secrets.NewCache(c.client, quiet)
				for _, id := range ids[:2] {
					if _, err := cache.Get(ctx, id); err != nil {
						b.Fatal(err)
					}
				}
				if _, err := cache.GetWithPrevious(ctx, ids[2]); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("AtOnce"+c.name, func(b *testing.B) {
			for b.Loop() {
				cache := secrets.NewCache(c.client, quiet)
				if err := cache.Load(ctx, secrets.Key{ID: ids[0]}, secrets.Key{ID: ids[1]}, secrets.Key{ID: ids[2], Previous: true}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Package replaytest sets up, for a test, what the functions share in a
// deployment: one store, seeded with replay's fixture, one Secrets Manager
// and one published key set. lambdaapp's tests and authevents' use it.
package replaytest

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"latchkey/pkg/account"
	"latchkey/pkg/boltstore"
	"latchkey/pkg/lambdaapp/replay"
	"latchkey/pkg/tablestore"
	"latchkey/pkg/version"
)

// Env is one store and one Secrets Manager shared by the functions, as in
// a deployment, and the key set they publish.
type Env struct {
	Store   *tablestore.Store
	Keys    *replay.MemoryKeys
	Secrets *replay.Secrets
}

// NewEnv opens a bbolt store in tb's temporary directory, closed when tb
// ends, and seeds it with replay's fixture; the key set starts empty.
func NewEnv(tb testing.TB) Env {
	tb.Helper()
	s, err := boltstore.Open(filepath.Join(tb.TempDir(), "latchkey.db"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	if err := replay.Seed(context.Background(), s); err != nil {
		tb.Fatal(err)
	}
	// The formats in force since long before any clock a test sets, as
	// over a data file no earlier release reached.
	if _, err := account.PutFormatsInForce(context.Background(), s, time.Unix(0, 0), version.Version); err != nil {
		tb.Fatal(err)
	}
	return Env{Store: s, Keys: &replay.MemoryKeys{}, Secrets: replay.NewSecrets()}
}

package authevents_test

import (
	"context"
	"path/filepath"
	"testing"

	"latchkey/pkg/boltstore"
	"latchkey/pkg/lambdaapp/replay"
	"latchkey/pkg/tablestore"
)

// env is one store and one Secrets Manager, seeded with the replay
// fixture, as lambdaapp's tests have them.
type env struct {
	store   *tablestore.Store
	keys    *replay.MemoryKeys
	secrets *replay.Secrets
}

func newEnv(t testing.TB) env {
	t.Helper()
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "latchkey.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := replay.Seed(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	return env{store: s, keys: &replay.MemoryKeys{}, secrets: replay.NewSecrets()}
}

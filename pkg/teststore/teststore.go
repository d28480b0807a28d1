// Package teststore gives tests a real, empty store to run on: bbolt in a
// temporary directory, or a fresh table in the DynamoDB Local that
// scripts/dynamodb-local.sh runs. It is the one place that chooses, for the
// domain's tests (pkg/account) and the HTTP stack's (httpapitest) alike.
package teststore

import (
	"os"
	"path/filepath"
	"testing"

	"latchkey/pkg/account"
	"latchkey/pkg/boltstore"
	"latchkey/pkg/dynamostore/dynamotest"
)

// Env names the variable that chooses Open's store: "bbolt" (the default)
// or "dynamodb".
const Env = "LATCHKEY_TEST_STORE"

// Open returns a new, empty store of the kind Env names. The caller closes
// it.
func Open(tb testing.TB) account.Store {
	tb.Helper()
	switch kind := os.Getenv(Env); kind {
	case "", "bbolt":
		return openBolt(tb)
	case "dynamodb":
		// Asked for by name, so a missing DynamoDB Local is a failure, not a skip.
		if os.Getenv(dynamotest.EndpointEnv) == "" {
			tb.Fatalf("%s=dynamodb needs %s (run under scripts/dynamodb-local.sh)", Env, dynamotest.EndpointEnv)
		}
		return dynamotest.NewStore(tb)
	default:
		tb.Fatalf("%s=%q: want bbolt or dynamodb", Env, kind)
		return nil
	}
}

// Each returns a constructor of a new, empty store for each store that
// runs here, by name: bbolt always, DynamoDB Local when the test runs
// under scripts/dynamodb-local.sh. A test of a rule that must give the
// same answers on both runs on each.
func Each(tb testing.TB) map[string]func(testing.TB) account.Store {
	tb.Helper()
	out := map[string]func(testing.TB) account.Store{"bbolt": openBolt}
	if os.Getenv(dynamotest.EndpointEnv) != "" {
		out["dynamodb"] = func(tb testing.TB) account.Store { return dynamotest.NewStore(tb) }
	}
	return out
}

func openBolt(tb testing.TB) account.Store {
	tb.Helper()
	store, err := boltstore.Open(filepath.Join(tb.TempDir(), "latchkey.db"))
	if err != nil {
		tb.Fatalf("boltstore.Open: %v", err)
	}
	return store
}

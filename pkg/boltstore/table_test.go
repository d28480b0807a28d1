package boltstore_test

import (
	"path/filepath"
	"testing"

	"latchkey/pkg/boltstore"
	"latchkey/pkg/boltstore/tabletest"
	"latchkey/pkg/dynamostore"
	"latchkey/pkg/dynamostore/dynamotest"
	"latchkey/pkg/tablestore"
)

// openTable opens a Table in a fresh file, closed when the test ends.
func openTable(tb testing.TB, opts ...boltstore.TableOption) *boltstore.Table {
	tb.Helper()
	opts = append([]boltstore.TableOption{boltstore.WithTTL(tablestore.TTLAttribute)}, opts...)
	t, err := boltstore.OpenTable(filepath.Join(tb.TempDir(), "table.db"), opts...)
	if err != nil {
		tb.Fatalf("OpenTable: %v", err)
	}
	tb.Cleanup(func() { t.Close() })
	return t
}

// TestPort_Conformance runs the port's conformance suite on boltstore's
// executor of it.
func TestPort_Conformance(t *testing.T) {
	tabletest.RunPort(t, func(t *testing.T) tablestore.Port {
		return openTable(t).Port()
	})
}

// TestPort_ConformanceDynamoDBLocal runs the same suite on DynamoDB Local
// through the translation to the SDK, which is what makes its
// expectations DynamoDB's.
func TestPort_ConformanceDynamoDBLocal(t *testing.T) {
	client := dynamotest.NewClient(t)
	tabletest.RunPort(t, func(t *testing.T) tablestore.Port { return dynamostore.Port(client, dynamotest.NewTable(t, client)) })
}

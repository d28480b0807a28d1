package boltstore_test

import (
	"path/filepath"
	"testing"

	"latchkey/pkg/boltstore"
	"latchkey/pkg/boltstore/tabletest"
	"latchkey/pkg/dynamostore/dynamotest"
	"latchkey/pkg/tablestore"
)

// The Table is the single-table logic's other port.
var _ tablestore.Table = (*boltstore.Table)(nil)

// openTable opens a Table made from the Latchkey table's definition in a
// fresh file, closed when the test ends.
func openTable(tb testing.TB, opts ...boltstore.TableOption) (*boltstore.Table, string) {
	tb.Helper()
	const name = "latchkey"
	opts = append([]boltstore.TableOption{boltstore.WithTTL(tablestore.TTLAttribute)}, opts...)
	t, err := boltstore.OpenTable(filepath.Join(tb.TempDir(), "table.db"), tablestore.TableDefinition(name), opts...)
	if err != nil {
		tb.Fatalf("OpenTable: %v", err)
	}
	tb.Cleanup(func() { t.Close() })
	return t, name
}

// TestTable_Conformance runs the conformance suite on the bbolt Table.
func TestTable_Conformance(t *testing.T) {
	tabletest.Run(t, func(t *testing.T) (tabletest.Table, string) { return openTable(t) })
}

// TestTable_ConformanceDynamoDBLocal runs the same suite on DynamoDB Local,
// which is what makes its expectations DynamoDB's.
func TestTable_ConformanceDynamoDBLocal(t *testing.T) {
	client := dynamotest.NewClient(t)
	tabletest.Run(t, func(t *testing.T) (tabletest.Table, string) { return client, dynamotest.NewTable(t, client) }, tabletest.DynamoDBLocal())
}

// TestPort_Conformance runs the port's conformance suite on boltstore's
// executor of it.
func TestPort_Conformance(t *testing.T) {
	tabletest.RunPort(t, func(t *testing.T) tablestore.Port {
		tb, _ := openTable(t)
		return tb.Port()
	})
}

// TestPort_ConformanceDynamoDBLocal runs the same suite on DynamoDB Local
// through the translation to the SDK, which is what makes its
// expectations DynamoDB's.
func TestPort_ConformanceDynamoDBLocal(t *testing.T) {
	client := dynamotest.NewClient(t)
	tabletest.RunPort(t, func(t *testing.T) tablestore.Port { return tablestore.SDKPort(client, dynamotest.NewTable(t, client)) })
}

package boltstore_test

import (
	"testing"

	"latchkey/pkg/account"
	"latchkey/pkg/storetest"
	"latchkey/pkg/tablestore"
)

// TestTable_Store runs the store contract's event cases on tablestore's
// concurrent-writer path, the one DynamoDB runs, over the bbolt Table: no
// WithSerialWrites, so events are sharded, their ids made before the
// transaction and the feed read EventLag behind. Open is tablestore over
// the same Table with serial writes, and TestStore runs the whole suite
// on it; every other case differs from there only in how a write's event
// items are made, which the event cases check for every kind of change.
// dynamostore's TestStore runs the whole suite on this path over DynamoDB
// Local.
func TestTable_Store(t *testing.T) {
	storetest.RunEvents(t, func(t *testing.T) account.Store {
		// The port without TransactWith: the concurrent writers' path.
		return tablestore.New(struct{ tablestore.Port }{openTable(t).Port()})
	})
}

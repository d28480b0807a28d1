package boltstore_test

import (
	"testing"

	"latchkey/pkg/account"
	"latchkey/pkg/storetest"
	"latchkey/pkg/tablestore"
)

// TestTable_Store runs the store contract suite on the single-table logic
// over a bbolt Table: the store boltstore.Open is to become.
func TestTable_Store(t *testing.T) {
	storetest.Run(t, func(t *testing.T) account.Store {
		tb, name := openTable(t)
		return tablestore.New(tb, name)
	})
}

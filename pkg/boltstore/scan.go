package boltstore

import (
	bolt "go.etcd.io/bbolt"

	"latchkey/pkg/tablestore"
)

// Items calls fn with every item of the table, in one read transaction
// (a consistent snapshot), in the table's key order: what a Scan returns,
// for tests and tools. The store itself never scans. fn's error stops the
// walk and is returned.
func (t *Table) Items(fn func(item tablestore.Item) error) error {
	return t.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketTableItems).ForEach(func(k, v []byte) error {
			item, err := decodeItem(v)
			if err != nil {
				return err
			}
			return fn(item)
		})
	})
}

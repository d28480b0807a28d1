package boltstore

import (
	"encoding/binary"

	bolt "go.etcd.io/bbolt"
	"latchkey/pkg/tablestore"
)

// SetSweepMax sets how many items one sweeping transaction may delete.
func SetSweepMax(t *Table, n int) { t.sweepMax = n }

// Exported for the codec's tests.
var (
	AppendItem = appendItem
	DecodeItem = decodeItem
)

// TableKey is the bbolt key of an item with hash h and range r.
func TableKey(h, r []byte) []byte { return appendKeyPartOf(appendKeyPartOf(nil, h), r) }

// CutKeyPart is cutKeyPart.
var CutKeyPart = cutKeyPart

// PutExpiryEntry writes an entry for the item with bbolt key key, expiring
// at sec, into the expiry index, whether or not the item is there.
func PutExpiryEntry(t *Table, sec uint64, key []byte) error {
	return t.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketTableTTL).Put(append(binary.BigEndian.AppendUint64(nil, sec), key...), nil)
	})
}

// ExpiryEntries counts the entries of the expiry index.
func ExpiryEntries(t *Table) (n int, err error) {
	err = t.db.View(func(tx *bolt.Tx) error {
		n = tx.Bucket(bucketTableTTL).Stats().KeyN
		return nil
	})
	return n, err
}

// SetBeforeCommit installs fn to run in every write's transaction after
// its writes and before its commit (nil: none); an error it returns fails
// the write there.
func SetBeforeCommit(t *Table, fn func() error) { t.beforeCommit = fn }

// PutItemsAtOnce writes items, as PutItem would, in one transaction: a
// quick way to build a big file.
func PutItemsAtOnce(t *Table, items []tablestore.Item) error {
	return t.db.Update(func(tx *bolt.Tx) error {
		for _, item := range items {
			k, err := itemKeyOf(item)
			if err != nil {
				return err
			}
			key := tableKey(k)
			data, err := encodeItem(item)
			if err != nil {
				return err
			}
			if err := t.store(tx, key, nil, item, data); err != nil {
				return err
			}
		}
		return nil
	})
}

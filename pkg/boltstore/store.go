// Package boltstore is the embedded account store: one bbolt file, so that
// a laptop (make run) keeps its data across restarts with no server to
// run. It holds no rule of its own. Table (table.go and the files it
// names) is one DynamoDB table in the file, with DynamoDB's semantics for
// the seven operations of tablestore.Table, and Open puts tablestore's
// single-table logic, the same code that runs on DynamoDB, over it.
package boltstore

import (
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"latchkey/pkg/tablestore"
)

// TableName names the one table of a store's file: its definition is
// tablestore.TableDefinition(TableName).
const TableName = "latchkey"

// batchDelay bounds how long a write waits for others to join its batch.
// bbolt's default (10 ms) is made for write-heavy servers; a lone writer
// would pay all of it. Writers that arrive while a batch is being fsynced
// queue up anyway, so a short delay loses little sharing.
const batchDelay = 2 * time.Millisecond

// ErrInUse is the error of Open and OpenTable when another process holds
// the file: bbolt locks it for one process at a time (in one process, for
// one store or Table).
var ErrInUse = errors.New("another process holds the file")

// The Table's optional capabilities, which the store over it uses.
var (
	_ tablestore.SerialTable = (*Table)(nil)
	_ tablestore.KeyReader   = (*Table)(nil)
)

// Open opens (creating if needed) the store in the file at path: the
// table tablestore.TableDefinition describes, with TTL on
// tablestore.TTLAttribute, so that expired token records, revocations,
// keys, idempotency records and events are swept at once and then every
// minute until Close. A second process opening the same file fails after a
// second with ErrInUse instead of waiting forever for bbolt's file lock.
//
// The table has one writer in one process, so the store reads the event
// feed with no lag (tablestore.WithSerialWrites).
func Open(path string) (*tablestore.Store, error) {
	t, err := OpenTable(path, tablestore.TableDefinition(TableName), WithTTL(tablestore.TTLAttribute))
	if err != nil {
		return nil, err
	}
	if err := refuseOldLayout(t.db); err != nil {
		t.Close()
		return nil, fmt.Errorf("boltstore: open %s: %w", path, err)
	}
	return tablestore.New(t, TableName, tablestore.WithSerialWrites()), nil
}

// ErrOldLayout is the error of Open on a file written by the embedded
// store before it held the single table (bbolt buckets per entity, before
// issue 20). Its data is not read: rather than start empty and look as if
// everything was lost, Open refuses the file.
var ErrOldLayout = errors.New("the file holds data in the embedded store's earlier layout, which this version does not read; move it away (DATA_DIR) to start a new store")

// refuseOldLayout returns ErrOldLayout if db has a bucket of the earlier
// layout that holds anything: "users" held every user and "api_keys"
// every key, the bootstrap key included.
func refuseOldLayout(db *bolt.DB) error {
	return db.View(func(tx *bolt.Tx) error {
		for _, name := range []string{"users", "api_keys"} {
			if b := tx.Bucket([]byte(name)); b != nil {
				if k, _ := b.Cursor().First(); k != nil {
					return ErrOldLayout
				}
			}
		}
		return nil
	})
}

// openFile opens (creating if needed) the bbolt file at path for
// OpenTable: ErrInUse after a second if another process holds it, and
// batched writes that wait batchDelay for company.
//
// bbolt's statistics are off: nothing reads them, and keeping them cost
// every transaction, and so every verify, two more round trips through a
// lock all transactions share and some twenty atomic additions to shared
// counters.
func openFile(path string) (*bolt.DB, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second, NoStatistics: true})
	if errors.Is(err, bolterrors.ErrTimeout) {
		// bbolt's own word for it is "timeout", which names no cause.
		return nil, fmt.Errorf("boltstore: open %s: %w", path, ErrInUse)
	}
	if err != nil {
		return nil, fmt.Errorf("boltstore: open %s: %w", path, err)
	}
	db.MaxBatchDelay = batchDelay
	return db, nil
}

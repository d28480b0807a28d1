// Package boltstore is the embedded account store: one bbolt file, so that
// a laptop (make run) keeps its data across restarts with no server to
// run. It holds no rule of its own. Table (table.go and the files it
// names) is the Latchkey table in the file, executing tablestore's port
// (port.go) with DynamoDB's semantics, and Open puts tablestore's
// single-table logic, the same code that runs on DynamoDB, over it.
package boltstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"latchkey/pkg/boltstore/oldlayout"
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

// Open opens (creating if needed) the store in the file at path: the
// table tablestore.TableDefinition describes, with TTL on
// tablestore.TTLAttribute, so that expired token records, revocations,
// keys, idempotency records and events are swept at once and then every
// minute until Close. A second process opening the same file fails after a
// second with ErrInUse instead of waiting forever for bbolt's file lock.
//
// Open first checks the whole file, read-only, and refuses one that is
// damaged with ErrDamaged, naming the file and what to do, before any
// request could read a damaged page (see inspect; SkipFileCheck skips the
// longer part of the check).
//
// A file of the embedded store's earlier layout (a bucket per entity,
// before issue 20) is converted first: see migrate. It is found before
// anything is written to the file.
//
// The table has one writer in one process, so the store reads the event
// feed with no lag (tablestore.WithSerialWrites).
func Open(path string, opts ...OpenOption) (*tablestore.Store, error) {
	var o openOptions
	for _, opt := range opts {
		opt(&o)
	}
	old, err := inspect(path, !o.skipCheck)
	if err != nil {
		return nil, err
	}
	if old {
		if err := migrate(path, o.migrated); err != nil {
			return nil, fmt.Errorf("boltstore: open %s: %w", path, err)
		}
	}
	t, err := OpenTable(path, WithTTL(tablestore.TTLAttribute))
	if err != nil {
		return nil, err
	}
	s := tablestore.New(t.Port(), tablestore.WithSerialWrites())
	// Event ids go on after the newest stored, whatever the clock says.
	if err := s.ResumeEvents(context.Background()); err != nil {
		s.Close()
		return nil, fmt.Errorf("boltstore: open %s: %w", path, err)
	}
	return s, nil
}

// OpenOption configures Open.
type OpenOption func(*openOptions)

type openOptions struct {
	migrated  func(Migration)
	skipCheck bool
}

// OnMigrated has Open call fn after it has converted a file of the earlier
// layout, so that the caller can say so.
func OnMigrated(fn func(Migration)) OpenOption {
	return func(o *openOptions) { o.migrated = fn }
}

// inspect checks the file at path, if there is one, and reports whether
// it holds data of the earlier layout. It refuses a file shorter than its
// pages (checkSize) and, when check is set, one with a page that is not
// sound (checkPages), with ErrDamaged, before anything else reads it. It
// opens the file read-only, so that a file of that layout, or a damaged
// one, is left as it was found.
func inspect(path string, check bool) (old bool, err error) {
	if fi, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) || (err == nil && fi.Size() == 0) {
		return false, nil
	}
	db, err := openFileWith(path, &bolt.Options{ReadOnly: true})
	if isDamagedMeta(err) {
		return false, damaged(path, "neither of its meta pages is valid")
	}
	if err != nil {
		return false, err
	}
	defer db.Close()
	fi, err := os.Stat(path) // now that no writer can hold it
	if err != nil {
		return false, err
	}
	err = db.View(func(tx *bolt.Tx) error {
		if err := checkSize(tx, fi.Size()); err != nil {
			return damaged(path, err.Error())
		}
		if check {
			if err := checkPages(tx); err != nil {
				return damaged(path, err.Error())
			}
		}
		old = oldlayout.Holds(tx)
		return nil
	})
	return old, err
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
	db, err := openFileWith(path, &bolt.Options{})
	if err != nil {
		return nil, err
	}
	db.MaxBatchDelay = batchDelay
	return db, nil
}

// openFileWith opens the bbolt file at path with o, a second's timeout and
// no statistics.
func openFileWith(path string, o *bolt.Options) (*bolt.DB, error) {
	o.Timeout, o.NoStatistics = time.Second, true
	db, err := bolt.Open(path, 0o600, o)
	if errors.Is(err, bolterrors.ErrTimeout) {
		// bbolt's own word for it is "timeout", which names no cause.
		return nil, fmt.Errorf("boltstore: open %s: %w", path, ErrInUse)
	}
	if err != nil {
		return nil, fmt.Errorf("boltstore: open %s: %w", path, err)
	}
	return db, nil
}

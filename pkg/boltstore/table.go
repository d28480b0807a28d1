package boltstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"latchkey/pkg/tablestore"
)

// Table is the Latchkey table (tablestore.TableDefinition: keys pk and
// sk, the index gsi1 on gsi1pk and gsi1sk, all strings) in a bbolt file.
// It is read and written as tablestore's port (Port).
//
// Reads are always strongly consistent: a bbolt read transaction is a
// snapshot. Writes are serialized by bbolt's one writer, which is what
// makes a condition and the write it guards atomic; concurrent writers
// share an fsync through DB.Batch. A write checks its context before it
// commits: a cancelled caller leaves nothing written.
//
// Items live in one bucket keyed by their primary key (see codec.go); the
// index is a bucket of (index key, primary key) entries, so a Query on it
// reads the index and then each item; and items with a TTL attribute have
// an entry in an expiry index that the sweeper reads (see ttl.go).
type Table struct {
	db      *bolt.DB
	index   index
	ttlAttr string
	memo    itemMemo

	now        func() time.Time
	sweepEvery time.Duration
	sweepMax   int
	stop       chan struct{}
	done       sync.WaitGroup
	closeOnce  sync.Once

	// beforeCommit, set by tests only, runs in every write's transaction
	// once its writes are made, before the commit: an error it returns is
	// a fault there, which must leave nothing written.
	beforeCommit func() error
}

// index is the table's one index: its name and key attributes.
type index struct {
	name, hash, rng string
	bucket          []byte
}

// Bucket names of a Table.
var (
	bucketTableItems  = []byte("table:items")
	bucketTableTTL    = []byte("table:ttl")
	bucketTableSchema = []byte("table:schema")
	schemaKey         = []byte("keys")   // the table's key schema
	indexMetaPrefix   = []byte("index:") // + name: the index's key schema
	ttlMetaKey        = []byte("ttl")    // the TTL attribute the expiry index holds
)

func indexBucket(name string) []byte { return []byte("table:index:" + name) }

// The key schemas as the file records them (the form of files written
// since issue 20, when the table could be any DynamoDB table's).
const (
	tableKeys = "pk:S,sk:S"
	indexKeys = "gsi1pk:S,gsi1sk:S"
)

// maxItemSize is DynamoDB's limit on an item, 400 KB; the encoded size
// stands in for DynamoDB's reckoning, which it is close to.
const maxItemSize = 400 * 1024

// maxTransactItems is DynamoDB's limit on the actions of one transaction.
const maxTransactItems = 100

// TableOption configures OpenTable.
type TableOption func(*Table)

// WithTTL names the attribute that holds an item's expiry (epoch seconds,
// a number): the sweeper deletes an item once it has passed, as DynamoDB's
// TTL does.
func WithTTL(attribute string) TableOption { return func(t *Table) { t.ttlAttr = attribute } }

// WithClock sets the clock the sweeper reads (time.Now by default).
func WithClock(now func() time.Time) TableOption { return func(t *Table) { t.now = now } }

// WithSweepInterval sets how often the sweeper runs (a minute by default;
// it also runs when the table is opened). Zero or less: only on open.
func WithSweepInterval(d time.Duration) TableOption { return func(t *Table) { t.sweepEvery = d } }

// OpenTable opens (creating if needed) the Latchkey table in the bbolt
// file at path. A file holds one table: one with another key schema is an
// error. The index and the expiry index are rebuilt from the items when
// the file does not record them as they are. Like Open, it fails with
// ErrInUse after a second when another process holds the file. Close
// stops the sweeper.
func OpenTable(path string, opts ...TableOption) (*Table, error) {
	t := &Table{
		index: index{name: tablestore.GSI1, hash: tablestore.GSI1 + "pk", rng: tablestore.GSI1 + "sk", bucket: indexBucket(tablestore.GSI1)},
		now:   time.Now, sweepEvery: time.Minute, sweepMax: sweepMax, stop: make(chan struct{}),
	}
	for _, o := range opts {
		o(t)
	}
	db, err := openFile(path)
	if err != nil {
		return nil, err
	}
	t.db = db
	if err = db.Update(t.prepareFile); err != nil {
		db.Close()
		return nil, fmt.Errorf("boltstore: open table in %s: %w", path, err)
	}
	if t.ttlAttr != "" {
		if _, err := t.Sweep(t.now()); err != nil {
			db.Close()
			return nil, err
		}
		if t.sweepEvery > 0 {
			t.done.Add(1)
			go t.sweepLoop()
		}
	}
	return t, nil
}

// prepareFile makes the file hold the table: its key schema is stored on
// first use and must not change; an index the file does not record as
// this one is dropped, and this one built from the items; so is the
// expiry index rebuilt when the TTL attribute changes.
func (t *Table) prepareFile(tx *bolt.Tx) error {
	meta, err := tx.CreateBucketIfNotExists(bucketTableSchema)
	if err != nil {
		return err
	}
	if _, err := tx.CreateBucketIfNotExists(bucketTableItems); err != nil {
		return err
	}
	if have := meta.Get(schemaKey); have != nil && string(have) != tableKeys {
		return fmt.Errorf("the file holds a table keyed %s, not %s", have, tableKeys)
	}
	if err := meta.Put(schemaKey, []byte(tableKeys)); err != nil {
		return err
	}
	var stale [][]byte
	c := meta.Cursor()
	for k, _ := c.Seek(indexMetaPrefix); k != nil && bytes.HasPrefix(k, indexMetaPrefix); k, _ = c.Next() {
		if string(k[len(indexMetaPrefix):]) != t.index.name {
			stale = append(stale, bytes.Clone(k))
		}
	}
	for _, k := range stale {
		if err := tx.DeleteBucket(indexBucket(string(k[len(indexMetaPrefix):]))); err != nil && !errors.Is(err, bolterrors.ErrBucketNotFound) {
			return err
		}
		if err := meta.Delete(k); err != nil {
			return err
		}
	}
	k := append(bytes.Clone(indexMetaPrefix), t.index.name...)
	if string(meta.Get(k)) != indexKeys {
		if err := t.rebuild(tx, t.index.bucket, t.indexEntry); err != nil {
			return err
		}
		if err := meta.Put(k, []byte(indexKeys)); err != nil {
			return err
		}
	}
	if have := meta.Get(ttlMetaKey); have == nil || string(have) != t.ttlAttr {
		if err := t.rebuild(tx, bucketTableTTL, t.expiryEntry); err != nil {
			return err
		}
		if err := meta.Put(ttlMetaKey, []byte(t.ttlAttr)); err != nil {
			return err
		}
	}
	return nil
}

// rebuild empties the bucket name and puts in it entry(key, item) of
// every item (none where it is nil).
func (t *Table) rebuild(tx *bolt.Tx, name []byte, entry func(key []byte, item tablestore.Item) []byte) error {
	if err := tx.DeleteBucket(name); err != nil && !errors.Is(err, bolterrors.ErrBucketNotFound) {
		return err
	}
	b, err := tx.CreateBucket(name)
	if err != nil {
		return err
	}
	return tx.Bucket(bucketTableItems).ForEach(func(k, v []byte) error {
		item, err := decodeItem(v)
		if err != nil {
			return fmt.Errorf("item %q: %w", k, err)
		}
		if e := entry(k, item); e != nil {
			return b.Put(e, nil)
		}
		return nil
	})
}

// Close stops the sweeper and closes the file, waiting for transactions in
// progress.
func (t *Table) Close() error {
	t.closeOnce.Do(func() { close(t.stop) })
	t.done.Wait()
	return t.db.Close()
}

// ---- keys ----

// appendKeyPartOf is appendKeyPart for a string or bytes, without a copy.
// The runs between zero bytes go in whole: a byte at a time cost a verify
// over a thousand instructions.
func appendKeyPartOf[T string | []byte](b []byte, v T) []byte {
	for {
		i := indexZero(v)
		if i < 0 {
			b = append(b, v...)
			return append(b, keyEnd...)
		}
		b = append(append(b, v[:i+1]...), 0xFF)
		v = v[i+1:]
	}
}

// indexZero is the index of the first zero byte of v, -1 if none.
// The standard library's search, which reads words at a time: a loop over
// the bytes cost a verify some 800 instructions.
func indexZero[T string | []byte](v T) int {
	if s, ok := any(v).(string); ok {
		return strings.IndexByte(s, 0)
	}
	return bytes.IndexByte([]byte(v), 0)
}

// indexEntry is the entry of the item at tableKey in the index, or nil
// when the item is not in it (it lacks a string index key).
func (t *Table) indexEntry(tableKey []byte, item tablestore.Item) []byte {
	h, ok1 := item[t.index.hash].(tablestore.S)
	r, ok2 := item[t.index.rng].(tablestore.S)
	if !ok1 || !ok2 || h == "" || r == "" {
		return nil
	}
	return append(appendKeyPartOf(appendKeyPartOf(nil, string(h)), string(r)), tableKey...)
}

// ---- reads and writes ----

// encodeItem encodes an item to be written, refusing one over
// maxItemSize.
func encodeItem(item tablestore.Item) ([]byte, error) {
	data, err := appendItem(nil, item)
	if err != nil {
		return nil, err
	}
	if len(data) > maxItemSize {
		return nil, errors.New("boltstore: an item over 400 KB")
	}
	return data, nil
}

// store writes next (nil: deletes) at key, encoded as data, where old
// was, and keeps the index and the expiry index in step.
func (t *Table) store(tx *bolt.Tx, key []byte, old, next tablestore.Item, data []byte) error {
	items := tx.Bucket(bucketTableItems)
	if next == nil {
		if err := items.Delete(key); err != nil {
			return err
		}
	} else if err := items.Put(key, data); err != nil {
		return err
	}
	entries := []struct {
		bucket []byte
		entry  func([]byte, tablestore.Item) []byte
	}{{t.index.bucket, t.indexEntry}, {bucketTableTTL, t.expiryEntry}}
	for _, e := range entries {
		was, is := e.entry(key, old), e.entry(key, next)
		if bytes.Equal(was, is) {
			continue
		}
		b := tx.Bucket(e.bucket)
		if was != nil {
			if err := b.Delete(was); err != nil {
				return err
			}
		}
		if is != nil {
			if err := b.Put(is, nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// write runs fn in a write transaction shared with concurrent writers
// (DB.Batch), unless ctx has ended.
func (t *Table) write(ctx context.Context, fn func(tx *bolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	err := t.db.Batch(func(tx *bolt.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		if t.beforeCommit != nil {
			if err := t.beforeCommit(); err != nil {
				return err
			}
		}
		return ctx.Err()
	})
	if errors.Is(err, ctx.Err()) && ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// maxBatchGetKeys is DynamoDB's limit on the keys of one BatchGetItem.
const maxBatchGetKeys = 100

// batchGet reads the items keys (distinct, at most 100) in one read
// transaction and returns those that exist, in the order of their keys:
// the memo's, which callers do not modify.
func (t *Table) batchGet(ctx context.Context, keys []tablestore.Key) ([]tablestore.Item, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(keys) > maxBatchGetKeys {
		return nil, errors.New("boltstore: over 100 keys in one read")
	}
	var endsBuf [8]int // a verify reads 2 to 4 keys
	ends := endsBuf[:0]
	buf := make([]byte, 0, 64*len(keys))
	for _, k := range keys {
		if k.PK == "" || k.SK == "" {
			return nil, errors.New("boltstore: a read of an empty key")
		}
		buf = appendKeyPartOf(appendKeyPartOf(buf, k.PK), k.SK)
		ends = append(ends, len(buf))
	}
	keyAt := func(i int) []byte {
		start := 0
		if i > 0 {
			start = ends[i-1]
		}
		return buf[start:ends[i]]
	}
	items := make([]tablestore.Item, 0, len(keys))
	err := t.db.View(func(tx *bolt.Tx) error {
		// One cursor for all: a Get makes a cursor each, and its path
		// from the root grows anew (an allocation per level).
		c := tx.Bucket(bucketTableItems).Cursor()
		for i := range ends {
			k, data := c.Seek(keyAt(i))
			if data == nil || !bytes.Equal(k, keyAt(i)) {
				continue
			}
			item, err := t.memo.decode(keyAt(i), data)
			if err != nil {
				return fmt.Errorf("boltstore: item %q: %w", keyAt(i), err)
			}
			items = append(items, item)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return items, nil
}

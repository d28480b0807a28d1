package boltstore

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"latchkey/pkg/tablestore"
)

// TTL as DynamoDB does it: an item whose TTL attribute (a number, epoch
// seconds) has passed is deleted some time later by a background sweep,
// and is still returned by reads until then. The expiry index (bucket
// table:ttl) holds "<8-byte big-endian second><primary key>" for every
// item that has one, so the sweep reads only what has expired, oldest
// first, and each of its transactions deletes at most sweepMax items so
// that it never holds the writer for long.

// sweepMax caps the items one sweeping transaction deletes.
const sweepMax = 1000

// ttlHorizon: DynamoDB leaves alone items whose TTL is more than five
// years in the past (a value in milliseconds, say, is not a date).
const ttlHorizon = 5 * 365 * 24 * time.Hour

// expiryEntry is key's entry in the expiry index for item, or nil when the
// item has no usable TTL attribute.
func (t *Table) expiryEntry(key []byte, item tablestore.Item) []byte {
	if t.ttlAttr == "" {
		return nil
	}
	sec, ok := expirySecond(item[t.ttlAttr])
	if !ok {
		return nil
	}
	b := binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(key)), sec)
	return append(b, key...)
}

// expirySecond reads a TTL attribute: a non-negative number.
func expirySecond(v tablestore.Value) (uint64, bool) {
	n, ok := v.(tablestore.N)
	if !ok || n < 0 {
		return 0, false
	}
	return uint64(n), true
}

// Sweep deletes the items whose TTL has passed at now (expired before its
// second, within five years), in transactions of at most sweepMax items,
// and returns how many expiry entries it cleared: an expired item's, with
// the item, and any whose item is gone or no longer expires then, alone.
// The sweeper calls it; tests may too.
func (t *Table) Sweep(now time.Time) (int, error) {
	if t.ttlAttr == "" {
		return 0, nil
	}
	from := binary.BigEndian.AppendUint64(nil, uint64(max(now.Add(-ttlHorizon).Unix(), 0)))
	until := binary.BigEndian.AppendUint64(nil, uint64(max(now.Unix(), 0)))
	total := 0
	for {
		n := 0
		err := t.db.Update(func(tx *bolt.Tx) error {
			n = 0
			var entries [][]byte
			ttl := tx.Bucket(bucketTableTTL)
			c := ttl.Cursor()
			for k, _ := c.Seek(from); k != nil && len(entries) < t.sweepMax && bytes.Compare(k[:8], until) < 0; k, _ = c.Next() {
				entries = append(entries, bytes.Clone(k))
			}
			for _, e := range entries {
				key := e[8:]
				var old tablestore.Item
				if data := tx.Bucket(bucketTableItems).Get(key); data != nil {
					var err error
					if old, err = decodeItem(data); err != nil {
						return fmt.Errorf("boltstore: item %q: %w", key, err)
					}
				}
				var err error
				// The item goes with its entry only if the entry is its
				// own; an entry whose item is gone or has another expiry
				// is deleted by itself, or it would be read again by
				// every sweep.
				if old != nil && bytes.Equal(t.expiryEntry(key, old), e) {
					err = t.store(tx, key, old, nil, nil)
				} else {
					err = ttl.Delete(e)
				}
				if err != nil {
					return err
				}
				n++
			}
			return nil
		})
		total += n
		if err != nil || n < t.sweepMax {
			return total, err
		}
		select {
		case <-t.stop:
			return total, nil
		default:
		}
	}
}

func (t *Table) sweepLoop() {
	defer t.done.Done()
	tick := time.NewTicker(t.sweepEvery)
	defer tick.Stop()
	for {
		select {
		case <-t.stop:
			return
		case <-tick.C:
			// A failed sweep is retried at the next tick: nothing is lost
			// by an expired item lingering, as DynamoDB's may.
			_, _ = t.Sweep(t.now())
		}
	}
}

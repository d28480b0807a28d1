package boltstore

import (
	"bytes"
	"context"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"latchkey/pkg/account"
)

// Events live in bucketEvents under their id, the value the event's JSON
// as the API returns it, preceded by its type and a NUL. bbolt has one
// writer at a time, and an event's id is made inside the write
// transaction, greater than the last id in the bucket (NextEventID): ids
// are in commit order, and a reader sees a transaction's events only once
// it has committed, so a reader that has seen an event never finds an
// earlier one later. Events older than account.EventRetention are pruned
// (Prune, from the oldest end of the bucket) and never read meanwhile.

// emitter writes the events of one write; nil (no EventSource in the
// context) writes none.
type emitter struct {
	src *account.EventSource
	now func() time.Time
}

// events returns the emitter of the writes made under ctx.
func (s *Store) events(ctx context.Context) *emitter {
	src := account.EventSourceFrom(ctx)
	if src == nil {
		return nil
	}
	return &emitter{src: src, now: s.now}
}

// emit writes the event of type typ about data in tx.
func (e *emitter) emit(tx *bolt.Tx, typ string, data any) error {
	if e == nil {
		return nil
	}
	b := tx.Bucket(bucketEvents)
	last, _ := b.Cursor().Last()
	at := e.now().UTC().Truncate(time.Millisecond)
	id := account.NextEventID(string(last), at)
	js, err := e.src.EncodeEvent(id, typ, at, data)
	if err != nil {
		return err
	}
	v := make([]byte, 0, len(typ)+1+len(js))
	v = append(append(append(v, typ...), 0), js...)
	return b.Put([]byte(id), v)
}

// decodeEvent splits a stored value into its type and JSON.
func decodeEvent(k, v []byte) account.StoredEvent {
	typ, js, _ := bytes.Cut(v, []byte{0})
	return account.StoredEvent{ID: string(k), Type: string(typ), JSON: bytes.Clone(js)}
}

// ListEvents implements account.Store: one read transaction, walking the
// bucket forwards from After or backwards from Before.
func (s *Store) ListEvents(_ context.Context, q account.EventQuery) (account.Page[account.StoredEvent], error) {
	limit := account.ListParams{Limit: q.Limit}.PageSize()
	since := []byte(account.EventIDAt(q.Since))
	keep := func(v []byte) bool {
		if len(q.Types) == 0 {
			return true
		}
		typ, _, _ := bytes.Cut(v, []byte{0})
		return slices.Contains(q.Types, string(typ))
	}
	page := account.Page[account.StoredEvent]{Items: []account.StoredEvent{}}
	err := s.read(func(tx *bolt.Tx) error {
		// Either way, nothing older than since.
		c := tx.Bucket(bucketEvents).Cursor()
		var k, v []byte
		next := c.Prev
		switch {
		case q.After != "":
			next = c.Next
			if k, v = c.Seek([]byte(max(string(since), q.After))); k != nil && string(k) == q.After {
				k, v = c.Next()
			}
		case q.Before == "":
			k, v = c.Last()
		default:
			if k, _ = c.Seek([]byte(q.Before)); k == nil {
				k, v = c.Last()
			} else {
				k, v = c.Prev()
			}
		}
		for ; k != nil && bytes.Compare(k, since) >= 0; k, v = next() {
			if !keep(v) {
				continue
			}
			if len(page.Items) == limit {
				page.Next = page.Items[len(page.Items)-1].ID
				break
			}
			page.Items = append(page.Items, decodeEvent(k, v))
		}
		return nil
	})
	return page, err
}

// pruneEvents deletes at most max events made before cutoff, oldest
// first, and returns how many it deleted.
func pruneEvents(tx *bolt.Tx, cutoff time.Time, max int) (int, error) {
	end := []byte(account.EventIDAt(cutoff))
	b := tx.Bucket(bucketEvents)
	var keys [][]byte
	c := b.Cursor()
	for k, _ := c.First(); k != nil && len(keys) < max && bytes.Compare(k, end) < 0; k, _ = c.Next() {
		keys = append(keys, bytes.Clone(k))
	}
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return 0, err
		}
	}
	return len(keys), nil
}

package boltstore

import (
	"bytes"
	"cmp"
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
//
// An event that belongs to an organization (account.EventSource.Organization)
// has the organization's id after its JSON, behind another NUL (JSON holds
// none), and an entry "<org id>/<event id>" in bucketOrgEvents, written
// and pruned with it: the events of an organization are read from there
// without walking the others.

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
	org := e.src.Organization(data)
	v := make([]byte, 0, len(typ)+1+len(js)+1+len(org))
	v = append(append(append(v, typ...), 0), js...)
	if org != "" {
		v = append(append(v, 0), org...)
		if err := tx.Bucket(bucketOrgEvents).Put(join(org, id), nil); err != nil {
			return err
		}
	}
	return b.Put([]byte(id), v)
}

// decodeEvent splits a stored value into its type and JSON.
func decodeEvent(k, v []byte) account.StoredEvent {
	typ, rest, _ := bytes.Cut(v, []byte{0})
	js, _, _ := bytes.Cut(rest, []byte{0})
	return account.StoredEvent{ID: string(k), Type: string(typ), JSON: bytes.Clone(js)}
}

// eventOrganization returns the organization a stored value names, "" for
// none.
func eventOrganization(v []byte) string {
	_, rest, _ := bytes.Cut(v, []byte{0})
	_, org, _ := bytes.Cut(rest, []byte{0})
	return string(org)
}

// ListEvents implements account.Store: one read transaction, walking the
// bucket forwards from After or backwards from Before; with
// q.OrganizationID, walking the organization's entries in bucketOrgEvents
// instead, and reading each of their events; no more than q.ReadLimit
// (account.MaxEventsRead) of them.
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
	budget := cmp.Or(q.ReadLimit, account.MaxEventsRead)
	var last string
	err := s.read(func(tx *bolt.Tx) error {
		// Either way, nothing older than since. Keys are event ids after
		// prefix: none in bucketEvents, "<org id>/" in bucketOrgEvents.
		events := tx.Bucket(bucketEvents)
		c, prefix := events.Cursor(), []byte(nil)
		if q.OrganizationID != "" {
			c, prefix = tx.Bucket(bucketOrgEvents).Cursor(), join(q.OrganizationID, "")
		}
		at := func(id string) []byte { return append(slices.Clip(prefix), id...) }
		var k []byte
		next := c.Prev
		switch {
		case q.After != "":
			next = c.Next
			if k, _ = c.Seek(at(max(string(since), q.After))); k != nil && string(k) == string(at(q.After)) {
				k, _ = c.Next()
			}
		case q.Before == "":
			// The last key with prefix: ids are ASCII, below 0xff.
			if k, _ = c.Seek(at("\xff")); k == nil {
				k, _ = c.Last()
			} else {
				k, _ = c.Prev()
			}
		default:
			if k, _ = c.Seek(at(q.Before)); k == nil {
				k, _ = c.Last()
			} else {
				k, _ = c.Prev()
			}
		}
		read := 0
		for ; k != nil && bytes.HasPrefix(k, prefix); k, _ = next() {
			id := k[len(prefix):]
			if bytes.Compare(id, since) < 0 {
				break
			}
			if read == budget {
				// Bounded work: go on from the last event read.
				page.Next = last
				break
			}
			read++
			last = string(id)
			v := events.Get(id)
			if v == nil || !keep(v) {
				continue
			}
			if len(page.Items) == limit {
				page.Next = page.Items[len(page.Items)-1].ID
				break
			}
			page.Items = append(page.Items, decodeEvent(id, v))
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
	var keys, orgs [][]byte
	c := b.Cursor()
	for k, v := c.First(); k != nil && len(keys) < max && bytes.Compare(k, end) < 0; k, v = c.Next() {
		keys = append(keys, bytes.Clone(k))
		if org := eventOrganization(v); org != "" {
			orgs = append(orgs, join(org, string(k)))
		}
	}
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return 0, err
		}
	}
	for _, k := range orgs {
		if err := tx.Bucket(bucketOrgEvents).Delete(k); err != nil {
			return 0, err
		}
	}
	return len(keys), nil
}

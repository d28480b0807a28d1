package boltstore

import (
	"bytes"
	"maps"
	"slices"
	"sync"

	bolt "go.etcd.io/bbolt"

	"latchkey/pkg/account"
)

// keyMemoMax bounds the records a keyMemo remembers: about 600 bytes each
// (the record and its decoding), so at most about 2.5 MiB.
const keyMemoMax = 4096

// keyMemo remembers the decoding of API key records, by key id, with the
// record it decoded. Every verify and every authenticated request reads
// its key, and decoding the JSON cost more than the rest of the read. The
// record is still read from the database on every call, and the decoding
// is used only when the record read is byte for byte the one remembered,
// so a deleted or changed key is seen at once. Keyed by id, a lookup
// hashes the id, not the whole record.
type keyMemo struct {
	mu sync.RWMutex
	m  map[string]memoKey
}

// memoKey is a key record as it was read, and its decoding.
type memoKey struct {
	record []byte
	item   apiKeyItem
}

// get returns the key stored in b under id, reporting whether there is one.
func (km *keyMemo) get(b *bolt.Bucket, id []byte) (account.APIKey, bool, error) {
	v := b.Get(id)
	if v == nil {
		return account.APIKey{}, false, nil
	}
	k, err := km.decode(id, v)
	return k, err == nil, err
}

// decode returns the key that the record v, stored under id, holds. Its
// slices are the caller's own: a caller that changes them changes no one
// else's key.
func (km *keyMemo) decode(id, v []byte) (account.APIKey, error) {
	km.mu.RLock()
	e, ok := km.m[string(id)]
	km.mu.RUnlock()
	if !ok || !bytes.Equal(e.record, v) {
		it, err := decode[apiKeyItem](v)
		if err != nil {
			return account.APIKey{}, err
		}
		e = memoKey{record: bytes.Clone(v), item: it} // a copy: v is valid only in its transaction
		km.mu.Lock()
		if km.m == nil {
			km.m = map[string]memoKey{}
		}
		if _, ok := km.m[string(id)]; !ok && len(km.m) >= keyMemoMax {
			for old := range km.m { // any one: the map's order is random
				delete(km.m, old)
				break
			}
		}
		km.m[string(id)] = e
		km.mu.Unlock()
	}
	k := e.item.domain()
	k.Hash, k.Scopes, k.Ancestors = slices.Clone(k.Hash), slices.Clone(k.Scopes), slices.Clone(k.Ancestors)
	k.Metadata = maps.Clone(k.Metadata)
	return k, nil
}

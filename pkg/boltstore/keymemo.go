package boltstore

import (
	"maps"
	"slices"
	"sync"

	bolt "go.etcd.io/bbolt"

	"latchkey/pkg/account"
)

// keyMemoMax bounds the records a keyMemo remembers: about 600 bytes each
// (the record and its decoding), so at most about 2.5 MiB.
const keyMemoMax = 4096

// keyMemo remembers the decoding of API key records, keyed by the record's
// bytes. Every verify and every authenticated request reads its key, and
// decoding the JSON cost more than the rest of the read. The record is
// still read from the database on every call, so a deleted or changed key
// is seen at once: only the same bytes map to the remembered decoding,
// which is what decoding them again would give.
type keyMemo struct {
	mu sync.RWMutex
	m  map[string]apiKeyItem
}

// get returns the key stored in b under id, reporting whether there is one.
func (km *keyMemo) get(b *bolt.Bucket, id []byte) (account.APIKey, bool, error) {
	v := b.Get(id)
	if v == nil {
		return account.APIKey{}, false, nil
	}
	k, err := km.decode(v)
	return k, err == nil, err
}

// decode returns the key that the record v holds. Its slices are the
// caller's own: a caller that changes them changes no one else's key.
func (km *keyMemo) decode(v []byte) (account.APIKey, error) {
	km.mu.RLock()
	it, ok := km.m[string(v)]
	km.mu.RUnlock()
	if !ok {
		var err error
		if it, err = decode[apiKeyItem](v); err != nil {
			return account.APIKey{}, err
		}
		km.mu.Lock()
		if km.m == nil {
			km.m = map[string]apiKeyItem{}
		}
		if len(km.m) >= keyMemoMax {
			for old := range km.m { // any one: the map's order is random
				delete(km.m, old)
				break
			}
		}
		km.m[string(v)] = it // a copy: v is valid only in its transaction
		km.mu.Unlock()
	}
	k := it.domain()
	k.Hash, k.Scopes, k.Ancestors = slices.Clone(k.Hash), slices.Clone(k.Scopes), slices.Clone(k.Ancestors)
	k.Metadata = maps.Clone(k.Metadata)
	return k, nil
}

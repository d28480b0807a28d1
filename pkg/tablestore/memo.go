package tablestore

import (
	"bytes"
	"errors"
	"maps"
	"reflect"
	"slices"
	"sync"
	"time"

	"latchkey/pkg/account"
)

// keyMemoMax bounds the API key items a keyMemo remembers: a few hundred
// bytes each with their decoding, so at most a few MiB.
const keyMemoMax = 4096

// keyMemo remembers the decoding of API key items, by the item's key.
// Every verify and every authenticated request reads a key, and decoding
// its attributes by reflection cost more than the read itself (on the
// embedded table, several times more). The item is still read on every
// call, and the decoding is used only when the item read is equal,
// attribute by attribute, to the one remembered, so a deleted or changed
// key is seen at once. The items it returns are shared by every read of
// an unchanged key, and so immutable: a reader reads them, and a caller
// that changes one changes a clone (apiKeyItem.clone). Their slices are
// clipped, so that an append to one copies.
type keyMemo struct {
	mu sync.RWMutex
	m  map[key]memoKey
}

// memoKey is a key item as it was read, and its decoding.
type memoKey struct {
	av   Item
	item *apiKeyItem
}

// decode returns the apiKeyItem that av, the item at k, holds: the memo's
// own, shared, which the caller does not modify (clone it to).
func (km *keyMemo) decode(k key, av Item) (*apiKeyItem, error) {
	km.mu.RLock()
	e, ok := km.m[k]
	km.mu.RUnlock()
	if !ok || !sameItem(e.av, av) {
		it := new(apiKeyItem)
		if err := unmarshal(av, it); err != nil {
			return nil, err
		}
		it.Hash, it.Scopes, it.Ancestors = slices.Clip(it.Hash), slices.Clip(it.Scopes), slices.Clip(it.Ancestors)
		it.PreviousHash, it.RateLimits = slices.Clip(it.PreviousHash), slices.Clip(it.RateLimits)
		e = memoKey{av: av, item: it}
		km.mu.Lock()
		if km.m == nil {
			km.m = map[key]memoKey{}
		}
		if _, ok := km.m[k]; !ok && len(km.m) >= keyMemoMax {
			for old := range km.m { // any one: the map's order is random
				delete(km.m, old)
				break
			}
		}
		km.m[k] = e
		km.mu.Unlock()
	}
	return e.item, nil
}

// idMemo remembers one value by key ID, for at most keyMemoMax IDs (any
// one is forgotten to make room): what this process last read of a key,
// which only chooses what its next read asks for. Every verify sets it,
// so a value already held takes no write lock, and the zero value is
// not kept.
type idMemo[V comparable] struct {
	mu sync.RWMutex
	m  map[string]V
}

func (im *idMemo[V]) get(id string) (V, bool) {
	im.mu.RLock()
	defer im.mu.RUnlock()
	v, ok := im.m[id]
	return v, ok
}

// set records v for id; the zero value forgets id.
func (im *idMemo[V]) set(id string, v V) {
	var zero V
	if held, ok := im.get(id); held == v && (ok || v == zero) {
		return
	}
	im.mu.Lock()
	defer im.mu.Unlock()
	if v == zero {
		delete(im.m, id)
		return
	}
	if im.m == nil {
		im.m = map[string]V{}
	}
	if _, ok := im.m[id]; !ok && len(im.m) >= keyMemoMax {
		for old := range im.m { // any one: the map's order is random
			delete(im.m, old)
			break
		}
	}
	im.m[id] = v
}

// overflowMemo remembers, by key ID, the overflow of each key whose
// revocations overflowed (apiKeyItem.RevokedOverflowUntil) as this
// process's last verify of it read it: a verify of a token such a key may
// hold reads the entry's copy in its one request, where a process that
// has not seen the overflow yet reads it with a second (once per key, and
// then knows). The key read decides; this only chooses what is read with
// it, so a stale entry costs one item too many or one request more,
// never a revocation.
type overflowMemo struct{ idMemo[keyOverflow] }

// keyOverflow is the overflow of a key: apiKeyItem's RevokedOverflowUntil
// and RevokedOverflowIssuedBefore, in Unix nanoseconds; zero for none.
type keyOverflow struct {
	until, issuedBefore int64
}

func newKeyOverflow(it *apiKeyItem) keyOverflow {
	var o keyOverflow
	if it.RevokedOverflowUntil == nil {
		return o
	}
	o.until = it.RevokedOverflowUntil.UnixNano()
	if it.RevokedOverflowIssuedBefore != nil {
		o.issuedBefore = it.RevokedOverflowIssuedBefore.UnixNano()
	}
	return o
}

// mayHold reports whether the key keyID, as last seen, has an overflow
// that may hold the token tokenID.
func (om *overflowMemo) mayHold(keyID, tokenID string) bool {
	o, ok := om.get(keyID)
	if !ok {
		return false
	}
	until := time.Unix(0, o.until)
	it := apiKeyItem{RevokedOverflowUntil: &until}
	if o.issuedBefore != 0 {
		before := time.Unix(0, o.issuedBefore)
		it.RevokedOverflowIssuedBefore = &before
	}
	return it.overflowMayHold(tokenID)
}

// saw records the overflow of the key item it, read for keyID, or that it
// has none.
func (om *overflowMemo) saw(keyID string, it *apiKeyItem) { om.set(keyID, newKeyOverflow(it)) }

// keyOf returns the key of an item read, without decoding the rest.
func keyOf(av Item) (key, error) {
	pk, ok1 := av["pk"].(S)
	sk, ok2 := av["sk"].(S)
	if !ok1 || !ok2 {
		return key{}, account.Internal(errors.New("tablestore: an item without its key"))
	}
	return key{string(pk), string(sk)}, nil
}

// sameItem reports whether a and b hold the same attributes with the same
// values.
func sameItem(a, b Item) bool {
	if len(a) != len(b) {
		return false
	}
	if reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer() {
		return true // the same map: a Port that remembers its decodings (boltstore)
	}
	for name, va := range a {
		vb, ok := b[name]
		if !ok || !sameValue(va, vb) {
			return false
		}
	}
	return true
}

func sameValue(a, b Value) bool {
	switch a := a.(type) {
	case S, N, Bool, Null:
		return a == b
	case B:
		b, ok := b.(B)
		return ok && bytes.Equal(a, b)
	case L:
		b, ok := b.(L)
		return ok && sameList(a, b, sameValue)
	case M:
		b, ok := b.(M)
		return ok && sameItem(Item(a), Item(b))
	}
	return false
}

func sameList[T any](a, b []T, same func(x, y T) bool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !same(a[i], b[i]) {
			return false
		}
	}
	return true
}

// clone returns it with slices, maps and pointers of its own, so that a
// caller that changes them changes no one else's key; but for Revoked,
// which no caller changes (a revocation makes a new map), so that a verify
// copies none.
func (it apiKeyItem) clone() apiKeyItem {
	it.Hash, it.Scopes, it.Ancestors = slices.Clone(it.Hash), slices.Clone(it.Scopes), slices.Clone(it.Ancestors)
	it.PreviousHash, it.Metadata = slices.Clone(it.PreviousHash), maps.Clone(it.Metadata)
	if it.PreviousExpiresAt != nil {
		t := *it.PreviousExpiresAt
		it.PreviousExpiresAt = &t
	}
	if it.TokensRevokedBefore != nil {
		t := *it.TokensRevokedBefore
		it.TokensRevokedBefore = &t
	}
	return it
}

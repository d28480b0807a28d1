package tablestore

import (
	"bytes"
	"maps"
	"reflect"
	"slices"
	"sync"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

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
	av   map[string]types.AttributeValue
	item *apiKeyItem
}

// decode returns the apiKeyItem that av, the item at k, holds: the memo's
// own, shared, which the caller does not modify (clone it to).
func (km *keyMemo) decode(k key, av map[string]types.AttributeValue) (*apiKeyItem, error) {
	km.mu.RLock()
	e, ok := km.m[k]
	km.mu.RUnlock()
	if !ok || !sameItem(e.av, av) {
		it := new(apiKeyItem)
		if err := attributevalue.UnmarshalMap(av, it); err != nil {
			return nil, account.Internal(err)
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

// keyOf returns the key of an item read, without decoding the rest.
func keyOf(av map[string]types.AttributeValue) (key, error) {
	pk, ok1 := av["pk"].(*types.AttributeValueMemberS)
	sk, ok2 := av["sk"].(*types.AttributeValueMemberS)
	if !ok1 || !ok2 {
		var k key
		if err := attributevalue.UnmarshalMap(av, &k); err != nil {
			return key{}, account.Internal(err)
		}
		return k, nil
	}
	return key{pk.Value, sk.Value}, nil
}

// sameItem reports whether a and b hold the same attributes with the same
// values.
func sameItem(a, b map[string]types.AttributeValue) bool {
	if len(a) != len(b) {
		return false
	}
	if reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer() {
		return true // the same map: a Table that remembers its decodings
	}
	for name, va := range a {
		vb, ok := b[name]
		if !ok || !sameValue(va, vb) {
			return false
		}
	}
	return true
}

func sameValue(a, b types.AttributeValue) bool {
	switch a := a.(type) {
	case *types.AttributeValueMemberS:
		b, ok := b.(*types.AttributeValueMemberS)
		return ok && a.Value == b.Value
	case *types.AttributeValueMemberN:
		b, ok := b.(*types.AttributeValueMemberN)
		return ok && a.Value == b.Value
	case *types.AttributeValueMemberB:
		b, ok := b.(*types.AttributeValueMemberB)
		return ok && bytes.Equal(a.Value, b.Value)
	case *types.AttributeValueMemberBOOL:
		b, ok := b.(*types.AttributeValueMemberBOOL)
		return ok && a.Value == b.Value
	case *types.AttributeValueMemberNULL:
		b, ok := b.(*types.AttributeValueMemberNULL)
		return ok && a.Value == b.Value
	case *types.AttributeValueMemberSS:
		b, ok := b.(*types.AttributeValueMemberSS)
		return ok && sameList(a.Value, b.Value, func(x, y string) bool { return x == y })
	case *types.AttributeValueMemberNS:
		b, ok := b.(*types.AttributeValueMemberNS)
		return ok && sameList(a.Value, b.Value, func(x, y string) bool { return x == y })
	case *types.AttributeValueMemberBS:
		b, ok := b.(*types.AttributeValueMemberBS)
		return ok && sameList(a.Value, b.Value, bytes.Equal)
	case *types.AttributeValueMemberL:
		b, ok := b.(*types.AttributeValueMemberL)
		return ok && sameList(a.Value, b.Value, sameValue)
	case *types.AttributeValueMemberM:
		b, ok := b.(*types.AttributeValueMemberM)
		return ok && sameItem(a.Value, b.Value)
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

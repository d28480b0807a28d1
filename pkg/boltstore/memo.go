package boltstore

import (
	"latchkey/pkg/tablestore"

	"bytes"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// itemMemoMax bounds the items an itemMemo remembers: a few hundred bytes
// each with their decoding, so at most a few MiB.
const itemMemoMax = 4096

// itemMemo remembers the decoding of items read by GetItem and
// BatchGetItem, by table key. Every verify and every authenticated request
// reads the same few items (a key, an organization), and decoding them
// cost more than the read. The item is still read on every call, and the
// decoding is used only when the stored bytes are the ones remembered, so
// a changed or deleted item is seen at once. The maps it returns are
// shared by the reads of an unchanged item: callers do not modify them
// (tablestore does not; the SDK's callers of DynamoDB get maps of their
// own, which they may).
type itemMemo struct {
	mu sync.RWMutex
	m  map[string]memoItem
}

type memoItem struct {
	data []byte
	item map[string]types.AttributeValue
	// port is item in the port's values (see BatchGetItems).
	port    tablestore.Item
	portErr error
}

// decode returns the item stored as data under key. data may be bbolt's
// memory: nothing kept or returned refers to it.
func (im *itemMemo) decode(key, data []byte) (map[string]types.AttributeValue, error) {
	e, err := im.entry(key, data)
	return e.item, err
}

// entry is decode, with the item in the port's values too.
func (im *itemMemo) entry(key, data []byte) (memoItem, error) {
	im.mu.RLock()
	e, ok := im.m[string(key)]
	im.mu.RUnlock()
	if ok && bytes.Equal(e.data, data) {
		return e, nil
	}
	item, err := decodeItem(data)
	if err != nil {
		return memoItem{}, err
	}
	// An item the port cannot hold (a test's, through the SDK's API) is
	// an error only to a reader through the port.
	port, portErr := tablestore.FromAV(item)
	e = memoItem{data: bytes.Clone(data), item: item, port: port, portErr: portErr}
	im.mu.Lock()
	if im.m == nil {
		im.m = map[string]memoItem{}
	}
	if _, ok := im.m[string(key)]; !ok && len(im.m) >= itemMemoMax {
		for old := range im.m { // any one: the map's order is random
			delete(im.m, old)
			break
		}
	}
	im.m[string(key)] = e
	im.mu.Unlock()
	return e, nil
}

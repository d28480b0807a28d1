package boltstore

import (
	"bytes"
	"sync"

	"latchkey/pkg/tablestore"
)

// itemMemoMax bounds the items an itemMemo remembers.
const itemMemoMax = 4096

// itemMemo remembers the decoding of items, by table key. Every verify
// and every authenticated request reads the same few items (a key, an
// organization), and decoding them cost more than the read. The item is
// still read on every call, and the decoding is used only when the stored
// bytes are the ones remembered, so a changed or deleted item is seen at
// once. The items it returns are shared by the reads of an unchanged
// item: callers do not modify them (tablestore does not).
type itemMemo struct {
	mu sync.RWMutex
	m  map[string]memoItem
}

type memoItem struct {
	data []byte
	item tablestore.Item
}

// decode returns the item stored as data under key. data may be bbolt's
// memory: nothing kept or returned refers to it.
func (im *itemMemo) decode(key, data []byte) (tablestore.Item, error) {
	im.mu.RLock()
	e, ok := im.m[string(key)]
	im.mu.RUnlock()
	if ok && bytes.Equal(e.data, data) {
		return e.item, nil
	}
	item, err := decodeItem(data)
	if err != nil {
		return nil, err
	}
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
	im.m[string(key)] = memoItem{data: bytes.Clone(data), item: item}
	im.mu.Unlock()
	return item, nil
}

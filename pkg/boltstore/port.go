package boltstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"

	bolt "go.etcd.io/bbolt"

	"latchkey/pkg/tablestore"
)

// Port is the Latchkey table of a Table as tablestore's port: it executes
// the store's operations, typed conditions and updates directly, with the
// semantics DynamoDB gives them (see docs/stores.md). The Table must have
// the layout of tablestore.TableDefinition.
type Port struct{ t *Table }

var _ tablestore.SerialPort = Port{}

// Port returns the table as tablestore's port.
func (t *Table) Port() Port { return Port{t} }

// Close closes the table.
func (p Port) Close() error { return p.t.Close() }

// tableKey is the bbolt key of the item k.
func tableKey(k tablestore.Key) []byte {
	return appendKeyPartOf(appendKeyPartOf(make([]byte, 0, len(k.PK)+len(k.SK)+4), k.PK), k.SK)
}

func itemKeyOf(it tablestore.Item) (tablestore.Key, error) {
	pk, ok1 := it["pk"].(tablestore.S)
	sk, ok2 := it["sk"].(tablestore.S)
	if !ok1 || !ok2 || pk == "" || sk == "" {
		return tablestore.Key{}, errors.New("boltstore: an item without a string pk and sk")
	}
	return tablestore.Key{PK: string(pk), SK: string(sk)}, nil
}

// Get reads the item k.
func (p Port) Get(ctx context.Context, k tablestore.Key) (tablestore.Item, error) {
	items, err := p.BatchGet(ctx, []tablestore.Key{k}, true)
	if err != nil || len(items) == 0 {
		return nil, err
	}
	return items[0], nil
}

// BatchGet reads the items keys; every read is strongly consistent.
func (p Port) BatchGet(ctx context.Context, keys []tablestore.Key, _ bool) ([]tablestore.Item, error) {
	return p.t.batchGet(ctx, keys)
}

// Query reads one partition of the table or of its index.
func (p Port) Query(ctx context.Context, q tablestore.Query) (tablestore.Page, error) {
	if err := ctx.Err(); err != nil {
		return tablestore.Page{}, err
	}
	bucket, hashName, rangeName := bucketTableItems, "pk", "sk"
	var ix *index
	if q.Index != "" {
		if q.Index != p.t.index.name {
			return tablestore.Page{}, fmt.Errorf("boltstore: no index %q", q.Index)
		}
		ix = &p.t.index
		bucket, hashName, rangeName = ix.bucket, ix.hash, ix.rng
	}
	rc, err := rangeOf(q.Range)
	if err != nil {
		return tablestore.Page{}, err
	}
	var esk []byte
	if q.After != nil {
		h, ok1 := q.After[hashName].(tablestore.S)
		r, ok2 := q.After[rangeName].(tablestore.S)
		k, err := itemKeyOf(q.After)
		if !ok1 || !ok2 || err != nil {
			return tablestore.Page{}, errors.New("boltstore: a query's start is not a key of its items")
		}
		esk = appendKeyPartOf(appendKeyPartOf(nil, string(h)), string(r))
		if ix != nil {
			esk = append(esk, tableKey(k)...)
		}
	}
	partition := appendKeyPartOf(nil, q.Partition)
	var page tablestore.Page
	err = p.t.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucket).Cursor()
		items := tx.Bucket(bucketTableItems)
		var k []byte
		read := 0 // bytes of the items read, for the page's size limit
		if q.Forward {
			from := append(bytes.Clone(partition), rc.low()...)
			if esk != nil && bytes.Compare(esk, from) > 0 {
				from = esk
			}
			k, _ = c.Seek(from)
		} else {
			to := partitionEnd(partition)
			if h := rc.high(); h != nil {
				to = append(bytes.Clone(partition), h...)
			}
			if esk != nil && bytes.Compare(esk, to) < 0 {
				to = esk
			}
			if k, _ = c.Seek(to); k == nil {
				k, _ = c.Last()
			} else {
				k, _ = c.Prev()
			}
		}
		for ; k != nil; k = step(c, q.Forward) {
			if !bytes.HasPrefix(k, partition) {
				break
			}
			if esk != nil && (q.Forward && bytes.Compare(k, esk) <= 0 || !q.Forward && bytes.Compare(k, esk) >= 0) {
				continue
			}
			rk, rest, ok := cutKeyPart(k[len(partition):])
			if !ok {
				return errCorrupt
			}
			switch w := rc.where(rk); {
			case w < 0 && q.Forward, w > 0 && !q.Forward:
				continue
			case w != 0:
				return nil
			}
			key := k
			if ix != nil {
				key = rest
			}
			data := items.Get(key)
			if data == nil {
				return errCorrupt
			}
			item, err := p.t.memo.decode(key, data)
			if err != nil {
				return err
			}
			page.Scanned++
			read += len(data)
			if q.Filter.Op == tablestore.OpNone || met(q.Filter, item) {
				page.Items = append(page.Items, only(item, q.Names))
			}
			if page.Scanned == q.Limit || read >= maxQueryPage {
				page.Last = tablestore.Item{"pk": item["pk"], "sk": item["sk"]}
				if ix != nil {
					page.Last[hashName], page.Last[rangeName] = item[hashName], item[rangeName]
				}
				return nil
			}
		}
		return nil
	})
	return page, err
}

// only returns item with only names (all of it when names is nil).
func only(item tablestore.Item, names []string) tablestore.Item {
	if names == nil {
		return item
	}
	out := make(tablestore.Item, len(names))
	for _, n := range names {
		if v, ok := item[n]; ok {
			out[n] = v
		}
	}
	return out
}

// rangeOf is r over the range key's bytes.
func rangeOf(r tablestore.Range) (rangeCond, error) {
	ops := map[tablestore.Op]byte{
		tablestore.OpNone: 0, tablestore.OpEqual: '=', tablestore.OpLess: '<', tablestore.OpLessEqual: opLE,
		tablestore.OpGreater: '>', tablestore.OpGreaterEqual: opGE, tablestore.OpBetween: 'B', tablestore.OpBeginsWith: 'b',
	}
	op, ok := ops[r.Op]
	want := map[byte]int{0: 0, 'B': 2}[op]
	if op != 0 && op != 'B' {
		want = 1
	}
	if !ok || len(r.Values) != want {
		return rangeCond{}, fmt.Errorf("boltstore: a range of form %d with %d values", r.Op, len(r.Values))
	}
	rc := rangeCond{op: op}
	if want > 0 {
		rc.a = []byte(r.Values[0])
	}
	if want > 1 {
		rc.b = []byte(r.Values[1])
		if bytes.Compare(rc.a, rc.b) > 0 {
			return rangeCond{}, errors.New("boltstore: a range whose low bound is above its high one")
		}
	}
	return rc, nil
}

// Write makes w alone.
func (p Port) Write(ctx context.Context, w tablestore.Write, returnNew bool) (tablestore.Item, error) {
	if w.Kind == tablestore.WriteCheck {
		return nil, errors.New("boltstore: a condition check alone")
	}
	// A failed condition writes nothing and is no failure of the batch
	// (DB.Batch): the write's answer, kept here.
	var out tablestore.Item
	var failed error
	err := p.t.write(ctx, func(tx *bolt.Tx) error {
		out, failed = nil, nil
		ops, err := p.prepare(tx, []tablestore.Write{w})
		if err != nil {
			return err
		}
		if op := ops[0]; !met(w.If, op.old) {
			e := &tablestore.ConditionFailedError{}
			if w.ReturnOld {
				e.Old = op.old
			}
			failed = e
			return nil
		}
		if returnNew {
			out = ops[0].next
		}
		return p.commit(tx, ops)
	})
	if err == nil {
		err = failed
	}
	return out, err
}

// Transact makes ws, all or none.
func (p Port) Transact(ctx context.Context, ws []tablestore.Write) error {
	return p.TransactWith(ctx, ws, nil)
}

// TransactWith makes ws and the writes more gives, called in the writer.
func (p Port) TransactWith(ctx context.Context, ws []tablestore.Write, more func() ([]tablestore.Write, error)) error {
	// A cancellation writes nothing and is no failure of the batch
	// (DB.Batch): the transaction's answer, kept here.
	var failed *tablestore.CanceledError
	err := p.t.write(ctx, func(tx *bolt.Tx) error {
		failed = nil
		all := ws
		if more != nil {
			extra, err := more()
			if err != nil {
				return err
			}
			all = append(ws[:len(ws):len(ws)], extra...)
		}
		if len(all) == 0 || len(all) > maxTransactItems {
			return fmt.Errorf("boltstore: a transaction of %d writes", len(all))
		}
		ops, err := p.prepare(tx, all)
		if err != nil {
			return err
		}
		seen := make(map[string]bool, len(ops))
		for _, op := range ops {
			if seen[string(op.key)] {
				return errors.New("boltstore: a transaction with two writes of one item")
			}
			seen[string(op.key)] = true
		}
		for i, op := range ops {
			if met(all[i].If, op.old) {
				continue
			}
			if failed == nil {
				failed = &tablestore.CanceledError{Reasons: make([]tablestore.Reason, len(ops)), Old: make([]tablestore.Item, len(ops)), Cause: errors.New("boltstore: a condition failed")}
			}
			failed.Reasons[i] = tablestore.ReasonConditionFailed
			if all[i].ReturnOld {
				failed.Old[i] = op.old
			}
		}
		if failed != nil {
			return nil
		}
		return p.commit(tx, ops)
	})
	if err == nil && failed != nil {
		return failed
	}
	return err
}

// portOp is one write, prepared: the item it finds and the one it leaves
// (nil: none), in both forms.
type portOp struct {
	kind       tablestore.WriteKind
	key        []byte
	old, next  tablestore.Item
	unchanging bool // a check
}

// prepare reads the items of ws and works out what each leaves.
func (p Port) prepare(tx *bolt.Tx, ws []tablestore.Write) ([]portOp, error) {
	items := tx.Bucket(bucketTableItems)
	ops := make([]portOp, len(ws))
	for i, w := range ws {
		k := w.Key
		if w.Kind == tablestore.WritePut {
			var err error
			if k, err = itemKeyOf(w.Item); err != nil {
				return nil, err
			}
		} else if k.PK == "" || k.SK == "" {
			return nil, errors.New("boltstore: a write without its key")
		}
		op := portOp{kind: w.Kind, key: tableKey(k)}
		if data := items.Get(op.key); data != nil {
			old, err := p.t.memo.decode(op.key, data)
			if err != nil {
				return nil, err
			}
			op.old = old
		}
		switch w.Kind {
		case tablestore.WritePut:
			op.next = w.Item
		case tablestore.WriteDelete:
		case tablestore.WriteCheck:
			op.unchanging = true
		case tablestore.WriteUpdate:
			next, err := apply(w.Update, op.old, k)
			if err != nil {
				return nil, err
			}
			op.next = next
		default:
			return nil, fmt.Errorf("boltstore: a write of kind %d", w.Kind)
		}
		ops[i] = op
	}
	return ops, nil
}

// commit stores what ops leave.
func (p Port) commit(tx *bolt.Tx, ops []portOp) error {
	for _, op := range ops {
		if op.unchanging || op.old == nil && op.next == nil {
			continue
		}
		var data []byte
		if op.next != nil {
			var err error
			if data, err = encodeItem(op.next); err != nil {
				return err
			}
		}
		if err := p.t.store(tx, op.key, op.old, op.next, data); err != nil {
			return err
		}
	}
	return nil
}

// apply returns the item u leaves of old (nil: none yet, so one of the key
// k alone).
func apply(u tablestore.Update, old tablestore.Item, k tablestore.Key) (tablestore.Item, error) {
	next := make(tablestore.Item, len(old)+len(u))
	for n, v := range old {
		next[n] = v
	}
	next["pk"], next["sk"] = tablestore.S(k.PK), tablestore.S(k.SK)
	for _, a := range u {
		if a.Name == "pk" || a.Name == "sk" || a.Name == "" {
			return nil, fmt.Errorf("boltstore: an update of the key attribute %q", a.Name)
		}
		switch a.Kind {
		case tablestore.ActSet:
			next[a.Name] = a.Value
		case tablestore.ActRemove:
			delete(next, a.Name)
		case tablestore.ActAdd:
			cur := a.Start
			if v, ok := old[a.Name]; ok {
				n, ok := v.(tablestore.N)
				if !ok {
					return nil, fmt.Errorf("boltstore: an add to %q, which is not a number", a.Name)
				}
				cur = n
			}
			delta, ok := a.Value.(tablestore.N)
			if !ok {
				return nil, fmt.Errorf("boltstore: an add of a %T", a.Value)
			}
			next[a.Name] = cur + delta
		default:
			return nil, fmt.Errorf("boltstore: an update action of kind %d", a.Kind)
		}
	}
	return next, nil
}

// met reports whether item (nil: none) meets c, as DynamoDB evaluates it:
// a comparison with an absent attribute or a value of another type is
// false, but for <>, which is true.
func met(c tablestore.Cond, item tablestore.Item) bool {
	v, has := item[c.Name]
	switch c.Op {
	case tablestore.OpNone:
		return true
	case tablestore.OpExists:
		return has
	case tablestore.OpNotExists:
		return !has
	case tablestore.OpEqual:
		return has && reflect.DeepEqual(v, c.Values[0])
	case tablestore.OpNotEqual:
		return !has || !reflect.DeepEqual(v, c.Values[0])
	case tablestore.OpLess, tablestore.OpLessEqual, tablestore.OpGreater, tablestore.OpGreaterEqual:
		n, ok := compare(v, c.Values[0])
		if !has || !ok {
			return false
		}
		switch c.Op {
		case tablestore.OpLess:
			return n < 0
		case tablestore.OpLessEqual:
			return n <= 0
		case tablestore.OpGreater:
			return n > 0
		}
		return n >= 0
	case tablestore.OpBetween:
		lo, ok1 := compare(v, c.Values[0])
		hi, ok2 := compare(v, c.Values[1])
		return has && ok1 && ok2 && lo >= 0 && hi <= 0
	case tablestore.OpBeginsWith:
		s, ok1 := v.(tablestore.S)
		prefix, ok2 := c.Values[0].(tablestore.S)
		return has && ok1 && ok2 && strings.HasPrefix(string(s), string(prefix))
	case tablestore.OpIn:
		for _, x := range c.Values {
			if has && reflect.DeepEqual(v, x) {
				return true
			}
		}
		return false
	case tablestore.OpAnd:
		for _, sub := range c.Conds {
			if !met(sub, item) {
				return false
			}
		}
		return true
	case tablestore.OpOr:
		for _, sub := range c.Conds {
			if met(sub, item) {
				return true
			}
		}
		return false
	case tablestore.OpNot:
		return !met(c.Conds[0], item)
	}
	return false
}

// compare orders a against b, two strings, numbers or binaries; ok is
// false for any other pair.
func compare(a, b tablestore.Value) (int, bool) {
	switch a := a.(type) {
	case tablestore.S:
		b, ok := b.(tablestore.S)
		return strings.Compare(string(a), string(b)), ok
	case tablestore.N:
		b, ok := b.(tablestore.N)
		switch {
		case !ok:
			return 0, false
		case a < b:
			return -1, true
		case a > b:
			return 1, true
		}
		return 0, true
	case tablestore.B:
		b, ok := b.(tablestore.B)
		return bytes.Compare(a, b), ok
	}
	return 0, false
}

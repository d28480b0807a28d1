package tablestore

import (
	"context"
	"errors"
	"fmt"
)

// The port: the few operations the single-table logic sends to a table, in
// Latchkey's own types. Conditions are a closed set of forms over
// top-level attributes, updates three kinds of action, queries one
// partition with a range of its sort key. A store executes them as they
// are (boltstore) or translates them (dynamostore.Port, to the SDK's
// expressions); docs/stores.md lists what each operation of the store
// sends.

// Value is the value of one attribute: S, N, B, Bool, L, M or Null. The
// set is closed: what the items of this table hold, no more.
type Value interface{ isValue() }

type (
	// S is a string.
	S string
	// N is a number. Every number Latchkey stores is an integer.
	N int64
	// B is binary.
	B []byte
	// Bool is a boolean.
	Bool bool
	// L is a list.
	L []Value
	// M is a map.
	M map[string]Value
	// Null is the null value, which an item read may hold where a field
	// was nil; Latchkey writes none that it reads back as meaningful.
	Null struct{}
)

func (S) isValue()    {}
func (N) isValue()    {}
func (B) isValue()    {}
func (Bool) isValue() {}
func (L) isValue()    {}
func (M) isValue()    {}
func (Null) isValue() {}

// Item is one item: its attributes by name.
type Item map[string]Value

// Op is the form of a condition.
type Op uint8

// The forms of a condition. Compare takes the attribute's value as the
// left operand; an absent attribute meets no comparison.
const (
	OpNone         Op = iota // no condition: always met
	OpExists                 // the attribute exists
	OpNotExists              // it does not
	OpEqual                  // = Values[0]
	OpNotEqual               // <> Values[0] (met when absent)
	OpLess                   // < Values[0]
	OpLessEqual              // <= Values[0]
	OpGreater                // > Values[0]
	OpGreaterEqual           // >= Values[0]
	OpBetween                // Values[0] <= v <= Values[1]
	OpBeginsWith             // a string that starts with Values[0]
	OpIn                     // equal to one of Values
	OpAnd                    // every one of Conds
	OpOr                     // any one of Conds
	OpNot                    // not Conds[0]
)

// Cond is a condition on the item a write finds (or on the items a query
// returns). The zero Cond is no condition.
type Cond struct {
	Op     Op
	Name   string
	Values []Value
	Conds  []Cond
}

// attr names a top-level attribute, to build conditions on it.
type attr string

func (a attr) Exists() Cond                  { return Cond{Op: OpExists, Name: string(a)} }
func (a attr) NotExists() Cond               { return Cond{Op: OpNotExists, Name: string(a)} }
func (a attr) Equal(v any) Cond              { return a.cmp(OpEqual, v) }
func (a attr) NotEqual(v any) Cond           { return a.cmp(OpNotEqual, v) }
func (a attr) LessThan(v any) Cond           { return a.cmp(OpLess, v) }
func (a attr) LessThanEqual(v any) Cond      { return a.cmp(OpLessEqual, v) }
func (a attr) GreaterThan(v any) Cond        { return a.cmp(OpGreater, v) }
func (a attr) GreaterThanEqual(v any) Cond   { return a.cmp(OpGreaterEqual, v) }
func (a attr) BeginsWith(prefix string) Cond { return a.cmp(OpBeginsWith, prefix) }
func (a attr) Between(lo, hi any) Cond {
	return Cond{Op: OpBetween, Name: string(a), Values: []Value{value(lo), value(hi)}}
}
func (a attr) In(vs ...any) Cond {
	c := Cond{Op: OpIn, Name: string(a)}
	for _, v := range vs {
		c.Values = append(c.Values, value(v))
	}
	return c
}
func (a attr) cmp(op Op, v any) Cond {
	return Cond{Op: op, Name: string(a), Values: []Value{value(v)}}
}

// And is c and every one of more.
func (c Cond) And(more ...Cond) Cond { return Cond{Op: OpAnd, Conds: append([]Cond{c}, more...)} }

// Or is c or any one of more.
func (c Cond) Or(more ...Cond) Cond { return Cond{Op: OpOr, Conds: append([]Cond{c}, more...)} }

// Not is not c.
func (c Cond) Not() Cond { return Cond{Op: OpNot, Conds: []Cond{c}} }

// Action is one change of an update.
type Action struct {
	Kind ActionKind
	Name string
	// Value is what Set sets. Add adds Value (an N) to the attribute, or
	// to Start when the attribute is absent.
	Value Value
	Start N
}

// ActionKind is the kind of an Action.
type ActionKind uint8

const (
	ActSet    ActionKind = iota + 1 // Name = Value
	ActRemove                       // remove Name
	ActAdd                          // Name = (Name, or Start if absent) + Value
)

// Update is the actions of one update, applied to the item a write finds
// (or to an item of its key alone, if there is none).
type Update []Action

func set(name string, v any) Update { return Update(nil).set(name, v) }

func (u Update) set(name string, v any) Update {
	return append(u, Action{Kind: ActSet, Name: name, Value: value(v)})
}

func (u Update) remove(name string) Update { return append(u, Action{Kind: ActRemove, Name: name}) }

// add adds delta to name, taken as start when it is absent.
func (u Update) add(name string, start, delta int64) Update {
	return append(u, Action{Kind: ActAdd, Name: name, Value: N(delta), Start: N(start)})
}

// WriteKind is the kind of a Write.
type WriteKind uint8

const (
	WritePut    WriteKind = iota + 1 // put Item
	WriteUpdate                      // apply Update to Key's item
	WriteDelete                      // delete Key's item
	WriteCheck                       // check If on Key's item, writing nothing
)

// Write is one write, alone or in a transaction: it is made only if the
// item it finds meets If. ReturnOld asks for that item with the failure
// when If is not met.
type Write struct {
	Kind      WriteKind
	Key       Key // of Update, Delete and Check; a Put's is in Item
	Item      Item
	Update    Update
	If        Cond
	ReturnOld bool
}

// Range is a condition on the sort key of a query: Op one of OpNone (every
// item of the partition), OpEqual, OpLess, OpLessEqual, OpGreater,
// OpGreaterEqual, OpBetween, OpBeginsWith, over string values.
type Range struct {
	Op     Op
	Values []string
}

// Query reads one partition of the table, or of GSI1 (Index), in the order
// of its sort key: newest first unless Forward.
type Query struct {
	Index     string // "" for the table, or GSI1
	Partition string
	Range     Range
	Filter    Cond     // applied after Limit, as DynamoDB applies it
	Names     []string // the attributes to return; all when nil
	Forward   bool
	Limit     int  // at most this many items read; no limit when 0
	After     Item // the Last of the previous page, to go on from
	// Consistent asks for a strongly consistent read (not on an index).
	Consistent bool
}

// Page is what a Query read: Items, and Last when there may be more
// (the key of the last item read, for Query.After). Scanned counts the
// items read before the Filter.
type Page struct {
	Items   []Item
	Last    Item
	Scanned int
}

// Port is the table as the store uses it. Get and BatchGet answer nil for
// an item that is not there. A Write or Transact that fails a condition
// answers a *ConditionFailedError or a *CanceledError; a write that meets
// a transaction in progress ErrConflict (or a CanceledError with
// ReasonConflict); a failure that a retry later can cure wraps
// ErrUnavailable.
type Port interface {
	// Get reads the item k, strongly consistent.
	Get(ctx context.Context, k Key) (Item, error)
	// BatchGet reads the items keys (distinct, at most 100) and answers
	// those that exist, in no particular order.
	BatchGet(ctx context.Context, keys []Key, consistent bool) ([]Item, error)
	Query(ctx context.Context, q Query) (Page, error)
	// Write makes w (not a Check); with returnNew it answers the item as
	// written (an Update's).
	Write(ctx context.Context, w Write, returnNew bool) (Item, error)
	// Transact makes ws, all or none.
	Transact(ctx context.Context, ws []Write) error
}

// SerialPort is a Port with one writer (boltstore's) that makes some of a
// transaction's writes inside that writer: more is called in the write,
// after every transaction committed before it, and its writes are
// appended to ws. See WithSerialWrites.
type SerialPort interface {
	Port
	TransactWith(ctx context.Context, ws []Write, more func() ([]Write, error)) error
}

// ErrConflict is a write refused because a transaction in progress held
// its item: a retry can succeed.
var ErrConflict = errors.New("tablestore: the item is in a transaction")

// ConditionFailedError is a Write whose If was not met; Old is the item it
// found, if the Write asked for it (ReturnOld) and there was one.
type ConditionFailedError struct{ Old Item }

func (e *ConditionFailedError) Error() string { return "tablestore: the condition of a write failed" }

// Reason is why a transaction was cancelled, for one of its writes.
type Reason uint8

const (
	ReasonNone            Reason = iota // this write was fine
	ReasonConditionFailed               // its If was not met
	ReasonConflict                      // another transaction held its item
	ReasonThrottled                     // the table asked to slow down
)

// CanceledError is a transaction not made: Reasons[i] for ws[i], and Old[i]
// the item ws[i] found when its condition failed and it asked for it.
type CanceledError struct {
	Reasons []Reason
	Old     []Item
	// Cause is the table's own error, for logs.
	Cause error
}

func (e *CanceledError) Error() string {
	return fmt.Sprintf("tablestore: transaction cancelled %v: %v", e.Reasons, e.Cause)
}

func (e *CanceledError) Unwrap() error { return e.Cause }

// value is the Value of v, a Go value of the kinds items hold; see
// encode in codec.go. A type it cannot encode is a bug of the caller.
func value(v any) Value {
	out, err := encode(v)
	if err != nil {
		panic(fmt.Sprintf("tablestore: %v", err))
	}
	return out
}

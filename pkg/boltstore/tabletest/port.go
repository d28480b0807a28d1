// Package tabletest is the conformance suite of tablestore's port: run
// against DynamoDB Local (through dynamostore.Port) it pins what DynamoDB
// does, and run against boltstore's executor it proves the same. Every case
// states the answer it expects; none is derived from either side.
//
// The table under test must be made from tablestore.TableDefinition.
package tabletest

import (
	"context"
	"errors"
	"reflect"
	"sort"
	"sync"
	"testing"

	"latchkey/pkg/tablestore"
)

// NewPort returns a fresh, empty table as tablestore's port.
type NewPort func(t *testing.T) tablestore.Port

// RunPort runs the port's cases, each on a table of its own: every form of
// condition, every update action, the queries and transactions
// tablestore sends (docs/stores.md), with the answers DynamoDB gives, so
// that boltstore's executor and the translation to the SDK are held to
// the same.
func RunPort(t *testing.T, newPort NewPort) {
	cases := []struct {
		name string
		fn   func(*testing.T, tablestore.Port)
	}{
		{"PutGet", testPortPutGet},
		{"Conditions", testPortConditions},
		{"ReturnOld", testPortReturnOld},
		{"Update", testPortUpdate},
		{"Delete", testPortDelete},
		{"BatchGet", testPortBatchGet},
		{"Query", testPortQuery},
		{"QueryPaging", testPortQueryPaging},
		{"QueryFilter", testPortQueryFilter},
		{"QueryIndex", testPortQueryIndex},
		{"Transact", testPortTransact},
		{"ConcurrentClaims", testPortConcurrentClaims},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.fn(t, newPort(t)) })
	}
}

type (
	pS = tablestore.S
	pN = tablestore.N
)

func pkey(pk, sk string) tablestore.Key { return tablestore.Key{PK: pk, SK: sk} }

func pitem(pk, sk string, attrs ...any) tablestore.Item {
	it := tablestore.Item{"pk": pS(pk), "sk": pS(sk)}
	for i := 0; i < len(attrs); i += 2 {
		it[attrs[i].(string)] = attrs[i+1].(tablestore.Value)
	}
	return it
}

func pput(t *testing.T, p tablestore.Port, it tablestore.Item) {
	t.Helper()
	if _, err := p.Write(context.Background(), tablestore.Write{Kind: tablestore.WritePut, Item: it}, false); err != nil {
		t.Fatalf("put %v: %v", it, err)
	}
}

func pget(t *testing.T, p tablestore.Port, k tablestore.Key) tablestore.Item {
	t.Helper()
	it, err := p.Get(context.Background(), k)
	if err != nil {
		t.Fatalf("get %v: %v", k, err)
	}
	return it
}

func failedCond(err error) bool {
	var cf *tablestore.ConditionFailedError
	return errors.As(err, &cf)
}

func testPortPutGet(t *testing.T, p tablestore.Port) {
	it := pitem("P", "1",
		"s", pS("text"), "empty", pS(""), "n", pN(-42), "big", pN(1<<53+1), "b", tablestore.B{0, 1, 255},
		"t", tablestore.Bool(true), "f", tablestore.Bool(false),
		"l", tablestore.L{pS("a"), pN(1)}, "el", tablestore.L{},
		"m", tablestore.M{"x": pS("y"), "r": tablestore.M{"e": pN(5)}}, "em", tablestore.M{})
	pput(t, p, it)
	if got := pget(t, p, pkey("P", "1")); !reflect.DeepEqual(got, it) {
		t.Errorf("get:\n got %#v\nwant %#v", got, it)
	}
	if got := pget(t, p, pkey("P", "2")); got != nil {
		t.Errorf("get of no item: %#v, want nil", got)
	}
}

func testPortConditions(t *testing.T, p tablestore.Port) {
	base := pitem("C", "1", "s", pS("abc"), "n", pN(5), "b", tablestore.B{2}, "t", tablestore.Bool(true))
	type attr = string
	cmp := func(op tablestore.Op, name attr, v tablestore.Value) tablestore.Cond {
		return tablestore.Cond{Op: op, Name: name, Values: []tablestore.Value{v}}
	}
	exists := tablestore.Cond{Op: tablestore.OpExists, Name: "s"}
	absent := tablestore.Cond{Op: tablestore.OpNotExists, Name: "none"}
	cases := []struct {
		name string
		cond tablestore.Cond
		met  bool
	}{
		{"exists", exists, true},
		{"exists/absent", tablestore.Cond{Op: tablestore.OpExists, Name: "none"}, false},
		{"not exists", absent, true},
		{"not exists/present", tablestore.Cond{Op: tablestore.OpNotExists, Name: "s"}, false},
		{"= S", cmp(tablestore.OpEqual, "s", pS("abc")), true},
		{"= S other", cmp(tablestore.OpEqual, "s", pS("abd")), false},
		{"= N", cmp(tablestore.OpEqual, "n", pN(5)), true},
		{"= B", cmp(tablestore.OpEqual, "b", tablestore.B{2}), true},
		{"= Bool", cmp(tablestore.OpEqual, "t", tablestore.Bool(true)), true},
		{"= other type", cmp(tablestore.OpEqual, "n", pS("5")), false},
		{"= absent", cmp(tablestore.OpEqual, "none", pS("x")), false},
		{"<> S", cmp(tablestore.OpNotEqual, "s", pS("abd")), true},
		{"<> same", cmp(tablestore.OpNotEqual, "s", pS("abc")), false},
		{"<> absent", cmp(tablestore.OpNotEqual, "none", pS("x")), true},
		{"<> other type", cmp(tablestore.OpNotEqual, "n", pS("5")), true},
		{"< N", cmp(tablestore.OpLess, "n", pN(6)), true},
		{"< N equal", cmp(tablestore.OpLess, "n", pN(5)), false},
		{"<= N", cmp(tablestore.OpLessEqual, "n", pN(5)), true},
		{"<= N negative", cmp(tablestore.OpLessEqual, "n", pN(-1)), false},
		{"> N", cmp(tablestore.OpGreater, "n", pN(4)), true},
		{"> N equal", cmp(tablestore.OpGreater, "n", pN(5)), false},
		{">= N", cmp(tablestore.OpGreaterEqual, "n", pN(5)), true},
		{"< S", cmp(tablestore.OpLess, "s", pS("abd")), true},
		{"> S", cmp(tablestore.OpGreater, "s", pS("ab")), true},
		{"< absent", cmp(tablestore.OpLess, "none", pN(1)), false},
		{"< other type", cmp(tablestore.OpLess, "s", pN(1)), false},
		{"between", tablestore.Cond{Op: tablestore.OpBetween, Name: "n", Values: []tablestore.Value{pN(5), pN(9)}}, true},
		{"between below", tablestore.Cond{Op: tablestore.OpBetween, Name: "n", Values: []tablestore.Value{pN(6), pN(9)}}, false},
		{"between absent", tablestore.Cond{Op: tablestore.OpBetween, Name: "none", Values: []tablestore.Value{pN(0), pN(9)}}, false},
		{"begins with", cmp(tablestore.OpBeginsWith, "s", pS("ab")), true},
		{"begins with other", cmp(tablestore.OpBeginsWith, "s", pS("b")), false},
		{"in", tablestore.Cond{Op: tablestore.OpIn, Name: "s", Values: []tablestore.Value{pS("x"), pS("abc")}}, true},
		{"in none", tablestore.Cond{Op: tablestore.OpIn, Name: "s", Values: []tablestore.Value{pS("x"), pS("y")}}, false},
		{"and", tablestore.Cond{Op: tablestore.OpAnd, Conds: []tablestore.Cond{exists, absent}}, true},
		{"and false", tablestore.Cond{Op: tablestore.OpAnd, Conds: []tablestore.Cond{exists, cmp(tablestore.OpEqual, "n", pN(1))}}, false},
		{"or", tablestore.Cond{Op: tablestore.OpOr, Conds: []tablestore.Cond{cmp(tablestore.OpEqual, "n", pN(1)), exists}}, true},
		{"or false", tablestore.Cond{Op: tablestore.OpOr, Conds: []tablestore.Cond{cmp(tablestore.OpEqual, "n", pN(1)), cmp(tablestore.OpEqual, "n", pN(2))}}, false},
		{"not", tablestore.Cond{Op: tablestore.OpNot, Conds: []tablestore.Cond{absent}}, false},
	}
	pput(t, p, base)
	for _, c := range cases {
		// A check of the item, and a write of it, under the condition.
		err := p.Transact(context.Background(), []tablestore.Write{{Kind: tablestore.WriteCheck, Key: pkey("C", "1"), If: c.cond}})
		var ce *tablestore.CanceledError
		if got := err == nil; got != c.met || err != nil && !errors.As(err, &ce) {
			t.Errorf("%s: check answered %v, want met %v", c.name, err, c.met)
		}
		_, err = p.Write(context.Background(), tablestore.Write{Kind: tablestore.WriteUpdate, Key: pkey("C", "1"), Update: tablestore.Update{{Kind: tablestore.ActSet, Name: "w", Value: pS(c.name)}}, If: c.cond}, false)
		if got := err == nil; got != c.met || err != nil && !failedCond(err) {
			t.Errorf("%s: update answered %v, want met %v", c.name, err, c.met)
		}
	}
	// On no item, only what holds of absent attributes.
	_, err := p.Write(context.Background(), tablestore.Write{Kind: tablestore.WritePut, Item: pitem("C", "2"), If: tablestore.Cond{Op: tablestore.OpNotExists, Name: "pk"}}, false)
	if err != nil {
		t.Errorf("put of a new item on pk not exists: %v", err)
	}
	_, err = p.Write(context.Background(), tablestore.Write{Kind: tablestore.WritePut, Item: pitem("C", "2"), If: tablestore.Cond{Op: tablestore.OpNotExists, Name: "pk"}}, false)
	if !failedCond(err) {
		t.Errorf("second put on pk not exists: %v, want a failed condition", err)
	}
}

func testPortReturnOld(t *testing.T, p tablestore.Port) {
	old := pitem("R", "1", "v", pN(1))
	pput(t, p, old)
	w := tablestore.Write{Kind: tablestore.WritePut, Item: pitem("R", "1", "v", pN(2)), If: tablestore.Cond{Op: tablestore.OpNotExists, Name: "pk"}, ReturnOld: true}
	_, err := p.Write(context.Background(), w, false)
	var cf *tablestore.ConditionFailedError
	if !errors.As(err, &cf) || !reflect.DeepEqual(cf.Old, old) {
		t.Errorf("put with ReturnOld: %v (old %#v), want the failure with %#v", err, cf, old)
	}
	w.ReturnOld = false
	_, err = p.Write(context.Background(), w, false)
	if !errors.As(err, &cf) || cf.Old != nil {
		t.Errorf("put without ReturnOld: %v, want the failure with no item", err)
	}
}

func testPortUpdate(t *testing.T, p tablestore.Port) {
	ctx := context.Background()
	set := func(n string, v tablestore.Value) tablestore.Action {
		return tablestore.Action{Kind: tablestore.ActSet, Name: n, Value: v}
	}
	// On no item: an item of the key and the actions.
	u := tablestore.Update{set("a", pS("x")), {Kind: tablestore.ActAdd, Name: "c", Value: pN(2)}, {Kind: tablestore.ActAdd, Name: "d", Value: pN(-1), Start: 10}, {Kind: tablestore.ActRemove, Name: "none"}}
	got, err := p.Write(ctx, tablestore.Write{Kind: tablestore.WriteUpdate, Key: pkey("U", "1"), Update: u}, true)
	want := pitem("U", "1", "a", pS("x"), "c", pN(2), "d", pN(9))
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("update of no item: %#v, %v, want %#v", got, err, want)
	}
	// Again: add to what is there, start ignored; set and remove.
	u = tablestore.Update{{Kind: tablestore.ActAdd, Name: "c", Value: pN(3)}, {Kind: tablestore.ActAdd, Name: "d", Value: pN(-1), Start: 10}, {Kind: tablestore.ActRemove, Name: "a"}, set("m", tablestore.M{"k": pS("v")})}
	got, err = p.Write(ctx, tablestore.Write{Kind: tablestore.WriteUpdate, Key: pkey("U", "1"), Update: u}, true)
	want = pitem("U", "1", "c", pN(5), "d", pN(8), "m", tablestore.M{"k": pS("v")})
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("update: %#v, %v, want %#v", got, err, want)
	}
	if got := pget(t, p, pkey("U", "1")); !reflect.DeepEqual(got, want) {
		t.Errorf("item after update: %#v, want %#v", got, want)
	}
	// Without returnNew, no item comes back.
	got, err = p.Write(ctx, tablestore.Write{Kind: tablestore.WriteUpdate, Key: pkey("U", "1"), Update: tablestore.Update{set("z", pN(1))}}, false)
	if err != nil || got != nil {
		t.Errorf("update without returnNew: %#v, %v, want nil, nil", got, err)
	}
}

func testPortDelete(t *testing.T, p tablestore.Port) {
	ctx := context.Background()
	pput(t, p, pitem("D", "1", "owner", pS("a")))
	_, err := p.Write(ctx, tablestore.Write{Kind: tablestore.WriteDelete, Key: pkey("D", "1"), If: tablestore.Cond{Op: tablestore.OpEqual, Name: "owner", Values: []tablestore.Value{pS("b")}}}, false)
	if !failedCond(err) {
		t.Errorf("delete on a condition not met: %v, want a failed condition", err)
	}
	if _, err := p.Write(ctx, tablestore.Write{Kind: tablestore.WriteDelete, Key: pkey("D", "1"), If: tablestore.Cond{Op: tablestore.OpEqual, Name: "owner", Values: []tablestore.Value{pS("a")}}}, false); err != nil {
		t.Errorf("delete: %v", err)
	}
	if got := pget(t, p, pkey("D", "1")); got != nil {
		t.Errorf("item after delete: %#v", got)
	}
	if _, err := p.Write(ctx, tablestore.Write{Kind: tablestore.WriteDelete, Key: pkey("D", "1")}, false); err != nil {
		t.Errorf("delete of no item: %v", err)
	}
}

func testPortBatchGet(t *testing.T, p tablestore.Port) {
	a, b := pitem("G", "1", "v", pN(1)), pitem("G", "2", "v", pN(2))
	pput(t, p, a)
	pput(t, p, b)
	for _, consistent := range []bool{true, false} {
		got, err := p.BatchGet(context.Background(), []tablestore.Key{pkey("G", "2"), pkey("G", "3"), pkey("G", "1")}, consistent)
		sort.Slice(got, func(i, j int) bool { return got[i]["sk"].(pS) < got[j]["sk"].(pS) })
		if err != nil || !reflect.DeepEqual(got, []tablestore.Item{a, b}) {
			t.Errorf("batch get (consistent %v): %#v, %v", consistent, got, err)
		}
	}
}

func sortKeys(items []tablestore.Item) []string {
	out := []string{}
	for _, it := range items {
		out = append(out, string(it["sk"].(pS)))
	}
	return out
}

func pquery(t *testing.T, p tablestore.Port, q tablestore.Query) tablestore.Page {
	t.Helper()
	page, err := p.Query(context.Background(), q)
	if err != nil {
		t.Fatalf("query %+v: %v", q, err)
	}
	return page
}

func testPortQuery(t *testing.T, p tablestore.Port) {
	for _, sk := range []string{"A", "B#1", "B#2", "C"} {
		pput(t, p, pitem("Q", sk, "v", pS(sk)))
	}
	pput(t, p, pitem("Q2", "A"))
	r := func(op tablestore.Op, vs ...string) tablestore.Range { return tablestore.Range{Op: op, Values: vs} }
	cases := []struct {
		rng     tablestore.Range
		forward bool
		want    []string
	}{
		{tablestore.Range{}, true, []string{"A", "B#1", "B#2", "C"}},
		{tablestore.Range{}, false, []string{"C", "B#2", "B#1", "A"}},
		{r(tablestore.OpEqual, "B#1"), true, []string{"B#1"}},
		{r(tablestore.OpLess, "B#2"), false, []string{"B#1", "A"}},
		{r(tablestore.OpLessEqual, "B#2"), true, []string{"A", "B#1", "B#2"}},
		{r(tablestore.OpGreater, "B#1"), true, []string{"B#2", "C"}},
		{r(tablestore.OpGreaterEqual, "B#1"), false, []string{"C", "B#2", "B#1"}},
		{r(tablestore.OpBetween, "B", "B#9"), true, []string{"B#1", "B#2"}},
		{r(tablestore.OpBeginsWith, "B#"), false, []string{"B#2", "B#1"}},
	}
	for _, c := range cases {
		page := pquery(t, p, tablestore.Query{Partition: "Q", Range: c.rng, Forward: c.forward, Consistent: true})
		if got := sortKeys(page.Items); !reflect.DeepEqual(got, c.want) || page.Last != nil {
			t.Errorf("range %+v forward %v: %v (last %v), want %v", c.rng, c.forward, got, page.Last, c.want)
		}
	}
	page := pquery(t, p, tablestore.Query{Partition: "Q", Names: []string{"sk"}, Forward: true, Limit: 1})
	if want := []tablestore.Item{{"sk": pS("A")}}; !reflect.DeepEqual(page.Items, want) {
		t.Errorf("query of names: %#v, want %#v", page.Items, want)
	}
}

func testPortQueryPaging(t *testing.T, p tablestore.Port) {
	for _, sk := range []string{"1", "2", "3", "4", "5"} {
		pput(t, p, pitem("PG", sk))
	}
	for _, forward := range []bool{true, false} {
		q := tablestore.Query{Partition: "PG", Forward: forward, Limit: 2, Consistent: true}
		var got []string
		pages := 0
		for {
			page := pquery(t, p, q)
			pages++
			got = append(got, sortKeys(page.Items)...)
			if page.Last == nil {
				break
			}
			if want := (tablestore.Item{"pk": pS("PG"), "sk": page.Items[len(page.Items)-1]["sk"]}); !reflect.DeepEqual(page.Last, want) {
				t.Errorf("last %#v, want %#v", page.Last, want)
			}
			q.After = page.Last
		}
		want := []string{"1", "2", "3", "4", "5"}
		if !forward {
			want = []string{"5", "4", "3", "2", "1"}
		}
		// A full last page ends with Last, and one more Query finds none.
		if !reflect.DeepEqual(got, want) || pages != 3 {
			t.Errorf("forward %v: %v in %d pages, want %v in 3", forward, got, pages, want)
		}
	}
}

func testPortQueryFilter(t *testing.T, p tablestore.Port) {
	for i, typ := range []string{"a", "b", "a", "c", "b"} {
		pput(t, p, pitem("F", string(rune('1'+i)), "type", pS(typ)))
	}
	in := tablestore.Cond{Op: tablestore.OpIn, Name: "type", Values: []tablestore.Value{pS("a"), pS("c")}}
	// The filter applies after Limit: 3 read, 2 kept.
	page := pquery(t, p, tablestore.Query{Partition: "F", Filter: in, Forward: true, Limit: 3, Consistent: true})
	if got := sortKeys(page.Items); !reflect.DeepEqual(got, []string{"1", "3"}) || page.Scanned != 3 || page.Last == nil {
		t.Errorf("filtered page: %v, scanned %d, last %v; want [1 3], 3, the third", got, page.Scanned, page.Last)
	}
	page = pquery(t, p, tablestore.Query{Partition: "F", Filter: in, Forward: true, After: page.Last, Consistent: true})
	if got := sortKeys(page.Items); !reflect.DeepEqual(got, []string{"4"}) || page.Scanned != 2 || page.Last != nil {
		t.Errorf("filtered rest: %v, scanned %d, last %v; want [4], 2, none", got, page.Scanned, page.Last)
	}
}

func testPortQueryIndex(t *testing.T, p tablestore.Port) {
	pput(t, p, pitem("U#1", "U", "gsi1pk", pS("USERS"), "gsi1sk", pS("1")))
	pput(t, p, pitem("U#2", "U", "gsi1pk", pS("USERS"), "gsi1sk", pS("2")))
	pput(t, p, pitem("U#3", "U", "gsi1pk", pS("USERS"), "gsi1sk", pS("3")))
	pput(t, p, pitem("O#1", "O", "gsi1pk", pS("ORGS"), "gsi1sk", pS("1")))
	pput(t, p, pitem("X", "X"))
	// The index is eventually consistent on DynamoDB: read until it has
	// all three (DynamoDB Local's is at once).
	q := tablestore.Query{Index: tablestore.GSI1, Partition: "USERS", Limit: 2}
	page := pquery(t, p, q)
	gsk := func(items []tablestore.Item) []string {
		out := []string{}
		for _, it := range items {
			out = append(out, string(it["gsi1sk"].(pS)))
		}
		return out
	}
	if got := gsk(page.Items); !reflect.DeepEqual(got, []string{"3", "2"}) {
		t.Fatalf("index page: %v, want [3 2]", got)
	}
	want := tablestore.Item{"pk": pS("U#2"), "sk": pS("U"), "gsi1pk": pS("USERS"), "gsi1sk": pS("2")}
	if !reflect.DeepEqual(page.Last, want) {
		t.Errorf("index last: %#v, want %#v", page.Last, want)
	}
	q.After = page.Last
	if got := gsk(pquery(t, p, q).Items); !reflect.DeepEqual(got, []string{"1"}) {
		t.Errorf("index next page: %v, want [1]", got)
	}
	q = tablestore.Query{Index: tablestore.GSI1, Partition: "USERS", Range: tablestore.Range{Op: tablestore.OpLess, Values: []string{"3"}}, Forward: true}
	if got := gsk(pquery(t, p, q).Items); !reflect.DeepEqual(got, []string{"1", "2"}) {
		t.Errorf("index range: %v, want [1 2]", got)
	}
}

func testPortTransact(t *testing.T, p tablestore.Port) {
	ctx := context.Background()
	pput(t, p, pitem("T", "held", "owner", pS("a")))
	notExists := tablestore.Cond{Op: tablestore.OpNotExists, Name: "pk"}
	ws := []tablestore.Write{
		{Kind: tablestore.WritePut, Item: pitem("T", "new"), If: notExists},
		{Kind: tablestore.WriteUpdate, Key: pkey("T", "count"), Update: tablestore.Update{{Kind: tablestore.ActAdd, Name: "n", Value: pN(1)}}},
		{Kind: tablestore.WriteCheck, Key: pkey("T", "held"), If: tablestore.Cond{Op: tablestore.OpEqual, Name: "owner", Values: []tablestore.Value{pS("b")}}, ReturnOld: true},
		{Kind: tablestore.WriteDelete, Key: pkey("T", "held")},
	}
	ws[3].Key = pkey("T", "other")
	err := p.Transact(ctx, ws)
	var ce *tablestore.CanceledError
	if !errors.As(err, &ce) {
		t.Fatalf("transaction with a failed check: %v, want a CanceledError", err)
	}
	wantReasons := []tablestore.Reason{tablestore.ReasonNone, tablestore.ReasonNone, tablestore.ReasonConditionFailed, tablestore.ReasonNone}
	if !reflect.DeepEqual(ce.Reasons, wantReasons) {
		t.Errorf("reasons %v, want %v", ce.Reasons, wantReasons)
	}
	if want := pitem("T", "held", "owner", pS("a")); len(ce.Old) != 4 || !reflect.DeepEqual(ce.Old[2], want) || ce.Old[0] != nil {
		t.Errorf("old items %#v, want the held item third", ce.Old)
	}
	if got := pget(t, p, pkey("T", "new")); got != nil {
		t.Errorf("a cancelled transaction wrote %#v", got)
	}
	ws[2].If = tablestore.Cond{Op: tablestore.OpEqual, Name: "owner", Values: []tablestore.Value{pS("a")}}
	if err := p.Transact(ctx, ws); err != nil {
		t.Fatalf("transaction: %v", err)
	}
	if got := pget(t, p, pkey("T", "count")); !reflect.DeepEqual(got, pitem("T", "count", "n", pN(1))) {
		t.Errorf("count after the transaction: %#v", got)
	}
	if pget(t, p, pkey("T", "new")) == nil {
		t.Error("the transaction's put is not there")
	}
}

func testPortConcurrentClaims(t *testing.T, p tablestore.Port) {
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			w := tablestore.Write{Kind: tablestore.WritePut, Item: pitem("CL", "x", "by", pN(int64(i))), If: tablestore.Cond{Op: tablestore.OpNotExists, Name: "pk"}}
			_, errs[i] = p.Write(context.Background(), w, false)
		})
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !failedCond(err) && !errors.Is(err, tablestore.ErrConflict):
			t.Errorf("claim: %v", err)
		}
	}
	if won != 1 {
		t.Errorf("%d claims won, want 1", won)
	}
}

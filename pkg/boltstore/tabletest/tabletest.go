// Package tabletest is a conformance suite for the DynamoDB operations the
// single-table logic uses: run against DynamoDB Local it pins what
// DynamoDB does, and run against boltstore.Table it proves the same. Every
// case states the answer it expects; none is derived from either side.
//
// The table under test must be made from tablestore.TableDefinition:
// keys pk and sk, index gsi1 on gsi1pk and gsi1sk, all strings.
package tabletest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"latchkey/pkg/tablestore"
)

// Table is the port under test: tablestore.Table, which *dynamodb.Client
// and boltstore.Table implement.
type Table = tablestore.Table

// NewTable returns a fresh, empty table and its name.
type NewTable func(t *testing.T) (Table, string)

// Option adjusts Run.
type Option func(*config)

type config struct{ local bool }

// DynamoDBLocal marks the table as DynamoDB Local, so that the cases where
// it is known to answer otherwise than DynamoDB accept its answer too, and
// log it. There is one: two actions on one item in a transaction, which
// DynamoDB refuses with a ValidationException ("Transaction request cannot
// include multiple operations on one item", in the TransactWriteItems API
// reference and AWS's knowledge-center article on it) and DynamoDB Local
// runs, cancelling it when a condition fails.
func DynamoDBLocal() Option { return func(c *config) { c.local = true } }

// Run runs every case, each on a table of its own.
func Run(t *testing.T, newTable NewTable, opts ...Option) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	cases := []struct {
		name string
		fn   func(*testing.T, Table, string)
	}{
		{"PutGet", testPutGet},
		{"Numbers", testNumbers},
		{"ConditionalPut", testConditionalPut},
		{"Conditions", testConditions},
		{"Update", testUpdate},
		{"UpdateReturnValues", testUpdateReturnValues},
		{"UpdateErrors", testUpdateErrors},
		{"Delete", testDelete},
		{"BatchGet", testBatchGet},
		{"Query", testQuery},
		{"QueryPaging", testQueryPaging},
		{"QueryFilterAfterLimit", testQueryFilterAfterLimit},
		{"QueryIndex", testQueryIndex},
		{"QueryPageSize", testQueryPageSize},
		{"KeyBytes", testKeyBytes},
		{"Transact", testTransact},
		{"TransactCancelled", testTransactCancelled},
		{"TransactSameItem", func(t *testing.T, tb Table, table string) { testTransactSameItem(t, tb, table, cfg.local) }},
		{"ConcurrentClaims", testConcurrentClaims},
		{"Validation", testValidation},
		{"ReservedWords", testReservedWords},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tb, name := newTable(t)
			c.fn(t, tb, name)
		})
	}
}

// ---- helpers ----

type item = map[string]types.AttributeValue

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }

func key(pk, sk string) item { return item{"pk": s(pk), "sk": s(sk)} }

func put(t *testing.T, tb Table, table string, it item) {
	t.Helper()
	if _, err := tb.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: it}); err != nil {
		t.Fatalf("PutItem %v: %v", it, err)
	}
}

func get(t *testing.T, tb Table, table string, k item) item {
	t.Helper()
	out, err := tb.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(table), Key: k, ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatalf("GetItem %v: %v", k, err)
	}
	return out.Item
}

func equal(t *testing.T, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s:\n got %s\nwant %s", what, show(got), show(want))
	}
}

// show prints AttributeValues readably (their pointers say nothing).
func show(v any) string {
	switch v := v.(type) {
	case item:
		if v == nil {
			return "nil item"
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out := "{"
		for _, k := range keys {
			out += fmt.Sprintf("%s:%s ", k, show(v[k]))
		}
		return out + "}"
	case []item:
		out := "["
		for _, it := range v {
			out += show(it) + " "
		}
		return out + "]"
	case types.AttributeValue:
		switch v := v.(type) {
		case *types.AttributeValueMemberM:
			return "M" + show(item(v.Value))
		case *types.AttributeValueMemberL:
			out := "L["
			for _, e := range v.Value {
				out += show(e) + " "
			}
			return out + "]"
		}
		return fmt.Sprintf("%T%+v", v, v)
	}
	return fmt.Sprintf("%#v", v)
}

// code is the API error code of err ("" if none).
func code(err error) string {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode()
	}
	return ""
}

func wantCode(t *testing.T, what string, err error, want string) {
	t.Helper()
	if got := code(err); got != want {
		t.Errorf("%s: got error %v (code %q), want code %q", what, err, got, want)
	}
}

// ---- cases ----

func testPutGet(t *testing.T, tb Table, table string) {
	it := item{
		"pk": s("P#1"), "sk": s("S#1"),
		"str":  s("héllo"),
		"num":  n("42"),
		"bin":  &types.AttributeValueMemberB{Value: []byte{0, 1, 0xFF}},
		"yes":  &types.AttributeValueMemberBOOL{Value: true},
		"no":   &types.AttributeValueMemberBOOL{Value: false},
		"null": &types.AttributeValueMemberNULL{Value: true},
		"ss":   &types.AttributeValueMemberSS{Value: []string{"a", "b"}},
		"list": &types.AttributeValueMemberL{Value: []types.AttributeValue{s("x"), n("1"), &types.AttributeValueMemberM{Value: item{"k": s("v")}}}},
		"map":  &types.AttributeValueMemberM{Value: item{"a": s("b"), "n": n("-7")}},
		"empt": s(""),
	}
	put(t, tb, table, it)
	equal(t, "GetItem", get(t, tb, table, key("P#1", "S#1")), it)
	equal(t, "GetItem of a missing item", get(t, tb, table, key("P#1", "S#2")), item(nil))

	out, err := tb.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(table), Key: key("P#1", "S#1"),
		ProjectionExpression: aws.String("#a, num"), ExpressionAttributeNames: map[string]string{"#a": "str"},
	})
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "GetItem with a projection", out.Item, item{"str": s("héllo"), "num": n("42")})

	// A put replaces the whole item.
	put(t, tb, table, item{"pk": s("P#1"), "sk": s("S#1"), "only": s("this")})
	equal(t, "GetItem after a second put", get(t, tb, table, key("P#1", "S#1")), item{"pk": s("P#1"), "sk": s("S#1"), "only": s("this")})
}

func testNumbers(t *testing.T, tb Table, table string) {
	// Stored numbers come back as DynamoDB writes them.
	put(t, tb, table, item{"pk": s("N"), "sk": s("1"), "a": n("1.50"), "b": n("007"), "c": n("-0.0"), "d": n("1e3"), "e": n("12345678901234567890123456789012345678")})
	equal(t, "normalised numbers", get(t, tb, table, key("N", "1")),
		item{"pk": s("N"), "sk": s("1"), "a": n("1.5"), "b": n("7"), "c": n("0"), "d": n("1000"), "e": n("12345678901234567890123456789012345678")})

	// Exact arithmetic beyond float64.
	_, err := tb.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName: aws.String(table), Key: key("N", "1"),
		UpdateExpression:          aws.String("ADD e :one SET a = a + :frac"),
		ExpressionAttributeValues: item{":one": n("1"), ":frac": n("0.25")},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := get(t, tb, table, key("N", "1"))
	equal(t, "ADD to 38 digits", got["e"], n("12345678901234567890123456789012345679"))
	equal(t, "1.5 + 0.25", got["a"], n("1.75"))

	// Numbers compare as numbers: 10 > 9, 1.0 = 1.
	for _, c := range []struct {
		cond string
		ok   bool
	}{{"b > :nine", false}, {"d > :nine", true}, {"a = :x", true}} {
		_, err := tb.PutItem(context.Background(), &dynamodb.PutItemInput{
			TableName: aws.String(table), Item: got, ConditionExpression: aws.String(c.cond),
			ExpressionAttributeValues: pickValues(c.cond, item{":nine": n("9"), ":x": n("1.750")}),
		})
		checkCond(t, c.cond, err, c.ok)
	}

	for _, bad := range []string{"12a", "1e126", "-1e126", "1e-131", "123456789012345678901234567890123456789", "", "1e999999", "-1e-999999", "1e+"} {
		_, err = tb.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: item{"pk": s("N"), "sk": s("2"), "bad": n(bad)}})
		wantCode(t, "a number DynamoDB does not take: "+bad, err, "ValidationException")
	}
	for _, good := range []string{"9.9999e125", "1e-130", "-1e-130", "12345678901234567890123456789012345678e88"} {
		_, err = tb.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: item{"pk": s("N"), "sk": s("2"), "good": n(good)}})
		if err != nil {
			t.Errorf("a number DynamoDB takes: %s: %v", good, err)
		}
	}
}

// pickValues keeps the placeholders cond uses: DynamoDB refuses unused ones.
func pickValues(cond string, values item) item {
	out := item{}
	for k, v := range values {
		if containsWord(cond, k) {
			out[k] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func containsWord(s, w string) bool {
	for i := 0; i+len(w) <= len(s); i++ {
		if s[i:i+len(w)] == w && (i+len(w) == len(s) || !isWordByte(s[i+len(w)])) {
			return true
		}
	}
	return false
}

func isWordByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func checkCond(t *testing.T, cond string, err error, ok bool) {
	t.Helper()
	var ccf *types.ConditionalCheckFailedException
	switch {
	case ok && err != nil:
		t.Errorf("condition %q: got %v, want it to hold", cond, err)
	case !ok && !errors.As(err, &ccf):
		t.Errorf("condition %q: got %v, want ConditionalCheckFailedException", cond, err)
	}
}

func testConditionalPut(t *testing.T, tb Table, table string) {
	ctx := context.Background()
	first := item{"pk": s("C"), "sk": s("1"), "v": s("first")}
	in := &dynamodb.PutItemInput{TableName: aws.String(table), Item: first, ConditionExpression: aws.String("attribute_not_exists(pk)")}
	if _, err := tb.PutItem(ctx, in); err != nil {
		t.Fatalf("first conditional put: %v", err)
	}
	in.Item = item{"pk": s("C"), "sk": s("1"), "v": s("second")}
	_, err := tb.PutItem(ctx, in)
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		t.Fatalf("second conditional put: got %v, want ConditionalCheckFailedException", err)
	}
	equal(t, "the exception's item when not asked for", ccf.Item, item(nil))
	in.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
	_, err = tb.PutItem(ctx, in)
	if !errors.As(err, &ccf) {
		t.Fatalf("third conditional put: got %v, want ConditionalCheckFailedException", err)
	}
	equal(t, "the exception's item (ALL_OLD)", ccf.Item, first)
	equal(t, "the item after failed puts", get(t, tb, table, key("C", "1")), first)

	out, err := tb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item{"pk": s("C"), "sk": s("1"), "v": s("third")}, ReturnValues: types.ReturnValueAllOld})
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "PutItem ALL_OLD", out.Attributes, first)
	out, err = tb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item{"pk": s("C"), "sk": s("2")}, ReturnValues: types.ReturnValueAllOld})
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "PutItem ALL_OLD of a new item", out.Attributes, item(nil))
}

func testConditions(t *testing.T, tb Table, table string) {
	it := item{
		"pk": s("K"), "sk": s("1"),
		"state": s("started"), "n": n("10"), "z": s("Z"), "e": s("é"),
		"tags": &types.AttributeValueMemberSS{Value: []string{"red", "blue"}},
		"flag": &types.AttributeValueMemberBOOL{Value: true},
	}
	put(t, tb, table, it)
	values := item{
		":started": s("started"), ":done": s("done"), ":nine": n("9"), ":ten": n("10"), ":eleven": n("11"),
		":a": s("a"), ":z": s("z"), ":sta": s("sta"), ":red": s("red"), ":art": s("art"), ":one": n("1"), ":t": s("S"),
	}
	cases := []struct {
		cond string
		ok   bool
	}{
		{"attribute_exists(pk)", true},
		{"attribute_not_exists(pk)", false},
		{"attribute_not_exists(#m)", true},
		{"#s = :started", true},
		{"#s = :done", false},
		{"#s <> :done", true},
		{"#s <> :started", false},
		{"n < :eleven", true},
		{"n <= :ten", true},
		{"n < :ten", false},
		{"n > :nine", true},
		{"n >= :eleven", false},
		{"n BETWEEN :nine AND :eleven", true},
		{"n BETWEEN :eleven AND :eleven", false},
		{"#s IN (:done, :started)", true},
		{"#s IN (:done, :a)", false},
		{"begins_with(#s, :sta)", true},
		{"begins_with(#s, :art)", false},
		{"contains(#s, :art)", true},
		{"contains(tags, :red)", true},
		{"contains(tags, :a)", false},
		{"attribute_type(#s, :t)", true},
		// Strings compare by their UTF-8 bytes: "Z" < "a" < "z" < "é".
		{"z < :a", true},
		{"e > :z", true},
		// A comparison with a missing attribute is false, and so its NOT is
		// true; but <> of a missing attribute and a value is true.
		{"#m = :a", false},
		{"NOT (#m = :a)", true},
		{"#m < :a", false},
		{"#m <> :a", true},
		{"NOT (#m <> :a)", false},
		// Values of different types are never equal, and never ordered.
		{"n = :ten", true},
		{"#s = :ten", false},
		{"#s <> :ten", true},
		{"#s < :ten", false},
		{"flag = :one", false},
		{"(#s = :done OR n > :nine) AND NOT begins_with(#s, :art)", true},
		{"#s = :done OR (n > :nine AND attribute_not_exists(pk))", false},
		{"NOT (#s = :started AND n = :ten)", false},
		{"size(tags) = :one", false},
	}
	for _, c := range cases {
		names := map[string]string{}
		if containsWord(c.cond, "#s") {
			names["#s"] = "state"
		}
		if containsWord(c.cond, "#m") {
			names["#m"] = "missing"
		}
		if len(names) == 0 {
			names = nil
		}
		_, err := tb.PutItem(context.Background(), &dynamodb.PutItemInput{
			TableName: aws.String(table), Item: it, ConditionExpression: aws.String(c.cond),
			ExpressionAttributeNames: names, ExpressionAttributeValues: pickValues(c.cond, values),
		})
		checkCond(t, c.cond, err, c.ok)
	}
	// On an item that is not there, every attribute is missing.
	_, err := tb.PutItem(context.Background(), &dynamodb.PutItemInput{
		TableName: aws.String(table), Item: item{"pk": s("K"), "sk": s("2")},
		ConditionExpression: aws.String("attribute_exists(pk) OR #s = :done"), ExpressionAttributeNames: map[string]string{"#s": "state"},
		ExpressionAttributeValues: item{":done": s("done")},
	})
	checkCond(t, "on no item", err, false)
	_, err = tb.PutItem(context.Background(), &dynamodb.PutItemInput{
		TableName: aws.String(table), Item: item{"pk": s("K"), "sk": s("3")},
		ConditionExpression: aws.String("#s <> :done"), ExpressionAttributeNames: map[string]string{"#s": "state"},
		ExpressionAttributeValues: item{":done": s("done")},
	})
	checkCond(t, "<> on no item", err, true)
}

func update(t *testing.T, tb Table, table string, in *dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error) {
	t.Helper()
	in.TableName = aws.String(table)
	return tb.UpdateItem(context.Background(), in)
}

func testUpdate(t *testing.T, tb Table, table string) {
	put(t, tb, table, item{"pk": s("U"), "sk": s("1"), "a": s("x"), "gone": s("y"), "count": n("5")})
	_, err := update(t, tb, table, &dynamodb.UpdateItemInput{
		Key:                       key("U", "1"),
		UpdateExpression:          aws.String("SET a = :a, b = if_not_exists(b, :zero), c = if_not_exists(a, :zero) REMOVE gone ADD #c :minus, fresh :two"),
		ConditionExpression:       aws.String("attribute_exists(pk) AND #c > :zero"),
		ExpressionAttributeNames:  map[string]string{"#c": "count"},
		ExpressionAttributeValues: item{":a": s("new"), ":zero": n("0"), ":minus": n("-2"), ":two": n("2")},
	})
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "item after update", get(t, tb, table, key("U", "1")),
		item{"pk": s("U"), "sk": s("1"), "a": s("new"), "b": n("0"), "c": s("x"), "count": n("3"), "fresh": n("2")})

	// Without a condition, an update of no item creates it.
	_, err = update(t, tb, table, &dynamodb.UpdateItemInput{
		Key: key("U", "2"), UpdateExpression: aws.String("SET v = :v ADD tags :tags"),
		ExpressionAttributeValues: item{":v": s("v"), ":tags": &types.AttributeValueMemberSS{Value: []string{"a"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "item an update created", get(t, tb, table, key("U", "2")),
		item{"pk": s("U"), "sk": s("2"), "v": s("v"), "tags": &types.AttributeValueMemberSS{Value: []string{"a"}}})

	// With attribute_exists, it fails and creates nothing.
	_, err = update(t, tb, table, &dynamodb.UpdateItemInput{
		Key: key("U", "3"), UpdateExpression: aws.String("SET v = :v"), ConditionExpression: aws.String("attribute_exists(pk)"),
		ExpressionAttributeValues: item{":v": s("v")},
	})
	checkCond(t, "update of no item", err, false)
	equal(t, "item after a failed update", get(t, tb, table, key("U", "3")), item(nil))
}

func testUpdateReturnValues(t *testing.T, tb Table, table string) {
	old := item{"pk": s("R"), "sk": s("1"), "a": s("1"), "b": s("2"), "c": s("3")}
	cases := []struct {
		rv   types.ReturnValue
		want item
	}{
		{types.ReturnValueNone, nil},
		{types.ReturnValueAllOld, old},
		{types.ReturnValueAllNew, item{"pk": s("R"), "sk": s("1"), "a": s("one"), "c": s("3"), "d": s("4")}},
		{types.ReturnValueUpdatedOld, item{"a": s("1"), "b": s("2")}},
		{types.ReturnValueUpdatedNew, item{"a": s("one"), "d": s("4")}},
	}
	for _, c := range cases {
		put(t, tb, table, old)
		out, err := update(t, tb, table, &dynamodb.UpdateItemInput{
			Key: key("R", "1"), UpdateExpression: aws.String("SET a = :one, d = :four REMOVE b"),
			ExpressionAttributeValues: item{":one": s("one"), ":four": s("4")}, ReturnValues: c.rv,
		})
		if err != nil {
			t.Fatalf("%s: %v", c.rv, err)
		}
		equal(t, string(c.rv), out.Attributes, c.want)
	}
	// ReturnValuesOnConditionCheckFailure on an update.
	put(t, tb, table, old)
	_, err := update(t, tb, table, &dynamodb.UpdateItemInput{
		Key: key("R", "1"), UpdateExpression: aws.String("SET a = :one"), ConditionExpression: aws.String("a = :x"),
		ExpressionAttributeValues:           item{":one": s("one"), ":x": s("x")},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		t.Fatalf("got %v, want ConditionalCheckFailedException", err)
	}
	equal(t, "the exception's item", ccf.Item, old)
}

func testUpdateErrors(t *testing.T, tb Table, table string) {
	put(t, tb, table, item{"pk": s("E"), "sk": s("1"), "str": s("x")})
	cases := []struct {
		name string
		in   *dynamodb.UpdateItemInput
	}{
		{"a key attribute", &dynamodb.UpdateItemInput{UpdateExpression: aws.String("SET sk = :v"), ExpressionAttributeValues: item{":v": s("2")}}},
		{"one attribute twice", &dynamodb.UpdateItemInput{UpdateExpression: aws.String("SET a = :v REMOVE a"), ExpressionAttributeValues: item{":v": s("2")}}},
		{"ADD to a string", &dynamodb.UpdateItemInput{UpdateExpression: aws.String("ADD str :v"), ExpressionAttributeValues: item{":v": n("1")}}},
		{"a missing attribute plus one", &dynamodb.UpdateItemInput{UpdateExpression: aws.String("SET a = missing + :v"), ExpressionAttributeValues: item{":v": n("1")}}},
		{"an undefined placeholder", &dynamodb.UpdateItemInput{UpdateExpression: aws.String("SET a = :v")}},
		{"an unused placeholder", &dynamodb.UpdateItemInput{UpdateExpression: aws.String("SET a = :v"), ExpressionAttributeValues: item{":v": s("1"), ":w": s("2")}}},
		{"a syntax error", &dynamodb.UpdateItemInput{UpdateExpression: aws.String("SET a = = :v"), ExpressionAttributeValues: item{":v": s("1")}}},
		{"an index key of the wrong type", &dynamodb.UpdateItemInput{UpdateExpression: aws.String("SET gsi1pk = :v"), ExpressionAttributeValues: item{":v": n("1")}}},
	}
	for _, c := range cases {
		c.in.Key = key("E", "1")
		_, err := update(t, tb, table, c.in)
		wantCode(t, c.name, err, "ValidationException")
	}
	equal(t, "item after refused updates", get(t, tb, table, key("E", "1")), item{"pk": s("E"), "sk": s("1"), "str": s("x")})
}

func testDelete(t *testing.T, tb Table, table string) {
	ctx := context.Background()
	it := item{"pk": s("D"), "sk": s("1"), "role": s("owner")}
	put(t, tb, table, it)
	_, err := tb.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(table), Key: key("D", "1"),
		ConditionExpression: aws.String("attribute_not_exists(pk) OR NOT (#r = :owner)"), ExpressionAttributeNames: map[string]string{"#r": "role"},
		ExpressionAttributeValues: item{":owner": s("owner")}, ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		t.Fatalf("got %v, want ConditionalCheckFailedException", err)
	}
	equal(t, "the exception's item", ccf.Item, it)
	out, err := tb.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: key("D", "1"), ReturnValues: types.ReturnValueAllOld})
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "DeleteItem ALL_OLD", out.Attributes, it)
	equal(t, "item after delete", get(t, tb, table, key("D", "1")), item(nil))
	out, err = tb.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: key("D", "1"), ReturnValues: types.ReturnValueAllOld})
	if err != nil {
		t.Fatalf("delete of no item: %v", err)
	}
	equal(t, "DeleteItem ALL_OLD of no item", out.Attributes, item(nil))
}

func testBatchGet(t *testing.T, tb Table, table string) {
	a := item{"pk": s("B"), "sk": s("1"), "v": s("a")}
	b := item{"pk": s("B2"), "sk": s("1"), "v": s("b")}
	put(t, tb, table, a)
	put(t, tb, table, b)
	out, err := tb.BatchGetItem(context.Background(), &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
		table: {Keys: []item{key("B", "1"), key("B", "missing"), key("B2", "1")}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	got := out.Responses[table]
	sort.Slice(got, func(i, j int) bool {
		return got[i]["pk"].(*types.AttributeValueMemberS).Value < got[j]["pk"].(*types.AttributeValueMemberS).Value
	})
	equal(t, "BatchGetItem", got, []item{a, b})
	equal(t, "UnprocessedKeys", len(out.UnprocessedKeys), 0)

	_, err = tb.BatchGetItem(context.Background(), &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
		table: {Keys: []item{key("B", "1"), key("B", "1")}},
	}})
	wantCode(t, "duplicate keys", err, "ValidationException")
}

// partition puts items pk=P with the sort keys given, each with a
// position attribute i.
func partition(t *testing.T, tb Table, table, pk string, sks ...string) {
	t.Helper()
	for i, sk := range sks {
		put(t, tb, table, item{"pk": s(pk), "sk": s(sk), "i": n(fmt.Sprint(i)), "odd": &types.AttributeValueMemberBOOL{Value: i%2 == 1}})
	}
}

func sks(items []item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it["sk"].(*types.AttributeValueMemberS).Value
	}
	return out
}

func query(t *testing.T, tb Table, in *dynamodb.QueryInput) *dynamodb.QueryOutput {
	t.Helper()
	out, err := tb.Query(context.Background(), in)
	if err != nil {
		t.Fatalf("Query %s: %v", aws.ToString(in.KeyConditionExpression), err)
	}
	return out
}

func testQuery(t *testing.T, tb Table, table string) {
	partition(t, tb, table, "Q", "a", "b#1", "b#2", "b#3", "c", "d")
	partition(t, tb, table, "Q2", "a")
	partition(t, tb, table, "QQ", "a")
	cases := []struct {
		kc      string
		forward bool
		want    []string
	}{
		{"pk = :p", true, []string{"a", "b#1", "b#2", "b#3", "c", "d"}},
		{"pk = :p", false, []string{"d", "c", "b#3", "b#2", "b#1", "a"}},
		{"pk = :p AND begins_with(sk, :b)", true, []string{"b#1", "b#2", "b#3"}},
		{"pk = :p AND begins_with(sk, :b)", false, []string{"b#3", "b#2", "b#1"}},
		{"pk = :p AND sk BETWEEN :b1 AND :c", true, []string{"b#1", "b#2", "b#3", "c"}},
		{"pk = :p AND sk BETWEEN :b1 AND :c", false, []string{"c", "b#3", "b#2", "b#1"}},
		{"pk = :p AND sk < :c", false, []string{"b#3", "b#2", "b#1", "a"}},
		{"pk = :p AND sk <= :c", false, []string{"c", "b#3", "b#2", "b#1", "a"}},
		{"pk = :p AND sk > :b", true, []string{"b#1", "b#2", "b#3", "c", "d"}},
		{"pk = :p AND sk >= :c", true, []string{"c", "d"}},
		{"pk = :p AND sk >= :c", false, []string{"d", "c"}},
		{"pk = :p AND sk = :c", false, []string{"c"}},
		{"(pk = :p) AND (sk < :a)", true, []string{}},
	}
	values := item{":p": s("Q"), ":b": s("b"), ":b1": s("b#1"), ":c": s("c"), ":a": s("a")}
	for _, c := range cases {
		out := query(t, tb, &dynamodb.QueryInput{
			TableName: aws.String(table), KeyConditionExpression: aws.String(c.kc), ConsistentRead: aws.Bool(true),
			ExpressionAttributeValues: pickValues(c.kc, values), ScanIndexForward: aws.Bool(c.forward),
		})
		equal(t, fmt.Sprintf("%s forward=%v", c.kc, c.forward), sks(out.Items), c.want)
		equal(t, c.kc+" Count", int(out.Count), len(c.want))
		equal(t, c.kc+" LastEvaluatedKey", out.LastEvaluatedKey, item(nil))
	}
	out := query(t, tb, &dynamodb.QueryInput{
		TableName: aws.String(table), KeyConditionExpression: aws.String("pk = :p AND begins_with(sk, :b)"),
		ProjectionExpression: aws.String("sk, #i"), ExpressionAttributeNames: map[string]string{"#i": "i"},
		ExpressionAttributeValues: item{":p": s("Q"), ":b": s("b#2")},
	})
	equal(t, "Query with a projection", out.Items, []item{{"sk": s("b#2"), "i": n("2")}})
}

func testQueryPaging(t *testing.T, tb Table, table string) {
	partition(t, tb, table, "PG", "1", "2", "3", "4", "5")
	for _, forward := range []bool{true, false} {
		var got []string
		var start item
		pages := 0
		for {
			out := query(t, tb, &dynamodb.QueryInput{
				TableName: aws.String(table), KeyConditionExpression: aws.String("pk = :p"),
				ExpressionAttributeValues: item{":p": s("PG")}, ScanIndexForward: aws.Bool(forward),
				Limit: aws.Int32(2), ExclusiveStartKey: start,
			})
			pages++
			got = append(got, sks(out.Items)...)
			if out.LastEvaluatedKey == nil {
				break
			}
			equal(t, "LastEvaluatedKey is the last item's key", out.LastEvaluatedKey, key("PG", sks(out.Items)[len(out.Items)-1]))
			start = out.LastEvaluatedKey
			if pages > 10 {
				t.Fatal("paging does not end")
			}
		}
		want := []string{"1", "2", "3", "4", "5"}
		if !forward {
			want = []string{"5", "4", "3", "2", "1"}
		}
		equal(t, fmt.Sprintf("pages forward=%v", forward), got, want)
		equal(t, "page count", pages, 3)
	}
	// A page that ends exactly at Limit has a LastEvaluatedKey even when
	// nothing follows; the next page is empty.
	out := query(t, tb, &dynamodb.QueryInput{
		TableName: aws.String(table), KeyConditionExpression: aws.String("pk = :p AND sk >= :four"),
		ExpressionAttributeValues: item{":p": s("PG"), ":four": s("4")}, Limit: aws.Int32(2),
	})
	equal(t, "page at Limit", sks(out.Items), []string{"4", "5"})
	equal(t, "its LastEvaluatedKey", out.LastEvaluatedKey, key("PG", "5"))
	out = query(t, tb, &dynamodb.QueryInput{
		TableName: aws.String(table), KeyConditionExpression: aws.String("pk = :p AND sk >= :four"),
		ExpressionAttributeValues: item{":p": s("PG"), ":four": s("4")}, Limit: aws.Int32(2), ExclusiveStartKey: out.LastEvaluatedKey,
	})
	equal(t, "page after the last", sks(out.Items), []string{})
	equal(t, "its LastEvaluatedKey", out.LastEvaluatedKey, item(nil))
	// ExclusiveStartKey need not be an item that exists.
	out = query(t, tb, &dynamodb.QueryInput{
		TableName: aws.String(table), KeyConditionExpression: aws.String("pk = :p"),
		ExpressionAttributeValues: item{":p": s("PG")}, ScanIndexForward: aws.Bool(false), ExclusiveStartKey: key("PG", "3x"),
	})
	equal(t, "after a deleted position", sks(out.Items), []string{"3", "2", "1"})
}

func testQueryFilterAfterLimit(t *testing.T, tb Table, table string) {
	partition(t, tb, table, "F", "1", "2", "3", "4", "5", "6", "7")
	in := &dynamodb.QueryInput{
		TableName: aws.String(table), KeyConditionExpression: aws.String("pk = :p"),
		FilterExpression:          aws.String("odd = :t"),
		ExpressionAttributeValues: item{":p": s("F"), ":t": &types.AttributeValueMemberBOOL{Value: true}},
		Limit:                     aws.Int32(3),
	}
	out := query(t, tb, in)
	equal(t, "first page", sks(out.Items), []string{"2"})
	equal(t, "ScannedCount", int(out.ScannedCount), 3)
	equal(t, "Count", int(out.Count), 1)
	equal(t, "LastEvaluatedKey", out.LastEvaluatedKey, key("F", "3"))
	var all []string
	in.ExclusiveStartKey = nil
	for range 10 {
		out := query(t, tb, in)
		all = append(all, sks(out.Items)...)
		if out.LastEvaluatedKey == nil {
			break
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
	equal(t, "every page", all, []string{"2", "4", "6"})

	// Filtering on a key attribute is refused.
	_, err := tb.Query(context.Background(), &dynamodb.QueryInput{
		TableName: aws.String(table), KeyConditionExpression: aws.String("pk = :p"), FilterExpression: aws.String("sk = :s"),
		ExpressionAttributeValues: item{":p": s("F"), ":s": s("1")},
	})
	wantCode(t, "filter on a key", err, "ValidationException")
	// A Type IN (...) filter, as the event feed sends.
	out = query(t, tb, &dynamodb.QueryInput{
		TableName: aws.String(table), KeyConditionExpression: aws.String("pk = :p"), FilterExpression: aws.String("#i IN (:a, :b)"),
		ExpressionAttributeNames: map[string]string{"#i": "i"}, ExpressionAttributeValues: item{":p": s("F"), ":a": n("0"), ":b": n("6")},
	})
	equal(t, "IN filter", sks(out.Items), []string{"1", "7"})
}

func testQueryIndex(t *testing.T, tb Table, table string) {
	// Three items in the USERS list, one with no index key (not listed),
	// and one in another list.
	for i, id := range []string{"u1", "u2", "u3", "u4"} {
		put(t, tb, table, item{"pk": s("USER#" + id), "sk": s("USER"), "gsi1pk": s("USERS"), "gsi1sk": s(fmt.Sprintf("2026-0%d", i+1)), "name": s(id)})
	}
	put(t, tb, table, item{"pk": s("USER#u5"), "sk": s("USER"), "name": s("u5")})
	put(t, tb, table, item{"pk": s("ORG#o1"), "sk": s("ORG"), "gsi1pk": s("ORGS"), "gsi1sk": s("2026-01")})

	in := &dynamodb.QueryInput{
		TableName: aws.String(table), IndexName: aws.String("gsi1"),
		KeyConditionExpression:    aws.String("gsi1pk = :p AND gsi1sk < :after"),
		ExpressionAttributeValues: item{":p": s("USERS"), ":after": s("2026-04")},
		ScanIndexForward:          aws.Bool(false), Limit: aws.Int32(2),
	}
	out := query(t, tb, in)
	names := func(items []item) []string {
		var out []string
		for _, it := range items {
			out = append(out, it["name"].(*types.AttributeValueMemberS).Value)
		}
		return out
	}
	equal(t, "first index page", names(out.Items), []string{"u3", "u2"})
	equal(t, "index LastEvaluatedKey", out.LastEvaluatedKey, item{"pk": s("USER#u2"), "sk": s("USER"), "gsi1pk": s("USERS"), "gsi1sk": s("2026-02")})
	equal(t, "items from an index are whole (projection ALL)", out.Items[0], item{"pk": s("USER#u3"), "sk": s("USER"), "gsi1pk": s("USERS"), "gsi1sk": s("2026-03"), "name": s("u3")})
	in.ExclusiveStartKey = out.LastEvaluatedKey
	out = query(t, tb, in)
	equal(t, "second index page", names(out.Items), []string{"u1"})
	equal(t, "second LastEvaluatedKey", out.LastEvaluatedKey, item(nil))

	// Moving an item in the index, and out of it.
	put(t, tb, table, item{"pk": s("USER#u1"), "sk": s("USER"), "gsi1pk": s("USERS"), "gsi1sk": s("2026-09"), "name": s("u1")})
	_, err := tb.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{TableName: aws.String(table), Key: key("USER#u2", "USER"), UpdateExpression: aws.String("REMOVE gsi1pk")})
	if err != nil {
		t.Fatal(err)
	}
	out = query(t, tb, &dynamodb.QueryInput{
		TableName: aws.String(table), IndexName: aws.String("gsi1"), KeyConditionExpression: aws.String("gsi1pk = :p"),
		ExpressionAttributeValues: item{":p": s("USERS")}, ScanIndexForward: aws.Bool(false),
	})
	equal(t, "index after moves", names(out.Items), []string{"u1", "u4", "u3"})

	_, err = tb.Query(context.Background(), &dynamodb.QueryInput{
		TableName: aws.String(table), IndexName: aws.String("gsi1"), KeyConditionExpression: aws.String("gsi1pk = :p"),
		ExpressionAttributeValues: item{":p": s("USERS")}, ConsistentRead: aws.Bool(true),
	})
	wantCode(t, "ConsistentRead on an index", err, "ValidationException")
	_, err = tb.Query(context.Background(), &dynamodb.QueryInput{
		TableName: aws.String(table), IndexName: aws.String("nope"), KeyConditionExpression: aws.String("gsi1pk = :p"),
		ExpressionAttributeValues: item{":p": s("USERS")},
	})
	wantCode(t, "an index that is not there", err, "ValidationException")
}

func testKeyBytes(t *testing.T, tb Table, table string) {
	// Sort keys order by their UTF-8 bytes, whatever the bytes.
	order := []string{"\x01", "A", "a", "a\x01", "ab", "z", "\u00e9", "\u00e9\u00e9", "\U0001F600"}
	for i := len(order) - 1; i >= 0; i-- {
		put(t, tb, table, item{"pk": s("bytes\x01pk"), "sk": s(order[i])})
	}
	// A partition whose key is a prefix of the first must not leak into it.
	put(t, tb, table, item{"pk": s("bytes"), "sk": s("a")})
	put(t, tb, table, item{"pk": s("bytes\x01pkz"), "sk": s("a")})
	out := query(t, tb, &dynamodb.QueryInput{
		TableName: aws.String(table), KeyConditionExpression: aws.String("pk = :p"), ExpressionAttributeValues: item{":p": s("bytes\x01pk")},
	})
	equal(t, "byte order", sks(out.Items), order)
	out = query(t, tb, &dynamodb.QueryInput{
		TableName: aws.String(table), KeyConditionExpression: aws.String("pk = :p AND begins_with(sk, :a)"),
		ExpressionAttributeValues: item{":p": s("bytes\x01pk"), ":a": s("a")}, ScanIndexForward: aws.Bool(false),
	})
	equal(t, "begins_with backwards", sks(out.Items), []string{"ab", "a\x01", "a"})
}

func txPut(table string, it item, cond string, values item) types.TransactWriteItem {
	p := &types.Put{TableName: aws.String(table), Item: it, ExpressionAttributeValues: values}
	if cond != "" {
		p.ConditionExpression = aws.String(cond)
	}
	return types.TransactWriteItem{Put: p}
}

func testTransact(t *testing.T, tb Table, table string) {
	ctx := context.Background()
	put(t, tb, table, item{"pk": s("T"), "sk": s("counter"), "n": n("1")})
	put(t, tb, table, item{"pk": s("T"), "sk": s("old")})
	put(t, tb, table, item{"pk": s("T"), "sk": s("guard"), "ok": s("yes")})
	_, err := tb.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		txPut(table, item{"pk": s("T"), "sk": s("new"), "gsi1pk": s("TX"), "gsi1sk": s("1")}, "attribute_not_exists(pk)", nil),
		{Update: &types.Update{TableName: aws.String(table), Key: key("T", "counter"), UpdateExpression: aws.String("ADD n :one"), ConditionExpression: aws.String("n > :zero"), ExpressionAttributeValues: item{":one": n("1"), ":zero": n("0")}}},
		{Delete: &types.Delete{TableName: aws.String(table), Key: key("T", "old"), ConditionExpression: aws.String("attribute_exists(pk)")}},
		{ConditionCheck: &types.ConditionCheck{TableName: aws.String(table), Key: key("T", "guard"), ConditionExpression: aws.String("ok = :yes"), ExpressionAttributeValues: item{":yes": s("yes")}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "put", get(t, tb, table, key("T", "new")), item{"pk": s("T"), "sk": s("new"), "gsi1pk": s("TX"), "gsi1sk": s("1")})
	equal(t, "update", get(t, tb, table, key("T", "counter")), item{"pk": s("T"), "sk": s("counter"), "n": n("2")})
	equal(t, "delete", get(t, tb, table, key("T", "old")), item(nil))
	equal(t, "check", get(t, tb, table, key("T", "guard")), item{"pk": s("T"), "sk": s("guard"), "ok": s("yes")})
	out := query(t, tb, &dynamodb.QueryInput{TableName: aws.String(table), IndexName: aws.String("gsi1"), KeyConditionExpression: aws.String("gsi1pk = :p"), ExpressionAttributeValues: item{":p": s("TX")}})
	equal(t, "index after a transaction", sks(out.Items), []string{"new"})
}

func testTransactCancelled(t *testing.T, tb Table, table string) {
	ctx := context.Background()
	taken := item{"pk": s("EMAIL#a@example.com"), "sk": s("EMAIL"), "owner": s("u1")}
	put(t, tb, table, taken)
	put(t, tb, table, item{"pk": s("T"), "sk": s("counter"), "n": n("1")})
	before := map[string]item{}
	for _, sk := range []string{"counter", "user"} {
		before[sk] = get(t, tb, table, key("T", sk))
	}
	_, err := tb.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		txPut(table, item{"pk": s("T"), "sk": s("user"), "gsi1pk": s("TXC"), "gsi1sk": s("1")}, "attribute_not_exists(pk)", nil),
		{Update: &types.Update{TableName: aws.String(table), Key: key("T", "counter"), UpdateExpression: aws.String("ADD n :one"), ExpressionAttributeValues: item{":one": n("1")}}},
		{Put: &types.Put{TableName: aws.String(table), Item: item{"pk": s("EMAIL#a@example.com"), "sk": s("EMAIL"), "owner": s("u2")}, ConditionExpression: aws.String("attribute_not_exists(pk)"), ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}},
		{ConditionCheck: &types.ConditionCheck{TableName: aws.String(table), Key: key("T", "absent"), ConditionExpression: aws.String("attribute_exists(pk)")}},
	}})
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		t.Fatalf("got %v, want TransactionCanceledException", err)
	}
	var codes []string
	for _, r := range tce.CancellationReasons {
		codes = append(codes, aws.ToString(r.Code))
	}
	equal(t, "cancellation reasons", codes, []string{"None", "None", "ConditionalCheckFailed", "ConditionalCheckFailed"})
	if len(tce.CancellationReasons) == 4 {
		equal(t, "the item of the reason that asked for it", tce.CancellationReasons[2].Item, taken)
		equal(t, "the item of the reason that did not", tce.CancellationReasons[3].Item, item(nil))
	}
	for sk, want := range before {
		equal(t, "after a cancelled transaction, "+sk, get(t, tb, table, key("T", sk)), want)
	}
	equal(t, "the guard after a cancelled transaction", get(t, tb, table, key("EMAIL#a@example.com", "EMAIL")), taken)
	out := query(t, tb, &dynamodb.QueryInput{TableName: aws.String(table), IndexName: aws.String("gsi1"), KeyConditionExpression: aws.String("gsi1pk = :p"), ExpressionAttributeValues: item{":p": s("TXC")}})
	equal(t, "index after a cancelled transaction", len(out.Items), 0)
}

func testTransactSameItem(t *testing.T, tb Table, table string, local bool) {
	_, err := tb.TransactWriteItems(context.Background(), &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		txPut(table, item{"pk": s("S"), "sk": s("1")}, "", nil),
		{ConditionCheck: &types.ConditionCheck{TableName: aws.String(table), Key: key("S", "1"), ConditionExpression: aws.String("attribute_not_exists(pk)")}},
	}})
	if local && code(err) == "TransactionCanceledException" {
		t.Logf("DynamoDB Local cancels what DynamoDB refuses: %v", err)
	} else {
		wantCode(t, "two actions on one item", err, "ValidationException")
	}
	equal(t, "item after a refused transaction", get(t, tb, table, key("S", "1")), item(nil))
}

func testConcurrentClaims(t *testing.T, tb Table, table string) {
	const writers = 12
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i%2 == 0 {
				_, errs[i] = tb.PutItem(context.Background(), &dynamodb.PutItemInput{
					TableName: aws.String(table), Item: item{"pk": s("CLAIM"), "sk": s("1"), "by": n(fmt.Sprint(i))},
					ConditionExpression: aws.String("attribute_not_exists(pk)"),
				})
				return
			}
			_, errs[i] = tb.TransactWriteItems(context.Background(), &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
				txPut(table, item{"pk": s("CLAIM"), "sk": s("1"), "by": n(fmt.Sprint(i))}, "attribute_not_exists(pk)", nil),
				txPut(table, item{"pk": s("CLAIM"), "sk": s(fmt.Sprint("side", i))}, "", nil),
			}})
		}()
	}
	wg.Wait()
	winners := 0
	for i, err := range errs {
		var ccf *types.ConditionalCheckFailedException
		var tce *types.TransactionCanceledException
		switch {
		case err == nil:
			winners++
		case errors.As(err, &ccf):
		case errors.As(err, &tce):
			// DynamoDB may also refuse a transaction that collides with
			// another in flight (TransactionConflict): it lost too.
		default:
			t.Errorf("writer %d: %v", i, err)
		}
	}
	if winners != 1 {
		t.Fatalf("%d writers won the claim, want exactly 1", winners)
	}
	out := query(t, tb, &dynamodb.QueryInput{TableName: aws.String(table), KeyConditionExpression: aws.String("pk = :p AND begins_with(sk, :side)"), ExpressionAttributeValues: item{":p": s("CLAIM"), ":side": s("side")}})
	won := get(t, tb, table, key("CLAIM", "1"))["by"].(*types.AttributeValueMemberN).Value
	var i int
	fmt.Sscan(won, &i)
	want := []string{}
	if i%2 == 1 {
		want = []string{fmt.Sprint("side", i)}
	}
	equal(t, "side items written (only the winner's, if a transaction won)", sks(out.Items), want)
}

func testValidation(t *testing.T, tb Table, table string) {
	ctx := context.Background()
	_, err := tb.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: item{"pk": s("x")}})
	wantCode(t, "a key without its range", err, "ValidationException")
	_, err = tb.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: item{"pk": s("x"), "sk": n("1")}})
	wantCode(t, "a key of the wrong type", err, "ValidationException")
	_, err = tb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item{"pk": s("x")}})
	wantCode(t, "an item without its range key", err, "ValidationException")
	_, err = tb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item{"pk": s("x"), "sk": s("")}})
	wantCode(t, "an empty key", err, "ValidationException")
	_, err = tb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item{"pk": s("x"), "sk": s("1"), "gsi1pk": s("")}})
	wantCode(t, "an empty index key", err, "ValidationException")
	_, err = tb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item{"pk": s("x"), "sk": s("1"), "ss": &types.AttributeValueMemberSS{Value: []string{}}}})
	wantCode(t, "an empty set", err, "ValidationException")
	_, err = tb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item{"pk": s("x"), "sk": s("1")}, ConditionExpression: aws.String("#a = :v"), ExpressionAttributeValues: item{":v": s("1")}})
	wantCode(t, "an undefined name", err, "ValidationException")
	_, err = tb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item{"pk": s("x"), "sk": s("1")}, ReturnValues: types.ReturnValueAllNew})
	wantCode(t, "PutItem ALL_NEW", err, "ValidationException")
	_, err = tb.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(table), KeyConditionExpression: aws.String("sk = :v"), ExpressionAttributeValues: item{":v": s("1")}})
	wantCode(t, "a key condition without the hash key", err, "ValidationException")
	equal(t, "nothing written by refused requests", get(t, tb, table, key("x", "1")), item(nil))
}

func testReservedWords(t *testing.T, tb Table, table string) {
	put(t, tb, table, item{"pk": s("W"), "sk": s("1")})
	for _, name := range []string{"count", "Name", "STATE", "data", "add", "missing"} {
		_, err := update(t, tb, table, &dynamodb.UpdateItemInput{
			Key: key("W", "1"), UpdateExpression: aws.String("SET " + name + " = :v"), ExpressionAttributeValues: item{":v": s("x")},
		})
		wantCode(t, "a reserved word as a bare name: "+name, err, "ValidationException")
		_, err = update(t, tb, table, &dynamodb.UpdateItemInput{
			Key: key("W", "1"), UpdateExpression: aws.String("SET #n = :v"), ConditionExpression: aws.String("attribute_not_exists(#n)"),
			ExpressionAttributeNames: map[string]string{"#n": name}, ExpressionAttributeValues: item{":v": s("x")},
		})
		if err != nil {
			t.Errorf("a reserved word through a placeholder: %s: %v", name, err)
		}
	}
	// Not reserved: these stand bare.
	_, err := update(t, tb, table, &dynamodb.UpdateItemInput{
		Key: key("W", "1"), UpdateExpression: aws.String("SET owners = :v, children = :v, gsi1sk = :v, size = :v, id = :v, this = :v, contains = :v"),
		ExpressionAttributeValues: item{":v": s("x")},
	})
	if err != nil {
		t.Errorf("names that are not reserved: %v", err)
	}
}

func testQueryPageSize(t *testing.T, tb Table, table string) {
	// 30 items of 40 KB: 1.2 MB, more than one Query reads.
	blob := s(string(bytes.Repeat([]byte("x"), 40<<10)))
	for i := range 30 {
		put(t, tb, table, item{"pk": s("BIG"), "sk": s(fmt.Sprintf("%02d", i)), "blob": blob})
	}
	in := &dynamodb.QueryInput{TableName: aws.String(table), KeyConditionExpression: aws.String("pk = :p"), ExpressionAttributeValues: item{":p": s("BIG")}}
	out := query(t, tb, in)
	if out.LastEvaluatedKey == nil || len(out.Items) >= 30 || len(out.Items) < 20 {
		t.Fatalf("first page of 1.2 MB: %d items, LastEvaluatedKey %v; want 20 to 29 items and a LastEvaluatedKey", len(out.Items), out.LastEvaluatedKey)
	}
	got := sks(out.Items)
	in.ExclusiveStartKey = out.LastEvaluatedKey
	out = query(t, tb, in)
	got = append(got, sks(out.Items)...)
	equal(t, "second page's LastEvaluatedKey", out.LastEvaluatedKey, item(nil))
	equal(t, "items over two pages", len(got), 30)
}

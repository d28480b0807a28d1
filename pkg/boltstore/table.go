package boltstore

import (
	"latchkey/pkg/tablestore"

	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// Table is one DynamoDB table in a bbolt file: the seven operations the
// single-table logic uses (GetItem, BatchGetItem, Query, PutItem,
// UpdateItem, DeleteItem, TransactWriteItems), with the SDK's own input,
// output and error types and DynamoDB's semantics for what that logic
// sends, so that the logic runs over either unchanged. What it does not
// implement it refuses with a ValidationException rather than misread.
//
// Reads are always strongly consistent: a bbolt read transaction is a
// snapshot. Writes are serialized by bbolt's one writer, which is what
// makes a condition and the write it guards atomic; concurrent writers
// share an fsync through DB.Batch. A write checks its context before it
// commits: a cancelled caller leaves nothing written.
//
// Items live in one bucket keyed by their primary key (see codec.go); each
// global secondary index is a bucket of (index key, primary key) entries,
// so a Query on it reads the index and then each item; and items with a
// TTL attribute have an entry in an expiry index that the sweeper reads
// (see ttl.go).
type Table struct {
	db      *bolt.DB
	name    string
	keys    keySchema
	indexes map[string]*index
	ttlAttr string
	memo    itemMemo

	now        func() time.Time
	sweepEvery time.Duration
	sweepMax   int
	stop       chan struct{}
	done       sync.WaitGroup
	closeOnce  sync.Once

	// beforeCommit, set by tests only, runs in every write's transaction
	// once its writes are made, before the commit: an error it returns is
	// a fault there, which must leave nothing written.
	beforeCommit func() error
}

// keySchema is a hash key and, unless rng.name is empty, a range key.
type keySchema struct {
	hash, rng keyAttr
}

type keyAttr struct {
	name string
	typ  types.ScalarAttributeType
}

// names returns the key's attribute names.
func (k keySchema) names() []string {
	if k.rng.name == "" {
		return []string{k.hash.name}
	}
	return []string{k.hash.name, k.rng.name}
}

type index struct {
	name   string
	keys   keySchema
	bucket []byte
}

// Bucket names of a Table. They do not clash with Store's.
var (
	bucketTableItems  = []byte("table:items")
	bucketTableTTL    = []byte("table:ttl")
	bucketTableSchema = []byte("table:schema")
	schemaKey         = []byte("keys")   // the table's key schema
	indexMetaPrefix   = []byte("index:") // + name: the index's key schema
	ttlMetaKey        = []byte("ttl")    // the TTL attribute the expiry index holds
)

func indexBucket(name string) []byte { return []byte("table:index:" + name) }

// maxItemSize is DynamoDB's limit on an item, 400 KB; the encoded size
// stands in for DynamoDB's reckoning, which it is close to.
const maxItemSize = 400 * 1024

// maxTransactItems is DynamoDB's limit on the actions of one transaction.
const maxTransactItems = 100

// TableOption configures OpenTable.
type TableOption func(*Table)

// WithTTL names the attribute that holds an item's expiry (epoch seconds,
// a number): the sweeper deletes an item once it has passed, as DynamoDB's
// TTL does. CreateTableInput cannot carry it (DynamoDB sets it with
// UpdateTimeToLive), hence an option.
func WithTTL(attribute string) TableOption { return func(t *Table) { t.ttlAttr = attribute } }

// WithClock sets the clock the sweeper reads (time.Now by default).
func WithClock(now func() time.Time) TableOption { return func(t *Table) { t.now = now } }

// WithSweepInterval sets how often the sweeper runs (a minute by default;
// it also runs when the table is opened). Zero or less: only on open.
func WithSweepInterval(d time.Duration) TableOption { return func(t *Table) { t.sweepEvery = d } }

// OpenTable opens (creating if needed) the table def describes in the
// bbolt file at path. Its keys, global secondary indexes and attribute
// types come from def; string and binary keys are supported, number keys
// and local secondary indexes are not, and an index must project ALL
// (Latchkey's one does). A file holds one table: opening it with another
// key schema is an error; indexes and the TTL attribute may change
// between opens, and are then rebuilt from the items. Like Open, it fails with ErrInUse after a second
// when another process holds the file. Close stops the sweeper.
func OpenTable(path string, def *dynamodb.CreateTableInput, opts ...TableOption) (*Table, error) {
	t := &Table{now: time.Now, sweepEvery: time.Minute, sweepMax: sweepMax, stop: make(chan struct{})}
	for _, o := range opts {
		o(t)
	}
	if err := t.define(def); err != nil {
		return nil, fmt.Errorf("boltstore: table definition: %w", err)
	}
	db, err := openFile(path)
	if err != nil {
		return nil, err
	}
	t.db = db
	if err = db.Update(t.prepareFile); err != nil {
		db.Close()
		return nil, fmt.Errorf("boltstore: open table in %s: %w", path, err)
	}
	if t.ttlAttr != "" {
		if _, err := t.Sweep(t.now()); err != nil {
			db.Close()
			return nil, err
		}
		if t.sweepEvery > 0 {
			t.done.Add(1)
			go t.sweepLoop()
		}
	}
	return t, nil
}

// define reads the schema out of def.
func (t *Table) define(def *dynamodb.CreateTableInput) error {
	if def == nil || aws.ToString(def.TableName) == "" {
		return errors.New("no table name")
	}
	t.name = *def.TableName
	if len(def.LocalSecondaryIndexes) > 0 {
		return errors.New("local secondary indexes are not supported")
	}
	typ := map[string]types.ScalarAttributeType{}
	for _, a := range def.AttributeDefinitions {
		typ[aws.ToString(a.AttributeName)] = a.AttributeType
	}
	schema := func(ks []types.KeySchemaElement) (keySchema, error) {
		var k keySchema
		for _, e := range ks {
			a := keyAttr{name: aws.ToString(e.AttributeName), typ: typ[aws.ToString(e.AttributeName)]}
			switch a.typ {
			case types.ScalarAttributeTypeS, types.ScalarAttributeTypeB:
			case "":
				return k, fmt.Errorf("key attribute %s has no attribute definition", a.name)
			default:
				return k, fmt.Errorf("key attribute %s: only string and binary keys are supported", a.name)
			}
			switch {
			case e.KeyType == types.KeyTypeHash && k.hash.name == "":
				k.hash = a
			case e.KeyType == types.KeyTypeRange && k.rng.name == "":
				k.rng = a
			default:
				return k, fmt.Errorf("key schema element %s %s is not one hash and at most one range key", a.name, e.KeyType)
			}
		}
		if k.hash.name == "" {
			return k, errors.New("key schema without a hash key")
		}
		return k, nil
	}
	var err error
	if t.keys, err = schema(def.KeySchema); err != nil {
		return err
	}
	t.indexes = map[string]*index{}
	for _, g := range def.GlobalSecondaryIndexes {
		name := aws.ToString(g.IndexName)
		if g.Projection == nil || g.Projection.ProjectionType != types.ProjectionTypeAll {
			return fmt.Errorf("index %s: only projection ALL is supported", name)
		}
		k, err := schema(g.KeySchema)
		if err != nil {
			return fmt.Errorf("index %s: %w", name, err)
		}
		if name == "" || t.indexes[name] != nil {
			return fmt.Errorf("index %q: no name, or named twice", name)
		}
		t.indexes[name] = &index{name: name, keys: k, bucket: indexBucket(name)}
	}
	return nil
}

// prepareFile makes the file hold the table t describes. Its key schema
// is stored on first use and must not change. Indexes and the TTL
// attribute may, as DynamoDB's UpdateTable and UpdateTimeToLive allow:
// an index that is new or redefined is built from the items (DynamoDB's
// backfill), one no longer defined is dropped, and so is rebuilt the
// expiry index when the TTL attribute changes.
func (t *Table) prepareFile(tx *bolt.Tx) error {
	meta, err := tx.CreateBucketIfNotExists(bucketTableSchema)
	if err != nil {
		return err
	}
	if _, err := tx.CreateBucketIfNotExists(bucketTableItems); err != nil {
		return err
	}
	keys := []byte(describeKeys(t.keys))
	if have := meta.Get(schemaKey); have != nil && !bytes.Equal(have, keys) {
		return fmt.Errorf("the file holds a table keyed %s, not %s", have, keys)
	}
	if err := meta.Put(schemaKey, keys); err != nil {
		return err
	}
	var stale [][]byte
	c := meta.Cursor()
	for k, _ := c.Seek(indexMetaPrefix); k != nil && bytes.HasPrefix(k, indexMetaPrefix); k, _ = c.Next() {
		if t.indexes[string(k[len(indexMetaPrefix):])] == nil {
			stale = append(stale, bytes.Clone(k))
		}
	}
	for _, k := range stale {
		if err := tx.DeleteBucket(indexBucket(string(k[len(indexMetaPrefix):]))); err != nil && !errors.Is(err, bolterrors.ErrBucketNotFound) {
			return err
		}
		if err := meta.Delete(k); err != nil {
			return err
		}
	}
	for name, ix := range t.indexes {
		k, want := append(bytes.Clone(indexMetaPrefix), name...), []byte(describeKeys(ix.keys))
		if bytes.Equal(meta.Get(k), want) {
			continue
		}
		err := t.rebuild(tx, ix.bucket, func(key []byte, item map[string]types.AttributeValue) []byte { return indexEntry(ix, key, item) })
		if err != nil {
			return err
		}
		if err := meta.Put(k, want); err != nil {
			return err
		}
	}
	if have := meta.Get(ttlMetaKey); have == nil || string(have) != t.ttlAttr {
		err := t.rebuild(tx, bucketTableTTL, func(key []byte, item map[string]types.AttributeValue) []byte {
			if t.ttlAttr == "" {
				return nil
			}
			return t.expiryEntry(key, item)
		})
		if err != nil {
			return err
		}
		if err := meta.Put(ttlMetaKey, []byte(t.ttlAttr)); err != nil {
			return err
		}
	}
	return nil
}

// rebuild empties the bucket name and puts in it entry(key, item) of
// every item (none where it is nil).
func (t *Table) rebuild(tx *bolt.Tx, name []byte, entry func(key []byte, item map[string]types.AttributeValue) []byte) error {
	if err := tx.DeleteBucket(name); err != nil && !errors.Is(err, bolterrors.ErrBucketNotFound) {
		return err
	}
	b, err := tx.CreateBucket(name)
	if err != nil {
		return err
	}
	return tx.Bucket(bucketTableItems).ForEach(func(k, v []byte) error {
		item, err := decodeItem(v)
		if err != nil {
			return fmt.Errorf("item %q: %w", k, err)
		}
		if e := entry(k, item); e != nil {
			return b.Put(e, nil)
		}
		return nil
	})
}

// describeKeys is a key schema as the file stores it.
func describeKeys(k keySchema) string {
	s := fmt.Sprintf("%s:%s", k.hash.name, k.hash.typ)
	if k.rng.name != "" {
		s += fmt.Sprintf(",%s:%s", k.rng.name, k.rng.typ)
	}
	return s
}

// Close stops the sweeper and closes the file, waiting for transactions in
// progress.
func (t *Table) Close() error {
	t.closeOnce.Do(func() { close(t.stop) })
	t.done.Wait()
	return t.db.Close()
}

// ---- errors ----

// validation is DynamoDB's ValidationException as the SDK reports it: the
// SDK has no type of its own for it, and decodes it as a generic API
// error with that code.
func validation(format string, args ...any) error {
	return &smithy.GenericAPIError{Code: "ValidationException", Message: fmt.Sprintf(format, args...), Fault: smithy.FaultClient}
}

// apiErr turns an expression error into the ValidationException DynamoDB
// answers with; other errors pass.
func apiErr(err error) error {
	var e *exprError
	if errors.As(err, &e) {
		return validation("%s", e.msg)
	}
	return err
}

func conditionFailed(old map[string]types.AttributeValue, returnOld bool) error {
	e := &types.ConditionalCheckFailedException{Message: aws.String("The conditional request failed")}
	if returnOld {
		e.Item = old
	}
	return e
}

func (t *Table) checkTable(name *string) error {
	if aws.ToString(name) != t.name {
		return &types.ResourceNotFoundException{Message: aws.String("Cannot do operations on a non-existent table")}
	}
	return nil
}

// ---- keys ----

// appendKeyValue appends a key attribute's value as one escaped key part.
func appendKeyValue(b []byte, v types.AttributeValue) []byte {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return appendKeyPartOf(b, v.Value)
	case *types.AttributeValueMemberB:
		return appendKeyPartOf(b, v.Value)
	}
	return b
}

// appendKeyPartOf is appendKeyPart for a string or bytes, without a copy.
// The runs between zero bytes go in whole: a byte at a time cost a verify
// over a thousand instructions.
func appendKeyPartOf[T string | []byte](b []byte, v T) []byte {
	for {
		i := indexZero(v)
		if i < 0 {
			b = append(b, v...)
			return append(b, keyEnd...)
		}
		b = append(append(b, v[:i+1]...), 0xFF)
		v = v[i+1:]
	}
}

// indexZero is the index of the first zero byte of v, -1 if none.
// The standard library's search, which reads words at a time: a loop over
// the bytes cost a verify some 800 instructions.
func indexZero[T string | []byte](v T) int {
	if s, ok := any(v).(string); ok {
		return strings.IndexByte(s, 0)
	}
	return bytes.IndexByte([]byte(v), 0)
}

func keyValueBytes(v types.AttributeValue) []byte {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return []byte(v.Value)
	case *types.AttributeValueMemberB:
		return v.Value
	}
	return nil
}

func typeMatches(v types.AttributeValue, typ types.ScalarAttributeType) bool {
	switch v.(type) {
	case *types.AttributeValueMemberS:
		return typ == types.ScalarAttributeTypeS
	case *types.AttributeValueMemberB:
		return typ == types.ScalarAttributeTypeB
	case *types.AttributeValueMemberN:
		return typ == types.ScalarAttributeTypeN
	}
	return false
}

func emptyKeyValue(v types.AttributeValue) bool {
	return len(keyValueBytes(v)) == 0
}

// appendTableKey appends the bbolt key of a request's Key (exactly the key
// attributes, of their types), or returns DynamoDB's error for it.
func (t *Table) appendTableKey(b []byte, key map[string]types.AttributeValue) ([]byte, error) {
	want := 1
	if t.keys.rng.name != "" {
		want = 2
	}
	if len(key) != want {
		return nil, validation("The provided key element does not match the schema")
	}
	for _, a := range []keyAttr{t.keys.hash, t.keys.rng}[:want] {
		v, ok := key[a.name]
		if !ok || !typeMatches(v, a.typ) {
			return nil, validation("The provided key element does not match the schema")
		}
		if emptyKeyValue(v) {
			return nil, validation("One or more parameter values are not valid. The AttributeValue for a key attribute cannot contain an empty %s value. Key: %s", typeWord(a.typ), a.name)
		}
		b = appendKeyValue(b, v)
	}
	return b, nil
}

func typeWord(typ types.ScalarAttributeType) string {
	if typ == types.ScalarAttributeTypeB {
		return "binary"
	}
	return "string"
}

// itemKey returns the bbolt key of an item that is to be written, checking
// its key attributes and those of the indexes it is in.
func (t *Table) itemKey(item map[string]types.AttributeValue) ([]byte, error) {
	var b []byte
	for _, a := range []keyAttr{t.keys.hash, t.keys.rng} {
		if a.name == "" {
			continue
		}
		v, ok := item[a.name]
		if !ok {
			return nil, validation("One or more parameter values were invalid: Missing the key %s in the item", a.name)
		}
		if !typeMatches(v, a.typ) {
			return nil, validation("One or more parameter values were invalid: Type mismatch for key %s expected: %s actual: %s", a.name, a.typ, typeName(v))
		}
		if emptyKeyValue(v) {
			return nil, validation("One or more parameter values are not valid. The AttributeValue for a key attribute cannot contain an empty %s value. Key: %s", typeWord(a.typ), a.name)
		}
		b = appendKeyValue(b, v)
	}
	for _, ix := range t.indexes {
		for _, a := range []keyAttr{ix.keys.hash, ix.keys.rng} {
			v, ok := item[a.name]
			if a.name == "" || !ok {
				continue
			}
			if !typeMatches(v, a.typ) {
				return nil, validation("One or more parameter values were invalid: Type mismatch for Index Key %s Expected: %s Actual: %s IndexName: %s", a.name, a.typ, typeName(v), ix.name)
			}
			if emptyKeyValue(v) {
				return nil, validation("One or more parameter values are not valid. A value specified for a secondary index key is not supported. The AttributeValue for a key attribute cannot contain an empty %s value. IndexName: %s, IndexKey: %s", typeWord(a.typ), ix.name, a.name)
			}
		}
	}
	return b, nil
}

// keyItem is the item of only the key attributes of item.
func (t *Table) keyItem(item map[string]types.AttributeValue, ks keySchema) map[string]types.AttributeValue {
	out := make(map[string]types.AttributeValue, 2)
	for _, n := range ks.names() {
		if v, ok := item[n]; ok {
			out[n] = v
		}
	}
	return out
}

// indexEntry is the bbolt key of item's entry in ix, or nil when item is
// not in the index (it lacks one of the index's key attributes).
func indexEntry(ix *index, tableKey []byte, item map[string]types.AttributeValue) []byte {
	if item == nil {
		return nil
	}
	h, ok := item[ix.keys.hash.name]
	if !ok {
		return nil
	}
	b := appendKeyValue(nil, h)
	if ix.keys.rng.name != "" {
		r, ok := item[ix.keys.rng.name]
		if !ok {
			return nil
		}
		b = appendKeyValue(b, r)
	}
	return append(b, tableKey...)
}

// ---- values ----

// normalizeItem checks every value of item as DynamoDB does (numbers,
// sets) and returns it with numbers written as DynamoDB returns them: a
// new map when one changed, never item itself changed.
func normalizeItem(item map[string]types.AttributeValue) (map[string]types.AttributeValue, error) {
	m, _, err := normalize(item)
	return m, err
}

func normalize(item map[string]types.AttributeValue) (map[string]types.AttributeValue, bool, error) {
	var out map[string]types.AttributeValue
	for k, v := range item {
		n, err := normalizeValue(v)
		if err != nil {
			return nil, false, err
		}
		if n != v {
			if out == nil {
				out = make(map[string]types.AttributeValue, len(item))
				for k, v := range item {
					out[k] = v
				}
			}
			out[k] = n
		}
	}
	if out == nil {
		return item, false, nil
	}
	return out, true, nil
}

func normalizeValue(v types.AttributeValue) (types.AttributeValue, error) {
	switch v := v.(type) {
	case *types.AttributeValueMemberN:
		c, ok := canonicalNumber(v.Value)
		if !ok {
			return nil, validation("A value provided cannot be converted into a number")
		}
		if c != v.Value {
			return &types.AttributeValueMemberN{Value: c}, nil
		}
		return v, nil
	case *types.AttributeValueMemberNS:
		if len(v.Value) == 0 {
			return nil, validation("One or more parameter values were invalid: An number set  may not be empty")
		}
		out := make([]string, len(v.Value))
		for i, s := range v.Value {
			c, ok := canonicalNumber(s)
			if !ok {
				return nil, validation("A value provided cannot be converted into a number")
			}
			for _, prev := range out[:i] {
				if compareNumbers(prev, c) == 0 {
					return nil, validation("One or more parameter values were invalid: Input collection %v contains duplicates.", v.Value)
				}
			}
			out[i] = c
		}
		return &types.AttributeValueMemberNS{Value: out}, nil
	case *types.AttributeValueMemberSS:
		if len(v.Value) == 0 {
			return nil, validation("One or more parameter values were invalid: An string set  may not be empty")
		}
		seen := make(map[string]bool, len(v.Value))
		for _, s := range v.Value {
			if seen[s] {
				return nil, validation("One or more parameter values were invalid: Input collection %v contains duplicates.", v.Value)
			}
			seen[s] = true
		}
		return v, nil
	case *types.AttributeValueMemberBS:
		if len(v.Value) == 0 {
			return nil, validation("One or more parameter values were invalid: Binary sets should not be empty")
		}
		seen := make(map[string]bool, len(v.Value))
		for _, s := range v.Value {
			if seen[string(s)] {
				return nil, validation("One or more parameter values were invalid: Input collection contains duplicates.")
			}
			seen[string(s)] = true
		}
		return v, nil
	case *types.AttributeValueMemberL:
		var out []types.AttributeValue
		for i, e := range v.Value {
			n, err := normalizeValue(e)
			if err != nil {
				return nil, err
			}
			if n != e && out == nil {
				out = append([]types.AttributeValue(nil), v.Value...)
			}
			if out != nil {
				out[i] = n
			}
		}
		if out != nil {
			return &types.AttributeValueMemberL{Value: out}, nil
		}
		return v, nil
	case *types.AttributeValueMemberM:
		m, changed, err := normalize(v.Value)
		if err != nil || !changed {
			return v, err
		}
		return &types.AttributeValueMemberM{Value: m}, nil
	case *types.AttributeValueMemberS, *types.AttributeValueMemberB, *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return v, nil
	case nil:
		return nil, validation("Supplied AttributeValue is empty, must contain exactly one of the supported datatypes")
	}
	return nil, validation("Supplied AttributeValue has an unsupported type %T", v)
}

// normalizeValues is normalizeItem for ExpressionAttributeValues.
func normalizeValues(values map[string]types.AttributeValue) (map[string]types.AttributeValue, error) {
	return normalizeItem(values)
}

// project keeps the attributes names of item (all when names is nil).
func project(item map[string]types.AttributeValue, names []string) map[string]types.AttributeValue {
	if names == nil || item == nil {
		return item
	}
	out := make(map[string]types.AttributeValue, len(names))
	for _, n := range names {
		if v, ok := item[n]; ok {
			out[n] = v
		}
	}
	return out
}

// projection parses a ProjectionExpression and resolves its names.
func projection(expr *string, e *env) ([]string, error) {
	if expr == nil {
		return nil, nil
	}
	paths, err := parseProjection(*expr)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(paths))
	for i, p := range paths {
		if names[i], err = e.name(p); err != nil {
			return nil, err
		}
	}
	return names, nil
}

// ---- storage ----

// get reads and decodes the item at key; nil when there is none.
func getItem(tx *bolt.Tx, key []byte) (map[string]types.AttributeValue, error) {
	data := tx.Bucket(bucketTableItems).Get(key)
	if data == nil {
		return nil, nil
	}
	m, err := decodeItem(data)
	if err != nil {
		return nil, fmt.Errorf("boltstore: item %q: %w", key, err)
	}
	return m, nil
}

// encodeItem encodes an item to be written, refusing one over
// DynamoDB's size limit.
func encodeItem(item map[string]types.AttributeValue) ([]byte, error) {
	data, err := appendItem(nil, item)
	if err != nil {
		return nil, validation("%v", err)
	}
	if len(data) > maxItemSize {
		return nil, validation("Item size has exceeded the maximum allowed size")
	}
	return data, nil
}

// store writes next (encoded as data) at key in place of old, or deletes
// the item when next is nil, keeping the indexes and the expiry index in
// step.
func (t *Table) store(tx *bolt.Tx, key []byte, old, next map[string]types.AttributeValue, data []byte) error {
	items := tx.Bucket(bucketTableItems)
	if next == nil {
		if err := items.Delete(key); err != nil {
			return err
		}
	} else if err := items.Put(key, data); err != nil {
		return err
	}
	for _, ix := range t.indexes {
		was, is := indexEntry(ix, key, old), indexEntry(ix, key, next)
		if bytes.Equal(was, is) {
			continue
		}
		b := tx.Bucket(ix.bucket)
		if was != nil {
			if err := b.Delete(was); err != nil {
				return err
			}
		}
		if is != nil {
			if err := b.Put(is, nil); err != nil {
				return err
			}
		}
	}
	if t.ttlAttr != "" {
		was, is := t.expiryEntry(key, old), t.expiryEntry(key, next)
		if !bytes.Equal(was, is) {
			b := tx.Bucket(bucketTableTTL)
			if was != nil {
				if err := b.Delete(was); err != nil {
					return err
				}
			}
			if is != nil {
				if err := b.Put(is, nil); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// write runs fn in a batched read-write transaction, and commits only if
// ctx is still live once fn is done. fn may run more than once (DB.Batch),
// so it only reads and writes the transaction and sets its results anew.
func (t *Table) write(ctx context.Context, fn func(tx *bolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	err := t.db.Batch(func(tx *bolt.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		if t.beforeCommit != nil {
			if err := t.beforeCommit(); err != nil {
				return err
			}
		}
		return ctx.Err()
	})
	if errors.Is(err, ctx.Err()) && ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// ---- GetItem ----

// GetItem reads one item, strongly consistent whatever ConsistentRead
// says. ProjectionExpression is honoured.
func (t *Table) GetItem(ctx context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := t.checkTable(in.TableName); err != nil {
		return nil, err
	}
	if in.AttributesToGet != nil {
		return nil, validation("AttributesToGet is not supported by this table; use ProjectionExpression")
	}
	key, err := t.appendTableKey(nil, in.Key)
	if err != nil {
		return nil, err
	}
	e := newEnv(in.ExpressionAttributeNames, nil)
	names, err := projection(in.ProjectionExpression, e)
	if err != nil {
		return nil, apiErr(err)
	}
	if err := e.checkUnused(); err != nil {
		return nil, apiErr(err)
	}
	var item map[string]types.AttributeValue
	err = t.db.View(func(tx *bolt.Tx) (err error) {
		item, err = getItem(tx, key)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &dynamodb.GetItemOutput{Item: project(item, names)}, nil
}

// ---- BatchGetItem ----

// maxBatchGetKeys is DynamoDB's limit on the keys of one BatchGetItem.
const maxBatchGetKeys = 100

// BatchGetItem reads up to 100 items in one read transaction and answers
// every key: UnprocessedKeys is always empty. Items are returned in the
// order of their keys (DynamoDB promises no order). Without a
// ProjectionExpression no expression is parsed: it is the verify path.
func (t *Table) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(in.RequestItems) == 0 {
		return nil, validation("1 validation error detected: Value null at 'requestItems' failed to satisfy constraint: Member must not be null")
	}
	total := 0
	for name, ka := range in.RequestItems {
		if err := t.checkTable(&name); err != nil {
			return nil, err
		}
		if ka.AttributesToGet != nil {
			return nil, validation("AttributesToGet is not supported by this table; use ProjectionExpression")
		}
		if len(ka.Keys) == 0 {
			return nil, validation("1 validation error detected: Value at 'requestItems.%s.member.keys' failed to satisfy constraint: Member must have length greater than or equal to 1", name)
		}
		total += len(ka.Keys)
	}
	if total > maxBatchGetKeys {
		return nil, validation("Too many items requested for the BatchGetItem call")
	}
	ka := in.RequestItems[t.name]
	e := newEnv(ka.ExpressionAttributeNames, nil)
	names, err := projection(ka.ProjectionExpression, e)
	if err != nil {
		return nil, apiErr(err)
	}
	if err := e.checkUnused(); err != nil {
		return nil, apiErr(err)
	}
	// All keys in one buffer, checked before the transaction.
	buf := make([]byte, 0, 64*len(ka.Keys))
	ends := make([]int, len(ka.Keys))
	for i, k := range ka.Keys {
		if buf, err = t.appendTableKey(buf, k); err != nil {
			return nil, err
		}
		ends[i] = len(buf)
	}
	items, err := t.readKeys(buf, ends, names, nil)
	if err != nil {
		return nil, err
	}
	return &dynamodb.BatchGetItemOutput{
		Responses:       map[string][]map[string]types.AttributeValue{t.name: items},
		UnprocessedKeys: map[string]types.KeysAndAttributes{},
	}, nil
}

// BatchGetKeys is BatchGetItem for a table whose hash and range keys are
// strings, of keys given as {hash value, range value}, with no projection
// (tablestore.KeyReader): the same checks and answers, without the SDK's
// request and answer maps. The items are the memo's, which callers do not
// modify.
func (t *Table) BatchGetKeys(ctx context.Context, table string, keys [][2]string) ([]map[string]types.AttributeValue, error) {
	ks := make([]tablestore.Key, len(keys))
	for i, k := range keys {
		ks[i] = tablestore.Key{PK: k[0], SK: k[1]}
	}
	return t.batchGetKeys(ctx, table, ks, nil)
}

// batchGetKeys is BatchGetKeys that, with port, appends the items to it
// in the port's values instead of answering them.
func (t *Table) batchGetKeys(ctx context.Context, table string, keys []tablestore.Key, port *[]tablestore.Item) ([]map[string]types.AttributeValue, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := t.checkTable(&table); err != nil {
		return nil, err
	}
	if len(keys) == 0 {
		return nil, validation("1 validation error detected: Value at 'requestItems.%s.member.keys' failed to satisfy constraint: Member must have length greater than or equal to 1", table)
	}
	if len(keys) > maxBatchGetKeys {
		return nil, validation("Too many items requested for the BatchGetItem call")
	}
	if t.keys.hash.typ != types.ScalarAttributeTypeS || t.keys.rng.name == "" || t.keys.rng.typ != types.ScalarAttributeTypeS {
		return nil, validation("The provided key element does not match the schema")
	}
	var endsBuf [8]int // a verify reads 2 to 4 keys
	ends := endsBuf[:0]
	buf := make([]byte, 0, 64*len(keys))
	for _, k := range keys {
		for i, v := range [2]string{k.PK, k.SK} {
			if v == "" {
				a := t.keys.hash
				if i == 1 {
					a = t.keys.rng
				}
				return nil, validation("One or more parameter values are not valid. The AttributeValue for a key attribute cannot contain an empty %s value. Key: %s", typeWord(a.typ), a.name)
			}
			buf = appendKeyPartOf(buf, v)
		}
		ends = append(ends, len(buf))
	}
	return t.readKeys(buf, ends, nil, port)
}

// BatchGetItems is BatchGetKeys with the items in the port's values
// (tablestore.ItemReader), the memo's, which callers do not modify.
func (t *Table) BatchGetItems(ctx context.Context, table string, keys []tablestore.Key) ([]tablestore.Item, error) {
	items := make([]tablestore.Item, 0, len(keys))
	_, err := t.batchGetKeys(ctx, table, keys, &items)
	return items, err
}

// readKeys reads the items at the table keys in buf, each ending at its
// ends, in one read transaction, refusing duplicates as DynamoDB does, and
// returns those that exist, in the order of their keys, projected on names
// (all attributes when nil).
func (t *Table) readKeys(buf []byte, ends []int, names []string, port *[]tablestore.Item) ([]map[string]types.AttributeValue, error) {
	keyAt := func(i int) []byte {
		start := 0
		if i > 0 {
			start = ends[i-1]
		}
		return buf[start:ends[i]]
	}
	for i := range ends {
		for j := range i {
			if bytes.Equal(keyAt(i), keyAt(j)) {
				return nil, validation("Provided list of item keys contains duplicates")
			}
		}
	}
	var items []map[string]types.AttributeValue
	if port == nil {
		items = make([]map[string]types.AttributeValue, 0, len(ends))
	}
	err := t.db.View(func(tx *bolt.Tx) error {
		// One cursor for all: a Get makes a cursor each, and its path
		// from the root grows anew (an allocation per level).
		c := tx.Bucket(bucketTableItems).Cursor()
		for i := range ends {
			k, data := c.Seek(keyAt(i))
			if data == nil || !bytes.Equal(k, keyAt(i)) {
				continue
			}
			e, err := t.memo.entry(keyAt(i), data)
			if err != nil {
				return fmt.Errorf("boltstore: item %q: %w", keyAt(i), err)
			}
			if port != nil {
				if e.portErr != nil {
					return fmt.Errorf("boltstore: item %q: %w", keyAt(i), e.portErr)
				}
				*port = append(*port, e.port)
				continue
			}
			items = append(items, project(e.item, names))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return items, nil
}

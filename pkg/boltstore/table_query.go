package boltstore

import (
	"bytes"
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	bolt "go.etcd.io/bbolt"
)

// maxQueryPage is DynamoDB's limit on the data one Query reads, 1 MB.
const maxQueryPage = 1 << 20

// rangeCond is the range key's part of a key condition, over the key's
// bytes: op is 0 (none), '=', '<', tokLE, '>', tokGE, 'B' (between a and
// b) or 'b' (begins with a). The keys it admits are one contiguous run.
type rangeCond struct {
	op   byte
	a, b []byte
}

// where places rk against the run: -1 before it, 0 in it, 1 after it.
func (r rangeCond) where(rk []byte) int {
	switch r.op {
	case '=':
		return bytes.Compare(rk, r.a)
	case '<':
		if bytes.Compare(rk, r.a) < 0 {
			return 0
		}
		return 1
	case tokLE:
		if bytes.Compare(rk, r.a) <= 0 {
			return 0
		}
		return 1
	case '>':
		if bytes.Compare(rk, r.a) > 0 {
			return 0
		}
		return -1
	case tokGE:
		if bytes.Compare(rk, r.a) >= 0 {
			return 0
		}
		return -1
	case 'B':
		if bytes.Compare(rk, r.a) < 0 {
			return -1
		}
		if bytes.Compare(rk, r.b) > 0 {
			return 1
		}
		return 0
	case 'b':
		if bytes.HasPrefix(rk, r.a) {
			return 0
		}
		return bytes.Compare(rk, r.a)
	}
	return 0
}

// low is where a forward walk of the partition starts (escaped, to follow
// the partition's prefix); nil for the partition's start.
func (r rangeCond) low() []byte {
	switch r.op {
	case '=', '>', tokGE, 'B', 'b':
		return appendKeyPrefix(nil, r.a)
	}
	return nil
}

// high is where a backward walk starts: the walk begins at the last key
// before it. nil for the partition's end.
func (r rangeCond) high() []byte {
	switch r.op {
	case '=', '<', tokLE:
		return append(appendKeyPrefix(nil, r.a), keyPastEnd...)
	case 'B':
		return append(appendKeyPrefix(nil, r.b), keyPastEnd...)
	case 'b':
		// The first value past every one that begins with a.
		p := bytes.Clone(r.a)
		for len(p) > 0 && p[len(p)-1] == 0xFF {
			p = p[:len(p)-1]
		}
		if len(p) == 0 {
			return nil
		}
		p[len(p)-1]++
		return appendKeyPrefix(nil, p)
	}
	return nil
}

// keyCondition reads a KeyConditionExpression: the hash key's value and
// the range key's condition, checked against the key schema ks.
func keyCondition(c *cond, e *env, ks keySchema) (types.AttributeValue, rangeCond, error) {
	parts := []*cond{c}
	if c.op == 'A' {
		parts = []*cond{c.l, c.r}
	}
	var hash types.AttributeValue
	var rc rangeCond
	for _, p := range parts {
		switch p.op {
		case '=', '<', tokLE, '>', tokGE, 'B', 'b':
		case 'A':
			return nil, rc, invalid("Invalid KeyConditionExpression: Conditions can be of length 1 or 2 only")
		default:
			return nil, rc, invalid("Invalid operator used in KeyConditionExpression")
		}
		if p.args[0].kind != 'p' {
			return nil, rc, invalid("Invalid KeyConditionExpression: the left operand must name a key attribute")
		}
		name, err := e.name(p.args[0].name)
		if err != nil {
			return nil, rc, err
		}
		vals := make([]types.AttributeValue, len(p.args)-1)
		for i, a := range p.args[1:] {
			if a.kind != 'v' {
				return nil, rc, invalid("Invalid KeyConditionExpression: the right operands must be values")
			}
			if vals[i], err = e.value(a.name); err != nil {
				return nil, rc, err
			}
		}
		var attr keyAttr
		switch name {
		case ks.hash.name:
			if p.op != '=' {
				return nil, rc, invalid("Query key condition not supported")
			}
			if hash != nil {
				return nil, rc, invalid("KeyConditionExpressions must only contain one condition per key")
			}
			attr, hash = ks.hash, vals[0]
		case ks.rng.name:
			if rc.op != 0 || ks.rng.name == "" {
				return nil, rc, invalid("KeyConditionExpressions must only contain one condition per key")
			}
			attr = ks.rng
			rc.op = p.op
			rc.a = keyValueBytes(vals[0])
			if p.op == 'B' {
				rc.b = keyValueBytes(vals[1])
			}
		default:
			return nil, rc, invalid("Query condition missed key schema element: %s", ks.hash.name)
		}
		for _, v := range vals {
			if !typeMatches(v, attr.typ) {
				return nil, rc, invalid("One or more parameter values were invalid: Condition parameter type does not match schema type")
			}
		}
	}
	if hash == nil {
		return nil, rc, invalid("Query condition missed key schema element: %s", ks.hash.name)
	}
	if rc.op == 'B' && bytes.Compare(rc.a, rc.b) > 0 {
		return nil, rc, invalid("Invalid KeyConditionExpression: The BETWEEN operator requires upper bound to be greater than or equal to lower bound")
	}
	return hash, rc, nil
}

// Query reads one partition of the table or of a global secondary index,
// in range key order (ScanIndexForward false: reversed). Limit caps the
// items read, before FilterExpression drops any, as in DynamoDB; a page
// that stopped at Limit has a LastEvaluatedKey (the table's key, and the
// index's for an index), and ExclusiveStartKey resumes after it. So does
// a page that has read 1 MB of items (their encoded size standing in for
// DynamoDB's reckoning), DynamoDB's limit on the data one Query reads.
// Reads are strongly consistent; ConsistentRead on an
// index is refused, as DynamoDB refuses it.
func (t *Table) Query(ctx context.Context, in *dynamodb.QueryInput, _ ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := t.checkTable(in.TableName); err != nil {
		return nil, err
	}
	if in.KeyConditions != nil || in.QueryFilter != nil || in.AttributesToGet != nil || in.ConditionalOperator != "" {
		return nil, validation("KeyConditions, QueryFilter, AttributesToGet and ConditionalOperator are not supported by this table; use expressions")
	}
	if in.KeyConditionExpression == nil {
		return nil, validation("Either the KeyConditions or KeyConditionExpression parameter must be specified in the request.")
	}
	countOnly := false
	switch in.Select {
	case "", types.SelectAllAttributes, types.SelectAllProjectedAttributes:
	case types.SelectCount:
		countOnly = true
	case types.SelectSpecificAttributes:
		if in.ProjectionExpression == nil {
			return nil, validation("SPECIFIC_ATTRIBUTES needs a ProjectionExpression")
		}
	default:
		return nil, validation("Unknown Select %q", in.Select)
	}
	limit := -1
	if in.Limit != nil {
		if *in.Limit < 1 {
			return nil, validation("1 validation error detected: Value '%d' at 'limit' failed to satisfy constraint: Member must have value greater than or equal to 1", *in.Limit)
		}
		limit = int(*in.Limit)
	}
	ks, bucket := t.keys, bucketTableItems
	var ix *index
	if in.IndexName != nil {
		if ix = t.indexes[*in.IndexName]; ix == nil {
			return nil, validation("The table does not have the specified index: %s", *in.IndexName)
		}
		if aws.ToBool(in.ConsistentRead) {
			return nil, validation("Consistent reads are not supported on global secondary indexes")
		}
		ks, bucket = ix.keys, ix.bucket
	}
	values, err := normalizeValues(in.ExpressionAttributeValues)
	if err != nil {
		return nil, err
	}
	e := newEnv(in.ExpressionAttributeNames, values)
	kc, err := parseCondition(*in.KeyConditionExpression, "KeyConditionExpression")
	if err != nil {
		return nil, apiErr(err)
	}
	hash, rc, err := keyCondition(kc, e, ks)
	if err != nil {
		return nil, apiErr(err)
	}
	var filter *cond
	if in.FilterExpression != nil {
		if filter, err = parseCondition(*in.FilterExpression, "FilterExpression"); err != nil {
			return nil, apiErr(err)
		}
		if err := e.resolveCond(filter); err != nil {
			return nil, apiErr(err)
		}
		for _, p := range condPaths(filter, nil) {
			if name, _ := e.name(p); name == ks.hash.name || name == ks.rng.name {
				return nil, validation("Filter Expression can only contain non-primary key attributes: Primary key attribute: %s", name)
			}
		}
	}
	names, err := projection(in.ProjectionExpression, e)
	if err != nil {
		return nil, apiErr(err)
	}
	if err := e.checkUnused(); err != nil {
		return nil, apiErr(err)
	}
	var esk []byte
	if in.ExclusiveStartKey != nil {
		if esk, err = t.startKey(in.ExclusiveStartKey, ix); err != nil {
			return nil, err
		}
	}
	forward := in.ScanIndexForward == nil || *in.ScanIndexForward
	partition := appendKeyValue(nil, hash)

	out := &dynamodb.QueryOutput{Items: []map[string]types.AttributeValue{}}
	err = t.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucket).Cursor()
		items := tx.Bucket(bucketTableItems)
		var k []byte
		read := 0 // bytes of the items read, for the page's size limit
		if forward {
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
		for ; k != nil; k = step(c, forward) {
			if !bytes.HasPrefix(k, partition) {
				break
			}
			if esk != nil && (forward && bytes.Compare(k, esk) <= 0 || !forward && bytes.Compare(k, esk) >= 0) {
				continue
			}
			rest := k[len(partition):]
			if ks.rng.name != "" {
				rk, after, ok := cutKeyPart(rest)
				if !ok {
					return errCorrupt
				}
				switch w := rc.where(rk); {
				case w < 0 && forward, w > 0 && !forward:
					continue
				case w != 0:
					return nil
				}
				rest = after
			}
			data := items.Get(k)
			if ix != nil {
				data = items.Get(rest)
			}
			if data == nil {
				return errCorrupt
			}
			item, err := decodeItem(data)
			if err != nil {
				return err
			}
			out.ScannedCount++
			read += len(data)
			if filter == nil || matches(e, filter, item) {
				out.Count++
				if !countOnly {
					out.Items = append(out.Items, project(item, names))
				}
			}
			if int(out.ScannedCount) == limit || read >= maxQueryPage {
				out.LastEvaluatedKey = t.lastKey(item, ix)
				return nil
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if countOnly {
		out.Items = nil
	}
	return out, nil
}

func matches(e *env, c *cond, item map[string]types.AttributeValue) bool {
	ok, err := e.match(c, item)
	return err == nil && ok
}

// condPaths appends the paths a condition reads to out.
func condPaths(c *cond, out []string) []string {
	if c == nil {
		return out
	}
	out = condPaths(c.r, condPaths(c.l, out))
	for _, a := range c.args {
		out = operandPaths(a, out)
	}
	return out
}

func operandPaths(o *operand, out []string) []string {
	if o == nil {
		return out
	}
	if o.kind == 'p' || o.kind == 's' || o.kind == 'f' {
		out = append(out, o.name)
	}
	return operandPaths(o.right, operandPaths(o.left, out))
}

func step(c *bolt.Cursor, forward bool) []byte {
	if forward {
		k, _ := c.Next()
		return k
	}
	k, _ := c.Prev()
	return k
}

// partitionEnd is the first key past a partition.
func partitionEnd(partition []byte) []byte {
	end := bytes.Clone(partition)
	return append(end[:len(end)-len(keyEnd)], keyPastEnd...)
}

// startKey is the bbolt key an ExclusiveStartKey names: the table's key,
// and for an index the index's key before it.
func (t *Table) startKey(esk map[string]types.AttributeValue, ix *index) ([]byte, error) {
	tableKey := t.keyItem(esk, t.keys)
	want := len(tableKey)
	b, err := t.appendTableKey(nil, tableKey)
	if err != nil {
		return nil, validation("The provided starting key is invalid: The provided key element does not match the schema")
	}
	if ix != nil {
		var p []byte
		for _, a := range []keyAttr{ix.keys.hash, ix.keys.rng} {
			if a.name == "" {
				continue
			}
			v, ok := esk[a.name]
			if !ok || !typeMatches(v, a.typ) {
				return nil, validation("The provided starting key is invalid: The provided key element does not match the schema")
			}
			if _, dup := tableKey[a.name]; !dup {
				want++
			}
			p = appendKeyValue(p, v)
		}
		b = append(p, b...)
	}
	if len(esk) != want {
		return nil, validation("The provided starting key is invalid: The provided key element does not match the schema")
	}
	return b, nil
}

// lastKey is the LastEvaluatedKey of a page that ended at item.
func (t *Table) lastKey(item map[string]types.AttributeValue, ix *index) map[string]types.AttributeValue {
	k := t.keyItem(item, t.keys)
	if ix != nil {
		for n, v := range t.keyItem(item, ix.keys) {
			k[n] = v
		}
	}
	return k
}

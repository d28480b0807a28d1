package dynamostore

import (
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"latchkey/pkg/tablestore"

	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Table is a table with the DynamoDB API, the operations the port is
// translated to: *dynamodb.Client is one (and a test's wrapper of it).
type Table interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
}

var _ Table = (*dynamodb.Client)(nil)

// Cancellation reason codes of TransactionCanceledException, as documented
// for TransactWriteItems. The SDK has no constants for them.
const (
	reasonNone                  = "None"
	reasonConditionalCheck      = "ConditionalCheckFailed"
	reasonTransactionConflict   = "TransactionConflict"
	reasonThrottling            = "ThrottlingError"
	reasonProvisionedThroughput = "ProvisionedThroughputExceeded"
	reasonRequestLimit          = "RequestLimitExceeded"
)

// throttleCodes are the error codes DynamoDB uses to ask a caller to slow
// down. The SDK has retried them already by the time they reach the store.
var throttleCodes = map[string]bool{
	"ProvisionedThroughputExceededException": true,
	"ThrottlingException":                    true,
	"RequestLimitExceeded":                   true,
}

// sdkPort is tablestore's port over a Table, which has the DynamoDB API: it
// translates each operation to the SDK's, with the expression builder, and
// the SDK's errors to the port's.
type sdkPort struct {
	t     Table
	table *string
}

// Port returns tablestore's port over the table named name of t: each
// operation translated to the SDK's, with the expression builder, and the
// SDK's errors to the port's (a retry later can cure: ErrUnavailable).
func Port(t Table, name string) tablestore.Port {
	p := &sdkPort{t: t, table: aws.String(name)}
	return p
}

func keyAV(k tablestore.Key) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: k.PK}, "sk": &types.AttributeValueMemberS{Value: k.SK},
	}
}

func (p *sdkPort) Get(ctx context.Context, k tablestore.Key) (tablestore.Item, error) {
	out, err := p.t.GetItem(ctx, &dynamodb.GetItemInput{TableName: p.table, Key: keyAV(k), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, sdkErr(err)
	}
	return fromAVMap(out.Item)
}

// unprocessedRetries bounds the re-requests of keys that BatchGetItem left
// unprocessed, which it does only when the table is throttled.
const unprocessedRetries = 4

func (p *sdkPort) BatchGet(ctx context.Context, keys []tablestore.Key, consistent bool) ([]tablestore.Item, error) {
	avs := make([]map[string]types.AttributeValue, len(keys))
	for i, k := range keys {
		avs[i] = keyAV(k)
	}
	request := map[string]types.KeysAndAttributes{*p.table: {Keys: avs, ConsistentRead: aws.Bool(consistent)}}
	var read []map[string]types.AttributeValue
	for attempt := 0; ; attempt++ {
		out, err := p.t.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: request})
		if err != nil {
			return nil, sdkErr(err)
		}
		read = append(read, out.Responses[*p.table]...)
		if len(out.UnprocessedKeys) == 0 {
			return itemsOf(read)
		}
		if attempt >= unprocessedRetries {
			return nil, fmt.Errorf("%w: BatchGetItem left keys unprocessed", tablestore.ErrUnavailable)
		}
		request = out.UnprocessedKeys
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("tablestore: abandoned by the caller: %w", ctx.Err())
		case <-time.After(time.Duration(10<<attempt) * time.Millisecond):
		}
	}
}

func itemsOf(avs []map[string]types.AttributeValue) ([]tablestore.Item, error) {
	items := make([]tablestore.Item, len(avs))
	for i, av := range avs {
		var err error
		if items[i], err = fromAVMap(av); err != nil {
			return nil, err
		}
	}
	return items, nil
}

func (p *sdkPort) Query(ctx context.Context, q tablestore.Query) (tablestore.Page, error) {
	hash, rng := "pk", "sk"
	in := &dynamodb.QueryInput{TableName: p.table, ScanIndexForward: aws.Bool(q.Forward)}
	if q.Index != "" {
		hash, rng = q.Index+"pk", q.Index+"sk"
		in.IndexName = aws.String(q.Index)
	}
	if q.Consistent {
		in.ConsistentRead = aws.Bool(true)
	}
	kc := expression.Key(hash).Equal(expression.Value(q.Partition))
	r, v := expression.Key(rng), q.Range.Values
	switch q.Range.Op {
	case tablestore.OpNone:
	case tablestore.OpEqual:
		kc = kc.And(r.Equal(expression.Value(v[0])))
	case tablestore.OpLess:
		kc = kc.And(r.LessThan(expression.Value(v[0])))
	case tablestore.OpLessEqual:
		kc = kc.And(r.LessThanEqual(expression.Value(v[0])))
	case tablestore.OpGreater:
		kc = kc.And(r.GreaterThan(expression.Value(v[0])))
	case tablestore.OpGreaterEqual:
		kc = kc.And(r.GreaterThanEqual(expression.Value(v[0])))
	case tablestore.OpBetween:
		kc = kc.And(r.Between(expression.Value(v[0]), expression.Value(v[1])))
	case tablestore.OpBeginsWith:
		kc = kc.And(r.BeginsWith(v[0]))
	default:
		return tablestore.Page{}, fmt.Errorf("tablestore: a range of form %d", q.Range.Op)
	}
	b := expression.NewBuilder().WithKeyCondition(kc)
	if q.Filter.Op != tablestore.OpNone {
		b = b.WithFilter(condBuilder(q.Filter))
	}
	if len(q.Names) > 0 {
		names := make([]expression.NameBuilder, len(q.Names))
		for i, n := range q.Names {
			names[i] = expression.Name(n)
		}
		b = b.WithProjection(expression.NamesList(names[0], names[1:]...))
	}
	e, err := b.Build()
	if err != nil {
		return tablestore.Page{}, err
	}
	in.KeyConditionExpression, in.FilterExpression, in.ProjectionExpression = e.KeyCondition(), e.Filter(), e.Projection()
	in.ExpressionAttributeNames, in.ExpressionAttributeValues = e.Names(), e.Values()
	if q.Limit > 0 {
		in.Limit = aws.Int32(int32(q.Limit))
	}
	in.ExclusiveStartKey = ToAV(q.After)
	out, err := p.t.Query(ctx, in)
	if err != nil {
		return tablestore.Page{}, sdkErr(err)
	}
	items, err := itemsOf(out.Items)
	if err != nil {
		return tablestore.Page{}, err
	}
	last, err := fromAVMap(out.LastEvaluatedKey)
	return tablestore.Page{Items: items, Last: last, Scanned: int(out.ScannedCount)}, err
}

func (p *sdkPort) Write(ctx context.Context, w tablestore.Write, returnNew bool) (tablestore.Item, error) {
	it, err := p.item(w)
	if err != nil {
		return nil, err
	}
	var attrs map[string]types.AttributeValue
	switch {
	case it.Put != nil:
		x := it.Put
		_, err = p.t.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: p.table, Item: x.Item, ConditionExpression: x.ConditionExpression,
			ExpressionAttributeNames: x.ExpressionAttributeNames, ExpressionAttributeValues: x.ExpressionAttributeValues,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailure(x.ReturnValuesOnConditionCheckFailure),
		})
	case it.Delete != nil:
		x := it.Delete
		_, err = p.t.DeleteItem(ctx, &dynamodb.DeleteItemInput{
			TableName: p.table, Key: x.Key, ConditionExpression: x.ConditionExpression,
			ExpressionAttributeNames: x.ExpressionAttributeNames, ExpressionAttributeValues: x.ExpressionAttributeValues,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailure(x.ReturnValuesOnConditionCheckFailure),
		})
	case it.Update != nil:
		x := it.Update
		in := &dynamodb.UpdateItemInput{
			TableName: p.table, Key: x.Key, UpdateExpression: x.UpdateExpression, ConditionExpression: x.ConditionExpression,
			ExpressionAttributeNames: x.ExpressionAttributeNames, ExpressionAttributeValues: x.ExpressionAttributeValues,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailure(x.ReturnValuesOnConditionCheckFailure),
		}
		if returnNew {
			in.ReturnValues = types.ReturnValueAllNew
		}
		var out *dynamodb.UpdateItemOutput
		if out, err = p.t.UpdateItem(ctx, in); err == nil {
			attrs = out.Attributes
		}
	default:
		return nil, errors.New("tablestore: a condition check alone")
	}
	if err != nil {
		return nil, sdkErr(err)
	}
	return fromAVMap(attrs)
}

func (p *sdkPort) Transact(ctx context.Context, ws []tablestore.Write) error {
	items, err := p.items(ws)
	if err != nil {
		return err
	}
	_, err = p.t.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	return sdkErr(err)
}

func (p *sdkPort) items(ws []tablestore.Write) ([]types.TransactWriteItem, error) {
	items := make([]types.TransactWriteItem, len(ws))
	for i, w := range ws {
		var err error
		if items[i], err = p.item(w); err != nil {
			return nil, err
		}
	}
	return items, nil
}

// item translates w to the SDK's.
func (p *sdkPort) item(w tablestore.Write) (types.TransactWriteItem, error) {
	b := expression.NewBuilder()
	hasCond := w.If.Op != tablestore.OpNone
	if hasCond {
		b = b.WithCondition(condBuilder(w.If))
	}
	if w.Kind == tablestore.WriteUpdate {
		b = b.WithUpdate(updateBuilder(w.Update))
	}
	var e expression.Expression
	if hasCond || w.Kind == tablestore.WriteUpdate {
		var err error
		if e, err = b.Build(); err != nil {
			return types.TransactWriteItem{}, err
		}
	}
	rv := types.ReturnValuesOnConditionCheckFailureNone
	if w.ReturnOld {
		rv = types.ReturnValuesOnConditionCheckFailureAllOld
	}
	switch w.Kind {
	case tablestore.WritePut:
		return types.TransactWriteItem{Put: &types.Put{
			TableName: p.table, Item: ToAV(w.Item), ConditionExpression: e.Condition(),
			ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(), ReturnValuesOnConditionCheckFailure: rv,
		}}, nil
	case tablestore.WriteUpdate:
		return types.TransactWriteItem{Update: &types.Update{
			TableName: p.table, Key: keyAV(w.Key), UpdateExpression: e.Update(), ConditionExpression: e.Condition(),
			ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(), ReturnValuesOnConditionCheckFailure: rv,
		}}, nil
	case tablestore.WriteDelete:
		return types.TransactWriteItem{Delete: &types.Delete{
			TableName: p.table, Key: keyAV(w.Key), ConditionExpression: e.Condition(),
			ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(), ReturnValuesOnConditionCheckFailure: rv,
		}}, nil
	case tablestore.WriteCheck:
		return types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
			TableName: p.table, Key: keyAV(w.Key), ConditionExpression: e.Condition(),
			ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(), ReturnValuesOnConditionCheckFailure: rv,
		}}, nil
	}
	return types.TransactWriteItem{}, fmt.Errorf("tablestore: a write of kind %d", w.Kind)
}

func operand(v tablestore.Value) expression.ValueBuilder { return expression.Value(toAV(v)) }

// condBuilder translates c, which is not the zero tablestore.Cond.
func condBuilder(c tablestore.Cond) expression.ConditionBuilder {
	n := expression.Name(c.Name)
	switch c.Op {
	case tablestore.OpExists:
		return expression.AttributeExists(n)
	case tablestore.OpNotExists:
		return expression.AttributeNotExists(n)
	case tablestore.OpEqual:
		return n.Equal(operand(c.Values[0]))
	case tablestore.OpNotEqual:
		return n.NotEqual(operand(c.Values[0]))
	case tablestore.OpLess:
		return n.LessThan(operand(c.Values[0]))
	case tablestore.OpLessEqual:
		return n.LessThanEqual(operand(c.Values[0]))
	case tablestore.OpGreater:
		return n.GreaterThan(operand(c.Values[0]))
	case tablestore.OpGreaterEqual:
		return n.GreaterThanEqual(operand(c.Values[0]))
	case tablestore.OpBetween:
		return n.Between(operand(c.Values[0]), operand(c.Values[1]))
	case tablestore.OpBeginsWith:
		return n.BeginsWith(string(c.Values[0].(tablestore.S)))
	case tablestore.OpIn:
		rest := make([]expression.OperandBuilder, len(c.Values)-1)
		for i, v := range c.Values[1:] {
			rest[i] = operand(v)
		}
		return n.In(operand(c.Values[0]), rest...)
	case tablestore.OpAnd, tablestore.OpOr:
		subs := make([]expression.ConditionBuilder, len(c.Conds))
		for i, sub := range c.Conds {
			subs[i] = condBuilder(sub)
		}
		if len(subs) == 1 {
			return subs[0]
		}
		if c.Op == tablestore.OpAnd {
			return expression.And(subs[0], subs[1], subs[2:]...)
		}
		return expression.Or(subs[0], subs[1], subs[2:]...)
	case tablestore.OpNot:
		return expression.Not(condBuilder(c.Conds[0]))
	}
	panic(fmt.Sprintf("tablestore: a condition of form %d", c.Op))
}

func updateBuilder(u tablestore.Update) expression.UpdateBuilder {
	var b expression.UpdateBuilder
	for _, a := range u {
		n := expression.Name(a.Name)
		switch a.Kind {
		case tablestore.ActSet:
			b = b.Set(n, operand(a.Value))
		case tablestore.ActRemove:
			b = b.Remove(n)
		case tablestore.ActAdd:
			if a.Start == 0 {
				b = b.Add(n, operand(a.Value))
			} else {
				b = b.Set(n, expression.Plus(expression.IfNotExists(n, operand(a.Start)), operand(a.Value)))
			}
		}
	}
	return b
}

// sdkErr translates an error of the SDK to the port's.
func sdkErr(err error) error {
	if err == nil {
		return nil
	}
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		old, _ := fromAVMap(ccf.Item)
		return &tablestore.ConditionFailedError{Old: old}
	}
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) {
		ce := &tablestore.CanceledError{Reasons: make([]tablestore.Reason, len(tce.CancellationReasons)), Old: make([]tablestore.Item, len(tce.CancellationReasons)), Cause: err}
		for i, r := range tce.CancellationReasons {
			switch aws.ToString(r.Code) {
			case "", reasonNone:
			case reasonConditionalCheck:
				ce.Reasons[i] = tablestore.ReasonConditionFailed
				ce.Old[i], _ = fromAVMap(r.Item)
			case reasonTransactionConflict:
				ce.Reasons[i] = tablestore.ReasonConflict
			case reasonThrottling, reasonProvisionedThroughput, reasonRequestLimit:
				ce.Reasons[i] = tablestore.ReasonThrottled
			default:
				return err
			}
		}
		return ce
	}
	var conflictErr *types.TransactionConflictException
	if errors.As(err, &conflictErr) {
		return fmt.Errorf("%w: %w", tablestore.ErrConflict, err)
	}
	if retryable(err) {
		return fmt.Errorf("%w: %w", tablestore.ErrUnavailable, err)
	}
	return err
}

// FromAV returns the tablestore.Item of av, as the SDK holds it.
func FromAV(av map[string]types.AttributeValue) (tablestore.Item, error) {
	return fromAVMap(av)
}

func fromAVMap(av map[string]types.AttributeValue) (tablestore.Item, error) {
	if av == nil {
		return nil, nil
	}
	it := make(tablestore.Item, len(av))
	for name, v := range av {
		x, err := fromAV(v)
		if err != nil {
			return nil, fmt.Errorf("attribute %q: %w", name, err)
		}
		it[name] = x
	}
	return it, nil
}

func fromAV(av types.AttributeValue) (tablestore.Value, error) {
	switch v := av.(type) {
	case *types.AttributeValueMemberS:
		return tablestore.S(v.Value), nil
	case *types.AttributeValueMemberN:
		n, err := strconv.ParseInt(v.Value, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("number %q is not an integer", v.Value)
		}
		return tablestore.N(n), nil
	case *types.AttributeValueMemberB:
		return tablestore.B(v.Value), nil
	case *types.AttributeValueMemberBOOL:
		return tablestore.Bool(v.Value), nil
	case *types.AttributeValueMemberNULL:
		return tablestore.Null{}, nil
	case *types.AttributeValueMemberL:
		l := make(tablestore.L, len(v.Value))
		for i, x := range v.Value {
			var err error
			if l[i], err = fromAV(x); err != nil {
				return nil, err
			}
		}
		return l, nil
	case *types.AttributeValueMemberM:
		m, err := fromAVMap(v.Value)
		return tablestore.M(m), err
	}
	return nil, fmt.Errorf("a value of type %T, which no item of Latchkey holds", av)
}

// ToAV returns item as the SDK holds it.
func ToAV(item tablestore.Item) map[string]types.AttributeValue {
	if item == nil {
		return nil
	}
	av := make(map[string]types.AttributeValue, len(item))
	for name, v := range item {
		av[name] = toAV(v)
	}
	return av
}

func toAV(v tablestore.Value) types.AttributeValue {
	switch v := v.(type) {
	case tablestore.S:
		return &types.AttributeValueMemberS{Value: string(v)}
	case tablestore.N:
		return &types.AttributeValueMemberN{Value: strconv.FormatInt(int64(v), 10)}
	case tablestore.B:
		return &types.AttributeValueMemberB{Value: v}
	case tablestore.Bool:
		return &types.AttributeValueMemberBOOL{Value: bool(v)}
	case tablestore.L:
		l := make([]types.AttributeValue, len(v))
		for i, x := range v {
			l[i] = toAV(x)
		}
		return &types.AttributeValueMemberL{Value: l}
	case tablestore.M:
		return &types.AttributeValueMemberM{Value: ToAV(tablestore.Item(v))}
	}
	return &types.AttributeValueMemberNULL{Value: true}
}

func retryable(err error) bool {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		if throttleCodes[apiErr.ErrorCode()] || apiErr.ErrorFault() == smithy.FaultServer {
			return true
		}
	}
	var respErr *awshttp.ResponseError
	if errors.As(err, &respErr) && respErr.HTTPStatusCode() >= 500 {
		return true
	}
	var sendErr *smithyhttp.RequestSendError
	return errors.As(err, &sendErr)
}

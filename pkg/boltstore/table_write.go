package boltstore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	bolt "go.etcd.io/bbolt"
)

// A write is prepared (validated, its expressions parsed and its
// placeholders resolved) before its transaction, so that a request
// DynamoDB refuses outright is refused without touching the file, and
// then run inside the transaction by apply.
type writeOp struct {
	kind      byte // 'P' put, 'U' update, 'D' delete, 'C' condition check
	key       []byte
	keyItem   map[string]types.AttributeValue // the key attributes (for an update that creates)
	item      map[string]types.AttributeValue // a put's item
	upd       *update
	cond      *cond
	env       *env
	returnOld bool // ReturnValuesOnConditionCheckFailure ALL_OLD
}

// outcome is what apply found: the item before and after (nil when there
// is none), the attributes an update wrote, and whether the condition
// failed. err is an error of the item's values (a ValidationException),
// not of the file.
type outcome struct {
	old, next map[string]types.AttributeValue
	data      []byte
	written   []string
	failed    bool
	err       error
}

func (t *Table) prepare(kind byte, key map[string]types.AttributeValue, item map[string]types.AttributeValue,
	updateExpr, condExpr *string, names map[string]string, values map[string]types.AttributeValue,
	rvoccf types.ReturnValuesOnConditionCheckFailure) (*writeOp, error) {
	op := &writeOp{kind: kind}
	switch rvoccf {
	case "", types.ReturnValuesOnConditionCheckFailureNone:
	case types.ReturnValuesOnConditionCheckFailureAllOld:
		op.returnOld = true
	default:
		return nil, validation("1 validation error detected: Value '%s' at 'returnValuesOnConditionCheckFailure' failed to satisfy constraint: Member must satisfy enum value set: [ALL_OLD, NONE]", rvoccf)
	}
	var err error
	if kind == 'P' {
		if item, err = normalizeItem(item); err != nil {
			return nil, err
		}
		if op.key, err = t.itemKey(item); err != nil {
			return nil, err
		}
		op.item = item
	} else {
		if op.key, err = t.appendTableKey(nil, key); err != nil {
			return nil, err
		}
		op.keyItem = key
	}
	if values, err = normalizeValues(values); err != nil {
		return nil, err
	}
	op.env = newEnv(names, values)
	if updateExpr != nil {
		if op.upd, err = parseUpdate(*updateExpr); err != nil {
			return nil, err
		}
		if err := op.env.resolveUpdate(op.upd); err != nil {
			return nil, err
		}
		if err := op.env.checkUpdate(op.upd, t.keys.names()); err != nil {
			return nil, err
		}
	} else if kind == 'U' {
		return nil, validation("UpdateExpression is required by this table (AttributeUpdates is not supported)")
	}
	if condExpr != nil {
		if op.cond, err = parseCondition(*condExpr, "ConditionExpression"); err != nil {
			return nil, err
		}
		if err := op.env.resolveCond(op.cond); err != nil {
			return nil, err
		}
	} else if kind == 'C' {
		return nil, validation("1 validation error detected: Value null at 'conditionExpression' failed to satisfy constraint: Member must not be null")
	} else if len(values) > 0 && updateExpr == nil {
		return nil, validation("ExpressionAttributeValues can only be specified when using expressions: ConditionExpression is null")
	}
	if err := op.env.checkUnused(); err != nil {
		return nil, err
	}
	return op, nil
}

// apply evaluates op in tx: its condition on the item as it is, then the
// item it would leave. It writes nothing (see commit).
func (t *Table) apply(tx *bolt.Tx, op *writeOp) (outcome, error) {
	var o outcome
	old, err := getItem(tx, op.key)
	if err != nil {
		return o, err
	}
	o.old = old
	if op.cond != nil {
		ok, err := op.env.match(op.cond, old)
		if err != nil {
			o.err = err
			return o, nil
		}
		if !ok {
			o.failed = true
			return o, nil
		}
	}
	switch op.kind {
	case 'C':
		return o, nil
	case 'D':
		return o, nil
	case 'P':
		o.next = op.item
	case 'U':
		base := old
		if base == nil {
			base = op.keyItem
		}
		next, written, err := op.env.applyUpdate(op.upd, base)
		if err != nil {
			o.err = err
			return o, nil
		}
		next, err = normalizeItem(next)
		if err == nil {
			_, err = t.itemKey(next)
		}
		if err != nil {
			o.err = err
			return o, nil
		}
		o.next, o.written = next, written
	}
	if o.data, err = encodeItem(o.next); err != nil {
		o.err = err
	}
	return o, nil
}

// commit writes what apply found.
func (t *Table) commit(tx *bolt.Tx, op *writeOp, o outcome) error {
	switch op.kind {
	case 'C':
		return nil
	case 'D':
		if o.old == nil {
			return nil
		}
		return t.store(tx, op.key, o.old, nil, nil)
	}
	return t.store(tx, op.key, o.old, o.next, o.data)
}

// single runs one prepared write.
func (t *Table) single(ctx context.Context, op *writeOp) (outcome, error) {
	var o outcome
	err := t.write(ctx, func(tx *bolt.Tx) (err error) {
		if o, err = t.apply(tx, op); err != nil || o.failed || o.err != nil {
			return err
		}
		return t.commit(tx, op, o)
	})
	if err != nil {
		return o, err
	}
	if o.err != nil {
		return o, apiErr(o.err)
	}
	if o.failed {
		return o, conditionFailed(o.old, op.returnOld)
	}
	return o, nil
}

func allOldOnly(rv types.ReturnValue) (bool, error) {
	switch rv {
	case "", types.ReturnValueNone:
		return false, nil
	case types.ReturnValueAllOld:
		return true, nil
	}
	return false, validation("ReturnValues can only be ALL_OLD or NONE")
}

// PutItem writes an item in place of any with its key, if the condition
// holds. ReturnValues NONE or ALL_OLD; ReturnValuesOnConditionCheckFailure
// ALL_OLD puts the item on the ConditionalCheckFailedException.
func (t *Table) PutItem(ctx context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	old, err := t.putOrDelete(ctx, 'P', in.TableName, nil, in.Item, in.Expected != nil || in.ConditionalOperator != "",
		in.ReturnValues, in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues, in.ReturnValuesOnConditionCheckFailure)
	if err != nil {
		return nil, err
	}
	return &dynamodb.PutItemOutput{Attributes: old}, nil
}

// DeleteItem deletes the item with a key, if the condition holds; deleting
// no item is no error. ReturnValues NONE or ALL_OLD.
func (t *Table) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	old, err := t.putOrDelete(ctx, 'D', in.TableName, in.Key, nil, in.Expected != nil || in.ConditionalOperator != "",
		in.ReturnValues, in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues, in.ReturnValuesOnConditionCheckFailure)
	if err != nil {
		return nil, err
	}
	return &dynamodb.DeleteItemOutput{Attributes: old}, nil
}

// putOrDelete is PutItem ('P', with item) and DeleteItem ('D', with key),
// whose inputs differ only in what names the item: it runs the write
// alone and returns the item it replaced or deleted when ReturnValues is
// ALL_OLD, nil otherwise. legacy says the input has Expected or
// ConditionalOperator, which this table does not support.
func (t *Table) putOrDelete(ctx context.Context, kind byte, table *string, key, item map[string]types.AttributeValue, legacy bool,
	rv types.ReturnValue, condExpr *string, names map[string]string, values map[string]types.AttributeValue,
	rvoccf types.ReturnValuesOnConditionCheckFailure) (map[string]types.AttributeValue, error) {
	if err := t.checkTable(table); err != nil {
		return nil, err
	}
	if legacy {
		return nil, validation("Expected and ConditionalOperator are not supported by this table; use ConditionExpression")
	}
	returnOld, err := allOldOnly(rv)
	if err != nil {
		return nil, err
	}
	op, err := t.prepare(kind, key, item, nil, condExpr, names, values, rvoccf)
	if err != nil {
		return nil, apiErr(err)
	}
	o, err := t.single(ctx, op)
	if err != nil || !returnOld {
		return nil, err
	}
	return o.old, nil
}

// UpdateItem applies an update expression to the item with a key,
// creating it if there is none, if the condition holds. ReturnValues may
// be any of NONE, ALL_OLD, ALL_NEW, UPDATED_OLD and UPDATED_NEW.
func (t *Table) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if err := t.checkTable(in.TableName); err != nil {
		return nil, err
	}
	if in.Expected != nil || in.ConditionalOperator != "" || in.AttributeUpdates != nil {
		return nil, validation("Expected, ConditionalOperator and AttributeUpdates are not supported by this table; use expressions")
	}
	switch in.ReturnValues {
	case "", types.ReturnValueNone, types.ReturnValueAllOld, types.ReturnValueAllNew, types.ReturnValueUpdatedOld, types.ReturnValueUpdatedNew:
	default:
		return nil, validation("1 validation error detected: Value '%s' at 'returnValues' failed to satisfy constraint: Member must satisfy enum value set: [ALL_NEW, UPDATED_OLD, ALL_OLD, NONE, UPDATED_NEW]", in.ReturnValues)
	}
	op, err := t.prepare('U', in.Key, nil, in.UpdateExpression, in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues, in.ReturnValuesOnConditionCheckFailure)
	if err != nil {
		return nil, apiErr(err)
	}
	o, err := t.single(ctx, op)
	if err != nil {
		return nil, err
	}
	out := &dynamodb.UpdateItemOutput{}
	switch in.ReturnValues {
	case types.ReturnValueAllOld:
		out.Attributes = o.old
	case types.ReturnValueAllNew:
		out.Attributes = o.next
	case types.ReturnValueUpdatedOld:
		out.Attributes = pick(o.old, o.written)
	case types.ReturnValueUpdatedNew:
		out.Attributes = pick(o.next, o.written)
	}
	return out, nil
}

// pick is the attributes names of item that it has; nil if none.
func pick(item map[string]types.AttributeValue, names []string) map[string]types.AttributeValue {
	var out map[string]types.AttributeValue
	for _, n := range names {
		if v, ok := item[n]; ok {
			if out == nil {
				out = map[string]types.AttributeValue{}
			}
			out[n] = v
		}
	}
	return out
}

// Cancellation reason codes of TransactionCanceledException.
const (
	reasonNone            = "None"
	reasonConditionFailed = "ConditionalCheckFailed"
	reasonValidation      = "ValidationError"
)

// TransactWriteItems runs up to 100 Put, Update, Delete and ConditionCheck
// actions on distinct items all or nothing, in one bbolt transaction. When
// a condition fails (or an update cannot apply to its item) nothing is
// written and the answer is a TransactionCanceledException with one reason
// per action, in order: ConditionalCheckFailed (with the item, if the
// action asked for ALL_OLD), ValidationError, or None. Two actions on one
// item are a ValidationException, as in DynamoDB.
func (t *Table) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, _ ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	return t.transactWrite(ctx, in, nil)
}

// transactWrite is TransactWriteItems, with the items more returns, if
// more is not nil, made in the write transaction and appended (see
// TransactWriteItemsWith).
func (t *Table) transactWrite(ctx context.Context, in *dynamodb.TransactWriteItemsInput, more func() ([]types.TransactWriteItem, error)) (*dynamodb.TransactWriteItemsOutput, error) {
	if n := len(in.TransactItems); n == 0 || n > maxTransactItems {
		return nil, validation("1 validation error detected: Value at 'transactItems' failed to satisfy constraint: Member must have length less than or equal to 100 and greater than or equal to 1")
	}
	if in.ClientRequestToken != nil {
		return nil, validation("ClientRequestToken is not supported by this table")
	}
	ops, err := t.prepareTransact(in.TransactItems, nil)
	if err != nil {
		return nil, err
	}
	var reasons []types.CancellationReason
	err = t.write(ctx, func(tx *bolt.Tx) error {
		reasons = nil
		all := ops
		if more != nil {
			items, err := more()
			if err != nil {
				return err
			}
			if len(ops)+len(items) > maxTransactItems {
				return validation("1 validation error detected: Value at 'transactItems' failed to satisfy constraint: Member must have length less than or equal to 100 and greater than or equal to 1")
			}
			if all, err = t.prepareTransact(items, ops); err != nil {
				return err
			}
		}
		r, err := t.runTransact(tx, all)
		reasons = r
		return err
	})
	if err != nil {
		return nil, err
	}
	if reasons != nil {
		codes := make([]string, len(reasons))
		for i, r := range reasons {
			codes[i] = *r.Code
		}
		return nil, &types.TransactionCanceledException{
			Message:             aws.String(fmt.Sprintf("Transaction cancelled, please refer cancellation reasons for specific reasons [%s]", strings.Join(codes, ", "))),
			CancellationReasons: reasons,
		}
	}
	return &dynamodb.TransactWriteItemsOutput{}, nil
}

// prepareTransact returns before with the operations of items appended,
// refusing one that touches an item another touches.
func (t *Table) prepareTransact(items []types.TransactWriteItem, before []*writeOp) ([]*writeOp, error) {
	ops := append(make([]*writeOp, 0, len(before)+len(items)), before...)
	seen := make(map[string]bool, cap(ops))
	for _, op := range before {
		seen[string(op.key)] = true
	}
	for _, it := range items {
		var (
			op  *writeOp
			err error
		)
		switch {
		case it.Put != nil && it.Update == nil && it.Delete == nil && it.ConditionCheck == nil:
			p := it.Put
			if err := t.checkTable(p.TableName); err != nil {
				return nil, err
			}
			op, err = t.prepare('P', nil, p.Item, nil, p.ConditionExpression, p.ExpressionAttributeNames, p.ExpressionAttributeValues, p.ReturnValuesOnConditionCheckFailure)
		case it.Update != nil && it.Put == nil && it.Delete == nil && it.ConditionCheck == nil:
			u := it.Update
			if err := t.checkTable(u.TableName); err != nil {
				return nil, err
			}
			op, err = t.prepare('U', u.Key, nil, u.UpdateExpression, u.ConditionExpression, u.ExpressionAttributeNames, u.ExpressionAttributeValues, u.ReturnValuesOnConditionCheckFailure)
		case it.Delete != nil && it.Put == nil && it.Update == nil && it.ConditionCheck == nil:
			d := it.Delete
			if err := t.checkTable(d.TableName); err != nil {
				return nil, err
			}
			op, err = t.prepare('D', d.Key, nil, nil, d.ConditionExpression, d.ExpressionAttributeNames, d.ExpressionAttributeValues, d.ReturnValuesOnConditionCheckFailure)
		case it.ConditionCheck != nil && it.Put == nil && it.Update == nil && it.Delete == nil:
			c := it.ConditionCheck
			if err := t.checkTable(c.TableName); err != nil {
				return nil, err
			}
			op, err = t.prepare('C', c.Key, nil, nil, c.ConditionExpression, c.ExpressionAttributeNames, c.ExpressionAttributeValues, c.ReturnValuesOnConditionCheckFailure)
		default:
			return nil, validation("TransactItems can only contain one of Check, Put, Update or Delete")
		}
		if err != nil {
			return nil, apiErr(err)
		}
		if seen[string(op.key)] {
			return nil, validation("Transaction request cannot include multiple operations on one item")
		}
		seen[string(op.key)] = true
		ops = append(ops, op)
	}
	return ops, nil
}

// runTransact applies ops in tx: every condition is evaluated first, and
// either all are met and every operation is committed, or none is and the
// reasons of the cancellation are returned.
func (t *Table) runTransact(tx *bolt.Tx, ops []*writeOp) ([]types.CancellationReason, error) {
	outs := make([]outcome, len(ops))
	cancelled := false
	for i, op := range ops {
		o, err := t.apply(tx, op)
		if err != nil {
			return nil, err
		}
		outs[i] = o
		cancelled = cancelled || o.failed || o.err != nil
	}
	if cancelled {
		reasons := make([]types.CancellationReason, len(ops))
		for i, o := range outs {
			switch {
			case o.failed:
				reasons[i] = types.CancellationReason{Code: aws.String(reasonConditionFailed), Message: aws.String("The conditional request failed")}
				if ops[i].returnOld {
					reasons[i].Item = o.old
				}
			case o.err != nil:
				reasons[i] = types.CancellationReason{Code: aws.String(reasonValidation), Message: aws.String(validationMessage(o.err))}
			default:
				reasons[i] = types.CancellationReason{Code: aws.String(reasonNone)}
			}
		}
		return reasons, nil
	}
	for i, op := range ops {
		if err := t.commit(tx, op, outs[i]); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

func validationMessage(err error) string {
	var e smithy.APIError
	if errors.As(apiErr(err), &e) {
		return e.ErrorMessage()
	}
	return err.Error()
}

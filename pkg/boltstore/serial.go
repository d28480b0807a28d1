package boltstore

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// TransactWriteItemsWith is TransactWriteItems with more items, which more
// makes inside bbolt's one writer, in the write transaction, and which are
// appended to in's. Transactions commit in the order their more is called,
// and concurrent ones still share an fsync (DB.Batch): tablestore makes
// the ids of a transaction's events there (tablestore.SerialTable), so ids
// are in commit order with no lock of its own. more may be called more
// than once (a batch that failed is run again one by one); each call's
// items replace the last's.
func (t *Table) TransactWriteItemsWith(ctx context.Context, in *dynamodb.TransactWriteItemsInput, more func() ([]types.TransactWriteItem, error)) (*dynamodb.TransactWriteItemsOutput, error) {
	return t.transactWrite(ctx, in, more)
}

package tablestore

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"latchkey/pkg/account"
)

// rateLimitItem is a rate limit as the key's items hold it.
type rateLimitItem struct {
	Name     string `dynamodbav:"name"`
	Limit    int64  `dynamodbav:"limit"`
	PeriodMS int64  `dynamodbav:"period_ms"`
}

// creditsItem is a key's credits as its items hold them: as set, and
// when (the usage record counts from there).
type creditsItem struct {
	Remaining      int64     `dynamodbav:"remaining"`
	SetAt          time.Time `dynamodbav:"set_at"`
	Set            string    `dynamodbav:"set"`
	RefillAmount   int64     `dynamodbav:"refill_amount,omitempty"`
	RefillInterval string    `dynamodbav:"refill_interval,omitempty"`
}

func rateLimitItems(ls []account.RateLimit) []rateLimitItem {
	var out []rateLimitItem
	for _, l := range ls {
		out = append(out, rateLimitItem{Name: l.Name, Limit: l.Limit, PeriodMS: l.Period.Milliseconds()})
	}
	return out
}

func newCreditsItem(c *account.Credits) *creditsItem {
	if c == nil {
		return nil
	}
	it := &creditsItem{Remaining: c.Remaining, SetAt: c.SetAt.UTC(), Set: c.Set}
	if c.Refill != nil {
		it.RefillAmount, it.RefillInterval = c.Refill.Amount, c.Refill.Interval
	}
	return it
}

// limits returns the key's rate limits and credits.
func (it apiKeyItem) limits() ([]account.RateLimit, *account.Credits) {
	var ls []account.RateLimit
	for _, l := range it.RateLimits {
		ls = append(ls, account.RateLimit{Name: l.Name, Limit: l.Limit, Period: time.Duration(l.PeriodMS) * time.Millisecond})
	}
	if it.Credits == nil {
		return ls, nil
	}
	c := &account.Credits{Remaining: it.Credits.Remaining, SetAt: it.Credits.SetAt, Set: it.Credits.Set}
	if it.Credits.RefillInterval != "" {
		c.Refill = &account.CreditRefill{Amount: it.Credits.RefillAmount, Interval: it.Credits.RefillInterval}
	}
	return ls, c
}

// The counters of a usage record are its attributes whose names start so
// (account names them); the others are its key and bookkeeping.
const (
	counterRate   = "r:"
	counterCredit = "c:"
)

// ChangeKeyUsage is one UpdateItem of the record's item, in a KEYLIMIT#
// partition of its own (see usageUpdate): DynamoDB counts and checks in one
// atomic write, and concurrent uses never pass a bound. The item comes
// back either way (ALL_NEW, or ALL_OLD with the failure): one request,
// whatever the answer.
func (s *Store) ChangeKeyUsage(ctx context.Context, keyID string, shard int, c account.UsageChange) (map[string]int64, bool, error) {
	u, err := s.usageUpdate(keyID, shard, c)
	if err != nil {
		return nil, false, err
	}
	var out *dynamodb.UpdateItemOutput
	err = s.retryConflicts(ctx, func() error {
		var err error
		out, err = s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: s.table, Key: u.Key, UpdateExpression: u.UpdateExpression, ConditionExpression: u.ConditionExpression,
			ExpressionAttributeNames: u.ExpressionAttributeNames, ExpressionAttributeValues: u.ExpressionAttributeValues,
			ReturnValues:                        types.ReturnValueAllNew,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		return conflict(err)
	})
	if err == nil {
		counters, err := counters(out.Attributes)
		return counters, true, err
	}
	ccf, ok := conditionFailed(err)
	if !ok {
		return nil, false, storeErr(err)
	}
	old, err := counters(ccf.Item)
	return old, false, err
}

// ChangeKeysUsage is one TransactWriteItems of the records' items, each
// the update ChangeKeyUsage makes: on AWS 2 WRU an item (a transaction
// writes twice), and a use of a key refused by any of them counts in
// none. The items that fail their condition come back with the
// cancellation (ALL_OLD); the transaction returns none of the others, so
// those asked for (ReadAfter) are read after it with one strongly
// consistent BatchGetItem. Transactions that meet on a record are
// retried as other conflicts are (retryConflicts).
func (s *Store) ChangeKeysUsage(ctx context.Context, changes []account.KeyUsageChange) ([]map[string]int64, bool, error) {
	items := make([]types.TransactWriteItem, len(changes))
	for i, c := range changes {
		u, err := s.usageUpdate(c.KeyID, c.Shard, c.UsageChange)
		if err != nil {
			return nil, false, err
		}
		u.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
		items[i] = types.TransactWriteItem{Update: u}
	}
	out := make([]map[string]int64, len(changes))
	refused := false
	err := s.retryConflicts(ctx, func() error {
		_, err := s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
		if err == nil {
			return nil
		}
		var tce *types.TransactionCanceledException
		if errors.As(err, &tce) {
			for i, r := range tce.CancellationReasons {
				if aws.ToString(r.Code) != reasonConditionalCheck || i >= len(out) {
					continue
				}
				var cerr error
				if out[i], cerr = counters(r.Item); cerr != nil {
					return cerr
				}
				refused = true
			}
			if refused {
				return nil
			}
		}
		if _, mapped := cancellation(err, nil); mapped != nil {
			return mapped
		}
		return storeErr(err)
	})
	if err != nil || refused {
		return out, false, err
	}
	var read []key
	for _, c := range changes {
		if c.ReadAfter {
			read = append(read, keyLimitKey(c.KeyID, c.Shard))
		}
	}
	if len(read) == 0 {
		return out, true, nil
	}
	got, err := s.batchGetWith(ctx, read, true)
	if err != nil {
		return nil, false, err
	}
	for _, av := range got {
		var it struct {
			KeyID string `dynamodbav:"key_id"`
		}
		if err := attributevalue.UnmarshalMap(av, &it); err != nil {
			return nil, false, account.Internal(err)
		}
		for i, c := range changes {
			if c.ReadAfter && c.KeyID == it.KeyID {
				if out[i], err = counters(av); err != nil {
					return nil, false, err
				}
			}
		}
	}
	for i, c := range changes {
		if c.ReadAfter && out[i] == nil {
			out[i] = map[string]int64{} // gone since, by TTL
		}
	}
	return out, true, nil
}

// usageUpdate is the update of a usage record that makes c: each step is
// SET n = if_not_exists(n, start) + delta on condition that n is within
// its bounds less delta (or does not exist, where start + delta is within
// them).
func (s *Store) usageUpdate(keyID string, shard int, c account.UsageChange) (*types.Update, error) {
	av, err := marshalKey(keyLimitKey(keyID, shard))
	if err != nil {
		return nil, err
	}
	upd := expression.Set(expression.Name("key_id"), expression.Value(keyID))
	if !c.ExpiresAt.IsZero() {
		upd = upd.Set(expression.Name(TTLAttribute), expression.Value(c.ExpiresAt.Unix()))
	} else {
		upd = upd.Remove(expression.Name(TTLAttribute))
	}
	var cond *expression.ConditionBuilder
	for _, st := range c.Steps {
		n := expression.Name(st.Name)
		upd = upd.Set(n, expression.Plus(expression.IfNotExists(n, expression.Value(st.Start)), expression.Value(st.Delta)))
		within := n.Between(expression.Value(st.Min-st.Delta), expression.Value(st.Max-st.Delta))
		if v := st.Start + st.Delta; v >= st.Min && v <= st.Max {
			within = expression.AttributeNotExists(n).Or(within)
		}
		if cond == nil {
			cond = &within
		} else {
			and := cond.And(within)
			cond = &and
		}
	}
	for _, name := range c.Remove {
		upd = upd.Remove(expression.Name(name))
	}
	b := expression.NewBuilder().WithUpdate(upd)
	if cond != nil {
		b = b.WithCondition(*cond)
	}
	e, err := b.Build()
	if err != nil {
		return nil, account.Internal(err)
	}
	return &types.Update{
		TableName: s.table, Key: av, UpdateExpression: e.Update(), ConditionExpression: e.Condition(),
		ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
	}, nil
}

// KeyUsage reads the records' items with strongly consistent
// BatchGetItem requests: one for a page of up to 100 keys.
func (s *Store) KeyUsage(ctx context.Context, shard int, keyIDs ...string) (map[string]map[string]int64, error) {
	ks := make([]key, len(keyIDs))
	for i, id := range keyIDs {
		ks[i] = keyLimitKey(id, shard)
	}
	read, err := s.batchGetWith(ctx, ks, true)
	if err != nil {
		return nil, err
	}
	out := make(map[string]map[string]int64, len(read))
	for _, av := range read {
		var it struct {
			KeyID string `dynamodbav:"key_id"`
		}
		if err := attributevalue.UnmarshalMap(av, &it); err != nil {
			return nil, account.Internal(err)
		}
		if out[it.KeyID], err = counters(av); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// counters returns the counters of a usage record's item.
func counters(item map[string]types.AttributeValue) (map[string]int64, error) {
	out := map[string]int64{}
	for name, v := range item {
		if !strings.HasPrefix(name, counterRate) && !strings.HasPrefix(name, counterCredit) {
			continue
		}
		var n int64
		if err := attributevalue.Unmarshal(v, &n); err != nil {
			return nil, account.Internal(err)
		}
		out[name] = n
	}
	return out, nil
}

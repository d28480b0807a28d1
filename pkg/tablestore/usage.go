package tablestore

import (
	"context"
	"strings"
	"time"

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
// partition of its own: each step is SET n = if_not_exists(n, start) +
// delta on condition that n is within its bounds less delta (or does not
// exist, where start + delta is within them), so DynamoDB counts and
// checks in one atomic write, and concurrent uses never pass a bound. The
// item comes back either way (ALL_NEW, or ALL_OLD with the failure): one
// request, whatever the answer.
func (s *Store) ChangeKeyUsage(ctx context.Context, keyID string, shard int, c account.UsageChange) (map[string]int64, bool, error) {
	av, err := marshalKey(keyLimitKey(keyID, shard))
	if err != nil {
		return nil, false, err
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
		return nil, false, account.Internal(err)
	}
	var out *dynamodb.UpdateItemOutput
	err = s.retryConflicts(ctx, func() error {
		var err error
		out, err = s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: s.table, Key: av, UpdateExpression: e.Update(), ConditionExpression: e.Condition(),
			ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
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

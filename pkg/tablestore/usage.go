package tablestore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

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
	return limitsOf(it.RateLimits, it.Credits)
}

// limitsOf returns the rate limits and credits an item holds.
func limitsOf(rls []rateLimitItem, ci *creditsItem) ([]account.RateLimit, *account.Credits) {
	var ls []account.RateLimit
	for _, l := range rls {
		ls = append(ls, account.RateLimit{Name: l.Name, Limit: l.Limit, Period: time.Duration(l.PeriodMS) * time.Millisecond})
	}
	if ci == nil {
		return ls, nil
	}
	c := &account.Credits{Remaining: ci.Remaining, SetAt: ci.SetAt, Set: ci.Set}
	if ci.RefillInterval != "" {
		c.Refill = &account.CreditRefill{Amount: ci.RefillAmount, Interval: ci.RefillInterval}
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
	var out Item
	err = s.retryConflicts(ctx, func() error {
		var err error
		out, err = s.port.Write(ctx, u, true)
		return err
	})
	if err == nil {
		counters, err := counters(out)
		return counters, true, err
	}
	ccf, ok := conditionFailed(err)
	if !ok {
		return nil, false, storeErr(err)
	}
	old, err := counters(ccf.Old)
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
	items := make([]Write, len(changes))
	for i, c := range changes {
		u, err := s.usageUpdate(c.KeyID, c.Shard, c.UsageChange)
		if err != nil {
			return nil, false, err
		}
		items[i] = u
	}
	out := make([]map[string]int64, len(changes))
	refused := false
	err := s.retryConflicts(ctx, func() error {
		err := s.port.Transact(ctx, items)
		if err == nil {
			return nil
		}
		var ce *CanceledError
		if errors.As(err, &ce) {
			for i, r := range ce.Reasons {
				if r != ReasonConditionFailed || i >= len(out) {
					continue
				}
				var cerr error
				if out[i], cerr = counters(ce.Old[i]); cerr != nil {
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
		if err := unmarshal(av, &it); err != nil {
			return nil, false, err
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
func (s *Store) usageUpdate(keyID string, shard int, c account.UsageChange) (Write, error) {
	upd := set("key_id", keyID)
	if !c.ExpiresAt.IsZero() {
		upd = upd.set(TTLAttribute, c.ExpiresAt.Unix())
	} else {
		upd = upd.remove(TTLAttribute)
	}
	var cond Cond
	for _, st := range c.Steps {
		n := attr(st.Name)
		upd = upd.add(st.Name, st.Start, st.Delta)
		within := n.Between(st.Min-st.Delta, st.Max-st.Delta)
		if v := st.Start + st.Delta; v >= st.Min && v <= st.Max {
			within = n.NotExists().Or(within)
		}
		if cond.Op == OpNone {
			cond = within
		} else {
			cond = cond.And(within)
		}
	}
	for _, name := range c.Remove {
		upd = upd.remove(name)
	}
	return Write{Kind: WriteUpdate, Key: keyLimitKey(keyID, shard), Update: upd, If: cond, ReturnOld: true}, nil
}

// KeyUsage reads the records' items with strongly consistent
// BatchGetItem requests: one for a page of up to 100 records.
func (s *Store) KeyUsage(ctx context.Context, recs ...account.UsageRecord) ([]map[string]int64, error) {
	ks := make([]key, len(recs))
	at := make(map[string]int, len(recs))
	for i, r := range recs {
		ks[i] = keyLimitKey(r.KeyID, r.Shard)
		at[ks[i].PK] = i
	}
	read, err := s.batchGetWith(ctx, ks, true)
	if err != nil {
		return nil, err
	}
	out := make([]map[string]int64, len(recs))
	for _, av := range read {
		pk, _ := av["pk"].(S)
		i, ok := at[string(pk)]
		if !ok {
			return nil, account.Internal(fmt.Errorf("tablestore: read a usage record not asked for: %q", pk))
		}
		if out[i], err = counters(av); err != nil {
			return nil, err
		}
	}
	for i := range out {
		if out[i] == nil {
			out[i] = map[string]int64{}
		}
	}
	return out, nil
}

// counters returns the counters of a usage record's item.
func counters(item Item) (map[string]int64, error) {
	out := map[string]int64{}
	for name, v := range item {
		if !strings.HasPrefix(name, counterRate) && !strings.HasPrefix(name, counterCredit) {
			continue
		}
		n, ok := v.(N)
		if !ok {
			return nil, account.Internal(fmt.Errorf("tablestore: counter %q is not a number", name))
		}
		out[name] = int64(n)
	}
	return out, nil
}

package tablestore

import (
	"context"
	"time"

	"latchkey/pkg/account"
)

// RecordAPIKeyUse writes the key's last use with one UpdateItem of its
// item in its KEYUSE# partition, on condition that the use recorded there
// is at least account.KeyUseResolution older, so that the stored value changes
// at most once a minute. When it is not, DynamoDB returns the item with the
// failure (ReturnValuesOnConditionCheckFailure), and its time comes back:
// one request either way. (A failed condition is billed as a write on AWS;
// the service calls this at most once a minute per key in each process.)
// The item expires with the key. A use recorded for a key deleted a moment
// before leaves an item that nothing reads.
func (s *Store) RecordAPIKeyUse(ctx context.Context, k account.APIKey, at time.Time) (time.Time, error) {
	ms := at.UnixMilli()
	upd := set("last_used_at", ms).
		set("key_id", k.ID)
	if !k.ExpiresAt.IsZero() {
		upd = upd.set("expire_at", k.ExpiresAt.Add(account.ExpiredKeyRetention).Unix())
	}
	cond := attr("last_used_at").NotExists().
		Or(attr("last_used_at").LessThanEqual(at.Add(-account.KeyUseResolution).UnixMilli()))
	it, err := s.update(keyUseKey(k.ID), upd, cond)
	if err != nil {
		return time.Time{}, err
	}
	it.ReturnOld = true
	err = s.retryConflicts(ctx, func() error {
		_, err := s.port.Write(ctx, it, false)
		return err
	})
	if err == nil {
		return time.UnixMilli(ms).UTC(), nil
	}
	ccf, ok := conditionFailed(err)
	if !ok {
		return time.Time{}, storeErr(err)
	}
	var old keyUseItem
	if ccf.Old != nil {
		if err := unmarshal(ccf.Old, &old); err != nil {
			return time.Time{}, err
		}
		return old.lastUsed(), nil
	}
	// An endpoint that does not return the old item: the use it holds is
	// recent, which is all the caller needs to know.
	return at, nil
}

// readKeyWithUse reads the item under the ID of the key id and its last
// use in one strongly consistent BatchGetItem, and checks the key (see
// checkKey): the item as read, and the key with DisabledAbove and
// LastUsedAt set. CodeNotFound if it is not there or not live.
func (s *Store) readKeyWithUse(ctx context.Context, id string) (apiKeyItem, account.APIKey, error) {
	it, k, _, err := s.readKeyForChange(ctx, id, false)
	return it, k, err
}

// readKeyForChange is readKeyWithUse that reads, if withFirst, copy 1 of
// the key's verify copies in the same BatchGetItem too (nil if there is
// none): what a key change writes the copies on.
func (s *Store) readKeyForChange(ctx context.Context, id string, withFirst bool) (apiKeyItem, account.APIKey, *apiKeyItem, error) {
	keys := []key{apiKeyKey(id), keyUseKey(id)}
	if withFirst {
		keys = append(keys, apiKeyCopyKey(id, 1))
	}
	read, err := s.batchGet(ctx, keys)
	if err != nil {
		return apiKeyItem{}, account.APIKey{}, nil, err
	}
	var it, first *apiKeyItem
	var use keyUseItem
	for _, av := range read {
		var k key
		if err := unmarshal(av, &k); err != nil {
			return apiKeyItem{}, account.APIKey{}, nil, err
		}
		var err error
		switch {
		case k == apiKeyKey(id):
			it = &apiKeyItem{}
			err = unmarshal(av, it)
		case k.SK == sortKey:
			first = &apiKeyItem{}
			err = unmarshal(av, first)
		case k.SK == sortKeyUse:
			err = unmarshal(av, &use)
		}
		if err != nil {
			return apiKeyItem{}, account.APIKey{}, nil, account.Internal(err)
		}
	}
	if it == nil {
		return apiKeyItem{}, account.APIKey{}, nil, account.ErrAPIKeyNotFound()
	}
	k, live, err := s.checkKey(ctx, it, nil)
	if err != nil {
		return apiKeyItem{}, account.APIKey{}, nil, err
	}
	if !live {
		return apiKeyItem{}, account.APIKey{}, nil, account.ErrAPIKeyNotFound()
	}
	k.LastUsedAt = use.lastUsed()
	return *it, k, first, nil
}

// withLastUses sets the LastUsedAt of each of keys from their KEYUSE#
// items, read with eventually consistent BatchGetItem requests (half a
// read unit each): a list is eventually consistent anyway.
func (s *Store) withLastUses(ctx context.Context, keys []account.APIKey) error {
	if len(keys) == 0 {
		return nil
	}
	ks := make([]key, len(keys))
	for i, k := range keys {
		ks[i] = keyUseKey(k.ID)
	}
	read, err := s.batchGetWith(ctx, ks, false)
	if err != nil {
		return err
	}
	last := make(map[string]time.Time, len(read))
	for _, av := range read {
		var use keyUseItem
		if err := unmarshal(av, &use); err != nil {
			return err
		}
		last[use.KeyID] = use.lastUsed()
	}
	for i := range keys {
		keys[i].LastUsedAt = last[keys[i].ID]
	}
	return nil
}

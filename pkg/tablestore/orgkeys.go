package tablestore

import (
	"context"
	"errors"
	"strings"
	"time"

	"latchkey/pkg/account"
)

// Deleting an organization deletes the API keys bound to it, with the
// rules of deleting a key: the keys below a key bound to an organization are
// bound to it too, so they are all linked in its KEYORG# partition. The
// organization is flagged deleting first (DeleteOrganization), which makes
// every key of it not live at once (checkKey reads the organization with
// the key) and refuses new keys for it (CreateAPIKey checks it in its
// transaction); then its keys go, in the transactions of its memberships
// and itself, before them. The
// organizations function runs this, and may do so: its role is allowed to
// delete, never to put or update, the items of API keys (template.yaml).

// linkedKeyIDs returns the IDs of the keys linked in partition pk (a
// KEYORG# partition), read with a strongly consistent Query of the sort
// keys alone.
func (s *Store) linkedKeyIDs(ctx context.Context, pk string) ([]string, error) {
	q := Query{
		Partition: pk, Range: Range{Op: OpBeginsWith, Values: []string{prefixKey}},
		Names: []string{"sk"}, Forward: true, Consistent: true,
	}
	var ids []string
	err := s.queryPages(ctx, q, func(items []Item) (bool, error) {
		for _, av := range items {
			sk, _ := av["sk"].(S)
			ids = append(ids, idFrom(string(sk), prefixKey))
		}
		return true, nil
	})
	return ids, err
}

// orgKeyGroups reads the keys linked to the organization orgID and returns
// the steps that delete them, one group per key, for the organization's
// cascade (DeleteOrganization): they go before its memberships and itself,
// in its transactions, so that a small organization with a few keys is
// still one transaction. A key changed since it was read (its version)
// cancels the transaction with errKeyChanged, and the cascade starts over.
func (s *Store) orgKeyGroups(ctx context.Context, orgID string) ([][]step, error) {
	ids, err := s.linkedKeyIDs(ctx, prefixKeyOrg+orgID)
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	keys := make([]key, len(ids))
	for i, id := range ids {
		keys[i] = apiKeyKey(id)
	}
	read, err := s.batchGet(ctx, keys)
	if err != nil {
		return nil, err
	}
	items := make(map[string]apiKeyItem, len(read))
	for _, av := range read {
		var it apiKeyItem
		if err := unmarshal(av, &it); err != nil {
			return nil, err
		}
		items[it.KeyID] = it
	}
	groups := make([][]step, 0, len(ids))
	for _, id := range ids {
		dels, err := s.orgKeyDeletes(orgID, id, items)
		if err != nil {
			return nil, err
		}
		g := make([]step, len(dels))
		for i, d := range dels {
			// Only the key's own item has a condition.
			g[i] = step{d, errKeyChanged, nil}
		}
		if it, ok := items[id]; ok && it.OrganizationID == orgID {
			g[0].event = &account.PendingEvent{Type: account.EventAPIKeyDeleted, Data: it.apiKey()}
		}
		groups = append(groups, g)
	}
	return groups, nil
}

// orgKeyDeletes returns the items that delete the key id of the
// organization orgID, as items holds it: the item under its ID, on
// condition that it is the version read (or gone already), its copies
// (under its hashes, and its read copies), its links and its last use. A key gone already, or one that is not the
// organization's (a link no create of this service writes), leaves only
// the link to drop.
func (s *Store) orgKeyDeletes(orgID, id string, items map[string]apiKeyItem) ([]Write, error) {
	link := keyOrgLinkKey(orgID, id)
	it, ok := items[id]
	if !ok || it.OrganizationID != orgID {
		return build(func() (Write, error) { return s.del(link, Cond{}) })
	}
	cond := condAbsent.Or(versionIs(it.Version))
	steps := []func() (Write, error){
		func() (Write, error) { return s.del(apiKeyKey(id), cond) },
		func() (Write, error) { return s.del(keyHashKey(it.Hash), Cond{}) },
		func() (Write, error) { return s.del(keyUseKey(id), Cond{}) },
	}
	if it.PreviousHash != nil {
		steps = append(steps, func() (Write, error) { return s.del(keyHashKey(it.PreviousHash), Cond{}) })
	}
	if parent := parentOf(it); parent != "" {
		steps = append(steps, func() (Write, error) { return s.del(keyLinkKey(parent, id), Cond{}) })
	}
	for _, l := range it.linkKeys() {
		steps = append(steps, func() (Write, error) { return s.del(l, Cond{}) })
	}
	dels, err := build(steps...)
	if err != nil {
		return nil, err
	}
	// The read copies go: the organizations role may delete in a key's
	// partitions, never put, so no tombstone; the organization's own
	// copies stay flagged, and a verify reads one of them with the key's
	// (TokenStatus).
	copies, err := s.dels(keyCopyKeys(id))
	return append(dels, copies...), err
}

// listLinkedKeys lists the keys linked in partition pk, newest first: one
// page of links (a strongly consistent Query, newest first, one more than
// the page to learn whether there is another), then the keys and their last
// uses with one eventually consistent BatchGetItem, as a list is. A key
// gone or being deleted since is left out, and so is one keep refuses. The
// position is the ID of the last key on the page.
func (s *Store) listLinkedKeys(ctx context.Context, pk string, p account.ListParams, keep func(account.APIKey) bool) (account.Page[account.APIKey], error) {
	if p.Limit < 1 {
		return account.Page[account.APIKey]{}, account.Internal(errors.New("tablestore: list limit below 1"))
	}
	q := Query{
		Partition: pk, Range: Range{Op: OpBeginsWith, Values: []string{prefixKey}},
		Limit: p.Limit + 1, Consistent: true,
	}
	if p.After != "" {
		q.After = Item{"pk": S(pk), "sk": S(prefixKey + p.After)}
	}
	var ids []string
	err := s.queryPages(ctx, q, func(items []Item) (bool, error) {
		for _, av := range items {
			k, err := keyOf(av)
			if err != nil {
				return false, err
			}
			if strings.HasPrefix(k.SK, prefixKey) {
				ids = append(ids, idFrom(k.SK, prefixKey))
			}
		}
		return len(ids) <= p.Limit, nil
	})
	if err != nil {
		return account.Page[account.APIKey]{}, err
	}
	page := account.Page[account.APIKey]{Items: []account.APIKey{}}
	if len(ids) > p.Limit {
		ids = ids[:p.Limit]
		page.Next = ids[len(ids)-1]
	}
	if len(ids) == 0 {
		return page, nil
	}
	keys := make([]key, 0, 2*len(ids))
	for _, id := range ids {
		keys = append(keys, apiKeyKey(id), keyUseKey(id))
	}
	read, err := s.batchGetWith(ctx, keys, false)
	if err != nil {
		return account.Page[account.APIKey]{}, err
	}
	items := make(map[string]apiKeyItem, len(ids))
	uses := make(map[string]time.Time, len(ids))
	for _, av := range read {
		var k key
		if err := unmarshal(av, &k); err != nil {
			return account.Page[account.APIKey]{}, err
		}
		switch k.SK {
		case sortKey:
			var it apiKeyItem
			if err := unmarshal(av, &it); err != nil {
				return account.Page[account.APIKey]{}, err
			}
			items[it.KeyID] = it
		case sortKeyUse:
			var use keyUseItem
			if err := unmarshal(av, &use); err != nil {
				return account.Page[account.APIKey]{}, err
			}
			uses[use.KeyID] = use.lastUsed()
		}
	}
	for _, id := range ids {
		it, ok := items[id]
		if !ok || it.Deleting {
			continue
		}
		k := it.apiKey()
		k.LastUsedAt = uses[id]
		if keep(k) {
			page.Items = append(page.Items, k)
		}
	}
	return page, nil
}

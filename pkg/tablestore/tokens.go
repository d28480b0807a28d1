package tablestore

import (
	"context"
	"errors"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"latchkey/pkg/account"
)

// CreateToken writes the token record, in its key's partition, with one
// PutItem; TTL removes it after the token expires. Token IDs are fresh
// ULIDs, so there is nothing to guard.
func (s *Store) CreateToken(ctx context.Context, t account.TokenRecord) error {
	if account.IdempotencyCommitFrom(ctx) != nil {
		// With its idempotency record: a transaction of the two.
		it, err := s.put(newTokenItem(t), condAbsent)
		if err != nil {
			return err
		}
		return s.transact(ctx, []types.TransactWriteItem{it}, account.Internal(errors.New("tablestore: a token with this ID exists already")))
	}
	av, err := attributevalue.MarshalMap(newTokenItem(t))
	if err != nil {
		return account.Internal(err)
	}
	_, err = s.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: s.table, Item: av})
	return storeErr(err)
}

// RevokeToken writes the revocation entry unless one exists, with its read
// copies (see shards.go), in one transaction: the entry's Put is
// conditional and asks for the old item (ReturnValuesOnConditionCheckFailure),
// so when one exists the first revocation time comes back with the
// cancellation, without a second request. A repeated revocation rewrites
// the copies of the entry in force, so that one made by a version that
// wrote none reaches every copy.
func (s *Store) RevokeToken(ctx context.Context, r account.Revocation) (time.Time, error) {
	entry := newRevocationItem(r)
	it, err := s.put(entry, condAbsent)
	if err != nil {
		return time.Time{}, err
	}
	copies, err := s.revocationCopyPuts(entry)
	if err != nil {
		return time.Time{}, err
	}
	if recording(ctx) {
		ctx = withEvents(ctx, account.PendingEvent{Type: account.EventTokenRevoked, Data: r})
	}
	it.Put.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
	oldItem, err := s.transactReturningOld(ctx, append([]types.TransactWriteItem{it}, copies...), errRevokedAlready)
	if err == nil {
		return r.RevokedAt, nil
	}
	if !errors.Is(err, errRevokedAlready) {
		return time.Time{}, err
	}
	var old revocationItem
	if oldItem != nil {
		if err := attributevalue.UnmarshalMap(oldItem, &old); err != nil {
			return time.Time{}, account.Internal(err)
		}
	} else {
		// An endpoint that does not return the old item: read it.
		found, err := s.getItem(ctx, revocationKey(r.TokenID), &old)
		if err != nil {
			return time.Time{}, err
		}
		if !found {
			return time.Time{}, account.Internal(errors.New("tablestore: revocation entry vanished after a failed condition"))
		}
	}
	if copies, err = s.revocationCopyPuts(old); err != nil {
		return time.Time{}, err
	}
	// Nothing changed: no event, and the idempotency record stays started.
	if err := s.transact(withEvents(withoutCommit(ctx)), copies); err != nil {
		return time.Time{}, err
	}
	return old.RevokedAt, nil
}

// errRevokedAlready cancels RevokeToken's transaction when the token has a
// revocation entry.
var errRevokedAlready = errors.New("tablestore: the token is revoked already")

// TokenStatus reads, in one strongly consistent BatchGetItem, read copy n
// (see shards.go) of the revocation entry, of the issuing key's item and
// of the items of the ancestors and the organization the token names,
// with n one random number for all: 1 request and 2 RCU for a key without
// ancestors or organization (a TransactGetItems would cost 4), 1 more RCU
// per ancestor and for the organization. The key's own Ancestors and
// OrganizationID decide: any the hints left out, and any copy that data
// written before copies existed lacks, are read from the items themselves
// with a second BatchGetItem (checkKey), which a token this service
// issued, of a key created since, never needs.
func (s *Store) TokenStatus(ctx context.Context, tokenID, keyID string, ancestors []string, orgID string) (account.TokenStatus, error) {
	if len(ancestors) > account.MaxKeyAncestors {
		ancestors = nil // a hint, and not one this service wrote
	}
	n := readShard(ctx)
	keys := []key{revocationCopyKey(tokenID, n), apiKeyCopyKey(keyID, n)}
	for _, id := range ancestors {
		keys = append(keys, apiKeyCopyKey(id, n))
	}
	if orgID != "" {
		keys = append(keys, orgCopyKey(orgID, n))
	}
	read, err := s.batchGet(ctx, keys)
	if err != nil {
		return account.TokenStatus{}, err
	}
	var st account.TokenStatus
	var r related
	if err := s.addStatusRead(&st, read, &r); err != nil {
		return account.TokenStatus{}, err
	}
	it, ok := find(r.keys, keyID)
	if o, read := find(r.orgs, orgID); !ok && read && o.Deleting {
		// Its organization's copy says it is going: so is the key (a
		// key's organization never changes, and its copies go with the
		// organization's delete, which leaves the organization's).
		return st, nil
	}
	// The entry itself when the copy may not be the whole story: a key
	// without copies, or a token issued before its key had them.
	if n != 0 && st.RevokedAt.IsZero() && (!ok || !it.Deleting && (it.CopiesSince == nil || issuedBefore(tokenID, *it.CopiesSince))) {
		more := []key{revocationKey(tokenID)}
		if !ok {
			more = append(more, apiKeyKey(keyID))
		}
		read, err := s.batchGet(ctx, more)
		if err != nil {
			return account.TokenStatus{}, err
		}
		if err := s.addStatusRead(&st, read, &r); err != nil {
			return account.TokenStatus{}, err
		}
		it, ok = find(r.keys, keyID)
	}
	if !ok {
		return st, nil
	}
	issuer, live, err := s.checkKey(ctx, it, &r)
	if err != nil {
		return account.TokenStatus{}, err
	}
	if live {
		st.Key = &issuer
	}
	return st, nil
}

// addStatusRead sorts items read by TokenStatus: a revocation entry into
// st, keys and organizations into r.
func (s *Store) addStatusRead(st *account.TokenStatus, read []map[string]types.AttributeValue, r *related) error {
	for _, av := range read {
		k, err := keyOf(av)
		if err != nil {
			return err
		}
		if k.SK == sortRevoked {
			var rev revocationItem
			if err := attributevalue.UnmarshalMap(av, &rev); err != nil {
				return account.Internal(err)
			}
			st.RevokedAt = rev.RevokedAt
			continue
		}
		if err := r.add(&s.keys, av); err != nil {
			return err
		}
	}
	return nil
}

// ListTokens reads one page of the key's token records with one strongly
// consistent Query of its partition, newest first, from the sort keys
// TOKEN#<first ID after since> on (so no token issued before since costs
// a read), then their revocation entries with one strongly consistent
// BatchGetItem: about 1 RCU per 4 KB of records (some 25 records) and
// 1 RCU per record on the page.
func (s *Store) ListTokens(ctx context.Context, keyID string, since time.Time, p account.ListParams) (account.Page[account.TokenRecord], error) {
	pk := apiKeyKey(keyID).PK
	low := prefixToken + account.FirstID(account.PrefixToken, since.Add(time.Millisecond))
	// "~" sorts after every ULID character.
	high := prefixToken + account.PrefixToken + "~"
	if p.After != "" {
		high = prefixToken + p.After
	}
	kc := expression.Key("pk").Equal(expression.Value(pk)).
		And(expression.Key("sk").Between(expression.Value(low), expression.Value(high)))
	e, err := expression.NewBuilder().WithKeyCondition(kc).Build()
	if err != nil {
		return account.Page[account.TokenRecord]{}, account.Internal(err)
	}
	limit := p.PageSize()
	// One more than the page, and one more again for the position itself,
	// which BETWEEN includes.
	want := limit + 2
	pages := dynamodb.NewQueryPaginator(s.client, &dynamodb.QueryInput{
		TableName: s.table, ConsistentRead: aws.Bool(true),
		KeyConditionExpression: e.KeyCondition(), ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
		ScanIndexForward: aws.Bool(false), Limit: aws.Int32(int32(want)),
	})
	var items []tokenItem
	for pages.HasMorePages() && len(items) <= limit {
		out, err := pages.NextPage(ctx)
		if err != nil {
			return account.Page[account.TokenRecord]{}, storeErr(err)
		}
		for _, av := range out.Items {
			var it tokenItem
			if err := attributevalue.UnmarshalMap(av, &it); err != nil {
				return account.Page[account.TokenRecord]{}, account.Internal(err)
			}
			if it.SK != high {
				items = append(items, it)
			}
		}
	}
	var page account.Page[account.TokenRecord]
	if len(items) > limit {
		items = items[:limit]
		page.Next = idFrom(items[limit-1].SK, prefixToken)
	}
	if len(items) == 0 {
		page.Items = []account.TokenRecord{}
		return page, nil
	}
	keys := make([]key, len(items))
	for i, it := range items {
		keys[i] = revocationKey(idFrom(it.SK, prefixToken))
	}
	read, err := s.batchGet(ctx, keys)
	if err != nil {
		return account.Page[account.TokenRecord]{}, err
	}
	revoked := make(map[string]time.Time, len(read))
	for _, av := range read {
		var r revocationItem
		if err := attributevalue.UnmarshalMap(av, &r); err != nil {
			return account.Page[account.TokenRecord]{}, account.Internal(err)
		}
		revoked[idFrom(r.PK, prefixToken)] = r.RevokedAt
	}
	page.Items = make([]account.TokenRecord, len(items))
	for i, it := range items {
		t := it.record()
		t.RevokedAt = revoked[t.ID]
		page.Items[i] = t
	}
	return page, nil
}

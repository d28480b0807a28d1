package dynamostore

import (
	"context"
	"errors"
	"maps"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"latchkey/pkg/account"
)

// CreateAPIKey writes the key under its ID and under its hash in one
// transaction. A key with Ancestors goes below its parent in the same
// transaction: a link item in the parent's partition (how a delete finds
// it), and 1 added to the parent's Children, on the condition that the
// parent exists and is not being deleted. A second key with the same hash
// (two processes installing the same bootstrap key at once) fails with
// CodeInternal; the caller re-reads. CodeNotFound if the parent is gone or
// being deleted.
func (s *Store) CreateAPIKey(ctx context.Context, k account.APIKey) error {
	byID, byHash := newAPIKeyItems(k)
	steps := []func() (types.TransactWriteItem, error){
		func() (types.TransactWriteItem, error) { return s.put(byID, condAbsent) },
		func() (types.TransactWriteItem, error) { return s.put(byHash, condAbsent) },
	}
	onCheckFailed := []error{
		account.Internal(errors.New("dynamostore: an API key with this ID exists already")),
		account.Internal(errors.New("dynamostore: an API key with this hash exists already")),
	}
	if n := len(k.Ancestors); n > 0 {
		parent := k.Ancestors[n-1]
		steps = append(steps,
			func() (types.TransactWriteItem, error) {
				return s.update(apiKeyKey(parent), expression.Add(expression.Name("children"), expression.Value(1)), condLive)
			},
			func() (types.TransactWriteItem, error) { return s.put(newKeyLinkItem(parent, k), condAbsent) },
		)
		onCheckFailed = append(onCheckFailed, account.ErrAPIKeyNotFound(),
			account.Internal(errors.New("dynamostore: the API key is linked below its parent already")))
	}
	items, err := build(steps...)
	if err != nil {
		return err
	}
	return s.transact(ctx, items, onCheckFailed...)
}

// GetAPIKey reads a key by ID, strongly consistently, and checks its
// Ancestors (see liveKey). CodeNotFound.
func (s *Store) GetAPIKey(ctx context.Context, id string) (account.APIKey, error) {
	return s.getAPIKey(ctx, apiKeyKey(id))
}

// GetAPIKeyByHash reads the copy of the key stored under its hash, strongly
// consistently: one GetItem on every request authenticated by an API key,
// and a BatchGetItem of its Ancestors for a key that has any (see liveKey).
// CodeNotFound.
func (s *Store) GetAPIKeyByHash(ctx context.Context, hash []byte) (account.APIKey, error) {
	return s.getAPIKey(ctx, keyHashKey(hash))
}

func (s *Store) getAPIKey(ctx context.Context, k key) (account.APIKey, error) {
	var it apiKeyItem
	found, err := s.getItem(ctx, k, &it)
	if err != nil {
		return account.APIKey{}, err
	}
	if !found {
		return account.APIKey{}, account.ErrAPIKeyNotFound()
	}
	live, err := s.liveKey(ctx, it, nil)
	if err != nil {
		return account.APIKey{}, err
	}
	if !live {
		return account.APIKey{}, account.ErrAPIKeyNotFound()
	}
	return it.apiKey(), nil
}

// liveKey reports whether the key it (a copy read strongly consistently)
// is live: not being deleted, and neither is any of its Ancestors, each of
// which still exists. A delete of a tree too large for one transaction
// flags only its root before it starts (see DeleteAPIKey), so this is how
// the keys below it are gone from that instant. have holds ancestors'
// items read already, by ID; the others are read with one strongly
// consistent BatchGetItem. A key without ancestors (the bootstrap key and
// the keys it created) costs no read.
func (s *Store) liveKey(ctx context.Context, it apiKeyItem, have map[string]apiKeyItem) (bool, error) {
	if it.Deleting {
		return false, nil
	}
	var missing []key
	for _, id := range it.Ancestors {
		if _, ok := have[id]; !ok {
			missing = append(missing, apiKeyKey(id))
		}
	}
	if len(missing) > 0 {
		read, err := s.batchGet(ctx, missing)
		if err != nil {
			return false, err
		}
		have = maps.Clone(have)
		if have == nil {
			have = make(map[string]apiKeyItem, len(read))
		}
		for _, av := range read {
			var a apiKeyItem
			if err := attributevalue.UnmarshalMap(av, &a); err != nil {
				return false, account.Internal(err)
			}
			have[a.KeyID] = a
		}
	}
	for _, id := range it.Ancestors {
		if a, ok := have[id]; !ok || a.Deleting {
			return false, nil
		}
	}
	return true, nil
}

// ListAPIKeys lists keys newest first from the KEYS partition of gsi1,
// leaving out any item outside a KEY# partition (see list) and a key whose
// delete has begun. The keys below it are listed
// until the delete is finished: checking every key's ancestors would cost
// a BatchGetItem per page, and only a delete cut off halfway is seen here.
func (s *Store) ListAPIKeys(ctx context.Context, p account.ListParams) (account.Page[account.APIKey], error) {
	return list(ctx, s, listKeys, prefixKey, p, func(it apiKeyItem) (account.APIKey, bool) { return it.apiKey(), !it.Deleting })
}

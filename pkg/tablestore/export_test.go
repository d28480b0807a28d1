package tablestore

import (
	"context"
	"maps"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"latchkey/pkg/account"
)

// Test-only views of the table, so the external tests can check both sides
// of every membership with strongly consistent reads rather than the
// eventually consistent list index.

// UserMembershipSides returns the organization IDs of the membership items
// in the user's partition.
func (s *Store) UserMembershipSides(ctx context.Context, userID string) ([]string, error) {
	return s.memberSides(ctx, userKey(userID))
}

// OrgMembershipSides returns the user IDs of the membership items in the
// organization's partition.
func (s *Store) OrgMembershipSides(ctx context.Context, orgID string) ([]string, error) {
	return s.memberSides(ctx, orgKey(orgID))
}

// APIKeyExpireAt returns the TTL attribute of the two copies of a key: the
// item under its ID and the one under its hash.
func (s *Store) APIKeyExpireAt(ctx context.Context, id string, hash []byte) (byID, byHash int64, err error) {
	var a, b apiKeyItem
	if _, err := s.getItem(ctx, apiKeyKey(id), &a); err != nil {
		return 0, 0, err
	}
	if _, err := s.getItem(ctx, keyHashKey(hash), &b); err != nil {
		return 0, 0, err
	}
	return a.ExpireAt, b.ExpireAt, nil
}

// MaxTreeKeys is how many keys one transaction of DeleteAPIKey deletes.
const MaxTreeKeys = maxTreeKeys

// APIKeyItems counts the items of k left in the table, read strongly
// consistently: its item under its ID, its copies under its hash and
// previous hash, its read copies, its link below its parent and its last
// use.
func (s *Store) APIKeyItems(ctx context.Context, k account.APIKey) (int, error) {
	keys := []key{apiKeyKey(k.ID), keyHashKey(k.Hash), keyUseKey(k.ID)}
	if k.PreviousHash != nil {
		keys = append(keys, keyHashKey(k.PreviousHash))
	}
	if n := len(k.Ancestors); n > 0 {
		keys = append(keys, keyLinkKey(k.Ancestors[n-1], k.ID))
	}
	items, err := s.batchGet(ctx, keys)
	if err != nil {
		return 0, err
	}
	// The read copies, but for the tombstones a delete leaves (no hash).
	copies, err := s.batchGet(ctx, keyCopyKeys(k.ID))
	for _, av := range copies {
		if _, ok := av["hash"].(B); ok {
			items = append(items, av)
		}
	}
	return len(items), err
}

// ReadShards and EventShards are the numbers of read copies of an
// organization or an entry (the item included) and of event shards;
// MaxReadCopies the most verify copies of a key (see shards.go).
const (
	MaxReadCopies = maxReadCopies
	ReadShards    = readShards
	EventShards   = eventShards
)

// MaxInlineRevocations is how many revocations of live tokens a key's
// item holds.
const MaxInlineRevocations = maxInlineRevocations

// ReadCopy makes every verify of s read copy n of its items (see
// shards.go), -1 one at random, and returns s.
func (s *Store) ReadCopy(n int) *Store {
	s.readCopy = n
	return s
}

// TokenStatusOfCopy is TokenStatus reading copy n.
func (s *Store) TokenStatusOfCopy(ctx context.Context, n int, tokenID, keyID string, ancestors []string, orgID string, inline bool) (account.TokenStatus, error) {
	return s.tokenStatus(ctx, n, tokenID, keyID, ancestors, orgID, inline)
}

// PutEvent writes the event e with the id made at at, as a change writes
// it (eventPuts), in shard 0 of its day and of its organization's events,
// in a transaction of its own.
func (s *Store) PutEvent(ctx context.Context, src *account.EventSource, e account.PendingEvent, id string, at time.Time) error {
	puts, err := s.eventPuts(src, e, id, at, 0, 0)
	if err != nil {
		return err
	}
	return s.transact(ctx, change{}, puts)
}

// StoredEvent returns the JSON of the event id made at at, as stored in
// its day's shard 0 and in shard 0 of the organization org's events; ""
// for an item that is not there.
func (s *Store) StoredEvent(ctx context.Context, id string, at time.Time, org string) (inDay, inOrg string, err error) {
	var day, ofOrg eventItem
	if _, err := s.getItem(ctx, eventKey(id, at), &day); err != nil {
		return "", "", err
	}
	if _, err := s.getItem(ctx, orgEventKey(org, id), &ofOrg); err != nil {
		return "", "", err
	}
	return day.Event, ofOrg.Event, nil
}

// DropOverflowBound removes revoked_overflow_issued_before from the key's
// item and its read copies: an overflow as a commit before the bound wrote
// it.
func (s *Store) DropOverflowBound(ctx context.Context, keyID string) error {
	read, err := s.batchGet(ctx, append([]key{apiKeyKey(keyID)}, copyKeys(keyID, apiKeyCopyKey)...))
	if err != nil {
		return err
	}
	for _, av := range read {
		av = maps.Clone(av) // a Port may remember what it answered
		delete(av, "revoked_overflow_issued_before")
		if _, err := s.port.Write(ctx, Write{Kind: WritePut, Item: av}, false); err != nil {
			return err
		}
	}
	return nil
}

// ItemBytes is an item's size by DynamoDB's rule.
func ItemBytes(av map[string]types.AttributeValue) int { return itemBytes(av) }

// PickCopy is the copy a verify of the key id reads (see pickCopy).
func (s *Store) PickCopy(id string) int { return s.pickCopy(id) }

// VerifyCopies returns the numbers of the verify copies of the key id that
// are there, read strongly consistently, tombstones left out.
func (s *Store) VerifyCopies(ctx context.Context, id string) ([]int, error) {
	var out []int
	for n := 1; n <= maxReadCopies; n++ {
		av, err := s.getRaw(ctx, apiKeyCopyKey(id, n))
		if err != nil {
			return nil, err
		}
		if _, ok := av["hash"].(B); ok {
			out = append(out, n)
		}
	}
	return out, nil
}

// ForgetUsage deletes the usage buckets of the subject id: its rate is
// then none.
func (s *Store) ForgetUsage(ctx context.Context, id string) error {
	var keys []key
	err := s.queryPages(ctx, Query{Partition: prefixUsage + id, Consistent: true}, func(items []Item) (bool, error) {
		for _, av := range items {
			k, err := keyOf(av)
			if err != nil {
				return false, err
			}
			keys = append(keys, k)
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	dels, err := s.dels(keys)
	if err != nil || len(dels) == 0 {
		return err
	}
	return s.transact(ctx, change{}, dels)
}

// PutPreviousCopies writes the key id as release 0.1.0's key change does
// (git show 0b735a2:pkg/tablestore/apikeys.go): copies_since on its item,
// now if it has none, and all 15 copies from the item, with it, without
// this release's attributes or revocations.
func (s *Store) PutPreviousCopies(ctx context.Context, id string) error {
	var it apiKeyItem
	if _, err := s.getItem(ctx, apiKeyKey(id), &it); err != nil {
		return err
	}
	if it.CopiesSince == nil {
		since := time.Now().UTC()
		it.CopiesSince = &since
	}
	upd, err := s.update(apiKeyKey(id), set("copies_since", it.CopiesSince.UTC()), condPresent)
	if err != nil {
		return err
	}
	puts := []Write{upd}
	for n := 1; n <= maxReadCopies; n++ {
		c := it.hashCopy()
		c.key = apiKeyCopyKey(id, n)
		c.CopiesSince = it.CopiesSince
		put, err := s.putAlways(c)
		if err != nil {
			return err
		}
		puts = append(puts, put)
	}
	return s.transact(ctx, change{}, puts)
}

// PreviousReleaseRevoked reports whether release 0.1.0's verify of copy n
// (0 to 15) finds the token tokenID of the key keyID revoked: it reads
// copy n of the key and of the entry, and the entry itself when the key's
// copy is missing, has no copies_since, or the token was issued before it
// (git show 0b735a2:pkg/tablestore/tokens.go, TokenStatus).
func (s *Store) PreviousReleaseRevoked(ctx context.Context, tokenID, keyID string, n int) (bool, error) {
	var entry revocationItem
	found, err := s.getItem(ctx, revocationCopyKey(tokenID, n), &entry)
	if err != nil || found || n == 0 {
		return found, err
	}
	var it apiKeyItem
	ok, err := s.getItem(ctx, apiKeyCopyKey(keyID, n), &it)
	if err != nil {
		return false, err
	}
	if ok && it.CopiesSince != nil && !issuedBefore(tokenID, *it.CopiesSince) {
		return false, nil
	}
	return s.getItem(ctx, revocationKey(tokenID), &entry)
}

// HandoffDue is the rate limit of WithCopyGrowthBy at now: whether the
// key id's growth may be handed over, recorded if so.
func (s *Store) HandoffDue(id string, now time.Time) bool { return s.handoffs.due(id, now) }

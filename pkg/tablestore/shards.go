package tablestore

import (
	"hash/fnv"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"latchkey/pkg/account"
)

// No item and no partition may cap what one key, token or organization
// can do below the table's own limits. DynamoDB serves a partition about
// 3,000 strongly consistent reads and 1,000 write units a second; an item
// never splits, and a partition key's items split only by sort key. So:
//
//   - Read copies. Every item a verify reads (a token's revocation entry,
//     an API key's item under its ID, an organization's item) has
//     readShards-1 copies, each in a partition of its own
//     (<pk>#<n>, same sort key), written in the same transaction as every
//     change to the item, so that they never differ from it. A verify
//     reads copy n of each, n chosen at random (verifyCopy; copy 0 is the
//     item itself), in its one BatchGetItem: each copy takes a
//     readShards-th of the reads, and 30,000 verifies a second of one
//     token put 1,875 reads a second on each of its items. A key's copies
//     are whole copies of its item (a verify returns the whole key); an
//     organization's carry only what a verify reads of it, deleting (an
//     update of its name or plan does not touch them).
//   - Event shards. An event goes to one of eventShards partitions of its
//     day, EVENT#<day>#<s> (shard 0 is EVENT#<day> as before), taken in
//     turn by each process (eventShard); an organization's copy to one of
//     eventShards partitions EVENTORG#<org>#<s>, by its id (orgEventShard).
//     The feed merges the shards of a day, or an organization's, in id
//     order (events.go).
//
// Data written before the copies existed has none: a key or organization
// whose copy is missing is read from its item (a second BatchGetItem, as
// checkKey reads what a hint left out), and a token issued before its key
// had copies (apiKeyItem.CopiesSince) has its revocation entry read from
// the item too, since a revocation made then wrote no copy.
const (
	// readShards is the number of places a verify may read an item from:
	// the item and its copies. 16: a tenth or less of a key's verifies
	// each, with room to spare (30,000 / 16 = 1,875 a second per copy).
	readShards = 16
	// eventShards is the number of partitions a day's events (and an
	// organization's) are spread over: 5,000 changes a second put 312 a
	// second, 625 write units of events of up to 1 KB, on each.
	eventShards = 16
)

// shardSep joins an item's partition key and its copy's or shard's number.
// IDs have no '#', so baseID finds the ID again.
const shardSep = "#"

// shardPK returns the partition key of copy (or shard) n of the partition
// pk: pk itself for 0.
func shardPK(pk string, n int) string {
	if n == 0 {
		return pk
	}
	return pk + shardSep + strconv.Itoa(n)
}

// baseID strips prefix and a copy's number from a partition key.
func baseID(pk, prefix string) string {
	id := idFrom(pk, prefix)
	if i := strings.Index(id, shardSep); i >= 0 {
		return id[:i]
	}
	return id
}

// apiKeyCopyKey, orgCopyKey and revocationCopyKey are the keys of read
// copy n of an item (the item itself for 0).
func apiKeyCopyKey(id string, n int) key { return key{copyPK(prefixKey, id, n), sortKey} }
func orgCopyKey(id string, n int) key    { return key{copyPK(prefixOrg, id, n), sortOrg} }
func revocationCopyKey(id string, n int) key {
	return key{copyPK(prefixToken, id, n), sortRevoked}
}

// copyPK is shardPK(prefix+id, n) in one string: every verify makes two.
func copyPK(prefix, id string, n int) string {
	if n == 0 {
		return prefix + id
	}
	return prefix + id + shardSep + strconv.Itoa(n)
}

// copyKeys returns the keys of the copies 1 to readShards-1 of an item,
// given its copy key function.
func copyKeys(id string, copyKey func(string, int) key) []key {
	ks := make([]key, 0, readShards-1)
	for n := 1; n < readShards; n++ {
		ks = append(ks, copyKey(id, n))
	}
	return ks
}

// verifyCopy picks the copy a verify reads: at random, so that no pattern
// of requests (a client cycling through its tokens, say) keeps landing on
// one copy; or s.readCopy when a test set one (export_test.go), to measure
// the same reads on every run.
func (s *Store) verifyCopy() int {
	if s.readCopy >= 0 {
		return s.readCopy
	}
	return rand.IntN(readShards)
}

// eventTurn counts the events this process has written; eventShard takes
// their shards in turn from a random start, so that every process spreads
// its events evenly and processes do not start in step.
var eventTurn atomic.Uint64

func init() { eventTurn.Store(rand.Uint64N(eventShards)) }

// eventShard returns the shard of the next event.
func eventShard() int { return int(eventTurn.Add(1) % eventShards) }

// orgEventShard returns the shard of the organization's copy of the event
// id: from the id's random part, since taking turns would spread only the
// events of all organizations evenly, and a process that alternates
// between two kinds of change would put all of one's in half the shards.
func orgEventShard(id string) int {
	h := fnv.New32a()
	h.Write([]byte(id))
	return int(h.Sum32() % eventShards)
}

// readCopy returns copy n of the key item under the ID (it), as verify
// reads it: the whole key, outside the list, without Children, with the
// revocations of its tokens, which the copy under the hash leaves out.
func (it apiKeyItem) readCopy(n int) apiKeyItem {
	c := it.hashCopy()
	c.key = apiKeyCopyKey(it.KeyID, n)
	c.Revoked, c.RevokedOverflowUntil, c.RevokedOverflowIssuedBefore = it.Revoked, it.RevokedOverflowUntil, it.RevokedOverflowIssuedBefore
	return c
}

// keyCopyPuts returns the Puts of the copies of the key item it.
func (s *Store) keyCopyPuts(it apiKeyItem) ([]Write, error) {
	items := make([]Write, 0, readShards-1)
	for n := 1; n < readShards; n++ {
		put, err := s.putAlways(it.readCopy(n))
		if err != nil {
			return nil, err
		}
		items = append(items, put)
	}
	return items, nil
}

// tombstoneTTL is how long the copies of a deleted key or organization
// stay, flagged deleting: until every token issued before the delete has
// expired (a verify of an expired token reads nothing), and an hour more.
// Meanwhile a verify that reads one learns the key is gone in its one
// BatchGetItem; without it, a missing copy would send it to the item
// itself, since data from before the copies has none.
const tombstoneTTL = account.MaxTokenLifetime + time.Hour

// keyTombstones returns the Puts that replace the read copies of the key
// id, deleted at now, with tombstones: the key's ID and deleting, nothing
// else (no hash: APIKeyItems tells them from copies by it).
func (s *Store) keyTombstones(id string, now time.Time) ([]Write, error) {
	items := make([]Write, 0, readShards-1)
	for _, k := range copyKeys(id, apiKeyCopyKey) {
		put, err := s.putAlways(apiKeyItem{key: k, KeyID: id, Deleting: true, ExpireAt: now.Add(tombstoneTTL).Unix()})
		if err != nil {
			return nil, err
		}
		items = append(items, put)
	}
	return items, nil
}

// dels returns unconditional Deletes of keys: copies, which data written
// before they existed lacks.
func (s *Store) dels(keys []key) ([]Write, error) {
	items := make([]Write, 0, len(keys))
	for _, k := range keys {
		d, err := s.del(k, Cond{})
		if err != nil {
			return nil, err
		}
		items = append(items, d)
	}
	return items, nil
}

// orgCopyItem is a read copy of an organization: what a verify reads of
// it. OwnerID names the organization, as a guard names its holder. The
// copies flagged deleting stay after the organization is gone, until
// ExpireAt (tombstoneTTL).
type orgCopyItem struct {
	key
	OwnerID  string `dynamodbav:"owner_id"`
	Deleting bool   `dynamodbav:"deleting,omitempty"`
	ExpireAt int64  `dynamodbav:"expire_at,omitempty"`
	orgLimits
}

// orgCopyPuts returns the Puts of the copies of the organization id,
// flagged deleting or not, expiring at expire unless it is zero, with
// limits (none on the copies of an organization being deleted, whose keys
// no longer work).
func (s *Store) orgCopyPuts(id string, deleting bool, expireAt time.Time, limits orgLimits) ([]Write, error) {
	items := make([]Write, 0, readShards-1)
	var expire int64
	if !expireAt.IsZero() {
		expire = expireAt.Unix()
	}
	for _, k := range copyKeys(id, orgCopyKey) {
		put, err := s.putAlways(orgCopyItem{key: k, OwnerID: id, Deleting: deleting, ExpireAt: expire, orgLimits: limits})
		if err != nil {
			return nil, err
		}
		items = append(items, put)
	}
	return items, nil
}

// revocationCopyPuts returns the Puts of the copies of the revocation
// entry it.
func (s *Store) revocationCopyPuts(it revocationItem) ([]Write, error) {
	id := idFrom(it.PK, prefixToken)
	items := make([]Write, 0, readShards-1)
	for _, k := range copyKeys(id, revocationCopyKey) {
		c := it
		c.key = k
		put, err := s.putAlways(c)
		if err != nil {
			return nil, err
		}
		items = append(items, put)
	}
	return items, nil
}

// issuedBefore reports whether the token tokenID was issued before t (by
// the time in its ID, a millisecond's; so t's millisecond counts as after);
// a token whose ID tells no time was.
func issuedBefore(tokenID string, t time.Time) bool {
	at, ok := account.IDTime(account.PrefixToken, tokenID)
	return !ok || at.Before(t.Truncate(time.Millisecond))
}

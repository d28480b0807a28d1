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
//   - Read copies. Every item a verify reads has copies, each in a
//     partition of its own (<pk>#<n>, same sort key), written in the same
//     transaction as every change to it, so that they never differ from
//     it. A token's revocation entry and an organization have
//     readShards-1; a verify reads copy n of them, n at random (copy 0 is
//     the item itself). An API key has N verify copies, 1 to
//     maxReadCopies as its read rate calls for (below, and sizing.go),
//     and a verify reads one of them, never its item. All in the verify's
//     one BatchGetItem: 30,000 verifies a second of one hot key put 2,000
//     reads a second on each of its copies. A key's copies are whole
//     copies of its item (a verify returns the whole key) with its
//     tokens' revocations; an organization's carry only what a verify
//     reads of it, deleting (an update of its name or plan does not touch
//     them).
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
// had copies (apiKeyItem.EntryCopiesSince) has its revocation entry read
// from the item too, since a revocation made then wrote no copy.
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

// pickCopy picks the copy of the key id a verify reads: at random among
// the copies the key had when this process last read one (copiesMemo), so
// that no pattern of requests (a client cycling through its tokens, say)
// keeps landing on one copy; or s.readCopy when a test set one
// (export_test.go), to measure the same reads on every run.
func (s *Store) pickCopy(id string) int {
	if s.readCopy >= 0 {
		return s.readCopy
	}
	return 1 + rand.IntN(s.copies.get(id))
}

// foldCopy returns copy n of a verify, folded into the copies the key id
// had when last read: an ancestor's read with its key's.
func (s *Store) foldCopy(id string, n int) int {
	return 1 + (n-1)%s.copies.get(id)
}

// copiesSeen records the verify copies of the key id as the copy it read
// says: ReadCopies; all 15 for a copy the previous release wrote; one
// for the item of a key without copies, or a tombstone.
func (s *Store) copiesSeen(id string, it *apiKeyItem) {
	n := it.ReadCopies
	if n == 0 && it.PK != apiKeyKey(id).PK && !it.Deleting {
		n = readShards - 1
	}
	s.copies.set(id, max(n, 1))
}

// copiesMemo remembers, by key ID, the number of verify copies each key
// had when this process last read one of them. A number that went stale
// is safe both ways: copies above a key's number are deleted when it
// shrinks, and a verify that picks one falls back to copy 1; a key that
// grew is read from fewer copies until the next read tells.
type copiesMemo struct{ idMemo[int] }

// get returns the number remembered for the key id; for a key not
// remembered, defaultCopies.
func (cm *copiesMemo) get(id string) int {
	if n, ok := cm.idMemo.get(id); ok {
		return n
	}
	return defaultCopies
}

// defaultCopies is the number of copies a verify assumes of a key it has
// not read yet: copy 1, which every key with copies has, tells it more.
const defaultCopies = 1

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

// An API key's verify copies are KEY#<id>#<n>, n from 1 to the key's
// ReadCopies (at most maxReadCopies); a verify reads copy n, n at random
// in [1, N] (pickCopy), never the item under the ID. That item is listed
// (gsi1pk KEYS) and stays the authority for the key's content and
// Version, which only a key change writes; the copies carry the content
// and, besides, the inline revocations of the key's tokens, so that a
// revocation writes the copies and not the listed item, and no index.
// Copy 1 exists for every key with copies and is the authority for the
// revocations: every write of the copies reads it strongly and writes
// copies 1..N on the condition that copy 1 still has the CopiesVersion
// (and Version) it read (firstCopyIs), deleting in the same transaction
// every copy above N it may leave, so that any copy a reader may pick is
// current.
//
// maxReadCopies is 15, the copies the previous release writes: the entry
// copies it wrote (1..15) serve this release's reads of them as they are,
// and 30,000 verifies a second of one key put 2,000 on each copy.
const maxReadCopies = readShards - 1

// keyCopyKeys returns the keys of every verify copy a key may have.
func keyCopyKeys(id string) []key {
	ks := make([]key, 0, maxReadCopies)
	for n := 1; n <= maxReadCopies; n++ {
		ks = append(ks, apiKeyCopyKey(id, n))
	}
	return ks
}

// copyPlan is what a write of a key's verify copies puts on them: read from
// copy 1 (first), or from the key's item for a key without copies yet.
type copyPlan struct {
	first *apiKeyItem // copy 1 as read; nil if it is not there
	// n is the number of copies to write.
	n int
	// entrySince is the EntryCopiesSince of the copies written.
	entrySince time.Time
	// keyWithoutSince: the item under the ID carries no copies_since.
	keyWithoutSince bool
}

// nextCopies returns what a write at now of the key's copies, whose copy 1
// reads first (nil if none), puts on them, as many as there are (one for
// a key without; sizedCopies resizes); keyWithoutSince when the write
// removes copies_since from the item under the ID.
func nextCopies(first *apiKeyItem, now time.Time, keyWithoutSince bool) copyPlan {
	c := copyPlan{first: first, n: 1, entrySince: now.UTC(), keyWithoutSince: keyWithoutSince}
	if first != nil && first.ReadCopies == 0 {
		c.n = maxReadCopies // the previous release's, all there
	}
	if first != nil && first.ReadCopies > 0 {
		c.n = first.ReadCopies
		// Ours: entry copies have been written for n = 1..N since then.
		if first.EntryCopiesSince != nil {
			c.entrySince = *first.EntryCopiesSince
		}
		c.keyWithoutSince = keyWithoutSince || first.KeyWithoutSince
	}
	return c
}

// entryCopies returns how many copies of a revocation entry a revocation
// writes beside the key's copies c: all maxReadCopies, which a verify of a
// token read by its entry reads (entry copy n with key copy n, whatever N
// the key has then or later: so a growth leaves every earlier revocation
// where the new copies' readers read it); none for a token read by its
// key (inline), but while the item under the ID still has a copies_since:
// 0.1.0, after a rollback, rewrites the copies from that item at its next
// change, and then trusts its entry copies for the tokens issued since.
func (c copyPlan) entryCopies(inline bool) int {
	if inline && c.keyWithoutSince {
		return 0
	}
	return maxReadCopies
}

// firstCopyIs is the condition of a write of the copies that read first
// as copy 1: that it has not changed (CopiesVersion, and Version for a
// copy 0.1.0 wrote, which has no CopiesVersion) and is not flagged
// deleting; or that there is still no copy 1.
func firstCopyIs(first *apiKeyItem) Cond {
	if first == nil {
		return condAbsent
	}
	v := attr("copies_version").NotExists()
	if first.CopiesVersion > 0 {
		v = attr("copies_version").Equal(first.CopiesVersion)
	}
	return condLive.And(v).And(versionIs(first.Version))
}

// readCopy returns copy n of the key item it (the item under the ID, or a
// copy): the whole key, outside the list, without Children, with the
// revocations of its tokens, which the copy under the hash leaves out.
func (it apiKeyItem) readCopy(n int) apiKeyItem {
	c := it.hashCopy()
	c.key = apiKeyCopyKey(it.KeyID, n)
	c.Revoked, c.RevokedOverflowUntil, c.RevokedOverflowIssuedBefore = it.Revoked, it.RevokedOverflowUntil, it.RevokedOverflowIssuedBefore
	// The previous release's "copies since": none on ours (see copyPlan.entryCopies).
	c.CopiesSince = nil
	return c
}

// copyWrites returns the writes of the verify copies of the key item it
// (content and revocations as it has them) as c says: copies 1..c.n, the
// first on the condition firstCopyIs, and the Deletes of every copy above
// c.n that may be there.
func (s *Store) copyWrites(it apiKeyItem, c copyPlan) ([]Write, error) {
	version := 1
	if c.first != nil {
		version = c.first.CopiesVersion + 1
	}
	since := c.entrySince
	items := make([]Write, 0, maxReadCopies)
	for n := 1; n <= c.n; n++ {
		cp := it.readCopy(n)
		cp.ReadCopies, cp.CopiesVersion, cp.EntryCopiesSince, cp.KeyWithoutSince = c.n, version, &since, c.keyWithoutSince
		var w Write
		var err error
		if n == 1 {
			w, err = s.put(cp, firstCopyIs(c.first))
		} else {
			w, err = s.putAlways(cp)
		}
		if err != nil {
			return nil, err
		}
		items = append(items, w)
	}
	above := 0
	switch {
	case c.first == nil:
	case c.first.ReadCopies == 0:
		above = maxReadCopies // the previous release's: all of them
	default:
		above = c.first.ReadCopies
	}
	for n := c.n + 1; n <= above; n++ {
		d, err := s.del(apiKeyCopyKey(it.KeyID, n), Cond{})
		if err != nil {
			return nil, err
		}
		items = append(items, d)
	}
	return items, nil
}

// keyCopyPuts returns the unconditional Puts of every verify copy of the
// key item it: a tree delete's flag (deleting on every copy).
func (s *Store) keyCopyPuts(it apiKeyItem) ([]Write, error) {
	items := make([]Write, 0, maxReadCopies)
	for n := 1; n <= maxReadCopies; n++ {
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
	items := make([]Write, 0, maxReadCopies)
	for _, k := range keyCopyKeys(id) {
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

// revocationCopyPuts returns the Puts of copies 1..n of the revocation
// entry it.
func (s *Store) revocationCopyPuts(it revocationItem, n int) ([]Write, error) {
	id := idFrom(it.PK, prefixToken)
	items := make([]Write, 0, n)
	for i := 1; i <= n; i++ {
		c := it
		c.key = revocationCopyKey(id, i)
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

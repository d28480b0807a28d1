// Package boltstore is the embedded account.Store: one bbolt file, so that a
// laptop (make run) keeps its data across restarts with no server to run.
//
// Every write that touches more than one record (a user and its e-mail
// guard, a membership and its two list indexes, a cascade on delete) is one
// bbolt transaction, submitted through DB.Batch so that concurrent writers
// share an fsync. Batch may run a function more than once, so every write
// function here only reads and writes the transaction it is given.
//
// Lists are newest first because every list is keyed in creation order:
// users, organizations and API keys by their ULID, memberships by
// "<owner id>/<created_at>/<other id>" in an index per direction. A page
// is read with a cursor walking backwards from just below the position,
// which is the key without its prefix; a deleted position still works.
//
// Token records and revocation entries may be dropped once their token has
// expired, since an expired token fails its signature check before any
// store read. An expiry index (expiry time/kind/token id) lets Prune delete
// them oldest first without a scan; it runs on Open and then every ten
// minutes, each pass in its own transaction.
//
// Methods do not consult their context: every operation is a short local
// transaction that cannot be usefully abandoned halfway.
//
// This file holds opening and closing, transactions, encoding, paging,
// the membership cascade and pruning; guards.go the buckets that keep
// e-mails, slugs and external ids unique; users.go, organizations.go,
// members.go, apikeys.go and tokens.go hold each entity's methods,
// idempotency.go the records of Idempotency-Key (committed with the change
// by write, here), and items.go the stored form of each.
package boltstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"latchkey/pkg/account"
)

// Bucket names. Keys are ASCII (IDs, e-mails, slugs, timestamps) except in
// bucketKeyHashes, whose keys are raw SHA-256 hashes.
var (
	bucketUsers      = []byte("users")                // user id -> userItem
	bucketUserEmails = []byte("users_by_email")       // e-mail -> user id (uniqueness guard)
	bucketUserExtIDs = []byte("users_by_external_id") // external id -> user id (uniqueness guard)
	bucketOrgs       = []byte("orgs")                 // org id -> orgItem
	bucketOrgSlugs   = []byte("orgs_by_slug")         // slug -> org id (uniqueness guard)
	bucketOrgExtIDs  = []byte("orgs_by_external_id")  // external id -> org id (uniqueness guard)
	bucketMembers    = []byte("members")              // org id/user id -> memberItem
	bucketOrgMembers = []byte("members_by_org")       // org id/sort time/user id -> nothing (list index)
	bucketUserOrgs   = []byte("members_by_user")      // user id/sort time/org id -> nothing (list index)
	bucketKeys       = []byte("api_keys")             // key id -> apiKeyItem
	bucketKeyHashes  = []byte("api_keys_by_hash")     // SHA-256 -> key id
	bucketKeyTree    = []byte("api_keys_by_parent")   // parent key id/key id -> nothing (the keys below a key)
	bucketKeyUses    = []byte("api_key_uses")         // key id -> last use, RFC 3339 (account.APIKey.LastUsedAt)
	bucketKeyOrgs    = []byte("api_keys_by_org")      // org id/key id -> nothing (an organization's keys)
	bucketKeyOwners  = []byte("api_keys_by_owner")    // owner id NUL key id -> nothing (an owner's keys; an owner id may hold a slash)
	bucketTokens     = []byte("tokens")               // token id -> tokenItem
	bucketKeyTokens  = []byte("tokens_by_key")        // key id/token id -> nothing (a key's tokens, newest last)
	bucketRevoked    = []byte("revocations")          // token id -> revocationItem
	bucketExpiries   = []byte("expiries")             // expiry time/kind/token id -> nothing (pruning index)
	// key id/Idempotency-Key -> idempotencyItem
	bucketIdempotency = []byte("idempotency")
	// event id -> type NUL event JSON [NUL org id] (see events.go)
	bucketEvents    = []byte("events")
	bucketOrgEvents = []byte("events_by_org") // org id/event id -> nothing (an organization's events)
)

var allBuckets = [][]byte{
	bucketUsers, bucketUserEmails, bucketUserExtIDs, bucketOrgs, bucketOrgSlugs, bucketOrgExtIDs,
	bucketMembers, bucketOrgMembers, bucketUserOrgs,
	bucketKeys, bucketKeyHashes, bucketKeyTree, bucketKeyUses, bucketKeyOrgs, bucketKeyOwners, bucketTokens, bucketKeyTokens, bucketRevoked, bucketExpiries,
	bucketIdempotency, bucketEvents, bucketOrgEvents,
}

const (
	// batchDelay bounds how long a write waits for others to join its
	// batch. bbolt's default (10 ms) is made for write-heavy servers; a
	// lone writer would pay all of it. Writers that arrive while a batch is
	// being fsynced queue up anyway, so a short delay loses little sharing.
	batchDelay = 2 * time.Millisecond
	// pruneInterval is how often expired token records and revocations are
	// dropped. They are harmless until then: an expired token fails its
	// signature check before any store read.
	pruneInterval = 10 * time.Minute
	// pruneMax caps the entries one pruning transaction deletes, so that a
	// large backlog never holds the writer lock for long.
	pruneMax = 10000
)

// Store is an account.Store in one bbolt file.
type Store struct {
	db   *bolt.DB
	keys keyMemo
	now  func() time.Time
	stop chan struct{}
	done sync.WaitGroup
	once sync.Once
	// beforeCommit, set by tests, runs in the transaction of a write that
	// commits an idempotency record, after the change and the record are
	// written: an error it returns is a fault between them and the commit.
	beforeCommit func() error
}

var _ account.Store = (*Store)(nil)

// ErrInUse is the error of Open and OpenTable when another process holds
// the file: bbolt locks it for one process at a time (in one process, for
// one Store or Table).
var ErrInUse = errors.New("another process holds the file")

// Open opens (creating if needed) the store in the file at path. It prunes
// expired token records and revocations at once and then every ten minutes
// until Close. A second process opening the same file fails after a second
// with ErrInUse instead of waiting forever for bbolt's file lock.
//
// bbolt's statistics are off: nothing reads them, and keeping them cost
// every transaction, and so every verify, two more round trips through a
// lock all transactions share and some twenty atomic additions to shared
// counters.
func Open(path string) (*Store, error) {
	db, err := openFile(path)
	if err != nil {
		return nil, err
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, name := range allBuckets {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("boltstore: create buckets in %s: %w", path, err)
	}
	s := &Store{db: db, now: time.Now, stop: make(chan struct{})}
	if _, err := s.Prune(s.now()); err != nil {
		db.Close()
		return nil, err
	}
	s.done.Add(1)
	go s.pruneLoop()
	return s, nil
}

// openFile opens (creating if needed) the bbolt file at path for Open and
// OpenTable: ErrInUse after a second if another process holds it, and
// batched writes that wait batchDelay for company.
func openFile(path string) (*bolt.DB, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second, NoStatistics: true})
	if errors.Is(err, bolterrors.ErrTimeout) {
		// bbolt's own word for it is "timeout", which names no cause.
		return nil, fmt.Errorf("boltstore: open %s: %w", path, ErrInUse)
	}
	if err != nil {
		return nil, fmt.Errorf("boltstore: open %s: %w", path, err)
	}
	db.MaxBatchDelay = batchDelay
	return db, nil
}

// Close stops the pruning loop and closes the file. It waits for
// transactions in progress to finish.
func (s *Store) Close() error {
	s.once.Do(func() { close(s.stop) })
	s.done.Wait()
	return s.db.Close()
}

// write runs fn in a batched read-write transaction. Domain errors returned
// by fn reach the caller unchanged (bbolt re-runs a failing function on its
// own and returns its error); anything else is internal. If ctx carries an
// account.IdempotencyCommit, its record is committed in the same
// transaction as what fn writes (see commitIdempotency).
func (s *Store) write(ctx context.Context, fn func(tx *bolt.Tx) error) error {
	c := account.IdempotencyCommitFrom(ctx)
	if c == nil {
		return wrap(nothingChanged(s.db.Batch(fn)))
	}
	err := s.db.Batch(func(tx *bolt.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		if err := commitIdempotency(tx, c); err != nil {
			return err
		}
		if s.beforeCommit != nil {
			return s.beforeCommit()
		}
		return nil
	})
	if err == nil {
		c.MarkApplied()
	}
	return wrap(nothingChanged(err))
}

// read runs fn in a read-only transaction.
func (s *Store) read(fn func(tx *bolt.Tx) error) error {
	return wrap(s.db.View(fn))
}

func wrap(err error) error {
	if err == nil {
		return nil // before e, which escapes: no allocation on the common path
	}
	var e *account.Error
	if errors.As(err, &e) {
		return err
	}
	return account.Internal(fmt.Errorf("boltstore: %w", err))
}

// sortTime renders t so that byte order is time order (fixed width, UTC).
func sortTime(t time.Time) string {
	return t.UTC().Format("20060102T150405.000000000")
}

func join(parts ...string) []byte { return []byte(strings.Join(parts, "/")) }

// get decodes the record under key, reporting whether there is one.
func get[T any](b *bolt.Bucket, key []byte) (T, bool, error) {
	v := b.Get(key)
	if v == nil {
		var zero T
		return zero, false, nil
	}
	it, err := decode[T](v)
	return it, true, err
}

func put(b *bolt.Bucket, key []byte, item any) error {
	v, err := encode(item)
	if err != nil {
		return err
	}
	return b.Put(key, v)
}

// errListEnd, returned by list's item function, ends the list at that
// key: it and every older one are left out, and the page is the last.
var errListEnd = errors.New("boltstore: end of the list")

// list reads one page of the keys of b that start with prefix, newest
// (greatest key) first. The position is the key without the prefix; a
// position whose key has since been deleted still works, because paging
// resumes at the greatest key below it.
func list[T any](b *bolt.Bucket, prefix string, p account.ListParams, item func(suffix string, v []byte) (T, error)) (account.Page[T], error) {
	limit := p.PageSize()
	pre := []byte(prefix)
	// With no position, start past every key with the prefix: keys are
	// ASCII, so 0xff sorts after all of them.
	start := prefix + "\xff"
	if p.After != "" {
		start = prefix + p.After
	}
	c := b.Cursor()
	k, _ := c.Seek([]byte(start))
	var v []byte
	if k == nil {
		k, v = c.Last()
	} else {
		k, v = c.Prev()
	}
	page := account.Page[T]{Items: make([]T, 0, min(limit, 16))}
	var last string
	for ; k != nil && bytes.HasPrefix(k, pre); k, v = c.Prev() {
		if len(page.Items) == limit {
			// There is at least one more item: this page is not the last.
			page.Next = last
			break
		}
		last = string(k[len(pre):])
		it, err := item(last, v)
		if errors.Is(err, errListEnd) {
			break
		}
		if err != nil {
			return account.Page[T]{}, err
		}
		page.Items = append(page.Items, it)
	}
	return page, nil
}

// orNotFound returns err if it is set, and otherwise the not-found error: a
// helper for the (decode error, missing) pair that get returns.
func orNotFound(err, notFound error) error {
	if err != nil {
		return err
	}
	return notFound
}

// deleteMemberships removes every membership listed under owner in the
// index bucket idx (members_by_user for a user, members_by_org for an
// organization), with the entries of both indexes. pair maps the other
// side's id to (org id, user id).
func deleteMemberships(tx *bolt.Tx, ev *emitter, idx []byte, owner string, pair func(other string) (orgID, userID string)) error {
	index := tx.Bucket(idx)
	prefix := []byte(owner + "/")
	// Collect first: deleting under a live cursor can skip keys in bbolt.
	var others []string
	c := index.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		others = append(others, string(k[len(prefix):]))
	}
	for _, rest := range others {
		_, other, ok := strings.Cut(rest, "/")
		if !ok {
			return fmt.Errorf("malformed membership index key %q", string(prefix)+rest)
		}
		orgID, userID := pair(other)
		if err := removeMember(tx, ev, orgID, userID); err != nil {
			return err
		}
	}
	return nil
}

// Kinds of entries in the expiry index.
const (
	expiryToken      = "t"
	expiryRevocation = "r"
	// expiryAPIKey entries fall due account.ExpiredKeyRetention after the
	// key expires; a key deleted before then leaves an entry that pruning
	// simply drops.
	expiryAPIKey = "k"
	// expiryKeyHash entries fall due when a rotated key's previous secret
	// stops; the entry names the hash, in hex.
	expiryKeyHash = "h"
)

// Prune deletes token records and revocation entries whose ExpiresAt is
// before now, API keys expired for account.ExpiredKeyRetention, expired
// idempotency records, the previous secrets of rotated keys whose grace
// period has ended and events older than account.EventRetention, at most
// pruneMax of them, and returns how many entries it
// deleted. It walks the expiry index from its oldest end, so its cost is
// proportional to what it deletes, not to what the store holds. Open calls
// it, and then a background loop every ten minutes.
func (s *Store) Prune(now time.Time) (int, error) {
	cutoff := []byte(sortTime(now))
	n := 0
	err := s.db.Update(func(tx *bolt.Tx) error {
		n = 0
		expiries := tx.Bucket(bucketExpiries)
		var keys [][]byte
		c := expiries.Cursor()
		for k, _ := c.First(); k != nil && len(keys) < pruneMax; k, _ = c.Next() {
			at, _, _ := bytes.Cut(k, []byte("/"))
			if bytes.Compare(at, cutoff) >= 0 {
				break
			}
			keys = append(keys, bytes.Clone(k))
		}
		for _, k := range keys {
			parts := strings.SplitN(string(k), "/", 3)
			if len(parts) != 3 {
				return fmt.Errorf("malformed expiry index key %q", k)
			}
			var err error
			switch parts[1] {
			case expiryToken:
				err = pruneToken(tx, []byte(parts[2]))
			case expiryRevocation:
				err = tx.Bucket(bucketRevoked).Delete([]byte(parts[2]))
			case expiryIdempotency:
				err = pruneIdempotency(tx, []byte(parts[2]), now)
			case expiryAPIKey:
				// The keys below it have expired too (no key outlives
				// its creator), and usually gone already.
				err = deleteKeyTree(tx, nil, parts[2])
			case expiryKeyHash:
				err = dropPreviousHash(tx, parts[2])
			default:
				err = fmt.Errorf("malformed expiry index key %q", k)
			}
			if err != nil {
				return err
			}
			if err := expiries.Delete(k); err != nil {
				return err
			}
			n++
		}
		dropped, err := pruneEvents(tx, now.Add(-account.EventRetention), pruneMax-len(keys))
		n += dropped
		return err
	})
	return n, wrap(err)
}

func (s *Store) pruneLoop() {
	defer s.done.Done()
	t := time.NewTicker(pruneInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			// A failed pass is retried at the next tick; expired entries
			// do no harm meanwhile, so there is nothing else to do.
			_, _ = s.Prune(s.now())
		}
	}
}

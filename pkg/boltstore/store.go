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

	"latchkey/pkg/account"
)

// Bucket names. Keys are ASCII (IDs, e-mails, slugs, timestamps) except in
// bucketKeyHashes, whose keys are raw SHA-256 hashes.
var (
	bucketUsers      = []byte("users")              // user id -> userItem
	bucketUserEmails = []byte("users_by_email")     // e-mail -> user id (uniqueness guard)
	bucketOrgs       = []byte("orgs")               // org id -> orgItem
	bucketOrgSlugs   = []byte("orgs_by_slug")       // slug -> org id (uniqueness guard)
	bucketMembers    = []byte("members")            // org id/user id -> memberItem
	bucketOrgMembers = []byte("members_by_org")     // org id/sort time/user id -> nothing (list index)
	bucketUserOrgs   = []byte("members_by_user")    // user id/sort time/org id -> nothing (list index)
	bucketKeys       = []byte("api_keys")           // key id -> apiKeyItem
	bucketKeyHashes  = []byte("api_keys_by_hash")   // SHA-256 -> key id
	bucketKeyTree    = []byte("api_keys_by_parent") // parent key id/key id -> nothing (the keys below a key)
	bucketTokens     = []byte("tokens")             // token id -> tokenItem
	bucketRevoked    = []byte("revocations")        // token id -> revocationItem
	bucketExpiries   = []byte("expiries")           // expiry time/kind/token id -> nothing (pruning index)
)

var allBuckets = [][]byte{
	bucketUsers, bucketUserEmails, bucketOrgs, bucketOrgSlugs,
	bucketMembers, bucketOrgMembers, bucketUserOrgs,
	bucketKeys, bucketKeyHashes, bucketKeyTree, bucketTokens, bucketRevoked, bucketExpiries,
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

	defaultLimit = 20
	maxLimit     = 100
)

// Store is an account.Store in one bbolt file.
type Store struct {
	db   *bolt.DB
	now  func() time.Time
	stop chan struct{}
	done sync.WaitGroup
	once sync.Once
}

var _ account.Store = (*Store)(nil)

// Open opens (creating if needed) the store in the file at path. It prunes
// expired token records and revocations at once and then every ten minutes
// until Close. A second process opening the same file fails after a second
// instead of waiting forever for bbolt's file lock.
func Open(path string) (*Store, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		return nil, fmt.Errorf("boltstore: open %s: %w", path, err)
	}
	db.MaxBatchDelay = batchDelay
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

// Close stops the pruning loop and closes the file. It waits for
// transactions in progress to finish.
func (s *Store) Close() error {
	s.once.Do(func() { close(s.stop) })
	s.done.Wait()
	return s.db.Close()
}

// write runs fn in a batched read-write transaction. Domain errors returned
// by fn reach the caller unchanged (bbolt re-runs a failing function on its
// own and returns its error); anything else is internal.
func (s *Store) write(fn func(tx *bolt.Tx) error) error {
	return wrap(s.db.Batch(fn))
}

// read runs fn in a read-only transaction.
func (s *Store) read(fn func(tx *bolt.Tx) error) error {
	return wrap(s.db.View(fn))
}

func wrap(err error) error {
	var e *account.Error
	if err == nil || errors.As(err, &e) {
		return err
	}
	return account.Internal(fmt.Errorf("boltstore: %w", err))
}

func errUserNotFound() error { return account.Errorf(account.CodeNotFound, "user not found") }
func errOrgNotFound() error {
	return account.Errorf(account.CodeNotFound, "organization not found")
}
func errMemberNotFound() error {
	return account.Errorf(account.CodeNotFound, "membership not found")
}
func errKeyNotFound() error { return account.Errorf(account.CodeNotFound, "API key not found") }

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

// list reads one page of the keys of b that start with prefix, newest
// (greatest key) first. The position is the key without the prefix; a
// position whose key has since been deleted still works, because paging
// resumes at the greatest key below it.
func list[T any](b *bolt.Bucket, prefix string, p account.ListParams, item func(suffix string, v []byte) (T, error)) (account.Page[T], error) {
	limit := p.Limit
	if limit <= 0 {
		limit = defaultLimit
	}
	limit = min(limit, maxLimit)
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
		if err != nil {
			return account.Page[T]{}, err
		}
		page.Items = append(page.Items, it)
	}
	return page, nil
}

// CreateUser implements account.Store.
func (s *Store) CreateUser(_ context.Context, u account.User) error {
	return s.write(func(tx *bolt.Tx) error {
		users, emails := tx.Bucket(bucketUsers), tx.Bucket(bucketUserEmails)
		if emails.Get([]byte(u.Email)) != nil {
			return account.Errorf(account.CodeEmailTaken, "another user has this e-mail address")
		}
		if users.Get([]byte(u.ID)) != nil {
			return account.Internal(fmt.Errorf("boltstore: user %s exists already", u.ID))
		}
		if err := put(users, []byte(u.ID), toUserItem(u)); err != nil {
			return err
		}
		return emails.Put([]byte(u.Email), []byte(u.ID))
	})
}

// GetUser implements account.Store.
func (s *Store) GetUser(_ context.Context, id string) (account.User, error) {
	var u account.User
	err := s.read(func(tx *bolt.Tx) error {
		it, ok, err := get[userItem](tx.Bucket(bucketUsers), []byte(id))
		if err != nil || !ok {
			return orNotFound(err, errUserNotFound())
		}
		u = it.domain()
		return nil
	})
	return u, err
}

// orNotFound returns err if it is set, and otherwise the not-found error: a
// helper for the (decode error, missing) pair that get returns.
func orNotFound(err, notFound error) error {
	if err != nil {
		return err
	}
	return notFound
}

// GetUserByEmail implements account.Store.
func (s *Store) GetUserByEmail(_ context.Context, email string) (account.User, error) {
	var u account.User
	err := s.read(func(tx *bolt.Tx) error {
		id := tx.Bucket(bucketUserEmails).Get([]byte(email))
		if id == nil {
			return errUserNotFound()
		}
		it, ok, err := get[userItem](tx.Bucket(bucketUsers), id)
		if err != nil || !ok {
			// A guard without its user would be a broken invariant; answer
			// as the guard's absence would, and let the cause show in logs.
			return orNotFound(err, errUserNotFound())
		}
		u = it.domain()
		return nil
	})
	return u, err
}

// UpdateUser implements account.Store: the read, the patch and the write
// share one transaction, so a concurrent update cannot slip in between.
// The e-mail and its guard stay as they are.
func (s *Store) UpdateUser(_ context.Context, id string, p account.UserPatch) (account.User, error) {
	var u account.User
	err := s.write(func(tx *bolt.Tx) error {
		users := tx.Bucket(bucketUsers)
		it, ok, err := get[userItem](users, []byte(id))
		if err != nil || !ok {
			return orNotFound(err, errUserNotFound())
		}
		if p.Name != nil {
			it.Name = *p.Name
		}
		it.UpdatedAt = p.UpdatedAt
		if err := put(users, []byte(id), it); err != nil {
			return err
		}
		u = it.domain()
		return nil
	})
	if err != nil {
		return account.User{}, err
	}
	return u, nil
}

// DeleteUser implements account.Store: the user, its e-mail guard and all
// its memberships go in one transaction.
func (s *Store) DeleteUser(_ context.Context, id string) error {
	return s.write(func(tx *bolt.Tx) error {
		users := tx.Bucket(bucketUsers)
		it, ok, err := get[userItem](users, []byte(id))
		if err != nil || !ok {
			return orNotFound(err, errUserNotFound())
		}
		if err := users.Delete([]byte(id)); err != nil {
			return err
		}
		emails := tx.Bucket(bucketUserEmails)
		if bytes.Equal(emails.Get([]byte(it.Email)), []byte(id)) {
			if err := emails.Delete([]byte(it.Email)); err != nil {
				return err
			}
		}
		return deleteMemberships(tx, bucketUserOrgs, id, func(other string) (string, string) { return other, id })
	})
}

// deleteMemberships removes every membership listed under owner in the
// index bucket idx (members_by_user for a user, members_by_org for an
// organization), with the entries of both indexes. pair maps the other
// side's id to (org id, user id).
func deleteMemberships(tx *bolt.Tx, idx []byte, owner string, pair func(other string) (orgID, userID string)) error {
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
		if err := removeMember(tx, orgID, userID); err != nil {
			return err
		}
	}
	return nil
}

// ListUsers implements account.Store. Users are keyed by ID, a ULID, so
// key order is creation order.
func (s *Store) ListUsers(_ context.Context, p account.ListParams) (account.Page[account.User], error) {
	var page account.Page[account.User]
	err := s.read(func(tx *bolt.Tx) error {
		var err error
		page, err = list(tx.Bucket(bucketUsers), "", p, func(_ string, v []byte) (account.User, error) {
			it, err := decode[userItem](v)
			return it.domain(), err
		})
		return err
	})
	return page, err
}

// CreateOrganization implements account.Store.
func (s *Store) CreateOrganization(_ context.Context, o account.Organization) error {
	return s.write(func(tx *bolt.Tx) error {
		orgs, slugs := tx.Bucket(bucketOrgs), tx.Bucket(bucketOrgSlugs)
		if slugs.Get([]byte(o.Slug)) != nil {
			return account.Errorf(account.CodeSlugTaken, "another organization has this slug")
		}
		if orgs.Get([]byte(o.ID)) != nil {
			return account.Internal(fmt.Errorf("boltstore: organization %s exists already", o.ID))
		}
		if err := put(orgs, []byte(o.ID), toOrgItem(o)); err != nil {
			return err
		}
		return slugs.Put([]byte(o.Slug), []byte(o.ID))
	})
}

// GetOrganization implements account.Store.
func (s *Store) GetOrganization(_ context.Context, id string) (account.Organization, error) {
	var o account.Organization
	err := s.read(func(tx *bolt.Tx) error {
		it, ok, err := get[orgItem](tx.Bucket(bucketOrgs), []byte(id))
		if err != nil || !ok {
			return orNotFound(err, errOrgNotFound())
		}
		o = it.domain()
		return nil
	})
	return o, err
}

// UpdateOrganization implements account.Store as UpdateUser does. The slug
// and its guard stay as they are.
func (s *Store) UpdateOrganization(_ context.Context, id string, p account.OrganizationPatch) (account.Organization, error) {
	var o account.Organization
	err := s.write(func(tx *bolt.Tx) error {
		orgs := tx.Bucket(bucketOrgs)
		it, ok, err := get[orgItem](orgs, []byte(id))
		if err != nil || !ok {
			return orNotFound(err, errOrgNotFound())
		}
		if p.Name != nil {
			it.Name = *p.Name
		}
		if p.Plan != nil {
			it.Plan = *p.Plan
		}
		it.UpdatedAt = p.UpdatedAt
		if err := put(orgs, []byte(id), it); err != nil {
			return err
		}
		o = it.domain()
		return nil
	})
	if err != nil {
		return account.Organization{}, err
	}
	return o, nil
}

// DeleteOrganization implements account.Store: the organization, its slug
// guard and all its memberships go in one transaction.
func (s *Store) DeleteOrganization(_ context.Context, id string) error {
	return s.write(func(tx *bolt.Tx) error {
		orgs := tx.Bucket(bucketOrgs)
		it, ok, err := get[orgItem](orgs, []byte(id))
		if err != nil || !ok {
			return orNotFound(err, errOrgNotFound())
		}
		if err := orgs.Delete([]byte(id)); err != nil {
			return err
		}
		slugs := tx.Bucket(bucketOrgSlugs)
		if bytes.Equal(slugs.Get([]byte(it.Slug)), []byte(id)) {
			if err := slugs.Delete([]byte(it.Slug)); err != nil {
				return err
			}
		}
		return deleteMemberships(tx, bucketOrgMembers, id, func(other string) (string, string) { return id, other })
	})
}

// ListOrganizations implements account.Store, in ULID (creation) order.
func (s *Store) ListOrganizations(_ context.Context, p account.ListParams) (account.Page[account.Organization], error) {
	var page account.Page[account.Organization]
	err := s.read(func(tx *bolt.Tx) error {
		var err error
		page, err = list(tx.Bucket(bucketOrgs), "", p, func(_ string, v []byte) (account.Organization, error) {
			it, err := decode[orgItem](v)
			return it.domain(), err
		})
		return err
	})
	return page, err
}

// AddMember implements account.Store. The existence checks and the three
// writes share one transaction, so a membership never outlives a user or
// organization deleted concurrently.
func (s *Store) AddMember(_ context.Context, m account.Membership) error {
	return s.write(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketOrgs).Get([]byte(m.OrganizationID)) == nil {
			return errOrgNotFound()
		}
		if tx.Bucket(bucketUsers).Get([]byte(m.UserID)) == nil {
			return errUserNotFound()
		}
		members := tx.Bucket(bucketMembers)
		key := join(m.OrganizationID, m.UserID)
		if members.Get(key) != nil {
			return account.Errorf(account.CodeAlreadyMember, "the user is already a member of this organization")
		}
		if err := put(members, key, toMemberItem(m)); err != nil {
			return err
		}
		at := sortTime(m.CreatedAt)
		if err := tx.Bucket(bucketOrgMembers).Put(join(m.OrganizationID, at, m.UserID), nil); err != nil {
			return err
		}
		return tx.Bucket(bucketUserOrgs).Put(join(m.UserID, at, m.OrganizationID), nil)
	})
}

// GetMember implements account.Store.
func (s *Store) GetMember(_ context.Context, orgID, userID string) (account.Membership, error) {
	var m account.Membership
	err := s.read(func(tx *bolt.Tx) error {
		it, ok, err := get[memberItem](tx.Bucket(bucketMembers), join(orgID, userID))
		if err != nil || !ok {
			return orNotFound(err, errMemberNotFound())
		}
		m = it.domain()
		return nil
	})
	return m, err
}

// UpdateMember implements account.Store as UpdateUser does. Only role and
// updated_at change: created_at is part of the list index keys.
func (s *Store) UpdateMember(_ context.Context, orgID, userID string, p account.MemberPatch) (account.Membership, error) {
	var m account.Membership
	err := s.write(func(tx *bolt.Tx) error {
		members := tx.Bucket(bucketMembers)
		key := join(orgID, userID)
		it, ok, err := get[memberItem](members, key)
		if err != nil || !ok {
			return orNotFound(err, errMemberNotFound())
		}
		it.Role, it.UpdatedAt = p.Role, p.UpdatedAt
		if err := put(members, key, it); err != nil {
			return err
		}
		m = it.domain()
		return nil
	})
	if err != nil {
		return account.Membership{}, err
	}
	return m, nil
}

// RemoveMember implements account.Store.
func (s *Store) RemoveMember(_ context.Context, orgID, userID string) error {
	return s.write(func(tx *bolt.Tx) error { return removeMember(tx, orgID, userID) })
}

// removeMember deletes a membership and both of its index entries.
func removeMember(tx *bolt.Tx, orgID, userID string) error {
	members := tx.Bucket(bucketMembers)
	key := join(orgID, userID)
	it, ok, err := get[memberItem](members, key)
	if err != nil || !ok {
		return orNotFound(err, errMemberNotFound())
	}
	at := sortTime(it.CreatedAt)
	if err := members.Delete(key); err != nil {
		return err
	}
	if err := tx.Bucket(bucketOrgMembers).Delete(join(orgID, at, userID)); err != nil {
		return err
	}
	return tx.Bucket(bucketUserOrgs).Delete(join(userID, at, orgID))
}

// ListMembers implements account.Store, newest membership first. The
// position is "<sort time>/<user id>".
func (s *Store) ListMembers(_ context.Context, orgID string, p account.ListParams) (account.Page[account.Membership], error) {
	return s.listMemberships(bucketOrgMembers, orgID, p, func(other string) (string, string) { return orgID, other })
}

// ListUserMemberships implements account.Store, newest membership first.
// The position is "<sort time>/<organization id>".
func (s *Store) ListUserMemberships(_ context.Context, userID string, p account.ListParams) (account.Page[account.Membership], error) {
	return s.listMemberships(bucketUserOrgs, userID, p, func(other string) (string, string) { return other, userID })
}

func (s *Store) listMemberships(idx []byte, owner string, p account.ListParams, pair func(other string) (orgID, userID string)) (account.Page[account.Membership], error) {
	var page account.Page[account.Membership]
	err := s.read(func(tx *bolt.Tx) error {
		members := tx.Bucket(bucketMembers)
		var err error
		page, err = list(tx.Bucket(idx), owner+"/", p, func(suffix string, _ []byte) (account.Membership, error) {
			_, other, ok := strings.Cut(suffix, "/")
			if !ok {
				return account.Membership{}, fmt.Errorf("malformed membership index key %q", suffix)
			}
			orgID, userID := pair(other)
			it, found, err := get[memberItem](members, join(orgID, userID))
			if err == nil && !found {
				err = fmt.Errorf("membership index entry %s/%s has no membership", owner, suffix)
			}
			return it.domain(), err
		})
		return err
	})
	return page, err
}

// CreateAPIKey implements account.Store. A second key with the same hash
// (or ID) is refused: the hash is how a secret finds its key. A key with
// Ancestors is entered in the tree index under its parent, which must
// exist; deletes take a key's whole subtree in one transaction, so the
// other ancestors exist too.
func (s *Store) CreateAPIKey(_ context.Context, k account.APIKey) error {
	return s.write(func(tx *bolt.Tx) error {
		keys, hashes := tx.Bucket(bucketKeys), tx.Bucket(bucketKeyHashes)
		if n := len(k.Ancestors); n > 0 {
			parent := k.Ancestors[n-1]
			if keys.Get([]byte(parent)) == nil {
				return errKeyNotFound()
			}
			if err := tx.Bucket(bucketKeyTree).Put(join(parent, k.ID), nil); err != nil {
				return err
			}
		}
		if hashes.Get(k.Hash) != nil {
			return account.Internal(errors.New("boltstore: an API key with this hash exists already"))
		}
		if keys.Get([]byte(k.ID)) != nil {
			return account.Internal(fmt.Errorf("boltstore: API key %s exists already", k.ID))
		}
		if len(k.Hash) == 0 {
			return account.Internal(fmt.Errorf("boltstore: API key %s has no hash", k.ID))
		}
		if err := put(keys, []byte(k.ID), toAPIKeyItem(k)); err != nil {
			return err
		}
		if !k.ExpiresAt.IsZero() {
			drop := k.ExpiresAt.Add(account.ExpiredKeyRetention)
			if err := tx.Bucket(bucketExpiries).Put(join(sortTime(drop), expiryAPIKey, k.ID), nil); err != nil {
				return err
			}
		}
		return hashes.Put(k.Hash, []byte(k.ID))
	})
}

// GetAPIKey implements account.Store.
func (s *Store) GetAPIKey(_ context.Context, id string) (account.APIKey, error) {
	var k account.APIKey
	err := s.read(func(tx *bolt.Tx) error {
		it, ok, err := get[apiKeyItem](tx.Bucket(bucketKeys), []byte(id))
		if err != nil || !ok {
			return orNotFound(err, errKeyNotFound())
		}
		k = it.domain()
		return nil
	})
	return k, err
}

// GetAPIKeyByHash implements account.Store.
func (s *Store) GetAPIKeyByHash(_ context.Context, hash []byte) (account.APIKey, error) {
	var k account.APIKey
	err := s.read(func(tx *bolt.Tx) error {
		if len(hash) == 0 {
			return errKeyNotFound()
		}
		id := tx.Bucket(bucketKeyHashes).Get(hash)
		if id == nil {
			return errKeyNotFound()
		}
		it, ok, err := get[apiKeyItem](tx.Bucket(bucketKeys), id)
		if err != nil || !ok {
			return orNotFound(err, errKeyNotFound())
		}
		k = it.domain()
		return nil
	})
	return k, err
}

// DeleteAPIKey implements account.Store: the key, every key below it, their
// hash entries and tree index entries go in one transaction, so every
// secret of the tree stops authenticating with this commit.
func (s *Store) DeleteAPIKey(_ context.Context, id string, allow func(account.APIKey) error) error {
	return s.write(func(tx *bolt.Tx) error {
		it, ok, err := get[apiKeyItem](tx.Bucket(bucketKeys), []byte(id))
		if err != nil || !ok {
			return orNotFound(err, errKeyNotFound())
		}
		if allow != nil {
			if err := allow(it.domain()); err != nil {
				return err
			}
		}
		return deleteKeyTree(tx, id)
	})
}

// deleteKeyTree removes the key id and every key below it, found through
// the tree index, each with deleteAPIKey.
func deleteKeyTree(tx *bolt.Tx, id string) error {
	tree := tx.Bucket(bucketKeyTree)
	// Collect first: deleting under a live cursor can skip keys in bbolt.
	ids := []string{id}
	for i := 0; i < len(ids); i++ {
		prefix := []byte(ids[i] + "/")
		c := tree.Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			ids = append(ids, string(k[len(prefix):]))
		}
	}
	for _, id := range ids {
		if err := deleteAPIKey(tx, id); err != nil {
			return err
		}
	}
	return nil
}

// deleteAPIKey removes the key id, its hash entry and its entry under its
// parent in the tree index, if the key is there.
func deleteAPIKey(tx *bolt.Tx, id string) error {
	keys := tx.Bucket(bucketKeys)
	it, ok, err := get[apiKeyItem](keys, []byte(id))
	if err != nil || !ok {
		return err
	}
	if err := keys.Delete([]byte(id)); err != nil {
		return err
	}
	if n := len(it.Ancestors); n > 0 {
		if err := tx.Bucket(bucketKeyTree).Delete(join(it.Ancestors[n-1], id)); err != nil {
			return err
		}
	}
	hashes := tx.Bucket(bucketKeyHashes)
	if bytes.Equal(hashes.Get(it.Hash), []byte(id)) {
		return hashes.Delete(it.Hash)
	}
	return nil
}

// ListAPIKeys implements account.Store, in ULID (creation) order.
func (s *Store) ListAPIKeys(_ context.Context, p account.ListParams) (account.Page[account.APIKey], error) {
	var page account.Page[account.APIKey]
	err := s.read(func(tx *bolt.Tx) error {
		var err error
		page, err = list(tx.Bucket(bucketKeys), "", p, func(_ string, v []byte) (account.APIKey, error) {
			it, err := decode[apiKeyItem](v)
			return it.domain(), err
		})
		return err
	})
	return page, err
}

// Kinds of entries in the expiry index.
const (
	expiryToken      = "t"
	expiryRevocation = "r"
	// expiryAPIKey entries fall due account.ExpiredKeyRetention after the
	// key expires; a key deleted before then leaves an entry that pruning
	// simply drops.
	expiryAPIKey = "k"
)

// CreateToken implements account.Store. The record is also entered in the
// expiry index, so that pruning finds it without a scan.
func (s *Store) CreateToken(_ context.Context, t account.TokenRecord) error {
	return s.write(func(tx *bolt.Tx) error {
		if err := put(tx.Bucket(bucketTokens), []byte(t.ID), toTokenItem(t)); err != nil {
			return err
		}
		return tx.Bucket(bucketExpiries).Put(join(sortTime(t.ExpiresAt), expiryToken, t.ID), nil)
	})
}

// RevokeToken implements account.Store.
func (s *Store) RevokeToken(_ context.Context, r account.Revocation) (time.Time, error) {
	var at time.Time
	err := s.write(func(tx *bolt.Tx) error {
		revoked := tx.Bucket(bucketRevoked)
		it, ok, err := get[revocationItem](revoked, []byte(r.TokenID))
		if err != nil {
			return err
		}
		if ok {
			at = it.RevokedAt
			return nil
		}
		at = r.RevokedAt
		if err := put(revoked, []byte(r.TokenID), toRevocationItem(r)); err != nil {
			return err
		}
		return tx.Bucket(bucketExpiries).Put(join(sortTime(r.ExpiresAt), expiryRevocation, r.TokenID), nil)
	})
	return at, err
}

// TokenStatus implements account.Store: one read transaction covers the
// revocation entry and the key, so the two are consistent with each other.
// A key's ancestors need no reading here: a delete takes a key and every
// key below it in one transaction, so a key is there only while they are.
func (s *Store) TokenStatus(_ context.Context, tokenID, keyID string, _ []string) (account.TokenStatus, error) {
	var st account.TokenStatus
	err := s.read(func(tx *bolt.Tx) error {
		r, ok, err := get[revocationItem](tx.Bucket(bucketRevoked), []byte(tokenID))
		if err != nil {
			return err
		}
		if ok {
			st.RevokedAt = r.RevokedAt
		}
		k, ok, err := get[apiKeyItem](tx.Bucket(bucketKeys), []byte(keyID))
		if err != nil {
			return err
		}
		if ok {
			key := k.domain()
			st.Key = &key
		}
		return nil
	})
	return st, err
}

// Prune deletes token records and revocation entries whose ExpiresAt is
// before now, and API keys expired for account.ExpiredKeyRetention, at most pruneMax of them, and returns how many entries it
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
				err = tx.Bucket(bucketTokens).Delete([]byte(parts[2]))
			case expiryRevocation:
				err = tx.Bucket(bucketRevoked).Delete([]byte(parts[2]))
			case expiryAPIKey:
				// The keys below it have expired too (no key outlives
				// its creator), and usually gone already.
				err = deleteKeyTree(tx, parts[2])
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
		return nil
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

package boltstore

import (
	"bytes"

	bolt "go.etcd.io/bbolt"

	"latchkey/pkg/account"
)

// guard is a bucket that maps a unique value (an e-mail, a slug, an
// external id) to the ID of the user or organization that holds it. It is
// written in the same transaction as its holder, so the two never
// disagree.
type guard struct {
	bucket []byte
	taken  func() *account.Error // the conflict of a value held already
}

var (
	emailGuard     = guard{bucketUserEmails, account.ErrEmailTaken}
	userExtIDGuard = guard{bucketUserExtIDs, account.ErrUserExternalIDTaken}
	slugGuard      = guard{bucketOrgSlugs, account.ErrSlugTaken}
	orgExtIDGuard  = guard{bucketOrgExtIDs, account.ErrOrganizationExternalIDTaken}
)

// claim enters value for owner in the guard, unless it is "" (none), or
// held already: then the guard's conflict error.
func (g guard) claim(tx *bolt.Tx, value, owner string) error {
	if value == "" {
		return nil
	}
	b := tx.Bucket(g.bucket)
	if b.Get([]byte(value)) != nil {
		return g.taken()
	}
	return b.Put([]byte(value), []byte(owner))
}

// release removes value from the guard if owner holds it.
func (g guard) release(tx *bolt.Tx, value, owner string) error {
	if value == "" {
		return nil
	}
	b := tx.Bucket(g.bucket)
	if bytes.Equal(b.Get([]byte(value)), []byte(owner)) {
		return b.Delete([]byte(value))
	}
	return nil
}

// move releases old and claims new for owner, when they differ; a conflict
// leaves the transaction to be rolled back by the caller's error.
func (g guard) move(tx *bolt.Tx, old, new, owner string) error {
	if old == new {
		return nil
	}
	if err := g.claim(tx, new, owner); err != nil {
		return err
	}
	return g.release(tx, old, owner)
}

// lookupBy reads the ID the guard holds for value, then that item from
// bucket: the lookups by e-mail, slug and external id.
func lookupBy[T any](tx *bolt.Tx, g guard, bucket []byte, value string, notFound error) (T, error) {
	var zero T
	id := tx.Bucket(g.bucket).Get([]byte(value))
	if id == nil {
		return zero, notFound
	}
	it, ok, err := get[T](tx.Bucket(bucket), id)
	if err != nil || !ok {
		// A guard without its item would be a broken invariant; answer
		// as the guard's absence would, and let the cause show in logs.
		return zero, orNotFound(err, notFound)
	}
	return it, nil
}

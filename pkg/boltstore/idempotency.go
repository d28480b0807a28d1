package boltstore

import (
	"context"
	"errors"
	"time"

	bolt "go.etcd.io/bbolt"

	"latchkey/pkg/account"
)

// Idempotency records live in bucketIdempotency under "<key id>/<key>",
// with an entry in the expiry index, so that pruning drops them
// account.IdempotencyRetention after their creation as it drops expired
// tokens. The record of a request's change is committed in the
// transaction of the change itself: write does it for every method that
// changes data.

// expiryIdempotency entries fall due when a record expires. A record
// claimed again after expiring gets a new entry; pruning deletes a record
// only if it has expired, so the old entry cannot take the new record.
const expiryIdempotency = "i"

func idempotencyKey(keyID, key string) []byte { return join(keyID, key) }

// ClaimIdempotency implements account.Store: the read and the write are one
// transaction.
func (s *Store) ClaimIdempotency(_ context.Context, r account.IdempotencyRecord, now time.Time) (account.IdempotencyRecord, bool, error) {
	var held account.IdempotencyRecord
	var claimed bool
	err := s.db.Batch(func(tx *bolt.Tx) error {
		held, claimed = account.IdempotencyRecord{}, false
		records := tx.Bucket(bucketIdempotency)
		k := idempotencyKey(r.KeyID, r.Key)
		it, ok, err := get[idempotencyItem](records, k)
		if err != nil {
			return err
		}
		if ok && it.domain().InForceAt(r.Fingerprint, now) {
			held = it.domain()
			return nil
		}
		if err := put(records, k, toIdempotencyItem(r)); err != nil {
			return err
		}
		claimed = true
		return tx.Bucket(bucketExpiries).Put(join(sortTime(r.ExpiresAt), expiryIdempotency, string(k)), nil)
	})
	if err != nil {
		return account.IdempotencyRecord{}, false, wrap(err)
	}
	if claimed {
		return r, true, nil
	}
	return held, false, nil
}

// FinishIdempotency implements account.Store.
func (s *Store) FinishIdempotency(_ context.Context, r account.IdempotencyRecord) error {
	return wrap(s.db.Batch(func(tx *bolt.Tx) error {
		records := tx.Bucket(bucketIdempotency)
		k := idempotencyKey(r.KeyID, r.Key)
		it, ok, err := get[idempotencyItem](records, k)
		if err != nil {
			return err
		}
		if !ok || it.Owner != r.Owner {
			return account.ErrIdempotencyLost()
		}
		return put(records, k, toIdempotencyItem(r))
	}))
}

// ReleaseIdempotency implements account.Store. The expiry index entry
// stays; pruning drops it when it falls due.
func (s *Store) ReleaseIdempotency(_ context.Context, keyID, key, owner string) error {
	return wrap(s.db.Batch(func(tx *bolt.Tx) error {
		records := tx.Bucket(bucketIdempotency)
		k := idempotencyKey(keyID, key)
		it, ok, err := get[idempotencyItem](records, k)
		if err != nil || !ok || it.Owner != owner || it.State != account.IdempotencyStarted {
			return err
		}
		return records.Delete(k)
	}))
}

// commitIdempotency moves the record of c from started to applied, in the
// transaction of the change that c's request makes. A record that c.Owner
// no longer holds fails the transaction: another request took it over and
// makes the change itself.
func commitIdempotency(tx *bolt.Tx, c *account.IdempotencyCommit) error {
	records := tx.Bucket(bucketIdempotency)
	k := idempotencyKey(c.KeyID, c.Key)
	it, ok, err := get[idempotencyItem](records, k)
	if err != nil {
		return err
	}
	if !ok || it.Owner != c.Owner || it.State == account.IdempotencyDone {
		return account.ErrIdempotencyLost()
	}
	it.State = account.IdempotencyApplied
	return put(records, k, it)
}

// pruneIdempotency deletes the record k if it has expired at now.
func pruneIdempotency(tx *bolt.Tx, k []byte, now time.Time) error {
	records := tx.Bucket(bucketIdempotency)
	it, ok, err := get[idempotencyItem](records, k)
	if err != nil || !ok || now.Before(it.ExpiresAt) {
		return err
	}
	return records.Delete(k)
}

// errNothingChanged ends a write function that found nothing to change
// (revoking a revoked token): its transaction is rolled back and write
// reports success without committing an idempotency record, since there
// is no change for the record to say was made.
var errNothingChanged = errors.New("boltstore: nothing to change")

func nothingChanged(err error) error {
	if errors.Is(err, errNothingChanged) {
		return nil
	}
	return err
}

package tablestore

import (
	"context"
	"errors"
	"slices"
	"time"

	"latchkey/pkg/account"
)

// Idempotency records are one item each, IDEM#<key id>/IDEM#<key> (see
// keys.go and docs/dynamodb.md), with TTL 24 hours after their creation.
// The record of a request's change goes into the transaction of the change
// itself: transactReturningOld appends it to every transaction of a change
// whose account.WriteOptions hold an account.IdempotencyCommit, and a
// method whose change takes several writes leaves the commit out of all
// but the last (change.withoutCommit).

// ClaimIdempotency is one conditional PutItem: it writes r unless a record
// in force is there (account.IdempotencyRecord.InForceAt, as a condition),
// and the record there comes back with the failed condition.
func (s *Store) ClaimIdempotency(ctx context.Context, r account.IdempotencyRecord, now time.Time) (account.IdempotencyRecord, bool, error) {
	nowMilli := now.UnixMilli()
	lapsed := attr("state").Equal(account.IdempotencyStarted).
		And(attr("lease_until").LessThanEqual(nowMilli)).
		And(attr("fingerprint").Equal(r.Fingerprint))
	cond := condAbsent.Or(attr("expires_at").LessThanEqual(nowMilli), lapsed)
	it, err := s.put(newIdempotencyItem(r), cond)
	if err != nil {
		return account.IdempotencyRecord{}, false, err
	}
	it.ReturnOld = true
	err = s.retryConflicts(ctx, func() error {
		_, err := s.port.Write(ctx, it, false)
		return err
	})
	if err == nil {
		return r, true, nil
	}
	ccf, ok := conditionFailed(err)
	if !ok {
		return account.IdempotencyRecord{}, false, storeErr(err)
	}
	var held idempotencyItem
	if ccf.Old != nil {
		if err := unmarshal(ccf.Old, &held); err != nil {
			return account.IdempotencyRecord{}, false, err
		}
		return held.record(), false, nil
	}
	// An endpoint that does not return the old item: read it.
	found, err := s.getItem(ctx, idempotencyKey(r.KeyID, r.Key), &held)
	if err != nil {
		return account.IdempotencyRecord{}, false, err
	}
	if !found {
		return account.IdempotencyRecord{}, false, account.Unavailable(errors.New("tablestore: idempotency record vanished after a failed condition"))
	}
	return held.record(), false, nil
}

// ownedBy is the condition that the record is held by owner.
func ownedBy(owner string) Cond {
	return attr("owner").Equal(owner)
}

// FinishIdempotency is one PutItem on condition that r.Owner holds the
// record.
func (s *Store) FinishIdempotency(ctx context.Context, r account.IdempotencyRecord) error {
	it, err := s.put(newIdempotencyItem(r), ownedBy(r.Owner))
	if err != nil {
		return err
	}
	err = s.retryConflicts(ctx, func() error {
		_, err := s.port.Write(ctx, it, false)
		return err
	})
	if _, ok := conditionFailed(err); ok {
		return account.ErrIdempotencyLost()
	}
	return storeErr(err)
}

// ReleaseIdempotency is one DeleteItem on condition that owner holds the
// record and it is started; a failed condition is no error.
func (s *Store) ReleaseIdempotency(ctx context.Context, keyID, k, owner string) error {
	cond := ownedBy(owner).And(attr("state").Equal(account.IdempotencyStarted))
	it, err := s.del(idempotencyKey(keyID, k), cond)
	if err != nil {
		return err
	}
	err = s.retryConflicts(ctx, func() error {
		_, err := s.port.Write(ctx, it, false)
		return err
	})
	if _, ok := conditionFailed(err); ok {
		return nil
	}
	return storeErr(err)
}

// withCommit returns items and onCheckFailed with, when c is not nil, the
// move of c's record to applied appended, on condition that c.Owner holds
// it and it is not done: a record another request has taken over cancels
// the transaction, change and all, with account.ErrIdempotencyLost. The
// slices passed in are not modified. It is the one place where the last
// transaction of a change gains items, and so where an event of the
// change (issue 11's feed) would join it too.
func (s *Store) withCommit(c *account.IdempotencyCommit, items []Write, onCheckFailed []error) ([]Write, []error, error) {
	if c == nil {
		return items, onCheckFailed, nil
	}
	cond := ownedBy(c.Owner).And(attr("state").NotEqual(account.IdempotencyDone))
	applied := set("state", account.IdempotencyApplied)
	it, err := s.update(idempotencyKey(c.KeyID, c.Key), applied, cond)
	if err != nil {
		return nil, nil, err
	}
	errs := make([]error, len(items), len(items)+1)
	copy(errs, onCheckFailed)
	return append(slices.Clip(items), it), append(errs, account.ErrIdempotencyLost()), nil
}

// updateWithCommit is updateItem for a change that commits an idempotency
// record: UpdateItem cannot carry a second item, so it is one transaction
// of the update and the record, then a strongly consistent GetItem of the
// item for out (a transaction returns no items). The item read may hold an
// update made between the two; no request of the API both takes
// Idempotency-Key and updates this way, so that is the price of keeping the
// Store contract for any that would.
func (s *Store) updateWithCommit(ctx context.Context, c change, k key, upd Update, cond Cond, out any, notFound error) error {
	it, err := s.update(k, upd, cond)
	if err != nil {
		return err
	}
	if err := s.transact(ctx, c, []Write{it}, notFound); err != nil {
		return err
	}
	found, err := s.getItem(ctx, k, out)
	if err != nil {
		return err
	}
	if !found {
		return notFound
	}
	return nil
}

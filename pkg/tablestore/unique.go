package tablestore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"latchkey/pkg/account"
)

// The unique values of users and organizations (e-mail, slug, external
// ids): each is claimed by a guard item, written in the same transaction
// as its holder and as every change of the value, so that a value has at
// most one holder and a holder's guard always names it.

// unique is a value of a user or an organization that no other may hold,
// claimed by a guard item: the attribute that holds it on the item, the
// guard's key for a value, and the conflict of a value taken.
type unique struct {
	attr  string
	key   func(value string) key
	taken func() *account.Error
}

var (
	uniqueEmail     = unique{"email", emailKey, account.ErrEmailTaken}
	uniqueUserExtID = unique{"external_id", userExtKey, account.ErrUserExternalIDTaken}
	uniqueSlug      = unique{"slug", slugKey, account.ErrSlugTaken}
	uniqueOrgExtID  = unique{"external_id", orgExtKey, account.ErrOrganizationExternalIDTaken}
)

// claimed is a unique value a write claims for its item; "" claims nothing.
type claimed struct {
	unique
	value string
}

// owners describes the kind of item that holds guards (users,
// organizations): the key of one by ID, its delete (to finish one cut
// off), and the error for one not found.
type owners struct {
	key          func(id string) key
	finishDelete func(context.Context, account.WriteOptions, string) error
	notFound     func() *account.Error
}

// create writes a new user or organization (item, with ID id) and the
// guards of its unique values in one transaction, with the items more
// (whose failed conditions mean moreFailed); see claim. The error of the
// first value taken, in the order given.
func (s *Store) create(ctx context.Context, c change, item any, id string, values []claimed, o owners, more []Write, moreFailed []error) error {
	steps := []func() (Write, error){
		func() (Write, error) { return s.put(item, condAbsent) },
	}
	onCheckFailed := []error{nil}
	for _, v := range values {
		if v.value == "" {
			continue
		}
		steps = append(steps, func() (Write, error) { return s.putGuard(v.key(v.value), id) })
		onCheckFailed = append(onCheckFailed, v.taken())
	}
	items, err := build(steps...)
	if err != nil {
		return err
	}
	return s.claim(ctx, c, append(items, more...), append(onCheckFailed, moreFailed...), o)
}

// claim runs a transaction that claims unique values (an e-mail, a slug,
// an external id) with guard items written by putGuard; onCheckFailed maps
// each failed condition as transact does. If a guard is taken by an owner
// flagged deleting (a delete cut off between its transactions, see
// cascade), claim finishes that delete and tries once more: an abandoned
// delete holds its e-mail, slug or external id only until the next attempt
// to claim it, never forever. That costs one GetItem of the holder on a
// conflict, nothing otherwise: the guard's old item, which names the
// holder, comes back with the failed condition. If the holder cannot be
// read, the conflict stands.
func (s *Store) claim(ctx context.Context, c change, items []Write, onCheckFailed []error, o owners) error {
	old, err := s.transactReturningOld(ctx, c, items, onCheckFailed...)
	if err == nil || !s.finishedAbandoned(ctx, c, err, old, o) {
		return err
	}
	return s.transact(ctx, c, items, onCheckFailed...)
}

// putGuard claims a guard item for the owner id, on condition that nobody
// holds it. If someone does, the guard comes back with the failure
// (ALL_OLD), naming the holder, for claim.
func (s *Store) putGuard(k key, id string) (Write, error) {
	it, err := s.put(guardItem{key: k, OwnerID: id}, condAbsent)
	if err == nil {
		it.ReturnOld = true
	}
	return it, err
}

// finishedAbandoned reports whether err is a conflict over a guard (old,
// its item as the failed condition returned it) held by an owner whose
// delete was abandoned, and, if it is, finishes that delete first.
func (s *Store) finishedAbandoned(ctx context.Context, c change, err error, old Item, o owners) bool {
	switch account.ErrorCode(err) {
	case account.CodeEmailTaken, account.CodeSlugTaken, account.CodeExternalIDTaken:
	default:
		return false
	}
	var g guardItem
	if old == nil || unmarshal(old, &g) != nil || g.OwnerID == "" {
		return false
	}
	var holder struct {
		Deleting bool `dynamodbav:"deleting"`
	}
	if found, rerr := s.getItem(ctx, o.key(g.OwnerID), &holder); rerr != nil || !found || !holder.Deleting {
		return false
	}
	// Another's delete, not this request's change: no idempotency record.
	ferr := o.finishDelete(ctx, c.withoutCommit().WriteOptions, g.OwnerID)
	return ferr == nil || account.IsCode(ferr, account.CodeNotFound)
}

// lookupBy reads the guard g and then, with get, the item it names: the
// lookups by e-mail, slug and external id, 2 GetItem. CodeNotFound
// (notFound) if there is no guard.
func lookupBy[T any](ctx context.Context, s *Store, g key, get func(context.Context, string) (T, error), notFound func() *account.Error) (T, error) {
	var guard guardItem
	found, err := s.getItem(ctx, g, &guard)
	if err != nil {
		var zero T
		return zero, err
	}
	if !found {
		var zero T
		return zero, notFound()
	}
	return get(ctx, guard.OwnerID)
}

// setMetadata adds a patch's metadata to upd: replaced whole, or removed
// when the patch's is empty. A nil patch leaves it as it is.
func setMetadata(upd Update, m *account.Metadata) Update {
	switch {
	case m == nil:
		return upd
	case len(*m) == 0:
		return upd.remove("metadata")
	}
	return upd.set("metadata", map[string]string(*m))
}

// move is an update of a unique value: from old to new, either "" for none.
type move struct {
	unique
	old, new string
}

// updateAttempts bounds how often updateClaiming reads the item again
// because another write changed it between its read and its write.
const updateAttempts = 5

// errChanged marks an update whose item changed after updateClaiming read
// it; it reads again.
var errChanged = errors.New("tablestore: the item changed between the read and the write")

// updateClaiming is an update that may move unique values (an e-mail, an
// external id), for which it must know the values it frees: it reads the
// item k (ID id) strongly consistently into out, then, for the moves
// that change a value, writes the update, the new values' guards
// (putGuard) and the deletes of the old ones (on condition that they are
// still id's) in one transaction, on condition that the item is live and
// unchanged since the read (updated_at and each moved attribute as read).
// If it changed, the read and the transaction are repeated, up to
// updateAttempts times. Without a value to move it is one UpdateItem after
// the read. A guard held by an owner whose delete was abandoned is freed
// as claim does. moves, deleting and updatedAt read out after each read.
// On success out holds the item as read (or, without a value to move, as
// written), for the caller to apply the patch to: the condition makes that
// the item this update changed. CodeNotFound (o.notFound); the conflicts of
// the moved values. event, read out after each read too, is the event of
// the update, which goes into its write: the condition makes its object
// the one the write leaves. also are writes that go into the same
// transaction, unconditional (an organization's read copies).
func (s *Store) updateClaiming(ctx context.Context, c change, k key, id string, out any, upd func() Update, moves func() []move, deleting func() bool, updatedAt func() time.Time, event func() account.PendingEvent, o owners, also []Write) error {
	for attempt := 0; ; attempt++ {
		found, err := s.getItem(ctx, k, out)
		if err != nil {
			return err
		}
		if !found || deleting() {
			return o.notFound()
		}
		c := c.with(event())
		cond := condLive.And(attr("updated_at").Equal(updatedAt().UTC()))
		u := upd()
		steps := []func() (Write, error){nil}
		onCheckFailed := []error{errChanged}
		for _, m := range moves() {
			if m.old == "" {
				cond = cond.And(attr(m.attr).NotExists())
			} else {
				cond = cond.And(attr(m.attr).Equal(m.old))
			}
			if m.old == m.new {
				continue
			}
			if m.new == "" {
				u = u.remove(m.attr)
			} else {
				u = u.set(m.attr, m.new)
				steps = append(steps, func() (Write, error) { return s.putGuard(m.key(m.new), id) })
				onCheckFailed = append(onCheckFailed, m.taken())
			}
			if m.old != "" {
				ownedBy := attr("owner_id").Equal(id)
				steps = append(steps, func() (Write, error) { return s.del(m.key(m.old), ownedBy) })
				onCheckFailed = append(onCheckFailed, nil) // a guard not its owner's: a broken invariant
			}
		}
		for _, w := range also {
			steps = append(steps, func() (Write, error) { return w, nil })
			onCheckFailed = append(onCheckFailed, nil) // unconditional
		}
		if len(steps) == 1 && c.recording() {
			// Nothing to claim or free, but an event to write: one
			// transaction of the update and the event, on the same
			// condition; the caller has the item as read, and the patch.
			var it Write
			if it, err = s.update(k, u, cond); err != nil {
				return err
			}
			err = s.transact(ctx, c, []Write{it}, errChanged)
		} else if len(steps) == 1 {
			// Nothing to claim or free: one UpdateItem, on the same
			// condition. A failure is not found or a change: read again.
			err = s.updateItem(ctx, c, k, u, cond, out, o.notFound())
			if !account.IsCode(err, account.CodeNotFound) {
				return err
			}
			err = errChanged
		} else {
			steps[0] = func() (Write, error) { return s.update(k, u, cond) }
			items, berr := build(steps...)
			if berr != nil {
				return berr
			}
			var old Item
			old, err = s.transactReturningOld(ctx, c, items, onCheckFailed...)
			if err != nil && s.finishedAbandoned(ctx, c, err, old, o) {
				err = errChanged // read again, and claim the freed value
			}
		}
		if !errors.Is(err, errChanged) {
			return err
		}
		if err := s.backOffChanged(ctx, c, attempt); err != nil {
			return err
		}
	}
}

// recordedUpdateAttempts bounds the attempts of an update that records its
// event: every such update reads the item and writes on condition that it
// is unchanged, so of n concurrent updates of one item one commits per
// round, and the last may need n rounds. The rounds are spread by a
// jittered backoff.
const recordedUpdateAttempts = 40

// backOffChanged is what updateClaiming does after attempt found the item
// changed: CodeConcurrentUpdate after the last attempt (a lost race, not
// an outage); for an update that
// records its event, a jittered backoff before the next (see
// recordedUpdateAttempts).
func (s *Store) backOffChanged(ctx context.Context, c change, attempt int) error {
	limit := updateAttempts
	if c.recording() {
		limit = recordedUpdateAttempts
	}
	if attempt+1 >= limit {
		return account.ErrConcurrentUpdate("resource")
	}
	if !c.recording() {
		return nil
	}
	backoff := time.Duration(2<<min(attempt, 5)) * time.Millisecond
	select {
	case <-ctx.Done():
		return fmt.Errorf("tablestore: abandoned by the caller: %w", ctx.Err())
	case <-time.After(backoff/2 + rand.N(backoff/2+1)):
	}
	return nil
}

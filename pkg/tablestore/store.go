// Package tablestore implements account.Store on one table with
// DynamoDB's data model, written once against the narrow Port of
// port.go: the few operations it sends, in its own types, with a closed
// set of conditions. pkg/dynamostore translates them to DynamoDB's API
// (with its call deadline); boltstore's embedded table executes them.
// Every rule of the single-table layout lives here, once.
//
// The layout (keys in keys.go, items in items.go, table in table.go) and the
// cost of every operation are described in docs/dynamodb.md. This file
// holds what every entity's methods share: transactions and their
// conflict retries, paging, patches, the membership cascade and batched
// reads; unique.go the claims of unique values (e-mail, slug, external
// ids) and the updates that move them; users.go, organizations.go, members.go,
// apikeys.go (with keytree.go, the cascade of a key's tree) and tokens.go
// hold each entity's methods. In short:
// uniqueness is enforced by guard items written in the same
// TransactWriteItems as the item they guard; every read that decides
// security or uniqueness is strongly consistent; a verify is one BatchGetItem.
package tablestore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"latchkey/pkg/account"
)

// maxTransactItems is DynamoDB's limit on the items of one transaction.
const maxTransactItems = 100

// Store is an account.Store on one table. It is safe for concurrent use.
// Besides the table it holds a memo of key items (keyMemo) and, under
// WithSerialWrites, the last event id it made (see ResumeEvents).
type Store struct {
	port            Port
	closer          io.Closer
	conflictRetries int
	eventLag        time.Duration
	// serial, set by WithSerialWrites, is held from the making of an
	// event's id to the commit of its transaction; lastEvent is the last
	// id made under it.
	serial    *sync.Mutex
	lastEvent string
	keys      keyMemo
	overflows overflowMemo
	// readCopy is the copy every verify reads, or -1 (New's) for one at
	// random (see verifyCopy).
	readCopy int
	// copies remembers each key's number of verify copies (see pickCopy).
	copies copiesMemo
	// noCopyGrowth: see WithoutCopyGrowth; growBy and handoffs: see
	// WithCopyGrowthBy.
	noCopyGrowth bool
	growBy       func(ctx context.Context, keyID string)
	handoffs     handoffMemo
}

var _ account.Store = (*Store)(nil)

// Option configures a Store.
type Option func(*Store)

// WithConflictRetries sets how many times a transaction cancelled by a
// TransactionConflict (another transaction holding one of its items, e.g.
// two clients claiming the same e-mail at once) is retried before the store
// reports CodeConcurrentUpdate. The default is 8. The SDK does not retry these
// itself because the cancellation is not a transport failure.
func WithConflictRetries(n int) Option {
	return func(s *Store) { s.conflictRetries = max(n, 0) }
}

// WithEventLag sets how far behind its clock the store reads the event
// feed (see events.go): EventLag of the longest a call of t may take. The
// default, EventLag(5 s), covers the longest call timeout pkg/dynamostore
// accepts.
func WithEventLag(d time.Duration) Option {
	return func(s *Store) { s.eventLag = max(d, 0) }
}

// WithSerialWrites tells the store that t has one writer in one process
// (boltstore's table): nothing else writes it, and its writes commit one
// after another. The store then makes the ids of a transaction's events
// and commits it under one lock, so that ids are in commit order, and
// reads the event feed with no lag: every event a reader can see was
// committed before any later one. It overrides WithEventLag.
func WithSerialWrites() Option {
	return func(s *Store) { s.serial = new(sync.Mutex) }
}

// WithoutCopyGrowth makes a store whose role may not write a key's verify
// copies (template.yaml: every function but auth) grow none from its
// usage flushes (see sizing.go): the auth function's flushes, the
// requests of WithCopyGrowthBy's stores, and every revocation and key
// change size them.
func WithoutCopyGrowth() Option {
	return func(s *Store) { s.noCopyGrowth = true }
}

// WithCopyGrowthBy is WithoutCopyGrowth for a store whose process may ask
// another to grow the copies: a usage flush that shows a key busy calls
// grow with its ID instead (the verify URL and the authorizer invoke the
// auth function, which reads the key's rate itself: GrowCopies), at most
// once a minute per key (growHandoffEvery), and not for a key this
// process last read at the most copies. grow runs in the flush: it must
// be bounded, and reports nothing.
func WithCopyGrowthBy(grow func(ctx context.Context, keyID string)) Option {
	return func(s *Store) { s.noCopyGrowth, s.growBy = true, grow }
}

// defaultEventLag is the event lag of a Store made without WithEventLag.
var defaultEventLag = EventLag(5 * time.Second)

// New returns a Store over p: dynamostore's translation to DynamoDB, or
// boltstore's table. Close closes p if it is an io.Closer.
func New(p Port, opts ...Option) *Store {
	s := &Store{port: p, conflictRetries: 8, eventLag: defaultEventLag, readCopy: -1}
	s.closer, _ = p.(io.Closer)
	for _, o := range opts {
		o(s)
	}
	if s.serial != nil {
		s.eventLag = 0
	}
	return s
}

// Close closes t if it is an io.Closer (boltstore's table, whose file the
// store was opened on). A *dynamodb.Client holds nothing to release, and
// belongs to the caller.
func (s *Store) Close() error {
	if s.closer != nil {
		return s.closer.Close()
	}
	return nil
}

// Conditions used throughout. Every item has a pk, so attribute_exists(pk)
// means "the item exists".
var (
	condAbsent  = attr("pk").NotExists()
	condPresent = attr("pk").Exists()
	// condLive is condPresent for a user or organization that is not being
	// deleted: AddMember requires it of both sides.
	condLive = condPresent.And(attr("deleting").NotExists())
)

// ---- building blocks ----

func (s *Store) put(item any, c Cond) (Write, error) {
	it, err := marshal(item)
	if err != nil {
		return Write{}, err
	}
	return Write{Kind: WritePut, Item: it, If: c}, nil
}

// putAlways writes item with no condition.
func (s *Store) putAlways(item any) (Write, error) {
	return s.put(item, Cond{})
}

func (s *Store) check(k key, c Cond) (Write, error) {
	return Write{Kind: WriteCheck, Key: k, If: c}, nil
}

// del deletes k; with a condition unless c is the zero Cond.
func (s *Store) del(k key, c Cond) (Write, error) {
	return Write{Kind: WriteDelete, Key: k, If: c}, nil
}

func (s *Store) update(k key, u Update, c Cond) (Write, error) {
	return Write{Kind: WriteUpdate, Key: k, Update: u, If: c}, nil
}

// build collects transaction items, stopping at the first error.
func build(items ...func() (Write, error)) ([]Write, error) {
	out := make([]Write, 0, len(items))
	for _, f := range items {
		it, err := f()
		if err != nil {
			return nil, err
		}
		out = append(out, it)
	}
	return out, nil
}

// change is what a transaction writes besides its items, passed from the
// Store method that makes the change down to each of its transactions:
// the caller's account.WriteOptions (the EventSource that events are
// written with, the idempotency commit) and the events of this
// transaction.
type change struct {
	account.WriteOptions
	events []account.PendingEvent
}

// newChange returns the change that opts make, with events.
func newChange(opts account.WriteOptions, events ...account.PendingEvent) change {
	return change{opts, events}
}

// with returns c with events in place of its own: for a transaction whose
// events are known before it is made.
func (c change) with(events ...account.PendingEvent) change {
	c.events = events
	return c
}

// withoutCommit returns c without its idempotency commit and its events,
// for a write that is not the last of a change: the record must be
// committed with the write that completes it, and the events with the
// write they record.
func (c change) withoutCommit() change {
	return change{WriteOptions: account.WriteOptions{Events: c.Events}}
}

// recording reports whether the change records events.
func (c change) recording() bool { return c.Events != nil }

// transact runs one TransactWriteItems and maps a cancellation to
// onCheckFailed (see cancellation), retrying conflicts (see retryConflicts).
func (s *Store) transact(ctx context.Context, c change, items []Write, onCheckFailed ...error) error {
	_, err := s.transactReturningOld(ctx, c, items, onCheckFailed...)
	return err
}

// transactReturningOld is transact that also returns, when a condition
// fails, the item as it was if that item asked for it
// (ReturnValuesOnConditionCheckFailure ALL_OLD); nil otherwise. When c
// has an account.IdempotencyCommit, its record goes into the same
// transaction (withCommit), and is marked applied once it has committed.
// c's events go into it too, with ids made immediately before each
// attempt (see events.go).
func (s *Store) transactReturningOld(ctx context.Context, c change, items []Write, onCheckFailed ...error) (Item, error) {
	items, onCheckFailed, err := s.withCommit(c.Commit, items, onCheckFailed)
	if err != nil {
		return nil, err
	}
	var old Item
	err = s.retryConflicts(ctx, func() error {
		all := items
		var err error
		serial, inWriter := s.port.(SerialPort)
		switch {
		case len(c.events) == 0 || !c.recording():
			err = s.port.Transact(ctx, all)
		case s.serial != nil && inWriter:
			// The ids are made in the table's writer: see SerialPort.
			err = serial.TransactWith(ctx, all, func() ([]Write, error) {
				return s.eventItems(c)
			})
		default:
			if s.serial != nil {
				// From the ids to the commit: see WithSerialWrites.
				s.serial.Lock()
				defer s.serial.Unlock()
			}
			// A busy event shard throttles the transaction of a change:
			// the change goes again at once with its events in the next
			// shards (eventItems takes them in turn), so that no change, a
			// revocation least of all, fails because the event log is busy.
			for busy := 0; ; busy++ {
				evs, evErr := s.eventItems(c)
				if evErr != nil {
					return evErr
				}
				all = append(slices.Clip(items), evs...)
				err = s.port.Transact(ctx, all)
				if err == nil || busy == eventShards-1 || !eventsBusy(err, len(items)) {
					break
				}
			}
		}
		if err == nil {
			return nil
		}
		var mapped error
		if old, mapped = cancellation(err, onCheckFailed); mapped != nil {
			return mapped
		}
		return storeErr(err)
	})
	if err == nil && c.Commit != nil {
		c.Commit.MarkApplied()
	}
	return old, err
}

// retryConflicts runs write until it returns anything but a conflict (see
// errTransactionConflict), with jittered backoff in between, at most
// s.conflictRetries more times; then the store reports
// CodeConcurrentUpdate (409): the write lost a race, nothing was written,
// and the client may send it again. It is no outage (CodeUnavailable, 503
// and an ERROR log). Once the other transaction has committed, the retry
// fails its condition (e.g. email_taken) or succeeds, which is the answer
// a serial execution would have given.
func (s *Store) retryConflicts(ctx context.Context, write func() error) error {
	for attempt := 0; ; attempt++ {
		err := write()
		if !errors.Is(err, errTransactionConflict) {
			return err
		}
		if attempt >= s.conflictRetries {
			return account.ErrConcurrentUpdate("resource")
		}
		if err := backoff(ctx, attempt); err != nil {
			return err
		}
	}
}

// backoff waits before retry number attempt+1 of a write that lost a race:
// 5 ms doubled each attempt up to 160 ms, half of it jittered, so that
// writers that collided do not collide again in step. An error if ctx
// ends first.
func backoff(ctx context.Context, attempt int) error {
	d := time.Duration(5<<min(attempt, 5)) * time.Millisecond
	select {
	case <-ctx.Done():
		return fmt.Errorf("tablestore: abandoned by the caller: %w", ctx.Err())
	case <-time.After(d/2 + rand.N(d/2+1)):
		return nil
	}
}

// getRaw reads one item strongly consistently, as it is stored; nil when
// there is no such item.
func (s *Store) getRaw(ctx context.Context, k key) (Item, error) {
	it, err := s.port.Get(ctx, k)
	if err != nil {
		return nil, storeErr(err)
	}
	return it, nil
}

// getItem reads one item strongly consistently into out. found is false when
// there is no such item.
func (s *Store) getItem(ctx context.Context, k key, out any) (found bool, err error) {
	item, err := s.getRaw(ctx, k)
	if err != nil || item == nil {
		return false, err
	}
	if err := unmarshal(item, out); err != nil {
		return false, err
	}
	return true, nil
}

// list reads one page of a gsi1 partition, newest first. It asks for one
// item more than the page holds to learn whether there is a next page
// without a second request. The position is the gsi1sk of the last item
// returned: unique within the partition, so "gsi1sk < position" resumes
// exactly after it, and items created since sort before the first page.
// conv turns each item of type I into the domain's T; it drops an item by
// returning false (a user or organization whose delete has begun).
//
// list drops, before conv, every item whose pk does not start with owner:
// the prefix of the kind the list holds (prefixKey for KEYS), or the one
// partition whose items it lists (an organization's, for its members).
// Items are written by functions that may not write each other's
// partitions, but IAM conditions on pk, not on gsi1pk: the users function,
// say, could put an item with gsi1pk KEYS in a user's partition. Without
// this check it would be listed as an API key, and a fake bootstrap key
// newer than the real one would stop EnsureBootstrapKey from installing
// a rotated admin key.
func list[I, T any](ctx context.Context, s *Store, partition, owner string, p account.ListParams, conv func(I) (T, bool)) (account.Page[T], error) {
	limit := p.PageSize()
	want := limit + 1
	q := Query{Index: GSI1, Partition: partition, Limit: want}
	if p.After != "" {
		q.Range = Range{Op: OpLess, Values: []string{p.After}}
	}
	// A page stops early only at DynamoDB's 1 MB response limit, far above
	// 101 items of this table; the loop covers that case anyway.
	var raw []Item
	for {
		out, err := s.port.Query(ctx, q)
		if err != nil {
			return account.Page[T]{}, storeErr(err)
		}
		raw = append(raw, out.Items...)
		if out.Last == nil || len(raw) >= want {
			break
		}
		q.After = out.Last
	}
	next := ""
	if len(raw) > limit {
		raw = raw[:limit]
		var last struct {
			GSI1SK string `dynamodbav:"gsi1sk"`
		}
		if err := unmarshal(raw[len(raw)-1], &last); err != nil {
			return account.Page[T]{}, err
		}
		next = last.GSI1SK
	}
	page := account.Page[T]{Items: make([]T, 0, len(raw)), Next: next}
	for _, av := range raw {
		if pk, _ := av["pk"].(S); !strings.HasPrefix(string(pk), owner) {
			continue
		}
		var it I
		if err := unmarshal(av, &it); err != nil {
			return account.Page[T]{}, err
		}
		if t, ok := conv(it); ok {
			page.Items = append(page.Items, t)
		}
	}
	return page, nil
}

// updateItem applies upd to the item k if it meets cond, in one UpdateItem,
// and decodes the item as written into out. notFound (the domain's
// not-found error for the item) when cond fails: every condition here
// requires at least that the item exists, and without one UpdateItem would
// create an item from nothing.
//
// With an idempotency record to commit (c has one), or events to record,
// it is a transaction of the update and those instead, then a read (see
// updateWithCommit).
func (s *Store) updateItem(ctx context.Context, c change, k key, upd Update, cond Cond, out any, notFound error) error {
	if c.Commit != nil || len(c.events) > 0 && c.recording() {
		return s.updateWithCommit(ctx, c, k, upd, cond, out, notFound)
	}
	w, err := s.update(k, upd, cond)
	if err != nil {
		return err
	}
	var res Item
	err = s.retryConflicts(ctx, func() (err error) {
		res, err = s.port.Write(ctx, w, true)
		return err
	})
	if _, ok := conditionFailed(err); ok {
		return notFound
	}
	if err != nil {
		return storeErr(err)
	}
	return unmarshal(res, out)
}

// markDeleting sets the deleting flag on an existing user or organization
// and returns the item as it now is. From then on AddMember refuses it, so
// the membership Query that follows sees every membership there will be.
func (s *Store) markDeleting(ctx context.Context, k key, out any, notFound error) error {
	// The first step of a delete: the record goes with the last, and the
	// flag records no event.
	return s.updateItem(ctx, change{}, k, set("deleting", true), condPresent, out, notFound)
}

// memberSides returns the IDs on the other side of every membership in the
// partition of owner (an organization or a user), read strongly consistently.
func (s *Store) memberSides(ctx context.Context, owner key) ([]string, error) {
	sides, err := s.memberships(ctx, owner)
	ids := make([]string, len(sides))
	for i, m := range sides {
		ids[i] = m.otherID
	}
	return ids, err
}

// memberSide is one membership as seen from the partition it was read in.
type memberSide struct {
	otherID              string
	role                 string
	createdAt, updatedAt time.Time
}

// membership returns the membership of side, read in the partition of the
// user userID or (userID "") of the organization orgID.
func (side memberSide) membership(orgID, userID string) account.Membership {
	if userID == "" {
		userID = side.otherID
	} else {
		orgID = side.otherID
	}
	return account.Membership{OrganizationID: orgID, UserID: userID, Role: side.role, CreatedAt: side.createdAt, UpdatedAt: side.updatedAt}
}

// memberships returns every membership in the partition of owner (an
// organization or a user), read strongly consistently, with its role and
// times (for the events of a cascade).
func (s *Store) memberships(ctx context.Context, owner key) ([]memberSide, error) {
	q := Query{
		Partition: owner.PK, Range: Range{Op: OpBeginsWith, Values: []string{prefixMember}},
		Names: []string{"sk", "role", "created_at", "updated_at"}, Forward: true, Consistent: true,
	}
	var sides []memberSide
	for {
		out, err := s.port.Query(ctx, q)
		if err != nil {
			return nil, storeErr(err)
		}
		for _, av := range out.Items {
			var it struct {
				SK        string    `dynamodbav:"sk"`
				Role      string    `dynamodbav:"role"`
				CreatedAt time.Time `dynamodbav:"created_at"`
				UpdatedAt time.Time `dynamodbav:"updated_at"`
			}
			if err := unmarshal(av, &it); err != nil {
				return nil, err
			}
			sides = append(sides, memberSide{otherID: idFrom(it.SK, prefixMember), role: it.Role, createdAt: it.CreatedAt, updatedAt: it.UpdatedAt})
		}
		if out.Last == nil {
			break
		}
		q.After = out.Last
	}
	return sides, nil
}

// step is one item of a transaction with the error its failed condition
// means (nil: none can fail, or a failure is a bug), and the event of the
// object it removes, if it removes one: the event goes into the same
// transaction as the item.
type step struct {
	item          Write
	onCheckFailed error
	event         *account.PendingEvent
}

// weight is the number of items steps take in a transaction of c: one
// each, and one more for each event.
func weight(c change, steps []step) int {
	return len(steps) + eventCount(c.Events, stepEvents(steps))
}

// cascade deletes the memberships in groups (each group's items go in one
// transaction: both sides of a membership, and for a user's owner
// membership the organization's owner count) and then the final items.
// When everything fits in one transaction it is one transaction.
// Otherwise groups go first, as many as fit in a transaction, and the
// final transaction (the owner and its guards, with the last groups) comes
// last: a guard disappears together with its owner, never before and
// never without it. A failure in between leaves the owner in place, marked
// deleting, with fewer memberships; retrying the delete finishes the job.
// final must hold the owner first.
func (s *Store) cascade(ctx context.Context, c change, groups [][]step, final []step) error {
	size := weight(c, final)
	for _, g := range groups {
		size += weight(c, g)
	}
	room := maxTransactItems
	if c.Commit != nil {
		room-- // the final transaction carries the idempotency record too
	}
	for size > room {
		var chunk []step
		n := 0
		for len(groups) > 0 && n+weight(c, groups[0]) <= maxTransactItems {
			chunk = append(chunk, groups[0]...)
			n += weight(c, groups[0])
			size -= weight(c, groups[0])
			groups = groups[1:]
		}
		// Not the last transaction: the idempotency record goes with the last.
		if err := s.transactSteps(ctx, c.withoutCommit(), chunk); err != nil {
			return err
		}
	}
	all := final
	var events []account.PendingEvent
	for _, g := range groups {
		all = append(all, g...)
		events = append(events, stepEvents(g)...)
	}
	// The owner's event comes last, after those of what it held.
	return s.transactStepsWith(ctx, c.with(append(events, stepEvents(final)...)...), all)
}

// transactSteps is transact over steps, with their events.
func (s *Store) transactSteps(ctx context.Context, c change, steps []step) error {
	return s.transactStepsWith(ctx, c.with(stepEvents(steps)...), steps)
}

// transactStepsWith is transact over steps, with c's events.
func (s *Store) transactStepsWith(ctx context.Context, c change, steps []step) error {
	items := make([]Write, len(steps))
	onCheckFailed := make([]error, len(steps))
	for i, st := range steps {
		items[i], onCheckFailed[i] = st.item, st.onCheckFailed
	}
	return s.transact(ctx, c, items, onCheckFailed...)
}

// errMembershipsChanged marks a cascade step that found a membership other
// than the Query had shown it (its role changed, or it went), for a
// user's delete, whose steps keep the owner counts of organizations: the
// delete reads the memberships again.
var errMembershipsChanged = errors.New("tablestore: a membership changed while its user was being deleted")

// cascadeAttempts bounds how often a user's delete reads its memberships
// again because one changed under it.
const cascadeAttempts = 5

// deleteWithMemberships is the rest of a delete after markDeleting: it finds
// the memberships in the partition of owner (a user or an organization) and
// deletes each (group gives its steps), then owner and its guards, which
// must still belong to id, recording deleted; notFound if owner is gone
// meanwhile; last go in the same transaction (an organization's read
// copies, as tombstones). first, if
// not nil, gives groups that go before the memberships (an organization's
// API keys). When a step fails with errMembershipsChanged or errKeyChanged
// it starts over from the reads, up to cascadeAttempts times.
func (s *Store) deleteWithMemberships(ctx context.Context, c change, id string, owner key, guards []key, last []Write, first func(context.Context) ([][]step, error), group func(memberSide) ([]step, error), deleted account.PendingEvent, notFound error) error {
	ownedBy := attr("owner_id").Equal(id)
	for attempt := 0; ; attempt++ {
		var groups [][]step
		if first != nil {
			var err error
			if groups, err = first(ctx); err != nil {
				return err
			}
		}
		sides, err := s.memberships(ctx, owner)
		if err != nil {
			return err
		}
		for _, side := range sides {
			g, err := group(side)
			if err != nil {
				return err
			}
			groups = append(groups, g)
		}
		del, err := s.del(owner, condPresent)
		if err != nil {
			return err
		}
		final := []step{{del, notFound, &deleted}}
		for _, g := range guards {
			del, err := s.del(g, ownedBy)
			if err != nil {
				return err
			}
			final = append(final, step{del, nil, nil})
		}
		for _, it := range last {
			final = append(final, step{it, nil, nil})
		}
		err = s.cascade(ctx, c, groups, final)
		if !errors.Is(err, errMembershipsChanged) && !errors.Is(err, errKeyChanged) {
			return err
		}
		if attempt+1 >= cascadeAttempts {
			return account.ErrConcurrentUpdate("resource")
		}
	}
}

// batchGet reads the items keys (duplicates are read once) with strongly
// consistent BatchGetItem requests of at most 100 keys, and returns those
// that exist, in no particular order. Only under throttling does DynamoDB
// leave keys unprocessed; they are re-requested a few times, then the store
// reports CodeUnavailable.
func (s *Store) batchGet(ctx context.Context, keys []key) ([]Item, error) {
	return s.batchGetWith(ctx, keys, true)
}

// batchGetWith is batchGet, strongly consistent or not.
func (s *Store) batchGetWith(ctx context.Context, keys []key, consistent bool) ([]Item, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	if len(keys) <= 16 && distinct(keys) {
		// A verify's few keys, as they are: no batch to make.
		read, err := s.port.BatchGet(ctx, keys, consistent)
		return read, storeErr(err)
	}
	var out []Item
	var seen map[key]bool // a verify reads 2 to 4 keys: no map for so few
	if len(keys) > 16 {
		seen = make(map[key]bool, len(keys))
	}
	batch := make([]Key, 0, min(len(keys), maxBatchGetKeys))
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		read, err := s.port.BatchGet(ctx, batch, consistent)
		err = storeErr(err)
		if out == nil {
			out = read // no copy of the one batch of a verify
		} else {
			out = append(out, read...)
		}
		batch = batch[:0]
		return err
	}
	for i, k := range keys {
		if seen == nil && slices.Contains(keys[:i], k) || seen[k] {
			continue
		}
		if seen != nil {
			seen[k] = true
		}
		batch = append(batch, k)
		if len(batch) == maxBatchGetKeys {
			if err := flush(); err != nil {
				return nil, err
			}
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return out, nil
}

// distinct reports whether keys holds no key twice.
func distinct(keys []key) bool {
	for i, k := range keys {
		if slices.Contains(keys[:i], k) {
			return false
		}
	}
	return true
}

// maxBatchGetKeys is DynamoDB's limit on the keys of one BatchGetItem.
const maxBatchGetKeys = 100

// queryPages reads the pages of q in turn, giving each page's items to
// page, until there are no more or page answers false.
func (s *Store) queryPages(ctx context.Context, q Query, page func([]Item) (bool, error)) error {
	for {
		out, err := s.port.Query(ctx, q)
		if err != nil {
			return storeErr(err)
		}
		more, err := page(out.Items)
		if err != nil || !more || out.Last == nil {
			return err
		}
		q.After = out.Last
	}
}

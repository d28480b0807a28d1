package tablestore

import (
	"cmp"
	"context"
	"errors"
	"sync"
	"time"

	"latchkey/pkg/account"
)

// Events are items EVENT#<UTC day of the event>/<event id>, with the
// event's type in type, its JSON (exactly as GET /v1/events returns it) in
// event, and TTL account.EventRetention after the event (see
// docs/dynamodb.md, "Events"). An event is a Put in the transaction of the
// change it records; its id is made immediately before each attempt of
// that transaction, so that an attempt retried after a conflict gets a
// fresh one.
//
// Concurrent writers commit in no particular order relative to their ids
// (but see WithSerialWrites, under which they do):
// an event with an earlier id may commit after one with a later id. So a
// reader sees only the events whose id time is older than EventLag before
// its own clock: a transaction whose id was made at t has committed, or
// never will, by t plus the store timeout (every DynamoDB call, SDK
// retries included, is bounded by it), and the margin covers the clocks
// of two Lambda hosts and a request DynamoDB is still finishing when its
// caller gives up. Every event a reader can see was thus committed before
// any later one became visible: events become visible in id order, and a
// consumer paging with after never skips one, at the price of reading the
// feed EventLag behind its newest event.
//
// An event that belongs to an organization (account.EventSource.Organization)
// is put a second time, in the same transaction, as the item
// EVENTORG#<org id>/<event id>, with the same attributes: a key bound to
// the organization lists its events with a Query of that partition alone,
// never reading another organization's. It costs one more item in the
// transaction of the change. The stream publisher takes EVENT# items
// only, so no event is published twice.

// eventLagMargin is what EventLag adds to the store timeout.
const eventLagMargin = 2 * time.Second

// EventLag is how far behind its clock a store whose calls take at most
// timeout (dynamostore.WithTimeout) must read the event feed: with
// dynamostore.MaxTimeout, 7 s. See WithEventLag.
func EventLag(timeout time.Duration) time.Duration { return timeout + eventLagMargin }

// eventDayLayout names an event's partition: its UTC day.
const eventDayLayout = "2006-01-02"

// eventKey is the key of the event id made at at.
func eventKey(id string, at time.Time) key {
	return key{prefixEvent + at.UTC().Format(eventDayLayout), id}
}

// eventItem is an event as stored.
type eventItem struct {
	key
	Type     string `dynamodbav:"type"`
	Event    string `dynamodbav:"event"`
	ExpireAt int64  `dynamodbav:"expire_at"`
}

// eventItems returns the Puts of c's events, each with a new id made now
// (and its organization's copy), or nothing when c has no
// account.EventSource.
func (s *Store) eventItems(c change) ([]Write, error) {
	src := c.Events
	if src == nil || len(c.events) == 0 {
		return nil, nil
	}
	items := make([]Write, 0, eventCount(src, c.events))
	for _, e := range c.events {
		at := time.Now().UTC().Truncate(time.Millisecond)
		id := account.NewEventID(at)
		if s.serial != nil {
			// In the table's writer, or under s.serial (see
			// transactReturningOld): after the last id, even when the
			// clock stepped back, and at the time of the id it got.
			id = account.NextEventID(s.lastEvent, at)
			s.lastEvent = id
			at, _ = account.EventTime(id)
		}
		// Shards only where writes are concurrent (see shards.go). With
		// serial writes the feed has no lag, and a merge of shards read
		// one after another could pass an event committed meanwhile into a
		// shard read already; one partition is read in one go, and the
		// one writer needs no more.
		shard, orgShard := 0, 0
		if s.serial == nil {
			shard, orgShard = eventShard(), orgEventShard(id)
		}
		puts, err := s.eventPuts(src, e, id, at, shard, orgShard)
		if err != nil {
			return nil, err
		}
		items = append(items, puts...)
	}
	return items, nil
}

// eventPuts returns the Puts of the event e, id made at at, in shard of
// its day, and of its organization's copy, in orgShard of the
// organization's. Each is conditional on the event not existing: no
// write, a retry or a bug, ever replaces an event, so the feed is
// append-only in the code. IAM can refuse every role an update or a
// delete of an event, but it cannot require this condition of a put.
func (s *Store) eventPuts(src *account.EventSource, e account.PendingEvent, id string, at time.Time, shard, orgShard int) ([]Write, error) {
	js, err := src.EncodeEvent(id, e.Type, at, e.Data)
	if err != nil {
		return nil, err
	}
	it := eventItem{key: eventKey(id, at), Type: e.Type, Event: string(js), ExpireAt: at.Add(account.EventRetention).Unix()}
	it.PK = shardPK(it.PK, shard)
	keys := []key{it.key}
	if org := src.Organization(e.Data); org != "" {
		k := orgEventKey(org, id)
		k.PK = shardPK(k.PK, orgShard)
		keys = append(keys, k)
	}
	items := make([]Write, 0, len(keys))
	for _, k := range keys {
		it.key = k
		put, err := s.put(it, condAbsent)
		if err != nil {
			return nil, err
		}
		items = append(items, put)
	}
	return items, nil
}

// eventCount is the number of items that events add to a transaction
// that records them with src: one each, and one more for each that belongs
// to an organization; none without src.
func eventCount(src *account.EventSource, events []account.PendingEvent) int {
	if src == nil {
		return 0
	}
	n := len(events)
	for _, e := range events {
		if src.Organization(e.Data) != "" {
			n++
		}
	}
	return n
}

// ListEvents implements account.Store. The events of a day are spread
// over eventShards partitions (see shards.go), and so are an
// organization's (q.OrganizationID: its EVENTORG# shards instead of the
// days'): ListEvents merges the shards of a day in id order, with a
// strongly consistent Query of every shard at once, then one Query at a
// time of the shard read least far, and takes an event only once no shard
// can hold an earlier one; then the next day, from the day of the first event wanted,
// until the page is full or the days run out. A Query asks for a few more
// events than the shard's share of the page, twice as many each time it
// reads the same shard again. No call reads more than q.ReadLimit
// (account.MaxEventsRead; at least eventShards, one item a shard, without
// which no call could move on) items in all, nor, with a filter by type, makes
// more than maxEventQueries Queries; one that stops there returns a short
// page with Next where it stopped. Only events made before now minus
// EventLag are read, and none made before q.Since.
func (s *Store) ListEvents(ctx context.Context, q account.EventQuery) (account.Page[account.StoredEvent], error) {
	limit := account.ListParams{Limit: q.Limit}.PageSize()
	until := time.Now().Add(-s.eventLag).UTC()
	if s.serial != nil {
		// Every event committed is visible (WithSerialWrites), those of
		// this millisecond too.
		until = time.Now().Add(time.Millisecond).UTC()
	}
	since := q.Since.UTC()
	lo, hi := account.EventIDAt(since), account.EventIDAt(until) // hi excluded
	page := account.Page[account.StoredEvent]{Items: []account.StoredEvent{}}
	forward := q.After != ""
	var days []time.Time
	if forward {
		lo = max(lo, q.After)
		from, _ := account.EventTime(lo)
		for d := day(from); !d.After(until); d = d.AddDate(0, 0, 1) {
			days = append(days, d)
		}
	} else {
		if q.Before != "" {
			hi = min(hi, q.Before)
		}
		to, _ := account.EventTime(hi)
		for d := day(to); !d.Before(day(since)); d = d.AddDate(0, 0, -1) {
			days = append(days, d)
		}
	}
	if lo >= hi {
		return page, nil
	}
	var filter Cond
	if len(q.Types) > 0 {
		types := make([]any, len(q.Types))
		for i, t := range q.Types {
			types[i] = t
		}
		filter = attr("type").In(types...)
	}
	// groups holds the partitions merged together: each day's shards, or
	// the organization's.
	groups := make([]string, len(days))
	for i, d := range days {
		groups[i] = prefixEvent + d.Format(eventDayLayout)
	}
	if q.OrganizationID != "" {
		groups = []string{orgEventKey(q.OrganizationID, "").PK}
	}
	// first reports whether the id a comes before b in the order read.
	first := func(a, b string) bool { return a < b == forward }
	// Bounded work: at most budget items read, kept or not, and with a
	// filter by type at most maxEventQueries Queries (shards with no
	// event cost one each); then a short page, Next where it stopped.
	// Without a filter every item read is kept, so the page fills first,
	// and a tail with After crosses days without events as it always did.
	// A budget below one item a shard could not move past the shard read
	// least far: that is the least a call reads.
	budget, queries := max(cmp.Or(q.ReadLimit, account.MaxEventsRead), eventShards), 0
	// The first Query of each shard fits the budget, so that every shard
	// is read once before any is read again.
	chunk := min(limit/eventShards+2, budget/eventShards)
	if filter.Op != OpNone {
		chunk = budget / eventShards
	}
	start := hi // the position before a group's first event
	if forward {
		start = lo
	}
	for g, group := range groups {
		cursors := make([]*eventCursor, eventShards)
		for n := range cursors {
			c := &eventCursor{pos: start, chunk: chunk, in: Query{
				Partition: shardPK(group, n), Range: Range{Op: OpBetween, Values: []string{lo, hi}},
				Filter: filter, Names: []string{"sk", "type", "event"}, Forward: forward, Consistent: true,
			}}
			if g == 0 {
				// Past the position itself, which BETWEEN includes: read,
				// it would take a shard's Query of one item and move it
				// nowhere. (In the days after the first, no event is at
				// either end.)
				c.in.After = Item{"pk": S(shardPK(group, n)), "sk": S(start)}
			}
			cursors[n] = c
		}
		// The first Query of every shard at once, when the bounds allow
		// them all: a page waits for one round trip a day, not sixteen.
		if n := budget / eventShards; n > 0 && (filter.Op == OpNone || queries+eventShards <= maxEventQueries) {
			scanned := make([]int, eventShards)
			errs := make([]error, eventShards)
			var wg sync.WaitGroup
			for i, c := range cursors {
				wg.Go(func() { scanned[i], errs[i] = s.readShard(ctx, c, min(c.chunk, n), q.After, hi) })
			}
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				return account.Page[account.StoredEvent]{}, err
			}
			queries += eventShards
			for _, n := range scanned {
				budget -= n
			}
		}
		for {
			// next: the first event buffered; behind: the shard read
			// least far, whose unread events may come before it.
			var next, behind *eventCursor
			for _, c := range cursors {
				if len(c.buf) > 0 && (next == nil || first(c.buf[0].SK, next.buf[0].SK)) {
					next = c
				}
				if !c.done && len(c.buf) == 0 && (behind == nil || first(c.pos, behind.pos)) {
					behind = c
				}
			}
			if next != nil && (behind == nil || first(next.buf[0].SK, behind.pos)) {
				if len(page.Items) == limit {
					page.Next = page.Items[limit-1].ID
					return page, nil
				}
				it := next.buf[0]
				next.buf = next.buf[1:]
				page.Items = append(page.Items, account.StoredEvent{ID: it.SK, Type: it.Type, JSON: []byte(it.Event)})
				continue
			}
			if behind == nil {
				break // every shard of the group is read to its end
			}
			if budget <= 0 || filter.Op != OpNone && queries == maxEventQueries {
				// Every event up to behind's position is on a page.
				page.Next = behind.pos
				return page, nil
			}
			queries++
			scanned, err := s.readShard(ctx, behind, min(behind.chunk, budget), q.After, hi)
			if err != nil {
				return account.Page[account.StoredEvent]{}, err
			}
			budget -= scanned
		}
		// The group is read to its end: the next starts at its day's bound.
		if g+1 < len(groups) {
			start = dayBound(days[g], forward)
		}
	}
	return page, nil
}

// readShard reads the next limit items of the shard of c with one Query
// into c's buffer, leaving out after and hi (BETWEEN includes both ends),
// and returns how many it read, kept or not.
func (s *Store) readShard(ctx context.Context, c *eventCursor, limit int, after, hi string) (int, error) {
	c.in.Limit = limit
	c.chunk *= 2
	out, err := s.port.Query(ctx, c.in)
	if err != nil {
		return 0, storeErr(err)
	}
	for _, av := range out.Items {
		var it eventItem
		if err := unmarshal(av, &it); err != nil {
			return 0, err
		}
		if it.SK != after && it.SK < hi {
			c.buf = append(c.buf, it)
		}
	}
	if out.Last == nil {
		c.done = true
		return out.Scanned, nil
	}
	if sk, ok := out.Last["sk"].(S); ok {
		c.pos = string(sk)
	}
	c.in.After = out.Last
	return out.Scanned, nil
}

// eventCursor is where ListEvents is in one shard: the events read and
// not yet taken, the sort key of the last item read (or the group's start),
// whether the shard is read to its end, and how many items the next Query
// asks for.
type eventCursor struct {
	in    Query
	buf   []eventItem
	pos   string
	done  bool
	chunk int
}

// maxEventQueries bounds the Queries of one ListEvents call with a filter
// by type, which would otherwise read on, through a month of days, until
// the page is full or the retention ends: three per shard, as many as
// reading three days' shards once.
const maxEventQueries = 3 * eventShards

// dayBound is the position that follows every event of the day d read
// in the direction forward: the largest id of its last millisecond
// (After excludes it), or the smallest of its first (Before excludes it).
func dayBound(d time.Time, forward bool) string {
	if !forward {
		return account.EventIDAt(d)
	}
	// A ULID's last 16 characters are its randomness: all Z is the largest.
	id := account.EventIDAt(d.AddDate(0, 0, 1).Add(-time.Millisecond))
	return id[:len(id)-16] + "ZZZZZZZZZZZZZZZZ"
}

// day returns the UTC midnight that starts t's day.
func day(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// stepEvents returns the events of steps.
func stepEvents(steps []step) []account.PendingEvent {
	var events []account.PendingEvent
	for _, st := range steps {
		if st.event != nil {
			events = append(events, *st.event)
		}
	}
	return events
}

// ResumeEvents reads the id of the newest event stored in the partitions
// of tomorrow and today (UTC), newest first: at most 2 Queries of one
// item. A store under WithSerialWrites makes each id after it
// (account.NextEventID), so that an id made after a restart sorts after
// every id a reader may have passed, even if the clock stepped back
// across the restart, by up to a day; without it, ids started over from
// the clock. It is called before the store's first write (boltstore.Open
// calls it); other stores have no use for it.
func (s *Store) ResumeEvents(ctx context.Context) error {
	if s.serial == nil {
		return nil
	}
	today := day(time.Now())
	for _, d := range []time.Time{today.AddDate(0, 0, 1), today} {
		out, err := s.port.Query(ctx, Query{
			Partition: prefixEvent + d.Format(eventDayLayout), Names: []string{"sk"}, Limit: 1, Consistent: true,
		})
		if err != nil {
			return storeErr(err)
		}
		if len(out.Items) > 0 {
			sk, _ := out.Items[0]["sk"].(S)
			s.lastEvent = max(s.lastEvent, string(sk))
			return nil
		}
	}
	return nil
}

package tablestore

import (
	"context"
	"errors"
	"math"
	"math/bits"
	"strings"
	"sync"
	"time"

	"latchkey/pkg/account"
)

// The number of a key's verify copies, N, follows its read rate (see
// shards.go): one copy for a quiet key, so that a revocation or a key
// change writes one copy and not sixteen, and up to maxReadCopies for a
// hot one.
//
//   - perCopyRate is the verifies a second one copy takes: 1,000. A
//     partition serves about 3,000 strongly consistent reads a second, and
//     a verify reads, on the same n, a copy of its key, of each key above
//     it and of its organization, each in a partition of its own: a third
//     of that leaves room for bursts and for the reads of a growth still
//     in flight. 30,000 verifies a second of one key take the 15 copies,
//     2,000 a second each (TestHotItems_Verify).
//   - N is a power of two up to 8, then 15 (copiesFor): a key whose rate
//     climbs grows a few times, not at every flush.
//   - Growth: a usage flush (AddUsage) that carries growCheck or more of a
//     key's verifications reads the key's rate across processes (its
//     minute buckets: one Query) and, if it calls for more than N, writes
//     copies 1..N' (one transaction, no event: nothing a user sees
//     changes), and grows the keys above it as far, since every verify of
//     the key reads them too. An earlier revocation is on the new copies
//     too: the key's are copied from copy 1, and an entry's copies are
//     all 15 whatever N is (copyPlan.entryCopies).
//   - Shrink: only at a write that rewrites the copies anyway (a
//     revocation, a key change), when four times the rate would still
//     call for fewer than N (hysteresis: 2 copies go back to 1 below 250
//     verifies a second, 15 to fewer below 2,000); copies above the new
//     N go in the same transaction.
const (
	perCopyRate = 1000
	// growCheck is the verifications of one key, in one flush of one
	// process, from which the flush reads the key's rate: a few a second
	// at the default flush (5 s) read nothing.
	growCheck = 500
)

// copiesFor returns the copies a rate of verifies a second calls for.
func copiesFor(rate float64) int {
	n := int(math.Ceil(rate / perCopyRate))
	if n <= 1 {
		return 1
	}
	return min(1<<bits.Len(uint(n-1)), maxReadCopies) // 1, 2, 4, 8, 15
}

// keyRate returns the verifies a second of the key id across processes
// at now: the verifications of its minute buckets of the last minute and
// this one, over the time since the last began.
func (s *Store) keyRate(ctx context.Context, id string, now time.Time) (float64, error) {
	from := now.Truncate(time.Minute).Add(-time.Minute)
	buckets, err := s.ReadUsage(ctx, id, account.IntervalMinute, from, now.Add(time.Minute))
	if err != nil {
		return 0, err
	}
	var total int64
	for _, b := range buckets {
		for _, n := range b.Verifications {
			total += n
		}
	}
	return float64(total) / now.Sub(from).Seconds(), nil
}

// sizedCopies sets cs.n, for a write at now of the copies of the key id,
// from the key's rate: grown if the rate calls for more copies, shrunk if
// four times it would call for fewer, as it is otherwise. A key with one
// copy reads no rate (a flush grows it); nor one whose rate cannot be
// read, which keeps its copies.
func (s *Store) sizedCopies(ctx context.Context, id string, cs copyPlan, now time.Time) copyPlan {
	n := cs.n
	if n == 1 && cs.first != nil {
		return cs
	}
	rate, err := s.keyRate(ctx, id, now)
	if err != nil {
		return cs
	}
	switch want := copiesFor(rate); {
	case want > n && cs.first != nil:
		cs.n = want
	case copiesFor(4*rate) < n || cs.first == nil || cs.first.ReadCopies == 0:
		cs.n = want
	}
	return cs
}

// growFromUsage grows the copies of each key of f that this flush shows
// busy (growCheck), if its rate across processes calls for more; under
// WithCopyGrowthBy it hands each to s.growBy instead. Best effort: the
// flush is made already, and a growth that fails (a change of the copies
// came between, the table is busy) is tried at the next.
func (s *Store) growFromUsage(ctx context.Context, f account.UsageFlush) {
	if s.noCopyGrowth && s.growBy == nil {
		return
	}
	now := time.Now()
	for _, d := range f.Deltas {
		if d.Interval != account.IntervalMinute || !strings.HasPrefix(d.Subject, account.PrefixAPIKey) {
			continue
		}
		var n int64
		for _, v := range d.Counts.Verifications {
			n += v
		}
		if n < growCheck {
			continue
		}
		if s.growBy != nil {
			// The role may neither write the copies nor Query the
			// usage: the grower reads the rate. A key this process saw
			// at the most copies needs none.
			if s.copies.get(d.Subject) < maxReadCopies && s.handoffs.due(d.Subject, now) {
				s.growBy(ctx, d.Subject)
			}
			continue
		}
		_ = s.growToRate(ctx, d.Subject, now)
	}
}

// GrowCopies grows the verify copies of the key id, and of the keys above
// it, as far as its rate across processes calls for: what a flush of a
// store that may write them does for a busy key, for a process that may
// not (WithCopyGrowthBy). It reads the rate itself, so a caller that names
// a quiet key, or one that is not there, changes nothing.
// CodeInvalidRequest for an id that is not an API key's.
func (s *Store) GrowCopies(ctx context.Context, id string) error {
	if !account.ValidID(account.PrefixAPIKey, id) {
		return account.Errorf(account.CodeInvalidRequest, "not an API key id")
	}
	return s.growToRate(ctx, id, time.Now())
}

// growToRate grows the copies of the key id to what its rate at now calls
// for.
func (s *Store) growToRate(ctx context.Context, id string, now time.Time) error {
	rate, err := s.keyRate(ctx, id, now)
	if err != nil {
		return err
	}
	if want := copiesFor(rate); want > 1 {
		return s.growCopies(ctx, id, want, now)
	}
	return nil
}

// growHandoffEvery is how often a process hands one key's growth over
// (WithCopyGrowthBy): a growth takes one transaction, and the flushes of
// the minute after it would only ask again.
const growHandoffEvery = time.Minute

// handoffMemo remembers, by key ID, when this process last handed a key's
// growth over, for at most keyMemoMax keys.
type handoffMemo struct {
	mu sync.Mutex
	m  map[string]time.Time
}

// due reports whether the key id's growth may be handed over at now, and
// if so records it.
func (hm *handoffMemo) due(id string, now time.Time) bool {
	hm.mu.Lock()
	defer hm.mu.Unlock()
	if last, ok := hm.m[id]; ok && now.Sub(last) < growHandoffEvery {
		return false
	}
	if hm.m == nil {
		hm.m = map[string]time.Time{}
	}
	if len(hm.m) >= keyMemoMax {
		for old, at := range hm.m {
			if now.Sub(at) >= growHandoffEvery {
				delete(hm.m, old)
			}
		}
		if len(hm.m) >= keyMemoMax {
			return false // as many busy keys in the last minute: the next flush asks
		}
	}
	hm.m[id] = now
	return true
}

// growCopies makes the key id, and each key above it, have at least want
// verify copies, each with one transaction on its copy 1's condition
// (firstCopyIs); a key at want or more, gone, without copies, or whose
// copies the previous release wrote (all 15 there) is left as it is.
// errKeyChanged if a copy 1 changed meanwhile.
func (s *Store) growCopies(ctx context.Context, id string, want int, now time.Time) error {
	want = min(want, maxReadCopies)
	_, first, err := s.readFirstCopy(ctx, id)
	if err != nil || first == nil || first.Deleting {
		return err
	}
	ids := append([]string{id}, first.Ancestors...)
	var errs []error
	for i, kid := range ids {
		if i > 0 {
			if _, first, err = s.readFirstCopy(ctx, kid); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		if first == nil || first.Deleting || first.ReadCopies == 0 || first.ReadCopies >= want {
			continue
		}
		cs := nextCopies(first, now, false)
		cs.n = want
		items, err := s.copyWrites(first.clone(), cs)
		if err == nil {
			err = s.transact(ctx, change{}, items, errKeyChanged)
		}
		if err == nil {
			s.copies.set(kid, want)
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

package tablestore

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"latchkey/pkg/account"
)

// The usage buckets (account's analytics): one item per subject (a key's
// or an organization's id), interval, bucket start and process, so that
// each item has one writer, which makes its flushes exact by their
// sequence number alone; a read sums the processes' items of a bucket.
// Counters are attributes named by prefix:
const (
	usageVerified = "v:" // verifications, by outcome
	usageKey      = "k:" // an organization's: verifications, by key
	usageTokens   = "tokens_issued"
	usageSeq      = "seq" // the Seq of the last flush that added to it
)

// usageTimeLayout is the bucket start in a sort key: fixed width, so that
// strings sort like times.
const usageTimeLayout = "20060102T150405Z"

var usageIntervals = map[string]string{account.IntervalMinute: "m", account.IntervalHour: "h", account.IntervalDay: "d"}

func usageKeyOf(subject, interval string, start time.Time, process string) key {
	return key{prefixUsage + subject, usageIntervals[interval] + "#" + start.UTC().Format(usageTimeLayout) + "#" + process}
}

// usageWriters is how many of a flush's writes run at once.
const usageWriters = 8

// AddUsage writes each delta of f with one UpdateItem of its process's
// item of the bucket, which adds the counts on condition that the item's
// seq is below f.Seq, and sets it to f.Seq: a retried delta finds its own
// Seq there and is skipped (its condition fails), so a flush whose answer
// was lost is made again at no risk. No transaction: each item has one
// writer, the process, and its flushes come one at a time. A flush that
// shows a key busy may grow its verify copies (growFromUsage).
func (s *Store) AddUsage(ctx context.Context, f account.UsageFlush) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		sem   = make(chan struct{}, usageWriters)
	)
	for _, d := range f.Deltas {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := s.addUsage(ctx, f.Process, f.Seq, d); err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if first == nil {
		s.growFromUsage(ctx, f)
	}
	return first
}

func (s *Store) addUsage(ctx context.Context, process string, seq int64, d account.UsageDelta) error {
	upd := set(usageSeq, seq).set("expire_at", d.ExpireAt.Unix())
	for outcome, n := range d.Counts.Verifications {
		upd = upd.add(usageVerified+outcome, 0, n)
	}
	for id, n := range d.Counts.Keys {
		upd = upd.add(usageKey+id, 0, n)
	}
	if d.Counts.TokensIssued != 0 {
		upd = upd.add(usageTokens, 0, d.Counts.TokensIssued)
	}
	cond := attr(usageSeq).NotExists().Or(attr(usageSeq).LessThan(seq))
	_, err := s.port.Write(ctx, Write{Kind: WriteUpdate, Key: usageKeyOf(d.Subject, d.Interval, d.Start, process), Update: upd, If: cond}, false)
	if _, ok := conditionFailed(err); ok {
		return nil // made by an earlier try of this flush
	}
	return storeErr(err)
}

// ReadUsage queries the subject's partition for the buckets of interval
// that start in [from, to), eventually consistent (a flush is seconds
// late anyway), and sums each bucket's items.
func (s *Store) ReadUsage(ctx context.Context, subject, interval string, from, to time.Time) ([]account.UsageBucket, error) {
	p := usageIntervals[interval] + "#"
	// The sort keys of the items of buckets from from to the last second
	// before to: "~" sorts after "#" and every character of an id.
	lo := p + from.UTC().Format(usageTimeLayout)
	hi := p + to.Add(-time.Nanosecond).UTC().Format(usageTimeLayout) + "~"
	q := Query{Partition: prefixUsage + subject, Range: Range{Op: OpBetween, Values: []string{lo, hi}}, Forward: true}
	var out []account.UsageBucket
	err := s.queryPages(ctx, q, func(items []Item) (bool, error) {
		for _, it := range items {
			b, err := usageBucketOf(it)
			if err != nil {
				return false, err
			}
			if n := len(out); n > 0 && out[n-1].Start.Equal(b.Start) {
				out[n-1].Add(b.UsageCounts)
				continue
			}
			out = append(out, b)
		}
		return true, nil
	})
	return out, err
}

// usageBucketOf reads one process's item of a bucket.
func usageBucketOf(it Item) (account.UsageBucket, error) {
	var k key
	if err := unmarshal(it, &k); err != nil {
		return account.UsageBucket{}, err
	}
	parts := strings.SplitN(k.SK, "#", 3)
	if len(parts) != 3 {
		return account.UsageBucket{}, account.Internal(fmt.Errorf("tablestore: usage bucket with sort key %q", k.SK))
	}
	start, err := time.Parse(usageTimeLayout, parts[1])
	if err != nil {
		return account.UsageBucket{}, account.Internal(fmt.Errorf("tablestore: usage bucket with sort key %q", k.SK))
	}
	b := account.UsageBucket{Start: start}
	for name, v := range it {
		n, ok := v.(N)
		if !ok {
			continue
		}
		switch {
		case strings.HasPrefix(name, usageVerified):
			if b.Verifications == nil {
				b.Verifications = map[string]int64{}
			}
			b.Verifications[idFrom(name, usageVerified)] = int64(n)
		case strings.HasPrefix(name, usageKey):
			if b.Keys == nil {
				b.Keys = map[string]int64{}
			}
			b.Keys[idFrom(name, usageKey)] = int64(n)
		case name == usageTokens:
			b.TokensIssued = int64(n)
		}
	}
	return b, nil
}

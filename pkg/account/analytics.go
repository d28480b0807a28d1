package account

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"
)

// Usage analytics: every verification a process makes is counted by
// outcome, with every token it issues, in memory, and the counts are
// added to the table by a flush at most every UsageOptions.Every. No
// verification pays a write of its own; each flush is exact however
// often it is retried (UsageCounter.AddUsage). docs/usage.md.

// The intervals of the usage buckets.
const (
	IntervalMinute = "minute"
	IntervalHour   = "hour"
	IntervalDay    = "day"
)

// OutcomeValid is the outcome of a valid verification; a refused one's
// is its Reason.
const OutcomeValid = "valid"

// MaxUsageBuckets is the most buckets one usage answer spans.
const MaxUsageBuckets = 1000

// DefaultUsageFlush is how long a count waits in a process at most before
// its flush begins (while the process runs; docs/usage.md).
const DefaultUsageFlush = 5 * time.Second

// UsageRetention is how long the buckets of each interval are kept
// (from their start); the table's TTL removes them after.
type UsageRetention struct {
	Minute, Hour, Day time.Duration
}

// DefaultUsageRetention keeps minute buckets 48 hours, hour buckets 90
// days and day buckets 2 years.
var DefaultUsageRetention = UsageRetention{Minute: 48 * time.Hour, Hour: 90 * 24 * time.Hour, Day: 2 * 365 * 24 * time.Hour}

// UsageOptions are how a process flushes its counts. Every zero flushes
// only when asked (Flush, Run); a retention of zero is the default's.
type UsageOptions struct {
	Every     time.Duration
	Retention UsageRetention
	Logger    *slog.Logger
}

// UsageCounts are the counts of one bucket.
type UsageCounts struct {
	// Verifications by outcome: OutcomeValid or the refusal's reason.
	Verifications map[string]int64
	TokensIssued  int64
	// Keys are, in an organization's counts, the verifications of each
	// of its keys (all outcomes); nil in a key's.
	Keys map[string]int64
}

// Add adds o to c.
func (c *UsageCounts) Add(o UsageCounts) {
	for k, n := range o.Verifications {
		if c.Verifications == nil {
			c.Verifications = map[string]int64{}
		}
		c.Verifications[k] += n
	}
	c.TokensIssued += o.TokensIssued
	for k, n := range o.Keys {
		if c.Keys == nil {
			c.Keys = map[string]int64{}
		}
		c.Keys[k] += n
	}
}

// UsageBucket is the counts of one interval that starts at Start.
type UsageBucket struct {
	Start time.Time
	UsageCounts
}

// UsageDelta is what one flush adds to one bucket of one subject (a key's
// or an organization's id).
type UsageDelta struct {
	Subject  string
	Interval string
	Start    time.Time
	Counts   UsageCounts
	// ExpireAt is when the bucket may be dropped (UsageRetention).
	ExpireAt time.Time
}

// UsageFlush is one flush of a process: its Seq, one more than its last
// flush's, and what it adds.
type UsageFlush struct {
	Process string
	Seq     int64
	Deltas  []UsageDelta
}

// UsageCounter is the part of Store that keeps the usage counts.
type UsageCounter interface {
	// AddUsage adds each delta of f to its bucket exactly once, however
	// often f is retried, partly made or not: a store keeps each
	// process's share of a bucket apart, with the Seq of the last flush
	// that added to it, and skips a delta whose share has it already.
	// CodeUnavailable when the table asks to retry later.
	AddUsage(ctx context.Context, f UsageFlush) error
	// ReadUsage returns the buckets of subject and interval whose Start
	// is in [from, to), summed over processes, in time order; empty ones
	// are not there.
	ReadUsage(ctx context.Context, subject, interval string, from, to time.Time) ([]UsageBucket, error)
}

// usageSlot names one bucket of one subject.
type usageSlot struct {
	subject, interval string
	start             time.Time
}

// UsageTally holds a process's counts until they are flushed: one per
// process, shared by the services it builds (a Lambda function rebuilds
// its service after a key rotation, and keeps its tally).
type UsageTally struct {
	store   UsageCounter
	now     func() time.Time
	process string
	opts    UsageOptions

	mu       sync.Mutex
	pending  map[usageSlot]*UsageCounts
	last     time.Time // when the last flush began
	flushing bool

	// flushMu makes one flush at a time; inflight is the flush begun and
	// not yet made, which the next flush retries as it is, Seq and all,
	// before it takes what was counted since.
	flushMu  sync.Mutex
	seq      int64
	inflight *UsageFlush
}

// NewUsageTally returns the tally of a process that adds its counts to
// store. now is the clock; time.Now when nil.
func NewUsageTally(store UsageCounter, opts UsageOptions, now func() time.Time) *UsageTally {
	if now == nil {
		now = time.Now
	}
	if opts.Retention == (UsageRetention{}) {
		opts.Retention = DefaultUsageRetention
	}
	return &UsageTally{
		store: store, now: now, process: NewID("", now()), last: now(), opts: opts,
		pending: map[usageSlot]*UsageCounts{},
	}
}

// verified counts a verification v of the token of claims c at at, if it
// counts (outcome).
func (t *UsageTally) verified(c TokenClaims, v Verification, at time.Time) {
	if o := outcome(v); o != "" {
		t.count(c, o, UsageCounts{Verifications: map[string]int64{o: 1}}, at)
	}
}

// issued counts the issuance of the token of claims c at at.
func (t *UsageTally) issued(c TokenClaims, at time.Time) {
	t.count(c, "", UsageCounts{TokensIssued: 1}, at)
}

// count adds one, a verification with outcome or ("") an issuance, to the
// buckets of c's key and organization.
func (t *UsageTally) count(c TokenClaims, outcome string, one UsageCounts, at time.Time) {
	if c.KeyID == "" {
		return
	}
	t.mu.Lock()
	for _, iv := range []string{IntervalMinute, IntervalHour, IntervalDay} {
		start := bucketStart(iv, at)
		t.slot(usageSlot{c.KeyID, iv, start}).Add(one)
		if c.OrganizationID != "" {
			org := one
			if outcome != "" {
				org.Keys = map[string]int64{c.KeyID: 1}
			}
			t.slot(usageSlot{c.OrganizationID, iv, start}).Add(org)
		}
	}
	due := t.opts.Every > 0 && !t.flushing && at.Sub(t.last) >= t.opts.Every
	if due {
		t.flushing = true
	}
	t.mu.Unlock()
	if due {
		// In the background: the verification that finds the interval
		// over does not wait for the write. On Lambda the goroutine runs
		// while the invocation does, or resumes with the next one; a
		// flush cut short is retried, exactly (AddUsage).
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			t.flush(ctx)
		}()
	}
}

func (t *UsageTally) slot(s usageSlot) *UsageCounts {
	c := t.pending[s]
	if c == nil {
		c = &UsageCounts{}
		t.pending[s] = c
	}
	return c
}

// bucketStart is the start of the interval's bucket that holds at, in
// UTC: a Truncate of an absolute time, which is midnight UTC for a day.
func bucketStart(interval string, at time.Time) time.Time {
	switch interval {
	case IntervalMinute:
		return at.UTC().Truncate(time.Minute)
	case IntervalHour:
		return at.UTC().Truncate(time.Hour)
	}
	return at.UTC().Truncate(24 * time.Hour)
}

// intervalLength is the length of the interval's buckets.
func intervalLength(interval string) time.Duration {
	switch interval {
	case IntervalMinute:
		return time.Minute
	case IntervalHour:
		return time.Hour
	}
	return 24 * time.Hour
}

func (r UsageRetention) of(interval string) time.Duration {
	switch interval {
	case IntervalMinute:
		return r.Minute
	case IntervalHour:
		return r.Hour
	}
	return r.Day
}

// flush writes what the process counted: first the flush in flight, if a
// failure left one, then what was counted since. A failure keeps it in
// flight for the next flush, which retries it as it is.
func (t *UsageTally) flush(ctx context.Context) error {
	t.flushMu.Lock()
	defer t.flushMu.Unlock()
	// A flush that fails waits the interval too before the next try.
	t.mu.Lock()
	t.last = t.now()
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		t.flushing = false
		t.mu.Unlock()
	}()
	for range 2 {
		if t.inflight == nil {
			t.inflight = t.take()
		}
		if t.inflight == nil {
			return nil
		}
		if err := t.store.AddUsage(ctx, *t.inflight); err != nil {
			if log := t.opts.Logger; log != nil {
				log.WarnContext(ctx, "usage: a flush failed; the next one retries it", "seq", t.inflight.Seq, "error", err.Error())
			}
			return storeErr(err)
		}
		t.inflight = nil
	}
	return nil
}

// take makes a flush of the pending counts, nil when there are none.
func (t *UsageTally) take() *UsageFlush {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.pending) == 0 {
		return nil
	}
	t.seq++
	f := &UsageFlush{Process: t.process, Seq: t.seq}
	for s, c := range t.pending {
		f.Deltas = append(f.Deltas, UsageDelta{
			Subject: s.subject, Interval: s.interval, Start: s.start, Counts: *c,
			ExpireAt: s.start.Add(t.opts.Retention.of(s.interval)),
		})
	}
	t.pending = map[usageSlot]*UsageCounts{}
	return f
}

// outcome is what a verification v of a token with claims counts as: ""
// for none. A token whose claims are unknown (forged, malformed) names
// no key to count against, and ReasonInvalid with claims is another
// tenant's token, which the caller may not see: neither is counted.
func outcome(v Verification) string {
	switch {
	case v.Valid:
		return OutcomeValid
	case v.Reason == ReasonInvalid:
		return ""
	}
	return v.Reason
}

// UseTally makes the verifier count into t, the process's tally.
func (v *TokenVerifier) UseTally(t *UsageTally) { v.usage = t }

// Flush writes the counts of the process now: what the local server does
// on shutdown, and a Lambda function when Lambda stops it.
func (t *UsageTally) Flush(ctx context.Context) error { return t.flush(ctx) }

// Run flushes every every until ctx ends, then once more: a long-lived
// process's loop, which also writes the counts of a process that falls
// idle.
func (t *UsageTally) Run(ctx context.Context, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			t.flush(ctx)
		case <-ctx.Done():
			final, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			t.flush(final)
			cancel()
			return
		}
	}
}

// FlushUsage flushes the tally the service counts into (UsageTally.Flush).
func (s *Service) FlushUsage(ctx context.Context) error { return s.verifier.usage.Flush(ctx) }

// UsageTally returns the tally the service counts into.
func (s *Service) UsageTally() *UsageTally { return s.verifier.usage }

// UsageQuery asks for the usage of a key or an organization: buckets of
// Interval (IntervalHour when ""), from From (inclusive; To less 24 hours
// when zero, or less 999 minutes for minute buckets, which is all one
// answer holds) to To (exclusive; now when zero).
type UsageQuery struct {
	From, To time.Time
	Interval string
}

// span checks q and answers its interval and range. CodeInvalidRequest, or
// CodeTooManyBuckets when it spans more than MaxUsageBuckets.
func (q UsageQuery) span(now time.Time) (string, time.Time, time.Time, error) {
	iv := q.Interval
	if iv == "" {
		iv = IntervalHour
	}
	to := q.To
	if to.IsZero() {
		to = now
	}
	from := q.From
	if from.IsZero() {
		// The last 24 hours, or as many minutes as one answer holds.
		from = to.Add(-min(24*time.Hour, (MaxUsageBuckets-1)*intervalLength(iv)))
	}
	var problems Problems
	switch iv {
	case IntervalMinute, IntervalHour, IntervalDay:
	default:
		problems.Add("interval", "must be minute, hour or day")
	}
	if from.After(to) {
		problems.Add("from", "is after to")
	}
	if err := problems.Err(); err != nil {
		return "", time.Time{}, time.Time{}, err
	}
	from = bucketStart(iv, from)
	if n := (to.Sub(from) + intervalLength(iv) - 1) / intervalLength(iv); n > MaxUsageBuckets {
		return "", time.Time{}, time.Time{}, &Error{Code: CodeTooManyBuckets, Message: "the range spans more than 1000 buckets of the interval: narrow it or take a longer interval"}
	}
	return iv, from, to, nil
}

// APIKeyUsage returns the usage of the key id, which the principal reads
// as GetAPIKey does. CodeInvalidRequest, CodeTooManyBuckets, and
// GetAPIKey's errors.
func (s *Service) APIKeyUsage(ctx context.Context, p Principal, id string, q UsageQuery) ([]UsageBucket, error) {
	if err := p.Authorize(OpAPIKeyUsage); err != nil {
		return nil, err
	}
	iv, from, to, err := q.span(s.now())
	if err != nil {
		return nil, err
	}
	if _, err := s.GetAPIKey(ctx, p, id); err != nil {
		return nil, err
	}
	b, err := s.store.ReadUsage(ctx, id, iv, from, to)
	return b, storeErr(err)
}

// OrganizationUsage returns the usage of the organization id, every key
// bound to it, which the principal reads as GetOrganization does.
// CodeInvalidRequest, CodeTooManyBuckets, and GetOrganization's errors.
func (s *Service) OrganizationUsage(ctx context.Context, p Principal, id string, q UsageQuery) ([]UsageBucket, error) {
	if err := p.Authorize(OpOrganizationUsage); err != nil {
		return nil, err
	}
	iv, from, to, err := q.span(s.now())
	if err != nil {
		return nil, err
	}
	if _, err := s.GetOrganization(ctx, p, id); err != nil {
		return nil, err
	}
	b, err := s.store.ReadUsage(ctx, id, iv, from, to)
	return b, storeErr(err)
}

// APIKeyUsageOf is APIKeyUsage of the key k as the principal just read it
// (GetAPIKey), for a page that shows both: the read rule is checked again
// on k, with no read. CodeInvalidRequest, CodeTooManyBuckets,
// CodeInsufficientScope, CodeNotFound.
func (s *Service) APIKeyUsageOf(ctx context.Context, p Principal, k APIKey, q UsageQuery) ([]UsageBucket, error) {
	if err := p.Authorize(OpAPIKeyUsage); err != nil {
		return nil, err
	}
	if err := p.Decide(ActionRead, k); err != nil {
		return nil, err
	}
	return s.readUsage(ctx, k.ID, q)
}

// OrganizationUsageOf is OrganizationUsage of the organization o as the
// principal just read it (GetOrganization), with no read of it.
// CodeInvalidRequest, CodeTooManyBuckets, CodeInsufficientScope,
// CodeNotFound.
func (s *Service) OrganizationUsageOf(ctx context.Context, p Principal, o Organization, q UsageQuery) ([]UsageBucket, error) {
	if err := p.mayReadOrganization(OpOrganizationUsage, o.ID); err != nil {
		return nil, err
	}
	return s.readUsage(ctx, o.ID, q)
}

// readUsage reads the buckets of the key or organization id over q's
// range, once its reader's rule is checked.
func (s *Service) readUsage(ctx context.Context, id string, q UsageQuery) ([]UsageBucket, error) {
	iv, from, to, err := q.span(s.now())
	if err != nil {
		return nil, err
	}
	b, err := s.store.ReadUsage(ctx, id, iv, from, to)
	return b, storeErr(err)
}

// KeyVerifications is the verifications of one key over a range.
type KeyVerifications struct {
	KeyID         string
	Verifications int64
}

// TopKeys returns the keys of the organization id with the most
// verifications (all outcomes) over q's range, at most n, most first (ties
// by key id), as OrganizationUsage reads them.
func (s *Service) TopKeys(ctx context.Context, p Principal, id string, q UsageQuery, n int) ([]KeyVerifications, error) {
	buckets, err := s.OrganizationUsage(ctx, p, id, q)
	if err != nil {
		return nil, err
	}
	return RankKeys(buckets, n), nil
}

// RankKeys returns the keys an organization's buckets count with the most
// verifications, at most n, most first (ties by key id): TopKeys of
// buckets read already.
func RankKeys(buckets []UsageBucket, n int) []KeyVerifications {
	var sum UsageCounts
	for _, b := range buckets {
		sum.Add(UsageCounts{Keys: b.Keys})
	}
	out := make([]KeyVerifications, 0, len(sum.Keys))
	for k, v := range sum.Keys {
		out = append(out, KeyVerifications{KeyID: k, Verifications: v})
	}
	slices.SortFunc(out, func(a, b KeyVerifications) int {
		if a.Verifications != b.Verifications {
			return cmp.Compare(b.Verifications, a.Verifications)
		}
		return cmp.Compare(a.KeyID, b.KeyID)
	})
	if len(out) > n {
		out = out[:n]
	}
	return out
}

// The environment that configures the usage counts (docs/configuration.md).
const (
	EnvUsageFlush           = "USAGE_FLUSH_INTERVAL"
	EnvUsageRetentionMinute = "USAGE_RETENTION_MINUTE"
	EnvUsageRetentionHour   = "USAGE_RETENTION_HOUR"
	EnvUsageRetentionDay    = "USAGE_RETENTION_DAY"
)

// MaxUsageFlush bounds the flush interval: a count is written at most
// this long after its verification while the process runs.
const MaxUsageFlush = 10 * time.Second

// UsageOptionsFromEnv reads the flush interval (1s to 10s, default 5s)
// and the retention of each interval (a Go duration, at least its
// bucket's length; defaults 48h, 2160h, 17520h) from getenv.
func UsageOptionsFromEnv(getenv func(string) string) (UsageOptions, error) {
	o := UsageOptions{Every: DefaultUsageFlush, Retention: DefaultUsageRetention}
	if v := getenv(EnvUsageFlush); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Second || d > MaxUsageFlush {
			return o, fmt.Errorf("%s must be a duration from 1s to 10s, such as 5s", EnvUsageFlush)
		}
		o.Every = d
	}
	for _, r := range []struct {
		env      string
		interval string
		to       *time.Duration
	}{
		{EnvUsageRetentionMinute, IntervalMinute, &o.Retention.Minute},
		{EnvUsageRetentionHour, IntervalHour, &o.Retention.Hour},
		{EnvUsageRetentionDay, IntervalDay, &o.Retention.Day},
	} {
		v := getenv(r.env)
		if v == "" {
			continue
		}
		d, err := time.ParseDuration(v)
		if err != nil || d < intervalLength(r.interval) {
			return o, fmt.Errorf("%s must be a duration of at least one %s, such as %s", r.env, r.interval, DefaultUsageRetention.of(r.interval))
		}
		*r.to = d
	}
	return o, nil
}

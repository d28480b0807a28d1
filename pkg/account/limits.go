package account

import (
	"context"
	crand "crypto/rand"
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// RateLimit bounds the uses of an API key: at most Limit in each Period.
// Periods are fixed windows aligned to the Unix epoch (a 1d limit resets
// at midnight UTC, a 1m limit on the minute): see docs/rate-limits.md for
// why a fixed window.
type RateLimit struct {
	// Name tells the limits of a key apart (ValidRateLimitName); it names
	// the policy in the RateLimit header fields.
	Name   string
	Limit  int64
	Period time.Duration
}

// Credits is the number of verifications a key has left: each valid
// verification of one of its tokens spends one (not token issuance, not
// the key's own requests).
type Credits struct {
	// Remaining is the number left: as set (by create or PATCH) on the key
	// a store returns; as of now on the key the service returns.
	Remaining int64
	// Refill, when set, sets Remaining to Refill.Amount at the start of
	// each day or month (UTC).
	Refill *CreditRefill
	// SetAt is when Remaining was set: the refill period it counts in.
	// Set is a random name for that setting: it names the counter the
	// uses spend from, so that setting Remaining again, even within the
	// same millisecond, starts a new one; after recordsSep, the number
	// of usage records the count spreads over (records). Both kept by the
	// store, never shown.
	SetAt time.Time
	Set   string
}

// CreditRefill sets a key's remaining credits to Amount at the start of
// each Interval.
type CreditRefill struct {
	Amount   int64
	Interval string // RefillDaily or RefillMonthly
}

// The refill intervals of credits.
const (
	RefillDaily   = "daily"
	RefillMonthly = "monthly"
)

// Bounds of rate limits and credits.
const (
	MaxRateLimits   = 5
	MinLimitPeriod  = time.Second
	MaxLimitPeriod  = 24 * time.Hour
	MaxLimit        = 1_000_000_000
	MaxCredits      = 1_000_000_000_000_000 // exact in a JSON number (below 2^53)
	maxRateLimitLen = 32
)

var rateLimitNamePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)

// CreditsPolicy names the credits in the RateLimit header fields, beside
// the rate limits, which are named by their names: no rate limit takes it.
const CreditsPolicy = "credits"

// ValidRateLimitName reports whether s can name a rate limit: 1 to 32
// letters, digits, "_" or "-", which a RateLimit header field carries as
// it is.
func ValidRateLimitName(s string) bool { return rateLimitNamePattern.MatchString(s) }

// RateLimitRequest is a rate limit as a client asks for it.
type RateLimitRequest struct {
	Name   string
	Limit  int64
	Period string // a duration, 1s to 1d
}

// CreditsRequest is credits as a client asks for them.
type CreditsRequest struct {
	Remaining int64
	Refill    *CreditRefill
}

// checkRateLimits validates the rate limits of a request under field
// ("rate_limits") and returns them; nil for none.
func checkRateLimits(field string, req []RateLimitRequest, problems *Problems) []RateLimit {
	if len(req) > MaxRateLimits {
		problems.Add(field, fmt.Sprintf("must hold at most %d rate limits", MaxRateLimits))
		return nil
	}
	var out []RateLimit
	for i, r := range req {
		f := fmt.Sprintf("%s[%d]", field, i)
		n := len(*problems)
		if !ValidRateLimitName(r.Name) {
			problems.Add(f+".name", fmt.Sprintf("must be 1 to %d letters, digits, _ or -", maxRateLimitLen))
		} else if r.Name == CreditsPolicy {
			problems.Add(f+".name", fmt.Sprintf("%q names the credits in the RateLimit header fields: choose another name", CreditsPolicy))
		} else if slices.ContainsFunc(req[:i], func(o RateLimitRequest) bool { return o.Name == r.Name }) {
			problems.Add(f+".name", "is the name of another rate limit of the key: names are unique")
		}
		if r.Limit < 1 || r.Limit > MaxLimit {
			problems.Add(f+".limit", fmt.Sprintf("must be from 1 to %d", MaxLimit))
		}
		d, err := ParseDuration(r.Period, MinLimitPeriod, MaxLimitPeriod)
		if err != nil {
			problems.Add(f+".period", err.Error())
		}
		if len(*problems) == n && float64(r.Limit)/d.Seconds() > MaxUsageShards*usesPerShard {
			// More than the usage records of a key carry.
			problems.Add(f+".limit", fmt.Sprintf("must be at most %d a second of its period (%d for %s)", MaxUsageShards*usesPerShard, int64(MaxUsageShards*usesPerShard*d.Seconds()), FormatPeriod(d)))
		}
		if len(*problems) == n {
			out = append(out, RateLimit{Name: r.Name, Limit: r.Limit, Period: d})
		}
	}
	return out
}

// checkCredits validates credits under field ("credits") and returns them
// as set at now; nil for none.
func checkCredits(field string, req *CreditsRequest, now time.Time, problems *Problems) *Credits {
	if req == nil {
		return nil
	}
	n := len(*problems)
	if req.Remaining < 0 || req.Remaining > MaxCredits {
		problems.Add(field+".remaining", fmt.Sprintf("must be from 0 to %d", int64(MaxCredits)))
	}
	if r := req.Refill; r != nil {
		if r.Amount < 1 || r.Amount > MaxCredits {
			problems.Add(field+".refill.amount", fmt.Sprintf("must be from 1 to %d", int64(MaxCredits)))
		}
		if r.Interval != RefillDaily && r.Interval != RefillMonthly {
			problems.Add(field+".refill.interval", `must be "daily" or "monthly"`)
		}
	}
	if len(*problems) > n {
		return nil
	}
	c := &Credits{Remaining: req.Remaining, SetAt: now, Set: crand.Text()[:16]}
	if req.Refill != nil {
		r := *req.Refill
		c.Refill = &r
	}
	return c
}

// Limited reports whether uses of the key are counted: it has rate limits
// or credits. A key without either costs no write when it is used.
func (k APIKey) Limited() bool { return len(k.RateLimits) > 0 || k.Credits != nil }

// KeyLimits are the rate limits and credits of one key, which its uses and
// those of every key below it count against (APIKey.LimitsAbove), or of
// one organization, which the uses of every key bound to it count against
// (APIKey.OrganizationLimits).
type KeyLimits struct {
	// KeyID names the usage records: the key's id, or the organization's
	// (IDs have distinct prefixes, so they never name the same record).
	KeyID      string
	RateLimits []RateLimit
	Credits    *Credits
	// ExpiresAt is the key's: its usage record with credits lasts as long.
	ExpiresAt time.Time
}

// Limits returns the key's own rate limits and credits.
func (k APIKey) Limits() KeyLimits {
	return KeyLimits{KeyID: k.ID, RateLimits: k.RateLimits, Credits: k.Credits, ExpiresAt: k.ExpiresAt}
}

// counts reports whether a use counts against l: it has rate limits, or
// credits and the use spends one.
func (l KeyLimits) counts(spend bool) bool {
	return len(l.RateLimits) > 0 || spend && l.Credits != nil
}

// Reasons a verification of a well-signed token of a valid key is refused
// for its key's limits.
const (
	// ReasonRateLimited: a rate limit of the key is reached until the end
	// of its window (Verification.Usage.RetryAfter).
	ReasonRateLimited = "rate_limited"
	// ReasonUsageExceeded: the key's credits are spent.
	ReasonUsageExceeded = "usage_exceeded"
)

// CodeRateLimited answers a request that an API key authenticates, with
// its secret or one of its tokens, when a rate limit of the key is
// reached: 429, with Retry-After (Error.Usage).
const CodeRateLimited Code = "rate_limited"

// LimitState is where a rate limit of a key stands after a use.
type LimitState struct {
	RateLimit
	// Remaining is the number of uses left in the window; an estimate, low
	// rather than high, for a key whose counters are sharded.
	Remaining int64
	// Reset is the time until the window ends and the count starts again.
	Reset time.Duration
}

// KeyUsage is what a use of a limited key found: the limits it counted
// against after the use (or as they were, when the use was refused) and,
// for a refused use, when to try again. Of the limits of the key, of the
// keys above it and of its organization, it holds the tightest: for each
// period, the rate limit with the fewest uses left, and the credits with
// the fewest left.
type KeyUsage struct {
	Limits []LimitState
	// Credits is where the tightest credits the use spent stand after it
	// (or, refused, as they were); nil when it spent none.
	Credits *CreditState
	// Refused is ReasonRateLimited or ReasonUsageExceeded when the use was
	// refused, "" when it was counted.
	Refused string
	// RetryAfter is, for a refused use, how long until it can succeed: the
	// end of the window of the limit reached, or the next refill; zero when
	// the key's credits are spent for good.
	RetryAfter time.Duration
}

// CreditState is where credits stand after a use.
type CreditState struct {
	// Remaining is the number left in the refill period.
	Remaining int64
	// Quota is what the period started with: the refill amount, or the
	// remaining count as set in the period it was set in.
	Quota int64
	// Refill is the refill interval (RefillDaily, RefillMonthly), "" for
	// none; Reset the time until the next refill, zero without.
	Refill string
	Reset  time.Duration
}

// merge adds found, what a use found of one more usage record, to u,
// keeping the tightest: per period the rate limit with the fewest uses
// left (the first found on a tie: the key's own, then those above it,
// then the organization's), and the credits with the fewest left.
func (u *KeyUsage) merge(found KeyUsage) {
	for _, st := range found.Limits {
		i := slices.IndexFunc(u.Limits, func(o LimitState) bool { return o.Period == st.Period })
		switch {
		case i < 0:
			u.Limits = append(u.Limits, st)
		case st.Remaining < u.Limits[i].Remaining:
			u.Limits[i] = st
		}
	}
	if c := found.Credits; c != nil && (u.Credits == nil || c.Remaining < u.Credits.Remaining) {
		u.Credits = c
	}
}

// UsageStore is the part of Store that counts the uses of limited keys.
type UsageStore interface {
	// ChangeKeyUsage applies c to the usage record number shard of the key
	// keyID in one atomic, conditional step: every step of c, or none when
	// one of them would leave its counter outside its bounds. It returns
	// the record's counters after the change and true, or as they were and
	// false when the bounds refused it. It writes no event, and commits no
	// idempotency record.
	ChangeKeyUsage(ctx context.Context, keyID string, shard int, c UsageChange) (map[string]int64, bool, error)
	// ChangeKeysUsage applies changes, of the usage records of distinct
	// keys, as ChangeKeyUsage applies one, in one atomic, conditional
	// step: every step of every change, or none when one of them would
	// leave its counter outside its bounds. It returns true when it
	// applied them, with the counters of each record whose change asked
	// for them (ReadAfter), read after the step (they may hold later
	// changes too); or false, with the counters of each record whose
	// bounds refused, as they were. The others are nil.
	ChangeKeysUsage(ctx context.Context, changes []KeyUsageChange) ([]map[string]int64, bool, error)
	// KeyUsage returns the counters of each usage record of recs, read
	// strongly consistently, in the order of recs: one read for a page of
	// 100 records. A record that does not exist has none (an empty map).
	KeyUsage(ctx context.Context, recs ...UsageRecord) ([]map[string]int64, error)
}

// UsageRecord names the usage record number Shard of the key (or
// organization) KeyID.
type UsageRecord struct {
	KeyID string
	Shard int
}

// KeyUsageChange is a change of the usage record number Shard of the key
// KeyID, one of the changes of ChangeKeysUsage.
type KeyUsageChange struct {
	KeyID string
	Shard int
	UsageChange
	// ReadAfter asks for the record's counters once the change is made.
	ReadAfter bool
}

// CounterStep is one counter of a UsageChange: the counter becomes its
// value (Start when it does not exist yet) plus Delta, if that is from Min
// to Max.
type CounterStep struct {
	Name         string
	Start, Delta int64
	Min, Max     int64
}

// UsageChange is a change of the usage record of a key: the counters of
// Steps change, those of Remove go. ExpiresAt is when the store may drop
// the record; zero keeps it.
type UsageChange struct {
	Steps     []CounterStep
	Remove    []string
	ExpiresAt time.Time
}

// usesPerShard is the most uses a second one usage record is planned for:
// half of the 1,000 writes a second DynamoDB allows one item, leaving room
// for a burst at the start of a window.
const usesPerShard = 500

// MaxUsageShards bounds the usage records of one key: 64 of them carry a
// limit of 32,000 uses a second.
const MaxUsageShards = 64

// minShare is the smallest share of a limit a shard counts: a key whose
// limits cannot all be shared that way gets fewer shards, down to one.
// Small shares fill unevenly, and a use tries two shards at most
// (maxShardTries), so a large share keeps the uses refused below the
// limit few (docs/rate-limits.md).
const minShare = 100

// maxShardTries is the most usage records one use writes to: a random
// one, then the next if it is full. It bounds the writes of a use.
const maxShardTries = 2

// staleCounters is how many counters of windows gone by a usage record
// keeps before a use removes them in a write of its own. A use removes the
// counter of the window just before its own in its one write; only a key
// unused for a whole window leaves one behind.
const staleCounters = 8

// usageShards is the number of usage records the uses of k spread over:
// its credits' (Credits.records), fixed when they were set, or for a key
// without credits as many as its rate limits need (rateShards).
func (k KeyLimits) usageShards() int {
	if k.Credits != nil {
		return k.Credits.records()
	}
	return rateShards(k.RateLimits)
}

// rateShards is the number of usage records limits need: enough for the
// highest rate at usesPerShard each, but no more than leaves every limit
// a share of minShare.
func rateShards(limits []RateLimit) int {
	rate := 0.0
	n := int64(MaxUsageShards)
	for _, l := range limits {
		rate = max(rate, float64(l.Limit)/l.Period.Seconds())
		n = min(n, l.Limit/minShare)
	}
	return max(min(int(math.Ceil(rate/usesPerShard)), int(n)), 1)
}

// recordsSep ends the random part of Credits.Set when the credits spread
// over several usage records, before their number: "<random>/8". A Set
// without it (one record, and every setting of the previous release)
// counts on record 0 alone, as that release does. The number lives in
// the setting's name, which every release keeps as it is, because the
// shares of a setting must never change while it counts.
const recordsSep = "/"

// records is the number of usage records c's count spreads over.
func (c Credits) records() int {
	_, n, ok := strings.Cut(c.Set, recordsSep)
	if !ok {
		return 1
	}
	v, err := strconv.Atoi(n)
	if err != nil || v < 1 || v > MaxUsageShards {
		return 1
	}
	return v
}

// spread sizes the usage records of c, credits about to be set on a key
// or organization whose rate limits are limits: as many as the rates
// need (rateShards), but no more than maxRecords. A key whose limits
// change later keeps the size until its credits are set again.
func (c *Credits) spread(limits []RateLimit) {
	if c == nil {
		return
	}
	n := min(rateShards(limits), c.maxRecords())
	c.Set, _, _ = strings.Cut(c.Set, recordsSep)
	if n > 1 {
		c.Set += recordsSep + strconv.Itoa(n)
	}
}

// maxRecords is the most usage records c may spread over: each keeps a
// share of minShare of a period's credits (the refill amount, or the
// count set without a refill), so that few credits stay on one record.
func (c Credits) maxRecords() int {
	amount := c.Remaining
	if c.Refill != nil {
		amount = c.Refill.Amount
	}
	return int(min(max(amount/minShare, 1), MaxUsageShards))
}

// share is the part of limit a shard j of n counts.
func share(limit int64, j, n int) int64 {
	s := limit / int64(n)
	if int64(j) < limit%int64(n) {
		s++
	}
	return s
}

// window is the fixed window of period that holds now, and when it ends.
func window(period time.Duration, now time.Time) (int64, time.Time) {
	p := period.Milliseconds()
	w := now.UnixMilli() / p
	return w, time.UnixMilli((w + 1) * p).UTC()
}

// refillPeriod is the day or month (UTC) that holds t, and when it ends.
func refillPeriod(interval string, t time.Time) (int64, time.Time) {
	t = t.UTC()
	if interval == RefillMonthly {
		start := time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
		return int64(t.Year())*12 + int64(t.Month()) - 1, start.AddDate(0, 1, 0)
	}
	d := t.Unix() / 86400
	return d, time.Unix((d+1)*86400, 0).UTC()
}

func limitCounter(l RateLimit, w int64) string {
	return "r:" + l.Name + ":" + strconv.FormatInt(l.Period.Milliseconds(), 10) + ":" + strconv.FormatInt(w, 10)
}

// RateLimitCounter is the name of the counter of l's window at at in a
// key's usage record: for a fixture that seeds a limit already reached.
func RateLimitCounter(l RateLimit, at time.Time) string {
	w, _ := window(l.Period, at)
	return limitCounter(l, w)
}

// creditCounter names the counter of the credits set as set (Credits.Set),
// in the refill period p (0 without refill): setting them again starts a
// new one.
func creditCounter(set string, p int64) string {
	return "c:" + set + ":" + strconv.FormatInt(p, 10)
}

// creditStart is the credits a period begins with: those set, in the
// period they were set in, and the refill amount in each one after.
func (c Credits) start(p int64) int64 {
	if c.Refill == nil {
		return c.Remaining
	}
	if sp, _ := refillPeriod(c.Refill.Interval, c.SetAt); sp == p {
		return c.Remaining
	}
	return c.Refill.Amount
}

// creditPeriod is the refill period of now, and when the next starts;
// 0 and the zero time without refill.
func (c Credits) period(now time.Time) (int64, time.Time) {
	if c.Refill == nil {
		return 0, time.Time{}
	}
	return refillPeriod(c.Refill.Interval, now)
}

// usagePlan is one use of a key, counted in one shard: the change to make
// and how to read what it leaves.
type usagePlan struct {
	change  UsageChange
	names   []string // the counter of each rate limit, in k.RateLimits order
	credit  string   // the credit counter, "" when the use spends none
	next    string   // on record 0, the next refill period's (startRecordZero)
	ends    []time.Time
	refill  time.Time
	current map[string]bool
}

// plan returns the change that counts a use of k at now in shard j of n,
// spending a credit if spend is set and the key has credits.
func plan(k KeyLimits, now time.Time, j, n int, spend bool) usagePlan {
	u := usagePlan{current: map[string]bool{}}
	var keep time.Time
	for _, l := range k.RateLimits {
		w, end := window(l.Period, now)
		name := limitCounter(l, w)
		u.names = append(u.names, name)
		u.ends = append(u.ends, end)
		u.current[name] = true
		u.change.Steps = append(u.change.Steps, CounterStep{Name: name, Start: 0, Delta: 1, Min: 1, Max: share(l.Limit, j, n)})
		u.change.Remove = append(u.change.Remove, limitCounter(l, w-1))
		keep = later(keep, end.Add(l.Period))
	}
	if c := k.Credits; c != nil {
		p, next := c.period(now)
		name := creditCounter(c.Set, p)
		u.current[name] = true
		if spend {
			u.credit = name
			u.refill = next
			u.change.Steps = append(u.change.Steps, CounterStep{Name: name, Start: share(c.start(p), j, n), Delta: -1, Min: 0, Max: MaxCredits})
			if c.Refill != nil {
				u.change.Remove = append(u.change.Remove, creditCounter(c.Set, p-1))
				if j == 0 && n > 1 {
					// Started ahead, for 0.1.0 (startRecordZero): this
					// release may not serve the next period's first use.
					u.next = creditCounter(c.Set, p+1)
					u.current[u.next] = true
					u.change.Steps = append(u.change.Steps, CounterStep{Name: u.next, Start: share(c.Refill.Amount, 0, n), Min: 0, Max: MaxCredits})
				}
			}
		}
		// Credits are the key's for as long as it lives: a record that
		// went would give them back.
		keep = time.Time{}
		if !k.ExpiresAt.IsZero() {
			keep = k.ExpiresAt.Add(ExpiredKeyRetention)
		}
	}
	u.change.ExpiresAt = keep
	return u
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// read says what the counters a change of shard j of n left (or refused
// on) mean for the use: the state of each limit, and why it was refused.
func (u usagePlan) read(k KeyLimits, counters map[string]int64, applied bool, now time.Time, j, n int) KeyUsage {
	var out KeyUsage
	for i, l := range k.RateLimits {
		used := counters[u.names[i]]
		// One shard's count stands for all of them: exact with one shard,
		// an estimate with more.
		st := LimitState{RateLimit: l, Remaining: max(l.Limit-used*int64(n), 0), Reset: u.ends[i].Sub(now)}
		if !applied && used >= share(l.Limit, j, n) {
			st.Remaining = 0
			out.Refused = ReasonRateLimited
			out.RetryAfter = max(out.RetryAfter, st.Reset)
		}
		out.Limits = append(out.Limits, st)
	}
	if u.credit != "" {
		c := *k.Credits
		st := &CreditState{Quota: c.start(mustPeriod(c, now))}
		start := share(st.Quota, j, n)
		left, ok := counters[u.credit]
		if !ok {
			left = start
		}
		// As for rate limits: exact with one record, an estimate from
		// this record's spending with more.
		st.Remaining = min(max(st.Quota-(start-left)*int64(n), 0), st.Quota)
		if c.Refill != nil {
			st.Refill, st.Reset = c.Refill.Interval, u.refill.Sub(now)
		}
		out.Credits = st
		if !applied && out.Refused == "" && left <= 0 {
			out.Refused = ReasonUsageExceeded
			out.RetryAfter = st.Reset
		}
	}
	if !applied && out.Refused == "" {
		// A bound refused the change: some counter is at it, whatever
		// the record read back says.
		out.Refused, out.RetryAfter = ReasonRateLimited, time.Second
	}
	return out
}

func mustPeriod(c Credits, now time.Time) int64 {
	p, _ := c.period(now)
	return p
}

// stale returns the counters of windows gone by in a record, once there
// are staleCounters of them.
func (u usagePlan) stale(counters map[string]int64) []string {
	var out []string
	for name := range counters {
		if !u.current[name] {
			out = append(out, name)
		}
	}
	if len(out) < staleCounters {
		return nil
	}
	slices.Sort(out)
	return out
}

// fullWindows remembers, per key, set of limits and shard, the refusal
// of a use by a full usage record: a window that is full stays full until
// it ends, so this process skips that record until then without a write.
// It never lets through a use the store would refuse, so counts never pass
// a limit; a change of the key's limits is another entry.
type fullWindows struct {
	mu      sync.Mutex
	entries map[string]fullWindow
	zero    map[string]bool // credits whose record 0 is started
}

type fullWindow struct {
	at    time.Time
	usage KeyUsage
}

func limitsKey(k KeyLimits, shard int) string {
	var b strings.Builder
	b.WriteString(k.KeyID)
	fmt.Fprintf(&b, "\x00%d/%d", shard, k.usageShards())
	for _, l := range k.RateLimits {
		fmt.Fprintf(&b, "\x00%s\x00%d\x00%d", l.Name, l.Limit, l.Period)
	}
	return b.String()
}

// get returns the refusal of a use of shard at now if one is known.
func (f *fullWindows) get(k KeyLimits, shard int, now time.Time) (KeyUsage, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	key := limitsKey(k, shard)
	e, ok := f.entries[key]
	if !ok {
		return KeyUsage{}, false
	}
	since := now.Sub(e.at)
	if since < 0 || since >= e.usage.RetryAfter {
		delete(f.entries, key)
		return KeyUsage{}, false
	}
	u := e.usage
	u.RetryAfter -= since
	u.Limits = slices.Clone(u.Limits)
	for i := range u.Limits {
		u.Limits[i].Reset = max(u.Limits[i].Reset-since, 0)
	}
	u.Credits = nil
	return u, true
}

func (f *fullWindows) set(k KeyLimits, shard int, now time.Time, u KeyUsage) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.entries == nil || len(f.entries) >= maxUseEntries {
		f.entries = make(map[string]fullWindow)
	}
	f.entries[limitsKey(k, shard)] = fullWindow{at: now, usage: u}
}

// spentKey names the credits of k a use spends at now: the counter of
// their setting and refill period, on every record of k.
func spentKey(k KeyLimits, now time.Time) string {
	p, _ := k.Credits.period(now)
	return k.KeyID + "\x00" + creditCounter(k.Credits.Set, p)
}

// spent returns the refusal of a use of k's credits at now if this
// process found them spent on every record. Credits only go down until
// the next refill, and setting them again names another counter, so the
// refusal holds until the refill (for good without one): a key out of
// credits costs no write, and no read of its records, per refusal.
func (f *fullWindows) spent(k KeyLimits, now time.Time) (KeyUsage, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	key := spentKey(k, now)
	e, ok := f.entries[key]
	if !ok {
		return KeyUsage{}, false
	}
	since := now.Sub(e.at)
	if since < 0 || e.usage.RetryAfter > 0 && since >= e.usage.RetryAfter {
		delete(f.entries, key)
		return KeyUsage{}, false
	}
	u := e.usage
	if u.RetryAfter > 0 {
		u.RetryAfter -= since
	}
	// The rate limits as they were, for the windows not yet ended.
	u.Limits = nil
	for _, st := range e.usage.Limits {
		if st.Reset > since {
			st.Reset -= since
			u.Limits = append(u.Limits, st)
		}
	}
	if c := u.Credits; c != nil {
		cs := *c
		cs.Reset = max(cs.Reset-since, 0)
		u.Credits = &cs
	}
	return u, true
}

func (f *fullWindows) setSpent(k KeyLimits, now time.Time, u KeyUsage) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.entries == nil || len(f.entries) >= maxUseEntries {
		f.entries = make(map[string]fullWindow)
	}
	f.entries[spentKey(k, now)] = fullWindow{at: now, usage: u}
}

// started reports whether this process found record 0 of k's spread
// credits holding the counter of now's period (startRecordZero): a
// counter, once there, stays until the period ends.
func (f *fullWindows) started(k KeyLimits, now time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.zero[spentKey(k, now)]
}

func (f *fullWindows) setStarted(k KeyLimits, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.zero == nil || len(f.zero) >= maxUseEntries {
		f.zero = make(map[string]bool)
	}
	f.zero[spentKey(k, now)] = true
}

// limiter counts the uses of limited keys: the rule of rate limits and
// credits, over a UsageStore.
type limiter struct {
	store UsageStore
	full  fullWindows
}

// use counts one use of k at now, spending a credit if spend is set,
// against k's own limits, those of every limited key above it
// (LimitsAbove) and those of its organization (OrganizationLimits), and
// returns the tightest of what it found (KeyUsage). A use that counts
// against nothing costs nothing: nil. A refused use changes no counter,
// anywhere: a key's limits bound the uses of its whole subtree, an
// organization's those of every key bound to it.
//
// A use writes to one usage record of each key it counts against: the
// key's own alone with one conditional write (ChangeKeyUsage), several in
// one transaction (ChangeKeysUsage), so that a use one of them refuses
// counts in none. Of a key with several records, a use goes to one chosen
// at random; if it is full, to the next one, and no further: at most
// maxShardTries writes. Records this process knows to be full are skipped
// without a write. With one record each (every key below 500 uses a
// second) the answer is exact; with more, a use is refused when the
// records it tried are full, possibly before the others are. A refused
// use answers the soonest RetryAfter among its tries (the earliest a
// record frees), each try the latest of the records that refused it (all
// of them must free).
//
// Credits are exact however many records they spread over: a record
// whose credits are spent sends the use to another (nextCredits), and
// the use is refused for credits only once every record is spent, which
// this process then remembers for the rest of the refill period.
func (l *limiter) use(ctx context.Context, k APIKey, now time.Time, spend bool) (*KeyUsage, error) {
	recs := usageRecords(k, spend)
	if len(recs) == 0 {
		return nil, nil
	}
	for _, r := range recs {
		if spend && r.limits.Credits != nil {
			if u, ok := l.full.spent(r.limits, now); ok {
				return &u, nil
			}
		}
	}
	var refused *KeyUsage
	refuse := func(u KeyUsage) {
		if refused == nil || u.RetryAfter < refused.RetryAfter {
			refused = &u
		}
	}
	for tries := 0; tries < maxShardTries; {
		for i := range recs {
			r := &recs[i]
			for {
				u, ok := l.full.get(r.limits, r.shard, now)
				if !ok {
					break
				}
				refuse(u)
				if !r.next() {
					return refused, nil
				}
			}
		}
		plans := make([]usagePlan, len(recs))
		for i, r := range recs {
			plans[i] = plan(r.limits, now, r.shard, r.n, spend)
		}
		if err := l.startRecordsZero(ctx, recs, plans, now); err != nil {
			return nil, err
		}
		counters, applied, err := l.change(ctx, recs, plans)
		if err != nil {
			return nil, storeErr(err)
		}
		for i, r := range recs {
			if _, ok := counters[i][plans[i].credit]; ok && r.shard == 0 && r.n > 1 {
				l.full.setStarted(r.limits, now)
			}
		}
		if applied {
			return l.counted(ctx, recs, plans, counters, now), nil
		}
		u := KeyUsage{Refused: ReasonRateLimited}
		full, moved, exhausted := false, false, false
		for i := range recs {
			r := &recs[i]
			if counters[i] == nil {
				continue // its bounds held
			}
			found := plans[i].read(r.limits, counters[i], false, now, r.shard, r.n)
			if found.Refused == ReasonUsageExceeded {
				ok, refusal, err := l.nextCredits(ctx, r, now)
				switch {
				case err != nil:
					return nil, err
				case refusal != nil:
					refuse(*refusal)
					return refused, nil
				case !ok:
					found.Credits.Remaining = 0 // on every record
					l.full.setSpent(r.limits, now, found)
					return &found, nil
				}
				moved = true
				continue
			}
			full = true
			l.full.set(r.limits, r.shard, now, found)
			u.merge(found)
			u.RetryAfter = max(u.RetryAfter, found.RetryAfter)
			exhausted = !r.next() || exhausted
		}
		if moved && !full {
			continue // a record with credits left, and no try spent
		}
		if u.RetryAfter == 0 {
			// A bound refused the change, whatever the records say.
			u.RetryAfter = time.Second
		}
		refuse(u)
		if exhausted {
			break
		}
		tries++
	}
	return refused, nil
}

// startRecordsZero makes sure, before a use spends credits that spread
// over several records from another record than 0, that record 0 holds
// the period's counter (startRecordZero): the first time in the process
// per key (or organization) and period; a use that writes record 0
// starts it itself.
func (l *limiter) startRecordsZero(ctx context.Context, recs []usageRecord, plans []usagePlan, now time.Time) error {
	for i, r := range recs {
		if plans[i].credit == "" || r.n == 1 || r.shard == 0 || l.full.started(r.limits, now) {
			continue
		}
		if err := l.startRecordZero(ctx, r.limits, now); err != nil {
			return err
		}
	}
	return nil
}

// startRecordZero writes the counter of k's spread credits for now's
// period on record 0, started at record 0's share, unless it is there,
// and with a refill the next period's too (as every use of record 0
// does): the previous release (0.1.0) counts on record 0 alone, from
// if_not_exists(counter, the whole count), and would give again what
// this release spends on the other records. Once it is there, 0.1.0
// spends record 0's share and no more.
func (l *limiter) startRecordZero(ctx context.Context, k KeyLimits, now time.Time) error {
	u := plan(k, now, 0, k.Credits.records(), true)
	var steps []CounterStep
	for _, st := range u.change.Steps {
		if st.Name == u.credit || st.Name == u.next {
			st.Delta = 0
			steps = append(steps, st)
		}
	}
	if _, _, err := l.store.ChangeKeyUsage(ctx, k.KeyID, 0, UsageChange{Steps: steps, ExpiresAt: u.change.ExpiresAt}); err != nil {
		return storeErr(err)
	}
	l.full.setStarted(k, now)
	return nil
}

// startCredits starts record 0 of credits just set on several records
// (startRecordZero), so that 0.1.0 finds it even when it serves their
// first use. Best effort: the setting is stored, and this release's
// first use in each process starts the record anyway.
func (s *Service) startCredits(ctx context.Context, k KeyLimits) {
	if k.Credits == nil || k.Credits.records() == 1 {
		return
	}
	if err := s.verifier.limiter.startRecordZero(ctx, k, k.Credits.SetAt); err != nil {
		s.log.WarnContext(ctx, "record 0 of spread credits was not started", "key_id", k.KeyID, "error", err.Error())
	}
}

// nextCredits moves r, whose record this use found without credits, to
// another record of the key with credits left: the next one, as for a
// full record of rate limits, then, once maxShardTries records were
// found spent, one of the others that has credits and room in its rate
// limits, all read in one strongly consistent read. Records spend
// evenly, so that read comes near the end of the credits only. It
// reports false when no record has credits left (they are spent), with
// the refusal of the rate limits when only records whose rate limits
// are full have some.
//
// Moves end: a record found spent is never read again (credits only go
// down), so a use reads at most once per record of the key, and only
// when another use spent the credits it picked.
func (l *limiter) nextCredits(ctx context.Context, r *usageRecord, now time.Time) (bool, *KeyUsage, error) {
	r.spent = append(r.spent, r.shard)
	if len(r.spent) < min(maxShardTries, r.n) {
		r.shard = (r.shard + 1) % r.n
		return true, nil, nil
	}
	var others []UsageRecord
	for j := range r.n {
		if !slices.Contains(r.spent, j) {
			others = append(others, UsageRecord{KeyID: r.limits.KeyID, Shard: j})
		}
	}
	if len(others) == 0 {
		return false, nil, nil
	}
	counters, err := l.store.KeyUsage(ctx, others...)
	if err != nil {
		return false, nil, storeErr(err)
	}
	if len(counters) != len(others) {
		return false, nil, Internal(fmt.Errorf("KeyUsage: %d answers for %d records", len(counters), len(others)))
	}
	var total int64
	lefts := make([]int64, len(others))
	var refusal *KeyUsage
	for i, o := range others {
		p := plan(r.limits, now, o.Shard, r.n, true)
		left := p.creditsLeft(counters[i])
		switch {
		case left <= 0:
			r.spent = append(r.spent, o.Shard)
		case p.fits(counters[i]):
			lefts[i] = left
			total += left
		default: // credits, but a rate limit full
			found := p.read(r.limits, counters[i], false, now, o.Shard, r.n)
			if refusal == nil || found.RetryAfter < refusal.RetryAfter {
				refusal = &found
			}
		}
	}
	if total == 0 {
		return false, refusal, nil
	}
	// At random, in proportion to the credits left, so that the uses that
	// reach the end together spread over the records that have some.
	pick := rand.Int64N(total)
	for i, left := range lefts {
		if pick < left {
			r.shard = others[i].Shard
			break
		}
		pick -= left
	}
	return true, nil, nil
}

// creditsLeft is what a record holding counters has left of the credits
// u spends.
func (u usagePlan) creditsLeft(counters map[string]int64) int64 {
	for _, st := range u.change.Steps {
		if st.Name == u.credit {
			if v, ok := counters[st.Name]; ok {
				return v
			}
			return st.Start
		}
	}
	return 0
}

// fits reports whether the store would apply u's change to a record
// holding counters: its condition, checked on counters read.
func (u usagePlan) fits(counters map[string]int64) bool {
	for _, st := range u.change.Steps {
		v, ok := counters[st.Name]
		if !ok {
			v = st.Start
		}
		if v+st.Delta < st.Min || v+st.Delta > st.Max {
			return false
		}
	}
	return true
}

// usageRecord is one key (or organization) a use counts against, and
// which of its usage records the use tries.
type usageRecord struct {
	limits KeyLimits
	n      int   // its usage records
	shard  int   // the one to try
	left   int   // those not yet found full
	spent  []int // those found without credits
}

// usageRecords returns the keys a use of k counts against, k first if it
// does, then the keys above it, then its organization, each at a record
// chosen at random. A key without limits below none, in an organization
// without, costs no allocation.
func usageRecords(k APIKey, spend bool) []usageRecord {
	var out []usageRecord
	add := func(l KeyLimits) {
		if !l.counts(spend) {
			return
		}
		n := l.usageShards()
		first := 0
		if n > 1 {
			first = rand.IntN(n)
		}
		out = append(out, usageRecord{limits: l, n: n, shard: first, left: n})
	}
	add(k.Limits())
	for _, l := range k.LimitsAbove {
		add(l)
	}
	if k.OrganizationLimits != nil {
		add(*k.OrganizationLimits)
	}
	return out
}

// next moves r to its next record, the one it tried being full, and
// reports false when every record of it was found full.
func (r *usageRecord) next() bool {
	r.left--
	r.shard = (r.shard + 1) % r.n
	return r.left > 0
}

// change makes the changes of one use, one for each of recs: a key's own
// alone in one write, which returns its counters; several in one
// transaction, which reads back those of the records with rate limits or
// credits spent (for the answer's limits and the RateLimit fields, and to
// remove their windows gone by).
func (l *limiter) change(ctx context.Context, recs []usageRecord, plans []usagePlan) ([]map[string]int64, bool, error) {
	if len(recs) == 1 {
		c, applied, err := l.store.ChangeKeyUsage(ctx, recs[0].limits.KeyID, recs[0].shard, plans[0].change)
		if c == nil && err == nil {
			c = map[string]int64{}
		}
		return []map[string]int64{c}, applied, err
	}
	changes := make([]KeyUsageChange, len(recs))
	for i, r := range recs {
		changes[i] = KeyUsageChange{KeyID: r.limits.KeyID, Shard: r.shard, UsageChange: plans[i].change, ReadAfter: len(r.limits.RateLimits) > 0 || plans[i].credit != ""}
	}
	counters, applied, err := l.store.ChangeKeysUsage(ctx, changes)
	if err == nil && len(counters) != len(recs) {
		return nil, false, Internal(fmt.Errorf("ChangeKeysUsage: %d answers for %d changes", len(counters), len(recs)))
	}
	return counters, applied, err
}

// counted is the answer of a use that counted, from the counters it left:
// the tightest of the limits of every record read, and the removal of
// windows gone by from each.
func (l *limiter) counted(ctx context.Context, recs []usageRecord, plans []usagePlan, counters []map[string]int64, now time.Time) *KeyUsage {
	u := &KeyUsage{}
	for i, r := range recs {
		c := counters[i]
		if c == nil {
			continue
		}
		if stale := plans[i].stale(c); stale != nil {
			// Best effort: a record that keeps them is only larger.
			_, _, _ = l.store.ChangeKeyUsage(ctx, r.limits.KeyID, r.shard, UsageChange{Remove: stale, ExpiresAt: plans[i].change.ExpiresAt})
		}
		u.merge(plans[i].read(r.limits, c, true, now, r.shard, r.n))
	}
	return u
}

// creditsOnly returns k without the rate limits of it, of the keys above
// it and of its organization: for a verification whose use a request
// counted already.
func (k APIKey) creditsOnly() APIKey {
	k.RateLimits = nil
	if o := k.OrganizationLimits; o != nil {
		limits := *o
		limits.RateLimits = nil
		k.OrganizationLimits = &limits
	}
	if len(k.LimitsAbove) > 0 {
		above := make([]KeyLimits, len(k.LimitsAbove))
		for i, l := range k.LimitsAbove {
			l.RateLimits = nil
			above[i] = l
		}
		k.LimitsAbove = above
	}
	return k
}

// limitsWithin returns CodeForbidden unless limits and credits, those a
// key will have once created or changed, are as tight as those of each of
// above, the limited keys above it (APIKey.LimitsAbove; for a key a
// principal creates, Principal.keyLimits). The uses of a key count
// against the limits of every key above it too, and its own limits may be
// tighter, never looser: for each rate limit of a key above, one of
// limits has the same period and a limit no higher; with credits above,
// the key has credits, no more remaining, and a refill only as the key
// above has one (same interval, no larger amount). Keys without limits
// above leave any.
func limitsWithin(above []KeyLimits, limits []RateLimit, credits *Credits) error {
	for _, a := range above {
		for _, l := range a.RateLimits {
			if !slices.ContainsFunc(limits, func(o RateLimit) bool { return o.Period == l.Period && o.Limit <= l.Limit }) {
				return Errorf(CodeForbidden, "a key above this one has rate limits: the keys below it need rate_limits as tight, here one of period %s and a limit of %d or less", FormatPeriod(l.Period), l.Limit)
			}
		}
		if c := a.Credits; c != nil {
			switch {
			case credits == nil || credits.Remaining > c.Remaining:
				return Errorf(CodeForbidden, "a key above this one has credits: the keys below it need credits, at most %d remaining", c.Remaining)
			case credits.Refill != nil && (c.Refill == nil || c.Refill.Interval != credits.Refill.Interval || credits.Refill.Amount > c.Refill.Amount):
				return Errorf(CodeForbidden, "the credits of a key above this one refill less (or not at all): the keys below it cannot have credits that refill more")
			}
		}
	}
	return nil
}

// keyLimits returns the limits of the principal's key, if it has any,
// and of the limited keys above it: those above a key it creates.
func (p Principal) keyLimits() []KeyLimits {
	out := slices.Clip(p.KeyLimitsAbove)
	if len(p.KeyRateLimits) > 0 || p.KeyCredits != nil {
		out = append(out, KeyLimits{KeyID: p.KeyID, RateLimits: p.KeyRateLimits, Credits: p.KeyCredits, ExpiresAt: p.KeyExpiresAt})
	}
	return out
}

// errRateLimited answers a request of a key over one of its rate limits.
func errRateLimited(u *KeyUsage) *Error {
	return &Error{Code: CodeRateLimited, Message: "a rate limit of this API key is reached: retry after the time Retry-After gives", Usage: u}
}

// creditsOf is the credits of a key or organization, and the id of the
// usage record that counts them.
type creditsOf struct {
	id      string
	credits **Credits
}

// keysCredits returns the credits of each of keys.
func keysCredits(keys []APIKey) []creditsOf {
	out := make([]creditsOf, len(keys))
	for i := range keys {
		out[i] = creditsOf{keys[i].ID, &keys[i].Credits}
	}
	return out
}

// remainingCredits sets each of credits that is set to its count as of
// now, the sum of its usage records, read in one read (a page of 100
// records): what a client sees of a key or an organization. Those
// without credits cost nothing.
func (l *limiter) remainingCredits(ctx context.Context, credits []creditsOf, now time.Time) error {
	var recs []UsageRecord
	for _, c := range credits {
		if *c.credits != nil {
			for j := range (*c.credits).records() {
				recs = append(recs, UsageRecord{KeyID: c.id, Shard: j})
			}
		}
	}
	if len(recs) == 0 {
		return nil
	}
	usage, err := l.store.KeyUsage(ctx, recs...)
	if err != nil {
		return storeErr(err)
	}
	if len(usage) != len(recs) {
		return Internal(fmt.Errorf("KeyUsage: %d answers for %d records", len(usage), len(recs)))
	}
	for _, co := range credits {
		if *co.credits == nil {
			continue
		}
		c := **co.credits
		p, _ := c.period(now)
		name, start, n := creditCounter(c.Set, p), c.start(p), c.records()
		c.Remaining = 0
		for j := range n {
			if v, ok := usage[0][name]; ok {
				c.Remaining += v
			} else {
				c.Remaining += share(start, j, n)
			}
			usage = usage[1:]
		}
		*co.credits = &c
	}
	return nil
}

// FormatPeriod is a rate limit's period as the API shows it: 1s, 15m, 1d.
func FormatPeriod(d time.Duration) string { return formatDuration(d) }

// rateLimitStates returns where each of k's rate limits stands now, summed
// over every usage record its uses spread over (one read): exact, where a
// use's own answer holds one shard's estimate. Nil for a key without rate
// limits.
func (l *limiter) rateLimitStates(ctx context.Context, k KeyLimits, now time.Time) ([]LimitState, error) {
	if len(k.RateLimits) == 0 {
		return nil, nil
	}
	out := make([]LimitState, len(k.RateLimits))
	for i, rl := range k.RateLimits {
		_, end := window(rl.Period, now)
		out[i] = LimitState{RateLimit: rl, Reset: end.Sub(now)}
	}
	n := k.usageShards()
	recs := make([]UsageRecord, n)
	for j := range n {
		recs[j] = UsageRecord{KeyID: k.KeyID, Shard: j}
	}
	usage, err := l.store.KeyUsage(ctx, recs...)
	if err != nil {
		return nil, storeErr(err)
	}
	if len(usage) != n {
		return nil, Internal(fmt.Errorf("KeyUsage: %d answers for %d records", len(usage), n))
	}
	for j, counters := range usage {
		for i, rl := range k.RateLimits {
			w, _ := window(rl.Period, now)
			out[i].Remaining += max(share(rl.Limit, j, n)-counters[limitCounter(rl, w)], 0)
		}
	}
	return out, nil
}

// APIKeyRateLimits returns where each rate limit of the key k stands now:
// uses left in the window and the time until it ends. k is the key as the
// principal just read it (GetAPIKey), which the page that shows both has
// read already: the read rule is checked again on it, with no read.
// Reading counts no use.
func (s *Service) APIKeyRateLimits(ctx context.Context, p Principal, k APIKey) ([]LimitState, error) {
	if err := p.Decide(ActionRead, k); err != nil {
		return nil, err
	}
	return s.verifier.limiter.rateLimitStates(ctx, k.Limits(), s.now())
}

// OrganizationRateLimits is APIKeyRateLimits for the rate limits of the
// organization o, as the principal read it (GetOrganization), which every
// key bound to it counts against.
func (s *Service) OrganizationRateLimits(ctx context.Context, p Principal, o Organization) ([]LimitState, error) {
	if err := p.mayReadOrganization(OpGetOrganization, o.ID); err != nil {
		return nil, err
	}
	return s.verifier.limiter.rateLimitStates(ctx, KeyLimits{KeyID: o.ID, RateLimits: o.RateLimits, Credits: o.Credits}, s.now())
}

package account

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Token Status List (draft-ietf-oauth-status-list): every access token
// names an entry, two bits, of a status list that anyone may fetch, so that
// a resource server that verifies tokens offline still learns of their
// revocation within the list's ttl. docs/dynamodb.md ("Status lists")
// describes the design.

// StatusListPath is the path, under the issuer, of the status lists: a
// list's uri is the issuer, this path, and the list's ID. Without the
// trailing slash, it is the aggregation endpoint.
const StatusListPath = "/v1/auth/status-lists/"

// The statuses of an entry (the draft's section 7.1), two bits each.
const (
	StatusValid     = 0
	StatusInvalid   = 1 // revoked, or its key, a key above it or its organization deleted: for good
	StatusSuspended = 2 // its key or a key above it disabled: until enabled
	StatusBits      = 2
)

// StatusRef is a token's entry: the list and the index in it.
type StatusRef struct {
	List  string
	Index int64
}

// StatusListURI returns the uri of the list id under issuer.
func StatusListURI(issuer, id string) string { return issuer + StatusListPath + id }

// StatusListFromURI returns the list ID of uri, a list of issuer; false if
// uri is not one.
func StatusListFromURI(issuer, uri string) (string, bool) {
	id, ok := strings.CutPrefix(uri, issuer+StatusListPath)
	return id, ok && ValidStatusListID(id)
}

// A list's ID is its issuance window, the UTC hour (yyyymmddhh), a part
// number, and the period of status lists it belongs to, the
// Formats.StatusListsSince under which its tokens were issued
// (yyyymmddhhmmss): "2026112900-0-20261128120000". A window's tokens take
// part 0 until it holds MaxStatusListSize entries, then part 1, and so on.
// A list is served only while its period is the one in force
// (StatusListToken): if the format went out of force since (a rollback),
// the previous release may have revoked its tokens without flipping their
// entries, so it answers CodeNotFound for good, and a resource server
// fails closed.
const (
	statusWindow       = time.Hour
	statusWindowLayout = "2006010215"
	statusPeriodLayout = "20060102150405"
	// MaxStatusListSize bounds a list: 2^20 entries, 256 KiB of statuses
	// before compression.
	MaxStatusListSize = 1 << 20
	// StatusBlock is how many indexes a process leases at once: one
	// conditional ADD per block, never one per token.
	StatusBlock = 128
)

// StatusListID returns the ID of part of the window of t in the period
// that began at since (Formats.StatusListsSince).
func StatusListID(since, t time.Time, part int) string {
	return t.UTC().Truncate(statusWindow).Format(statusWindowLayout) + "-" + strconv.Itoa(part) + "-" + since.UTC().Format(statusPeriodLayout)
}

// parseStatusListID returns the window's start and the period of the list
// id; false if id is not a list ID this service makes.
func parseStatusListID(id string) (window, since time.Time, ok bool) {
	w, rest, ok1 := strings.Cut(id, "-")
	p, per, ok2 := strings.Cut(rest, "-")
	if !ok1 || !ok2 || len(w) != len(statusWindowLayout) || len(p) == 0 || len(p) > 4 || len(per) != len(statusPeriodLayout) {
		return time.Time{}, time.Time{}, false
	}
	window, err1 := time.Parse(statusWindowLayout, w)
	since, err2 := time.Parse(statusPeriodLayout, per)
	n, err3 := strconv.Atoi(p)
	if err1 != nil || err2 != nil || err3 != nil || n < 0 || strconv.Itoa(n) != p {
		return time.Time{}, time.Time{}, false
	}
	return window, since, true
}

// ValidStatusListID reports whether id is a list ID this service makes.
func ValidStatusListID(id string) bool {
	_, _, ok := parseStatusListID(id)
	return ok
}

// StatusListExpiry is when the list id retires: every token of its window
// has expired by then (MaxTokenLifetime), with a margin for clocks.
func StatusListExpiry(id string) time.Time {
	w, _, _ := strings.Cut(id, "-")
	start, _ := time.Parse(statusWindowLayout, w)
	return start.Add(statusWindow + MaxTokenLifetime + time.Hour)
}

// StatusList is a list as stored: Size entries, Statuses the draft's byte
// array of them (StatusBits each, the first in the least significant bits).
type StatusList struct {
	ID       string
	Size     int64
	Statuses []byte
}

// Status returns the status of entry i.
func (l StatusList) Status(i int64) int {
	if i < 0 || i/4 >= int64(len(l.Statuses)) {
		return StatusValid
	}
	return int(l.Statuses[i/4]>>(uint(i%4)*StatusBits)) & 3
}

// statusAllocator hands out the entries of the blocks a process leased:
// no two tokens, in this process or another, get the same one.
type statusAllocator struct {
	mu    sync.Mutex
	list  string
	part  int
	next  int64 // next index to hand out
	end   int64 // end of the leased block
	store Store
}

// allocate returns a fresh entry in the list of the window of now in the
// period since, leasing a block of StatusBlock indexes when this process
// has none left there.
func (a *statusAllocator) allocate(ctx context.Context, since, now time.Time) (StatusRef, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if id := StatusListID(since, now, 0); a.list == "" || !sameStatusList(a.list, id) {
		a.list, a.part, a.next, a.end = id, 0, 0, 0
	}
	for a.next >= a.end {
		end, err := a.store.LeaseStatusIndexes(ctx, a.list, StatusBlock, StatusListExpiry(a.list))
		if err != nil {
			return StatusRef{}, err
		}
		if end > MaxStatusListSize {
			a.part++
			if a.part > 9999 {
				return StatusRef{}, Unavailable(errors.New("account: every status list of this hour is full"))
			}
			a.list = StatusListID(since, now, a.part)
			continue
		}
		a.next, a.end = end-StatusBlock, end
	}
	ref := StatusRef{List: a.list, Index: a.next}
	a.next++
	return ref, nil
}

// sameStatusList reports whether the lists a and b are of the same window
// and period, whatever their parts.
func sameStatusList(a, b string) bool {
	wa, sa, _ := parseStatusListID(a)
	wb, sb, _ := parseStatusListID(b)
	return wa.Equal(wb) && sa.Equal(sb)
}

// StatusListToken returns the signed Status List Token of the list id at
// now, valid for ttl: CodeNotFound for a list that is not live, or not of
// the period of status lists in force (Formats, as this process read it
// within FormatsRefresh: before the earlier release serves again after a
// rollback). A failed read of the formats is CodeUnavailable, never a 404,
// which a resource server takes for good. The list is read strongly
// consistently: a change answered before is in it.
func (s *Service) StatusListToken(ctx context.Context, id string, ttl time.Duration) (string, error) {
	if s.signer == nil {
		return "", Unavailable(errors.New("account: this process has no token signer"))
	}
	now := s.now()
	if !ValidStatusListID(id) || !now.Before(StatusListExpiry(id)) {
		return "", ErrStatusListNotFound()
	}
	f, err := s.verifier.formats.load(ctx)
	if err != nil {
		return "", storeErr(err)
	}
	if !f.servesStatusList(id) {
		return "", ErrStatusListNotFound()
	}
	// iat is the start of the current period of statusPeriods ttl: the
	// token is the same for that long while the list does not change, so
	// that a client's ETag revalidates it, and it has at least that long
	// to live (its exp is StatusListLifetime after iat).
	period := statusPeriods * ttl
	iat := now.Truncate(period)
	l, err := s.store.GetStatusList(ctx, id)
	if err != nil {
		return "", storeErr(err)
	}
	tok, err := s.signer.SignStatusList(StatusListClaims{
		URI: StatusListURI(s.signer.Issuer(), id), IssuedAt: iat,
		ExpiresAt: iat.Add(StatusListLifetime(ttl)), TTL: ttl, List: l,
	})
	if err != nil {
		return "", Internal(err)
	}
	return tok, nil
}

// StatusListLifetime is a Status List Token's exp after its iat: ten times
// its ttl, so a resource server that cannot refresh stops trusting a copy
// after a bounded time.
func StatusListLifetime(ttl time.Duration) time.Duration { return 10 * ttl }

// statusPeriods is how many ttl a Status List Token's iat stays the same.
const statusPeriods = 5

// StatusListClaims is what a Status List Token asserts.
type StatusListClaims struct {
	URI       string // sub
	IssuedAt  time.Time
	ExpiresAt time.Time
	TTL       time.Duration
	List      StatusList
}

// StatusLists returns the uris of every live list of the period in force,
// for the aggregation endpoint: those StatusListToken serves.
func (s *Service) StatusLists(ctx context.Context) ([]string, error) {
	if s.signer == nil {
		return nil, Unavailable(errors.New("account: this process has no token signer"))
	}
	f, err := s.verifier.formats.load(ctx)
	if err != nil {
		return nil, storeErr(err)
	}
	ids, err := s.store.ListStatusLists(ctx, s.now())
	if err != nil {
		return nil, storeErr(err)
	}
	out := []string{}
	for _, id := range ids {
		if f.servesStatusList(id) {
			out = append(out, StatusListURI(s.signer.Issuer(), id))
		}
	}
	return out, nil
}

// StatusTTL bounds the ttl of the lists (STATUS_LIST_TTL).
const (
	DefaultStatusTTL = 10 * time.Second
	MinStatusTTL     = time.Second
	MaxStatusTTL     = 300 * time.Second
)

// ParseStatusTTL reads STATUS_LIST_TTL: whole seconds from 1 to 300;
// DefaultStatusTTL when empty.
func ParseStatusTTL(s string) (time.Duration, error) {
	if s == "" {
		return DefaultStatusTTL, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a whole number of seconds", s)
	}
	ttl := time.Duration(n) * time.Second
	return ttl, CheckStatusTTL(ttl)
}

// CheckStatusTTL says what is wrong with ttl, nil if nothing.
func CheckStatusTTL(ttl time.Duration) error {
	if ttl < MinStatusTTL || ttl > MaxStatusTTL || ttl%time.Second != 0 {
		return fmt.Errorf("the status list ttl must be a whole number of seconds from %d to %d", int(MinStatusTTL.Seconds()), int(MaxStatusTTL.Seconds()))
	}
	return nil
}

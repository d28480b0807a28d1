package verifier

import (
	"bytes"
	"compress/zlib"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// The statuses of draft-ietf-oauth-status-list, section 7.1.
const (
	statusValid     = 0
	statusInvalid   = 1
	statusSuspended = 2
)

// Bounds on a Status List Token: its size as fetched, and its list
// decompressed (64 Mi entries of 2 bits), against a decompression bomb.
const (
	maxListTokenBytes = 4 << 20
	maxListBytes      = 16 << 20
)

// errListGone is a 404 for a list: Latchkey says it serves it no more
// (its status lists were taken out of force, by a rollback, since its
// tokens were issued: a revocation may have missed it), so a cached copy
// is dropped rather than used as while Latchkey is unreachable.
var errListGone = errors.New("the issuer no longer serves this status list")

// listUnusedAfter is how long a list no token has named stays cached: the
// lists of tokens that have expired are dropped.
const listUnusedAfter = time.Hour

// lists caches the Status List Tokens named by tokens, by uri.
type lists struct {
	v       *Verifier
	mu      sync.Mutex
	m       map[string]*list
	fetches atomic.Int64 // for the tests: list requests made
}

// list is one cached Status List.
type list struct {
	state atomic.Pointer[listState]
	used  atomic.Int64 // unix seconds of the last token that named it
	// mu serialises fetches. A request that finds the list being fetched
	// uses the copy it has while that is usable, and waits otherwise.
	mu      sync.Mutex
	retryAt time.Time // no fetch before, after a failed one
	lastErr error
}

// listState is a verified Status List Token, decoded.
type listState struct {
	bits      int
	statuses  []byte // decompressed
	ttl       time.Duration
	exp       time.Time // zero: none
	fetchedAt time.Time // the last 200 or 304
	etag      string
}

// fresh reports whether st needs no fetch (draft section 8.3, step 4.4:
// fetch again once the time it was resolved plus ttl has passed).
func (st *listState) fresh(now time.Time) bool {
	return st != nil && now.Sub(st.fetchedAt) < st.ttl && (st.exp.IsZero() || now.Before(st.exp))
}

// usable reports whether st may still be trusted, though it cannot be
// fetched again: not expired, and fetched less than stale × ttl ago.
func (st *listState) usable(now time.Time, stale int, leeway time.Duration) bool {
	return st != nil && now.Sub(st.fetchedAt) < time.Duration(stale)*st.ttl &&
		(st.exp.IsZero() || now.Before(st.exp.Add(leeway)))
}

// status returns the status at idx; false when idx is beyond the list.
func (st *listState) status(idx int) (byte, bool) {
	bit := idx * st.bits
	if bit/8 >= len(st.statuses) {
		return 0, false
	}
	return (st.statuses[bit/8] >> (bit % 8)) & (1<<st.bits - 1), true
}

// allowedURI reports whether a status claim's uri may be fetched: an
// absolute https URL, or http when the issuer itself is (a local server).
func (ls *lists) allowedURI(s string) bool {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return false
	}
	iss, _ := url.Parse(ls.v.cfg.Issuer)
	return u.Scheme == "https" || (u.Scheme == "http" && iss.Scheme == "http")
}

// check refuses c unless its status list says VALID.
func (ls *lists) check(ctx context.Context, c *Claims) error {
	now := ls.v.now()
	l := ls.get(c.Status.URI, now)
	st := l.state.Load()
	if !st.fresh(now) {
		var err error
		if st, err = ls.refresh(ctx, l, c.Status.URI, st, now); err != nil {
			return refuse(ReasonUnavailable, fmt.Sprintf("the status list cannot be fetched, and no copy of it less than %d × its ttl old is cached", ls.v.cfg.StaleLists), err)
		}
	}
	s, ok := st.status(c.Status.Index)
	switch {
	case !ok:
		return refuse(ReasonInvalid, "the status index is beyond its list", nil)
	case s == statusValid:
		return nil
	case s == statusInvalid:
		return refuse(ReasonRevoked, "", nil)
	case s == statusSuspended:
		return refuse(ReasonDisabled, "", nil)
	}
	return refuse(ReasonInvalid, fmt.Sprintf("status %d", s), nil)
}

// get returns the list of uri, adding it, and dropping the lists no token
// has named for listUnusedAfter.
func (ls *lists) get(uri string, now time.Time) *list {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	l, ok := ls.m[uri]
	if !ok {
		for u, old := range ls.m {
			if now.Unix()-old.used.Load() > int64(listUnusedAfter/time.Second) {
				delete(ls.m, u)
			}
		}
		l = &list{}
		ls.m[uri] = l
	}
	l.used.Store(now.Unix())
	return l
}

// refresh fetches l again, and returns the copy to use: the new one, or
// the one held while it is usable; an error when there is none.
func (ls *lists) refresh(ctx context.Context, l *list, uri string, st *listState, now time.Time) (*listState, error) {
	stale, leeway := ls.v.cfg.StaleLists, ls.v.leeway
	if st.usable(now, stale, leeway) {
		if !l.mu.TryLock() {
			return st, nil // being fetched: this copy is good enough meanwhile
		}
	} else {
		l.mu.Lock()
	}
	defer l.mu.Unlock()
	if cur := l.state.Load(); cur.fresh(now) {
		return cur, nil
	}
	st = l.state.Load()
	if now.Before(l.retryAt) {
		// A fetch failed a moment ago: do not make every request wait on
		// an unreachable Latchkey.
		if st.usable(now, stale, leeway) {
			return st, nil
		}
		return nil, l.lastErr
	}
	next, err := ls.fetch(ctx, uri, st)
	if err != nil {
		l.retryAt, l.lastErr = now.Add(min(time.Second, ls.v.cfg.DefaultTTL)), err
		if errors.Is(err, errListGone) {
			l.state.Store(nil)
			return nil, err
		}
		if st.usable(now, stale, leeway) {
			return st, nil
		}
		return nil, err
	}
	l.state.Store(next)
	return next, nil
}

// fetch GETs the Status List Token at uri, revalidating prev with its
// ETag, and verifies it (draft section 8.3).
func (ls *lists) fetch(ctx context.Context, uri string, prev *listState) (*listState, error) {
	v := ls.v
	ls.fetches.Add(1)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, uri, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/statuslist+jwt")
	if prev != nil && prev.etag != "" {
		req.Header.Set("If-None-Match", prev.etag)
	}
	res, err := v.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	if res.StatusCode == http.StatusNotModified && prev != nil {
		next := *prev
		next.fetchedAt = v.now()
		if !next.exp.IsZero() && !v.now().Before(next.exp) {
			return nil, fmt.Errorf("GET %s: 304, and the list it confirms has expired", uri)
		}
		return &next, nil
	}
	if res.StatusCode == http.StatusNotFound {
		return nil, fmt.Errorf("GET %s: %s: %w", uri, res.Status, errListGone)
	}
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", uri, res.Status)
	}
	body, err := io.ReadAll(io.LimitReader(res.Body, maxListTokenBytes+1))
	if err != nil {
		return nil, err
	}
	if len(body) > maxListTokenBytes {
		return nil, fmt.Errorf("GET %s: more than %d bytes", uri, maxListTokenBytes)
	}
	next, err := ls.parse(ctx, uri, string(bytes.TrimSpace(body)))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", uri, err)
	}
	next.etag = res.Header.Get("ETag")
	return next, nil
}

// listClaims is a Status List Token's payload.
type listClaims struct {
	TTL        *float64 `json:"ttl"`
	StatusList *struct {
		Bits int    `json:"bits"`
		Lst  string `json:"lst"`
	} `json:"status_list"`
	jwt.RegisteredClaims
}

// parse verifies a Status List Token for uri: signed with an allowed
// algorithm by a key of the issuer's key set, typ statuslist+jwt, sub the
// uri, iat present, exp (if any) not passed, iss (if any) the issuer, ttl
// (if any) positive, bits 1, 2, 4 or 8, lst ZLIB-compressed.
func (ls *lists) parse(ctx context.Context, uri, tok string) (*listState, error) {
	v := ls.v
	var c listClaims
	t, err := v.parser.ParseWithClaims(tok, &c, func(t *jwt.Token) (any, error) { return v.keys.key(ctx, t) })
	if err != nil {
		return nil, err
	}
	now := v.now()
	switch {
	case !hasType(t.Header["typ"], "statuslist+jwt"):
		return nil, fmt.Errorf("typ %v is not statuslist+jwt", t.Header["typ"])
	case c.Subject != uri:
		return nil, fmt.Errorf("sub %q is not the uri it was fetched from", c.Subject)
	case c.IssuedAt == nil || c.StatusList == nil:
		return nil, fmt.Errorf("iat or status_list missing")
	case c.ExpiresAt != nil && !now.Before(c.ExpiresAt.Add(v.leeway)):
		return nil, fmt.Errorf("expired")
	case c.Issuer != "" && c.Issuer != v.cfg.Issuer:
		return nil, fmt.Errorf("iss %q is not the issuer", c.Issuer)
	case c.TTL != nil && *c.TTL <= 0:
		return nil, fmt.Errorf("ttl %v is not positive", *c.TTL)
	}
	bits := c.StatusList.Bits
	if bits != 1 && bits != 2 && bits != 4 && bits != 8 {
		return nil, fmt.Errorf("bits %d", bits)
	}
	compressed, err := base64.RawURLEncoding.DecodeString(c.StatusList.Lst)
	if err != nil {
		return nil, fmt.Errorf("lst: %w", err)
	}
	zr, err := zlib.NewReader(bytes.NewReader(compressed))
	if err != nil {
		return nil, fmt.Errorf("lst: %w", err)
	}
	statuses, err := io.ReadAll(io.LimitReader(zr, maxListBytes+1))
	if err != nil {
		return nil, fmt.Errorf("lst: %w", err)
	}
	if len(statuses) > maxListBytes {
		return nil, fmt.Errorf("lst: more than %d bytes decompressed", maxListBytes)
	}
	st := &listState{bits: bits, statuses: statuses, ttl: v.cfg.DefaultTTL, fetchedAt: now}
	if c.TTL != nil {
		// A day at most, so that a huge ttl neither overflows nor keeps a
		// list for ever.
		st.ttl = time.Duration(min(*c.TTL, 86400) * float64(time.Second))
	}
	if c.ExpiresAt != nil {
		st.exp = c.ExpiresAt.Time
	}
	return st, nil
}

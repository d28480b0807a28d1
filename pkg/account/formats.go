package account

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Formats are the stored formats in force, recorded in the table (one item,
// Store.Formats): what every version that may serve now reads, so that a
// version may rely on it. docs/deploying.md, "Formats in force", is the rule
// every change of what is stored follows:
//
//   - a release writes what both it and the previous release read, always;
//   - it relies on (reads only) its new format for what was written after
//     the format came into force, and it never puts the format in force
//     itself: a step after every alias serves it does (the deployment's
//     Formats custom resource, PutFormatsInForce);
//   - a rollback first takes the format out of force, then waits
//     FormatsRefresh, then lets the earlier release serve.
type Formats struct {
	// InlineRevocationSince is when revocations on the key came into
	// force, zero while they are not: a token with the claim irv issued
	// (iat) since then is revoked on its key only as far as a verify is
	// concerned (TokenStatus with inline), and tokens are issued with the
	// claim only while it is in force. Every revocation still writes the
	// entry and its read copies, which the previous release reads.
	InlineRevocationSince time.Time
	// StatusListsSince is when status lists came into force, zero while
	// they are not: tokens are issued with the claim status only while
	// they are, and a list is served only if it belongs to this period
	// (its ID carries the time, StatusListID), since every version that
	// served while its indexes were leased flipped its entries. The
	// previous release flips none, so a list of an earlier period, which
	// it may have served beside, is never served again.
	StatusListsSince time.Time
	// SetBy is the release (version.Version) that recorded the item.
	SetBy string
}

// InlineRevocationAt says whether revocations on the key are relied on for
// a token issued at issuedAt.
func (f Formats) InlineRevocationAt(issuedAt time.Time) bool {
	return !f.InlineRevocationSince.IsZero() && !issuedAt.Before(f.InlineRevocationSince)
}

// StatusListsAt says whether status lists are in force for a token
// issued at issuedAt.
func (f Formats) StatusListsAt(issuedAt time.Time) bool {
	return !f.StatusListsSince.IsZero() && !issuedAt.Before(f.StatusListsSince)
}

// servesStatusList says whether the list id is of the period of status
// lists in force: only then is it served.
func (f Formats) servesStatusList(id string) bool {
	_, since, ok := parseStatusListID(id)
	return ok && !f.StatusListsSince.IsZero() && since.Equal(f.StatusListsSince)
}

// FormatsMargin is how long after the step that puts a format in force it
// comes into force: longer than a request of the earlier release that was
// in flight when the aliases switched (the functions' timeouts are at most
// 30 s) and than any skew between the clocks of the instances.
const FormatsMargin = time.Minute

// FormatsRefresh is how long a process relies on the Formats it read: a
// step that takes a format out of force waits this long (and a second
// more) before the earlier release serves, within the 8 s a custom
// resource request of the auth function has. Putting one in force needs
// no wait: until a process reads it, it reads both formats. One strongly
// consistent read every 5 s an instance: 1,000 warm instances read 200
// items a second, $4.32 a day at on-demand's $0.25 a million.
const FormatsRefresh = 5 * time.Second

// FormatInlineRevocation names revocations on the key (Formats'
// InlineRevocationSince) in the template's Formats custom resource.
const FormatInlineRevocation = "inline-revocation"

// FormatStatusLists names the status lists (Formats' StatusListsSince).
const FormatStatusLists = "status-lists"

// ReleaseFormats are the formats this release relies on: what the
// template's Formats custom resource names, space-separated.
var ReleaseFormats = []string{FormatInlineRevocation, FormatStatusLists}

// PutFormatsInForce puts in force, in store, the formats this release
// relies on (ReleaseFormats), from at (the step's time plus FormatsMargin,
// or the time of a start over a table no other process can reach), and
// returns what it recorded: PutFormats with every one of them.
func PutFormatsInForce(ctx context.Context, store Store, at time.Time, release string) (Formats, error) {
	return PutFormats(ctx, store, ReleaseFormats, at, release)
}

// PutFormats puts in force, in store, the formats names names from at,
// and takes every other out of force, and returns what it recorded.
// Formats in force already keep their time: the tokens issued since are
// relied on already. Called by the step that runs once every alias serves
// this release (the Formats custom resource), never by a process that
// serves while the previous release may, and by a rollback's first step
// with the previous release's names (none for a release before the
// item), which must then wait FormatsRefresh before that release serves.
func PutFormats(ctx context.Context, store Store, names []string, at time.Time, release string) (Formats, error) {
	current, err := store.Formats(ctx)
	if err != nil {
		return Formats{}, storeErr(err)
	}
	at = at.UTC().Truncate(time.Second)
	since := func(name string, t time.Time) time.Time {
		switch {
		case !slices.Contains(names, name):
			return time.Time{}
		case t.IsZero():
			return at
		}
		return t
	}
	f := Formats{
		InlineRevocationSince: since(FormatInlineRevocation, current.InlineRevocationSince),
		StatusListsSince:      since(FormatStatusLists, current.StatusListsSince),
		SetBy:                 release,
	}
	return f, storeErr(store.PutFormats(ctx, f))
}

// PutFormatsOutOfForce takes every format out of force in store: the first
// step of a rollback to a release before the formats item, which must
// then wait FormatsRefresh before that release serves.
func PutFormatsOutOfForce(ctx context.Context, store Store, release string) error {
	return storeErr(store.PutFormats(ctx, Formats{SetBy: release}))
}

// FormatsReader reads the stored Formats: Store.Formats.
type FormatsReader interface {
	Formats(ctx context.Context) (Formats, error)
}

// formatsCache is a process's copy of the stored Formats, read again every
// FormatsRefresh. A read that fails leaves the formats out of force until
// the next: reading both formats is always safe.
type formatsCache struct {
	store FormatsReader
	now   func() time.Time
	mu    sync.Mutex
	f     Formats
	err   error // of the read f is from
	read  time.Time
}

func (c *formatsCache) get(ctx context.Context) Formats {
	f, _ := c.cached(ctx, false)
	return f
}

// load is get for a caller that must tell "out of force" from "unknown",
// such as a status list, whose 404 a resource server takes for good: it
// reads again after a failed read, and returns that read's error.
func (c *formatsCache) load(ctx context.Context) (Formats, error) {
	return c.cached(ctx, true)
}

func (c *formatsCache) cached(ctx context.Context, failedAgain bool) (Formats, error) {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	fresh := !c.read.IsZero() && now.Sub(c.read) < FormatsRefresh && !now.Before(c.read)
	if fresh && (c.err == nil || !failedAgain) {
		return c.f, c.err
	}
	f, err := c.store.Formats(ctx)
	if err != nil {
		f = Formats{}
	}
	c.f, c.err, c.read = f, err, now
	return f, err
}

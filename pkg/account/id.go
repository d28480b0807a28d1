package account

import (
	"crypto/rand"
	"strings"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"
)

// ID prefixes say what an identifier names, Stripe style.
const (
	PrefixUser         = "usr_"
	PrefixOrganization = "org_"
	PrefixAPIKey       = "key_"
	PrefixToken        = "tok_"
)

var (
	entropyMu sync.Mutex
	// Monotonic entropy keeps IDs made within one millisecond in creation
	// order, so "newest first" by ID is exact on one instance.
	entropy = ulid.Monotonic(rand.Reader, 0)
)

// NewID returns prefix followed by a new ULID (26 Crockford base32 characters).
func NewID(prefix string, at time.Time) string {
	entropyMu.Lock()
	defer entropyMu.Unlock()
	return prefix + ulid.MustNew(ulid.Timestamp(at), entropy).String()
}

// ValidID reports whether id is prefix followed by a well-formed ULID.
// Malformed IDs are answered like unknown ones (404), without a store read.
func ValidID(prefix, id string) bool {
	rest, ok := strings.CutPrefix(id, prefix)
	if !ok || len(rest) != ulid.EncodedSize {
		return false
	}
	_, err := ulid.ParseStrict(rest)
	return err == nil
}

// IDTime returns the time, to the millisecond, at which the ID (prefix
// followed by a ULID) was made, and false if it is not a well-formed one.
func IDTime(prefix, id string) (time.Time, bool) {
	rest, ok := strings.CutPrefix(id, prefix)
	if !ok || len(rest) != ulid.EncodedSize {
		return time.Time{}, false
	}
	u, err := ulid.ParseStrict(rest)
	if err != nil {
		return time.Time{}, false
	}
	return ulid.Time(u.Time()).UTC(), true
}

// FirstID returns the least ID that NewID(prefix, t) can return: every ID
// made at t or later sorts at or after it.
func FirstID(prefix string, t time.Time) string {
	var u ulid.ULID
	if err := u.SetTime(ulid.Timestamp(t)); err != nil {
		u = ulid.ULID{} // before 1970 or after 10889: no ID sorts below zero
	}
	return prefix + u.String()
}

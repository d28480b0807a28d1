package account

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Metadata is the integrator's own data on a user, an organization or an
// API key: string keys to string values, stored and returned as given and
// never interpreted. It is replaced whole on update; nil and empty are the
// same, no metadata.
type Metadata map[string]string

// OrNil is m, or nil when m is empty: the domain's one way of having no
// metadata, however it was stored or sent.
func (m Metadata) OrNil() Metadata {
	if len(m) == 0 {
		return nil
	}
	return m
}

// The bounds of Metadata. They keep an item's size, and what a client can
// make the service store, small and predictable: the same bounds as
// Stripe's metadata, which integrators know.
const (
	MaxMetadataKeys        = 50
	MaxMetadataKeyLength   = 40  // characters
	MaxMetadataValueLength = 500 // characters
	// MaxMetadataBytes bounds the UTF-8 bytes of all keys and values
	// together (4 KiB).
	MaxMetadataBytes = 4 << 10
)

// Validate returns a CodeInvalidRequest error naming every problem with m,
// or nil: at most MaxMetadataKeys keys, each 1..MaxMetadataKeyLength
// characters without control characters, each value at most
// MaxMetadataValueLength characters, all valid UTF-8, and at most
// MaxMetadataBytes in all. A problem with one entry is named
// "<field>.<key>"; one with the whole object, or with a key too long or
// empty to serve as a name, is named field.
func (m Metadata) Validate(field string) error {
	var problems Problems
	m.check(field, &problems)
	return problems.Err()
}

// check adds m's problems to problems. The count is checked first, so that
// the work done never depends on more than MaxMetadataKeys entries; each
// length before anything else about the string.
func (m Metadata) check(field string, problems *Problems) {
	if len(m) > MaxMetadataKeys {
		problems.Add(field, fmt.Sprintf("must have at most %d keys", MaxMetadataKeys))
		return
	}
	total := 0
	// Sorted, so that the same object always gets the same problems in the
	// same order.
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v := m[k]
		total += len(k) + len(v)
		switch {
		case len(k) > 4*MaxMetadataKeyLength || utf8.RuneCountInString(k) > MaxMetadataKeyLength:
			problems.Add(field, fmt.Sprintf("keys must be 1 to %d characters; one has %d", MaxMetadataKeyLength, utf8.RuneCountInString(k)))
			continue
		case k == "":
			problems.Add(field, fmt.Sprintf("keys must be 1 to %d characters; one is empty", MaxMetadataKeyLength))
			continue
		case !utf8.ValidString(k) || strings.ContainsFunc(k, unicode.IsControl):
			problems.Add(field, "keys must be valid UTF-8 without control characters")
			continue
		}
		switch name := field + "." + k; {
		case len(v) > 4*MaxMetadataValueLength || utf8.RuneCountInString(v) > MaxMetadataValueLength:
			problems.Add(name, fmt.Sprintf("must be at most %d characters", MaxMetadataValueLength))
		case !utf8.ValidString(v):
			problems.Add(name, "must be valid UTF-8")
		}
	}
	if total > MaxMetadataBytes {
		problems.Add(field, fmt.Sprintf("must be at most %d bytes in all (keys and values, UTF-8); it has %d", MaxMetadataBytes, total))
	}
}

// normalized returns a copy of m that shares nothing with the caller's map,
// or nil when m is empty: the one stored form of "no metadata".
func (m Metadata) normalized() Metadata {
	if len(m) == 0 {
		return nil
	}
	return maps.Clone(m)
}

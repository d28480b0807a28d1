package account

import (
	"fmt"
	"math"
	"net/mail"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Allowed values of the enumerated fields.
var (
	UserRoles   = []string{"admin", "member", "viewer"}
	MemberRoles = []string{"owner", "admin", "member"}
	Plans       = []string{"free", "starter", "pro", "enterprise"}
)

// Defaults for omitted fields.
const (
	DefaultUserRole   = "member"
	DefaultMemberRole = "member"
	DefaultPlan       = "free"
)

const (
	maxNameLength  = 200
	maxEmailLength = 254
)

var slugPattern = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$`)

// normalizeName trims a display name and checks it: 1..200 characters, no
// control characters.
func normalizeName(field, name string, problems *Problems) string {
	name = strings.TrimSpace(name)
	switch n := utf8.RuneCountInString(name); {
	case !utf8.ValidString(name):
		problems.Add(field, "must be valid UTF-8")
	case n == 0:
		problems.Add(field, "is required")
	case n > maxNameLength:
		problems.Add(field, fmt.Sprintf("must be at most %d characters", maxNameLength))
	case strings.ContainsFunc(name, unicode.IsControl):
		problems.Add(field, "must not contain control characters")
	}
	return name
}

// normalizeEmail checks a bare address (no display name) and lower-cases it.
func normalizeEmail(field, email string, problems *Problems) string {
	if email == "" {
		problems.Add(field, "is required")
		return email
	}
	// The length first: the parser's work grows with what it is given.
	if len(email) > maxEmailLength {
		problems.Add(field, fmt.Sprintf("must be at most %d characters", maxEmailLength))
		return email
	}
	addr, err := mail.ParseAddress(email)
	if err != nil || addr.Name != "" || addr.Address != email || !strings.Contains(addr.Address[strings.LastIndexByte(addr.Address, '@')+1:], ".") {
		problems.Add(field, "must be a valid e-mail address, like ada@example.com")
		return email
	}
	return strings.ToLower(email)
}

// normalizeChoice applies a default to an empty value and checks it against
// the allowed values.
func normalizeChoice(field, value, def string, allowed []string, problems *Problems) string {
	if value == "" {
		return def
	}
	if !slices.Contains(allowed, value) {
		problems.Add(field, "must be one of "+strings.Join(allowed, ", "))
	}
	return value
}

func checkSlug(field, slug string, problems *Problems) {
	if slug == "" {
		problems.Add(field, "is required")
	} else if !slugPattern.MatchString(slug) {
		problems.Add(field, "must be 1 to 63 lower-case letters, digits and hyphens, not starting or ending with a hyphen")
	}
}

// maxScopeLength is the longest well-formed scope: a 32-character action, a
// colon and a 64-character resource.
const maxScopeLength = 32 + 1 + 64

// normalizeScopes checks a list of scopes as sent and returns it without
// duplicates. The count is checked first, on the list as sent, so that the
// work done on a list never depends on more than max elements, whatever a
// client sends; each element's length is checked before its form. Field
// errors name the index as sent.
func normalizeScopes(field string, scopes []string, max int, problems *Problems) []string {
	if len(scopes) == 0 {
		problems.Add(field, "must list at least one scope")
		return nil
	}
	if len(scopes) > max {
		problems.Add(field, fmt.Sprintf("must list at most %d scopes", max))
		return nil
	}
	out := make([]string, 0, len(scopes))
	for i, s := range scopes {
		if len(s) > maxScopeLength || !ValidScope(s) {
			problems.Add(fmt.Sprintf("%s[%d]", field, i), "must have the form <action>:<resource>, like read:users")
			continue
		}
		// At most max elements: a linear search stays cheaper than a map.
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// MaxAudienceLength is the longest audience a token may be issued for.
const MaxAudienceLength = 256

var (
	// uriCharacters are the characters of a URI (RFC 3986, section 2).
	uriCharacters = regexp.MustCompile(`^[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]+$`)
	// audienceIdentifier is a plain identifier, like orders-api or api.example.com.
	audienceIdentifier = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._~-]*$`)
)

// ValidAudience reports whether aud may be a token's audience: an absolute
// URI (with a scheme, no fragment, as RFC 8707 requires of a resource) or a
// plain identifier of letters, digits and . _ ~ -, at most
// MaxAudienceLength characters either way.
func ValidAudience(aud string) bool { return checkAudience(aud) == "" }

// checkAudience says what is wrong with aud, "" if nothing.
func checkAudience(aud string) string {
	const msg = "must be an absolute URI without a fragment, like https://api.example.com, or an identifier of letters, digits and . _ ~ -, like orders-api"
	switch {
	case aud == "":
		return "must not be empty"
	case len(aud) > MaxAudienceLength:
		return fmt.Sprintf("must be at most %d characters", MaxAudienceLength)
	case audienceIdentifier.MatchString(aud):
		return ""
	case !uriCharacters.MatchString(aud) || strings.Contains(aud, "#"):
		return msg
	}
	u, err := url.Parse(aud)
	if err != nil || !u.IsAbs() || (u.Host == "" && u.Opaque == "" && u.Path == "") ||
		((u.Scheme == "https" || u.Scheme == "http") && u.Host == "") {
		return msg
	}
	return ""
}

// MaxIssuerLength is the longest issuer the service takes: a scheme, a
// host name of the most DNS allows (253 characters) and a port fit with
// room to spare. Every token carries it, and the longest token the limits
// allow must stay within what verifiers accept (token.MaxTokenBytes).
const MaxIssuerLength = 512

// CheckIssuer returns an error unless issuer can be the service's issuer
// identifier (RFC 8414 section 2): an https URL, or http for a server on a
// developer's machine, with a host and nothing after it (no path, query,
// fragment or user info), at most MaxIssuerLength bytes. It is the base
// URL the service is served at: the metadata names every endpoint below
// it, and its well-known documents are served at issuer + "/.well-known/...".
func CheckIssuer(issuer string) error {
	if len(issuer) > MaxIssuerLength {
		return fmt.Errorf("the issuer must be at most %d bytes, not %d", MaxIssuerLength, len(issuer))
	}
	u, err := url.Parse(issuer)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Path != "" ||
		u.RawQuery != "" || u.Fragment != "" || u.User != nil || strings.HasSuffix(issuer, "?") || strings.HasSuffix(issuer, "#") {
		return fmt.Errorf("the issuer %q must be the base URL the service is served at, like https://auth.example.com: https (or http locally), a host, no path, query or fragment", issuer)
	}
	return nil
}

var durationPattern = regexp.MustCompile(`^([0-9]+)(s|m|h|d)$`)

// ParseDuration parses a duration such as "90s", "15m", "1h" or "7d" and
// checks it against [min, max].
func ParseDuration(s string, min, max time.Duration) (time.Duration, error) {
	m := durationPattern.FindStringSubmatch(s)
	if m == nil {
		return 0, fmt.Errorf("must be a number followed by s, m, h or d, like 15m")
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	unit := map[string]time.Duration{"s": time.Second, "m": time.Minute, "h": time.Hour, "d": 24 * time.Hour}[m[2]]
	if err != nil || n > math.MaxInt64/int64(unit) || time.Duration(n)*unit < min || time.Duration(n)*unit > max {
		return 0, fmt.Errorf("must be between %s and %s", formatDuration(min), formatDuration(max))
	}
	return time.Duration(n) * unit, nil
}

func formatDuration(d time.Duration) string {
	switch {
	case d == 0:
		return "0s"
	case d%(24*time.Hour) == 0:
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return fmt.Sprintf("%ds", d/time.Second)
}

// MaxExternalIDLength is the longest identifier from the integrator's own
// system the service keeps: a user's or organization's external_id, an API
// key's owner_id.
const MaxExternalIDLength = 256

// ValidExternalID reports whether s can be an identifier from the
// integrator's own system: 1..MaxExternalIDLength printable characters
// (letters, marks, numbers, punctuation, symbols and the ASCII space, as
// unicode.IsPrint has it), not starting or ending with a space. It is kept
// exactly as given and compared with its case. The length is checked
// before anything else.
func ValidExternalID(s string) bool {
	if s == "" || len(s) > 4*MaxExternalIDLength || utf8.RuneCountInString(s) > MaxExternalIDLength || !utf8.ValidString(s) {
		return false
	}
	if s[0] == ' ' || s[len(s)-1] == ' ' {
		return false
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

// checkExternalID checks an external id as a request gives it: "" is none.
func checkExternalID(field, s string, problems *Problems) string {
	if s != "" && !ValidExternalID(s) {
		problems.Add(field, fmt.Sprintf("must be 1 to %d printable characters, not starting or ending with a space", MaxExternalIDLength))
	}
	return s
}

// errNothingToChange refuses an update that names no field.
var errNothingToChange = Errorf(CodeInvalidRequest, "the request changes nothing: give at least one field to change")

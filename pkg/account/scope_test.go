package account_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"latchkey/pkg/account"
)

func TestValidScope(t *testing.T) {
	valid := []string{
		"read:users", "write:api_keys", "*:*", "read:*", "*:users",
		"a:b", "x-y_1:res.name-1",
		strings.Repeat("a", 32) + ":users", "read:" + strings.Repeat("r", 64),
	}
	for _, s := range valid {
		if !account.ValidScope(s) {
			t.Errorf("ValidScope(%q) = false, want true", s)
		}
	}
	invalid := []string{
		"", "read", "read:", ":users", ":", "Read:users", "read:Users",
		"1read:users", "read:1users", "_read:users", "read:.users",
		"read:users:extra", "read :users", "read: users", "**:users", "read:*s", "*read:users",
		strings.Repeat("a", 33) + ":users", "read:" + strings.Repeat("r", 65),
		"read:usérs", "read:users\n",
	}
	for _, s := range invalid {
		if account.ValidScope(s) {
			t.Errorf("ValidScope(%q) = true, want false", s)
		}
	}
}

func TestScopesCover(t *testing.T) {
	tests := []struct {
		grants []string
		want   string
		ok     bool
	}{
		{[]string{"*:*"}, "read:users", true},
		{[]string{"*:*"}, "*:*", true},
		{[]string{"*:*"}, "deploy:widgets", true},
		{[]string{"read:*"}, "read:users", true},
		{[]string{"read:*"}, "read:*", true},
		{[]string{"read:*"}, "write:users", false},
		{[]string{"*:users"}, "delete:users", true},
		{[]string{"*:users"}, "read:organizations", false},
		// A "*" in the request is wider than any named grant.
		{[]string{"read:users"}, "read:*", false},
		{[]string{"read:users"}, "*:users", false},
		{[]string{"read:users", "write:users"}, "*:users", false},
		{[]string{"read:*"}, "*:*", false},
		{[]string{"read:users"}, "read:users", true},
		{[]string{"read:users"}, "read:users2", false},
		{[]string{"read:organizations", "write:users"}, "write:users", true},
		{nil, "read:users", false},
	}
	for _, tt := range tests {
		if got := account.ScopesCover(tt.grants, tt.want); got != tt.ok {
			t.Errorf("ScopesCover(%q, %q) = %v, want %v", tt.grants, tt.want, got, tt.ok)
		}
	}
}

func TestPrincipal_Require(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		p := account.Principal{KeyID: "key_x", Scopes: []string{"read:*"}}
		if err := p.Require(account.ScopeReadUsers); err != nil {
			t.Fatalf("Require: %v", err)
		}
	})
	t.Run("ErrInsufficientScope", func(t *testing.T) {
		p := account.Principal{KeyID: "key_x", Scopes: []string{"read:*"}}
		err := p.Require(account.ScopeWriteUsers)
		wantCode(t, err, account.CodeInsufficientScope)
		if e := asError(t, err); e.Scope != account.ScopeWriteUsers {
			t.Errorf("Scope: got %q, want %q", e.Scope, account.ScopeWriteUsers)
		}
	})
}

func TestParseDuration(t *testing.T) {
	const min, max = time.Minute, 24 * time.Hour
	ok := map[string]time.Duration{
		"1m": time.Minute, "60s": time.Minute, "15m": 15 * time.Minute, "1h": time.Hour,
		"24h": 24 * time.Hour, "1d": 24 * time.Hour, "1440m": 24 * time.Hour,
		"86400s": 24 * time.Hour, "01h": time.Hour,
	}
	for s, want := range ok {
		got, err := account.ParseDuration(s, min, max)
		if err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v, nil", s, got, err, want)
		}
	}
	bad := []string{
		// Out of bounds.
		"59s", "0m", "0s", "1441m", "86401s", "25h", "2d",
		// Not the grammar ^[0-9]+(s|m|h|d)$.
		"", "1", "m", "h1", "1.5h", "-1h", "+1h", "1H", "1h30m", " 1h", "1h ", "1w", "1ms", "1 h", "١h",
		// Overflows int64 nanoseconds, or int64 itself.
		"9223372036854775807d", "99999999999999999999s",
	}
	for _, s := range bad {
		if got, err := account.ParseDuration(s, min, max); err == nil {
			t.Errorf("ParseDuration(%q) = %v, nil; want an error", s, got)
		}
	}
}

// TestParseDuration_Overflow checks the overflow guard on its own: with no
// upper bound, a count whose nanoseconds overflow int64 must still fail
// instead of wrapping around to a small or negative duration.
func TestParseDuration_Overflow(t *testing.T) {
	const unbounded = time.Duration(math.MaxInt64)
	maxDays := int64(math.MaxInt64 / int64(24*time.Hour))
	for _, tt := range []struct {
		s  string
		ok bool
	}{
		{itoa(maxDays) + "d", true},
		{itoa(maxDays+1) + "d", false},
		{itoa(math.MaxInt64/int64(time.Hour)) + "h", true},
		{itoa(math.MaxInt64/int64(time.Hour)+1) + "h", false},
		{itoa(math.MaxInt64/int64(time.Second)+1) + "s", false},
		{"9223372036854775808s", false}, // does not fit int64 at all
	} {
		got, err := account.ParseDuration(tt.s, 0, unbounded)
		if (err == nil) != tt.ok {
			t.Errorf("ParseDuration(%q, 0, max) = %v, %v; want ok=%v", tt.s, got, err, tt.ok)
		}
		if err == nil && got <= 0 {
			t.Errorf("ParseDuration(%q) = %v; want a positive duration", tt.s, got)
		}
	}
}

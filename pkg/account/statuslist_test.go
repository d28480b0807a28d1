package account_test

import (
	"testing"
	"time"

	"latchkey/pkg/account"
)

// TestParseStatusTTL: STATUS_LIST_TTL takes whole seconds from 1 to 300,
// 10 when unset, and refuses anything else.
func TestParseStatusTTL(t *testing.T) {
	for in, want := range map[string]time.Duration{"": 10 * time.Second, "1": time.Second, "300": 300 * time.Second, "60": time.Minute} {
		if got, err := account.ParseStatusTTL(in); err != nil || got != want {
			t.Errorf("ParseStatusTTL(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"0", "301", "-5", "1.5", "10s", "ten"} {
		if _, err := account.ParseStatusTTL(in); err == nil {
			t.Errorf("ParseStatusTTL(%q): no error", in)
		}
	}
}

// TestStatusListID: a list's ID is its UTC hour, part and period (the
// time status lists came into force); only those parse, and it retires a
// day and two hours after its hour began.
func TestStatusListID(t *testing.T) {
	at := time.Date(2026, 11, 29, 0, 41, 5, 0, time.FixedZone("CET", 3600))
	since := time.Date(2026, 11, 28, 12, 0, 30, 0, time.UTC)
	id := account.StatusListID(since, at, 7)
	if want := "2026112823-7-20261128120030"; id != want {
		t.Errorf("StatusListID = %q, want %s", id, want)
	}
	if got, want := account.StatusListExpiry(id), time.Date(2026, 11, 30, 1, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("StatusListExpiry = %v, want %v", got, want)
	}
	for _, bad := range []string{
		"", "2026112823", "2026112823-", "2026112823-0", "2026112823-01-20261128120030", "2026113223-0-20261128120030",
		"2026112823-12345-20261128120030", "x026112823-0-20261128120030", "2026112823-0-2026112812003", "2026112823-0-20261128126030",
		"2026112823-0-20261128120030/../x", "2026112823-0-20261128120030-1",
	} {
		if account.ValidStatusListID(bad) {
			t.Errorf("ValidStatusListID(%q) = true", bad)
		}
	}
	uri := account.StatusListURI("https://auth.example.com", id)
	if got, ok := account.StatusListFromURI("https://auth.example.com", uri); !ok || got != id {
		t.Errorf("StatusListFromURI(%q) = %q, %v", uri, got, ok)
	}
	if _, ok := account.StatusListFromURI("https://other.example.com", uri); ok {
		t.Error("a uri under another issuer was taken")
	}
}

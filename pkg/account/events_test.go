package account_test

import (
	"testing"
	"time"

	"latchkey/pkg/account"
)

func TestNextEventID(t *testing.T) {
	at := time.Date(2026, 11, 23, 1, 2, 3, 4e6, time.UTC)
	first := account.NextEventID("", at)
	if got, ok := account.EventTime(first); !ok || !got.Equal(at) {
		t.Fatalf("EventTime(%s) = %v, %v; want %v", first, got, ok, at)
	}
	// The clock stepping back, or many events in one millisecond, still
	// gives ids after the last: a store that reads the last id in its
	// write transaction keeps commit order.
	last := first
	for i := range 1000 {
		next := account.NextEventID(last, at.Add(-time.Duration(i%3)*time.Millisecond))
		if next <= last {
			t.Fatalf("NextEventID(%s) = %s, not after it", last, next)
		}
		last = next
	}
	if account.EventIDAt(at) > first || account.EventIDAt(at.Add(time.Millisecond)) <= last {
		t.Errorf("EventIDAt(%v) must sort before every event of that millisecond and after every earlier one", at)
	}
	for _, bad := range []string{"", "evt_", "usr_01M834T4K0RYW95J49E05E6120", "evt_01M834T4K0RYW95J49E05E612", "evt_01M834T4K0RYW95J49E05E612U"} {
		if _, ok := account.EventTime(bad); ok {
			t.Errorf("EventTime(%q) accepted", bad)
		}
	}
}

func TestService_ListEvents(t *testing.T) {
	e := newEnv(t)
	list := func(q account.EventListParams) error {
		_, err := e.svc.ListEvents(e.ctx, e.admin, q)
		return err
	}
	wantCode(t, list(account.EventListParams{Types: "user.created,nope"}), account.CodeUnknownEventType)
	wantCode(t, list(account.EventListParams{Types: "user.created,"}), account.CodeUnknownEventType)
	wantFields(t, list(account.EventListParams{After: "evt_x"}), "after")
	wantFields(t, list(account.EventListParams{Before: "key_01M834T4K0RYW95J49E05E6120"}), "before")
	start := account.EventIDAt(time.UnixMilli(0))
	wantFields(t, list(account.EventListParams{After: start, Before: start}), "after")
	wantFields(t, list(account.EventListParams{After: start, PageRequest: account.PageRequest{Limit: "0"}}), "limit")
	if err := list(account.EventListParams{After: start, Types: "user.created,user.created,token.revoked"}); err != nil {
		t.Errorf("a valid query: %v", err)
	}
	p, _ := e.key(t, "", account.ScopeReadUsers)
	if _, err := e.svc.ListEvents(e.ctx, p, account.EventListParams{}); !account.IsCode(err, account.CodeInsufficientScope) {
		t.Errorf("without read:events: got %v, want insufficient_scope", err)
	}
}

package boltstore_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"latchkey/pkg/account"
)

// TestOpen_FeedImmediate: on bbolt the event feed has no lag
// (tablestore.WithSerialWrites): an event is listed as soon as its change
// returns, and a consumer tailing the feed while writers race sees every
// event exactly once, because ids are made and committed in one order.
func TestOpen_FeedImmediate(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	source := func(req string) *account.EventSource {
		return &account.EventSource{
			Actor: account.Actor{KeyID: "key_1"}, RequestID: req,
			Encode: func(e account.Event) ([]byte, error) { return []byte(`{"id":"` + e.ID + `"}`), nil },
		}
	}
	create := func(req string) {
		at := time.Now().UTC().Truncate(time.Millisecond)
		id := account.NewID(account.PrefixUser, at)
		u := account.User{ID: id, Email: id + "@example.com", Name: "U", Role: "member", CreatedAt: at, UpdatedAt: at}
		if err := s.CreateUser(account.WithEventSource(t.Context(), source(req)), u); err != nil {
			t.Errorf("CreateUser: %v", err)
		}
	}
	after := account.EventIDAt(time.Now().Add(-time.Minute))
	read := func() []account.StoredEvent {
		t.Helper()
		var out []account.StoredEvent
		for {
			page, err := s.ListEvents(t.Context(), account.EventQuery{After: after, Since: time.Now().Add(-time.Hour)})
			if err != nil {
				t.Fatalf("ListEvents: %v", err)
			}
			for _, e := range page.Items {
				out = append(out, e)
				after = e.ID
			}
			if page.Next == "" {
				return out
			}
			after = page.Next
		}
	}

	create("first")
	if got := read(); len(got) != 1 {
		t.Fatalf("events right after the change: got %d, want 1", len(got))
	}

	const writers, each = 8, 10
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				create(fmt.Sprintf("w%d-%d", w, i))
			}
		})
	}
	seen := map[string]bool{}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for finished := false; !finished; {
		select {
		case <-done:
			finished = true
		default:
		}
		for _, e := range read() {
			if seen[e.ID] {
				t.Fatalf("event %s listed twice", e.ID)
			}
			seen[e.ID] = true
		}
	}
	if len(seen) != writers*each {
		t.Errorf("events seen by a consumer tailing the feed during the writes: %d, want %d", len(seen), writers*each)
	}
}

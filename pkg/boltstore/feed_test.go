package boltstore_test

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"latchkey/pkg/account"
	"latchkey/pkg/boltstore"
	"latchkey/pkg/tablestore"
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
		if err := s.CreateUser(t.Context(), account.WriteOptions{Events: source(req)}, u); err != nil {
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

// TestOpen_EventIDsAfterRestart: Open resumes event ids after the newest
// event in the file, so an event made after a restart whose clock is
// behind the last run's (here by an hour) still sorts after every event a
// reader has passed. (The feed lists it once the clock reaches the time
// of its id, as it would have in the last run.)
func TestOpen_EventIDsAfterRestart(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "latchkey.db")
	ahead := time.Now().UTC().Add(time.Hour).Truncate(time.Millisecond)
	last := account.NewEventID(ahead)
	tb, err := boltstore.OpenTable(path, boltstore.WithTTL(tablestore.TTLAttribute))
	if err != nil {
		t.Fatal(err)
	}
	// The last run's newest event, made with the clock an hour ahead.
	mustPut(t, tb, avMap{"pk": str("EVENT#" + ahead.Format("2006-01-02")), "sk": str(last), "type": str("user.created"), "event": str(`{}`),
		tablestore.TTLAttribute: num(ahead.Add(account.EventRetention).Unix())})
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	s := open(t, path)
	t.Cleanup(func() { s.Close() })
	var made string
	src := &account.EventSource{
		Actor: account.Actor{KeyID: "key_1"}, RequestID: "after-restart",
		Encode: func(e account.Event) ([]byte, error) { made = e.ID; return []byte(`{"id":"` + e.ID + `"}`), nil },
	}
	at := time.Now().UTC().Truncate(time.Millisecond)
	u := account.User{ID: account.NewID(account.PrefixUser, at), Email: "restart@example.com", Name: "U", Role: "member", CreatedAt: at, UpdatedAt: at}
	if err := s.CreateUser(t.Context(), account.WriteOptions{Events: src}, u); err != nil {
		t.Fatal(err)
	}
	if made <= last {
		t.Fatalf("the event made after the restart has id %q, want one after the last run's newest, %s", made, last)
	}
}

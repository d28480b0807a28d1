package tablestore_test

import (
	"encoding/json"
	"testing"
	"time"

	"latchkey/pkg/account"
	"latchkey/pkg/dynamostore/dynamotest"
	"latchkey/pkg/tablestore"
)

// TestDeleteAPIKey_EventsBeyondOneTransaction deletes a tree of 77 keys
// with events and an idempotency record: the chunks of the delete hold
// each key's item, copies, links, last use and event, within DynamoDB's
// 100 items, the last one the root's event and the record too. Every key
// gets exactly one api_key.deleted event, and the record is applied.
func TestDeleteAPIKey_EventsBeyondOneTransaction(t *testing.T) {
	t.Parallel() // it waits out the feed's lag, beside TestEventShards
	f := newCascadeFixture(t)
	root, below, _ := f.keyTree()
	now := time.Now()
	rec := account.IdempotencyRecord{
		KeyID: "key_caller", Key: "delete-tree", Fingerprint: []byte("fp"), Owner: "me",
		State: account.IdempotencyStarted, LeaseUntil: now.Add(time.Minute), CreatedAt: now, ExpiresAt: now.Add(time.Hour),
	}
	_, claimed, err := f.s.ClaimIdempotency(t.Context(), rec, now)
	if err != nil || !claimed {
		t.Fatalf("ClaimIdempotency: %v, %v", claimed, err)
	}
	commit := &account.IdempotencyCommit{KeyID: rec.KeyID, Key: rec.Key, Owner: rec.Owner}
	opts := account.WriteOptions{Commit: commit, Events: &account.EventSource{
		Actor: account.Actor{KeyID: "key_caller"}, RequestID: "req-tree",
		Encode: func(e account.Event) ([]byte, error) {
			return json.Marshal(map[string]string{"id": e.ID, "type": e.Type, "key": e.Data.(account.APIKey).ID})
		},
	}}
	from := account.EventIDAt(time.Now().Add(-time.Second))
	must(t, f.s.DeleteAPIKey(t.Context(), opts, root.ID, nil), "DeleteAPIKey")
	if !commit.Applied() {
		t.Error("the idempotency record was not committed with the delete")
	}

	want := map[string]bool{root.ID: true}
	for _, k := range below {
		want[k.ID] = true
	}
	seen := map[string]int{}
	after := from
	deadline := time.Now().Add(tablestore.EventLag(dynamotest.Timeout) + 30*time.Second)
	for len(seen) < len(want) && time.Now().Before(deadline) {
		page, err := f.s.ListEvents(t.Context(), account.EventQuery{After: after, Limit: account.MaxPageSize, Since: time.Now().Add(-time.Hour)})
		must(t, err, "ListEvents")
		for _, e := range page.Items {
			var ev map[string]string
			must(t, json.Unmarshal(e.JSON, &ev), "event JSON")
			if e.Type != account.EventAPIKeyDeleted || ev["id"] != e.ID {
				t.Fatalf("event %s: %s", e.ID, e.JSON)
			}
			seen[ev["key"]]++
			after = e.ID
		}
		if page.Next == "" {
			time.Sleep(100 * time.Millisecond)
		}
	}
	for id := range want {
		if seen[id] != 1 {
			t.Errorf("key %s: %d events, want 1", id, seen[id])
		}
	}
	if len(seen) != len(want) {
		t.Errorf("events for %d keys, want %d", len(seen), len(want))
	}
}

package deploytest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"latchkey/pkg/account"
	"latchkey/pkg/httpapi"
	"latchkey/pkg/lambdaapp"
	"latchkey/pkg/lambdaapp/replay"
)

// recordWatch is the real store, watched: it notes the state of each
// idempotency record when the answer is stored, and with taken set it
// claims every key for another request while the request believes it
// holds it, as if its lease had been taken over after the claim.
type recordWatch struct {
	account.Store
	taken bool

	mu          sync.Mutex
	atFinish    []account.IdempotencyState
	probeFailed error
}

func (w *recordWatch) ClaimIdempotency(ctx context.Context, r account.IdempotencyRecord, now time.Time) (account.IdempotencyRecord, bool, error) {
	if !w.taken {
		return w.Store.ClaimIdempotency(ctx, r, now)
	}
	other := r
	other.Owner = "another request"
	held, claimed, err := w.Store.ClaimIdempotency(ctx, other, now)
	if err != nil || !claimed {
		return held, claimed, err
	}
	return r, true, nil
}

func (w *recordWatch) FinishIdempotency(ctx context.Context, r account.IdempotencyRecord) error {
	probe := r
	probe.Owner, probe.State, probe.Response = "probe", account.IdempotencyStarted, nil
	held, claimed, err := w.Store.ClaimIdempotency(ctx, probe, r.CreatedAt)
	w.mu.Lock()
	if err == nil && claimed {
		err = errAbsent
	}
	if err != nil {
		w.probeFailed = err
	}
	w.atFinish = append(w.atFinish, held.State)
	w.mu.Unlock()
	return w.Store.FinishIdempotency(ctx, r)
}

var errAbsent = errors.New("the record was not there when the answer was stored")

// TestIdempotencyKey_EveryWriteRoute takes every route that takes
// Idempotency-Key (httpapi.Route.TakesIdempotencyKey: every POST and
// DELETE under /v1 but verify, present and future) and sends its success
// event from events/ (TestManifest requires one per route) with the
// header, through its function's Lambda handler, over a fresh store:
//
//   - CommittedWithTheChange: the answer is the event's status, and when
//     it is stored the record already says applied, which only the store
//     write of the change sets, in the change's own transaction; the same
//     event again is that answer, replayed, and changes nothing.
//   - RefusedWithTheRecord: with the record held by another request (the
//     fault between claiming a key and committing the change), the change
//     is refused, 409 idempotency_in_progress, and nothing is changed.
//
// A route whose change went through a store write that does not carry the
// record, or that writes before the write that does, fails one or the
// other.
func TestIdempotencyKey_EveryWriteRoute(t *testing.T) {
	entries, err := replay.Manifest(eventsDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range httpapi.Routes() {
		if !r.TakesIdempotencyKey() {
			continue
		}
		routeKey := r.Method + " " + r.Path
		var entry *replay.Entry
		var ev events.APIGatewayV2HTTPRequest
		for _, e := range entries {
			if e.Status >= 300 || e.Function.Group() != r.Group {
				continue
			}
			loaded, err := replay.LoadEvent(filepath.Join(eventsDir, e.Event))
			if err != nil {
				t.Fatal(err)
			}
			if loaded.RouteKey == routeKey {
				entry, ev = &e, loaded
				break
			}
		}
		if entry == nil {
			t.Errorf("%s: no event in events/manifest.json shows it succeeding", routeKey)
			continue
		}
		ev.Headers = maps.Clone(ev.Headers)
		ev.Headers["idempotency-key"] = "route-table-" + entry.Event
		t.Run(routeKey, func(t *testing.T) {
			t.Parallel()
			t.Run("CommittedWithTheChange", func(t *testing.T) {
				b := newBackend(t)
				w := &recordWatch{Store: b.store}
				app := newWatchedApp(t, entry.Function, b, w)
				first := invoke(t, app, ev)
				if first.StatusCode != entry.Status {
					t.Fatalf("status %d %s, want %d", first.StatusCode, first.Body, entry.Status)
				}
				if got := responseHeader(first).Get("Idempotent-Replayed"); got != "" {
					t.Fatalf("the first answer has Idempotent-Replayed %q", got)
				}
				w.mu.Lock()
				states, probeErr := w.atFinish, w.probeFailed
				w.mu.Unlock()
				if probeErr != nil || len(states) != 1 || states[0] != account.IdempotencyApplied {
					t.Fatalf("record when the answer was stored: %v (%v), want [applied]: the change did not commit the record", states, probeErr)
				}
				before := b.snapshot(t)
				again := invoke(t, app, ev)
				if responseHeader(again).Get("Idempotent-Replayed") != "true" || again.StatusCode != first.StatusCode ||
					!bytes.Equal(responseBody(t, again), responseBody(t, first)) {
					t.Fatalf("the same event again: %d %s (Idempotent-Replayed %q), want the first answer replayed",
						again.StatusCode, again.Body, responseHeader(again).Get("Idempotent-Replayed"))
				}
				if after := b.snapshot(t); !maps.Equal(before, after) {
					t.Errorf("the replay changed the store:\n before %v\n after  %v", before, after)
				}
			})
			t.Run("RefusedWithTheRecord", func(t *testing.T) {
				b := newBackend(t)
				app := newWatchedApp(t, entry.Function, b, &recordWatch{Store: b.store, taken: true})
				before := b.snapshot(t)
				res := invoke(t, app, ev)
				var p struct {
					Code string `json:"code"`
				}
				_ = json.Unmarshal(responseBody(t, res), &p)
				if res.StatusCode != 409 || p.Code != string(account.CodeIdempotencyInProgress) {
					t.Fatalf("with the record taken: %d %s, want 409 idempotency_in_progress", res.StatusCode, res.Body)
				}
				if after := b.snapshot(t); !maps.Equal(before, after) {
					t.Errorf("the refused change was made:\n before %v\n after  %v", before, after)
				}
			})
		})
	}
}

func newWatchedApp(t *testing.T, fn lambdaapp.Function, b backend, w *recordWatch) *lambdaapp.App {
	t.Helper()
	app, err := lambdaapp.New(context.Background(), replay.Config(fn, "latchkey"), lambdaapp.Deps{
		Store: w, Keys: b.keys, Secrets: replay.NewSecrets(), Logger: discard,
	})
	if err != nil {
		t.Fatal(err)
	}
	if b.calls != nil {
		b.calls.reset()
	}
	return app
}

func invoke(t *testing.T, app *lambdaapp.App, ev events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
	t.Helper()
	res, err := app.Lambda()(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

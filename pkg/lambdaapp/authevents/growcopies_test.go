package authevents_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"latchkey/pkg/account"
	"latchkey/pkg/boltstore"
	"latchkey/pkg/dynamostore"
	"latchkey/pkg/dynamostore/dynamotest"
	"latchkey/pkg/lambdaapp"
	"latchkey/pkg/lambdaapp/copygrowth"
	"latchkey/pkg/lambdaapp/replay"
	"latchkey/pkg/tablestore"
	"latchkey/pkg/version"
)

// TestApp_GrowCopies, on DynamoDB Local and bbolt: auth's handler, given
// the verify URL's request (events/auth/grow-copies.json) for a key
// another process's flushes show busy, grows its verify copies to 15; for
// a quiet key it writes none; garbage (no key, another kind, a malformed
// id, a key that is not there) is logged and ignored, never an error (an
// asynchronous invocation would be retried) nor a panic, and no log line
// holds what the garbage held. Through the grow alias, the one the
// senders' roles may invoke, a custom resource's request, a bootstrap
// and an API request are ignored too: no answer is PUT, no issuer
// recorded, no response served.
func TestApp_GrowCopies(t *testing.T) {
	t.Run("DynamoDBLocal", func(t *testing.T) {
		client := dynamotest.NewClient(t)
		table := dynamotest.NewTable(t, client)
		testGrowCopies(t, dynamostore.Port(client, table),
			dynamostore.New(client, table, dynamostore.WithTimeout(dynamotest.Timeout)),
			dynamostore.New(client, table, dynamostore.WithTimeout(dynamotest.Timeout), dynamostore.WithoutCopyGrowth()))
	})
	t.Run("Bolt", func(t *testing.T) {
		tbl, err := boltstore.OpenTable(filepath.Join(t.TempDir(), "table.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { tbl.Close() })
		testGrowCopies(t, tbl.Port(), tablestore.New(tbl.Port(), tablestore.WithSerialWrites()),
			tablestore.New(tbl.Port(), tablestore.WithoutCopyGrowth()))
	})
}

// testGrowCopies runs auth over store, and heats keys through other, a
// store of the same table that grows no copies (the verify URL's).
func testGrowCopies(t *testing.T, port tablestore.Port, store, other *tablestore.Store) {
	ctx := context.Background()
	if err := replay.Seed(ctx, store); err != nil {
		t.Fatal(err)
	}
	if _, err := account.PutFormatsInForce(ctx, store, time.Unix(0, 0), version.Version); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	app, err := lambdaapp.New(ctx, replay.Config(lambdaapp.Auth, "latchkey"), lambdaapp.Deps{
		Store: store, Keys: &replay.MemoryKeys{}, Secrets: replay.NewSecrets(), Logger: slog.New(slog.NewJSONHandler(&logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	h := handler(app)
	now := time.Now().UTC()
	busy, quiet := newAPIKey(t, store, now), newAPIKey(t, store, now.Add(time.Millisecond))
	heatKey(t, other, busy, 30000)
	heatKey(t, other, quiet, 1)
	copies := func(id string) int64 {
		t.Helper()
		it, err := port.Get(ctx, tablestore.Key{PK: "KEY#" + id + "#1", SK: "KEY"})
		if err != nil {
			t.Fatal(err)
		}
		n, _ := it["read_copies"].(tablestore.N)
		return int64(n)
	}
	if copies(busy) != 1 || copies(quiet) != 1 {
		t.Fatalf("before: copies %d and %d, want 1 each", copies(busy), copies(quiet))
	}

	sample, err := os.ReadFile("../../../events/auth/grow-copies.json")
	if err != nil {
		t.Fatal(err)
	}
	request := func(keyID string) json.RawMessage {
		var raw map[string]any
		if err := json.Unmarshal(sample, &raw); err != nil {
			t.Fatal(err)
		}
		raw["key_id"] = keyID
		b, err := json.Marshal(raw)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	invoke := func(what string, ev json.RawMessage) {
		t.Helper()
		if out, err := h(ctx, ev); err != nil || out != nil {
			t.Errorf("%s: got %#v, %v; want nil, nil", what, out, err)
		}
	}

	invoke("the sample, as it is", sample)
	invoke("a quiet key", request(quiet))
	if got := copies(quiet); got != 1 {
		t.Errorf("a quiet key: %d copies, want 1", got)
	}
	grow := lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{
		InvokedFunctionArn: "arn:aws:lambda:us-east-1:123456789012:function:latchkey-AuthFunction:" + copygrowth.Alias,
	})
	if out, err := h(grow, request(busy)); err != nil || out != nil {
		t.Errorf("a busy key, through the grow alias: got %#v, %v; want nil, nil", out, err)
	}
	if got := copies(busy); got != 15 {
		t.Errorf("a busy key: %d copies, want 15 (the most)", got)
	}

	logs.Reset()
	for what, ev := range map[string]string{
		"no key":           `{"latchkey":"grow-copies"}`,
		"another kind":     `{"latchkey":"shrink-copies","key_id":"` + quiet + `"}`,
		"a number":         `{"latchkey":"grow-copies","key_id":42}`,
		"a token":          `{"latchkey":"grow-copies","key_id":"eyJhbGciOiJFZERTQSJ9.secret-looking"}`,
		"another id":       `{"latchkey":"grow-copies","key_id":"org_01JD8ZQ4N5V7W2X3Y4Z5A6B7C8"}`,
		"a latchkey null":  `{"latchkey":null}`,
		"an unknown field": `{"latchkey":7,"key_id":[]}`,
	} {
		invoke(what, json.RawMessage(ev))
	}
	if got := copies(quiet); got != 1 {
		t.Errorf("after garbage: a quiet key has %d copies, want 1", got)
	}
	rs := newCfnResponses(t)
	for what, ev := range map[string]json.RawMessage{
		"IssuerConfig's Update": rs.event(t, "issuer-update.json"),
		"Formats' Delete":       rs.event(t, "formats-delete.json"),
		"a bootstrap":           json.RawMessage(`{"action":"bootstrap"}`),
		"an API request":        apiEvent(t),
	} {
		if out, err := h(grow, ev); err != nil || out != nil {
			t.Errorf("%s through the grow alias: got %#v, %v; want nil, nil", what, out, err)
		}
	}
	select {
	case res := <-rs.got:
		t.Errorf("through the grow alias, a custom resource's request was served: %+v", res)
	default:
	}
	if f, err := store.Formats(ctx); err != nil || f.InlineRevocationSince.IsZero() {
		t.Errorf("after a Formats Delete through the grow alias: %+v, %v; want them in force", f, err)
	}
	if strings.Contains(logs.String(), "eyJ") || strings.Contains(logs.String(), "secret-looking") {
		t.Errorf("the garbage reached the log: %s", logs.String())
	}
	if n := strings.Count(logs.String(), "\n"); n < 10 {
		t.Errorf("%d log lines for 11 invocations of garbage, want one each but for null; logs:\n%s", n, logs.String())
	}
}

// apiEvent reads a sample API request of events/.
func apiEvent(t *testing.T) json.RawMessage {
	t.Helper()
	b, err := os.ReadFile("../../../events/auth-verify.json")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// newAPIKey creates a key in store.
func newAPIKey(t *testing.T, store *tablestore.Store, at time.Time) string {
	t.Helper()
	secret := account.NewAPIKeySecret()
	k := account.APIKey{
		ID: account.NewID(account.PrefixAPIKey, at), Name: "grow", Hash: account.HashAPIKey(secret),
		Last4: secret[len(secret)-4:], Scopes: []string{"read:users"}, CreatedAt: at,
	}
	if err := store.CreateAPIKey(context.Background(), account.WriteOptions{}, k); err != nil {
		t.Fatal(err)
	}
	return k.ID
}

// heatKey adds, through store, rate verifies a second of the key id over
// the last two minutes: what the verify URL's flushes write for a busy
// key.
func heatKey(t *testing.T, store *tablestore.Store, id string, rate int64) {
	t.Helper()
	now := time.Now().UTC()
	start := now.Truncate(time.Minute)
	n := rate * int64(now.Sub(start.Add(-time.Minute))/time.Second)
	f := account.UsageFlush{Process: account.NewID("", now), Seq: 1, Deltas: []account.UsageDelta{{
		Subject: id, Interval: account.IntervalMinute, Start: start, ExpireAt: now.Add(time.Hour),
		Counts: account.UsageCounts{Verifications: map[string]int64{account.OutcomeValid: n}},
	}}}
	if err := store.AddUsage(context.Background(), f); err != nil {
		t.Fatal(err)
	}
}

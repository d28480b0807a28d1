package publisher_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"

	"latchkey/pkg/publisher"
)

// streamDir holds the sample DynamoDB Streams events.
const streamDir = "../../events/stream"

// loadBatch reads a sample stream event as Lambda delivers it.
func loadBatch(tb testing.TB, name string) events.DynamoDBEvent {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(streamDir, name))
	if err != nil {
		tb.Fatal(err)
	}
	var ev events.DynamoDBEvent
	if err := json.Unmarshal(b, &ev); err != nil {
		tb.Fatalf("%s: %v", name, err)
	}
	return ev
}

// fakeAPI is EventBridge as a function field, recording every call.
type fakeAPI struct {
	mu    sync.Mutex
	calls [][]types.PutEventsRequestEntry
	fn    func(call int, entries []types.PutEventsRequestEntry) (*eventbridge.PutEventsOutput, error)
}

func (f *fakeAPI) PutEvents(_ context.Context, in *eventbridge.PutEventsInput, _ ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error) {
	f.mu.Lock()
	f.calls = append(f.calls, slices.Clone(in.Entries))
	n := len(f.calls)
	f.mu.Unlock()
	if f.fn != nil {
		return f.fn(n, in.Entries)
	}
	return accepted(in.Entries), nil
}

// accepted answers every entry with an event id.
func accepted(entries []types.PutEventsRequestEntry) *eventbridge.PutEventsOutput {
	out := &eventbridge.PutEventsOutput{}
	for i := range entries {
		out.Entries = append(out.Entries, types.PutEventsResultEntry{EventId: aws.String(fmt.Sprint("id-", i))})
	}
	return out
}

// eventID is the id inside an entry's detail.
func eventID(tb testing.TB, e types.PutEventsRequestEntry) string {
	tb.Helper()
	var v struct{ ID string }
	if err := json.Unmarshal([]byte(aws.ToString(e.Detail)), &v); err != nil {
		tb.Fatal(err)
	}
	return v.ID
}

// eventRecord is the INSERT record of an event item holding event (the
// event's JSON), with type as its type attribute.
func eventRecord(seq int, id, typ, event string) events.DynamoDBEventRecord {
	pk := events.NewStringAttribute(publisher.EventPrefix + id)
	return events.DynamoDBEventRecord{
		EventName: "INSERT",
		Change: events.DynamoDBStreamRecord{
			SequenceNumber: fmt.Sprintf("%025d", 1000+seq),
			Keys:           map[string]events.DynamoDBAttributeValue{"pk": pk, "sk": events.NewStringAttribute("EVENT")},
			NewImage: map[string]events.DynamoDBAttributeValue{
				"pk": pk, "sk": events.NewStringAttribute("EVENT"),
				"event": events.NewStringAttribute(event), "type": events.NewStringAttribute(typ),
			},
		},
	}
}

// batchOf makes a batch of n events, each padded to about size bytes.
func batchOf(n, size int) events.DynamoDBEvent {
	var b events.DynamoDBEvent
	for i := range n {
		id := fmt.Sprintf("evt_%03d", i)
		pad := strings.Repeat("x", max(0, size-120))
		ev := fmt.Sprintf(`{"id":%q,"type":"user.updated","created_at":"2026-11-22T09:00:%02dZ","actor":{"key_id":"key_1"},"request_id":"r","data":{"pad":%q}}`, id, i%60, pad)
		b.Records = append(b.Records, eventRecord(i, id, "user.updated", ev))
	}
	return b
}

func newPublisher(api publisher.API, log *bytes.Buffer) *publisher.Publisher {
	return publisher.New(api, publisher.Options{
		Logger:  slog.New(slog.NewJSONHandler(log, nil)),
		Backoff: func(int) time.Duration { return time.Millisecond },
	})
}

func failures(resp events.DynamoDBEventResponse) []string {
	var out []string
	for _, f := range resp.BatchItemFailures {
		out = append(out, f.ItemIdentifier)
	}
	return out
}

// TestPublisher_Entries: each event item's INSERT becomes one entry, as
// the issue has it, in stream order; nothing else in the stream does, and
// nothing else is logged.
func TestPublisher_Entries(t *testing.T) {
	for _, tc := range []struct {
		file string
		want []string // event ids, in order
	}{
		{"insert.json", []string{"evt_01KF0H2A0000000000000000A1", "evt_01KF0H3B0000000000000000A2", "evt_01KF0H4C0000000000000000A3"}},
		{"mixed.json", []string{"evt_01KF0H5D0000000000000000A4"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			batch := loadBatch(t, tc.file)
			api := &fakeAPI{}
			var log bytes.Buffer
			resp, err := newPublisher(api, &log).Handle(context.Background(), batch)
			if err != nil || len(resp.BatchItemFailures) != 0 {
				t.Fatalf("Handle: %v, failures %v", err, failures(resp))
			}
			if len(api.calls) != 1 {
				t.Fatalf("%d PutEvents calls, want 1", len(api.calls))
			}
			var got []string
			for _, e := range api.calls[0] {
				got = append(got, eventID(t, e))
				rec := recordOf(t, batch, eventID(t, e))
				stored := rec.Change.NewImage["event"].String()
				var head struct {
					Type      string `json:"type"`
					CreatedAt string `json:"created_at"`
				}
				if err := json.Unmarshal([]byte(stored), &head); err != nil {
					t.Fatal(err)
				}
				created, _ := time.Parse(time.RFC3339Nano, head.CreatedAt)
				if aws.ToString(e.Source) != "latchkey" || aws.ToString(e.DetailType) != head.Type || aws.ToString(e.Detail) != stored ||
					!aws.ToTime(e.Time).Equal(created) || aws.ToString(e.EventBusName) != "default" || len(e.Resources) != 0 {
					t.Errorf("entry %+v\nwant source latchkey, detail-type %s, time %s, bus default, detail the stored event", e, head.Type, head.CreatedAt)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("sent %v, want %v", got, tc.want)
			}
			if log.Len() != 0 {
				t.Errorf("logged %q; a batch that goes out whole logs nothing", log.String())
			}
		})
	}
}

func recordOf(tb testing.TB, batch events.DynamoDBEvent, id string) events.DynamoDBEventRecord {
	tb.Helper()
	for _, r := range batch.Records {
		if r.EventName != "INSERT" {
			continue
		}
		// The stores key an event EVENT#<day>/<id>; this file's
		// fixtures EVENT#<id>.
		pk, sk := r.Change.Keys["pk"].String(), r.Change.Keys["sk"].String()
		if pk == publisher.EventPrefix+id || strings.HasPrefix(pk, publisher.EventPrefix) && sk == id {
			return r
		}
	}
	tb.Fatalf("no INSERT of event %s", id)
	return events.DynamoDBEventRecord{}
}

// TestPublisher_Chunks: at most 10 entries per call, and at most 256 KB as
// EventBridge counts it; every event sent once, in order.
func TestPublisher_Chunks(t *testing.T) {
	for _, tc := range []struct {
		name     string
		n, size  int
		wantSize []int
	}{
		{"Small", 23, 200, []int{10, 10, 3}},
		{"Large", 7, 100 * 1024, []int{2, 2, 2, 1}},
		{"AtTheLimit", 3, publisher.MaxRequestSize - 200, []int{1, 1, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := &fakeAPI{}
			var log bytes.Buffer
			batch := batchOf(tc.n, tc.size)
			resp, err := newPublisher(api, &log).Handle(context.Background(), batch)
			if err != nil || len(resp.BatchItemFailures) != 0 {
				t.Fatalf("Handle: %v, failures %v; log %s", err, failures(resp), log.String())
			}
			var sizes []int
			var ids []string
			for _, call := range api.calls {
				sizes = append(sizes, len(call))
				total := 0
				for _, e := range call {
					total += publisher.EntrySize(e)
					ids = append(ids, eventID(t, e))
				}
				if total > publisher.MaxRequestSize {
					t.Errorf("a call of %d bytes, over %d", total, publisher.MaxRequestSize)
				}
			}
			if !slices.Equal(sizes, tc.wantSize) {
				t.Errorf("calls of %v entries, want %v", sizes, tc.wantSize)
			}
			var want []string
			for i := range tc.n {
				want = append(want, fmt.Sprintf("evt_%03d", i))
			}
			if !slices.Equal(ids, want) {
				t.Errorf("sent %v, want %v", ids, want)
			}
		})
	}
}

// TestEntrySize follows EventBridge's documented calculation.
func TestEntrySize(t *testing.T) {
	e := types.PutEventsRequestEntry{Source: aws.String("latchkey"), DetailType: aws.String("user.created"), Detail: aws.String(`{"a":"é"}`)}
	if got, want := publisher.EntrySize(e), 8+12+10; got != want {
		t.Errorf("without Time: %d, want %d", got, want)
	}
	e.Time = aws.Time(time.Now())
	e.Resources = []string{"arn:x"}
	if got, want := publisher.EntrySize(e), 8+12+10+14+5; got != want {
		t.Errorf("with Time and a resource: %d, want %d", got, want)
	}
}

// failEntries answers each entry whose event id is in codes with that
// error code, the others as accepted.
func failEntries(tb testing.TB, codes func(call int, id string) string) func(int, []types.PutEventsRequestEntry) (*eventbridge.PutEventsOutput, error) {
	return func(call int, entries []types.PutEventsRequestEntry) (*eventbridge.PutEventsOutput, error) {
		out := accepted(entries)
		failed := 0
		for i, e := range entries {
			if code := codes(call, eventID(tb, e)); code != "" {
				out.Entries[i] = types.PutEventsResultEntry{ErrorCode: aws.String(code), ErrorMessage: aws.String("refused by the test")}
				failed++
			}
		}
		out.FailedEntryCount = int32(failed)
		return out, nil
	}
}

// TestPublisher_PartialFailure: entries EventBridge fails are sent again
// when their code is retryable; what is not delivered in the end is named
// in BatchItemFailures, the first such record only (Lambda resumes from the
// lowest), and no later chunk is sent.
func TestPublisher_PartialFailure(t *testing.T) {
	batch := batchOf(25, 200)
	seq := func(i int) string { return batch.Records[i].Change.SequenceNumber }
	for _, tc := range []struct {
		name  string
		codes func(call int, id string) string
		want  []string // BatchItemFailures
		calls []int    // entries per call
	}{
		{"ThrottledOnceThenDelivered", func(call int, id string) string {
			if call == 1 && (id == "evt_002" || id == "evt_007") {
				return "ThrottlingException"
			}
			return ""
		}, nil, []int{10, 2, 10, 5}},
		{"InternalFailureTwiceThenDelivered", func(call int, id string) string {
			if call <= 3 && id == "evt_013" {
				return "InternalFailure"
			}
			return ""
		}, nil, []int{10, 10, 1, 1, 5}},
		{"ThrottledEveryTime", func(call int, id string) string {
			if id == "evt_014" {
				return "ThrottlingException"
			}
			return ""
		}, []string{seq(14)}, []int{10, 10, 1, 1}},
		{"NotRetryable", func(call int, id string) string {
			if id == "evt_012" {
				return "InvalidArgument"
			}
			return ""
		}, []string{seq(12)}, []int{10, 10}},
		{"EarlierRetryableFailsLater", func(call int, id string) string {
			switch id {
			case "evt_011":
				return "ThrottlingException"
			case "evt_016":
				return "MalformedDetail"
			}
			return ""
		}, []string{seq(11)}, []int{10, 10}},
		{"RetryThenNotRetryable", func(call int, id string) string {
			if id == "evt_003" {
				if call == 1 {
					return "ThrottlingException"
				}
				return "AccessDeniedException"
			}
			return ""
		}, []string{seq(3)}, []int{10, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := &fakeAPI{fn: failEntries(t, tc.codes)}
			var log bytes.Buffer
			resp, err := newPublisher(api, &log).Handle(context.Background(), batch)
			if err != nil {
				t.Fatal(err)
			}
			if got := failures(resp); !slices.Equal(got, tc.want) {
				t.Errorf("BatchItemFailures %v, want %v", got, tc.want)
			}
			var calls []int
			for _, c := range api.calls {
				calls = append(calls, len(c))
			}
			if !slices.Equal(calls, tc.calls) {
				t.Errorf("calls of %v entries, want %v", calls, tc.calls)
			}
		})
	}
}

// TestPublisher_CallFails: a PutEvents call that fails as a whole (the SDK
// having retried it) fails its first record; the chunks before it stay
// delivered, the ones after are not sent.
func TestPublisher_CallFails(t *testing.T) {
	batch := batchOf(25, 200)
	api := &fakeAPI{fn: func(call int, entries []types.PutEventsRequestEntry) (*eventbridge.PutEventsOutput, error) {
		if call == 2 {
			return nil, errors.New("connection refused")
		}
		return accepted(entries), nil
	}}
	var log bytes.Buffer
	resp, err := newPublisher(api, &log).Handle(context.Background(), batch)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := failures(resp), []string{batch.Records[10].Change.SequenceNumber}; !slices.Equal(got, want) {
		t.Errorf("BatchItemFailures %v, want %v", got, want)
	}
	if len(api.calls) != 2 {
		t.Errorf("%d calls, want 2", len(api.calls))
	}
}

// TestPublisher_Malformed: an event item that cannot become an EventBridge
// event is skipped, with one error line that names it and says why but
// holds nothing of its content; the events around it go out.
func TestPublisher_Malformed(t *testing.T) {
	const secret = "dave@example.com"
	good := func(i int) events.DynamoDBEventRecord {
		id := fmt.Sprintf("evt_good%d", i)
		return eventRecord(i, id, "user.created", fmt.Sprintf(`{"id":%q,"type":"user.created","created_at":"2026-11-22T09:00:00Z","data":{}}`, id))
	}
	for _, tc := range []struct {
		name, typ, event, reason string
	}{
		{"NotJSON", "user.updated", `{"id":"evt_bad","type":"user.updated","data":{"email":"` + secret, "not a JSON object"},
		{"NotAnObject", "user.updated", `["` + secret + `"]`, "not a JSON object"},
		{"TwoValues", "user.updated", `{"id":"evt_bad"} {"x":"` + secret + `"}`, "not a JSON object"},
		{"NoID", "user.updated", `{"type":"user.updated","created_at":"2026-11-22T09:00:00Z","data":{"email":"` + secret + `"}}`, "no id"},
		{"IDNotAString", "user.updated", `{"id":7,"type":"user.updated","created_at":"2026-11-22T09:00:00Z","data":{"email":"` + secret + `"}}`, "not a JSON object"},
		{"NoType", "", `{"id":"evt_bad","created_at":"2026-11-22T09:00:00Z","data":{"email":"` + secret + `"}}`, "type"},
		{"TypeTooLong", strings.Repeat("t", 129), `{"id":"evt_bad","type":"` + strings.Repeat("t", 129) + `","created_at":"2026-11-22T09:00:00Z","data":{"email":"` + secret + `"}}`, "type"},
		{"NoCreatedAt", "user.updated", `{"id":"evt_bad","type":"user.updated","data":{"email":"` + secret + `"}}`, "created_at"},
		{"CreatedAtNotRFC3339", "user.updated", `{"id":"evt_bad","type":"user.updated","created_at":"22/11/2026","data":{"email":"` + secret + `"}}`, "RFC 3339"},
		{"TypeAttributeDiffers", "user.deleted", `{"id":"evt_bad","type":"user.updated","created_at":"2026-11-22T09:00:00Z","data":{"email":"` + secret + `"}}`, `"type" attribute`},
		{"TooLarge", "user.updated", `{"id":"evt_bad","type":"user.updated","created_at":"2026-11-22T09:00:00Z","data":{"email":"` + secret + strings.Repeat("x", publisher.MaxRequestSize) + `"}}`, "over EventBridge's"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := eventRecord(5, "evt_bad", tc.typ, tc.event)
			batch := events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{good(1), bad, good(9)}}
			api := &fakeAPI{}
			var log bytes.Buffer
			resp, err := newPublisher(api, &log).Handle(context.Background(), batch)
			if err != nil || len(resp.BatchItemFailures) != 0 {
				t.Fatalf("Handle: %v, failures %v", err, failures(resp))
			}
			var sent []string
			for _, c := range api.calls {
				for _, e := range c {
					sent = append(sent, eventID(t, e))
				}
			}
			if want := []string{"evt_good1", "evt_good9"}; !slices.Equal(sent, want) {
				t.Errorf("sent %v, want %v", sent, want)
			}
			lines := strings.Split(strings.TrimSpace(log.String()), "\n")
			if len(lines) != 1 {
				t.Fatalf("logged %d lines, want 1:\n%s", len(lines), log.String())
			}
			var line map[string]any
			if err := json.Unmarshal([]byte(lines[0]), &line); err != nil {
				t.Fatal(err)
			}
			if line["level"] != "ERROR" || line["msg"] != publisher.SkippedMessage || line["pk"] != "EVENT#evt_bad" ||
				line["sequence_number"] != bad.Change.SequenceNumber || !strings.Contains(fmt.Sprint(line["reason"]), tc.reason) {
				t.Errorf("log line %s\nwant an ERROR %q naming EVENT#evt_bad, its sequence number and a reason with %q", lines[0], publisher.SkippedMessage, tc.reason)
			}
			if strings.Contains(log.String(), secret) {
				t.Errorf("the log holds the item's content: %s", log.String())
			}
		})
	}
}

// TestPublisher_Ignores: records that are not the creation of an event
// item are passed over without a call and without a word in the log:
// other items' images hold hashes.
func TestPublisher_Ignores(t *testing.T) {
	mixed := loadBatch(t, "mixed.json")
	var others events.DynamoDBEvent
	for _, r := range mixed.Records {
		if !(r.EventName == "INSERT" && strings.HasPrefix(r.Change.Keys["pk"].String(), "EVENT#")) {
			others.Records = append(others.Records, r)
		}
	}
	if len(others.Records) != len(mixed.Records)-1 {
		t.Fatalf("mixed.json has %d records besides its event INSERT, want %d", len(others.Records), len(mixed.Records)-1)
	}
	// A key that is not a string, and a record without keys.
	others.Records = append(others.Records,
		events.DynamoDBEventRecord{EventName: "INSERT", Change: events.DynamoDBStreamRecord{Keys: map[string]events.DynamoDBAttributeValue{"pk": events.NewNumberAttribute("1")}}},
		events.DynamoDBEventRecord{EventName: "INSERT"})
	api := &fakeAPI{}
	var log bytes.Buffer
	resp, err := newPublisher(api, &log).Handle(context.Background(), others)
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("Handle: %v, failures %v", err, failures(resp))
	}
	if len(api.calls) != 0 || log.Len() != 0 {
		t.Errorf("%d PutEvents calls, log %q; want none and nothing", len(api.calls), log.String())
	}
}

// TestPublisher_Deadline: a call still running AnswerMargin before the
// invocation's deadline is given up, and the answer names its first record,
// rather than the function timing out and failing the whole batch.
func TestPublisher_Deadline(t *testing.T) {
	batch := batchOf(25, 200)
	var stuck context.Context
	api := &fakeAPI{}
	api.fn = func(call int, entries []types.PutEventsRequestEntry) (*eventbridge.PutEventsOutput, error) {
		if call == 2 {
			<-stuck.Done()
			return nil, stuck.Err()
		}
		return accepted(entries), nil
	}
	// Two seconds for the first two calls, to fakes: plenty on a loaded
	// machine.
	deadline := time.Now().Add(publisher.AnswerMargin + 2*time.Second)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	var log bytes.Buffer
	p := newPublisher(ctxAPI{api, &stuck}, &log)
	resp, err := p.Handle(ctx, batch)
	if err != nil {
		t.Fatal(err)
	}
	// The stuck call was given up at its context's deadline, AnswerMargin
	// before the invocation's, rather than at the invocation's: a check of
	// the deadline, not of the clock after the answer, which a loaded
	// machine could push past it.
	if d, ok := stuck.Deadline(); !ok || d.After(deadline.Add(-publisher.AnswerMargin)) {
		t.Errorf("the call's deadline %v (set %v), want AnswerMargin (%v) before the invocation's, %v", d, ok, publisher.AnswerMargin, deadline)
	}
	if got, want := failures(resp), []string{batch.Records[10].Change.SequenceNumber}; !slices.Equal(got, want) {
		t.Errorf("BatchItemFailures %v, want %v", got, want)
	}
}

// ctxAPI hands the context of each call to the fake, through ctx.
type ctxAPI struct {
	*fakeAPI
	ctx *context.Context
}

func (c ctxAPI) PutEvents(ctx context.Context, in *eventbridge.PutEventsInput, o ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error) {
	*c.ctx = ctx
	return c.fakeAPI.PutEvents(ctx, in, o...)
}

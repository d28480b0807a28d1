package publisher_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go/middleware"

	"latchkey/pkg/lambdaapp/publisherapp"
	"latchkey/pkg/publisher"
)

// MotoEndpointEnv is moto_server's URL, which scripts/moto.sh exports.
const MotoEndpointEnv = "LATCHKEY_TEST_MOTO_ENDPOINT"

// moto is an EventBridge rule routing source latchkey on a bus to an SQS
// queue of its own, in moto_server, as an AWS user would route the events
// (README: "Events on EventBridge").
type moto struct {
	endpoint string
	eb       *eventbridge.Client
	sqs      *sqs.Client
	queueURL string
	bus      string
}

var motoCfg = aws.Config{
	Region:      "us-east-1",
	Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""),
}

// newMoto creates the queue and the rule on bus ("default", or a bus it
// creates), and removes them when the test ends.
func newMoto(t *testing.T, bus string) *moto {
	t.Helper()
	endpoint := os.Getenv(MotoEndpointEnv)
	if endpoint == "" {
		t.Skip(MotoEndpointEnv + " is not set; run through scripts/moto.sh (make test does)")
	}
	ctx := context.Background()
	m := &moto{
		endpoint: endpoint,
		eb:       eventbridge.NewFromConfig(motoCfg, func(o *eventbridge.Options) { o.BaseEndpoint = aws.String(endpoint) }),
		sqs:      sqs.NewFromConfig(motoCfg, func(o *sqs.Options) { o.BaseEndpoint = aws.String(endpoint) }),
		bus:      bus,
	}
	name := "latchkey-test-" + rand.Text()[:10]
	if bus != "default" {
		if _, err := m.eb.CreateEventBus(ctx, &eventbridge.CreateEventBusInput{Name: aws.String(bus)}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.eb.DeleteEventBus(ctx, &eventbridge.DeleteEventBusInput{Name: aws.String(bus)}) })
	}
	q, err := m.sqs.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	m.queueURL = aws.ToString(q.QueueUrl)
	t.Cleanup(func() { m.sqs.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: q.QueueUrl}) })
	attrs, err := m.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: q.QueueUrl, AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	if err != nil {
		t.Fatal(err)
	}
	// The README's rule: every Latchkey event.
	if _, err := m.eb.PutRule(ctx, &eventbridge.PutRuleInput{
		Name: aws.String(name), EventBusName: aws.String(bus), EventPattern: aws.String(`{"source": ["latchkey"]}`),
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		m.eb.RemoveTargets(ctx, &eventbridge.RemoveTargetsInput{Rule: aws.String(name), EventBusName: aws.String(bus), Ids: []string{"queue"}})
		m.eb.DeleteRule(ctx, &eventbridge.DeleteRuleInput{Name: aws.String(name), EventBusName: aws.String(bus)})
	})
	if _, err := m.eb.PutTargets(ctx, &eventbridge.PutTargetsInput{
		Rule: aws.String(name), EventBusName: aws.String(bus),
		Targets: []ebtypes.Target{{Id: aws.String("queue"), Arn: aws.String(attrs.Attributes["QueueArn"])}},
	}); err != nil {
		t.Fatal(err)
	}
	return m
}

// handler is the function's handler as its main builds it
// (publisherapp.FromEnv), pointed at moto and at the bus, logging
// into log.
func (m *moto) handler(t *testing.T, log *bytes.Buffer, endpoint, bus string) publisherapp.Handler {
	t.Helper()
	env := map[string]string{
		"AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
		publisherapp.EnvEventBridgeEndpoint: endpoint,
	}
	if bus != "default" {
		env[publisherapp.EnvEventBusName] = bus
	}
	h, err := publisherapp.FromEnv(func(k string) string { return env[k] }, slog.New(slog.NewJSONHandler(log, nil)))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// delivered is an event as the SQS target received it from EventBridge.
type delivered struct {
	Source     string          `json:"source"`
	DetailType string          `json:"detail-type"`
	Time       string          `json:"time"`
	Detail     json.RawMessage `json:"detail"`
}

// receive drains the queue: EventBridge in moto delivers to its targets
// within the PutEvents call.
func (m *moto) receive(t *testing.T) []delivered {
	t.Helper()
	var out []delivered
	for {
		r, err := m.sqs.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(m.queueURL), MaxNumberOfMessages: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Messages) == 0 {
			return out
		}
		for _, msg := range r.Messages {
			var d delivered
			if err := json.Unmarshal([]byte(aws.ToString(msg.Body)), &d); err != nil {
				t.Fatalf("message %s: %v", aws.ToString(msg.Body), err)
			}
			out = append(out, d)
			if _, err := m.sqs.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(m.queueURL), ReceiptHandle: msg.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// wantDelivered is what EventBridge must deliver for the event items of
// batch whose ids are given: source latchkey, detail-type the event's
// type, time its created_at (to the second, as EventBridge writes it),
// detail the event as stored.
func wantDelivered(t *testing.T, batch events.DynamoDBEvent, ids ...string) map[string]delivered {
	t.Helper()
	out := map[string]delivered{}
	for _, id := range ids {
		stored := recordOf(t, batch, id).Change.NewImage["event"].String()
		var head struct {
			Type      string    `json:"type"`
			CreatedAt time.Time `json:"created_at"`
		}
		if err := json.Unmarshal([]byte(stored), &head); err != nil {
			t.Fatal(err)
		}
		out[id] = delivered{Source: "latchkey", DetailType: head.Type, Time: head.CreatedAt.UTC().Truncate(time.Second).Format(time.RFC3339), Detail: json.RawMessage(stored)}
	}
	return out
}

// checkDelivered holds what the queue received to want, exactly.
func checkDelivered(t *testing.T, got []delivered, want map[string]delivered) {
	t.Helper()
	seen := map[string]bool{}
	for _, d := range got {
		var v struct{ ID string }
		if err := json.Unmarshal(d.Detail, &v); err != nil {
			t.Fatal(err)
		}
		w, ok := want[v.ID]
		if !ok || seen[v.ID] {
			t.Errorf("delivered %s (%s), which is not one of the events sent, or twice", v.ID, d.DetailType)
			continue
		}
		seen[v.ID] = true
		if d.Source != w.Source || d.DetailType != w.DetailType || d.Time != w.Time || !jsonEqual(t, d.Detail, w.Detail) {
			t.Errorf("event %s delivered as\n source %q detail-type %q time %q detail %s\nwant\n source %q detail-type %q time %q detail %s",
				v.ID, d.Source, d.DetailType, d.Time, d.Detail, w.Source, w.DetailType, w.Time, w.Detail)
		}
	}
	for id := range want {
		if !seen[id] {
			t.Errorf("event %s was not delivered", id)
		}
	}
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(x) == fmt.Sprint(y)
}

// TestPublisher_Moto replays each sample stream event (events/stream)
// into the function's handler, with the real SDK client against moto's
// EventBridge, and reads what a rule on the default bus delivered to an
// SQS queue: every event item created, as the issue specifies it, and
// nothing else; no failure reported; nothing logged but the one line for
// the malformed item, which holds none of its content.
func TestPublisher_Moto(t *testing.T) {
	m := newMoto(t, "default")
	for _, tc := range []struct {
		file string
		ids  []string
		logs int
	}{
		{"insert.json", []string{"evt_01KF0H2A0000000000000000A1", "evt_01KF0H3B0000000000000000A2", "evt_01KF0H4C0000000000000000A3"}, 0},
		{"mixed.json", []string{"evt_01KF0H5D0000000000000000A4"}, 0},
		{"malformed.json", []string{"evt_01KF0H2A0000000000000000A1", "evt_01KF0H4C0000000000000000A3"}, 1},
	} {
		t.Run(tc.file, func(t *testing.T) {
			batch := loadBatch(t, tc.file)
			var log bytes.Buffer
			resp, err := m.handler(t, &log, m.endpoint, m.bus)(context.Background(), batch)
			if err != nil || len(resp.BatchItemFailures) != 0 {
				t.Fatalf("handler: %v, failures %v; log %s", err, failures(resp), log.String())
			}
			checkDelivered(t, m.receive(t), wantDelivered(t, batch, tc.ids...))
			if lines := strings.Count(log.String(), "\n"); lines != tc.logs {
				t.Errorf("logged %d lines, want %d:\n%s", lines, tc.logs, log.String())
			}
			for _, leak := range []string{"carol@example.com", "KEYHASH", "dave@exam"} {
				if strings.Contains(log.String(), leak) {
					t.Errorf("the log holds %q: %s", leak, log.String())
				}
			}
		})
	}
}

// rejectSource blanks the Source of the entries whose detail holds id, on
// their way out of the SDK, so that EventBridge (moto, as AWS does) fails
// them with InvalidArgument while taking the others of the same call.
func rejectSource(id string) func(*middleware.Stack) error {
	return func(s *middleware.Stack) error {
		return s.Initialize.Add(middleware.InitializeMiddlewareFunc("rejectSource", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			if p, ok := in.Parameters.(*eventbridge.PutEventsInput); ok {
				c := *p
				c.Entries = slices.Clone(p.Entries)
				for i, e := range c.Entries {
					if strings.Contains(aws.ToString(e.Detail), id) {
						c.Entries[i].Source = nil
					}
				}
				in.Parameters = &c
			}
			return next.HandleInitialize(ctx, in)
		}), middleware.After)
	}
}

// TestPublisher_MotoFailures: what EventBridge (moto) refuses comes back as
// the batch item failure Lambda resumes from, and what it took is
// delivered.
func TestPublisher_MotoFailures(t *testing.T) {
	batch := loadBatch(t, "insert.json")
	seq := func(i int) string { return batch.Records[i].Change.SequenceNumber }
	ids := []string{"evt_01KF0H2A0000000000000000A1", "evt_01KF0H3B0000000000000000A2", "evt_01KF0H4C0000000000000000A3"}

	t.Run("EntryRejected", func(t *testing.T) {
		// The second entry fails (InvalidArgument, not retryable); the
		// first and third, in the same call, are delivered.
		m := newMoto(t, "latchkey-test-"+strings.ToLower(rand.Text()[:8]))
		client := eventbridge.NewFromConfig(motoCfg, func(o *eventbridge.Options) {
			o.BaseEndpoint = aws.String(m.endpoint)
			o.APIOptions = append(o.APIOptions, rejectSource(ids[1]))
		})
		var log bytes.Buffer
		resp, err := publisher.New(client, publisher.Options{EventBusName: m.bus, Logger: slog.New(slog.NewJSONHandler(&log, nil))}).Handle(context.Background(), batch)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := failures(resp), []string{seq(1)}; !slices.Equal(got, want) {
			t.Errorf("BatchItemFailures %v, want %v", got, want)
		}
		checkDelivered(t, m.receive(t), wantDelivered(t, batch, ids[0], ids[2]))
		if !strings.Contains(log.String(), `"error_code":"InvalidArgument"`) || !strings.Contains(log.String(), ids[1]) {
			t.Errorf("log %s; want the refused entry's event id and error code", log.String())
		}
	})

	t.Run("NoSuchBus", func(t *testing.T) {
		// The call fails as a whole: its first record is named.
		m := newMoto(t, "default")
		var log bytes.Buffer
		resp, err := m.handler(t, &log, m.endpoint, "latchkey-test-missing-"+strings.ToLower(rand.Text()[:8]))(context.Background(), batch)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := failures(resp), []string{seq(0)}; !slices.Equal(got, want) {
			t.Errorf("BatchItemFailures %v, want %v", got, want)
		}
		if got := m.receive(t); len(got) != 0 {
			t.Errorf("the default bus's rule received %d events", len(got))
		}
	})

	t.Run("Unreachable", func(t *testing.T) {
		// Nothing listens on the endpoint: after the SDK's retries, the
		// first record is named.
		m := newMoto(t, "default")
		var log bytes.Buffer
		resp, err := m.handler(t, &log, "http://127.0.0.1:1", "default")(context.Background(), batch)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := failures(resp), []string{seq(0)}; !slices.Equal(got, want) {
			t.Errorf("BatchItemFailures %v, want %v", got, want)
		}
		if !strings.Contains(log.String(), "PutEvents failed") {
			t.Errorf("log %s; want the failed call", log.String())
		}
	})
}

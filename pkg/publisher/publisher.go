// Package publisher puts Latchkey's events on an Amazon EventBridge bus. It
// is the logic of the publisher function, which the DynamoDB table's stream
// invokes (template.yaml: PublisherFunction): every event item the stores
// write (partition key EVENT#…, the event's JSON in the attribute "event")
// becomes one EventBridge event with source "latchkey", the event's type as
// its detail-type, the event itself as its detail and its created_at as its
// time.
//
// What a batch of stream records becomes:
//
//   - Only INSERT records of event items are published. Every other record
//     (a MODIFY or REMOVE, TTL expiry included, and any other item: users,
//     keys, tokens, whose images hold hashes) is passed over without a word
//     in the log. The event source mapping's filter already keeps them
//     away; the function does not rely on it.
//   - The events go out in stream order, at most 10 per PutEvents call and
//     at most 256 KB per call, as EventBridge counts entry sizes.
//   - An entry that EventBridge fails with a retryable code
//     (ThrottlingException, InternalFailure) is sent again, alone with the
//     others that failed so, after a short backoff, up to MaxAttempts
//     times in all.
//   - Any other failure, or one that outlasts the retries, ends the batch:
//     the response names the first record not delivered, and no later
//     chunk is sent. Lambda takes the lowest sequence number of a partial
//     batch response as its checkpoint and retries every record from
//     there (AWS Lambda Developer Guide, "Configuring partial batch
//     response with DynamoDB and Lambda"), so naming later ones would
//     change nothing, and sending later ones would only deliver them twice.
//     Once the event source mapping's retries run out, Lambda sends the
//     batch's description to the dead-letter queue (README: "Events on
//     EventBridge").
//   - An event item that cannot become an EventBridge event (its "event"
//     is missing or not a JSON object with an id, a type and an RFC 3339
//     created_at, its "type" attribute disagrees, or the entry alone is
//     over 256 KB) would fail the same way at every retry. It is skipped,
//     so that it cannot hold up its shard for a day, with one error line
//     ("event item skipped") naming its keys, sequence number, event id
//     when it has one and the reason, never its content; the template
//     counts those lines and alarms on them.
//
// Delivery is at least once: a retried batch delivers again the events of
// its records that had gone out before the failure. Consumers tell
// duplicates apart by the event's id (detail.id), and order by it: events
// are not delivered in order either.
package publisher

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
)

// The contract with the stores: an event item's partition key starts with
// EventPrefix; its EventAttribute holds the event's JSON and its
// TypeAttribute the event's type.
const (
	PartitionKey   = "pk"
	EventPrefix    = "EVENT#"
	EventAttribute = "event"
	TypeAttribute  = "type"
	sortKey        = "sk"
)

// What EventBridge is told.
const (
	// Source of every event.
	Source = "latchkey"
	// DefaultEventBus is the account's default bus.
	DefaultEventBus = "default"
	// MaxEntries is the most entries one PutEvents call takes.
	MaxEntries = 10
	// MaxRequestSize is the most one PutEvents call may carry, in bytes as
	// EntrySize counts them (256 KB).
	MaxRequestSize = 256 * 1024
	// MaxDetailTypeLength is the longest detail-type EventBridge accepts.
	MaxDetailTypeLength = 128
	// AnswerMargin is how long before the invocation's deadline the
	// publisher stops sending and answers.
	AnswerMargin = time.Second
	// DefaultMaxAttempts is how many times an entry failed with a
	// retryable code is sent, in all, within one invocation.
	DefaultMaxAttempts = 3
)

// retryableCodes are the per-entry error codes the PutEvents reference
// calls retryable.
var retryableCodes = map[string]bool{"ThrottlingException": true, "InternalFailure": true}

// API is the one EventBridge call the publisher makes;
// *eventbridge.Client is one.
type API interface {
	PutEvents(ctx context.Context, in *eventbridge.PutEventsInput, optFns ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error)
}

var _ API = (*eventbridge.Client)(nil)

// Options configure a Publisher; the zero value is usable.
type Options struct {
	// EventBusName is the bus's name or ARN; DefaultEventBus when empty.
	EventBusName string
	// Logger; slog.Default() when nil.
	Logger *slog.Logger
	// MaxAttempts bounds the sends of an entry failed with a retryable
	// code; DefaultMaxAttempts when zero.
	MaxAttempts int
	// Backoff is the wait before the nth retry (n from 1); 100 ms × 2^(n-1)
	// with full jitter when nil.
	Backoff func(n int) time.Duration
}

// Publisher turns batches of DynamoDB stream records into EventBridge
// events. Safe for concurrent use.
type Publisher struct {
	api  API
	bus  string
	log  *slog.Logger
	max  int
	wait func(int) time.Duration
}

// New returns a Publisher sending with api.
func New(api API, opts Options) *Publisher {
	p := &Publisher{api: api, bus: opts.EventBusName, log: opts.Logger, max: opts.MaxAttempts, wait: opts.Backoff}
	if p.bus == "" {
		p.bus = DefaultEventBus
	}
	if p.log == nil {
		p.log = slog.Default()
	}
	if p.max <= 0 {
		p.max = DefaultMaxAttempts
	}
	if p.wait == nil {
		p.wait = func(n int) time.Duration {
			return time.Duration(rand.Int64N(int64(100*time.Millisecond) << (n - 1)))
		}
	}
	return p
}

// pending is one event to send, with the record it came from.
type pending struct {
	entry  types.PutEventsRequestEntry
	size   int
	record int // index in the batch
	id     string
}

// Handle publishes the events of a batch, as the function's handler. It
// returns no error: a record not delivered is named in the response's
// BatchItemFailures (the event source mapping reports batch item
// failures), so that Lambda retries from it.
func (p *Publisher) Handle(ctx context.Context, batch events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	// Answer before the function's timeout: a timeout fails the whole
	// batch, delivered events and all, where an answer names the first
	// record not delivered.
	if d, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d.Add(-AnswerMargin))
		defer cancel()
	}
	var todo []pending
	for i, r := range batch.Records {
		if !IsEventInsert(r) {
			continue
		}
		e, err := p.entry(r)
		if err != nil {
			p.skip(ctx, r, err)
			continue
		}
		e.record = i
		todo = append(todo, e)
	}
	for len(todo) > 0 {
		n := chunk(todo)
		if failed, ok := p.send(ctx, todo[:n]); !ok {
			return events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{
				{ItemIdentifier: batch.Records[failed.record].Change.SequenceNumber},
			}}, nil
		}
		todo = todo[n:]
	}
	return events.DynamoDBEventResponse{}, nil
}

// IsEventInsert reports whether r is the creation of an event item: an
// INSERT whose partition key starts with EventPrefix.
func IsEventInsert(r events.DynamoDBEventRecord) bool {
	if r.EventName != string(events.DynamoDBOperationTypeInsert) {
		return false
	}
	pk, ok := stringAttr(r.Change.Keys, PartitionKey)
	return ok && strings.HasPrefix(pk, EventPrefix)
}

// stringAttr returns the string attribute name of m, if it is one.
func stringAttr(m map[string]events.DynamoDBAttributeValue, name string) (string, bool) {
	v, ok := m[name]
	if !ok || v.DataType() != events.DataTypeString {
		return "", false
	}
	return v.String(), true
}

// malformed is why an event item cannot be published; its text never
// holds the item's content.
type malformed struct {
	reason string
	id     string // the event's id, when it has a readable one
}

func (m *malformed) Error() string { return m.reason }

// eventHead is what the publisher reads of an event; Detail is the
// whole of it, as stored.
type eventHead struct {
	ID        *string `json:"id"`
	Type      *string `json:"type"`
	CreatedAt *string `json:"created_at"`
}

// entry makes the EventBridge entry of an event item's INSERT record.
func (p *Publisher) entry(r events.DynamoDBEventRecord) (pending, error) {
	img := r.Change.NewImage
	raw, ok := stringAttr(img, EventAttribute)
	if !ok {
		return pending{}, &malformed{reason: `no string attribute "event"`}
	}
	var head eventHead
	if !json.Valid([]byte(raw)) || !strings.HasPrefix(strings.TrimLeft(raw, " \t\r\n"), "{") || json.Unmarshal([]byte(raw), &head) != nil {
		return pending{}, &malformed{reason: `"event" is not a JSON object of the event's shape`}
	}
	m := &malformed{}
	if head.ID != nil && *head.ID != "" && len(*head.ID) <= 64 {
		m.id = *head.ID
	}
	switch {
	case head.ID == nil || *head.ID == "":
		m.reason = "the event has no id"
	case head.Type == nil || *head.Type == "" || len(*head.Type) > MaxDetailTypeLength:
		m.reason = fmt.Sprintf("the event's type is missing or longer than %d bytes", MaxDetailTypeLength)
	case head.CreatedAt == nil:
		m.reason = "the event has no created_at"
	}
	if m.reason != "" {
		return pending{}, m
	}
	created, err := time.Parse(time.RFC3339Nano, *head.CreatedAt)
	if err != nil {
		m.reason = "the event's created_at is not an RFC 3339 time"
		return pending{}, m
	}
	if t, ok := stringAttr(img, TypeAttribute); ok && t != *head.Type {
		m.reason = `the item's "type" attribute is not the event's type`
		return pending{}, m
	}
	e := types.PutEventsRequestEntry{
		Source:       aws.String(Source),
		DetailType:   head.Type,
		Detail:       aws.String(raw),
		Time:         aws.Time(created),
		EventBusName: aws.String(p.bus),
	}
	size := EntrySize(e)
	if size > MaxRequestSize {
		m.reason = fmt.Sprintf("the entry is %d bytes, over EventBridge's %d", size, MaxRequestSize)
		return pending{}, m
	}
	return pending{entry: e, size: size, id: *head.ID}, nil
}

// EntrySize is the size of a PutEvents entry as EventBridge counts it
// against the 256 KB limit of a request ("Calculating PutEvents event
// entry size", EventBridge User Guide): 14 bytes for a Time, plus the
// UTF-8 bytes of Source, DetailType, Detail and each Resource.
func EntrySize(e types.PutEventsRequestEntry) int {
	n := len(aws.ToString(e.Source)) + len(aws.ToString(e.DetailType)) + len(aws.ToString(e.Detail))
	if e.Time != nil {
		n += 14
	}
	for _, r := range e.Resources {
		n += len(r)
	}
	return n
}

// chunk returns how many of todo's first entries go in one call: at most
// MaxEntries, within MaxRequestSize, at least one (entry refuses an entry
// over the limit alone).
func chunk(todo []pending) int {
	n, size := 0, 0
	for n < len(todo) && n < MaxEntries && size+todo[n].size <= MaxRequestSize {
		size += todo[n].size
		n++
	}
	return max(n, 1)
}

// send puts one chunk on the bus, sending again the entries failed with a
// retryable code. It returns ok, or the first entry (in stream order) not
// delivered.
func (p *Publisher) send(ctx context.Context, batch []pending) (pending, bool) {
	left := batch
	for attempt := 1; ; attempt++ {
		in := &eventbridge.PutEventsInput{Entries: make([]types.PutEventsRequestEntry, len(left))}
		for i, e := range left {
			in.Entries[i] = e.entry
		}
		out, err := p.api.PutEvents(ctx, in)
		if err != nil {
			// The SDK has retried what it could: the call failed as a
			// whole, and so did every entry in it.
			p.log.WarnContext(ctx, "PutEvents failed", "error", err.Error(), "entries", len(left), "first_event_id", left[0].id)
			return left[0], false
		}
		if len(out.Entries) != len(left) {
			p.log.WarnContext(ctx, "PutEvents answered a different number of entries", "sent", len(left), "answered", len(out.Entries))
			return left[0], false
		}
		var retry []pending
		var fatal *pending
		for i, res := range out.Entries {
			code := aws.ToString(res.ErrorCode)
			if code == "" {
				continue
			}
			p.log.WarnContext(ctx, "PutEvents failed an entry", "event_id", left[i].id, "error_code", code,
				"error_message", aws.ToString(res.ErrorMessage), "attempt", attempt)
			if retryableCodes[code] && attempt < p.max {
				retry = append(retry, left[i])
			} else if fatal == nil {
				fatal = &left[i]
			}
		}
		if fatal != nil {
			// The first failure in stream order decides where Lambda
			// resumes; an earlier entry waiting for a retry comes first.
			if len(retry) > 0 && retry[0].record < fatal.record {
				return retry[0], false
			}
			return *fatal, false
		}
		if len(retry) == 0 {
			return pending{}, true
		}
		select {
		case <-ctx.Done():
			return retry[0], false
		case <-time.After(p.wait(attempt)):
		}
		left = retry
	}
}

// skip logs an event item that cannot be published: its keys, where it is
// in the stream and why, never its content.
func (p *Publisher) skip(ctx context.Context, r events.DynamoDBEventRecord, err error) {
	pk, _ := stringAttr(r.Change.Keys, PartitionKey)
	sk, _ := stringAttr(r.Change.Keys, sortKey)
	attrs := []any{"pk", pk, "sk", sk, "sequence_number", r.Change.SequenceNumber, "reason", err.Error()}
	var m *malformed
	if errors.As(err, &m) && m.id != "" {
		attrs = append(attrs, "event_id", m.id)
	}
	p.log.ErrorContext(ctx, SkippedMessage, attrs...)
}

// SkippedMessage is the message of the line logged for an event item that
// cannot be published; template.yaml's metric filter counts it.
const SkippedMessage = "event item skipped"

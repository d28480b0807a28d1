package account

import (
	"context"
	"crypto/rand"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"
)

// Events are the record of every change: each write that changes data
// writes one event per object it creates, changes or removes, in the same
// atomic write (bbolt transaction, DynamoDB transaction) as the change, so
// that no change is made without its event nor an event recorded for a
// change that did not happen. GET /v1/events reads them back.
//
// The HTTP layer sets an EventSource in the Principal.Write of every
// authenticated request that may change something, as it does an
// IdempotencyCommit: who makes the change, under which request id, and
// how an event is encoded (the API's own JSON of the resource). Every
// Store method that changes data takes it in its WriteOptions and writes
// the events of its change with it; a write made with no EventSource (the
// bootstrap key that a process installs from its configuration, the last
// use of a key) is not a change made by a caller and records none.

// The event types.
const (
	EventUserCreated                   = "user.created"
	EventUserUpdated                   = "user.updated"
	EventUserDeleted                   = "user.deleted"
	EventOrganizationCreated           = "organization.created"
	EventOrganizationUpdated           = "organization.updated"
	EventOrganizationDeleted           = "organization.deleted"
	EventOrganizationMembershipCreated = "organization_membership.created"
	EventOrganizationMembershipUpdated = "organization_membership.updated"
	EventOrganizationMembershipDeleted = "organization_membership.deleted"
	EventAPIKeyCreated                 = "api_key.created"
	EventAPIKeyUpdated                 = "api_key.updated"
	EventAPIKeyRotated                 = "api_key.rotated"
	EventAPIKeyDeleted                 = "api_key.deleted"
	// EventAPIKeyTokensRevoked: every token of the key issued until the
	// key's tokens_revoked_before was revoked at once; the data is the key.
	EventAPIKeyTokensRevoked = "api_key.tokens_revoked"
	EventTokenRevoked        = "token.revoked"
)

// EventTypes lists every event type, in the order the API documents them.
func EventTypes() []string {
	return []string{
		EventUserCreated, EventUserUpdated, EventUserDeleted,
		EventOrganizationCreated, EventOrganizationUpdated, EventOrganizationDeleted,
		EventOrganizationMembershipCreated, EventOrganizationMembershipUpdated, EventOrganizationMembershipDeleted,
		EventAPIKeyCreated, EventAPIKeyUpdated, EventAPIKeyRotated, EventAPIKeyDeleted, EventAPIKeyTokensRevoked,
		EventTokenRevoked,
	}
}

const (
	// PrefixEvent starts every event id.
	PrefixEvent = "evt_"
	// EventRetention is how long events are kept: a store drops them
	// after it (DynamoDB TTL, bbolt pruning) and never returns an older
	// one meanwhile.
	EventRetention = 30 * 24 * time.Hour
	// maxEventTypes bounds the types of one query.
	maxEventTypes = 16
)

// Actor is who made a change: the API key that authenticated the request,
// and the access token, when the key presented one.
type Actor struct {
	KeyID   string
	TokenID string
}

// Event is one change, as a store is asked to write it.
type Event struct {
	ID        string
	Type      string
	CreatedAt time.Time
	Actor     Actor
	RequestID string
	// Data is the object the change created, changed (as it left it) or
	// removed (as it was): a User, Organization, Membership, APIKey or
	// Revocation. An APIKey's hashes never leave the store in an event:
	// the encoder writes what the API returns for a key, which holds none.
	Data any
}

// StoredEvent is an event as a store returns it: its id and type, and
// JSON, the event exactly as it was encoded when it was written, which the
// API returns as it is.
type StoredEvent struct {
	ID   string
	Type string
	JSON []byte
}

// EventSource is what a store needs to write the events of a request's
// changes; see WriteOptions.
type EventSource struct {
	Actor     Actor
	RequestID string
	// Encode returns the JSON of an event, as GET /v1/events returns it.
	Encode func(Event) ([]byte, error)
	// OrganizationID is the organization the actor's key is bound to, ""
	// for none: the changes it makes are inside it (see tenant.go), and
	// so are their events (Organization).
	OrganizationID string
}

// Organization returns the organization an event about data belongs to,
// which a key bound to it lists (EventQuery.OrganizationID), or "" for
// none: an organization's own, a membership's, an API key's, a revoked
// token's key's. A user belongs to no one organization: the events of
// changes a bound key makes to a user, who is its organization's member
// and no other's (tenant.go), belong to its organization; the changes a
// key bound to none makes to a user belong to none, while the membership
// events they cause belong to each organization.
func (src *EventSource) Organization(data any) string {
	switch d := data.(type) {
	case Organization:
		return d.ID
	case Membership:
		return d.OrganizationID
	case APIKey:
		return d.OrganizationID
	case Revocation:
		return d.OrganizationID
	case User:
		return src.OrganizationID
	}
	return ""
}

// EncodeEvent returns the event of type typ about data with id, made at at, as
// src encodes it.
func (src *EventSource) EncodeEvent(id, typ string, at time.Time, data any) ([]byte, error) {
	b, err := src.Encode(Event{ID: id, Type: typ, CreatedAt: at.UTC(), Actor: src.Actor, RequestID: src.RequestID, Data: data})
	if err != nil {
		return nil, Internal(err)
	}
	return b, nil
}

// PendingEvent is an event a store is about to write: its type and object,
// to which it gives an id and a time when it writes it.
type PendingEvent struct {
	Type string
	Data any
}

// EventTime returns the time an event id holds (its ULID's), and false
// for a string that is not an event id.
func EventTime(id string) (time.Time, bool) {
	return IDTime(PrefixEvent, id)
}

// EventIDAt returns the smallest event id of the millisecond of at: every
// event made at at or later sorts at or after it, every earlier one before.
func EventIDAt(at time.Time) string {
	var u ulid.ULID
	if at.Before(time.UnixMilli(0)) {
		at = time.UnixMilli(0)
	}
	if err := u.SetTime(ulid.Timestamp(at)); err != nil {
		// After the year 10889: the largest id there is.
		return PrefixEvent + ulid.MustParse("7ZZZZZZZZZZZZZZZZZZZZZZZZZ").String()
	}
	return PrefixEvent + u.String()
}

var (
	eventEntropyMu sync.Mutex
	// Events draw on entropy of their own: a store writes them at its own
	// clock's time, and sharing NewID's source would reset its monotonic
	// run between two IDs the service makes in one millisecond.
	eventEntropy = ulid.Monotonic(rand.Reader, 0)
)

// NewEventID returns a new event id made at at. Ids made in one process
// within one millisecond are in the order they were made.
func NewEventID(at time.Time) string {
	eventEntropyMu.Lock()
	defer eventEntropyMu.Unlock()
	return PrefixEvent + ulid.MustNew(ulid.Timestamp(at), eventEntropy).String()
}

// NextEventID returns a new event id made at at that sorts after last (an
// event id, or "" for none): a store that writes its events one
// transaction after another, reading the last id in each, gets ids in
// commit order even when its clock steps back or several events share a
// millisecond.
func NextEventID(last string, at time.Time) string {
	id := NewEventID(at)
	if last == "" || id > last {
		return id
	}
	u := ulid.MustParse(strings.TrimPrefix(last, PrefixEvent))
	// Increment the 80 bits of entropy, carrying into the time when they
	// overflow (never in practice).
	for i := len(u) - 1; i >= 0; i-- {
		u[i]++
		if u[i] != 0 {
			break
		}
	}
	return PrefixEvent + u.String()
}

// MaxEventsRead bounds the events a store reads for one page: a filter by
// type that keeps few of them returns a short page, even an empty one,
// with a position to go on from, rather than reading the whole feed in
// one request.
const MaxEventsRead = 1000

// EventQuery asks a store for a page of events. With After, the events
// strictly after it, oldest first; otherwise the newest first, strictly
// before Before when it is set. Types, when not empty, keeps the events of
// those types. The store returns none made before Since (the retention
// horizon). Page.Next is set when there may be more: the id of the last
// event the store read, returned or not (Types), to pass as Before for the
// next page newest first, or as After with After.
type EventQuery struct {
	After  string
	Before string
	Types  []string
	Limit  int
	Since  time.Time
	// ReadLimit is the most events the store reads, kept or not; 0 means
	// MaxEventsRead. When it stops there, the page may hold fewer than
	// Limit events, even none, and Next is where it stopped. A store that
	// spreads events over several partitions reads at least one of each
	// (tablestore: 16), or it could not move on.
	ReadLimit int
	// OrganizationID, when set, keeps the events that belong to that
	// organization (EventSource.Organization), which a store finds without
	// reading the others.
	OrganizationID string
}

// EventListParams is a request for a page of events (GET /v1/events).
type EventListParams struct {
	PageRequest
	After  string
	Before string
	// Types is the comma-separated list of the types to keep; "" for all.
	Types string
}

// ListEvents returns a page of the events of the last EventRetention:
// with After, those after it, oldest first; otherwise the newest first,
// before Before or after the cursor's position. A page has no more than
// p.Limit events, and a filter by type may leave it short, even empty,
// while HasMore says there is more (MaxEventsRead). With After, the next
// page is asked for with After set to the last event's id, or with
// NextCursor, which goes on forwards from the last event read (and is the
// only way on from an empty page); newest first, NextCursor continues
// backwards. A caller bound to an organization lists the events that
// belong to it (EventSource.Organization). CodeInvalidRequest.
func (s *Service) ListEvents(ctx context.Context, p Principal, q EventListParams) (List[StoredEvent], error) {
	if err := p.Authorize(OpListEvents); err != nil {
		return List[StoredEvent]{}, err
	}
	params, err := s.cursors.params("events", q.PageRequest)
	forward := false
	if err != nil && q.Cursor != "" {
		// A cursor of a page read oldest first goes on forwards.
		if fp, ferr := s.cursors.params(eventsForward, q.PageRequest); ferr == nil {
			params, err, forward = fp, nil, true
		}
	}
	var problems Problems
	var perr *Error
	if errors.As(err, &perr) && perr.Code == CodeInvalidRequest {
		problems = append(problems, perr.Fields...)
	} else if err != nil {
		return List[StoredEvent]{}, err
	}
	eq := EventQuery{Limit: params.PageSize(), Since: s.now().Add(-EventRetention), OrganizationID: p.KeyOrganizationID}
	given := 0
	for _, v := range []string{q.After, q.Before, q.Cursor} {
		if v != "" {
			given++
		}
	}
	if given > 1 {
		problems.Add("after", "after, before and cursor exclude each other: give at most one")
	}
	if q.After != "" {
		if _, ok := EventTime(q.After); !ok {
			problems.Add("after", "must be an event id (evt_…)")
		}
		eq.After = q.After
	}
	if q.Before != "" {
		if _, ok := EventTime(q.Before); !ok {
			problems.Add("before", "must be an event id (evt_…)")
		}
		eq.Before = q.Before
	}
	switch {
	case forward:
		eq.After = params.After
	case params.After != "":
		eq.Before = params.After
	}
	if q.Types != "" {
		known := EventTypes()
		for _, t := range strings.Split(q.Types, ",") {
			if !slices.Contains(known, t) {
				return List[StoredEvent]{}, &Error{Code: CodeUnknownEventType,
					Message: "types must be a comma-separated list of event types; unknown: " + quoteShort(t)}
			}
			if !slices.Contains(eq.Types, t) {
				eq.Types = append(eq.Types, t)
			}
		}
		if len(eq.Types) > maxEventTypes {
			problems.Add("types", "names too many types")
		}
	}
	if err := problems.Err(); err != nil {
		return List[StoredEvent]{}, err
	}
	page, err := s.store.ListEvents(ctx, eq)
	if err != nil {
		return List[StoredEvent]{}, storeErr(err)
	}
	if eq.After != "" {
		items := page.Items
		if items == nil {
			items = []StoredEvent{}
		}
		return List[StoredEvent]{Items: items, HasMore: page.Next != "", NextCursor: s.cursors.encode(eventsForward, page.Next)}, nil
	}
	return toList(s.cursors, "events", page), nil
}

// eventsForward names the list of events read oldest first, whose cursors
// go on forwards (NUL cannot occur in a list's name otherwise).
const eventsForward = "events\x00after"

// quoteShort quotes s for a message, cut to a length that keeps the
// message short whatever a client sends.
func quoteShort(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return `"` + strings.ToValidUTF8(s, "?") + `"`
}

package storetest

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"latchkey/pkg/account"
)

// The fixture's writes carry testSource, as every write of an API request
// carries its EventSource, so that the whole suite runs the paths that
// record events. Its encoder is the test's own: the stores keep the bytes
// whatever they are; httpapi's tests check the API's.

// testActor is the actor of every write of the suite.
var testActor = account.Actor{KeyID: "key_01TESTACTOR00000000000000", TokenID: "tok_01TESTTOKEN00000000000000"}

// testEvent is the JSON testSource encodes: the event with the object's
// identity.
type testEvent struct {
	ID        string        `json:"id"`
	Type      string        `json:"type"`
	CreatedAt time.Time     `json:"created_at"`
	Actor     account.Actor `json:"actor"`
	RequestID string        `json:"request_id"`
	Object    string        `json:"object"`
}

// objectOf names the object of an event: the id of a user, organization,
// key or token, org/user for a membership.
func objectOf(data any) string {
	switch d := data.(type) {
	case account.User:
		return d.ID
	case account.Organization:
		return d.ID
	case account.Membership:
		return d.OrganizationID + "/" + d.UserID + "/" + d.Role
	case account.APIKey:
		return d.ID
	case account.Revocation:
		return d.TokenID
	}
	return fmt.Sprintf("unknown %T", data)
}

func testSource(requestID string) *account.EventSource {
	return &account.EventSource{Actor: testActor, RequestID: requestID, Encode: func(e account.Event) ([]byte, error) {
		return json.Marshal(testEvent{e.ID, e.Type, e.CreatedAt, e.Actor, e.RequestID, objectOf(e.Data)})
	}}
}

// withSource returns the WriteOptions of writes that record their events
// with the suite's EventSource.
func withSource(requestID string) account.WriteOptions {
	return account.WriteOptions{Events: testSource(requestID)}
}

// committing returns the fixture's WriteOptions with c to commit.
func (f *fixture) committing(c *account.IdempotencyCommit) account.WriteOptions {
	opts := f.opts
	opts.Commit = c
	return opts
}

// seen is an event as the suite reads it back.
type seen struct {
	account.StoredEvent
	testEvent
}

// eventWait bounds how long the suite waits for an event to become
// visible: a store may hold the newest back for a while (DynamoDB, see
// EventLag: its call timeout plus 2 s, and the tests give DynamoDB Local
// a generous call timeout).
const eventWait = 90 * time.Second

// tail reads every event after after, oldest first, as a consumer does,
// until it has seen want events or eventWait has passed.
func (f *fixture) tail(after string, q account.EventQuery, want int) []seen {
	f.t.Helper()
	var out []seen
	deadline := time.Now().Add(eventWait)
	q.After = after
	for len(out) < want && time.Now().Before(deadline) {
		q.Since = time.Now().Add(-account.EventRetention)
		page, err := f.s.ListEvents(f.ctx, q)
		f.ok(err, "ListEvents")
		for _, e := range page.Items {
			out = append(out, f.decode(e))
			q.After = e.ID
		}
		if page.Next != "" {
			q.After = page.Next // past what a filter left out (ReadLimit)
		}
		if page.Next == "" && len(out) < want {
			time.Sleep(50 * time.Millisecond)
		}
	}
	return out
}

// through records a marker event (a user created under its own request id)
// and reads every event after after, oldest first, until the marker shows.
// It returns the events before the marker, and the marker's id. Every
// write the test made was done before the marker was made, and the feed
// shows events in id order, so once the marker shows, so has every event
// before it: an event too many is among them, with no sleep to wait for it.
func (f *fixture) through(after string, q account.EventQuery) ([]seen, string) {
	f.t.Helper()
	marker := f.newUser()
	f.ok(f.s.CreateUser(f.ctx, withSource("marker"), marker), "CreateUser (the marker)")
	var out []seen
	deadline := time.Now().Add(eventWait)
	q.After = after
	for time.Now().Before(deadline) {
		q.Since = time.Now().Add(-account.EventRetention)
		page, err := f.s.ListEvents(f.ctx, q)
		f.ok(err, "ListEvents")
		for _, e := range page.Items {
			d := f.decode(e)
			if d.Object == marker.ID {
				return out, e.ID
			}
			out = append(out, d)
			q.After = e.ID
		}
		if page.Next != "" {
			q.After = page.Next
		}
		if page.Next == "" {
			time.Sleep(50 * time.Millisecond)
		}
	}
	f.t.Fatalf("the marker's event did not show within %v, after %d events", eventWait, len(out))
	return nil, ""
}

func (f *fixture) decode(e account.StoredEvent) seen {
	f.t.Helper()
	var te testEvent
	if err := json.Unmarshal(e.JSON, &te); err != nil {
		f.t.Fatalf("event %s: JSON %q: %v", e.ID, e.JSON, err)
	}
	if te.ID != e.ID || te.Type != e.Type {
		f.t.Fatalf("event %s (%s) holds the JSON of %s (%s)", e.ID, e.Type, te.ID, te.Type)
	}
	return seen{e, te}
}

// start returns an event position before every event the fixture's store
// will record from now on.
func start() string { return account.EventIDAt(time.Now().Add(-time.Second)) }

func (s suite) events(t *testing.T) {
	w := waiting{t: t}
	defer w.Wait()
	w.Run("EveryChange", func(t *testing.T) {
		f := s.waitingFix(t)
		from := start()
		f.opts = withSource("req-1")
		ctx, opts := f.ctx, f.opts

		u := f.user()
		name := "Ada King"
		_, err := f.s.UpdateUser(ctx, opts, u.ID, account.UserPatch{Name: &name, UpdatedAt: f.now()})
		f.ok(err, "UpdateUser")
		email := "ada.king@example.com"
		_, err = f.s.UpdateUser(ctx, opts, u.ID, account.UserPatch{Email: &email, UpdatedAt: f.now()})
		f.ok(err, "UpdateUser with an e-mail")
		o := f.org()
		plan := "enterprise"
		_, err = f.s.UpdateOrganization(ctx, opts, o.ID, account.OrganizationPatch{Plan: &plan, UpdatedAt: f.now()})
		f.ok(err, "UpdateOrganization")
		f.member(o.ID, u.ID)
		_, err = f.s.UpdateMember(ctx, opts, o.ID, u.ID, account.MemberPatch{Role: "member", UpdatedAt: f.now()})
		f.ok(err, "UpdateMember")
		f.ok(f.s.RemoveMember(ctx, opts, o.ID, u.ID), "RemoveMember")
		f.member(o.ID, u.ID)
		k := f.key()
		off := true
		_, err = f.s.UpdateAPIKey(ctx, opts, k.ID, account.APIKeyPatch{Disabled: &off, At: f.now()}, nil)
		f.ok(err, "UpdateAPIKey")
		secret := account.NewAPIKeySecret()
		_, err = f.s.UpdateAPIKey(ctx, opts, k.ID, account.APIKeyPatch{Rotate: &account.KeyRotation{Hash: account.HashAPIKey(secret), Last4: secret[len(secret)-4:]}, At: f.now()}, nil)
		f.ok(err, "UpdateAPIKey rotating")
		_, err = f.s.UpdateAPIKey(ctx, opts, k.ID, account.APIKeyPatch{RevokeTokens: true, At: f.now()}, nil)
		f.ok(err, "UpdateAPIKey revoking its tokens")
		child := f.childKey(k)
		orgKey := f.newKey()
		orgKey.OrganizationID = o.ID
		f.ok(f.s.CreateAPIKey(ctx, opts, orgKey), "CreateAPIKey of the organization")
		tr := f.token(k.ID)
		r := account.Revocation{TokenID: tr.ID, KeyID: k.ID, RevokedAt: f.now(), ExpiresAt: tr.ExpiresAt}
		_, err = f.s.RevokeToken(ctx, opts, r)
		f.ok(err, "RevokeToken")
		_, err = f.s.RevokeToken(ctx, opts, account.Revocation{TokenID: tr.ID, KeyID: k.ID, RevokedAt: f.now(), ExpiresAt: tr.ExpiresAt})
		f.ok(err, "RevokeToken again") // no change, no event
		_, err = f.s.RecordAPIKeyUse(ctx, k, f.now())
		f.ok(err, "RecordAPIKeyUse") // not a change by a caller: no event
		f.ok(f.s.DeleteOrganization(ctx, opts, o.ID), "DeleteOrganization")
		f.ok(f.s.DeleteUser(ctx, opts, u.ID), "DeleteUser")
		f.ok(f.s.DeleteAPIKey(ctx, opts, k.ID, nil), "DeleteAPIKey")

		mem := func(role string) string { return o.ID + "/" + u.ID + "/" + role }
		want := []struct{ typ, object string }{
			{account.EventUserCreated, u.ID},
			{account.EventUserUpdated, u.ID},
			{account.EventUserUpdated, u.ID},
			{account.EventOrganizationCreated, o.ID},
			{account.EventOrganizationUpdated, o.ID},
			{account.EventOrganizationMembershipCreated, mem("admin")},
			{account.EventOrganizationMembershipUpdated, mem("member")},
			{account.EventOrganizationMembershipDeleted, mem("member")},
			{account.EventOrganizationMembershipCreated, mem("admin")},
			{account.EventAPIKeyCreated, k.ID},
			{account.EventAPIKeyUpdated, k.ID},
			{account.EventAPIKeyRotated, k.ID},
			{account.EventAPIKeyTokensRevoked, k.ID},
			{account.EventAPIKeyCreated, child.ID},
			{account.EventAPIKeyCreated, orgKey.ID},
			{account.EventTokenRevoked, tr.ID},
			// The organization's cascade: its key, its membership, itself.
			{account.EventAPIKeyDeleted, orgKey.ID},
			{account.EventOrganizationMembershipDeleted, mem("admin")},
			{account.EventOrganizationDeleted, o.ID},
			{account.EventUserDeleted, u.ID},
			// A tree: one event per key.
			{account.EventAPIKeyDeleted, "tree"},
			{account.EventAPIKeyDeleted, "tree"},
		}
		got, marker := f.through(from, account.EventQuery{Limit: 7})
		if len(got) != len(want) {
			for _, e := range got {
				t.Logf("%s %s %s", e.StoredEvent.ID, e.StoredEvent.Type, e.Object)
			}
			t.Fatalf("got %d events, want %d", len(got), len(want))
		}
		tree := []string{}
		for i, w := range want {
			e := got[i]
			if e.StoredEvent.Type != w.typ {
				t.Errorf("event %d: type %s, want %s", i, e.StoredEvent.Type, w.typ)
			}
			if w.object == "tree" {
				tree = append(tree, e.Object)
			} else if e.Object != w.object {
				t.Errorf("event %d (%s): object %s, want %s", i, w.typ, e.Object, w.object)
			}
			if e.Actor != testActor || e.RequestID != "req-1" {
				t.Errorf("event %d: actor %+v, request %q; want %+v, req-1", i, e.Actor, e.RequestID, testActor)
			}
			if t0, ok := account.EventTime(e.StoredEvent.ID); !ok || !t0.Equal(e.CreatedAt) {
				t.Errorf("event %d: id %s, created_at %v: the id's time must be created_at", i, e.StoredEvent.ID, e.CreatedAt)
			}
			if i > 0 && e.StoredEvent.ID <= got[i-1].StoredEvent.ID {
				t.Errorf("event %d: id %s not after %s", i, e.StoredEvent.ID, got[i-1].StoredEvent.ID)
			}
		}
		slices.Sort(tree)
		if wantTree := []string{child.ID, k.ID}; !slices.Equal(tree, sortedCopy(wantTree)) {
			t.Errorf("the tree's events name %v, want %v", tree, wantTree)
		}

		// Newest first, in pages, and by type.
		var back []string
		q := account.EventQuery{Limit: 4, Since: time.Now().Add(-account.EventRetention)}
		for {
			page, err := f.s.ListEvents(f.ctx, q)
			f.ok(err, "ListEvents newest first")
			for _, e := range page.Items {
				if e.ID > from && e.ID < marker {
					back = append(back, e.ID)
				}
			}
			if page.Next == "" {
				break
			}
			q.Before = page.Next
		}
		slices.Reverse(back)
		ids := make([]string, len(got))
		for i, e := range got {
			ids[i] = e.StoredEvent.ID
		}
		if !slices.Equal(back, ids) {
			t.Errorf("newest first, reversed:\n%v\nwant\n%v", back, ids)
		}
		page, err := f.s.ListEvents(f.ctx, account.EventQuery{Types: []string{account.EventUserDeleted, account.EventTokenRevoked}, Since: time.Now().Add(-account.EventRetention)})
		f.ok(err, "ListEvents of two types")
		var types []string
		for _, e := range page.Items {
			types = append(types, e.Type)
		}
		if !slices.Equal(types, []string{account.EventUserDeleted, account.EventTokenRevoked}) {
			t.Errorf("events of two types, newest first: %v", types)
		}
		page, err = f.s.ListEvents(f.ctx, account.EventQuery{After: from, Since: time.Now().Add(time.Minute)})
		f.ok(err, "ListEvents since a time after every event")
		if len(page.Items) != 0 {
			t.Errorf("ListEvents returned %d events made before Since", len(page.Items))
		}
	})

	w.Run("ReadLimit", func(t *testing.T) {
		const readLimit = 16
		// A filter that keeps few events reads no more than ReadLimit of
		// them per call, returns a short page (even an empty one) with
		// Next where it stopped, and following Next finds every event,
		// forwards and backwards.
		f := s.waitingFix(t)
		from := start()
		f.opts = withSource("req-read-limit")
		// More events on either side than readLimit, which is as small
		// as a store whose events are spread over 16 partitions reads
		// (account.EventQuery.ReadLimit).
		for range 2 * readLimit {
			f.user()
		}
		o := f.org()
		for range 2 * readLimit {
			f.user()
		}
		_, marker := f.through(from, account.EventQuery{})
		types := []string{account.EventOrganizationCreated}
		find := func(q account.EventQuery, next func(*account.EventQuery, string), done func(string) bool) (calls, found int) {
			t.Helper()
			for calls = 1; calls <= 1000; calls++ {
				q.Since = time.Now().Add(-account.EventRetention)
				page, err := f.s.ListEvents(f.ctx, q)
				f.ok(err, "ListEvents with a ReadLimit")
				for _, e := range page.Items {
					if e.Type != account.EventOrganizationCreated {
						t.Errorf("event %s of type %s, want only %v", e.ID, e.Type, types)
					}
					if f.decode(e).Object == o.ID {
						found++
					}
				}
				if page.Next == "" || done(page.Next) {
					return calls, found
				}
				next(&q, page.Next)
			}
			t.Fatalf("ListEvents with a ReadLimit of %d: no end after 1000 calls", readLimit)
			return 0, 0
		}
		// o's event has 2*readLimit events on either side: at readLimit
		// events a call, it takes at least two calls.
		calls, found := find(account.EventQuery{After: from, Types: types, Limit: 10, ReadLimit: readLimit},
			func(q *account.EventQuery, n string) { q.After = n },
			func(n string) bool { return n >= marker })
		if found != 1 || calls < 2 {
			t.Errorf("forwards: found the organization's event %d times in %d calls, want once in 2 or more", found, calls)
		}
		calls, found = find(account.EventQuery{Before: marker, Types: types, Limit: 10, ReadLimit: readLimit},
			func(q *account.EventQuery, n string) { q.Before = n },
			func(n string) bool { return n <= from })
		if found != 1 || calls < 2 {
			t.Errorf("backwards: found the organization's event %d times in %d calls, want once in 2 or more", found, calls)
		}
	})

	w.Run("NoSourceNoEvent", func(t *testing.T) {
		f := s.waitingFix(t)
		from := start()
		f.opts = account.WriteOptions{} // no EventSource: the bootstrap key, say
		u := f.user()
		f.opts = withSource("req-2")
		o := f.org()
		got, _ := f.through(from, account.EventQuery{})
		if len(got) != 1 || got[0].Object != o.ID {
			t.Errorf("events: got %+v, want only the organization's (not user %s's)", got, u.ID)
		}
	})

	w.Run("LargeCascade", func(t *testing.T) {
		// More memberships than one DynamoDB transaction holds with their
		// events: the cascade's transactions must leave room for them.
		f := s.waitingFix(t)
		f.opts = withSource("req-3")
		u := f.user()
		const orgs = 60
		var wg sync.WaitGroup
		created := make([]account.Organization, orgs)
		for i := range orgs {
			created[i] = f.newOrg()
		}
		errs := make([]error, orgs)
		// Eight at a time: every AddMember transaction checks u's item, and DynamoDB
		// Local answers 500 ("too long waiting for a lock") to a write
		// queued behind many others on one item, which the retry quota
		// of a store soon stops retrying on a loaded machine.
		sem := make(chan struct{}, 8)
		for i := range orgs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sem <- struct{}{}
				defer func() { <-sem }()
				if errs[i] = f.s.CreateOrganization(f.ctx, f.opts, created[i]); errs[i] != nil {
					return
				}
				at := f.now()
				errs[i] = f.s.AddMember(f.ctx, f.opts, account.Membership{OrganizationID: created[i].ID, UserID: u.ID, Role: account.OwnerRole, CreatedAt: at, UpdatedAt: at})
			}()
		}
		wg.Wait()
		for _, err := range errs {
			f.ok(err, "CreateOrganization and AddMember")
		}
		// From before DeleteUser starts: its cascade may take seconds on a
		// loaded machine, and its first events are as old.
		from := start()
		f.ok(f.s.DeleteUser(f.ctx, f.opts, u.ID), "DeleteUser")
		deleted := []string{account.EventOrganizationMembershipDeleted, account.EventUserDeleted}
		got := f.tail(from, account.EventQuery{Limit: account.MaxPageSize, Types: deleted}, orgs+1)
		if len(got) != orgs+1 {
			t.Fatalf("got %d events, want %d", len(got), orgs+1)
		}
		counts := map[string]int{}
		for _, e := range got {
			counts[e.StoredEvent.Type]++
		}
		if counts[account.EventOrganizationMembershipDeleted] != orgs || counts[account.EventUserDeleted] != 1 {
			t.Errorf("event counts: %v", counts)
		}
		if got[orgs].StoredEvent.Type != account.EventUserDeleted {
			t.Errorf("last event %s, want the user's own, last", got[orgs].StoredEvent.Type)
		}
	})

	w.Run("ConcurrentWritersNoSkip", func(t *testing.T) {
		// Writers commit while a consumer tails the feed with after: at the
		// end the consumer has seen every event exactly once, in id order.
		f := s.waitingFix(t)
		from := start()
		const writers, each = 8, 12
		var ids sync.Map
		done := make(chan struct{})
		var wg sync.WaitGroup
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, opts := f.ctx, withSource(fmt.Sprintf("writer-%d", w))
				for range each {
					u := f.newUser()
					if err := f.s.CreateUser(ctx, opts, u); err != nil {
						t.Errorf("CreateUser: %v", err)
						return
					}
					ids.Store(u.ID, true)
				}
			}()
		}
		go func() { wg.Wait(); close(done) }()
		var got []seen
		after := from
		seenIDs := map[string]bool{}
		// The wait is bounded from the moment the writers are done, not
		// from the start: writing may take long on a loaded machine.
		var deadline time.Time
		for len(got) < writers*each && (deadline.IsZero() || time.Now().Before(deadline)) {
			page, err := f.s.ListEvents(f.ctx, account.EventQuery{After: after, Limit: 5, Since: time.Now().Add(-account.EventRetention)})
			f.ok(err, "ListEvents")
			for _, e := range page.Items {
				if e.ID <= after {
					t.Fatalf("event %s after %s: out of order", e.ID, after)
				}
				after = e.ID
				d := f.decode(e)
				if seenIDs[d.Object] {
					t.Fatalf("user %s's event seen twice", d.Object)
				}
				seenIDs[d.Object] = true
				got = append(got, d)
			}
			select {
			case <-done:
				if deadline.IsZero() {
					deadline = time.Now().Add(eventWait)
				}
			default:
			}
			if page.Next == "" {
				time.Sleep(10 * time.Millisecond)
			}
		}
		<-done
		n := 0
		ids.Range(func(k, _ any) bool {
			n++
			if !seenIDs[k.(string)] {
				t.Errorf("the consumer never saw user %s's event", k)
			}
			return true
		})
		if n != writers*each || len(got) != n {
			t.Errorf("writes %d, events seen %d, want %d each", n, len(got), writers*each)
		}
	})
}

func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}

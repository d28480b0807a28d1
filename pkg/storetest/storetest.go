// Package storetest is the contract suite that every account.Store must
// pass: the embedded store runs it always, the DynamoDB store against
// DynamoDB Local. The Store interface says what a store promises; this
// package checks each promise, including uniqueness under concurrency,
// cascades, and paging while items are created.
package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"latchkey/pkg/account"
)

// Run runs the contract suite against the stores that newStore returns.
// Call it from a test named TestStore so that subtests read like
// TestStore/CreateUser/ErrEmailTaken.
//
// newStore is called once per subtest and must return a new, empty store
// that shares no data with any other store it returns: subtests run in
// parallel, and list tests count every item in the store. newStore owns the
// store's lifetime (close it with t.Cleanup).
func Run(t *testing.T, newStore func(t *testing.T) account.Store) {
	s := suite{newStore: newStore}
	// The tests that wait for the event feed start first and run beside
	// the rest (see waiting).
	w := waiting{t: t}
	w.Run("CreateUserInOrganization", s.createUserInOrganization)
	w.Run("Events", s.events)
	w.Run("OrganizationEvents", s.organizationEvents)
	defer w.Wait()

	t.Run("CreateUser", func(t *testing.T) { s.createUser(t); s.createUserUnique(t) })
	t.Run("GetUser", s.getUser)
	t.Run("GetUserByEmail", s.getUserByEmail)
	t.Run("GetUserByExternalID", s.getUserByExternalID)
	t.Run("UpdateUser", func(t *testing.T) { s.updateUser(t); s.updateUserUnique(t) })
	t.Run("DeleteUser", s.deleteUser)
	t.Run("ListUsers", func(t *testing.T) { runList(t, s, usersList) })
	t.Run("ListOrganizationUsers", func(t *testing.T) { runList(t, s, organizationUsersList) })

	t.Run("CreateOrganization", func(t *testing.T) { s.createOrganization(t); s.createOrganizationUnique(t) })
	t.Run("GetOrganization", s.getOrganization)
	t.Run("GetOrganizationBySlug", s.getOrganizationBySlug)
	t.Run("GetOrganizationByExternalID", s.getOrganizationByExternalID)
	t.Run("UpdateOrganization", func(t *testing.T) { s.updateOrganization(t); s.updateOrganizationUnique(t) })
	t.Run("DeleteOrganization", s.deleteOrganization)
	t.Run("ListOrganizations", func(t *testing.T) { runList(t, s, organizationsList) })

	t.Run("AddMember", s.addMember)
	t.Run("GetMember", s.getMember)
	t.Run("UpdateMember", s.updateMember)
	t.Run("RemoveMember", s.removeMember)
	t.Run("ListMembers", func(t *testing.T) { runList(t, s, membersList) })
	t.Run("ListUserMemberships", func(t *testing.T) { runList(t, s, userMembershipsList); s.userMembershipNames(t) })
	t.Run("LastOwner", s.lastOwner)

	t.Run("CreateAPIKey", s.createAPIKey)
	t.Run("GetAPIKey", s.getAPIKey)
	t.Run("GetAPIKeyByHash", s.getAPIKeyByHash)
	t.Run("UpdateAPIKey", s.updateAPIKey)
	t.Run("RotateAPIKey", s.rotateAPIKey)
	t.Run("RecordAPIKeyUse", s.recordAPIKeyUse)
	t.Run("KeyUsage", s.keyUsage)
	t.Run("KeysUsage", s.keysUsage)
	t.Run("Analytics", s.analytics)
	t.Run("KeyOwners", s.keyOwners)
	t.Run("DeleteAPIKey", s.deleteAPIKey)
	t.Run("ListAPIKeys", func(t *testing.T) { runList(t, s, apiKeysList) })

	t.Run("CreateToken", s.createToken)
	t.Run("RevokeToken", s.revokeToken)
	t.Run("RevokeTokenInline", s.revokeTokenInline)
	t.Run("TokenStatus", s.tokenStatus)
	t.Run("ListTokens", s.listTokens)
	t.Run("RevokeKeyTokens", s.revokeKeyTokens)
	t.Run("StatusLists", s.statusLists)

	t.Run("Idempotency", s.idempotency)
}

// waiting runs subtests that spend their time waiting for the event feed:
// a store may hold its newest events back (DynamoDB: EventLag, the store
// timeout plus 2 s, which the tests scale with the machine's load, so
// 12 to 42 s per wait). Each runs at once, in a goroutine of its own,
// beside every other subtest, rather than in one of go test's -parallel
// slots (GOMAXPROCS of them, 2 here), which it would hold while it
// sleeps: in two slots, the seven of them took four waits in a row on
// DynamoDB Local, and the rest of the suite waited behind them. They use
// waitingFix, not fix: a parallel subtest would pause until its parent
// returned, and the parent waits for them (Wait).
type waiting struct {
	t  *testing.T
	wg sync.WaitGroup
}

// Run starts fn as the subtest name of w.t, in a goroutine of its own.
func (w *waiting) Run(name string, fn func(t *testing.T)) {
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		w.t.Run(name, fn)
	}()
}

// Wait returns when every subtest Run started has ended.
func (w *waiting) Wait() { w.wg.Wait() }

// concurrency is how many goroutines race in the uniqueness tests.
const concurrency = 50

type suite struct {
	newStore func(t *testing.T) account.Store
}

// fixture is one subtest's store with a clock. Every item a fixture makes
// gets a later time than the one before, at millisecond precision like the
// service's clock, so "newest first" has one right answer.
type fixture struct {
	t     *testing.T
	s     account.Store
	ctx   context.Context
	opts  account.WriteOptions
	mu    sync.Mutex
	base  time.Time
	ticks int
}

// fix starts a parallel subtest with a fresh store.
func (s suite) fix(t *testing.T) *fixture {
	t.Helper()
	t.Parallel()
	return s.waitingFix(t)
}

// waitingFix is fix for a subtest that waiting runs: already beside the
// others, not parallel.
func (s suite) waitingFix(t *testing.T) *fixture {
	t.Helper()
	return &fixture{
		t:   t,
		s:   s.newStore(t),
		ctx: t.Context(),
		// Every write records its events, as an API request's does.
		opts: withSource("req-" + t.Name()),
		base: time.Now().UTC().Truncate(time.Millisecond),
	}
}

// now returns the fixture's next time, one millisecond after the last.
func (f *fixture) now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ticks++
	return f.base.Add(time.Duration(f.ticks) * time.Millisecond)
}

func (f *fixture) newUser() account.User {
	at := f.now()
	id := account.NewID(account.PrefixUser, at)
	// Every user has an external id and metadata, so that every test
	// checks they round-trip; tests of their absence remove them.
	return account.User{
		ID:         id,
		Email:      strings.ToLower(id) + "@example.com",
		Name:       "Ada Lovelace ✓",
		Role:       "member",
		ExternalID: "crm:" + id,
		Metadata:   account.Metadata{"source": "storetest", "ключ": "значение ✓"},
		CreatedAt:  at,
		UpdatedAt:  at,
	}
}

func (f *fixture) user() account.User {
	f.t.Helper()
	u := f.newUser()
	f.ok(f.s.CreateUser(f.ctx, f.opts, u), "CreateUser")
	return u
}

func (f *fixture) newOrg() account.Organization {
	at := f.now()
	id := account.NewID(account.PrefixOrganization, at)
	return account.Organization{
		ID:         id,
		Name:       "Analytical Engines Ltd",
		Slug:       "org-" + strings.ToLower(id[len(id)-12:]),
		Plan:       "pro",
		ExternalID: "acct " + id,
		Metadata:   account.Metadata{"region": "eu-west-1"},
		CreatedAt:  at,
		UpdatedAt:  at,
	}
}

func (f *fixture) org() account.Organization {
	f.t.Helper()
	o := f.newOrg()
	f.ok(f.s.CreateOrganization(f.ctx, f.opts, o), "CreateOrganization")
	return o
}

func (f *fixture) member(orgID, userID string) account.Membership {
	f.t.Helper()
	at := f.now()
	m := account.Membership{OrganizationID: orgID, UserID: userID, Role: "admin", CreatedAt: at, UpdatedAt: at}
	f.ok(f.s.AddMember(f.ctx, f.opts, m), "AddMember")
	return m
}

func (f *fixture) newKey() account.APIKey {
	at := f.now()
	id := account.NewID(account.PrefixAPIKey, at)
	secret := account.NewAPIKeySecret()
	return account.APIKey{
		ID:        id,
		Name:      "ci deploys",
		Hash:      account.HashAPIKey(secret),
		Last4:     secret[len(secret)-4:],
		Scopes:    []string{"read:users", "write:*", "*:*"},
		CreatedBy: account.NewID(account.PrefixAPIKey, at),
		Metadata:  account.Metadata{"team": "billing", "région": "eu-west ✓"},
		CreatedAt: at,
		ExpiresAt: at.Add(90 * 24 * time.Hour),
	}
}

func (f *fixture) key() account.APIKey {
	f.t.Helper()
	k := f.newKey()
	f.ok(f.s.CreateAPIKey(f.ctx, f.opts, k), "CreateAPIKey")
	return k
}

// newChildKey returns a new key created by parent, below it.
func (f *fixture) newChildKey(parent account.APIKey) account.APIKey {
	k := f.newKey()
	k.CreatedBy = parent.ID
	k.Ancestors = append(slices.Clip(parent.Ancestors), parent.ID)
	return k
}

// childKey stores a new key created by parent, below it.
func (f *fixture) childKey(parent account.APIKey) account.APIKey {
	f.t.Helper()
	k := f.newChildKey(parent)
	f.ok(f.s.CreateAPIKey(f.ctx, f.opts, k), "CreateAPIKey below a key")
	return k
}

func (f *fixture) token(keyID string) account.TokenRecord {
	f.t.Helper()
	at := f.now()
	tr := account.TokenRecord{
		ID:        account.NewID(account.PrefixToken, at),
		KeyID:     keyID,
		Scopes:    []string{"read:users"},
		Audience:  "https://api.example.com",
		IssuedAt:  at,
		ExpiresAt: at.Add(time.Hour),
	}
	f.ok(f.s.CreateToken(f.ctx, f.opts, tr), "CreateToken")
	return tr
}

// ok fails the test at once if err is not nil.
func (f *fixture) ok(err error, op string) {
	f.t.Helper()
	if err != nil {
		f.t.Fatalf("%s: %v", op, err)
	}
}

// wantErr fails the test at once unless err is want: the domain's error
// (account.ErrUserNotFound() and the like), code and message, so that a
// client reads the same detail whichever store answers.
func wantErr(tb testing.TB, op string, err error, want *account.Error) {
	tb.Helper()
	if !isErr(err, want) {
		tb.Fatalf("%s: got error %v (code %q), want %q (code %q)", op, err, account.ErrorCode(err), want.Message, want.Code)
	}
}

// isErr reports whether err carries want's code and message.
func isErr(err error, want *account.Error) bool {
	var e *account.Error
	return errors.As(err, &e) && e.Code == want.Code && e.Message == want.Message
}

// assertSame fails unless got and want agree field by field: times with
// time.Time.Equal (a store may return another location or drop the
// monotonic reading), slices by content (nil and empty are the same).
func assertSame[T any](tb testing.TB, what string, got, want T) {
	tb.Helper()
	if d := diff(got, want); d != "" {
		tb.Errorf("%s differs from what was stored:%s", what, d)
	}
}

func diff(got, want any) string {
	gv, wv := reflect.ValueOf(got), reflect.ValueOf(want)
	var b strings.Builder
	for i := range wv.NumField() {
		g, w := gv.Field(i).Interface(), wv.Field(i).Interface()
		if !fieldEqual(g, w) {
			fmt.Fprintf(&b, "\n\t%s: got %v, want %v", wv.Type().Field(i).Name, g, w)
		}
	}
	return b.String()
}

func fieldEqual(got, want any) bool {
	switch w := want.(type) {
	case time.Time:
		return got.(time.Time).Equal(w)
	case []byte:
		return bytes.Equal(got.([]byte), w)
	case []string:
		return slices.Equal(got.([]string), w)
	case account.Metadata:
		return maps.Equal(got.(account.Metadata), w)
	case account.Membership: // embedded in account.UserMembership
		return diff(got, w) == ""
	case []account.RateLimit:
		return slices.Equal(got.([]account.RateLimit), w)
	case []account.KeyLimits:
		return slices.EqualFunc(got.([]account.KeyLimits), w, func(g, w account.KeyLimits) bool { return diff(g, w) == "" })
	case *account.Credits:
		g := got.(*account.Credits)
		if g == nil || w == nil {
			return g == nil && w == nil
		}
		return g.Remaining == w.Remaining && g.Set == w.Set && g.SetAt.Equal(w.SetAt) && reflect.DeepEqual(g.Refill, w.Refill)
	}
	return got == want
}

// race runs fn in n goroutines released at once and returns their errors.
func race(n int, fn func(i int) error) []error {
	errs := make([]error, n)
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	ready.Add(n)
	done.Add(n)
	for i := range n {
		go func() {
			defer done.Done()
			ready.Done()
			<-start
			errs[i] = fn(i)
		}()
	}
	ready.Wait()
	close(start)
	done.Wait()
	return errs
}

// wantOneWinner checks that exactly one error is nil and all others are
// want.
func wantOneWinner(tb testing.TB, op string, errs []error, want *account.Error) int {
	tb.Helper()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			tb.Errorf("%s: calls %d and %d both succeeded", op, winner, i)
		case err == nil:
			winner = i
		case !isErr(err, want):
			tb.Errorf("%s: call %d: got error %v, want %q (code %q)", op, i, err, want.Message, want.Code)
		}
	}
	if winner < 0 {
		tb.Fatalf("%s: no call succeeded", op)
	}
	return winner
}

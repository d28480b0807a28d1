package dynamostore_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"

	"latchkey/pkg/account"
	"latchkey/pkg/dynamostore"
	"latchkey/pkg/dynamostore/dynamotest"
)

// failNth makes the nth call of operation op fail before it is sent, as if
// the process had died or the network had failed at that point; or, with
// run set, runs run just before the call is sent instead.
type failNth struct {
	op    string
	n     int64
	run   func()
	calls atomic.Int64
}

var errInjected = errors.New("injected failure")

func (f *failNth) option(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
		return st.Initialize.Add(middleware.InitializeMiddlewareFunc("latchkey-fail-nth",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				if awsmiddleware.GetOperationName(ctx) == f.op && f.calls.Add(1) == f.n {
					if f.run == nil {
						return middleware.InitializeOutput{}, middleware.Metadata{}, errInjected
					}
					f.run()
				}
				return next.HandleInitialize(ctx, in)
			}), middleware.Before)
	})
}

// cascadeFixture is a store whose TransactWriteItems can be made to fail,
// with a clock for distinct creation times.
type cascadeFixture struct {
	t    *testing.T
	s    *dynamostore.Store
	fail *failNth
	now  time.Time
}

func newCascadeFixture(t *testing.T) *cascadeFixture {
	fail := &failNth{op: "TransactWriteItems"}
	client := dynamotest.NewClient(t, fail.option)
	return &cascadeFixture{t: t, s: dynamostore.New(client, dynamotest.NewTable(t, client)), fail: fail, now: time.Now().UTC().Truncate(time.Millisecond)}
}

func (f *cascadeFixture) tick() time.Time { f.now = f.now.Add(time.Millisecond); return f.now }

// failTransaction makes the nth TransactWriteItems from now fail.
func (f *cascadeFixture) failTransaction(n int64) { f.fail.n = f.fail.calls.Load() + n }

// userWithMemberships creates a user who is a member of n new organizations.
func (f *cascadeFixture) userWithMemberships(n int) (account.User, []account.Organization) {
	f.t.Helper()
	ctx := f.t.Context()
	u := newUser(f.tick())
	must(f.t, f.s.CreateUser(ctx, u), "CreateUser")
	orgs := make([]account.Organization, n)
	for i := range orgs {
		orgs[i] = newOrg(f.tick())
		must(f.t, f.s.CreateOrganization(ctx, orgs[i]), "CreateOrganization")
		at := f.tick()
		must(f.t, f.s.AddMember(ctx, account.Membership{OrganizationID: orgs[i].ID, UserID: u.ID, Role: "member", CreatedAt: at, UpdatedAt: at}), "AddMember")
	}
	return u, orgs
}

// orgWithMembers creates an organization with n new members.
func (f *cascadeFixture) orgWithMembers(n int) (account.Organization, []account.User) {
	f.t.Helper()
	ctx := f.t.Context()
	o := newOrg(f.tick())
	must(f.t, f.s.CreateOrganization(ctx, o), "CreateOrganization")
	users := make([]account.User, n)
	for i := range users {
		users[i] = newUser(f.tick())
		must(f.t, f.s.CreateUser(ctx, users[i]), "CreateUser")
		at := f.tick()
		must(f.t, f.s.AddMember(ctx, account.Membership{OrganizationID: o.ID, UserID: users[i].ID, Role: "member", CreatedAt: at, UpdatedAt: at}), "AddMember")
	}
	return o, users
}

// sides counts, with strongly consistent reads, the membership items left
// in a user's partition and in the organizations' partitions for that user.
func (f *cascadeFixture) sides(userID string, orgs []account.Organization) (userSide, orgSide int) {
	f.t.Helper()
	ctx := f.t.Context()
	ids, err := f.s.UserMembershipSides(ctx, userID)
	must(f.t, err, "UserMembershipSides")
	for _, o := range orgs {
		members, err := f.s.OrgMembershipSides(ctx, o.ID)
		must(f.t, err, "OrgMembershipSides")
		if slices.Contains(members, userID) {
			orgSide++
		}
	}
	return len(ids), orgSide
}

// TestDeleteUser_BeyondOneTransaction deletes a user with 120 memberships
// (242 items: three transactions), first with a failure injected into the
// second transaction, then again. In between, the user is gone to readers
// and writers, and every membership has both sides or neither. The retry removes the
// rest, checked with strongly consistent reads of both sides.
func TestDeleteUser_BeyondOneTransaction(t *testing.T) {
	f := newCascadeFixture(t)
	ctx := t.Context()
	u, orgs := f.userWithMemberships(120)

	// Chunks: 50 memberships (100 items), 50, then the last 20 with the user
	// and its guard. The second chunk fails.
	f.failTransaction(2)
	if err := f.s.DeleteUser(ctx, u.ID); !errors.Is(err, errInjected) {
		t.Fatalf("DeleteUser with a failing transaction: got %v, want the injected failure", err)
	}
	if userSide, orgSide := f.sides(u.ID, orgs); userSide != 70 || orgSide != 70 {
		t.Fatalf("after the first chunk: %d user-side and %d organization-side memberships, want 70 and 70", userSide, orgSide)
	}
	if _, err := f.s.GetUser(ctx, u.ID); !account.IsCode(err, account.CodeNotFound) {
		t.Errorf("GetUser of a user being deleted: got %v, want not_found", err)
	}
	if _, err := f.s.GetUserByEmail(ctx, u.Email); !account.IsCode(err, account.CodeNotFound) {
		t.Errorf("GetUserByEmail of a user being deleted: got %v, want not_found", err)
	}
	page, err := f.s.ListUsers(ctx, account.ListParams{Limit: 100})
	must(t, err, "ListUsers")
	for _, got := range page.Items {
		if got.ID == u.ID {
			t.Error("ListUsers shows a user being deleted")
		}
	}
	at := f.tick()
	late := account.Membership{OrganizationID: orgs[0].ID, UserID: u.ID, Role: "member", CreatedAt: at, UpdatedAt: at}
	if err := f.s.AddMember(ctx, late); !account.IsCode(err, account.CodeNotFound) {
		t.Errorf("AddMember to a user being deleted: got %v, want not_found", err)
	}
	// UpdateItem would otherwise succeed on an item the retry is about to remove.
	name := "Late Rename"
	if _, err := f.s.UpdateUser(ctx, u.ID, account.UserPatch{Name: &name, UpdatedAt: f.tick()}); !account.IsCode(err, account.CodeNotFound) {
		t.Errorf("UpdateUser of a user being deleted: got %v, want not_found", err)
	}

	must(t, f.s.DeleteUser(ctx, u.ID), "DeleteUser (retry)")
	if userSide, orgSide := f.sides(u.ID, orgs); userSide != 0 || orgSide != 0 {
		t.Errorf("after the retry: %d user-side and %d organization-side memberships left, want none", userSide, orgSide)
	}
	if err := f.s.DeleteUser(ctx, u.ID); !account.IsCode(err, account.CodeNotFound) {
		t.Errorf("DeleteUser after the retry: got %v, want not_found", err)
	}
	other := newUser(f.tick())
	other.Email = u.Email
	must(t, f.s.CreateUser(ctx, other), "CreateUser with the freed e-mail")
}

// TestDeleteUser_FinishedByNextClaim: a delete cut off before its final
// transaction is never retried by its client. The next user to claim the
// e-mail finishes it and gets the e-mail; the old user and every one of its
// memberships are gone.
func TestDeleteUser_FinishedByNextClaim(t *testing.T) {
	f := newCascadeFixture(t)
	ctx := t.Context()
	u, orgs := f.userWithMemberships(60)
	f.failTransaction(2) // 60 memberships: one chunk of 50, then the final transaction
	if err := f.s.DeleteUser(ctx, u.ID); !errors.Is(err, errInjected) {
		t.Fatalf("DeleteUser with a failing final transaction: got %v, want the injected failure", err)
	}

	next := newUser(f.tick())
	next.Email = u.Email
	must(t, f.s.CreateUser(ctx, next), "CreateUser with the e-mail of an abandoned delete")
	if got, err := f.s.GetUserByEmail(ctx, u.Email); err != nil || got.ID != next.ID {
		t.Fatalf("GetUserByEmail: got %+v, %v; want the new user %s", got, err, next.ID)
	}
	if userSide, orgSide := f.sides(u.ID, orgs); userSide != 0 || orgSide != 0 {
		t.Errorf("old user: %d user-side and %d organization-side memberships left, want none", userSide, orgSide)
	}
	if err := f.s.DeleteUser(ctx, u.ID); !account.IsCode(err, account.CodeNotFound) {
		t.Errorf("DeleteUser of the old user: got %v, want not_found (finished by the claim)", err)
	}

	// A live holder is a plain conflict: nothing is deleted.
	again := newUser(f.tick())
	again.Email = u.Email
	if err := f.s.CreateUser(ctx, again); !account.IsCode(err, account.CodeEmailTaken) {
		t.Fatalf("CreateUser with a live user's e-mail: got %v, want email_taken", err)
	}
	if _, err := f.s.GetUser(ctx, next.ID); err != nil {
		t.Errorf("the live holder after a refused claim: %v", err)
	}
}

// TestDeleteOrganization_BeyondOneTransaction: the same for an organization
// with 60 members (122 items), whose final transaction fails; the next
// organization to claim the slug finishes the delete.
func TestDeleteOrganization_BeyondOneTransaction(t *testing.T) {
	f := newCascadeFixture(t)
	ctx := t.Context()
	o, users := f.orgWithMembers(60)
	f.failTransaction(2)
	if err := f.s.DeleteOrganization(ctx, o.ID); !errors.Is(err, errInjected) {
		t.Fatalf("DeleteOrganization with a failing final transaction: got %v, want the injected failure", err)
	}
	if _, err := f.s.GetOrganization(ctx, o.ID); !account.IsCode(err, account.CodeNotFound) {
		t.Errorf("GetOrganization of an organization being deleted: got %v, want not_found", err)
	}
	left, err := f.s.OrgMembershipSides(ctx, o.ID)
	must(t, err, "OrgMembershipSides")
	if len(left) != 10 {
		t.Fatalf("after the first chunk: %d members left, want 10", len(left))
	}

	next := newOrg(f.tick())
	next.Slug = o.Slug
	must(t, f.s.CreateOrganization(ctx, next), "CreateOrganization with the slug of an abandoned delete")
	for _, u := range users {
		if userSide, orgSide := f.sides(u.ID, []account.Organization{o}); userSide != 0 || orgSide != 0 {
			t.Fatalf("member %s: %d user-side and %d organization-side memberships left, want none", u.ID, userSide, orgSide)
		}
	}
	if err := f.s.DeleteOrganization(ctx, o.ID); !account.IsCode(err, account.CodeNotFound) {
		t.Errorf("DeleteOrganization of the old organization: got %v, want not_found", err)
	}
}

// keyTree creates a key created by a bootstrap key (no ancestors) with 76
// keys below it, the shape of storetest's Large tree: 40 children, 30
// grandchildren below the first child, and a chain 6 deep below the second,
// and a token for each key.
func (f *cascadeFixture) keyTree() (root account.APIKey, below []account.APIKey, tokens map[string]account.TokenRecord) {
	f.t.Helper()
	ctx := f.t.Context()
	tokens = map[string]account.TokenRecord{}
	add := func(parent *account.APIKey) account.APIKey {
		f.t.Helper()
		k := newKey(f.tick())
		if parent != nil {
			k.CreatedBy = parent.ID
			k.Ancestors = append(slices.Clip(parent.Ancestors), parent.ID)
		}
		must(f.t, f.s.CreateAPIKey(ctx, k), "CreateAPIKey")
		at := f.tick()
		tokens[k.ID] = account.TokenRecord{ID: account.NewID(account.PrefixToken, at), KeyID: k.ID, Scopes: []string{"read:users"}, IssuedAt: at, ExpiresAt: at.Add(time.Hour)}
		must(f.t, f.s.CreateToken(ctx, tokens[k.ID]), "CreateToken")
		return k
	}
	root = add(nil)
	for range 40 {
		below = append(below, add(&root))
	}
	first, deep := below[0], below[1]
	for range 30 {
		below = append(below, add(&first))
	}
	for range 6 {
		deep = add(&deep)
		below = append(below, deep)
	}
	return root, below, tokens
}

// wantKeysGone checks that every key is gone to readers: not found by ID
// or by hash, its token's status without a key (with the ancestors named
// and without), and not listed.
func (f *cascadeFixture) wantKeysGone(what string, keys []account.APIKey, tokens map[string]account.TokenRecord) {
	f.t.Helper()
	ctx := f.t.Context()
	for _, k := range keys {
		if _, err := f.s.GetAPIKey(ctx, k.ID); !account.IsCode(err, account.CodeNotFound) {
			f.t.Fatalf("%s: GetAPIKey %s: got %v, want not_found", what, k.ID, err)
		}
		if _, err := f.s.GetAPIKeyByHash(ctx, k.Hash); !account.IsCode(err, account.CodeNotFound) {
			f.t.Fatalf("%s: GetAPIKeyByHash %s: got %v, want not_found", what, k.ID, err)
		}
		for _, hint := range [][]string{k.Ancestors, nil} {
			st, err := f.s.TokenStatus(ctx, tokens[k.ID].ID, k.ID, hint)
			must(f.t, err, "TokenStatus")
			if st.Key != nil {
				f.t.Fatalf("%s: TokenStatus of a token of %s (hint %v): got the key, want nil", what, k.ID, hint)
			}
		}
	}
}

// itemsLeft counts the items of keys left in the table.
func (f *cascadeFixture) itemsLeft(keys []account.APIKey) int {
	f.t.Helper()
	n := 0
	for _, k := range keys {
		c, err := f.s.APIKeyItems(f.t.Context(), k)
		must(f.t, err, "APIKeyItems")
		n += c
	}
	return n
}

// TestDeleteAPIKey_BeyondOneTransaction deletes a tree of 77 keys (228
// items): the root is flagged, then 33 keys go per transaction, the root
// with the last 10. The second of those transactions fails. In between, the
// whole tree is gone to readers, tokens included, and no key can be created
// below the root; the retry removes every item that is left.
func TestDeleteAPIKey_BeyondOneTransaction(t *testing.T) {
	f := newCascadeFixture(t)
	ctx := t.Context()
	root, below, tokens := f.keyTree()
	other := newKey(f.tick())
	must(t, f.s.CreateAPIKey(ctx, other), "CreateAPIKey")
	all := append([]account.APIKey{root}, below...)
	itemsBefore := f.itemsLeft(all)
	if want := 2 + 3*len(below); itemsBefore != want {
		t.Fatalf("fixture: %d items, want %d", itemsBefore, want)
	}

	// Transactions: the flag, 33 keys, 33 keys, then the root and 10 keys.
	f.failTransaction(3)
	if err := f.s.DeleteAPIKey(ctx, root.ID, nil); !errors.Is(err, errInjected) {
		t.Fatalf("DeleteAPIKey with a failing transaction: got %v, want the injected failure", err)
	}
	if left, want := f.itemsLeft(all), itemsBefore-3*dynamostore.MaxTreeKeys; left != want {
		t.Fatalf("after the first chunk: %d items left, want %d", left, want)
	}
	f.wantKeysGone("after the failure", all, tokens)
	page, err := f.s.ListAPIKeys(ctx, account.ListParams{Limit: 100})
	must(t, err, "ListAPIKeys")
	for _, k := range page.Items {
		if k.ID == root.ID {
			t.Error("ListAPIKeys shows the root of a tree being deleted")
		}
	}
	late := newKey(f.tick())
	late.CreatedBy, late.Ancestors = root.ID, []string{root.ID}
	if err := f.s.CreateAPIKey(ctx, late); !account.IsCode(err, account.CodeNotFound) {
		t.Errorf("CreateAPIKey below a root being deleted: got %v, want not_found", err)
	}
	if _, err := f.s.GetAPIKeyByHash(ctx, other.Hash); err != nil {
		t.Errorf("a key of another tree: %v", err)
	}

	// The retry sees the root, flagged, as it was: the service's checks
	// apply to it as to any key.
	var seen []account.APIKey
	must(t, f.s.DeleteAPIKey(ctx, root.ID, func(k account.APIKey) error { seen = append(seen, k); return nil }), "DeleteAPIKey (retry)")
	if len(seen) == 0 || seen[0].ID != root.ID || !slices.Equal(seen[0].Scopes, root.Scopes) {
		t.Errorf("allow saw %+v, want the root", seen)
	}
	if left := f.itemsLeft(all); left != 0 {
		t.Errorf("after the retry: %d items left, want none", left)
	}
	if err := f.s.DeleteAPIKey(ctx, root.ID, nil); !account.IsCode(err, account.CodeNotFound) {
		t.Errorf("DeleteAPIKey after the retry: got %v, want not_found", err)
	}
	if _, err := f.s.GetAPIKeyByHash(ctx, other.Hash); err != nil {
		t.Errorf("a key of another tree after the retry: %v", err)
	}
}

// TestDeleteAPIKey_FlagFails: the first transaction of a large delete, the
// one that flags the root, fails: nothing has changed, and a retry deletes
// the tree.
func TestDeleteAPIKey_FlagFails(t *testing.T) {
	f := newCascadeFixture(t)
	ctx := t.Context()
	root, below, tokens := f.keyTree()
	all := append([]account.APIKey{root}, below...)
	f.failTransaction(1)
	if err := f.s.DeleteAPIKey(ctx, root.ID, nil); !errors.Is(err, errInjected) {
		t.Fatalf("DeleteAPIKey with a failing flag: got %v, want the injected failure", err)
	}
	for _, k := range all {
		got, err := f.s.GetAPIKeyByHash(ctx, k.Hash)
		if err != nil || got.ID != k.ID {
			t.Fatalf("GetAPIKeyByHash %s after a failed flag: got %+v, %v; want the key", k.ID, got, err)
		}
	}
	must(t, f.s.DeleteAPIKey(ctx, root.ID, nil), "DeleteAPIKey (retry)")
	f.wantKeysGone("after the retry", all, tokens)
	if left := f.itemsLeft(all); left != 0 {
		t.Errorf("after the retry: %d items left, want none", left)
	}
}

// TestDeleteAPIKey_KeyCreatedDuringDelete: a key is created below the tree
// after the delete has read it and before its transaction: the transaction
// fails on the parent's count of children, the delete reads the tree again
// and deletes the new key too.
func TestDeleteAPIKey_KeyCreatedDuringDelete(t *testing.T) {
	f := newCascadeFixture(t)
	ctx := t.Context()
	root := newKey(f.tick())
	must(t, f.s.CreateAPIKey(ctx, root), "CreateAPIKey")
	child := newKey(f.tick())
	child.CreatedBy, child.Ancestors = root.ID, []string{root.ID}
	must(t, f.s.CreateAPIKey(ctx, child), "CreateAPIKey")
	late := newKey(f.tick())
	late.CreatedBy, late.Ancestors = child.ID, []string{root.ID, child.ID}
	var lateErr error
	f.fail.run = func() { lateErr = f.s.CreateAPIKey(ctx, late) }
	f.failTransaction(1)
	must(t, f.s.DeleteAPIKey(ctx, root.ID, nil), "DeleteAPIKey")
	must(t, lateErr, "CreateAPIKey during the delete")
	// The create, the delete's first transaction (cancelled), its second.
	if got := f.fail.calls.Load(); got != 5 {
		t.Errorf("%d TransactWriteItems in all, want 5 (2 before the delete, 3 during)", got)
	}
	if left := f.itemsLeft([]account.APIKey{root, child, late}); left != 0 {
		t.Errorf("%d items left, want none", left)
	}
}

// fakeDynamoDB answers every request with one canned response.
type fakeDynamoDB struct {
	status int
	body   string
	calls  atomic.Int64
}

func (f *fakeDynamoDB) Do(r *http.Request) (*http.Response, error) {
	f.calls.Add(1)
	return &http.Response{
		StatusCode: f.status,
		Header:     http.Header{"Content-Type": []string{"application/x-amz-json-1.0"}},
		Body:       io.NopCloser(strings.NewReader(f.body)),
		Request:    r,
	}, nil
}

// TestErrorMapping needs no DynamoDB Local: it feeds the store DynamoDB's
// error responses and checks the domain codes, and that no AWS message
// reaches the client-visible message.
func TestErrorMapping(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		body   string
		want   account.Code
	}{
		{"Throttled", 400, `{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException","message":"secret AWS detail"}`, account.CodeUnavailable},
		{"ThrottlingException", 400, `{"__type":"com.amazon.coral.availability#ThrottlingException","message":"secret AWS detail"}`, account.CodeUnavailable},
		{"RequestLimitExceeded", 400, `{"__type":"com.amazonaws.dynamodb.v20120810#RequestLimitExceeded","message":"secret AWS detail"}`, account.CodeUnavailable},
		{"InternalServerError", 500, `{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"secret AWS detail"}`, account.CodeUnavailable},
		{"ServiceUnavailable", 503, `{"message":"secret AWS detail"}`, account.CodeUnavailable},
		{"Validation", 400, `{"__type":"com.amazon.coral.validate#ValidationException","message":"secret AWS detail"}`, account.CodeInternal},
		{"TableMissing", 400, `{"__type":"com.amazonaws.dynamodb.v20120810#ResourceNotFoundException","message":"secret AWS detail"}`, account.CodeUnavailable},
		{"ThrottledTransaction", 400, `{"__type":"com.amazonaws.dynamodb.v20120810#TransactionCanceledException","message":"secret AWS detail","CancellationReasons":[{"Code":"None"},{"Code":"ThrottlingError","Message":"secret AWS detail"}]}`, account.CodeUnavailable},
		{"EmailTaken", 400, `{"__type":"com.amazonaws.dynamodb.v20120810#TransactionCanceledException","message":"secret AWS detail","CancellationReasons":[{"Code":"None"},{"Code":"ConditionalCheckFailed","Message":"secret AWS detail"}]}`, account.CodeEmailTaken},
		{"UserIDCollision", 400, `{"__type":"com.amazonaws.dynamodb.v20120810#TransactionCanceledException","message":"secret AWS detail","CancellationReasons":[{"Code":"ConditionalCheckFailed"},{"Code":"None"}]}`, account.CodeInternal},
		{"ConflictEveryTime", 400, `{"__type":"com.amazonaws.dynamodb.v20120810#TransactionCanceledException","message":"secret AWS detail","CancellationReasons":[{"Code":"TransactionConflict"},{"Code":"None"}]}`, account.CodeUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := &fakeDynamoDB{status: tc.status, body: tc.body}
			client := dynamodb.New(dynamodb.Options{
				Region:           "us-east-1",
				BaseEndpoint:     aws.String("http://127.0.0.1:1"),
				Credentials:      credentials.NewStaticCredentialsProvider("fake", "fake", ""),
				HTTPClient:       fake,
				RetryMaxAttempts: 1, // the SDK's retries are the SDK's business
			})
			s := dynamostore.New(client, "latchkey", dynamostore.WithConflictRetries(2))
			now := time.Now().UTC()
			err := s.CreateUser(t.Context(), newUser(now))
			if got := account.ErrorCode(err); got != tc.want {
				t.Fatalf("CreateUser: got code %q (%v), want %q", got, err, tc.want)
			}
			var e *account.Error
			if !errors.As(err, &e) || strings.Contains(e.Message, "secret") {
				t.Errorf("client-visible message %q leaks the AWS message", e.Message)
			}
			if tc.name == "ConflictEveryTime" && fake.calls.Load() != 3 {
				t.Errorf("conflicting transaction sent %d times, want 1 + 2 retries", fake.calls.Load())
			}
		})
	}
}

// TestErrorMapping_SingleItemConflict: a single-item write refused because a
// transaction in progress holds its item (TransactionConflictException,
// which the SDK does not retry) is retried by the store and, if the conflict
// persists, reported as unavailable (503), never as an internal error.
func TestErrorMapping_SingleItemConflict(t *testing.T) {
	const body = `{"__type":"com.amazonaws.dynamodb.v20120810#TransactionConflictException","message":"secret AWS detail"}`
	now := time.Now().UTC()
	name := "Ada"
	for _, tc := range []struct {
		name  string
		write func(s *dynamostore.Store) error
	}{
		{"UpdateUser", func(s *dynamostore.Store) error {
			_, err := s.UpdateUser(t.Context(), newUser(now).ID, account.UserPatch{Name: &name, UpdatedAt: now})
			return err
		}},
		{"RevokeToken", func(s *dynamostore.Store) error {
			_, err := s.RevokeToken(t.Context(), account.Revocation{TokenID: "tok_x", KeyID: "key_x", RevokedAt: now, ExpiresAt: now.Add(time.Hour)})
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := &fakeDynamoDB{status: 400, body: body}
			client := dynamodb.New(dynamodb.Options{
				Region:           "us-east-1",
				BaseEndpoint:     aws.String("http://127.0.0.1:1"),
				Credentials:      credentials.NewStaticCredentialsProvider("fake", "fake", ""),
				HTTPClient:       fake,
				RetryMaxAttempts: 1,
			})
			err := tc.write(dynamostore.New(client, "latchkey", dynamostore.WithConflictRetries(2)))
			if got := account.ErrorCode(err); got != account.CodeUnavailable {
				t.Fatalf("got code %q (%v), want unavailable", got, err)
			}
			if got := fake.calls.Load(); got != 3 {
				t.Errorf("write sent %d times, want 1 + 2 retries", got)
			}
		})
	}
}

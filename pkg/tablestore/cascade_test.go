package tablestore_test

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
	"latchkey/pkg/tablestore"
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
	s    *tablestore.Store
	fail *failNth
	now  time.Time
}

func newCascadeFixture(t *testing.T) *cascadeFixture {
	fail := &failNth{op: "TransactWriteItems"}
	client := dynamotest.NewClient(t, fail.option)
	return &cascadeFixture{t: t, s: dynamostore.New(client, dynamotest.NewTable(t, client), dynamostore.WithTimeout(dynamotest.Timeout)), fail: fail, now: time.Now().UTC().Truncate(time.Millisecond)}
}

func (f *cascadeFixture) tick() time.Time { f.now = f.now.Add(time.Millisecond); return f.now }

// failTransaction makes the nth TransactWriteItems from now fail.
func (f *cascadeFixture) failTransaction(n int64) { f.fail.n = f.fail.calls.Load() + n }

// ownerKind is a kind of item whose delete cascades to its memberships and
// frees its unique value: a user (its e-mail) or an organization (its
// slug). The cascade tests run over both kinds.
type ownerKind struct {
	name   string // "User" or "Organization", as in the Store's method names
	unique string // "e-mail" or "slug"
	taken  account.Code
	// create stores a new item, with the given unique value unless it is
	// "", and returns its ID and unique value.
	create func(f *cascadeFixture, unique string) (id, value string, err error)
	// other stores an item of the other side of a membership and returns
	// its ID; pair orders an item's ID and another's as (org, user).
	other  func(f *cascadeFixture) string
	pair   func(id, otherID string) (orgID, userID string)
	get    func(s *tablestore.Store, ctx context.Context, id string) error
	rename func(s *tablestore.Store, ctx context.Context, id string, at time.Time) error
	del    func(s *tablestore.Store, ctx context.Context, opts account.WriteOptions, id string) error
	// listed reports whether the kind's list shows the item.
	listed func(s *tablestore.Store, ctx context.Context, id string) (bool, error)
	// byUnique returns the ID of the item that holds a unique value; nil
	// for a kind that has no such read (organizations).
	byUnique func(s *tablestore.Store, ctx context.Context, value string) (string, error)
	// sides and otherSides return the IDs on the other side of the
	// membership items in the partition of an item of this kind, or of
	// the other side.
	sides      func(s *tablestore.Store, ctx context.Context, id string) ([]string, error)
	otherSides func(s *tablestore.Store, ctx context.Context, otherID string) ([]string, error)
	// flags is how many transactions a delete makes before its chunks:
	// an organization's flag goes to its read copies too.
	flags int64
}

var userKind = ownerKind{
	name: "User", unique: "e-mail", taken: account.CodeEmailTaken,
	create: func(f *cascadeFixture, email string) (string, string, error) {
		u := newUser(f.tick())
		if email != "" {
			u.Email = email
		}
		return u.ID, u.Email, f.s.CreateUser(f.t.Context(), account.WriteOptions{}, u)
	},
	other: func(f *cascadeFixture) string {
		o := newOrg(f.tick())
		must(f.t, f.s.CreateOrganization(f.t.Context(), account.WriteOptions{}, o), "CreateOrganization")
		return o.ID
	},
	pair: func(id, orgID string) (string, string) { return orgID, id },
	get: func(s *tablestore.Store, ctx context.Context, id string) error {
		_, err := s.GetUser(ctx, id)
		return err
	},
	rename: func(s *tablestore.Store, ctx context.Context, id string, at time.Time) error {
		name := "Late Rename"
		_, err := s.UpdateUser(ctx, account.WriteOptions{}, id, account.UserPatch{Name: &name, UpdatedAt: at})
		return err
	},
	del: (*tablestore.Store).DeleteUser,
	listed: func(s *tablestore.Store, ctx context.Context, id string) (bool, error) {
		page, err := s.ListUsers(ctx, account.ListParams{Limit: 100})
		return slices.ContainsFunc(page.Items, func(u account.User) bool { return u.ID == id }), err
	},
	byUnique: func(s *tablestore.Store, ctx context.Context, email string) (string, error) {
		u, err := s.GetUserByEmail(ctx, email)
		return u.ID, err
	},
	sides:      (*tablestore.Store).UserMembershipSides,
	otherSides: (*tablestore.Store).OrgMembershipSides,
}

var orgKind = ownerKind{
	name: "Organization", unique: "slug", taken: account.CodeSlugTaken, flags: 1,
	create: func(f *cascadeFixture, slug string) (string, string, error) {
		o := newOrg(f.tick())
		if slug != "" {
			o.Slug = slug
		}
		return o.ID, o.Slug, f.s.CreateOrganization(f.t.Context(), account.WriteOptions{}, o)
	},
	other: func(f *cascadeFixture) string {
		u := newUser(f.tick())
		must(f.t, f.s.CreateUser(f.t.Context(), account.WriteOptions{}, u), "CreateUser")
		return u.ID
	},
	pair: func(id, userID string) (string, string) { return id, userID },
	get: func(s *tablestore.Store, ctx context.Context, id string) error {
		_, err := s.GetOrganization(ctx, id)
		return err
	},
	rename: func(s *tablestore.Store, ctx context.Context, id string, at time.Time) error {
		name := "Late Rename"
		_, err := s.UpdateOrganization(ctx, account.WriteOptions{}, id, account.OrganizationPatch{Name: &name, UpdatedAt: at})
		return err
	},
	del: (*tablestore.Store).DeleteOrganization,
	listed: func(s *tablestore.Store, ctx context.Context, id string) (bool, error) {
		page, err := s.ListOrganizations(ctx, account.ListParams{Limit: 100})
		return slices.ContainsFunc(page.Items, func(o account.Organization) bool { return o.ID == id }), err
	},
	sides:      (*tablestore.Store).OrgMembershipSides,
	otherSides: (*tablestore.Store).UserMembershipSides,
}

// withMemberships stores an item of kind k with memberships of n new items
// of the other side, and returns its ID, its unique value and the others'
// IDs.
func (f *cascadeFixture) withMemberships(k ownerKind, n int) (id, value string, others []string) {
	f.t.Helper()
	ctx := f.t.Context()
	id, value, err := k.create(f, "")
	must(f.t, err, "Create"+k.name)
	others = make([]string, n)
	for i := range others {
		others[i] = k.other(f)
		orgID, userID := k.pair(id, others[i])
		at := f.tick()
		must(f.t, f.s.AddMember(ctx, account.WriteOptions{}, account.Membership{OrganizationID: orgID, UserID: userID, Role: "member", CreatedAt: at, UpdatedAt: at}), "AddMember")
	}
	return id, value, others
}

// sides counts, with strongly consistent reads, the membership items left
// in the partition of the item id of kind k and, for that item, in the
// partitions of others.
func (f *cascadeFixture) sides(k ownerKind, id string, others []string) (own, other int) {
	f.t.Helper()
	ctx := f.t.Context()
	ids, err := k.sides(f.s, ctx, id)
	must(f.t, err, "membership sides")
	for _, o := range others {
		ids, err := k.otherSides(f.s, ctx, o)
		must(f.t, err, "membership sides of the other side")
		if slices.Contains(ids, id) {
			other++
		}
	}
	return len(ids), other
}

// TestDeleteUser_BeyondOneTransaction deletes a user with 120 memberships
// (242 items: three transactions), first with a failure injected into the
// second transaction, then again. In between, the user is gone to readers
// and writers, and every membership has both sides or neither. The retry
// removes the rest, checked with strongly consistent reads of both sides.
func TestDeleteUser_BeyondOneTransaction(t *testing.T) { testDeleteBeyondOneTransaction(t, userKind) }

// TestDeleteOrganization_BeyondOneTransaction: the same for an
// organization with 120 members.
func TestDeleteOrganization_BeyondOneTransaction(t *testing.T) {
	testDeleteBeyondOneTransaction(t, orgKind)
}

func testDeleteBeyondOneTransaction(t *testing.T, k ownerKind) {
	f := newCascadeFixture(t)
	ctx := t.Context()
	id, value, others := f.withMemberships(k, 120)

	// Chunks: 50 memberships (100 items), 50, then the last 20 with the
	// item and its guard. The second chunk fails.
	f.failTransaction(k.flags + 2)
	if err := k.del(f.s, ctx, account.WriteOptions{}, id); !errors.Is(err, errInjected) {
		t.Fatalf("Delete%s with a failing transaction: got %v, want the injected failure", k.name, err)
	}
	if own, other := f.sides(k, id, others); own != 70 || other != 70 {
		t.Fatalf("after the first chunk: %d and %d sides of memberships, want 70 and 70", own, other)
	}
	if err := k.get(f.s, ctx, id); !account.IsCode(err, account.CodeNotFound) {
		t.Errorf("Get%s of an item being deleted: got %v, want not_found", k.name, err)
	}
	if k.byUnique != nil {
		if _, err := k.byUnique(f.s, ctx, value); !account.IsCode(err, account.CodeNotFound) {
			t.Errorf("Get%s by the %s of an item being deleted: got %v, want not_found", k.name, k.unique, err)
		}
	}
	listed, err := k.listed(f.s, ctx, id)
	must(t, err, "List")
	if listed {
		t.Errorf("the list shows an item being deleted")
	}
	at := f.tick()
	orgID, userID := k.pair(id, others[0])
	late := account.Membership{OrganizationID: orgID, UserID: userID, Role: "member", CreatedAt: at, UpdatedAt: at}
	if err := f.s.AddMember(ctx, account.WriteOptions{}, late); !account.IsCode(err, account.CodeNotFound) {
		t.Errorf("AddMember to an item being deleted: got %v, want not_found", err)
	}
	// UpdateItem would otherwise succeed on an item the retry is about to remove.
	if err := k.rename(f.s, ctx, id, f.tick()); !account.IsCode(err, account.CodeNotFound) {
		t.Errorf("Update%s of an item being deleted: got %v, want not_found", k.name, err)
	}

	must(t, k.del(f.s, ctx, account.WriteOptions{}, id), "Delete"+k.name+" (retry)")
	if own, other := f.sides(k, id, others); own != 0 || other != 0 {
		t.Errorf("after the retry: %d and %d sides of memberships left, want none", own, other)
	}
	if err := k.del(f.s, ctx, account.WriteOptions{}, id); !account.IsCode(err, account.CodeNotFound) {
		t.Errorf("Delete%s after the retry: got %v, want not_found", k.name, err)
	}
	_, _, err = k.create(f, value)
	must(t, err, "Create"+k.name+" with the freed "+k.unique)
}

// TestDeleteUser_FinishedByNextClaim: a delete cut off before its final
// transaction is never retried by its client. The next user to claim the
// e-mail finishes it and gets the e-mail; the old user and every one of its
// memberships are gone.
func TestDeleteUser_FinishedByNextClaim(t *testing.T) { testDeleteFinishedByNextClaim(t, userKind) }

// TestDeleteOrganization_FinishedByNextClaim: the same for an organization
// and its slug.
func TestDeleteOrganization_FinishedByNextClaim(t *testing.T) {
	testDeleteFinishedByNextClaim(t, orgKind)
}

func testDeleteFinishedByNextClaim(t *testing.T, k ownerKind) {
	f := newCascadeFixture(t)
	ctx := t.Context()
	id, value, others := f.withMemberships(k, 60)
	f.failTransaction(k.flags + 2) // 60 memberships: one chunk of 50, then the final transaction
	if err := k.del(f.s, ctx, account.WriteOptions{}, id); !errors.Is(err, errInjected) {
		t.Fatalf("Delete%s with a failing final transaction: got %v, want the injected failure", k.name, err)
	}
	if err := k.get(f.s, ctx, id); !account.IsCode(err, account.CodeNotFound) {
		t.Errorf("Get%s of an item being deleted: got %v, want not_found", k.name, err)
	}
	if own, other := f.sides(k, id, others); own != 10 || other != 10 {
		t.Fatalf("after the first chunk: %d and %d sides of memberships left, want 10 and 10", own, other)
	}

	next, _, err := k.create(f, value)
	must(t, err, "Create"+k.name+" with the "+k.unique+" of an abandoned delete")
	if k.byUnique != nil {
		if got, err := k.byUnique(f.s, ctx, value); err != nil || got != next {
			t.Fatalf("Get%s by the %s: got %s, %v; want the new item %s", k.name, k.unique, got, err, next)
		}
	}
	if own, other := f.sides(k, id, others); own != 0 || other != 0 {
		t.Errorf("old item: %d and %d sides of memberships left, want none", own, other)
	}
	if err := k.del(f.s, ctx, account.WriteOptions{}, id); !account.IsCode(err, account.CodeNotFound) {
		t.Errorf("Delete%s of the old item: got %v, want not_found (finished by the claim)", k.name, err)
	}

	// A live holder is a plain conflict: nothing is deleted.
	if _, _, err := k.create(f, value); !account.IsCode(err, k.taken) {
		t.Fatalf("Create%s with a live item's %s: got %v, want %s", k.name, k.unique, err, k.taken)
	}
	if err := k.get(f.s, ctx, next); err != nil {
		t.Errorf("the live holder after a refused claim: %v", err)
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
		must(f.t, f.s.CreateAPIKey(ctx, account.WriteOptions{}, k), "CreateAPIKey")
		at := f.tick()
		tokens[k.ID] = account.TokenRecord{ID: account.NewID(account.PrefixToken, at), KeyID: k.ID, Scopes: []string{"read:users"}, IssuedAt: at, ExpiresAt: at.Add(time.Hour)}
		must(f.t, f.s.CreateToken(ctx, account.WriteOptions{}, tokens[k.ID]), "CreateToken")
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
			st, err := f.s.TokenStatus(ctx, tokens[k.ID].ID, k.ID, hint, "", false)
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

// TestDeleteAPIKey_BeyondOneTransaction deletes a tree of 77 keys (1,385
// items, 15 of each the read copies): the root is flagged, then
// MaxTreeKeys keys go per transaction (room for their last uses too), the
// root with the last ones. The second of those transactions fails. In
// between, the
// whole tree is gone to readers, tokens included, and no key can be created
// below the root; the retry removes every item that is left.
func TestDeleteAPIKey_BeyondOneTransaction(t *testing.T) {
	f := newCascadeFixture(t)
	ctx := t.Context()
	root, below, tokens := f.keyTree()
	other := newKey(f.tick())
	must(t, f.s.CreateAPIKey(ctx, account.WriteOptions{}, other), "CreateAPIKey")
	all := append([]account.APIKey{root}, below...)
	itemsBefore := f.itemsLeft(all)
	copies := 1 // a new key has one verify copy
	if want := 2 + copies + (3+copies)*len(below); itemsBefore != want {
		t.Fatalf("fixture: %d items, want %d", itemsBefore, want)
	}

	// Transactions: the flag, MaxTreeKeys keys at a time, then the root
	// and the last keys.
	f.failTransaction(3)
	if err := f.s.DeleteAPIKey(ctx, account.WriteOptions{}, root.ID, nil); !errors.Is(err, errInjected) {
		t.Fatalf("DeleteAPIKey with a failing transaction: got %v, want the injected failure", err)
	}
	// The flag put every verify copy a reader may pick, all 15, on the root.
	if left, want := f.itemsLeft(all), itemsBefore-(3+copies)*tablestore.MaxTreeKeys+tablestore.MaxReadCopies-copies; left != want {
		t.Fatalf("after the first chunk: %d items left, want %d", left, want)
	}
	f.wantKeysGone("after the failure", all, tokens)
	page, err := f.s.ListAPIKeys(ctx, account.APIKeyFilter{}, account.ListParams{Limit: 100})
	must(t, err, "ListAPIKeys")
	for _, k := range page.Items {
		if k.ID == root.ID {
			t.Error("ListAPIKeys shows the root of a tree being deleted")
		}
	}
	late := newKey(f.tick())
	late.CreatedBy, late.Ancestors = root.ID, []string{root.ID}
	if err := f.s.CreateAPIKey(ctx, account.WriteOptions{}, late); !account.IsCode(err, account.CodeNotFound) {
		t.Errorf("CreateAPIKey below a root being deleted: got %v, want not_found", err)
	}
	if _, err := f.s.GetAPIKeyByHash(ctx, other.Hash); err != nil {
		t.Errorf("a key of another tree: %v", err)
	}

	// The retry sees the root, flagged, as it was: the service's checks
	// apply to it as to any key.
	var seen []account.APIKey
	must(t, f.s.DeleteAPIKey(ctx, account.WriteOptions{}, root.ID, func(k account.APIKey) error { seen = append(seen, k); return nil }), "DeleteAPIKey (retry)")
	if len(seen) == 0 || seen[0].ID != root.ID || !slices.Equal(seen[0].Scopes, root.Scopes) {
		t.Errorf("allow saw %+v, want the root", seen)
	}
	if left := f.itemsLeft(all); left != 0 {
		t.Errorf("after the retry: %d items left, want none", left)
	}
	if err := f.s.DeleteAPIKey(ctx, account.WriteOptions{}, root.ID, nil); !account.IsCode(err, account.CodeNotFound) {
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
	// Every key has been used: its last use goes with it.
	for _, k := range all {
		_, err := f.s.RecordAPIKeyUse(ctx, k, f.tick())
		must(t, err, "RecordAPIKeyUse")
	}
	f.failTransaction(1)
	if err := f.s.DeleteAPIKey(ctx, account.WriteOptions{}, root.ID, nil); !errors.Is(err, errInjected) {
		t.Fatalf("DeleteAPIKey with a failing flag: got %v, want the injected failure", err)
	}
	for _, k := range all {
		got, err := f.s.GetAPIKeyByHash(ctx, k.Hash)
		if err != nil || got.ID != k.ID {
			t.Fatalf("GetAPIKeyByHash %s after a failed flag: got %+v, %v; want the key", k.ID, got, err)
		}
	}
	must(t, f.s.DeleteAPIKey(ctx, account.WriteOptions{}, root.ID, nil), "DeleteAPIKey (retry)")
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
	must(t, f.s.CreateAPIKey(ctx, account.WriteOptions{}, root), "CreateAPIKey")
	child := newKey(f.tick())
	child.CreatedBy, child.Ancestors = root.ID, []string{root.ID}
	must(t, f.s.CreateAPIKey(ctx, account.WriteOptions{}, child), "CreateAPIKey")
	late := newKey(f.tick())
	late.CreatedBy, late.Ancestors = child.ID, []string{root.ID, child.ID}
	var lateErr error
	f.fail.run = func() { lateErr = f.s.CreateAPIKey(ctx, account.WriteOptions{}, late) }
	f.failTransaction(1)
	must(t, f.s.DeleteAPIKey(ctx, account.WriteOptions{}, root.ID, nil), "DeleteAPIKey")
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
	// emptyReads answers every GetItem, uncounted, that there is no item.
	emptyReads bool
}

func (f *fakeDynamoDB) Do(r *http.Request) (*http.Response, error) {
	if f.emptyReads && strings.HasSuffix(r.Header.Get("X-Amz-Target"), ".GetItem") {
		return &http.Response{
			StatusCode: 200,
			Header:     http.Header{"Content-Type": []string{"application/x-amz-json-1.0"}},
			Body:       io.NopCloser(strings.NewReader("{}")),
			Request:    r,
		}, nil
	}
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
		{"ConflictEveryTime", 400, `{"__type":"com.amazonaws.dynamodb.v20120810#TransactionCanceledException","message":"secret AWS detail","CancellationReasons":[{"Code":"TransactionConflict"},{"Code":"None"}]}`, account.CodeConcurrentUpdate},
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
			s := dynamostore.New(client, "latchkey", dynamostore.WithConflictRetries(2), dynamostore.WithTimeout(dynamotest.Timeout))
			now := time.Now().UTC()
			err := s.CreateUser(t.Context(), account.WriteOptions{}, newUser(now))
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
// persists, reported as concurrent_update (409: send it again), neither as
// an outage (503) nor as an internal error.
func TestErrorMapping_SingleItemConflict(t *testing.T) {
	const body = `{"__type":"com.amazonaws.dynamodb.v20120810#TransactionConflictException","message":"secret AWS detail"}`
	now := time.Now().UTC()
	name := "Ada"
	// RevokeToken writes its entry's read copies with it, in a
	// transaction, whose conflict is a cancellation.
	const cancelled = `{"__type":"com.amazonaws.dynamodb.v20120810#TransactionCanceledException","message":"secret AWS detail",` +
		`"CancellationReasons":[{"Code":"TransactionConflict","Message":"secret AWS detail"}]}`
	for _, tc := range []struct {
		name  string
		body  string
		write func(s *tablestore.Store) error
	}{
		{"UpdateUser", body, func(s *tablestore.Store) error {
			_, err := s.UpdateUser(t.Context(), account.WriteOptions{}, newUser(now).ID, account.UserPatch{Name: &name, UpdatedAt: now})
			return err
		}},
		{"RevokeToken", cancelled, func(s *tablestore.Store) error {
			_, err := s.RevokeToken(t.Context(), account.WriteOptions{}, account.Revocation{TokenID: "tok_x", KeyID: "key_x", RevokedAt: now, ExpiresAt: now.Add(time.Hour)})
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// RevokeToken reads the key's copy 1 first: none, here.
			fake := &fakeDynamoDB{status: 400, body: tc.body, emptyReads: true}
			client := dynamodb.New(dynamodb.Options{
				Region:           "us-east-1",
				BaseEndpoint:     aws.String("http://127.0.0.1:1"),
				Credentials:      credentials.NewStaticCredentialsProvider("fake", "fake", ""),
				HTTPClient:       fake,
				RetryMaxAttempts: 1,
			})
			err := tc.write(dynamostore.New(client, "latchkey", dynamostore.WithConflictRetries(2), dynamostore.WithTimeout(dynamotest.Timeout)))
			if got := account.ErrorCode(err); got != account.CodeConcurrentUpdate {
				t.Fatalf("got code %q (%v), want %s", got, err, account.CodeConcurrentUpdate)
			}
			if got := fake.calls.Load(); got != 3 {
				t.Errorf("write sent %d times, want 1 + 2 retries", got)
			}
		})
	}
}

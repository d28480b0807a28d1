package storetest

import (
	"testing"

	"latchkey/pkg/account"
)

// ownerKind is what the contract tests need to know of a kind of item
// that claims a unique value and has memberships: a user (its e-mail) or
// an organization (its slug). The tests that hold for both kinds (a
// claim, a delete that frees the value and cascades to the memberships,
// the not-found answers) are written once, over an ownerKind, so that the
// two cannot drift apart.
type ownerKind[T any] struct {
	name   string // "User" or "Organization", as in the Store's method names
	unique string // "Email" or "Slug", as in the subtest names
	prefix string // of the kind's IDs
	// newItem returns an item that is not stored yet; store stores a new one.
	newItem func(f *fixture) T
	store   func(f *fixture) T
	id      func(T) string
	// uniqueOf and setUnique read and set the unique value.
	uniqueOf  func(T) string
	setUnique func(*T, string)
	create    func(f *fixture, it T) error
	get       func(f *fixture, id string) (T, error)
	// byUnique reads an item by its unique value; nil for a kind that has
	// no such read (organizations).
	byUnique func(f *fixture, v string) (T, error)
	rename   func(f *fixture, id, name string) (T, error)
	// patch patches every field of old that can change, and returns the
	// item it should leave and the item the store returned.
	patch func(f *fixture, old T) (want, got T, err error)
	// fieldPatches patch one field each, in turn, the last none but
	// updated_at.
	fieldPatches []fieldPatch[T]
	del          func(f *fixture, id string) error
	list         func(f *fixture) (account.Page[T], error)
	notFound     func() *account.Error
	taken        func() *account.Error
	// other stores an item of the other side of a membership and returns
	// its ID; pair orders an item's ID and another's as (org, user).
	other func(f *fixture) string
	pair  func(id, otherID string) (orgID, userID string)
	// memberships lists an item's memberships; otherMemberships those of
	// an item of the other side.
	memberships      func(f *fixture, id string) (account.Page[account.Membership], error)
	otherMemberships func(f *fixture, otherID string) (account.Page[account.Membership], error)
}

// fieldPatch is a patch of one field of an item: apply sets the field
// (and updated_at) on want and makes the same change in the store.
type fieldPatch[T any] struct {
	field string
	apply func(f *fixture, want *T) (T, error)
}

var userKind = ownerKind[account.User]{
	name: "User", unique: "Email", prefix: account.PrefixUser,
	newItem:   (*fixture).newUser,
	store:     (*fixture).user,
	id:        func(u account.User) string { return u.ID },
	uniqueOf:  func(u account.User) string { return u.Email },
	setUnique: func(u *account.User, v string) { u.Email = v },
	create:    func(f *fixture, u account.User) error { return f.s.CreateUser(f.ctx, f.opts, u) },
	get:       func(f *fixture, id string) (account.User, error) { return f.s.GetUser(f.ctx, id) },
	byUnique:  func(f *fixture, v string) (account.User, error) { return f.s.GetUserByEmail(f.ctx, v) },
	rename: func(f *fixture, id, name string) (account.User, error) {
		return f.s.UpdateUser(f.ctx, f.opts, id, account.UserPatch{Name: &name, UpdatedAt: f.now()})
	},
	patch: func(f *fixture, old account.User) (want, got account.User, err error) {
		want = old
		want.Name, want.UpdatedAt = "Ada King", f.now()
		got, err = f.s.UpdateUser(f.ctx, f.opts, old.ID, account.UserPatch{Name: &want.Name, UpdatedAt: want.UpdatedAt})
		return want, got, err
	},
	fieldPatches: []fieldPatch[account.User]{
		{"the name", func(f *fixture, want *account.User) (account.User, error) {
			want.Name, want.UpdatedAt = "Ada King", f.now()
			return f.s.UpdateUser(f.ctx, f.opts, want.ID, account.UserPatch{Name: &want.Name, UpdatedAt: want.UpdatedAt})
		}},
		{"updated_at alone", func(f *fixture, want *account.User) (account.User, error) {
			want.UpdatedAt = f.now()
			return f.s.UpdateUser(f.ctx, f.opts, want.ID, account.UserPatch{UpdatedAt: want.UpdatedAt})
		}},
	},
	del:              func(f *fixture, id string) error { return f.s.DeleteUser(f.ctx, f.opts, id) },
	list:             func(f *fixture) (account.Page[account.User], error) { return f.s.ListUsers(f.ctx, all) },
	notFound:         account.ErrUserNotFound,
	taken:            account.ErrEmailTaken,
	other:            func(f *fixture) string { return f.org().ID },
	pair:             func(id, orgID string) (string, string) { return orgID, id },
	memberships:      (*fixture).userMemberships,
	otherMemberships: (*fixture).members,
}

var orgKind = ownerKind[account.Organization]{
	name: "Organization", unique: "Slug", prefix: account.PrefixOrganization,
	newItem:   (*fixture).newOrg,
	store:     (*fixture).org,
	id:        func(o account.Organization) string { return o.ID },
	uniqueOf:  func(o account.Organization) string { return o.Slug },
	setUnique: func(o *account.Organization, v string) { o.Slug = v },
	create:    func(f *fixture, o account.Organization) error { return f.s.CreateOrganization(f.ctx, f.opts, o) },
	get:       func(f *fixture, id string) (account.Organization, error) { return f.s.GetOrganization(f.ctx, id) },
	rename: func(f *fixture, id, name string) (account.Organization, error) {
		return f.s.UpdateOrganization(f.ctx, f.opts, id, account.OrganizationPatch{Name: &name, UpdatedAt: f.now()})
	},
	patch: func(f *fixture, old account.Organization) (want, got account.Organization, err error) {
		want = old
		want.Name, want.Plan, want.UpdatedAt = "Difference Engines plc", "enterprise", f.now()
		got, err = f.s.UpdateOrganization(f.ctx, f.opts, old.ID, account.OrganizationPatch{Name: &want.Name, Plan: &want.Plan, UpdatedAt: want.UpdatedAt})
		return want, got, err
	},
	fieldPatches: []fieldPatch[account.Organization]{
		{"the plan", func(f *fixture, want *account.Organization) (account.Organization, error) {
			want.Plan, want.UpdatedAt = "starter", f.now()
			return f.s.UpdateOrganization(f.ctx, f.opts, want.ID, account.OrganizationPatch{Plan: &want.Plan, UpdatedAt: want.UpdatedAt})
		}},
		{"the name", func(f *fixture, want *account.Organization) (account.Organization, error) {
			want.Name, want.UpdatedAt = "Difference Engines plc", f.now()
			return f.s.UpdateOrganization(f.ctx, f.opts, want.ID, account.OrganizationPatch{Name: &want.Name, UpdatedAt: want.UpdatedAt})
		}},
		{"updated_at alone", func(f *fixture, want *account.Organization) (account.Organization, error) {
			want.UpdatedAt = f.now()
			return f.s.UpdateOrganization(f.ctx, f.opts, want.ID, account.OrganizationPatch{UpdatedAt: want.UpdatedAt})
		}},
	},
	del: func(f *fixture, id string) error { return f.s.DeleteOrganization(f.ctx, f.opts, id) },
	list: func(f *fixture) (account.Page[account.Organization], error) {
		return f.s.ListOrganizations(f.ctx, all)
	},
	notFound:         account.ErrOrganizationNotFound,
	taken:            account.ErrSlugTaken,
	other:            func(f *fixture) string { return f.user().ID },
	pair:             func(id, userID string) (string, string) { return id, userID },
	memberships:      (*fixture).members,
	otherMemberships: (*fixture).userMemberships,
}

// all is the first page of up to 100 items: every item a test makes.
var all = account.ListParams{Limit: 100}

func (f *fixture) members(orgID string) (account.Page[account.Membership], error) {
	return f.s.ListMembers(f.ctx, orgID, all)
}

// userMemberships lists a user's memberships, without the organizations'
// names and slugs (userMembershipsList checks those).
func (f *fixture) userMemberships(userID string) (account.Page[account.Membership], error) {
	page, err := f.s.ListUserMemberships(f.ctx, userID, all)
	out := account.Page[account.Membership]{Next: page.Next}
	for _, m := range page.Items {
		out.Items = append(out.Items, m.Membership)
	}
	return out, err
}

// testCreate runs the tests of CreateUser or CreateOrganization.
func testCreate[T any](t *testing.T, s suite, k ownerKind[T]) {
	t.Run("OK", func(t *testing.T) {
		f := s.fix(t)
		want := k.store(f)
		got, err := k.get(f, k.id(want))
		f.ok(err, "Get"+k.name)
		assertSame(t, "Get"+k.name, got, want)
	})
	t.Run("Err"+k.unique+"Taken", func(t *testing.T) {
		f := s.fix(t)
		first := k.store(f)
		second := k.newItem(f)
		k.setUnique(&second, k.uniqueOf(first))
		wantErr(t, "Create"+k.name+" with a taken "+k.unique, k.create(f, second), k.taken())
		_, err := k.get(f, k.id(second))
		wantErr(t, "Get"+k.name+" of the refused item", err, k.notFound())
		if k.byUnique != nil {
			got, err := k.byUnique(f, k.uniqueOf(first))
			f.ok(err, "Get"+k.name+"By"+k.unique)
			assertSame(t, "the "+k.unique+"'s owner", got, first)
		}
	})
	t.Run("ConcurrentSame"+k.unique, func(t *testing.T) {
		f := s.fix(t)
		items := make([]T, concurrency)
		for i := range items {
			items[i] = k.newItem(f)
			k.setUnique(&items[i], "race")
		}
		errs := race(concurrency, func(i int) error { return k.create(f, items[i]) })
		winner := wantOneWinner(t, "Create"+k.name, errs, k.taken())
		if k.byUnique != nil {
			got, err := k.byUnique(f, "race")
			f.ok(err, "Get"+k.name+"By"+k.unique)
			assertSame(t, "the winner", got, items[winner])
		}
		page, err := k.list(f)
		f.ok(err, "List")
		if len(page.Items) != 1 {
			t.Fatalf("List: got %d items, want 1", len(page.Items))
		}
		assertSame(t, "the winner", page.Items[0], items[winner])
	})
}

// testGet runs the tests of GetUser or GetOrganization.
func testGet[T any](t *testing.T, s suite, k ownerKind[T]) {
	t.Run("ErrNotFound", func(t *testing.T) {
		f := s.fix(t)
		k.store(f)
		_, err := k.get(f, account.NewID(k.prefix, f.now()))
		wantErr(t, "Get"+k.name, err, k.notFound())
	})
}

// testUpdateOK is the OK test of UpdateUser or UpdateOrganization: the
// store returns the item as the patch left it, and stores it so.
func testUpdateOK[T any](t *testing.T, s suite, k ownerKind[T]) {
	f := s.fix(t)
	old := k.store(f)
	want, got, err := k.patch(f, old)
	f.ok(err, "Update"+k.name)
	assertSame(t, "the item Update"+k.name+" returned", got, want)
	fresh, err := k.get(f, k.id(old))
	f.ok(err, "Get"+k.name)
	assertSame(t, "the item Get"+k.name+" returned", fresh, got)
}

// testOnlyPatchedFieldsChange is the OnlyPatchedFieldsChange test of
// UpdateUser or UpdateOrganization: a patch changes its fields and
// updated_at, and leaves every other field as stored (a nil field, the
// unique value, the role, created_at). The unique value is never patched,
// so its guard keeps matching the stored item: the item is found by it
// where the kind has such a read, and the value cannot be claimed again.
func testOnlyPatchedFieldsChange[T any](t *testing.T, s suite, k ownerKind[T]) {
	f := s.fix(t)
	old := k.store(f)
	want := old
	for _, p := range k.fieldPatches {
		got, err := p.apply(f, &want)
		f.ok(err, "Update"+k.name+" of "+p.field)
		assertSame(t, "the item after a patch of "+p.field, got, want)
	}
	read := "Get" + k.name
	var fresh T
	var err error
	if k.byUnique != nil {
		read = "Get" + k.name + "By" + k.unique
		fresh, err = k.byUnique(f, k.uniqueOf(old))
	} else {
		fresh, err = k.get(f, k.id(old))
	}
	f.ok(err, read)
	assertSame(t, "the item "+read+" returned", fresh, want)
	taken := k.newItem(f)
	k.setUnique(&taken, k.uniqueOf(old))
	wantErr(t, "Create"+k.name+" with the kept "+k.unique, k.create(f, taken), k.taken())
}

// testUpdateNotFound is the ErrNotFound test of UpdateUser or
// UpdateOrganization: an item never stored, or deleted, is not updated,
// nor created by the update.
func testUpdateNotFound[T any](t *testing.T, s suite, k ownerKind[T]) {
	f := s.fix(t)
	k.store(f)
	missing := k.id(k.newItem(f))
	_, err := k.rename(f, missing, "Nobody")
	wantErr(t, "Update"+k.name+" of a missing item", err, k.notFound())
	_, err = k.get(f, missing)
	wantErr(t, "Get"+k.name+" after Update"+k.name+" of a missing item", err, k.notFound())
	deleted := k.id(k.store(f))
	f.ok(k.del(f, deleted), "Delete"+k.name)
	_, err = k.rename(f, deleted, "Nobody")
	wantErr(t, "Update"+k.name+" of a deleted item", err, k.notFound())
	_, err = k.get(f, deleted)
	wantErr(t, "Get"+k.name+" after Update"+k.name+" of a deleted item", err, k.notFound())
}

// testDelete runs the tests of DeleteUser or DeleteOrganization.
func testDelete[T any](t *testing.T, s suite, k ownerKind[T]) {
	t.Run("OK", func(t *testing.T) {
		f := s.fix(t)
		it, other := k.store(f), k.store(f)
		f.ok(k.del(f, k.id(it)), "Delete"+k.name)
		_, err := k.get(f, k.id(it))
		wantErr(t, "Get"+k.name, err, k.notFound())
		if k.byUnique != nil {
			_, err = k.byUnique(f, k.uniqueOf(it))
			wantErr(t, "Get"+k.name+"By"+k.unique, err, k.notFound())
		}
		got, err := k.get(f, k.id(other))
		f.ok(err, "Get"+k.name+" of another item")
		assertSame(t, "another item", got, other)
	})
	t.Run("Frees"+k.unique, func(t *testing.T) {
		f := s.fix(t)
		it := k.store(f)
		f.ok(k.del(f, k.id(it)), "Delete"+k.name)
		again := k.newItem(f)
		k.setUnique(&again, k.uniqueOf(it))
		f.ok(k.create(f, again), "Create"+k.name+" with the freed "+k.unique)
		if k.byUnique != nil {
			got, err := k.byUnique(f, k.uniqueOf(it))
			f.ok(err, "Get"+k.name+"By"+k.unique)
			assertSame(t, "the new owner of the "+k.unique, got, again)
		}
	})
	t.Run("RemovesMemberships", func(t *testing.T) { testDeleteCascade(t, s, k) })
	t.Run("ErrNotFound", func(t *testing.T) {
		f := s.fix(t)
		k.store(f)
		wantErr(t, "Delete"+k.name, k.del(f, account.NewID(k.prefix, f.now())), k.notFound())
	})
	t.Run("Twice", func(t *testing.T) {
		f := s.fix(t)
		it := k.store(f)
		f.ok(k.del(f, k.id(it)), "Delete"+k.name)
		wantErr(t, "Delete"+k.name+" again", k.del(f, k.id(it)), k.notFound())
	})
}

// testDeleteCascade deletes an item with three memberships, beside an
// item of the same kind with memberships of the same three others: the
// deleted item's memberships go, on both sides, and the other item's stay.
func testDeleteCascade[T any](t *testing.T, s suite, k ownerKind[T]) {
	f := s.fix(t)
	it, sibling := k.id(k.store(f)), k.id(k.store(f))
	others := []string{k.other(f), k.other(f), k.other(f)}
	var kept []account.Membership
	for _, other := range others {
		f.member(k.pair(it, other))
		kept = append(kept, f.member(k.pair(sibling, other)))
	}
	f.ok(k.del(f, it), "Delete"+k.name)
	for i, other := range others {
		orgID, userID := k.pair(it, other)
		_, err := f.s.GetMember(f.ctx, orgID, userID)
		wantErr(t, "GetMember of the deleted item", err, account.ErrMembershipNotFound())
		page, err := k.otherMemberships(f, other)
		f.ok(err, "the other side's memberships")
		if len(page.Items) != 1 {
			t.Fatalf("the other side's memberships after Delete%s: got %d, want 1 (with the item kept)", k.name, len(page.Items))
		}
		assertSame(t, "the kept item's membership", page.Items[0], kept[i])
	}
	page, err := k.memberships(f, it)
	f.ok(err, "the deleted item's memberships")
	if len(page.Items) != 0 || page.Next != "" {
		t.Errorf("the deleted item's memberships: got %d items and Next %q, want none", len(page.Items), page.Next)
	}
	page, err = k.memberships(f, sibling)
	f.ok(err, "the kept item's memberships")
	if len(page.Items) != len(others) {
		t.Errorf("the kept item's memberships: got %d, want %d", len(page.Items), len(others))
	}
}

// testAddMemberDeleting races AddMember with the delete of the side of
// kind k, for many items at once: whichever comes first, no membership
// outlives the deleted item.
func testAddMemberDeleting[T any](t *testing.T, s suite, k ownerKind[T]) {
	f := s.fix(t)
	other := k.other(f)
	const n = concurrency / 2
	items := make([]string, n)
	for i := range items {
		items[i] = k.id(k.store(f))
	}
	at := f.now()
	errs := race(2*n, func(i int) error {
		it := items[i/2]
		if i%2 == 0 {
			return k.del(f, it)
		}
		orgID, userID := k.pair(it, other)
		err := f.s.AddMember(f.ctx, f.opts, account.Membership{OrganizationID: orgID, UserID: userID, Role: "member", CreatedAt: at, UpdatedAt: at})
		if isErr(err, k.notFound()) {
			return nil // the delete came first: a correct outcome
		}
		return err
	})
	for i, err := range errs {
		if err != nil {
			t.Errorf("call %d: %v", i, err)
		}
	}
	for _, it := range items {
		orgID, userID := k.pair(it, other)
		_, err := f.s.GetMember(f.ctx, orgID, userID)
		wantErr(t, "GetMember of a deleted item", err, account.ErrMembershipNotFound())
		page, err := k.memberships(f, it)
		f.ok(err, "the deleted item's memberships")
		if len(page.Items) != 0 {
			t.Errorf("memberships of deleted %s: got %d, want 0", it, len(page.Items))
		}
	}
	page, err := k.otherMemberships(f, other)
	f.ok(err, "the other side's memberships")
	if len(page.Items) != 0 {
		t.Errorf("the other side's memberships: got %d with deleted items, want 0", len(page.Items))
	}
}

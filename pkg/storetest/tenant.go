package storetest

import (
	"slices"
	"testing"
	"time"

	"latchkey/pkg/account"
)

// What a store does for the keys bound to an organization (account's
// tenant.go): a user created with its membership in one write, the users
// of an organization, the events of an organization.

func (s suite) createUserInOrganization(t *testing.T) {
	newMembership := func(f *fixture, orgID, userID string) account.Membership {
		at := f.now()
		return account.Membership{OrganizationID: orgID, UserID: userID, Role: account.DefaultMemberRole, CreatedAt: at, UpdatedAt: at}
	}
	// OK waits for the feed: it runs first, not in parallel, in a group
	// that waiting runs.
	t.Run("OK", func(t *testing.T) {
		f := s.waitingFix(t)
		from := start()
		o := f.org()
		u := f.newUser()
		m := newMembership(f, o.ID, u.ID)
		f.ok(f.s.CreateUserInOrganization(f.ctx, f.opts, u, m), "CreateUserInOrganization")
		got, err := f.s.GetUser(f.ctx, u.ID)
		f.ok(err, "GetUser")
		assertSame(t, "GetUser", got, u)
		gotM, err := f.s.GetMember(f.ctx, o.ID, u.ID)
		f.ok(err, "GetMember")
		assertSame(t, "GetMember", gotM, m)
		byUser, err := f.s.ListUserMemberships(f.ctx, u.ID, account.ListParams{Limit: 100})
		f.ok(err, "ListUserMemberships")
		if len(byUser.Items) != 1 || byUser.Items[0].OrganizationID != o.ID {
			t.Errorf("ListUserMemberships: got %+v, want the one membership", byUser.Items)
		}
		// After the organization's own event.
		events := f.tail(from, account.EventQuery{}, 3)
		var got2 []string
		for _, e := range events {
			got2 = append(got2, e.StoredEvent.Type+" "+e.Object)
		}
		if want := []string{
			account.EventOrganizationCreated + " " + o.ID,
			account.EventUserCreated + " " + u.ID,
			account.EventOrganizationMembershipCreated + " " + o.ID + "/" + u.ID + "/" + m.Role,
		}; !slices.Equal(got2, want) {
			t.Errorf("events: got %q, want %q", got2, want)
		}
	})
	t.Run("ErrOrganizationNotFound", func(t *testing.T) {
		f := s.fix(t)
		u := f.newUser()
		m := newMembership(f, account.NewID(account.PrefixOrganization, f.now()), u.ID)
		wantErr(t, "CreateUserInOrganization of a missing organization", f.s.CreateUserInOrganization(f.ctx, f.opts, u, m), account.ErrOrganizationNotFound())
		_, err := f.s.GetUser(f.ctx, u.ID)
		wantErr(t, "GetUser after the failed create", err, account.ErrUserNotFound())
		// Nothing was claimed either.
		f.ok(f.s.CreateUser(f.ctx, f.opts, u), "CreateUser with the same e-mail and external id")
	})
	t.Run("ErrOrganizationDeleted", func(t *testing.T) {
		f := s.fix(t)
		o := f.org()
		f.ok(f.s.DeleteOrganization(f.ctx, f.opts, o.ID), "DeleteOrganization")
		u := f.newUser()
		wantErr(t, "CreateUserInOrganization of a deleted organization", f.s.CreateUserInOrganization(f.ctx, f.opts, u, newMembership(f, o.ID, u.ID)), account.ErrOrganizationNotFound())
		_, err := f.s.GetUser(f.ctx, u.ID)
		wantErr(t, "GetUser after the failed create", err, account.ErrUserNotFound())
	})
	t.Run("ErrEmailTaken", func(t *testing.T) {
		f := s.fix(t)
		o, taken := f.org(), f.user()
		u := f.newUser()
		u.Email = taken.Email
		wantErr(t, "CreateUserInOrganization with a taken e-mail", f.s.CreateUserInOrganization(f.ctx, f.opts, u, newMembership(f, o.ID, u.ID)), account.ErrEmailTaken())
		page, err := f.s.ListMembers(f.ctx, o.ID, account.ListParams{Limit: 100})
		f.ok(err, "ListMembers")
		if len(page.Items) != 0 {
			t.Errorf("ListMembers after the failed create: got %+v, want none", page.Items)
		}
	})
}

// organizationUsersList lists one organization's members' users, beside
// another organization's member and a user of none, who must never show
// up.
func organizationUsersList(f *fixture) listOps[account.User] {
	o := f.org()
	f.member(f.org().ID, f.user().ID)
	f.user()
	return listOps[account.User]{
		add: func() account.User {
			u := f.user()
			f.member(o.ID, u.ID)
			return u
		},
		list: func(p account.ListParams) (account.Page[account.User], error) {
			return f.s.ListOrganizationUsers(f.ctx, o.ID, p)
		},
		remove: func(u account.User) { f.ok(f.s.DeleteUser(f.ctx, f.opts, u.ID), "DeleteUser") },
		key:    func(u account.User) string { return u.ID },
	}
}

// organizationEvents checks EventQuery.OrganizationID: the events that
// belong to an organization (EventSource.Organization), in order both
// ways, and no other.
func (s suite) organizationEvents(t *testing.T) {
	f := s.waitingFix(t)
	from := start()
	bound := withSource("req-bound")
	o, other := f.org(), f.org()
	bound.Events.OrganizationID = o.ID

	u := f.newUser()
	at := f.now()
	m := account.Membership{OrganizationID: o.ID, UserID: u.ID, Role: account.DefaultMemberRole, CreatedAt: at, UpdatedAt: at}
	f.ok(f.s.CreateUserInOrganization(f.ctx, bound, u, m), "CreateUserInOrganization by a bound key")
	name := "Bound"
	_, err := f.s.UpdateUser(f.ctx, bound, u.ID, account.UserPatch{Name: &name, UpdatedAt: f.now()})
	f.ok(err, "UpdateUser by a bound key")
	// Changes outside o, and a user changed by a key bound to none.
	outsider := f.user()
	f.member(other.ID, outsider.ID)
	_, err = f.s.UpdateUser(f.ctx, f.opts, u.ID, account.UserPatch{Name: &name, UpdatedAt: f.now()})
	f.ok(err, "UpdateUser by a key bound to none")
	f.key()
	plan := "enterprise"
	_, err = f.s.UpdateOrganization(f.ctx, f.opts, o.ID, account.OrganizationPatch{Plan: &plan, UpdatedAt: f.now()})
	f.ok(err, "UpdateOrganization")
	k := f.newKey()
	k.OrganizationID = o.ID
	f.ok(f.s.CreateAPIKey(f.ctx, f.opts, k), "CreateAPIKey of o")
	tr := f.token(k.ID)
	_, err = f.s.RevokeToken(f.ctx, f.opts, account.Revocation{TokenID: tr.ID, KeyID: k.ID, RevokedAt: f.now(), ExpiresAt: tr.ExpiresAt, OrganizationID: o.ID})
	f.ok(err, "RevokeToken of o's key")

	want := []struct{ typ, object string }{
		{account.EventOrganizationCreated, o.ID},
		{account.EventUserCreated, u.ID},
		{account.EventOrganizationMembershipCreated, o.ID + "/" + u.ID + "/" + m.Role},
		{account.EventUserUpdated, u.ID},
		{account.EventOrganizationUpdated, o.ID},
		{account.EventAPIKeyCreated, k.ID},
		{account.EventTokenRevoked, tr.ID},
	}
	q := account.EventQuery{OrganizationID: o.ID, Limit: 3}
	got := f.tail(from, q, len(want))
	// Wait a moment longer: an event too many would show up too.
	time.Sleep(100 * time.Millisecond)
	got = append(got, f.tail(got[len(got)-1].StoredEvent.ID, q, 0)...)
	if len(got) != len(want) {
		for _, e := range got {
			t.Logf("%s %s %s", e.StoredEvent.ID, e.StoredEvent.Type, e.Object)
		}
		t.Fatalf("got %d events of the organization, want %d", len(got), len(want))
	}
	ids := make([]string, len(got))
	for i, w := range want {
		if got[i].StoredEvent.Type != w.typ || got[i].Object != w.object {
			t.Errorf("event %d: %s %s, want %s %s", i, got[i].StoredEvent.Type, got[i].Object, w.typ, w.object)
		}
		ids[i] = got[i].StoredEvent.ID
	}

	// Newest first, in pages.
	var back []string
	q = account.EventQuery{OrganizationID: o.ID, Limit: 2, Since: time.Now().Add(-account.EventRetention)}
	for range maxPages {
		page, err := f.s.ListEvents(f.ctx, q)
		f.ok(err, "ListEvents of the organization, newest first")
		for _, e := range page.Items {
			back = append(back, e.ID)
		}
		if page.Next == "" {
			break
		}
		q.Before = page.Next
	}
	slices.Reverse(back)
	if !slices.Equal(back, ids) {
		t.Errorf("newest first, reversed:\n%v\nwant\n%v", back, ids)
	}

	// By type, and another organization's.
	page, err := f.s.ListEvents(f.ctx, account.EventQuery{OrganizationID: o.ID, Types: []string{account.EventUserUpdated}, Since: time.Now().Add(-account.EventRetention)})
	f.ok(err, "ListEvents of the organization by type")
	if len(page.Items) != 1 || page.Items[0].ID != ids[3] {
		t.Errorf("the organization's user.updated: got %+v, want only %s", page.Items, ids[3])
	}
	page, err = f.s.ListEvents(f.ctx, account.EventQuery{OrganizationID: other.ID, Since: time.Now().Add(-account.EventRetention)})
	f.ok(err, "ListEvents of the other organization")
	var types []string
	for _, e := range page.Items {
		types = append(types, e.Type)
	}
	if !slices.Equal(types, []string{account.EventOrganizationMembershipCreated, account.EventOrganizationCreated}) {
		t.Errorf("the other organization's events, newest first: %v", types)
	}
}

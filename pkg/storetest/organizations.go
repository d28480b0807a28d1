package storetest

import (
	"testing"
	"time"

	"latchkey/pkg/account"
)

func (s suite) createOrganization(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		f := s.fix(t)
		want := f.org()
		got, err := f.s.GetOrganization(f.ctx, want.ID)
		f.ok(err, "GetOrganization")
		assertSame(t, "GetOrganization", got, want)
	})
	t.Run("ErrSlugTaken", func(t *testing.T) {
		f := s.fix(t)
		first := f.org()
		second := f.newOrg()
		second.Slug = first.Slug
		wantCode(t, "CreateOrganization with a taken slug", f.s.CreateOrganization(f.ctx, second), account.CodeSlugTaken)
		_, err := f.s.GetOrganization(f.ctx, second.ID)
		wantCode(t, "GetOrganization of the refused organization", err, account.CodeNotFound)
	})
	t.Run("ConcurrentSameSlug", func(t *testing.T) {
		f := s.fix(t)
		orgs := make([]account.Organization, concurrency)
		for i := range orgs {
			orgs[i] = f.newOrg()
			orgs[i].Slug = "race"
		}
		errs := race(concurrency, func(i int) error { return f.s.CreateOrganization(f.ctx, orgs[i]) })
		winner := wantOneWinner(t, "CreateOrganization", errs, account.CodeSlugTaken)
		page, err := f.s.ListOrganizations(f.ctx, account.ListParams{Limit: 100})
		f.ok(err, "ListOrganizations")
		if len(page.Items) != 1 {
			t.Fatalf("ListOrganizations: got %d organizations, want 1", len(page.Items))
		}
		assertSame(t, "the winning organization", page.Items[0], orgs[winner])
	})
}

func (s suite) getOrganization(t *testing.T) {
	t.Run("ErrNotFound", func(t *testing.T) {
		f := s.fix(t)
		f.org()
		_, err := f.s.GetOrganization(f.ctx, account.NewID(account.PrefixOrganization, f.now()))
		wantCode(t, "GetOrganization", err, account.CodeNotFound)
	})
}

func (s suite) updateOrganization(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		f := s.fix(t)
		old := f.org()
		want := old
		want.Name, want.Plan, want.UpdatedAt = "Difference Engines plc", "enterprise", f.now()
		f.ok(f.s.UpdateOrganization(f.ctx, want), "UpdateOrganization")
		got, err := f.s.GetOrganization(f.ctx, old.ID)
		f.ok(err, "GetOrganization")
		assertSame(t, "the updated organization", got, want)
	})
	t.Run("KeepsSlugAndCreatedAt", func(t *testing.T) {
		// UpdateOrganization replaces name, plan and updated_at only: the
		// slug guard must keep matching the stored slug.
		f := s.fix(t)
		old := f.org()
		upd := old
		upd.Plan, upd.UpdatedAt = "starter", f.now()
		upd.Slug, upd.CreatedAt = "renamed", old.CreatedAt.Add(-time.Hour)
		f.ok(f.s.UpdateOrganization(f.ctx, upd), "UpdateOrganization")
		want := old
		want.Plan, want.UpdatedAt = upd.Plan, upd.UpdatedAt
		got, err := f.s.GetOrganization(f.ctx, old.ID)
		f.ok(err, "GetOrganization")
		assertSame(t, "the updated organization", got, want)
		taken := f.newOrg()
		taken.Slug = old.Slug
		wantCode(t, "CreateOrganization with the kept slug", f.s.CreateOrganization(f.ctx, taken), account.CodeSlugTaken)
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		f := s.fix(t)
		o := f.newOrg()
		wantCode(t, "UpdateOrganization", f.s.UpdateOrganization(f.ctx, o), account.CodeNotFound)
		_, err := f.s.GetOrganization(f.ctx, o.ID)
		wantCode(t, "GetOrganization after UpdateOrganization of a missing organization", err, account.CodeNotFound)
	})
}

func (s suite) deleteOrganization(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		f := s.fix(t)
		o, other := f.org(), f.org()
		f.ok(f.s.DeleteOrganization(f.ctx, o.ID), "DeleteOrganization")
		_, err := f.s.GetOrganization(f.ctx, o.ID)
		wantCode(t, "GetOrganization", err, account.CodeNotFound)
		got, err := f.s.GetOrganization(f.ctx, other.ID)
		f.ok(err, "GetOrganization of another organization")
		assertSame(t, "another organization", got, other)
	})
	t.Run("FreesSlug", func(t *testing.T) {
		f := s.fix(t)
		o := f.org()
		f.ok(f.s.DeleteOrganization(f.ctx, o.ID), "DeleteOrganization")
		again := f.newOrg()
		again.Slug = o.Slug
		f.ok(f.s.CreateOrganization(f.ctx, again), "CreateOrganization with the freed slug")
	})
	t.Run("RemovesMemberships", func(t *testing.T) {
		f := s.fix(t)
		o, other := f.org(), f.org()
		users := []account.User{f.user(), f.user(), f.user()}
		var kept []account.Membership
		for _, u := range users {
			f.member(o.ID, u.ID)
			kept = append(kept, f.member(other.ID, u.ID))
		}
		f.ok(f.s.DeleteOrganization(f.ctx, o.ID), "DeleteOrganization")
		for i, u := range users {
			_, err := f.s.GetMember(f.ctx, o.ID, u.ID)
			wantCode(t, "GetMember of the deleted organization", err, account.CodeNotFound)
			page, err := f.s.ListUserMemberships(f.ctx, u.ID, account.ListParams{Limit: 100})
			f.ok(err, "ListUserMemberships")
			if len(page.Items) != 1 {
				t.Fatalf("ListUserMemberships after DeleteOrganization: got %d, want 1 (the other organization)", len(page.Items))
			}
			assertSame(t, "the membership of the other organization", page.Items[0], kept[i])
		}
		page, err := f.s.ListMembers(f.ctx, o.ID, account.ListParams{Limit: 100})
		f.ok(err, "ListMembers")
		if len(page.Items) != 0 || page.Next != "" {
			t.Errorf("ListMembers of the deleted organization: got %d items and Next %q, want none", len(page.Items), page.Next)
		}
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		f := s.fix(t)
		f.org()
		wantCode(t, "DeleteOrganization", f.s.DeleteOrganization(f.ctx, account.NewID(account.PrefixOrganization, f.now())), account.CodeNotFound)
	})
}

func (s suite) addMember(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		f := s.fix(t)
		o, u := f.org(), f.user()
		want := f.member(o.ID, u.ID)
		got, err := f.s.GetMember(f.ctx, o.ID, u.ID)
		f.ok(err, "GetMember")
		assertSame(t, "GetMember", got, want)
		byOrg, err := f.s.ListMembers(f.ctx, o.ID, account.ListParams{Limit: 100})
		f.ok(err, "ListMembers")
		byUser, err := f.s.ListUserMemberships(f.ctx, u.ID, account.ListParams{Limit: 100})
		f.ok(err, "ListUserMemberships")
		if len(byOrg.Items) != 1 || len(byUser.Items) != 1 {
			t.Fatalf("got %d members and %d memberships, want 1 and 1", len(byOrg.Items), len(byUser.Items))
		}
		assertSame(t, "ListMembers", byOrg.Items[0], want)
		assertSame(t, "ListUserMemberships", byUser.Items[0], want)
	})
	t.Run("ErrAlreadyMember", func(t *testing.T) {
		f := s.fix(t)
		o, u := f.org(), f.user()
		first := f.member(o.ID, u.ID)
		again := first
		again.Role, again.CreatedAt, again.UpdatedAt = "owner", f.now(), f.now()
		wantCode(t, "AddMember again", f.s.AddMember(f.ctx, again), account.CodeAlreadyMember)
		got, err := f.s.GetMember(f.ctx, o.ID, u.ID)
		f.ok(err, "GetMember")
		assertSame(t, "the first membership", got, first)
	})
	t.Run("ErrOrganizationNotFound", func(t *testing.T) {
		f := s.fix(t)
		u := f.user()
		at := f.now()
		m := account.Membership{OrganizationID: account.NewID(account.PrefixOrganization, at), UserID: u.ID, Role: "member", CreatedAt: at, UpdatedAt: at}
		wantCode(t, "AddMember to a missing organization", f.s.AddMember(f.ctx, m), account.CodeNotFound)
		page, err := f.s.ListUserMemberships(f.ctx, u.ID, account.ListParams{Limit: 100})
		f.ok(err, "ListUserMemberships")
		if len(page.Items) != 0 {
			t.Errorf("ListUserMemberships: got %d, want 0", len(page.Items))
		}
	})
	t.Run("ErrUserNotFound", func(t *testing.T) {
		f := s.fix(t)
		o := f.org()
		at := f.now()
		m := account.Membership{OrganizationID: o.ID, UserID: account.NewID(account.PrefixUser, at), Role: "member", CreatedAt: at, UpdatedAt: at}
		wantCode(t, "AddMember of a missing user", f.s.AddMember(f.ctx, m), account.CodeNotFound)
		page, err := f.s.ListMembers(f.ctx, o.ID, account.ListParams{Limit: 100})
		f.ok(err, "ListMembers")
		if len(page.Items) != 0 {
			t.Errorf("ListMembers: got %d, want 0", len(page.Items))
		}
	})
	t.Run("ConcurrentSamePair", func(t *testing.T) {
		f := s.fix(t)
		o, u := f.org(), f.user()
		ms := make([]account.Membership, concurrency)
		for i := range ms {
			at := f.now()
			ms[i] = account.Membership{OrganizationID: o.ID, UserID: u.ID, Role: "member", CreatedAt: at, UpdatedAt: at}
		}
		errs := race(concurrency, func(i int) error { return f.s.AddMember(f.ctx, ms[i]) })
		winner := wantOneWinner(t, "AddMember", errs, account.CodeAlreadyMember)
		byOrg, err := f.s.ListMembers(f.ctx, o.ID, account.ListParams{Limit: 100})
		f.ok(err, "ListMembers")
		byUser, err := f.s.ListUserMemberships(f.ctx, u.ID, account.ListParams{Limit: 100})
		f.ok(err, "ListUserMemberships")
		if len(byOrg.Items) != 1 || len(byUser.Items) != 1 {
			t.Fatalf("got %d members and %d memberships, want 1 and 1", len(byOrg.Items), len(byUser.Items))
		}
		assertSame(t, "ListMembers", byOrg.Items[0], ms[winner])
		assertSame(t, "ListUserMemberships", byUser.Items[0], ms[winner])
	})
	t.Run("ConcurrentWithDeleteUser", func(t *testing.T) {
		// Whichever comes first, no membership may outlive its user.
		f := s.fix(t)
		o := f.org()
		const n = concurrency / 2
		users := make([]account.User, n)
		for i := range users {
			users[i] = f.user()
		}
		at := f.now()
		errs := race(2*n, func(i int) error {
			u := users[i/2]
			if i%2 == 0 {
				return f.s.DeleteUser(f.ctx, u.ID)
			}
			err := f.s.AddMember(f.ctx, account.Membership{OrganizationID: o.ID, UserID: u.ID, Role: "member", CreatedAt: at, UpdatedAt: at})
			if account.IsCode(err, account.CodeNotFound) {
				return nil // the delete came first: a correct outcome
			}
			return err
		})
		for i, err := range errs {
			if err != nil {
				t.Errorf("call %d: %v", i, err)
			}
		}
		for _, u := range users {
			_, err := f.s.GetMember(f.ctx, o.ID, u.ID)
			wantCode(t, "GetMember of a deleted user", err, account.CodeNotFound)
			page, err := f.s.ListUserMemberships(f.ctx, u.ID, account.ListParams{Limit: 100})
			f.ok(err, "ListUserMemberships")
			if len(page.Items) != 0 {
				t.Errorf("ListUserMemberships of deleted user %s: got %d, want 0", u.ID, len(page.Items))
			}
		}
		page, err := f.s.ListMembers(f.ctx, o.ID, account.ListParams{Limit: 100})
		f.ok(err, "ListMembers")
		if len(page.Items) != 0 {
			t.Errorf("ListMembers: got %d memberships of deleted users, want 0", len(page.Items))
		}
	})
	t.Run("ConcurrentWithDeleteOrganization", func(t *testing.T) {
		// Whichever comes first, no membership may outlive its organization.
		f := s.fix(t)
		u := f.user()
		const n = concurrency / 2
		orgs := make([]account.Organization, n)
		for i := range orgs {
			orgs[i] = f.org()
		}
		at := f.now()
		errs := race(2*n, func(i int) error {
			o := orgs[i/2]
			if i%2 == 0 {
				return f.s.DeleteOrganization(f.ctx, o.ID)
			}
			err := f.s.AddMember(f.ctx, account.Membership{OrganizationID: o.ID, UserID: u.ID, Role: "member", CreatedAt: at, UpdatedAt: at})
			if account.IsCode(err, account.CodeNotFound) {
				return nil // the delete came first: a correct outcome
			}
			return err
		})
		for i, err := range errs {
			if err != nil {
				t.Errorf("call %d: %v", i, err)
			}
		}
		for _, o := range orgs {
			_, err := f.s.GetMember(f.ctx, o.ID, u.ID)
			wantCode(t, "GetMember of a deleted organization", err, account.CodeNotFound)
			page, err := f.s.ListMembers(f.ctx, o.ID, account.ListParams{Limit: 100})
			f.ok(err, "ListMembers")
			if len(page.Items) != 0 {
				t.Errorf("ListMembers of deleted organization %s: got %d, want 0", o.ID, len(page.Items))
			}
		}
		page, err := f.s.ListUserMemberships(f.ctx, u.ID, account.ListParams{Limit: 100})
		f.ok(err, "ListUserMemberships")
		if len(page.Items) != 0 {
			t.Errorf("ListUserMemberships: got %d memberships in deleted organizations, want 0", len(page.Items))
		}
	})
}

func (s suite) getMember(t *testing.T) {
	t.Run("ErrNotFound", func(t *testing.T) {
		f := s.fix(t)
		o, u, other := f.org(), f.user(), f.user()
		f.member(o.ID, other.ID)
		_, err := f.s.GetMember(f.ctx, o.ID, u.ID)
		wantCode(t, "GetMember of a user who is not a member", err, account.CodeNotFound)
		_, err = f.s.GetMember(f.ctx, account.NewID(account.PrefixOrganization, f.now()), other.ID)
		wantCode(t, "GetMember of a missing organization", err, account.CodeNotFound)
	})
}

func (s suite) updateMember(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		f := s.fix(t)
		o := f.org()
		a, b := f.user(), f.user()
		first := f.member(o.ID, a.ID)
		second := f.member(o.ID, b.ID)
		want := first
		want.Role, want.UpdatedAt = "owner", f.now()
		f.ok(f.s.UpdateMember(f.ctx, want), "UpdateMember")
		got, err := f.s.GetMember(f.ctx, o.ID, a.ID)
		f.ok(err, "GetMember")
		assertSame(t, "the updated membership", got, want)
		// The update must not move the membership in either list.
		page, err := f.s.ListMembers(f.ctx, o.ID, account.ListParams{Limit: 100})
		f.ok(err, "ListMembers")
		if len(page.Items) != 2 {
			t.Fatalf("ListMembers: got %d, want 2", len(page.Items))
		}
		assertSame(t, "ListMembers[0]", page.Items[0], second)
		assertSame(t, "ListMembers[1]", page.Items[1], want)
		byUser, err := f.s.ListUserMemberships(f.ctx, a.ID, account.ListParams{Limit: 100})
		f.ok(err, "ListUserMemberships")
		if len(byUser.Items) != 1 {
			t.Fatalf("ListUserMemberships: got %d, want 1", len(byUser.Items))
		}
		assertSame(t, "ListUserMemberships[0]", byUser.Items[0], want)
	})
	t.Run("KeepsCreatedAt", func(t *testing.T) {
		f := s.fix(t)
		o, u := f.org(), f.user()
		first := f.member(o.ID, u.ID)
		upd := first
		upd.Role, upd.UpdatedAt, upd.CreatedAt = "member", f.now(), first.CreatedAt.Add(-time.Hour)
		f.ok(f.s.UpdateMember(f.ctx, upd), "UpdateMember")
		want := first
		want.Role, want.UpdatedAt = upd.Role, upd.UpdatedAt
		got, err := f.s.GetMember(f.ctx, o.ID, u.ID)
		f.ok(err, "GetMember")
		assertSame(t, "the updated membership", got, want)
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		f := s.fix(t)
		o, u := f.org(), f.user()
		at := f.now()
		m := account.Membership{OrganizationID: o.ID, UserID: u.ID, Role: "owner", CreatedAt: at, UpdatedAt: at}
		wantCode(t, "UpdateMember", f.s.UpdateMember(f.ctx, m), account.CodeNotFound)
		_, err := f.s.GetMember(f.ctx, o.ID, u.ID)
		wantCode(t, "GetMember after UpdateMember of a missing membership", err, account.CodeNotFound)
	})
}

func (s suite) removeMember(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		f := s.fix(t)
		o, u, other := f.org(), f.user(), f.user()
		f.member(o.ID, u.ID)
		kept := f.member(o.ID, other.ID)
		f.ok(f.s.RemoveMember(f.ctx, o.ID, u.ID), "RemoveMember")
		_, err := f.s.GetMember(f.ctx, o.ID, u.ID)
		wantCode(t, "GetMember", err, account.CodeNotFound)
		page, err := f.s.ListMembers(f.ctx, o.ID, account.ListParams{Limit: 100})
		f.ok(err, "ListMembers")
		if len(page.Items) != 1 {
			t.Fatalf("ListMembers: got %d, want 1", len(page.Items))
		}
		assertSame(t, "the remaining member", page.Items[0], kept)
		byUser, err := f.s.ListUserMemberships(f.ctx, u.ID, account.ListParams{Limit: 100})
		f.ok(err, "ListUserMemberships")
		if len(byUser.Items) != 0 {
			t.Errorf("ListUserMemberships: got %d, want 0", len(byUser.Items))
		}
		// The pair is free again.
		f.member(o.ID, u.ID)
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		f := s.fix(t)
		o, u := f.org(), f.user()
		wantCode(t, "RemoveMember", f.s.RemoveMember(f.ctx, o.ID, u.ID), account.CodeNotFound)
		f.member(o.ID, u.ID)
		f.ok(f.s.RemoveMember(f.ctx, o.ID, u.ID), "RemoveMember")
		wantCode(t, "RemoveMember again", f.s.RemoveMember(f.ctx, o.ID, u.ID), account.CodeNotFound)
	})
}

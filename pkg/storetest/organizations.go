package storetest

import (
	"fmt"
	"slices"
	"testing"

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
		wantErr(t, "CreateOrganization with a taken slug", f.s.CreateOrganization(f.ctx, second), account.ErrSlugTaken())
		_, err := f.s.GetOrganization(f.ctx, second.ID)
		wantErr(t, "GetOrganization of the refused organization", err, account.ErrOrganizationNotFound())
	})
	t.Run("ConcurrentSameSlug", func(t *testing.T) {
		f := s.fix(t)
		orgs := make([]account.Organization, concurrency)
		for i := range orgs {
			orgs[i] = f.newOrg()
			orgs[i].Slug = "race"
		}
		errs := race(concurrency, func(i int) error { return f.s.CreateOrganization(f.ctx, orgs[i]) })
		winner := wantOneWinner(t, "CreateOrganization", errs, account.ErrSlugTaken())
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
		wantErr(t, "GetOrganization", err, account.ErrOrganizationNotFound())
	})
}

func (s suite) updateOrganization(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		f := s.fix(t)
		old := f.org()
		want := old
		want.Name, want.Plan, want.UpdatedAt = "Difference Engines plc", "enterprise", f.now()
		got, err := f.s.UpdateOrganization(f.ctx, old.ID, account.OrganizationPatch{Name: &want.Name, Plan: &want.Plan, UpdatedAt: want.UpdatedAt})
		f.ok(err, "UpdateOrganization")
		assertSame(t, "the organization UpdateOrganization returned", got, want)
		fresh, err := f.s.GetOrganization(f.ctx, old.ID)
		f.ok(err, "GetOrganization")
		assertSame(t, "the organization GetOrganization returned", fresh, got)
	})
	t.Run("OnlyPatchedFieldsChange", func(t *testing.T) {
		// A nil field is left as stored; slug and created_at are never
		// patched, so the slug guard keeps matching the stored slug.
		f := s.fix(t)
		old := f.org()
		want := old
		want.Plan, want.UpdatedAt = "starter", f.now()
		got, err := f.s.UpdateOrganization(f.ctx, old.ID, account.OrganizationPatch{Plan: &want.Plan, UpdatedAt: want.UpdatedAt})
		f.ok(err, "UpdateOrganization of the plan")
		assertSame(t, "the organization after a plan patch", got, want)
		want.Name, want.UpdatedAt = "Difference Engines plc", f.now()
		got, err = f.s.UpdateOrganization(f.ctx, old.ID, account.OrganizationPatch{Name: &want.Name, UpdatedAt: want.UpdatedAt})
		f.ok(err, "UpdateOrganization of the name")
		assertSame(t, "the organization after a name patch", got, want)
		want.UpdatedAt = f.now()
		got, err = f.s.UpdateOrganization(f.ctx, old.ID, account.OrganizationPatch{UpdatedAt: want.UpdatedAt})
		f.ok(err, "UpdateOrganization of updated_at alone")
		assertSame(t, "the organization after an empty patch", got, want)
		fresh, err := f.s.GetOrganization(f.ctx, old.ID)
		f.ok(err, "GetOrganization")
		assertSame(t, "the organization GetOrganization returned", fresh, want)
		taken := f.newOrg()
		taken.Slug = old.Slug
		wantErr(t, "CreateOrganization with the kept slug", f.s.CreateOrganization(f.ctx, taken), account.ErrSlugTaken())
	})
	t.Run("NameAndPlanConcurrently", func(t *testing.T) {
		// One call patches only the name, another only the plan, released
		// at once: both values must survive, whichever commits first. A
		// store that rewrote the whole item would lose one of them in
		// some rounds.
		f := s.fix(t)
		o := f.org()
		for round := range 10 {
			name, plan := fmt.Sprintf("Name %d", round), fmt.Sprintf("plan-%d", round)
			errs := race(2, func(i int) error {
				p := account.OrganizationPatch{UpdatedAt: f.now()}
				if i == 0 {
					p.Name = &name
				} else {
					p.Plan = &plan
				}
				_, err := f.s.UpdateOrganization(f.ctx, o.ID, p)
				return err
			})
			for _, err := range errs {
				f.ok(err, "UpdateOrganization")
			}
			got, err := f.s.GetOrganization(f.ctx, o.ID)
			f.ok(err, "GetOrganization")
			if got.Name != name || got.Plan != plan {
				t.Fatalf("round %d: got name %q and plan %q, want %q and %q: a concurrent patch was lost", round, got.Name, got.Plan, name, plan)
			}
		}
	})
	t.Run("ManyConcurrentPatches", func(t *testing.T) {
		// 20 calls set the name while 20 set the plan. Each must return its
		// own value (the organization as its patch left it), and at the
		// end the name is one of the written names and the plan one of the
		// written plans: neither is the original, which a lost update of
		// every patch of one field would leave.
		f := s.fix(t)
		o := f.org()
		const n = 20
		names, plans := make([]string, n), make([]string, n)
		for i := range n {
			names[i], plans[i] = fmt.Sprintf("Name %02d", i), fmt.Sprintf("plan-%02d", i)
		}
		errs := race(2*n, func(i int) error {
			p := account.OrganizationPatch{UpdatedAt: f.now()}
			if i < n {
				p.Name = &names[i]
			} else {
				p.Plan = &plans[i-n]
			}
			got, err := f.s.UpdateOrganization(f.ctx, o.ID, p)
			switch {
			case err != nil:
				return err
			case p.Name != nil && got.Name != *p.Name:
				return fmt.Errorf("call %d returned name %q, want its own %q", i, got.Name, *p.Name)
			case p.Plan != nil && got.Plan != *p.Plan:
				return fmt.Errorf("call %d returned plan %q, want its own %q", i, got.Plan, *p.Plan)
			}
			return nil
		})
		for _, err := range errs {
			if err != nil {
				t.Error(err)
			}
		}
		got, err := f.s.GetOrganization(f.ctx, o.ID)
		f.ok(err, "GetOrganization")
		if !slices.Contains(names, got.Name) {
			t.Errorf("name: got %q, want one of the written names", got.Name)
		}
		if !slices.Contains(plans, got.Plan) {
			t.Errorf("plan: got %q, want one of the written plans", got.Plan)
		}
		if got.Slug != o.Slug || !got.CreatedAt.Equal(o.CreatedAt) {
			t.Errorf("slug and created_at: got %q and %v, want %q and %v", got.Slug, got.CreatedAt, o.Slug, o.CreatedAt)
		}
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		f := s.fix(t)
		f.org()
		o := f.newOrg()
		name := "Nobody's"
		_, err := f.s.UpdateOrganization(f.ctx, o.ID, account.OrganizationPatch{Name: &name, UpdatedAt: f.now()})
		wantErr(t, "UpdateOrganization of a missing organization", err, account.ErrOrganizationNotFound())
		_, err = f.s.GetOrganization(f.ctx, o.ID)
		wantErr(t, "GetOrganization after UpdateOrganization of a missing organization", err, account.ErrOrganizationNotFound())
		deleted := f.org()
		f.ok(f.s.DeleteOrganization(f.ctx, deleted.ID), "DeleteOrganization")
		_, err = f.s.UpdateOrganization(f.ctx, deleted.ID, account.OrganizationPatch{Name: &name, UpdatedAt: f.now()})
		wantErr(t, "UpdateOrganization of a deleted organization", err, account.ErrOrganizationNotFound())
		_, err = f.s.GetOrganization(f.ctx, deleted.ID)
		wantErr(t, "GetOrganization after UpdateOrganization of a deleted organization", err, account.ErrOrganizationNotFound())
	})
}

func (s suite) deleteOrganization(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		f := s.fix(t)
		o, other := f.org(), f.org()
		f.ok(f.s.DeleteOrganization(f.ctx, o.ID), "DeleteOrganization")
		_, err := f.s.GetOrganization(f.ctx, o.ID)
		wantErr(t, "GetOrganization", err, account.ErrOrganizationNotFound())
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
			wantErr(t, "GetMember of the deleted organization", err, account.ErrMembershipNotFound())
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
		wantErr(t, "DeleteOrganization", f.s.DeleteOrganization(f.ctx, account.NewID(account.PrefixOrganization, f.now())), account.ErrOrganizationNotFound())
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
		wantErr(t, "AddMember again", f.s.AddMember(f.ctx, again), account.ErrAlreadyMember())
		got, err := f.s.GetMember(f.ctx, o.ID, u.ID)
		f.ok(err, "GetMember")
		assertSame(t, "the first membership", got, first)
	})
	t.Run("ErrOrganizationNotFound", func(t *testing.T) {
		f := s.fix(t)
		u := f.user()
		at := f.now()
		m := account.Membership{OrganizationID: account.NewID(account.PrefixOrganization, at), UserID: u.ID, Role: "member", CreatedAt: at, UpdatedAt: at}
		wantErr(t, "AddMember to a missing organization", f.s.AddMember(f.ctx, m), account.ErrOrganizationNotFound())
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
		wantErr(t, "AddMember of a missing user", f.s.AddMember(f.ctx, m), account.ErrUserNotFound())
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
		winner := wantOneWinner(t, "AddMember", errs, account.ErrAlreadyMember())
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
			if isErr(err, account.ErrUserNotFound()) {
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
			wantErr(t, "GetMember of a deleted user", err, account.ErrMembershipNotFound())
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
			if isErr(err, account.ErrOrganizationNotFound()) {
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
			wantErr(t, "GetMember of a deleted organization", err, account.ErrMembershipNotFound())
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
		wantErr(t, "GetMember of a user who is not a member", err, account.ErrMembershipNotFound())
		_, err = f.s.GetMember(f.ctx, account.NewID(account.PrefixOrganization, f.now()), other.ID)
		wantErr(t, "GetMember of a missing organization", err, account.ErrMembershipNotFound())
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
		got, err := f.s.UpdateMember(f.ctx, o.ID, a.ID, account.MemberPatch{Role: want.Role, UpdatedAt: want.UpdatedAt})
		f.ok(err, "UpdateMember")
		assertSame(t, "the membership UpdateMember returned", got, want)
		fresh, err := f.s.GetMember(f.ctx, o.ID, a.ID)
		f.ok(err, "GetMember")
		assertSame(t, "the membership GetMember returned", fresh, got)
		// The update must not move the membership in either list, and it
		// must change the other one on neither.
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
	t.Run("ConcurrentPatches", func(t *testing.T) {
		// Each call returns its own role, and at the end the role is one of
		// those written and the same on both sides of the membership: a
		// store that keeps two copies must not let them diverge.
		f := s.fix(t)
		o, u := f.org(), f.user()
		first := f.member(o.ID, u.ID)
		const n = 20
		roles := make([]string, n)
		for i := range n {
			roles[i] = fmt.Sprintf("role-%02d", i)
		}
		errs := race(n, func(i int) error {
			got, err := f.s.UpdateMember(f.ctx, o.ID, u.ID, account.MemberPatch{Role: roles[i], UpdatedAt: f.now()})
			switch {
			case err != nil:
				return err
			case got.Role != roles[i]:
				return fmt.Errorf("call %d returned role %q, want its own %q", i, got.Role, roles[i])
			case !got.CreatedAt.Equal(first.CreatedAt):
				return fmt.Errorf("call %d returned created_at %v, want %v", i, got.CreatedAt, first.CreatedAt)
			}
			return nil
		})
		for _, err := range errs {
			if err != nil {
				t.Error(err)
			}
		}
		got, err := f.s.GetMember(f.ctx, o.ID, u.ID)
		f.ok(err, "GetMember")
		if !slices.Contains(roles, got.Role) {
			t.Errorf("role: got %q, want one of the written roles", got.Role)
		}
		byUser, err := f.s.ListUserMemberships(f.ctx, u.ID, account.ListParams{Limit: 100})
		f.ok(err, "ListUserMemberships")
		if len(byUser.Items) != 1 {
			t.Fatalf("ListUserMemberships: got %d, want 1", len(byUser.Items))
		}
		assertSame(t, "the user's side of the membership", byUser.Items[0], got)
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		f := s.fix(t)
		o, u, other := f.org(), f.user(), f.user()
		f.member(o.ID, other.ID)
		_, err := f.s.UpdateMember(f.ctx, o.ID, u.ID, account.MemberPatch{Role: "owner", UpdatedAt: f.now()})
		wantErr(t, "UpdateMember of a user who is not a member", err, account.ErrMembershipNotFound())
		_, err = f.s.GetMember(f.ctx, o.ID, u.ID)
		wantErr(t, "GetMember after UpdateMember of a missing membership", err, account.ErrMembershipNotFound())
		byUser, err := f.s.ListUserMemberships(f.ctx, u.ID, account.ListParams{Limit: 100})
		f.ok(err, "ListUserMemberships")
		if len(byUser.Items) != 0 {
			t.Errorf("ListUserMemberships after UpdateMember of a missing membership: got %d, want 0", len(byUser.Items))
		}
		_, err = f.s.UpdateMember(f.ctx, account.NewID(account.PrefixOrganization, f.now()), other.ID, account.MemberPatch{Role: "owner", UpdatedAt: f.now()})
		wantErr(t, "UpdateMember in a missing organization", err, account.ErrMembershipNotFound())
		f.ok(f.s.RemoveMember(f.ctx, o.ID, other.ID), "RemoveMember")
		_, err = f.s.UpdateMember(f.ctx, o.ID, other.ID, account.MemberPatch{Role: "owner", UpdatedAt: f.now()})
		wantErr(t, "UpdateMember of a removed membership", err, account.ErrMembershipNotFound())
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
		wantErr(t, "GetMember", err, account.ErrMembershipNotFound())
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
		wantErr(t, "RemoveMember", f.s.RemoveMember(f.ctx, o.ID, u.ID), account.ErrMembershipNotFound())
		f.member(o.ID, u.ID)
		f.ok(f.s.RemoveMember(f.ctx, o.ID, u.ID), "RemoveMember")
		wantErr(t, "RemoveMember again", f.s.RemoveMember(f.ctx, o.ID, u.ID), account.ErrMembershipNotFound())
	})
}

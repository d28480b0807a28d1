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

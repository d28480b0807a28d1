package storetest

import (
	"fmt"
	"slices"
	"testing"

	"latchkey/pkg/account"
)

func (s suite) createOrganization(t *testing.T) { testCreate(t, s, orgKind) }

func (s suite) getOrganization(t *testing.T) { testGet(t, s, orgKind) }

func (s suite) updateOrganization(t *testing.T) {
	t.Run("OK", func(t *testing.T) { testUpdateOK(t, s, orgKind) })
	t.Run("OnlyPatchedFieldsChange", func(t *testing.T) { testOnlyPatchedFieldsChange(t, s, orgKind) })
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
				_, err := f.s.UpdateOrganization(f.ctx, f.opts, o.ID, p)
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
	t.Run("SameMillisecond", func(t *testing.T) {
		// Two patches stamped with the organization's own updated_at (the
		// clock has millisecond precision: both in the millisecond of the
		// last write), released at once. Whichever commits second must
		// see the first: its answer (and its event) holds both changes,
		// and updated_at moved forward. A store whose "unchanged since the
		// read" check is updated_at alone took the two for independent.
		f := s.fix(t)
		o := f.org()
		for round := range 10 {
			cur, err := f.s.GetOrganization(f.ctx, o.ID)
			f.ok(err, "GetOrganization")
			name, plan := fmt.Sprintf("Same %d", round), fmt.Sprintf("same-%d", round)
			answers := make([]account.Organization, 2)
			errs := race(2, func(i int) error {
				p := account.OrganizationPatch{UpdatedAt: cur.UpdatedAt}
				if i == 0 {
					p.Name = &name
				} else {
					p.Plan = &plan
				}
				var err error
				answers[i], err = f.s.UpdateOrganization(f.ctx, f.opts, o.ID, p)
				return err
			})
			for _, err := range errs {
				f.ok(err, "UpdateOrganization")
			}
			if !slices.ContainsFunc(answers, func(a account.Organization) bool { return a.Name == name && a.Plan == plan }) {
				t.Fatalf("round %d: neither answer holds both changes: %+v", round, answers)
			}
			for _, a := range answers {
				if !a.UpdatedAt.After(cur.UpdatedAt) {
					t.Fatalf("round %d: updated_at %v did not move past %v", round, a.UpdatedAt, cur.UpdatedAt)
				}
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
			got, err := f.s.UpdateOrganization(f.ctx, f.opts, o.ID, p)
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
	t.Run("ErrNotFound", func(t *testing.T) { testUpdateNotFound(t, s, orgKind) })
}

func (s suite) deleteOrganization(t *testing.T) { testDelete(t, s, orgKind) }

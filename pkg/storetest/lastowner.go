package storetest

import (
	"fmt"
	"testing"

	"latchkey/pkg/account"
)

// The last owner: an organization that has a member with the owner role
// keeps one. Demoting or removing its only owner is refused with
// account.ErrLastOwner, also when owners demote or remove each other at
// the same moment; deleting the user who is the last owner is allowed and
// leaves the organization without one.

// ownerOf adds userID to orgID with the owner role.
func (f *fixture) ownerOf(orgID, userID string) account.Membership {
	f.t.Helper()
	at := f.now()
	m := account.Membership{OrganizationID: orgID, UserID: userID, Role: account.OwnerRole, CreatedAt: at, UpdatedAt: at}
	f.ok(f.s.AddMember(f.ctx, f.opts, m), "AddMember as owner")
	return m
}

// owners returns the user ids of orgID's owners.
func (f *fixture) owners(orgID string) []string {
	f.t.Helper()
	page, err := f.members(orgID)
	f.ok(err, "ListMembers")
	var ids []string
	for _, m := range page.Items {
		if m.Role == account.OwnerRole {
			ids = append(ids, m.UserID)
		}
	}
	return ids
}

func (s suite) lastOwner(t *testing.T) {
	t.Run("UpdateMember", func(t *testing.T) {
		f := s.fix(t)
		o, a, b := f.org(), f.user(), f.user()
		first := f.ownerOf(o.ID, a.ID)
		_, err := f.s.UpdateMember(f.ctx, f.opts, o.ID, a.ID, account.MemberPatch{Role: "admin", UpdatedAt: f.now()})
		wantErr(t, "UpdateMember demoting the only owner", err, account.ErrLastOwner())
		got, err := f.s.GetMember(f.ctx, o.ID, a.ID)
		f.ok(err, "GetMember")
		assertSame(t, "the refused owner's membership", got, first)
		// owner to owner is no demotion.
		_, err = f.s.UpdateMember(f.ctx, f.opts, o.ID, a.ID, account.MemberPatch{Role: account.OwnerRole, UpdatedAt: f.now()})
		f.ok(err, "UpdateMember owner to owner")
		// A promotion gives the organization a second owner; then the
		// first may go, and the second is the last.
		f.member(o.ID, b.ID)
		_, err = f.s.UpdateMember(f.ctx, f.opts, o.ID, b.ID, account.MemberPatch{Role: account.OwnerRole, UpdatedAt: f.now()})
		f.ok(err, "UpdateMember promoting a member")
		_, err = f.s.UpdateMember(f.ctx, f.opts, o.ID, a.ID, account.MemberPatch{Role: "member", UpdatedAt: f.now()})
		f.ok(err, "UpdateMember demoting one of two owners")
		_, err = f.s.UpdateMember(f.ctx, f.opts, o.ID, b.ID, account.MemberPatch{Role: "admin", UpdatedAt: f.now()})
		wantErr(t, "UpdateMember demoting the owner left", err, account.ErrLastOwner())
		if got := f.owners(o.ID); len(got) != 1 || got[0] != b.ID {
			t.Errorf("owners: got %v, want only %s", got, b.ID)
		}
	})
	t.Run("RemoveMember", func(t *testing.T) {
		f := s.fix(t)
		o, a, b, c := f.org(), f.user(), f.user(), f.user()
		f.ownerOf(o.ID, a.ID)
		f.member(o.ID, c.ID)
		wantErr(t, "RemoveMember of the only owner", f.s.RemoveMember(f.ctx, f.opts, o.ID, a.ID), account.ErrLastOwner())
		f.ok(f.s.RemoveMember(f.ctx, f.opts, o.ID, c.ID), "RemoveMember of a member")
		f.ownerOf(o.ID, b.ID)
		f.ok(f.s.RemoveMember(f.ctx, f.opts, o.ID, a.ID), "RemoveMember of one of two owners")
		wantErr(t, "RemoveMember of the owner left", f.s.RemoveMember(f.ctx, f.opts, o.ID, b.ID), account.ErrLastOwner())
		if got := f.owners(o.ID); len(got) != 1 || got[0] != b.ID {
			t.Errorf("owners: got %v, want only %s", got, b.ID)
		}
		// An organization that never had an owner has none to keep.
		none, d := f.org(), f.user()
		f.member(none.ID, d.ID)
		f.ok(f.s.RemoveMember(f.ctx, f.opts, none.ID, d.ID), "RemoveMember in an organization without owners")
	})
	t.Run("ConcurrentDemotions", func(t *testing.T) {
		// Two owners demote each other at once, round after round: one
		// succeeds, the other is refused, and one owner remains.
		f := s.fix(t)
		for round := range 5 {
			o, a, b := f.org(), f.user(), f.user()
			f.ownerOf(o.ID, a.ID)
			f.ownerOf(o.ID, b.ID)
			ids := []string{a.ID, b.ID}
			errs := race(2, func(i int) error {
				_, err := f.s.UpdateMember(f.ctx, f.opts, o.ID, ids[1-i], account.MemberPatch{Role: "admin", UpdatedAt: f.now()})
				return err
			})
			wantOneWinner(t, fmt.Sprintf("round %d: UpdateMember", round), errs, account.ErrLastOwner())
			if got := f.owners(o.ID); len(got) != 1 {
				t.Errorf("round %d: owners after the race: %v, want one", round, got)
			}
		}
	})
	t.Run("ConcurrentRemovals", func(t *testing.T) {
		// Every owner removed at once, and as many demoted: one owner
		// remains, whatever the order.
		f := s.fix(t)
		o := f.org()
		const n = 6
		ids := make([]string, n)
		for i := range ids {
			ids[i] = f.user().ID
			f.ownerOf(o.ID, ids[i])
		}
		errs := race(n, func(i int) error {
			if i%2 == 0 {
				return f.s.RemoveMember(f.ctx, f.opts, o.ID, ids[i])
			}
			_, err := f.s.UpdateMember(f.ctx, f.opts, o.ID, ids[i], account.MemberPatch{Role: "member", UpdatedAt: f.now()})
			return err
		})
		refused := 0
		for i, err := range errs {
			switch {
			case err == nil:
			case isErr(err, account.ErrLastOwner()):
				refused++
			default:
				t.Errorf("call %d: %v", i, err)
			}
		}
		got := f.owners(o.ID)
		if refused != 1 || len(got) != 1 {
			t.Errorf("%d refused, owners %v; want 1 refused and one owner", refused, got)
		}
	})
	t.Run("DeleteUserLastOwner", func(t *testing.T) {
		// Allowed: the organization is then without an owner. The next
		// owner it gets is its last, and is kept as such.
		f := s.fix(t)
		o, a, b := f.org(), f.user(), f.user()
		f.ownerOf(o.ID, a.ID)
		f.member(o.ID, b.ID)
		f.ok(f.s.DeleteUser(f.ctx, f.opts, a.ID), "DeleteUser of the last owner")
		if got := f.owners(o.ID); len(got) != 0 {
			t.Fatalf("owners after the delete: %v, want none", got)
		}
		_, err := f.s.UpdateMember(f.ctx, f.opts, o.ID, b.ID, account.MemberPatch{Role: account.OwnerRole, UpdatedAt: f.now()})
		f.ok(err, "UpdateMember promoting in an organization without owners")
		_, err = f.s.UpdateMember(f.ctx, f.opts, o.ID, b.ID, account.MemberPatch{Role: "admin", UpdatedAt: f.now()})
		wantErr(t, "UpdateMember demoting the new only owner", err, account.ErrLastOwner())
		// One of two owners deleted: the other is the last.
		c := f.user()
		f.ownerOf(o.ID, c.ID)
		f.ok(f.s.DeleteUser(f.ctx, f.opts, b.ID), "DeleteUser of one of two owners")
		wantErr(t, "RemoveMember of the owner left", f.s.RemoveMember(f.ctx, f.opts, o.ID, c.ID), account.ErrLastOwner())
	})
	t.Run("DeleteUserOwnerOfMany", func(t *testing.T) {
		// A user who owns many organizations, beside their other owners:
		// each organization keeps the right count.
		f := s.fix(t)
		u := f.user()
		var orgs []account.Organization
		var others []string
		for range 4 {
			o, other := f.org(), f.user()
			f.ownerOf(o.ID, u.ID)
			f.ownerOf(o.ID, other.ID)
			orgs, others = append(orgs, o), append(others, other.ID)
		}
		f.ok(f.s.DeleteUser(f.ctx, f.opts, u.ID), "DeleteUser")
		for i, o := range orgs {
			wantErr(t, "RemoveMember of the owner left", f.s.RemoveMember(f.ctx, f.opts, o.ID, others[i]), account.ErrLastOwner())
		}
	})
}

// userMembershipNames checks that a user's memberships carry their
// organizations' names and slugs as they are when listed.
func (s suite) userMembershipNames(t *testing.T) {
	t.Run("AfterRename", func(t *testing.T) {
		f := s.fix(t)
		u := f.user()
		o := f.org()
		m := f.member(o.ID, u.ID)
		name := "Renamed Engines"
		_, err := f.s.UpdateOrganization(f.ctx, f.opts, o.ID, account.OrganizationPatch{Name: &name, UpdatedAt: f.now()})
		f.ok(err, "UpdateOrganization")
		page, err := f.s.ListUserMemberships(f.ctx, u.ID, all)
		f.ok(err, "ListUserMemberships")
		if len(page.Items) != 1 {
			t.Fatalf("ListUserMemberships: got %d, want 1", len(page.Items))
		}
		assertSame(t, "the membership", page.Items[0], account.UserMembership{Membership: m, OrganizationName: name, OrganizationSlug: o.Slug})
	})
	t.Run("ManyOrganizations", func(t *testing.T) {
		f := s.fix(t)
		u := f.user()
		want := map[string]account.Organization{}
		for i := range 30 {
			o := f.newOrg()
			o.Name = fmt.Sprintf("Org %d", i)
			f.ok(f.s.CreateOrganization(f.ctx, f.opts, o), "CreateOrganization")
			f.member(o.ID, u.ID)
			want[o.ID] = o
		}
		page, err := f.s.ListUserMemberships(f.ctx, u.ID, all)
		f.ok(err, "ListUserMemberships")
		if len(page.Items) != len(want) {
			t.Fatalf("ListUserMemberships: got %d, want %d", len(page.Items), len(want))
		}
		for _, m := range page.Items {
			if o := want[m.OrganizationID]; m.OrganizationName != o.Name || m.OrganizationSlug != o.Slug {
				t.Errorf("membership of %s: got %q %q, want %q %q", m.OrganizationID, m.OrganizationName, m.OrganizationSlug, o.Name, o.Slug)
			}
		}
	})
}

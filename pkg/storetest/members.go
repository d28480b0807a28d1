package storetest

import (
	"fmt"
	"slices"
	"testing"

	"latchkey/pkg/account"
)

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
		assertSame(t, "ListUserMemberships", byUser.Items[0].Membership, want)
	})
	t.Run("ErrAlreadyMember", func(t *testing.T) {
		f := s.fix(t)
		o, u := f.org(), f.user()
		first := f.member(o.ID, u.ID)
		again := first
		again.Role, again.CreatedAt, again.UpdatedAt = "owner", f.now(), f.now()
		wantErr(t, "AddMember again", f.s.AddMember(f.ctx, f.opts, again), account.ErrAlreadyMember())
		got, err := f.s.GetMember(f.ctx, o.ID, u.ID)
		f.ok(err, "GetMember")
		assertSame(t, "the first membership", got, first)
	})
	t.Run("ErrOrganizationNotFound", func(t *testing.T) {
		f := s.fix(t)
		u := f.user()
		at := f.now()
		m := account.Membership{OrganizationID: account.NewID(account.PrefixOrganization, at), UserID: u.ID, Role: "member", CreatedAt: at, UpdatedAt: at}
		wantErr(t, "AddMember to a missing organization", f.s.AddMember(f.ctx, f.opts, m), account.ErrOrganizationNotFound())
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
		wantErr(t, "AddMember of a missing user", f.s.AddMember(f.ctx, f.opts, m), account.ErrUserNotFound())
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
		errs := race(concurrency, func(i int) error { return f.s.AddMember(f.ctx, f.opts, ms[i]) })
		winner := wantOneWinner(t, "AddMember", errs, account.ErrAlreadyMember())
		byOrg, err := f.s.ListMembers(f.ctx, o.ID, account.ListParams{Limit: 100})
		f.ok(err, "ListMembers")
		byUser, err := f.s.ListUserMemberships(f.ctx, u.ID, account.ListParams{Limit: 100})
		f.ok(err, "ListUserMemberships")
		if len(byOrg.Items) != 1 || len(byUser.Items) != 1 {
			t.Fatalf("got %d members and %d memberships, want 1 and 1", len(byOrg.Items), len(byUser.Items))
		}
		assertSame(t, "ListMembers", byOrg.Items[0], ms[winner])
		assertSame(t, "ListUserMemberships", byUser.Items[0].Membership, ms[winner])
	})
	t.Run("ConcurrentWithDeleteUser", func(t *testing.T) { testAddMemberDeleting(t, s, userKind) })
	t.Run("ConcurrentWithDeleteOrganization", func(t *testing.T) { testAddMemberDeleting(t, s, orgKind) })
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
		got, err := f.s.UpdateMember(f.ctx, f.opts, o.ID, a.ID, account.MemberPatch{Role: want.Role, UpdatedAt: want.UpdatedAt})
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
		assertSame(t, "ListUserMemberships[0]", byUser.Items[0].Membership, want)
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
			got, err := f.s.UpdateMember(f.ctx, f.opts, o.ID, u.ID, account.MemberPatch{Role: roles[i], UpdatedAt: f.now()})
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
		assertSame(t, "the user's side of the membership", byUser.Items[0].Membership, got)
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		f := s.fix(t)
		o, u, other := f.org(), f.user(), f.user()
		f.member(o.ID, other.ID)
		_, err := f.s.UpdateMember(f.ctx, f.opts, o.ID, u.ID, account.MemberPatch{Role: "owner", UpdatedAt: f.now()})
		wantErr(t, "UpdateMember of a user who is not a member", err, account.ErrMembershipNotFound())
		_, err = f.s.GetMember(f.ctx, o.ID, u.ID)
		wantErr(t, "GetMember after UpdateMember of a missing membership", err, account.ErrMembershipNotFound())
		byUser, err := f.s.ListUserMemberships(f.ctx, u.ID, account.ListParams{Limit: 100})
		f.ok(err, "ListUserMemberships")
		if len(byUser.Items) != 0 {
			t.Errorf("ListUserMemberships after UpdateMember of a missing membership: got %d, want 0", len(byUser.Items))
		}
		_, err = f.s.UpdateMember(f.ctx, f.opts, account.NewID(account.PrefixOrganization, f.now()), other.ID, account.MemberPatch{Role: "owner", UpdatedAt: f.now()})
		wantErr(t, "UpdateMember in a missing organization", err, account.ErrMembershipNotFound())
		f.ok(f.s.RemoveMember(f.ctx, f.opts, o.ID, other.ID), "RemoveMember")
		_, err = f.s.UpdateMember(f.ctx, f.opts, o.ID, other.ID, account.MemberPatch{Role: "owner", UpdatedAt: f.now()})
		wantErr(t, "UpdateMember of a removed membership", err, account.ErrMembershipNotFound())
	})
}

func (s suite) removeMember(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		f := s.fix(t)
		o, u, other := f.org(), f.user(), f.user()
		f.member(o.ID, u.ID)
		kept := f.member(o.ID, other.ID)
		f.ok(f.s.RemoveMember(f.ctx, f.opts, o.ID, u.ID), "RemoveMember")
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
		wantErr(t, "RemoveMember", f.s.RemoveMember(f.ctx, f.opts, o.ID, u.ID), account.ErrMembershipNotFound())
		f.member(o.ID, u.ID)
		f.ok(f.s.RemoveMember(f.ctx, f.opts, o.ID, u.ID), "RemoveMember")
		wantErr(t, "RemoveMember again", f.s.RemoveMember(f.ctx, f.opts, o.ID, u.ID), account.ErrMembershipNotFound())
	})
}

package storetest

import (
	"testing"

	"latchkey/pkg/account"
)

func (s suite) createUser(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		f := s.fix(t)
		want := f.user()
		got, err := f.s.GetUser(f.ctx, want.ID)
		f.ok(err, "GetUser")
		assertSame(t, "GetUser", got, want)
	})
	t.Run("ErrEmailTaken", func(t *testing.T) {
		f := s.fix(t)
		first := f.user()
		second := f.newUser()
		second.Email = first.Email
		wantErr(t, "CreateUser with a taken e-mail", f.s.CreateUser(f.ctx, second), account.ErrEmailTaken())
		_, err := f.s.GetUser(f.ctx, second.ID)
		wantErr(t, "GetUser of the refused user", err, account.ErrUserNotFound())
		got, err := f.s.GetUserByEmail(f.ctx, first.Email)
		f.ok(err, "GetUserByEmail")
		assertSame(t, "the e-mail's owner", got, first)
	})
	t.Run("ConcurrentSameEmail", func(t *testing.T) {
		f := s.fix(t)
		users := make([]account.User, concurrency)
		for i := range users {
			users[i] = f.newUser()
			users[i].Email = "race@example.com"
		}
		errs := race(concurrency, func(i int) error { return f.s.CreateUser(f.ctx, users[i]) })
		winner := wantOneWinner(t, "CreateUser", errs, account.ErrEmailTaken())
		got, err := f.s.GetUserByEmail(f.ctx, "race@example.com")
		f.ok(err, "GetUserByEmail")
		assertSame(t, "the winning user", got, users[winner])
		page, err := f.s.ListUsers(f.ctx, account.ListParams{Limit: 100})
		f.ok(err, "ListUsers")
		if len(page.Items) != 1 {
			t.Errorf("ListUsers: got %d users, want 1", len(page.Items))
		}
	})
}

func (s suite) getUser(t *testing.T) {
	t.Run("ErrNotFound", func(t *testing.T) {
		f := s.fix(t)
		f.user()
		_, err := f.s.GetUser(f.ctx, account.NewID(account.PrefixUser, f.now()))
		wantErr(t, "GetUser", err, account.ErrUserNotFound())
	})
}

func (s suite) getUserByEmail(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		f := s.fix(t)
		f.user()
		want := f.user()
		got, err := f.s.GetUserByEmail(f.ctx, want.Email)
		f.ok(err, "GetUserByEmail")
		assertSame(t, "GetUserByEmail", got, want)
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		f := s.fix(t)
		f.user()
		_, err := f.s.GetUserByEmail(f.ctx, "nobody@example.com")
		wantErr(t, "GetUserByEmail", err, account.ErrUserNotFound())
	})
}

func (s suite) updateUser(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		f := s.fix(t)
		old := f.user()
		want := old
		want.Name, want.UpdatedAt = "Ada King", f.now()
		got, err := f.s.UpdateUser(f.ctx, old.ID, account.UserPatch{Name: &want.Name, UpdatedAt: want.UpdatedAt})
		f.ok(err, "UpdateUser")
		assertSame(t, "the user UpdateUser returned", got, want)
		fresh, err := f.s.GetUser(f.ctx, old.ID)
		f.ok(err, "GetUser")
		assertSame(t, "the user GetUser returned", fresh, got)
	})
	t.Run("OnlyPatchedFieldsChange", func(t *testing.T) {
		// E-mail, role and created_at are never patched, so the e-mail
		// guard keeps matching the stored e-mail; a nil name is kept.
		f := s.fix(t)
		old := f.user()
		want := old
		want.Name, want.UpdatedAt = "Ada King", f.now()
		_, err := f.s.UpdateUser(f.ctx, old.ID, account.UserPatch{Name: &want.Name, UpdatedAt: want.UpdatedAt})
		f.ok(err, "UpdateUser of the name")
		want.UpdatedAt = f.now()
		got, err := f.s.UpdateUser(f.ctx, old.ID, account.UserPatch{UpdatedAt: want.UpdatedAt})
		f.ok(err, "UpdateUser of updated_at alone")
		assertSame(t, "the user after an empty patch", got, want)
		fresh, err := f.s.GetUserByEmail(f.ctx, old.Email)
		f.ok(err, "GetUserByEmail")
		assertSame(t, "the user GetUserByEmail returned", fresh, want)
		taken := f.newUser()
		taken.Email = old.Email
		wantErr(t, "CreateUser with the kept e-mail", f.s.CreateUser(f.ctx, taken), account.ErrEmailTaken())
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		f := s.fix(t)
		f.user()
		u := f.newUser()
		_, err := f.s.UpdateUser(f.ctx, u.ID, account.UserPatch{Name: &u.Name, UpdatedAt: f.now()})
		wantErr(t, "UpdateUser of a missing user", err, account.ErrUserNotFound())
		_, err = f.s.GetUser(f.ctx, u.ID)
		wantErr(t, "GetUser after UpdateUser of a missing user", err, account.ErrUserNotFound())
		deleted := f.user()
		f.ok(f.s.DeleteUser(f.ctx, deleted.ID), "DeleteUser")
		_, err = f.s.UpdateUser(f.ctx, deleted.ID, account.UserPatch{Name: &u.Name, UpdatedAt: f.now()})
		wantErr(t, "UpdateUser of a deleted user", err, account.ErrUserNotFound())
		_, err = f.s.GetUser(f.ctx, deleted.ID)
		wantErr(t, "GetUser after UpdateUser of a deleted user", err, account.ErrUserNotFound())
	})
}

func (s suite) deleteUser(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		f := s.fix(t)
		u := f.user()
		other := f.user()
		f.ok(f.s.DeleteUser(f.ctx, u.ID), "DeleteUser")
		_, err := f.s.GetUser(f.ctx, u.ID)
		wantErr(t, "GetUser", err, account.ErrUserNotFound())
		_, err = f.s.GetUserByEmail(f.ctx, u.Email)
		wantErr(t, "GetUserByEmail", err, account.ErrUserNotFound())
		got, err := f.s.GetUser(f.ctx, other.ID)
		f.ok(err, "GetUser of another user")
		assertSame(t, "another user", got, other)
	})
	t.Run("FreesEmail", func(t *testing.T) {
		f := s.fix(t)
		u := f.user()
		f.ok(f.s.DeleteUser(f.ctx, u.ID), "DeleteUser")
		again := f.newUser()
		again.Email = u.Email
		f.ok(f.s.CreateUser(f.ctx, again), "CreateUser with the freed e-mail")
		got, err := f.s.GetUserByEmail(f.ctx, u.Email)
		f.ok(err, "GetUserByEmail")
		assertSame(t, "the new owner of the e-mail", got, again)
	})
	t.Run("RemovesMemberships", func(t *testing.T) {
		f := s.fix(t)
		u, other := f.user(), f.user()
		orgs := []account.Organization{f.org(), f.org(), f.org()}
		var kept []account.Membership
		for _, o := range orgs {
			f.member(o.ID, u.ID)
			kept = append(kept, f.member(o.ID, other.ID))
		}
		f.ok(f.s.DeleteUser(f.ctx, u.ID), "DeleteUser")
		for i, o := range orgs {
			_, err := f.s.GetMember(f.ctx, o.ID, u.ID)
			wantErr(t, "GetMember of the deleted user", err, account.ErrMembershipNotFound())
			page, err := f.s.ListMembers(f.ctx, o.ID, account.ListParams{Limit: 100})
			f.ok(err, "ListMembers")
			if len(page.Items) != 1 {
				t.Fatalf("ListMembers after DeleteUser: got %d members, want 1 (the other user)", len(page.Items))
			}
			assertSame(t, "the other user's membership", page.Items[0], kept[i])
		}
		page, err := f.s.ListUserMemberships(f.ctx, u.ID, account.ListParams{Limit: 100})
		f.ok(err, "ListUserMemberships")
		if len(page.Items) != 0 || page.Next != "" {
			t.Errorf("ListUserMemberships of the deleted user: got %d items and Next %q, want none", len(page.Items), page.Next)
		}
		page, err = f.s.ListUserMemberships(f.ctx, other.ID, account.ListParams{Limit: 100})
		f.ok(err, "ListUserMemberships of the other user")
		if len(page.Items) != len(orgs) {
			t.Errorf("ListUserMemberships of the other user: got %d, want %d", len(page.Items), len(orgs))
		}
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		f := s.fix(t)
		f.user()
		wantErr(t, "DeleteUser", f.s.DeleteUser(f.ctx, account.NewID(account.PrefixUser, f.now())), account.ErrUserNotFound())
	})
	t.Run("Twice", func(t *testing.T) {
		f := s.fix(t)
		u := f.user()
		f.ok(f.s.DeleteUser(f.ctx, u.ID), "DeleteUser")
		wantErr(t, "DeleteUser again", f.s.DeleteUser(f.ctx, u.ID), account.ErrUserNotFound())
	})
}

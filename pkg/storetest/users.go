package storetest

import (
	"testing"
	"time"

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
		wantCode(t, "CreateUser with a taken e-mail", f.s.CreateUser(f.ctx, second), account.CodeEmailTaken)
		_, err := f.s.GetUser(f.ctx, second.ID)
		wantCode(t, "GetUser of the refused user", err, account.CodeNotFound)
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
		winner := wantOneWinner(t, "CreateUser", errs, account.CodeEmailTaken)
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
		wantCode(t, "GetUser", err, account.CodeNotFound)
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
		wantCode(t, "GetUserByEmail", err, account.CodeNotFound)
	})
}

func (s suite) updateUser(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		f := s.fix(t)
		old := f.user()
		want := old
		want.Name, want.Role, want.UpdatedAt = "Ada King", "admin", f.now()
		f.ok(f.s.UpdateUser(f.ctx, want), "UpdateUser")
		got, err := f.s.GetUser(f.ctx, old.ID)
		f.ok(err, "GetUser")
		assertSame(t, "the updated user", got, want)
	})
	t.Run("KeepsEmailAndCreatedAt", func(t *testing.T) {
		// UpdateUser replaces name, role and updated_at only: the e-mail
		// guard must keep matching the stored e-mail.
		f := s.fix(t)
		old := f.user()
		upd := old
		upd.Name, upd.UpdatedAt = "Ada King", f.now()
		upd.Email, upd.CreatedAt = "other@example.com", old.CreatedAt.Add(-time.Hour)
		f.ok(f.s.UpdateUser(f.ctx, upd), "UpdateUser")
		want := old
		want.Name, want.UpdatedAt = upd.Name, upd.UpdatedAt
		got, err := f.s.GetUserByEmail(f.ctx, old.Email)
		f.ok(err, "GetUserByEmail of the old e-mail")
		assertSame(t, "the updated user", got, want)
		_, err = f.s.GetUserByEmail(f.ctx, "other@example.com")
		wantCode(t, "GetUserByEmail of the ignored e-mail", err, account.CodeNotFound)
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		f := s.fix(t)
		u := f.newUser()
		wantCode(t, "UpdateUser", f.s.UpdateUser(f.ctx, u), account.CodeNotFound)
		_, err := f.s.GetUser(f.ctx, u.ID)
		wantCode(t, "GetUser after UpdateUser of a missing user", err, account.CodeNotFound)
	})
}

func (s suite) deleteUser(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		f := s.fix(t)
		u := f.user()
		other := f.user()
		f.ok(f.s.DeleteUser(f.ctx, u.ID), "DeleteUser")
		_, err := f.s.GetUser(f.ctx, u.ID)
		wantCode(t, "GetUser", err, account.CodeNotFound)
		_, err = f.s.GetUserByEmail(f.ctx, u.Email)
		wantCode(t, "GetUserByEmail", err, account.CodeNotFound)
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
			wantCode(t, "GetMember of the deleted user", err, account.CodeNotFound)
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
		wantCode(t, "DeleteUser", f.s.DeleteUser(f.ctx, account.NewID(account.PrefixUser, f.now())), account.CodeNotFound)
	})
	t.Run("Twice", func(t *testing.T) {
		f := s.fix(t)
		u := f.user()
		f.ok(f.s.DeleteUser(f.ctx, u.ID), "DeleteUser")
		wantCode(t, "DeleteUser again", f.s.DeleteUser(f.ctx, u.ID), account.CodeNotFound)
	})
}

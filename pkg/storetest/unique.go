package storetest

import (
	"fmt"
	"testing"

	"latchkey/pkg/account"
)

// The unique values of users and organizations besides e-mail and slug
// (external ids), lookups by them, and updates that move a unique value
// (a new e-mail, a new or removed external id). A move claims the new
// value and frees the old one in one atomic step: after it, the old value
// finds nothing and is free to claim, the new one finds the item and is
// taken, whatever ran concurrently.

func (s suite) getUserByExternalID(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		f := s.fix(t)
		f.user()
		want := f.user()
		got, err := f.s.GetUserByExternalID(f.ctx, want.ExternalID)
		f.ok(err, "GetUserByExternalID")
		assertSame(t, "GetUserByExternalID", got, want)
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		f := s.fix(t)
		u := f.user()
		// Compared with its case; an e-mail is not an external id.
		for _, id := range []string{"crm:nobody", "CRM:" + u.ID[4:], u.Email} {
			_, err := f.s.GetUserByExternalID(f.ctx, id)
			wantErr(t, "GetUserByExternalID("+id+")", err, account.ErrUserNotFound())
		}
	})
	t.Run("ErrDeleted", func(t *testing.T) {
		f := s.fix(t)
		u := f.user()
		f.ok(f.s.DeleteUser(f.ctx, f.opts, u.ID), "DeleteUser")
		_, err := f.s.GetUserByExternalID(f.ctx, u.ExternalID)
		wantErr(t, "GetUserByExternalID of a deleted user", err, account.ErrUserNotFound())
		again := f.newUser()
		again.ExternalID = u.ExternalID
		f.ok(f.s.CreateUser(f.ctx, f.opts, again), "CreateUser with the freed external id")
	})
}

func (s suite) getOrganizationBySlug(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		f := s.fix(t)
		f.org()
		want := f.org()
		got, err := f.s.GetOrganizationBySlug(f.ctx, want.Slug)
		f.ok(err, "GetOrganizationBySlug")
		assertSame(t, "GetOrganizationBySlug", got, want)
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		f := s.fix(t)
		o := f.org()
		_, err := f.s.GetOrganizationBySlug(f.ctx, "nobody")
		wantErr(t, "GetOrganizationBySlug", err, account.ErrOrganizationNotFound())
		f.ok(f.s.DeleteOrganization(f.ctx, f.opts, o.ID), "DeleteOrganization")
		_, err = f.s.GetOrganizationBySlug(f.ctx, o.Slug)
		wantErr(t, "GetOrganizationBySlug of a deleted organization", err, account.ErrOrganizationNotFound())
	})
}

func (s suite) getOrganizationByExternalID(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		f := s.fix(t)
		f.org()
		want := f.org()
		got, err := f.s.GetOrganizationByExternalID(f.ctx, want.ExternalID)
		f.ok(err, "GetOrganizationByExternalID")
		assertSame(t, "GetOrganizationByExternalID", got, want)
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		f := s.fix(t)
		o := f.org()
		u := f.user()
		// A user's external id is not an organization's.
		for _, id := range []string{"acct nobody", u.ExternalID} {
			_, err := f.s.GetOrganizationByExternalID(f.ctx, id)
			wantErr(t, "GetOrganizationByExternalID("+id+")", err, account.ErrOrganizationNotFound())
		}
		f.ok(f.s.DeleteOrganization(f.ctx, f.opts, o.ID), "DeleteOrganization")
		_, err := f.s.GetOrganizationByExternalID(f.ctx, o.ExternalID)
		wantErr(t, "GetOrganizationByExternalID of a deleted organization", err, account.ErrOrganizationNotFound())
		again := f.newOrg()
		again.ExternalID = o.ExternalID
		f.ok(f.s.CreateOrganization(f.ctx, f.opts, again), "CreateOrganization with the freed external id")
	})
}

// createUserUnique is part of CreateUser's tests.
func (s suite) createUserUnique(t *testing.T) {
	t.Run("WithoutExternalIDOrMetadata", func(t *testing.T) {
		f := s.fix(t)
		for range 2 { // two users without an external id do not collide
			u := f.newUser()
			u.ExternalID, u.Metadata = "", nil
			f.ok(f.s.CreateUser(f.ctx, f.opts, u), "CreateUser")
			got, err := f.s.GetUser(f.ctx, u.ID)
			f.ok(err, "GetUser")
			assertSame(t, "GetUser", got, u)
			if got.Metadata != nil {
				t.Errorf("Metadata: got %#v, want nil", got.Metadata)
			}
		}
	})
	t.Run("ErrEmailTakenBySameUser", func(t *testing.T) {
		// The same user twice (a retried create, say) collides on its
		// e-mail: the conflict a client can act on, not an internal error
		// for the id, which the store never expects to be taken.
		f := s.fix(t)
		u := f.user()
		wantErr(t, "CreateUser of a user that exists", f.s.CreateUser(f.ctx, f.opts, u), account.ErrEmailTaken())
	})
	t.Run("ErrExternalIDTaken", func(t *testing.T) {
		f := s.fix(t)
		first := f.user()
		second := f.newUser()
		second.ExternalID = first.ExternalID
		wantErr(t, "CreateUser with a taken external id", f.s.CreateUser(f.ctx, f.opts, second), account.ErrUserExternalIDTaken())
		_, err := f.s.GetUser(f.ctx, second.ID)
		wantErr(t, "GetUser of the refused user", err, account.ErrUserNotFound())
		// Nothing of the refused user was kept: its e-mail is free.
		third := f.newUser()
		third.Email = second.Email
		f.ok(f.s.CreateUser(f.ctx, f.opts, third), "CreateUser with the refused user's e-mail")
	})
	t.Run("ConcurrentSameExternalID", func(t *testing.T) {
		f := s.fix(t)
		users := make([]account.User, concurrency)
		for i := range users {
			users[i] = f.newUser()
			users[i].ExternalID = "race"
		}
		errs := race(concurrency, func(i int) error { return f.s.CreateUser(f.ctx, f.opts, users[i]) })
		winner := wantOneWinner(t, "CreateUser", errs, account.ErrUserExternalIDTaken())
		got, err := f.s.GetUserByExternalID(f.ctx, "race")
		f.ok(err, "GetUserByExternalID")
		assertSame(t, "the winning user", got, users[winner])
	})
}

// createOrganizationUnique is part of CreateOrganization's tests.
func (s suite) createOrganizationUnique(t *testing.T) {
	t.Run("WithoutExternalIDOrMetadata", func(t *testing.T) {
		f := s.fix(t)
		for range 2 {
			o := f.newOrg()
			o.ExternalID, o.Metadata = "", nil
			f.ok(f.s.CreateOrganization(f.ctx, f.opts, o), "CreateOrganization")
			got, err := f.s.GetOrganization(f.ctx, o.ID)
			f.ok(err, "GetOrganization")
			assertSame(t, "GetOrganization", got, o)
		}
	})
	t.Run("ErrExternalIDTaken", func(t *testing.T) {
		f := s.fix(t)
		first := f.org()
		second := f.newOrg()
		second.ExternalID = first.ExternalID
		wantErr(t, "CreateOrganization with a taken external id", f.s.CreateOrganization(f.ctx, f.opts, second), account.ErrOrganizationExternalIDTaken())
		third := f.newOrg()
		third.Slug = second.Slug
		f.ok(f.s.CreateOrganization(f.ctx, f.opts, third), "CreateOrganization with the refused organization's slug")
		// Users and organizations have separate external ids.
		u := f.newUser()
		u.ExternalID = first.ExternalID
		f.ok(f.s.CreateUser(f.ctx, f.opts, u), "CreateUser with an organization's external id")
	})
	t.Run("ConcurrentSameExternalID", func(t *testing.T) {
		f := s.fix(t)
		orgs := make([]account.Organization, concurrency)
		for i := range orgs {
			orgs[i] = f.newOrg()
			orgs[i].ExternalID = "race"
		}
		errs := race(concurrency, func(i int) error { return f.s.CreateOrganization(f.ctx, f.opts, orgs[i]) })
		winner := wantOneWinner(t, "CreateOrganization", errs, account.ErrOrganizationExternalIDTaken())
		got, err := f.s.GetOrganizationByExternalID(f.ctx, "race")
		f.ok(err, "GetOrganizationByExternalID")
		assertSame(t, "the winning organization", got, orgs[winner])
	})
}

// updateUserUnique is part of UpdateUser's tests.
func (s suite) updateUserUnique(t *testing.T) {
	t.Run("EveryField", func(t *testing.T) {
		f := s.fix(t)
		old := f.user()
		want := old
		want.Name, want.Role, want.Email, want.ExternalID = "Ada King", "admin", "ada.king."+old.Email, "crm:new "+old.ID
		want.Metadata, want.UpdatedAt = account.Metadata{"tier": "gold"}, f.now()
		got, err := f.s.UpdateUser(f.ctx, f.opts, old.ID, account.UserPatch{
			Name: &want.Name, Role: &want.Role, Email: &want.Email, ExternalID: &want.ExternalID, Metadata: &want.Metadata, UpdatedAt: want.UpdatedAt,
		})
		f.ok(err, "UpdateUser")
		assertSame(t, "the user UpdateUser returned", got, want)
		wantUserValues(t, f, want, old)
	})
	t.Run("RemoveExternalIDAndMetadata", func(t *testing.T) {
		f := s.fix(t)
		old := f.user()
		want := old
		want.ExternalID, want.Metadata, want.UpdatedAt = "", nil, f.now()
		none := account.Metadata{}
		got, err := f.s.UpdateUser(f.ctx, f.opts, old.ID, account.UserPatch{ExternalID: &want.ExternalID, Metadata: &none, UpdatedAt: want.UpdatedAt})
		f.ok(err, "UpdateUser")
		assertSame(t, "the user UpdateUser returned", got, want)
		if got.Metadata != nil {
			t.Errorf("Metadata: got %#v, want nil", got.Metadata)
		}
		wantUserValues(t, f, want, old)
		// And an external id for a user that has none.
		want.ExternalID, want.UpdatedAt = "crm:again "+old.ID, f.now()
		got, err = f.s.UpdateUser(f.ctx, f.opts, old.ID, account.UserPatch{ExternalID: &want.ExternalID, UpdatedAt: want.UpdatedAt})
		f.ok(err, "UpdateUser setting an external id again")
		assertSame(t, "the user UpdateUser returned", got, want)
		wantUserValues(t, f, want, account.User{})
	})
	t.Run("SameValues", func(t *testing.T) {
		// A patch that gives the e-mail and external id the user has
		// changes nothing about them and is not a conflict with itself.
		f := s.fix(t)
		old := f.user()
		want := old
		want.Name, want.UpdatedAt = "Ada King", f.now()
		got, err := f.s.UpdateUser(f.ctx, f.opts, old.ID, account.UserPatch{Name: &want.Name, Email: &old.Email, ExternalID: &old.ExternalID, UpdatedAt: want.UpdatedAt})
		f.ok(err, "UpdateUser")
		assertSame(t, "the user UpdateUser returned", got, want)
		wantUserValues(t, f, want, account.User{})
	})
	t.Run("ErrTaken", func(t *testing.T) {
		// A refused move changes nothing: not the other fields of the
		// patch, not the user's own values.
		f := s.fix(t)
		u, other := f.user(), f.user()
		name := "Not Applied"
		_, err := f.s.UpdateUser(f.ctx, f.opts, u.ID, account.UserPatch{Name: &name, Email: &other.Email, UpdatedAt: f.now()})
		wantErr(t, "UpdateUser to a taken e-mail", err, account.ErrEmailTaken())
		_, err = f.s.UpdateUser(f.ctx, f.opts, u.ID, account.UserPatch{Name: &name, ExternalID: &other.ExternalID, UpdatedAt: f.now()})
		wantErr(t, "UpdateUser to a taken external id", err, account.ErrUserExternalIDTaken())
		free := "free@example.com"
		_, err = f.s.UpdateUser(f.ctx, f.opts, u.ID, account.UserPatch{Name: &name, Email: &free, ExternalID: &other.ExternalID, UpdatedAt: f.now()})
		wantErr(t, "UpdateUser to a free e-mail and a taken external id", err, account.ErrUserExternalIDTaken())
		got, err := f.s.GetUser(f.ctx, u.ID)
		f.ok(err, "GetUser")
		assertSame(t, "the user after refused updates", got, u)
		wantUserValues(t, f, u, account.User{})
		wantUserValues(t, f, other, account.User{})
		_, err = f.s.GetUserByEmail(f.ctx, free)
		wantErr(t, "GetUserByEmail of the e-mail a refused update gave", err, account.ErrUserNotFound())
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		f := s.fix(t)
		u := f.user()
		f.ok(f.s.DeleteUser(f.ctx, f.opts, u.ID), "DeleteUser")
		email, ext := "new@example.com", "crm:new"
		_, err := f.s.UpdateUser(f.ctx, f.opts, u.ID, account.UserPatch{Email: &email, ExternalID: &ext, UpdatedAt: f.now()})
		wantErr(t, "UpdateUser of a deleted user", err, account.ErrUserNotFound())
		for _, n := range []account.User{{Email: email, ExternalID: ext}} {
			c := f.newUser()
			c.Email, c.ExternalID = n.Email, n.ExternalID
			f.ok(f.s.CreateUser(f.ctx, f.opts, c), "CreateUser with what the refused update gave")
		}
	})
	t.Run("ConcurrentMovesToOneEmail", func(t *testing.T) {
		// Many users move to the same e-mail at once: one gets it, the
		// others keep theirs.
		f := s.fix(t)
		users := make([]account.User, concurrency/2)
		for i := range users {
			users[i] = f.user()
		}
		target := "wanted@example.com"
		errs := race(len(users), func(i int) error {
			_, err := f.s.UpdateUser(f.ctx, f.opts, users[i].ID, account.UserPatch{Email: &target, UpdatedAt: f.now()})
			return err
		})
		winner := wantOneWinner(t, "UpdateUser", errs, account.ErrEmailTaken())
		got, err := f.s.GetUserByEmail(f.ctx, target)
		f.ok(err, "GetUserByEmail")
		if got.ID != users[winner].ID {
			t.Errorf("the e-mail belongs to %s, want %s", got.ID, users[winner].ID)
		}
		for i, u := range users {
			if i != winner {
				wantUserValues(t, f, u, account.User{})
			}
		}
		_, err = f.s.GetUserByEmail(f.ctx, users[winner].Email)
		wantErr(t, "GetUserByEmail of the winner's old e-mail", err, account.ErrUserNotFound())
	})
	t.Run("ConcurrentMovesOfOneUser", func(t *testing.T) {
		// One user is moved to many e-mails and external ids at once, with
		// other fields patched too. Whichever order they commit in, the
		// user ends with one e-mail and one external id, each guarded, and
		// every other value free: none leaks, none is held twice.
		f := s.fix(t)
		u := f.user()
		const n = 10
		emails, exts, names := make([]string, n), make([]string, n), make([]string, n)
		for i := range n {
			emails[i], exts[i], names[i] = fmt.Sprintf("move%d@example.com", i), fmt.Sprintf("crm:move %d", i), fmt.Sprintf("Name %d", i)
		}
		errs := race(n, func(i int) error {
			p := account.UserPatch{Email: &emails[i], Name: &names[i], UpdatedAt: f.now()}
			if i%2 == 0 {
				p.ExternalID = &exts[i]
			}
			_, err := f.s.UpdateUser(f.ctx, f.opts, u.ID, p)
			return err
		})
		for i, err := range errs {
			// A store may give up on a user changed too often under it,
			// asking the client to retry (a lost race, not an outage:
			// CodeConcurrentUpdate); it must never half-apply.
			if err != nil && !account.IsCode(err, account.CodeConcurrentUpdate) {
				t.Errorf("UpdateUser %d: %v", i, err)
			}
		}
		got, err := f.s.GetUser(f.ctx, u.ID)
		f.ok(err, "GetUser")
		wantUserValues(t, f, got, account.User{})
		for i := range n {
			if emails[i] != got.Email {
				c := f.newUser()
				c.Email = emails[i]
				f.ok(f.s.CreateUser(f.ctx, f.opts, c), "CreateUser with an e-mail the user moved away from")
			}
			if exts[i] != got.ExternalID {
				c := f.newUser()
				c.ExternalID = exts[i]
				f.ok(f.s.CreateUser(f.ctx, f.opts, c), "CreateUser with an external id the user moved away from")
			}
		}
		if got.Email != u.Email {
			c := f.newUser()
			c.Email = u.Email
			f.ok(f.s.CreateUser(f.ctx, f.opts, c), "CreateUser with the user's first e-mail")
		}
	})
}

// wantUserValues checks that u's e-mail and external id find u, and that
// old's (unless they are u's, or empty) find nobody and are free.
func wantUserValues(t *testing.T, f *fixture, u, old account.User) {
	t.Helper()
	got, err := f.s.GetUserByEmail(f.ctx, u.Email)
	f.ok(err, "GetUserByEmail("+u.Email+")")
	if got.ID != u.ID {
		t.Errorf("GetUserByEmail(%s): got user %s, want %s", u.Email, got.ID, u.ID)
	}
	if u.ExternalID != "" {
		got, err := f.s.GetUserByExternalID(f.ctx, u.ExternalID)
		f.ok(err, "GetUserByExternalID("+u.ExternalID+")")
		if got.ID != u.ID {
			t.Errorf("GetUserByExternalID(%s): got user %s, want %s", u.ExternalID, got.ID, u.ID)
		}
	}
	if old.Email != "" && old.Email != u.Email {
		_, err := f.s.GetUserByEmail(f.ctx, old.Email)
		wantErr(t, "GetUserByEmail of the old e-mail", err, account.ErrUserNotFound())
		c := f.newUser()
		c.Email = old.Email
		f.ok(f.s.CreateUser(f.ctx, f.opts, c), "CreateUser with the old e-mail")
	}
	if old.ExternalID != "" && old.ExternalID != u.ExternalID {
		_, err := f.s.GetUserByExternalID(f.ctx, old.ExternalID)
		wantErr(t, "GetUserByExternalID of the old external id", err, account.ErrUserNotFound())
		c := f.newUser()
		c.ExternalID = old.ExternalID
		f.ok(f.s.CreateUser(f.ctx, f.opts, c), "CreateUser with the old external id")
	}
}

// updateOrganizationUnique is part of UpdateOrganization's tests.
func (s suite) updateOrganizationUnique(t *testing.T) {
	t.Run("ExternalIDAndMetadata", func(t *testing.T) {
		f := s.fix(t)
		old := f.org()
		want := old
		want.ExternalID, want.Metadata, want.Name, want.UpdatedAt = "acct new", account.Metadata{"region": "us"}, "Renamed", f.now()
		got, err := f.s.UpdateOrganization(f.ctx, f.opts, old.ID, account.OrganizationPatch{Name: &want.Name, ExternalID: &want.ExternalID, Metadata: &want.Metadata, UpdatedAt: want.UpdatedAt})
		f.ok(err, "UpdateOrganization")
		assertSame(t, "the organization UpdateOrganization returned", got, want)
		fresh, err := f.s.GetOrganizationByExternalID(f.ctx, want.ExternalID)
		f.ok(err, "GetOrganizationByExternalID of the new external id")
		assertSame(t, "the organization by its new external id", fresh, want)
		_, err = f.s.GetOrganizationByExternalID(f.ctx, old.ExternalID)
		wantErr(t, "GetOrganizationByExternalID of the old external id", err, account.ErrOrganizationNotFound())
		c := f.newOrg()
		c.ExternalID = old.ExternalID
		f.ok(f.s.CreateOrganization(f.ctx, f.opts, c), "CreateOrganization with the freed external id")

		want.ExternalID, want.Metadata, want.UpdatedAt = "", nil, f.now()
		none := account.Metadata{}
		got, err = f.s.UpdateOrganization(f.ctx, f.opts, old.ID, account.OrganizationPatch{ExternalID: &want.ExternalID, Metadata: &none, UpdatedAt: want.UpdatedAt})
		f.ok(err, "UpdateOrganization removing the external id")
		assertSame(t, "the organization without an external id", got, want)
		c = f.newOrg()
		c.ExternalID = "acct new"
		f.ok(f.s.CreateOrganization(f.ctx, f.opts, c), "CreateOrganization with the removed external id")
	})
	t.Run("ErrExternalIDTaken", func(t *testing.T) {
		f := s.fix(t)
		o, other := f.org(), f.org()
		name := "Not Applied"
		_, err := f.s.UpdateOrganization(f.ctx, f.opts, o.ID, account.OrganizationPatch{Name: &name, ExternalID: &other.ExternalID, UpdatedAt: f.now()})
		wantErr(t, "UpdateOrganization to a taken external id", err, account.ErrOrganizationExternalIDTaken())
		got, err := f.s.GetOrganization(f.ctx, o.ID)
		f.ok(err, "GetOrganization")
		assertSame(t, "the organization after a refused update", got, o)
		got, err = f.s.GetOrganizationByExternalID(f.ctx, other.ExternalID)
		f.ok(err, "GetOrganizationByExternalID")
		assertSame(t, "the holder of the external id", got, other)
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		f := s.fix(t)
		o := f.org()
		f.ok(f.s.DeleteOrganization(f.ctx, f.opts, o.ID), "DeleteOrganization")
		ext := "acct other"
		_, err := f.s.UpdateOrganization(f.ctx, f.opts, o.ID, account.OrganizationPatch{ExternalID: &ext, UpdatedAt: f.now()})
		wantErr(t, "UpdateOrganization of a deleted organization", err, account.ErrOrganizationNotFound())
		c := f.newOrg()
		c.ExternalID = ext
		f.ok(f.s.CreateOrganization(f.ctx, f.opts, c), "CreateOrganization with what the refused update gave")
	})
}

package console

import (
	"net/http"

	"latchkey/pkg/account"
)

// users lists the users, newest first, or finds one by e-mail or external
// id, with the form that creates one.
func (c *console) users(w http.ResponseWriter, r *http.Request, s *session) {
	c.usersPage(w, r, s, newView(r, s, "Users", "users"), http.StatusOK)
}

func (c *console) usersPage(w http.ResponseWriter, r *http.Request, s *session, v *view, status int) {
	d := searchOf[account.User](r.URL.Query(), "email", "external_id")
	query := account.UserQuery{PageRequest: account.PageRequest{Cursor: r.URL.Query().Get("cursor")}}
	if d.By == "external_id" {
		query.ExternalID = d.Q
	} else {
		query.Email = d.Q
	}
	l, err := c.svc.ListUsers(r.Context(), s.p, query)
	d.List = listed(v, &status, l, err)
	v.Data = d
	c.render(w, r, status, "users", v)
}

func (c *console) createUser(w http.ResponseWriter, r *http.Request, s *session) {
	v := newView(r, s, "Users", "users")
	u, err := func() (account.User, error) {
		f, m, err := parseEdit(w, r, v)
		if err != nil {
			return account.User{}, err
		}
		return c.svc.CreateUser(r.Context(), s.p, account.NewUser{
			Email: f.Get("email"), Name: f.Get("name"), Role: f.Get("role"),
			ExternalID: f.Get("external_id"), Metadata: m,
		})
	}()
	answer(w, r, s, v, err, c.usersPage, "/console/users/"+u.ID, "created")
}

type userData struct {
	User        account.User
	Memberships page[account.UserMembership]
}

func (c *console) user(w http.ResponseWriter, r *http.Request, s *session) {
	c.userPage(w, r, s, newView(r, s, "User", "users"), http.StatusOK)
}

func (c *console) userPage(w http.ResponseWriter, r *http.Request, s *session, v *view, status int) {
	id := r.PathValue("id")
	u, err := c.svc.GetUser(r.Context(), s.p, id)
	if err != nil {
		c.fail(w, r, s, "error", &view{Title: "User", Nav: "users"}, err)
		return
	}
	v.Title = u.Email
	l, err := c.svc.ListUserMemberships(r.Context(), s.p, id, account.PageRequest{Cursor: r.URL.Query().Get("cursor")})
	v.Data = userData{User: u, Memberships: listed(v, &status, l, err)}
	c.render(w, r, status, "user", v)
}

func (c *console) updateUser(w http.ResponseWriter, r *http.Request, s *session) {
	id := r.PathValue("id")
	v := newView(r, s, "User", "users")
	err := func() error {
		f, m, err := parseEdit(w, r, v)
		if err != nil {
			return err
		}
		email, name, role, ext := f.Get("email"), f.Get("name"), f.Get("role"), f.Get("external_id")
		_, err = c.svc.UpdateUser(r.Context(), s.p, id, account.UserUpdate{Email: &email, Name: &name, Role: &role, ExternalID: &ext, Metadata: &m})
		return err
	}()
	answer(w, r, s, v, err, c.userPage, "/console/users/"+id, "saved")
}

type deleteUserData struct {
	User        account.User
	Memberships int
	More        bool
}

// confirmDeleteUser says what deleting the user takes with it (its
// memberships), and asks.
func (c *console) confirmDeleteUser(w http.ResponseWriter, r *http.Request, s *session) {
	id := r.PathValue("id")
	u, err := c.svc.GetUser(r.Context(), s.p, id)
	if err != nil {
		c.fail(w, r, s, "error", &view{Title: "User", Nav: "users"}, err)
		return
	}
	d := deleteUserData{User: u}
	if l, err := c.svc.ListUserMemberships(r.Context(), s.p, id, account.PageRequest{Limit: "100"}); err == nil {
		d.Memberships, d.More = len(l.Items), l.HasMore
	}
	v := newView(r, s, "Delete "+u.Email, "users")
	v.Data = d
	c.render(w, r, http.StatusOK, "user-delete", v)
}

func (c *console) deleteUser(w http.ResponseWriter, r *http.Request, s *session) {
	if err := c.svc.DeleteUser(r.Context(), s.p, r.PathValue("id")); err != nil {
		c.fail(w, r, s, "error", &view{Title: "Delete user", Nav: "users"}, err)
		return
	}
	redirect(w, r, "/console/users", "deleted")
}

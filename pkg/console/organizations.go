package console

import (
	"net/http"
	"slices"

	"latchkey/pkg/account"
)

// organizations lists the organizations, newest first, or finds one by
// slug or external id, with the form that creates one.
func (c *console) organizations(w http.ResponseWriter, r *http.Request, s *session) {
	c.organizationsPage(w, r, s, newView(r, s, "Organizations", "organizations"), http.StatusOK)
}

func (c *console) organizationsPage(w http.ResponseWriter, r *http.Request, s *session, v *view, status int) {
	d := searchOf[account.Organization](r.URL.Query(), "slug", "external_id")
	query := account.OrganizationQuery{PageRequest: account.PageRequest{Cursor: r.URL.Query().Get("cursor")}}
	if d.By == "external_id" {
		query.ExternalID = d.Q
	} else {
		query.Slug = d.Q
	}
	l, err := c.svc.ListOrganizations(r.Context(), s.p, query)
	d.List = listed(v, &status, l, err)
	v.Data = d
	c.render(w, r, status, "organizations", v)
}

func (c *console) createOrganization(w http.ResponseWriter, r *http.Request, s *session) {
	v := newView(r, s, "Organizations", "organizations")
	o, err := func() (account.Organization, error) {
		f, m, err := parseEdit(w, r, v)
		if err != nil {
			return account.Organization{}, err
		}
		return c.svc.CreateOrganization(r.Context(), s.p, account.NewOrganization{
			Name: f.Get("name"), Slug: f.Get("slug"), Plan: f.Get("plan"),
			ExternalID: f.Get("external_id"), Metadata: m,
		})
	}()
	answer(w, r, s, v, err, c.organizationsPage, "/console/organizations/"+o.ID, "created")
}

// memberRow is a member as the organization's page shows it.
type memberRow struct {
	account.Membership
	User *account.User // nil when the session cannot read users, or it is gone
	// LastOwner: the organization's only owner, which can be neither
	// demoted nor removed (account.ErrLastOwner); known when the page
	// holds every member.
	LastOwner bool
}

type organizationData struct {
	Org     account.Organization
	Members page[memberRow]
	// Owners is how many owners the page shows; Complete says the page
	// holds every member, so that the count is the organization's.
	Owners   int
	Complete bool
	Usage    usageView
	// RateLimits are where the organization's rate limits stand now.
	RateLimits []rateLimitNow
	// Candidates are the users the add-member form offers by name: those
	// not among the members shown. Nil when the form takes an e-mail
	// address or id instead.
	Candidates []account.User
}

// ChooseUser reports whether the add-member form offers the users by
// name.
func (d organizationData) ChooseUser() bool { return d.Candidates != nil }

// membersPage is how many members the organization's page shows: enough
// for most organizations to be seen whole, with the last-owner rule.
const membersPage = "100"

func (c *console) organization(w http.ResponseWriter, r *http.Request, s *session) {
	c.organizationPage(w, r, s, newView(r, s, "Organization", "organizations"), http.StatusOK)
}

func (c *console) organizationPage(w http.ResponseWriter, r *http.Request, s *session, v *view, status int) {
	id := r.PathValue("id")
	o, err := c.svc.GetOrganization(r.Context(), s.p, id)
	if err != nil {
		c.fail(w, r, s, "error", &view{Title: "Organization", Nav: "organizations"}, err)
		return
	}
	v.Title = o.Name
	cursor := r.URL.Query().Get("cursor")
	l, err := c.svc.ListMembers(r.Context(), s.p, id, account.PageRequest{Limit: membersPage, Cursor: cursor})
	members := listed(v, &status, l, err)
	d := organizationData{Org: o, Complete: cursor == "" && !l.HasMore}
	states, err := c.svc.OrganizationRateLimits(r.Context(), s.p, o)
	d.RateLimits = rateLimitsNow(o.RateLimits, states, err, c.svc.Now())
	d.Members.Next = members.Next
	for _, m := range members.Items {
		row := memberRow{Membership: m}
		if s.Can(account.ScopeReadUsers) {
			if u, err := c.svc.GetUser(r.Context(), s.p, m.UserID); err == nil {
				row.User = &u
			}
		}
		if m.Role == account.OwnerRole {
			d.Owners++
		}
		d.Members.Items = append(d.Members.Items, row)
	}
	if d.Complete && d.Owners == 1 {
		for i := range d.Members.Items {
			d.Members.Items[i].LastOwner = d.Members.Items[i].Role == account.OwnerRole
		}
	}
	d.Usage = c.usage(r, s, account.APIKey{}, &o)
	if s.Can(account.ScopeWriteOrganizations) {
		if users := c.choicesFor(r, s, false, true).Users; users != nil {
			d.Candidates = []account.User{}
			for _, u := range users {
				if !slices.ContainsFunc(d.Members.Items, func(m memberRow) bool { return m.UserID == u.ID }) {
					d.Candidates = append(d.Candidates, u)
				}
			}
		}
	}
	v.Data = d
	c.render(w, r, status, "organization", v)
}

func (c *console) updateOrganization(w http.ResponseWriter, r *http.Request, s *session) {
	id := r.PathValue("id")
	v := newView(r, s, "Organization", "organizations")
	err := func() error {
		f, m, err := parseEdit(w, r, v)
		if err != nil {
			return err
		}
		name, plan, ext := f.Get("name"), f.Get("plan"), f.Get("external_id")
		_, err = c.svc.UpdateOrganization(r.Context(), s.p, id, account.OrganizationUpdate{Name: &name, Plan: &plan, ExternalID: &ext, Metadata: &m})
		return err
	}()
	answer(w, r, s, v, err, c.organizationPage, "/console/organizations/"+id, "saved")
}

type deleteOrganizationData struct {
	Org account.Organization
	// Members and Keys are what the delete takes with it: counts of the
	// first page of each, More when there are more.
	Members, Keys         int
	MoreMembers, MoreKeys bool
	KeysKnown             bool
}

// confirmDeleteOrganization says what deleting the organization takes with
// it, and asks.
func (c *console) confirmDeleteOrganization(w http.ResponseWriter, r *http.Request, s *session) {
	id := r.PathValue("id")
	o, err := c.svc.GetOrganization(r.Context(), s.p, id)
	if err != nil {
		c.fail(w, r, s, "error", &view{Title: "Organization", Nav: "organizations"}, err)
		return
	}
	d := deleteOrganizationData{Org: o}
	if s.Can(account.ScopeReadOrganizations) {
		if l, err := c.svc.ListMembers(r.Context(), s.p, id, account.PageRequest{Limit: membersPage}); err == nil {
			d.Members, d.MoreMembers = len(l.Items), l.HasMore
		}
	}
	if s.Can(account.ScopeReadAPIKeys) {
		if l, err := c.svc.ListAPIKeys(r.Context(), s.p, account.PageRequest{Limit: "100"}, account.APIKeyFilter{OrganizationID: id}); err == nil {
			d.Keys, d.MoreKeys, d.KeysKnown = len(l.Items), l.HasMore, true
		}
	}
	v := newView(r, s, "Delete "+o.Name, "organizations")
	v.Data = d
	c.render(w, r, http.StatusOK, "organization-delete", v)
}

func (c *console) deleteOrganization(w http.ResponseWriter, r *http.Request, s *session) {
	if err := c.svc.DeleteOrganization(r.Context(), s.p, r.PathValue("id")); err != nil {
		c.fail(w, r, s, "error", &view{Title: "Delete organization", Nav: "organizations"}, err)
		return
	}
	redirect(w, r, "/console/organizations", "deleted")
}

func (c *console) addMember(w http.ResponseWriter, r *http.Request, s *session) {
	id := r.PathValue("id")
	v := newView(r, s, "Organization", "organizations")
	err := func() error {
		if err := parseForm(w, r); err != nil {
			return err
		}
		v.Form = r.PostForm
		userID := r.PostForm.Get("user_id")
		// An operator knows a user by e-mail more often than by id.
		if email := r.PostForm.Get("email"); userID == "" && email != "" {
			l, err := c.svc.ListUsers(r.Context(), s.p, account.UserQuery{Email: email})
			if err != nil {
				return err
			}
			if len(l.Items) == 0 {
				return &account.Error{Code: account.CodeInvalidRequest, Message: "the request is invalid",
					Fields: []account.FieldError{{Field: "email", Message: "no user has this e-mail address"}}}
			}
			userID = l.Items[0].ID
		}
		_, err := c.svc.AddMember(r.Context(), s.p, id, account.NewMember{UserID: userID, Role: r.PostForm.Get("role")})
		return err
	}()
	answer(w, r, s, v, err, c.organizationPage, "/console/organizations/"+id, "member-added")
}

func (c *console) updateMember(w http.ResponseWriter, r *http.Request, s *session) {
	id := r.PathValue("id")
	v := newView(r, s, "Organization", "organizations")
	err := parseForm(w, r)
	if err == nil {
		_, err = c.svc.UpdateMember(r.Context(), s.p, id, r.PathValue("user_id"), r.PostForm.Get("role"))
	}
	answer(w, r, s, v, err, c.organizationPage, "/console/organizations/"+id, "member-updated")
}

func (c *console) removeMember(w http.ResponseWriter, r *http.Request, s *session) {
	id := r.PathValue("id")
	err := c.svc.RemoveMember(r.Context(), s.p, id, r.PathValue("user_id"))
	answer(w, r, s, newView(r, s, "Organization", "organizations"), err, c.organizationPage, "/console/organizations/"+id, "member-removed")
}

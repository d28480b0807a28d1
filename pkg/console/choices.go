package console

import (
	"net/http"

	"latchkey/pkg/account"
)

// choicePages bounds the pages of 100 a form reads to offer a choice by
// name: up to 500 organizations or users are a select list; beyond that,
// or without the scope to list them, the form takes an id typed in.
const choicePages = 5

// choices is what a form offers to choose from, by name.
type choices struct {
	// Orgs and Users are the organizations and users to choose from;
	// nil when the form takes an id instead.
	Orgs  []account.Organization
	Users []account.User
}

// readAll reads the pages of a list, up to choicePages, and reports
// whether they were all of it.
func readAll[T any](list func(account.PageRequest) (account.List[T], error)) ([]T, bool) {
	var all []T
	cursor := ""
	for range choicePages {
		l, err := list(account.PageRequest{Limit: "100", Cursor: cursor})
		if err != nil {
			return nil, false
		}
		all = append(all, l.Items...)
		if !l.HasMore {
			return all, true
		}
		cursor = l.NextCursor
	}
	return nil, false
}

// choicesFor reads the organizations and users the session may list,
// when they are few enough to choose from.
func (c *console) choicesFor(r *http.Request, s *session, orgs, users bool) choices {
	var ch choices
	if orgs && s.Can(account.ScopeReadOrganizations) {
		if all, ok := readAll(func(p account.PageRequest) (account.List[account.Organization], error) {
			return c.svc.ListOrganizations(r.Context(), s.p, account.OrganizationQuery{PageRequest: p})
		}); ok {
			ch.Orgs = all
			if ch.Orgs == nil {
				ch.Orgs = []account.Organization{}
			}
		}
	}
	if users && s.Can(account.ScopeReadUsers) {
		if all, ok := readAll(func(p account.PageRequest) (account.List[account.User], error) {
			return c.svc.ListUsers(r.Context(), s.p, account.UserQuery{PageRequest: p})
		}); ok {
			ch.Users = all
			if ch.Users == nil {
				ch.Users = []account.User{}
			}
		}
	}
	return ch
}

// ChooseOrg reports whether the form offers the organizations by name.
func (ch choices) ChooseOrg() bool { return ch.Orgs != nil }

// ChooseUser reports whether the form offers the users by name.
func (ch choices) ChooseUser() bool { return ch.Users != nil }

// OrgName is the name of the organization id among the choices, "" if
// it is not one of them.
func (ch choices) OrgName(id string) string {
	for _, o := range ch.Orgs {
		if o.ID == id {
			return o.Name
		}
	}
	return ""
}

// UserName is how the user id among the choices is shown: its e-mail
// address, with its name when it has one; "" if it is not one of them.
func (ch choices) UserName(id string) string {
	for _, u := range ch.Users {
		if u.ID == id {
			if u.Name != "" {
				return u.Email + " (" + u.Name + ")"
			}
			return u.Email
		}
	}
	return ""
}

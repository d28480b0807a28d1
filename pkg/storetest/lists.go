package storetest

import (
	"fmt"
	"slices"
	"testing"

	"latchkey/pkg/account"
)

// listOps is one list of the Store, made uniform so that every list gets
// the same paging tests.
type listOps[T any] struct {
	// add stores one new item, newer than every item before it.
	add func() T
	// list reads one page.
	list func(p account.ListParams) (account.Page[T], error)
	// remove deletes an item from the list.
	remove func(T)
	// key identifies an item.
	key func(T) string
}

// maxPages stops a walk through a store whose Next never ends.
const maxPages = 1000

func usersList(f *fixture) listOps[account.User] {
	return listOps[account.User]{
		add:    f.user,
		list:   func(p account.ListParams) (account.Page[account.User], error) { return f.s.ListUsers(f.ctx, p) },
		remove: func(u account.User) { f.ok(f.s.DeleteUser(f.ctx, f.opts, u.ID), "DeleteUser") },
		key:    func(u account.User) string { return u.ID },
	}
}

func organizationsList(f *fixture) listOps[account.Organization] {
	return listOps[account.Organization]{
		add: f.org,
		list: func(p account.ListParams) (account.Page[account.Organization], error) {
			return f.s.ListOrganizations(f.ctx, p)
		},
		remove: func(o account.Organization) { f.ok(f.s.DeleteOrganization(f.ctx, f.opts, o.ID), "DeleteOrganization") },
		key:    func(o account.Organization) string { return o.ID },
	}
}

func apiKeysList(f *fixture) listOps[account.APIKey] {
	return listOps[account.APIKey]{
		add: f.key,
		list: func(p account.ListParams) (account.Page[account.APIKey], error) {
			return f.s.ListAPIKeys(f.ctx, account.APIKeyFilter{}, p)
		},
		remove: func(k account.APIKey) { f.ok(f.s.DeleteAPIKey(f.ctx, f.opts, k.ID, nil), "DeleteAPIKey") },
		key:    func(k account.APIKey) string { return k.ID },
	}
}

func membershipKey(m account.Membership) string { return m.OrganizationID + "/" + m.UserID }

func removeMembership(f *fixture) func(account.Membership) {
	return func(m account.Membership) {
		f.t.Helper()
		f.ok(f.s.RemoveMember(f.ctx, f.opts, m.OrganizationID, m.UserID), "RemoveMember")
	}
}

// membersList lists one organization's members. Another organization with
// a member of its own shares the store, and must never show up.
func membersList(f *fixture) listOps[account.Membership] {
	o := f.org()
	f.member(f.org().ID, f.user().ID)
	return listOps[account.Membership]{
		add: func() account.Membership { return f.member(o.ID, f.user().ID) },
		list: func(p account.ListParams) (account.Page[account.Membership], error) {
			return f.s.ListMembers(f.ctx, o.ID, p)
		},
		remove: removeMembership(f),
		key:    membershipKey,
	}
}

// userMembershipsList lists one user's memberships, beside another user's,
// each with its organization's name and slug.
func userMembershipsList(f *fixture) listOps[account.UserMembership] {
	u := f.user()
	f.member(f.org().ID, f.user().ID)
	return listOps[account.UserMembership]{
		add: func() account.UserMembership {
			o := f.newOrg()
			o.Name = "Org " + o.ID // a name of its own, to tell them apart
			f.ok(f.s.CreateOrganization(f.ctx, f.opts, o), "CreateOrganization")
			return account.UserMembership{Membership: f.member(o.ID, u.ID), OrganizationName: o.Name, OrganizationSlug: o.Slug}
		},
		list: func(p account.ListParams) (account.Page[account.UserMembership], error) {
			return f.s.ListUserMemberships(f.ctx, u.ID, p)
		},
		remove: func(m account.UserMembership) { removeMembership(f)(m.Membership) },
		key:    func(m account.UserMembership) string { return membershipKey(m.Membership) },
	}
}

// runList runs the paging tests on one list.
func runList[T any](t *testing.T, s suite, setup func(f *fixture) listOps[T]) {
	start := func(t *testing.T, n int) (*fixture, listOps[T], []T) {
		t.Helper()
		f := s.fix(t)
		ops := setup(f)
		items := make([]T, n)
		for i := range items {
			items[i] = ops.add()
		}
		slices.Reverse(items) // newest first
		return f, ops, items
	}

	t.Run("Empty", func(t *testing.T) {
		_, ops, _ := start(t, 0)
		page, err := ops.list(account.ListParams{Limit: 100})
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		if len(page.Items) != 0 || page.Next != "" {
			t.Errorf("got %d items and Next %q, want none and \"\"", len(page.Items), page.Next)
		}
	})

	t.Run("NewestFirst", func(t *testing.T) {
		_, ops, want := start(t, 5)
		page, err := ops.list(account.ListParams{Limit: 100})
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		if page.Next != "" {
			t.Errorf("Next of the only page: got %q, want \"\"", page.Next)
		}
		assertKeys(t, ops, page.Items, want)
		for i := range min(len(page.Items), len(want)) {
			assertSame(t, fmt.Sprintf("item %d", i), page.Items[i], want[i])
		}
	})

	t.Run("PageSizes", func(t *testing.T) {
		const n = 7
		_, ops, want := start(t, n)
		for _, limit := range []int{1, 3, n, 100} {
			t.Run(fmt.Sprint("Limit", limit), func(t *testing.T) {
				pages := walk(t, ops, limit, nil)
				var got []T
				for i, p := range pages {
					wantSize := min(limit, n-i*limit)
					if len(p) != wantSize {
						t.Errorf("page %d: got %d items, want %d", i, len(p), wantSize)
					}
					got = append(got, p...)
				}
				if wantPages := (n + limit - 1) / limit; len(pages) != wantPages {
					t.Errorf("got %d pages, want %d", len(pages), wantPages)
				}
				assertKeys(t, ops, got, want)
			})
		}
	})

	t.Run("LimitUnset", func(t *testing.T) {
		// A store reads the limit through ListParams.PageSize, the
		// domain's rule, not a rule of its own: no limit is
		// DefaultPageSize.
		_, ops, want := start(t, account.DefaultPageSize+1)
		page, err := ops.list(account.ListParams{})
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		assertKeys(t, ops, page.Items, want[:account.DefaultPageSize])
		if page.Next == "" {
			t.Error("Next: got \"\", want a position: one item is left")
		}
	})

	t.Run("CreatedWhilePaging", func(t *testing.T) {
		// Items created between pages are newer than the first page, so
		// paging goes on through exactly the items that existed.
		_, ops, want := start(t, 7)
		pages := walk(t, ops, 2, func() { ops.add() })
		assertKeys(t, ops, slices.Concat(pages...), want)
	})

	t.Run("PositionDeleted", func(t *testing.T) {
		// Deleting the item a position points at must not end or derail
		// paging: the next page starts after where it was.
		_, ops, want := start(t, 7)
		first, err := ops.list(account.ListParams{Limit: 3})
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		assertKeys(t, ops, first.Items, want[:3])
		if first.Next == "" {
			t.Fatal("Next of the first page: got \"\", want a position")
		}
		ops.remove(first.Items[2])
		rest, err := ops.list(account.ListParams{Limit: 100, After: first.Next})
		if err != nil {
			t.Fatalf("list after a deleted position: %v", err)
		}
		assertKeys(t, ops, rest.Items, want[3:])
		if rest.Next != "" {
			t.Errorf("Next of the last page: got %q, want \"\"", rest.Next)
		}
	})
}

// walk pages through a list with limit, calling between (if set) after
// every page, and returns the pages. Next must be empty exactly on the last
// page, and a page may be empty only if it is the first.
func walk[T any](t *testing.T, ops listOps[T], limit int, between func()) [][]T {
	t.Helper()
	var pages [][]T
	p := account.ListParams{Limit: limit}
	for range maxPages {
		page, err := ops.list(p)
		if err != nil {
			t.Fatalf("list page %d: %v", len(pages), err)
		}
		if len(page.Items) > limit {
			t.Fatalf("page %d: got %d items, more than the limit %d", len(pages), len(page.Items), limit)
		}
		if len(page.Items) == 0 && len(pages) > 0 {
			t.Fatalf("page %d is empty: the previous page's Next should have been \"\"", len(pages))
		}
		pages = append(pages, page.Items)
		if page.Next == "" {
			return pages
		}
		if between != nil {
			between()
		}
		p.After = page.Next
	}
	t.Fatalf("no last page after %d pages", maxPages)
	return nil
}

// assertKeys fails unless got holds exactly the items of want, in order.
func assertKeys[T any](tb testing.TB, ops listOps[T], got, want []T) {
	tb.Helper()
	g, w := keys(ops, got), keys(ops, want)
	if !slices.Equal(g, w) {
		tb.Errorf("got items\n\t%v\nwant (newest first)\n\t%v", g, w)
	}
}

func keys[T any](ops listOps[T], items []T) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = ops.key(it)
	}
	return out
}

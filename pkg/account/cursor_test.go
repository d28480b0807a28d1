package account_test

import (
	"encoding/base64"
	"strings"
	"testing"

	"latchkey/pkg/account"
)

// seedUsers creates n users and returns their IDs, newest first.
func seedUsers(t *testing.T, e *env, n int) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range n {
		ids[n-1-i] = e.user(t, "user"+itoa(int64(i))+"@example.com").ID
	}
	return ids
}

func TestService_ListPaging(t *testing.T) {
	t.Run("DefaultLimit", func(t *testing.T) {
		e := newEnv(t)
		seedUsers(t, e, 21)
		list, err := e.svc.ListUsers(e.ctx, e.admin, account.UserQuery{})
		if err != nil {
			t.Fatalf("ListUsers: %v", err)
		}
		if len(list.Items) != 20 || !list.HasMore || list.NextCursor == "" {
			t.Errorf("got %d items, has_more %v, cursor %q; want 20, true and a cursor", len(list.Items), list.HasMore, list.NextCursor)
		}
	})
	t.Run("AllPages", func(t *testing.T) {
		e := newEnv(t)
		want := seedUsers(t, e, 5)
		var got []string
		req := account.PageRequest{Limit: "2"}
		for range 10 {
			list, err := e.svc.ListUsers(e.ctx, e.admin, account.UserQuery{PageRequest: req})
			if err != nil {
				t.Fatalf("ListUsers: %v", err)
			}
			for _, u := range list.Items {
				got = append(got, u.ID)
			}
			if list.HasMore != (list.NextCursor != "") {
				t.Fatalf("has_more %v with cursor %q", list.HasMore, list.NextCursor)
			}
			if !list.HasMore {
				break
			}
			req.Cursor = list.NextCursor
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("got %v, want %v", got, want)
		}
	})
	t.Run("Limits", func(t *testing.T) {
		e := newEnv(t)
		seedUsers(t, e, 2)
		for limit, want := range map[string]int{"1": 1, "100": 2, "2": 2} {
			list, err := e.svc.ListUsers(e.ctx, e.admin, account.UserQuery{PageRequest: account.PageRequest{Limit: limit}})
			if err != nil || len(list.Items) != want {
				t.Errorf("limit %q: got %d items, %v; want %d", limit, len(list.Items), err, want)
			}
		}
	})
	t.Run("ErrLimit", func(t *testing.T) {
		e := newEnv(t)
		for _, limit := range []string{"0", "101", "abc", "-1", "1.5", " 5", "1e2", "99999999999999999999"} {
			_, err := e.svc.ListUsers(e.ctx, e.admin, account.UserQuery{PageRequest: account.PageRequest{Limit: limit}})
			if !account.IsCode(err, account.CodeInvalidRequest) {
				t.Errorf("limit %q: got %v, want invalid_request", limit, err)
				continue
			}
			wantFields(t, err, "limit")
		}
	})
	t.Run("ErrTamperedCursor", func(t *testing.T) {
		e := newEnv(t)
		seedUsers(t, e, 3)
		list, err := e.svc.ListUsers(e.ctx, e.admin, account.UserQuery{PageRequest: account.PageRequest{Limit: "1"}})
		if err != nil || list.NextCursor == "" {
			t.Fatalf("ListUsers: %+v, %v", list, err)
		}
		c := list.NextCursor
		pos, mac, _ := strings.Cut(c, ".")
		raw, _ := base64.RawURLEncoding.DecodeString(pos)
		other := e.user(t, "other@example.com").ID
		for _, bad := range []string{
			alter(c, 0, 1), alter(c, len(pos)+1, 0x20), alter(c, len(c)-1, 0x20), c[:len(c)-1], c + "A", pos, "." + mac, c + ".x",
			// The same bytes in a non-canonical encoding (the unused low
			// bits of the last character set): still not the cursor issued.
			alter(c, len(c)-1, 1),
			"garbage", "....",
			// Another position with the old MAC: a client choosing where to start.
			base64.RawURLEncoding.EncodeToString([]byte(other)) + "." + mac,
			base64.RawURLEncoding.EncodeToString(append(raw, 'x')) + "." + mac,
		} {
			_, err := e.svc.ListUsers(e.ctx, e.admin, account.UserQuery{PageRequest: account.PageRequest{Limit: "1", Cursor: bad}})
			if !account.IsCode(err, account.CodeInvalidRequest) {
				t.Errorf("cursor %q: got %v, want invalid_request", bad, err)
			}
		}
	})
	t.Run("ErrForeignCursor", func(t *testing.T) {
		// A cursor is valid for the list that issued it and no other: not
		// another kind of list, nor the members of another organization.
		e := newEnv(t)
		a, b := e.org(t, "a"), e.org(t, "b")
		e.org(t, "c")
		for _, id := range seedUsers(t, e, 2) {
			for _, o := range []account.Organization{a, b} {
				if _, err := e.svc.AddMember(e.ctx, e.admin, o.ID, account.NewMember{UserID: id}); err != nil {
					t.Fatalf("AddMember: %v", err)
				}
			}
		}
		one := account.PageRequest{Limit: "1"}
		orgs, err := e.svc.ListOrganizations(e.ctx, e.admin, account.OrganizationQuery{PageRequest: one})
		if err != nil || orgs.NextCursor == "" {
			t.Fatalf("ListOrganizations: %+v, %v", orgs, err)
		}
		members, err := e.svc.ListMembers(e.ctx, e.admin, a.ID, one)
		if err != nil || members.NextCursor == "" {
			t.Fatalf("ListMembers: %+v, %v", members, err)
		}
		_, err = e.svc.ListUsers(e.ctx, e.admin, account.UserQuery{PageRequest: account.PageRequest{Cursor: orgs.NextCursor}})
		wantCode(t, err, account.CodeInvalidRequest)
		_, err = e.svc.ListAPIKeys(e.ctx, e.admin, account.PageRequest{Cursor: orgs.NextCursor}, account.APIKeyFilter{})
		wantCode(t, err, account.CodeInvalidRequest)
		_, err = e.svc.ListMembers(e.ctx, e.admin, b.ID, account.PageRequest{Cursor: members.NextCursor})
		wantCode(t, err, account.CodeInvalidRequest)
		if _, err := e.svc.ListMembers(e.ctx, e.admin, a.ID, account.PageRequest{Cursor: members.NextCursor}); err != nil {
			t.Errorf("ListMembers with its own cursor: %v", err)
		}
	})
}

const base64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

// alter flips the bits in mask of the 6-bit value of the base64url
// character at i, keeping the string valid base64url.
func alter(s string, i int, mask byte) string {
	v := byte(strings.IndexByte(base64URL, s[i]))
	return s[:i] + string(base64URL[v^mask]) + s[i+1:]
}

func TestListParams_PageSize(t *testing.T) {
	for _, tc := range []struct{ limit, want int }{
		{0, account.DefaultPageSize},
		{-1, account.DefaultPageSize},
		{1, 1},
		{account.MaxPageSize, account.MaxPageSize},
		{account.MaxPageSize + 1, account.MaxPageSize},
	} {
		if got := (account.ListParams{Limit: tc.limit}).PageSize(); got != tc.want {
			t.Errorf("PageSize of Limit %d: got %d, want %d", tc.limit, got, tc.want)
		}
	}
}

package account_test

import (
	"strings"
	"testing"
	"time"

	"latchkey/pkg/account"
)

func TestService_CreateUser(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		e := newEnv(t)
		u, err := e.svc.CreateUser(e.ctx, e.admin, account.NewUser{Email: "Ada.Lovelace@Example.COM", Name: "  Ada Lovelace  "})
		if err != nil {
			t.Fatalf("CreateUser: %v", err)
		}
		if !account.ValidID(account.PrefixUser, u.ID) {
			t.Errorf("ID: got %q, want usr_ and a ULID", u.ID)
		}
		if u.Email != "ada.lovelace@example.com" || u.Name != "Ada Lovelace" || u.Role != account.DefaultUserRole {
			t.Errorf("got email %q, name %q, role %q; want lower-cased, trimmed, default role", u.Email, u.Name, u.Role)
		}
		now := e.svc.Now()
		if !u.CreatedAt.Equal(now) || !u.UpdatedAt.Equal(now) {
			t.Errorf("times: got %v, %v; want %v", u.CreatedAt, u.UpdatedAt, now)
		}
		got, err := e.svc.GetUser(e.ctx, e.admin, u.ID)
		if err != nil {
			t.Fatalf("GetUser: %v", err)
		}
		if got.Email != u.Email || !got.CreatedAt.Equal(u.CreatedAt) {
			t.Errorf("GetUser: got %+v, want %+v", got, u)
		}
	})
	t.Run("Roles", func(t *testing.T) {
		e := newEnv(t)
		for _, role := range account.UserRoles {
			u, err := e.svc.CreateUser(e.ctx, e.admin, account.NewUser{Email: role + "@example.com", Name: "R", Role: role})
			if err != nil || u.Role != role {
				t.Errorf("CreateUser with role %q: got %q, %v", role, u.Role, err)
			}
		}
	})
	t.Run("ErrEmailTaken", func(t *testing.T) {
		// Uniqueness ignores case: the service lower-cases before the store.
		e := newEnv(t)
		e.user(t, "ada@example.com")
		_, err := e.svc.CreateUser(e.ctx, e.admin, account.NewUser{Email: "ADA@Example.com", Name: "Ada"})
		wantCode(t, err, account.CodeEmailTaken)
	})
	t.Run("ErrInvalidEmail", func(t *testing.T) {
		e := newEnv(t)
		for _, email := range []string{
			"", "ada", "ada@", "@example.com", "ada@localhost", "Ada <ada@example.com>",
			"<ada@example.com>", " ada@example.com", "ada@example.com ", "ada@@example.com",
			"ada@example.com, bob@example.com",
			emailOfLength(255),
		} {
			_, err := e.svc.CreateUser(e.ctx, e.admin, account.NewUser{Email: email, Name: "Ada"})
			if !account.IsCode(err, account.CodeInvalidRequest) {
				t.Errorf("CreateUser(email %q): got %v, want invalid_request", email, err)
				continue
			}
			wantFields(t, err, "email")
		}
	})
	t.Run("LongestEmail", func(t *testing.T) {
		e := newEnv(t)
		email := emailOfLength(254)
		if _, err := e.svc.CreateUser(e.ctx, e.admin, account.NewUser{Email: email, Name: "Ada"}); err != nil {
			t.Fatalf("CreateUser with a %d-character e-mail: %v", len(email), err)
		}
	})
	t.Run("ErrInvalidName", func(t *testing.T) {
		e := newEnv(t)
		for _, name := range []string{"", "   ", strings.Repeat("é", 201), "Ada\x00", "Ada\nLovelace", "Ada\u0085Lovelace", "Ada\u200bLovelace\u0007", "\xffAda"} {
			_, err := e.svc.CreateUser(e.ctx, e.admin, account.NewUser{Email: "ada@example.com", Name: name})
			if !account.IsCode(err, account.CodeInvalidRequest) {
				t.Errorf("CreateUser(name %q): got %v, want invalid_request", name, err)
				continue
			}
			wantFields(t, err, "name")
		}
		// 200 characters (not bytes) is allowed.
		if _, err := e.svc.CreateUser(e.ctx, e.admin, account.NewUser{Email: "long@example.com", Name: strings.Repeat("é", 200)}); err != nil {
			t.Errorf("CreateUser with a 200-character name: %v", err)
		}
	})
	t.Run("ErrInvalidRole", func(t *testing.T) {
		e := newEnv(t)
		_, err := e.svc.CreateUser(e.ctx, e.admin, account.NewUser{Email: "ada@example.com", Name: "Ada", Role: "owner"})
		wantFields(t, err, "role")
	})
	t.Run("ErrAllFieldsAtOnce", func(t *testing.T) {
		e := newEnv(t)
		_, err := e.svc.CreateUser(e.ctx, e.admin, account.NewUser{Email: "nope", Name: "", Role: "root"})
		wantFields(t, err, "email", "name", "role")
	})
	t.Run("ExternalIDAndMetadata", func(t *testing.T) {
		e := newEnv(t)
		meta := account.Metadata{"crm": "hubspot:42", "tier": "gold"}
		u, err := e.svc.CreateUser(e.ctx, e.admin, account.NewUser{Email: "ada@example.com", Name: "Ada", ExternalID: "CRM-42", Metadata: meta})
		if err != nil {
			t.Fatalf("CreateUser: %v", err)
		}
		meta["tier"] = "changed after the call"
		got, err := e.svc.GetUser(e.ctx, e.admin, u.ID)
		if err != nil {
			t.Fatalf("GetUser: %v", err)
		}
		if got.ExternalID != "CRM-42" || len(got.Metadata) != 2 || got.Metadata["tier"] != "gold" {
			t.Errorf("got external id %q, metadata %v; want CRM-42 and the metadata as sent", got.ExternalID, got.Metadata)
		}
		// Empty metadata is none.
		u, err = e.svc.CreateUser(e.ctx, e.admin, account.NewUser{Email: "bob@example.com", Name: "Bob", Metadata: account.Metadata{}})
		if err != nil || u.Metadata != nil || u.ExternalID != "" {
			t.Errorf("CreateUser with empty metadata: got %+v, %v; want no metadata and no external id", u, err)
		}
	})
	t.Run("ErrExternalIDTaken", func(t *testing.T) {
		// External ids are compared with their case, and only among users.
		e := newEnv(t)
		if _, err := e.svc.CreateUser(e.ctx, e.admin, account.NewUser{Email: "ada@example.com", Name: "Ada", ExternalID: "crm-42"}); err != nil {
			t.Fatalf("CreateUser: %v", err)
		}
		_, err := e.svc.CreateUser(e.ctx, e.admin, account.NewUser{Email: "bob@example.com", Name: "Bob", ExternalID: "crm-42"})
		wantCode(t, err, account.CodeExternalIDTaken)
		if _, err := e.svc.CreateUser(e.ctx, e.admin, account.NewUser{Email: "bob@example.com", Name: "Bob", ExternalID: "CRM-42"}); err != nil {
			t.Errorf("CreateUser with the external id in other case: %v", err)
		}
		if _, err := e.svc.CreateOrganization(e.ctx, e.admin, account.NewOrganization{Name: "Org", Slug: "org", ExternalID: "crm-42"}); err != nil {
			t.Errorf("CreateOrganization with a user's external id: %v", err)
		}
	})
	t.Run("ErrInvalidExternalIDAndMetadata", func(t *testing.T) {
		e := newEnv(t)
		_, err := e.svc.CreateUser(e.ctx, e.admin, account.NewUser{Email: "ada@example.com", Name: "Ada", ExternalID: " x", Metadata: account.Metadata{"k": strings.Repeat("v", 501)}})
		wantFields(t, err, "external_id", "metadata.k")
	})
	t.Run("ErrInsufficientScope", func(t *testing.T) {
		e := newEnv(t)
		p, _ := e.key(t, "", account.ScopeReadUsers)
		_, err := e.svc.CreateUser(e.ctx, p, account.NewUser{Email: "ada@example.com", Name: "Ada"})
		wantCode(t, err, account.CodeInsufficientScope)
	})
}

func TestService_GetUser(t *testing.T) {
	t.Run("ErrNotFound", func(t *testing.T) {
		e := newEnv(t)
		for _, id := range []string{"", "usr_", "usr_nope", "org_01ARZ3NDEKTSV4RRFFQ69G5FAV", account.NewID(account.PrefixUser, e.svc.Now())} {
			_, err := e.svc.GetUser(e.ctx, e.admin, id)
			if !account.IsCode(err, account.CodeNotFound) {
				t.Errorf("GetUser(%q): got %v, want not_found", id, err)
			}
		}
	})
}

func TestService_ListUsers(t *testing.T) {
	t.Run("ByEmail", func(t *testing.T) {
		e := newEnv(t)
		u := e.user(t, "ada@example.com")
		e.user(t, "bob@example.com")
		list, err := e.svc.ListUsers(e.ctx, e.admin, account.UserQuery{Email: "ADA@example.COM"})
		if err != nil {
			t.Fatalf("ListUsers: %v", err)
		}
		if len(list.Items) != 1 || list.Items[0].ID != u.ID || list.HasMore {
			t.Errorf("got %+v, want only %s", list, u.ID)
		}
		list, err = e.svc.ListUsers(e.ctx, e.admin, account.UserQuery{Email: "nobody@example.com"})
		if err != nil || list.Items == nil || len(list.Items) != 0 {
			t.Errorf("ListUsers of an unknown e-mail: got %+v, %v; want an empty, non-nil list", list, err)
		}
		_, err = e.svc.ListUsers(e.ctx, e.admin, account.UserQuery{Email: "not an address"})
		wantFields(t, err, "email")
	})
	t.Run("ByExternalID", func(t *testing.T) {
		e := newEnv(t)
		u, err := e.svc.CreateUser(e.ctx, e.admin, account.NewUser{Email: "ada@example.com", Name: "Ada", ExternalID: "crm-42"})
		if err != nil {
			t.Fatalf("CreateUser: %v", err)
		}
		e.user(t, "bob@example.com")
		list, err := e.svc.ListUsers(e.ctx, e.admin, account.UserQuery{ExternalID: "crm-42"})
		if err != nil || len(list.Items) != 1 || list.Items[0].ID != u.ID || list.HasMore {
			t.Errorf("ListUsers(external_id): got %+v, %v; want only %s", list, err, u.ID)
		}
		list, err = e.svc.ListUsers(e.ctx, e.admin, account.UserQuery{ExternalID: "CRM-42"})
		if err != nil || list.Items == nil || len(list.Items) != 0 {
			t.Errorf("ListUsers of an unknown external id: got %+v, %v; want an empty, non-nil list", list, err)
		}
		_, err = e.svc.ListUsers(e.ctx, e.admin, account.UserQuery{ExternalID: "tab\there"})
		wantFields(t, err, "external_id")
		_, err = e.svc.ListUsers(e.ctx, e.admin, account.UserQuery{Email: "ada@example.com", ExternalID: "crm-42"})
		wantFields(t, err, "external_id")
	})
	t.Run("ErrInsufficientScope", func(t *testing.T) {
		e := newEnv(t)
		p, _ := e.key(t, "", account.ScopeWriteUsers)
		_, err := e.svc.ListUsers(e.ctx, p, account.UserQuery{})
		wantCode(t, err, account.CodeInsufficientScope)
	})
}

func TestService_UpdateUser(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		e := newEnv(t)
		u := e.user(t, "ada@example.com")
		e.clock.Advance(time.Second)
		got, err := e.svc.UpdateUser(e.ctx, e.admin, u.ID, account.UserUpdate{Name: ptr(" Ada King ")})
		if err != nil {
			t.Fatalf("UpdateUser: %v", err)
		}
		if got.Name != "Ada King" || got.Email != u.Email || !got.CreatedAt.Equal(u.CreatedAt) {
			t.Errorf("got %+v; want name changed, e-mail and created_at kept", got)
		}
	})
	t.Run("EveryField", func(t *testing.T) {
		e := newEnv(t)
		u := e.user(t, "ada@example.com")
		e.clock.Advance(time.Second)
		got, err := e.svc.UpdateUser(e.ctx, e.admin, u.ID, account.UserUpdate{
			Role: ptr("admin"), Email: ptr("Ada.King@Example.com"), ExternalID: ptr("crm-42"), Metadata: &account.Metadata{"tier": "gold"},
		})
		if err != nil {
			t.Fatalf("UpdateUser: %v", err)
		}
		want := u
		want.Role, want.Email, want.ExternalID, want.Metadata, want.UpdatedAt = "admin", "ada.king@example.com", "crm-42", account.Metadata{"tier": "gold"}, e.svc.Now()
		if got.Role != want.Role || got.Email != want.Email || got.ExternalID != want.ExternalID || got.Metadata["tier"] != "gold" || got.Name != u.Name || !got.UpdatedAt.Equal(want.UpdatedAt) {
			t.Errorf("got %+v, want %+v", got, want)
		}
		// The old address is free at once, the new one taken.
		if _, err := e.svc.CreateUser(e.ctx, e.admin, account.NewUser{Email: "ada@example.com", Name: "Another Ada"}); err != nil {
			t.Errorf("CreateUser with the old address: %v", err)
		}
		_, err = e.svc.CreateUser(e.ctx, e.admin, account.NewUser{Email: "ada.king@example.com", Name: "Another Ada"})
		wantCode(t, err, account.CodeEmailTaken)
		list, err := e.svc.ListUsers(e.ctx, e.admin, account.UserQuery{ExternalID: "crm-42"})
		if err != nil || len(list.Items) != 1 || list.Items[0].ID != u.ID {
			t.Errorf("ListUsers(external_id) after the update: got %+v, %v", list, err)
		}
	})
	t.Run("RemoveExternalIDAndMetadata", func(t *testing.T) {
		e := newEnv(t)
		u, err := e.svc.CreateUser(e.ctx, e.admin, account.NewUser{Email: "ada@example.com", Name: "Ada", ExternalID: "crm-42", Metadata: account.Metadata{"a": "b"}})
		if err != nil {
			t.Fatalf("CreateUser: %v", err)
		}
		got, err := e.svc.UpdateUser(e.ctx, e.admin, u.ID, account.UserUpdate{ExternalID: ptr(""), Metadata: &account.Metadata{}})
		if err != nil || got.ExternalID != "" || got.Metadata != nil {
			t.Fatalf("UpdateUser: got %+v, %v; want no external id and no metadata", got, err)
		}
		if _, err := e.svc.CreateUser(e.ctx, e.admin, account.NewUser{Email: "bob@example.com", Name: "Bob", ExternalID: "crm-42"}); err != nil {
			t.Errorf("CreateUser with the freed external id: %v", err)
		}
	})
	t.Run("ErrTaken", func(t *testing.T) {
		e := newEnv(t)
		u := e.user(t, "ada@example.com")
		if _, err := e.svc.CreateUser(e.ctx, e.admin, account.NewUser{Email: "bob@example.com", Name: "Bob", ExternalID: "crm-7"}); err != nil {
			t.Fatalf("CreateUser: %v", err)
		}
		_, err := e.svc.UpdateUser(e.ctx, e.admin, u.ID, account.UserUpdate{Email: ptr("BOB@example.com"), Name: ptr("Not Applied")})
		wantCode(t, err, account.CodeEmailTaken)
		_, err = e.svc.UpdateUser(e.ctx, e.admin, u.ID, account.UserUpdate{ExternalID: ptr("crm-7"), Name: ptr("Not Applied")})
		wantCode(t, err, account.CodeExternalIDTaken)
		got, err := e.svc.GetUser(e.ctx, e.admin, u.ID)
		if err != nil || got.Name != u.Name || got.Email != u.Email || got.ExternalID != "" {
			t.Errorf("after refused updates: got %+v, %v; want the user unchanged", got, err)
		}
	})
	t.Run("ErrNothingToChange", func(t *testing.T) {
		e := newEnv(t)
		u := e.user(t, "ada@example.com")
		_, err := e.svc.UpdateUser(e.ctx, e.admin, u.ID, account.UserUpdate{})
		wantCode(t, err, account.CodeInvalidRequest)
	})
	t.Run("ErrInvalidFields", func(t *testing.T) {
		e := newEnv(t)
		u := e.user(t, "ada@example.com")
		_, err := e.svc.UpdateUser(e.ctx, e.admin, u.ID, account.UserUpdate{
			Name: ptr(""), Role: ptr(""), Email: ptr("nope"), ExternalID: ptr("x\n"), Metadata: &account.Metadata{"": "v"},
		})
		wantFields(t, err, "name", "role", "email", "external_id", "metadata")
		_, err = e.svc.UpdateUser(e.ctx, e.admin, u.ID, account.UserUpdate{Role: ptr("owner")})
		wantFields(t, err, "role")
	})
	t.Run("ErrInvalidName", func(t *testing.T) {
		e := newEnv(t)
		u := e.user(t, "ada@example.com")
		_, err := e.svc.UpdateUser(e.ctx, e.admin, u.ID, account.UserUpdate{Name: ptr(" ")})
		wantFields(t, err, "name")
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		e := newEnv(t)
		_, err := e.svc.UpdateUser(e.ctx, e.admin, account.NewID(account.PrefixUser, e.svc.Now()), account.UserUpdate{Name: ptr("Ada")})
		wantCode(t, err, account.CodeNotFound)
	})
}

func TestService_DeleteUser(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		e := newEnv(t)
		u := e.user(t, "ada@example.com")
		o := e.org(t, "engines")
		if _, err := e.svc.AddMember(e.ctx, e.admin, o.ID, account.NewMember{UserID: u.ID}); err != nil {
			t.Fatalf("AddMember: %v", err)
		}
		if err := e.svc.DeleteUser(e.ctx, e.admin, u.ID); err != nil {
			t.Fatalf("DeleteUser: %v", err)
		}
		members, err := e.svc.ListMembers(e.ctx, e.admin, o.ID, account.PageRequest{})
		if err != nil || len(members.Items) != 0 {
			t.Errorf("ListMembers after DeleteUser: got %+v, %v; want none", members, err)
		}
		_, err = e.svc.ListUserMemberships(e.ctx, e.admin, u.ID, account.PageRequest{})
		wantCode(t, err, account.CodeNotFound)
		e.user(t, "ada@example.com") // the e-mail is free again
	})
	t.Run("ErrInsufficientScope", func(t *testing.T) {
		e := newEnv(t)
		u := e.user(t, "ada@example.com")
		p, _ := e.key(t, "", account.ScopeWriteUsers, account.ScopeReadUsers)
		wantCode(t, e.svc.DeleteUser(e.ctx, p, u.ID), account.CodeInsufficientScope)
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		e := newEnv(t)
		wantCode(t, e.svc.DeleteUser(e.ctx, e.admin, "usr_bogus"), account.CodeNotFound)
	})
}

// emailOfLength returns a well-formed address of n characters, with DNS
// labels short enough that only the overall length can be wrong.
func emailOfLength(n int) string {
	var b strings.Builder
	b.WriteString(strings.Repeat("a", 64) + "@")
	for rest := n - b.Len() - len(".com"); rest > 0; rest = n - b.Len() - len(".com") {
		if rest > 61 {
			b.WriteString(strings.Repeat("b", 60) + ".")
			continue
		}
		b.WriteString(strings.Repeat("b", rest))
	}
	b.WriteString(".com")
	return b.String()
}

package account_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"latchkey/pkg/account"
)

func ptr[T any](v T) *T { return &v }

func TestService_CreateOrganization(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		e := newEnv(t)
		o, err := e.svc.CreateOrganization(e.ctx, e.admin, account.NewOrganization{Name: " Engines ", Slug: "engines"})
		if err != nil {
			t.Fatalf("CreateOrganization: %v", err)
		}
		if !account.ValidID(account.PrefixOrganization, o.ID) || o.Name != "Engines" || o.Plan != account.DefaultPlan {
			t.Errorf("got %+v; want an org_ ID, the trimmed name and the default plan", o)
		}
	})
	t.Run("Slugs", func(t *testing.T) {
		e := newEnv(t)
		for _, slug := range []string{"a", "0", "a-b", "a--b", "0day", strings.Repeat("a", 63)} {
			if _, err := e.svc.CreateOrganization(e.ctx, e.admin, account.NewOrganization{Name: "Org", Slug: slug}); err != nil {
				t.Errorf("CreateOrganization(slug %q): %v", slug, err)
			}
		}
	})
	t.Run("ErrInvalidSlug", func(t *testing.T) {
		e := newEnv(t)
		for _, slug := range []string{"", "-a", "a-", "-", "A", "Engines", "a_b", "a b", "a.b", "é", strings.Repeat("a", 64)} {
			_, err := e.svc.CreateOrganization(e.ctx, e.admin, account.NewOrganization{Name: "Org", Slug: slug})
			if !account.IsCode(err, account.CodeInvalidRequest) {
				t.Errorf("CreateOrganization(slug %q): got %v, want invalid_request", slug, err)
				continue
			}
			wantFields(t, err, "slug")
		}
	})
	t.Run("ErrSlugTaken", func(t *testing.T) {
		e := newEnv(t)
		e.org(t, "engines")
		_, err := e.svc.CreateOrganization(e.ctx, e.admin, account.NewOrganization{Name: "Other", Slug: "engines"})
		wantCode(t, err, account.CodeSlugTaken)
	})
	t.Run("ErrInvalidPlan", func(t *testing.T) {
		e := newEnv(t)
		_, err := e.svc.CreateOrganization(e.ctx, e.admin, account.NewOrganization{Name: "Org", Slug: "org", Plan: "gold"})
		wantFields(t, err, "plan")
	})
	t.Run("ExternalIDAndMetadata", func(t *testing.T) {
		e := newEnv(t)
		o, err := e.svc.CreateOrganization(e.ctx, e.admin, account.NewOrganization{Name: "Org", Slug: "org", ExternalID: "acct_9", Metadata: account.Metadata{"region": "eu"}})
		if err != nil || o.ExternalID != "acct_9" || o.Metadata["region"] != "eu" {
			t.Fatalf("CreateOrganization: got %+v, %v", o, err)
		}
		_, err = e.svc.CreateOrganization(e.ctx, e.admin, account.NewOrganization{Name: "Other", Slug: "other", ExternalID: "acct_9"})
		wantCode(t, err, account.CodeExternalIDTaken)
		_, err = e.svc.CreateOrganization(e.ctx, e.admin, account.NewOrganization{Name: "Other", Slug: "other", ExternalID: strings.Repeat("x", 257), Metadata: account.Metadata{strings.Repeat("k", 41): "v"}})
		wantFields(t, err, "external_id", "metadata")
	})
	t.Run("ErrInsufficientScope", func(t *testing.T) {
		e := newEnv(t)
		p, _ := e.key(t, "", account.ScopeReadOrganizations, account.ScopeWriteUsers)
		_, err := e.svc.CreateOrganization(e.ctx, p, account.NewOrganization{Name: "Org", Slug: "org"})
		wantCode(t, err, account.CodeInsufficientScope)
	})
}

func TestService_ListOrganizations(t *testing.T) {
	t.Run("BySlugAndExternalID", func(t *testing.T) {
		e := newEnv(t)
		o, err := e.svc.CreateOrganization(e.ctx, e.admin, account.NewOrganization{Name: "Engines", Slug: "engines", ExternalID: "acct_9"})
		if err != nil {
			t.Fatalf("CreateOrganization: %v", err)
		}
		e.org(t, "other")
		for _, q := range []account.OrganizationQuery{{Slug: "engines"}, {ExternalID: "acct_9"}} {
			list, err := e.svc.ListOrganizations(e.ctx, e.admin, q)
			if err != nil || len(list.Items) != 1 || list.Items[0].ID != o.ID || list.HasMore {
				t.Errorf("ListOrganizations(%+v): got %+v, %v; want only %s", q, list, err, o.ID)
			}
		}
		for _, q := range []account.OrganizationQuery{{Slug: "nobody"}, {ExternalID: "ACCT_9"}} {
			list, err := e.svc.ListOrganizations(e.ctx, e.admin, q)
			if err != nil || list.Items == nil || len(list.Items) != 0 {
				t.Errorf("ListOrganizations(%+v): got %+v, %v; want an empty, non-nil list", q, list, err)
			}
		}
		_, err = e.svc.ListOrganizations(e.ctx, e.admin, account.OrganizationQuery{Slug: "Not A Slug"})
		wantFields(t, err, "slug")
		_, err = e.svc.ListOrganizations(e.ctx, e.admin, account.OrganizationQuery{Slug: "engines", ExternalID: "acct_9"})
		wantFields(t, err, "external_id")
	})
}

func TestService_UpdateOrganization(t *testing.T) {
	t.Run("ExternalIDAndMetadata", func(t *testing.T) {
		e := newEnv(t)
		o := e.org(t, "engines")
		other, err := e.svc.CreateOrganization(e.ctx, e.admin, account.NewOrganization{Name: "Other", Slug: "other", ExternalID: "acct_1"})
		if err != nil {
			t.Fatalf("CreateOrganization: %v", err)
		}
		got, err := e.svc.UpdateOrganization(e.ctx, e.admin, o.ID, account.OrganizationUpdate{ExternalID: ptr("acct_2"), Metadata: &account.Metadata{"region": "eu"}})
		if err != nil || got.ExternalID != "acct_2" || got.Metadata["region"] != "eu" || got.Name != o.Name || got.Plan != o.Plan {
			t.Fatalf("UpdateOrganization: got %+v, %v", got, err)
		}
		_, err = e.svc.UpdateOrganization(e.ctx, e.admin, o.ID, account.OrganizationUpdate{ExternalID: ptr("acct_1"), Name: ptr("Not Applied")})
		wantCode(t, err, account.CodeExternalIDTaken)
		// Moving an external id frees the old one at once.
		if _, err := e.svc.UpdateOrganization(e.ctx, e.admin, other.ID, account.OrganizationUpdate{ExternalID: ptr("")}); err != nil {
			t.Fatalf("UpdateOrganization removing the external id: %v", err)
		}
		got, err = e.svc.UpdateOrganization(e.ctx, e.admin, o.ID, account.OrganizationUpdate{ExternalID: ptr("acct_1"), Metadata: &account.Metadata{}})
		if err != nil || got.ExternalID != "acct_1" || got.Metadata != nil || got.Name != o.Name {
			t.Fatalf("UpdateOrganization to the freed external id: got %+v, %v", got, err)
		}
		list, err := e.svc.ListOrganizations(e.ctx, e.admin, account.OrganizationQuery{ExternalID: "acct_2"})
		if err != nil || len(list.Items) != 0 {
			t.Errorf("the old external id still finds %+v, %v", list, err)
		}
	})
	t.Run("OK", func(t *testing.T) {
		e := newEnv(t)
		o := e.org(t, "engines")
		got, err := e.svc.UpdateOrganization(e.ctx, e.admin, o.ID, account.OrganizationUpdate{Plan: ptr("pro")})
		if err != nil {
			t.Fatalf("UpdateOrganization: %v", err)
		}
		if got.Plan != "pro" || got.Name != o.Name || got.Slug != o.Slug {
			t.Errorf("got %+v; want only the plan changed", got)
		}
	})
	t.Run("ConcurrentNameAndPlan", func(t *testing.T) {
		// A PATCH of the name and a PATCH of the plan at the same moment
		// must both take effect: the service hands the store a patch
		// instead of writing back an organization it read earlier.
		e := newEnv(t)
		o := e.org(t, "engines")
		for round := range 10 {
			name, plan := fmt.Sprintf("Engines %d", round), account.Plans[round%len(account.Plans)]
			var wg sync.WaitGroup
			errs := make([]error, 2)
			start := make(chan struct{})
			wg.Go(func() {
				<-start
				_, errs[0] = e.svc.UpdateOrganization(e.ctx, e.admin, o.ID, account.OrganizationUpdate{Name: &name})
			})
			wg.Go(func() {
				<-start
				_, errs[1] = e.svc.UpdateOrganization(e.ctx, e.admin, o.ID, account.OrganizationUpdate{Plan: &plan})
			})
			close(start)
			wg.Wait()
			for _, err := range errs {
				if err != nil {
					t.Fatalf("UpdateOrganization: %v", err)
				}
			}
			got, err := e.svc.GetOrganization(e.ctx, e.admin, o.ID)
			if err != nil {
				t.Fatalf("GetOrganization: %v", err)
			}
			if got.Name != name || got.Plan != plan {
				t.Fatalf("round %d: got name %q and plan %q, want %q and %q", round, got.Name, got.Plan, name, plan)
			}
		}
	})
	t.Run("ErrNothingToChange", func(t *testing.T) {
		e := newEnv(t)
		o := e.org(t, "engines")
		_, err := e.svc.UpdateOrganization(e.ctx, e.admin, o.ID, account.OrganizationUpdate{})
		wantCode(t, err, account.CodeInvalidRequest)
	})
	t.Run("ErrEmptyPlan", func(t *testing.T) {
		// An explicit empty plan is a mistake, not a request for the default.
		e := newEnv(t)
		o := e.org(t, "engines")
		_, err := e.svc.UpdateOrganization(e.ctx, e.admin, o.ID, account.OrganizationUpdate{Plan: ptr("")})
		wantCode(t, err, account.CodeInvalidRequest)
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		e := newEnv(t)
		_, err := e.svc.UpdateOrganization(e.ctx, e.admin, account.NewID(account.PrefixOrganization, e.svc.Now()), account.OrganizationUpdate{Name: ptr("X")})
		wantCode(t, err, account.CodeNotFound)
	})
}

func TestService_AddMember(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		e := newEnv(t)
		o, u := e.org(t, "engines"), e.user(t, "ada@example.com")
		m, err := e.svc.AddMember(e.ctx, e.admin, o.ID, account.NewMember{UserID: u.ID})
		if err != nil {
			t.Fatalf("AddMember: %v", err)
		}
		if m.Role != account.DefaultMemberRole || m.OrganizationID != o.ID || m.UserID != u.ID {
			t.Errorf("got %+v; want the default role", m)
		}
	})
	t.Run("ErrAlreadyMember", func(t *testing.T) {
		e := newEnv(t)
		o, u := e.org(t, "engines"), e.user(t, "ada@example.com")
		if _, err := e.svc.AddMember(e.ctx, e.admin, o.ID, account.NewMember{UserID: u.ID}); err != nil {
			t.Fatalf("AddMember: %v", err)
		}
		_, err := e.svc.AddMember(e.ctx, e.admin, o.ID, account.NewMember{UserID: u.ID, Role: "owner"})
		wantCode(t, err, account.CodeAlreadyMember)
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		e := newEnv(t)
		o, u := e.org(t, "engines"), e.user(t, "ada@example.com")
		for _, tt := range []struct{ org, user string }{
			{account.NewID(account.PrefixOrganization, e.svc.Now()), u.ID},
			{o.ID, account.NewID(account.PrefixUser, e.svc.Now())},
			{"org_bogus", u.ID},
			{o.ID, "usr_bogus"},
			{o.ID, o.ID},
		} {
			_, err := e.svc.AddMember(e.ctx, e.admin, tt.org, account.NewMember{UserID: tt.user})
			if !account.IsCode(err, account.CodeNotFound) {
				t.Errorf("AddMember(%s, %s): got %v, want not_found", tt.org, tt.user, err)
			}
		}
	})
	t.Run("ErrInvalidRequest", func(t *testing.T) {
		e := newEnv(t)
		o, u := e.org(t, "engines"), e.user(t, "ada@example.com")
		_, err := e.svc.AddMember(e.ctx, e.admin, o.ID, account.NewMember{})
		wantFields(t, err, "user_id")
		_, err = e.svc.AddMember(e.ctx, e.admin, o.ID, account.NewMember{UserID: u.ID, Role: "viewer"})
		wantFields(t, err, "role")
	})
}

func TestService_UpdateMember(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		e := newEnv(t)
		o, u := e.org(t, "engines"), e.user(t, "ada@example.com")
		if _, err := e.svc.AddMember(e.ctx, e.admin, o.ID, account.NewMember{UserID: u.ID}); err != nil {
			t.Fatalf("AddMember: %v", err)
		}
		m, err := e.svc.UpdateMember(e.ctx, e.admin, o.ID, u.ID, "owner")
		if err != nil || m.Role != "owner" {
			t.Fatalf("UpdateMember: got %+v, %v; want role owner", m, err)
		}
		_, err = e.svc.UpdateMember(e.ctx, e.admin, o.ID, u.ID, "")
		wantFields(t, err, "role")
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		e := newEnv(t)
		o, u := e.org(t, "engines"), e.user(t, "ada@example.com")
		_, err := e.svc.UpdateMember(e.ctx, e.admin, o.ID, u.ID, "owner")
		wantCode(t, err, account.CodeNotFound)
		wantCode(t, e.svc.RemoveMember(e.ctx, e.admin, o.ID, u.ID), account.CodeNotFound)
	})
}

func TestService_GetMember(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		e := newEnv(t)
		o, u := e.org(t, "engines"), e.user(t, "ada@example.com")
		m, err := e.svc.AddMember(e.ctx, e.admin, o.ID, account.NewMember{UserID: u.ID, Role: "admin"})
		if err != nil {
			t.Fatalf("AddMember: %v", err)
		}
		got, err := e.svc.GetMember(e.ctx, e.admin, o.ID, u.ID)
		if err != nil || got.Role != "admin" || !got.CreatedAt.Equal(m.CreatedAt) {
			t.Fatalf("GetMember: got %+v, %v; want %+v", got, err, m)
		}
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		e := newEnv(t)
		o, u := e.org(t, "engines"), e.user(t, "ada@example.com")
		for _, ids := range [][2]string{{o.ID, u.ID}, {"org_nope", u.ID}, {o.ID, "usr_nope"}} {
			_, err := e.svc.GetMember(e.ctx, e.admin, ids[0], ids[1])
			wantCode(t, err, account.CodeNotFound)
		}
	})
	t.Run("ErrInsufficientScope", func(t *testing.T) {
		e := newEnv(t)
		p, _ := e.key(t, "", account.ScopeWriteOrganizations)
		_, err := e.svc.GetMember(e.ctx, p, account.NewID(account.PrefixOrganization, e.svc.Now()), account.NewID(account.PrefixUser, e.svc.Now()))
		wantCode(t, err, account.CodeInsufficientScope)
	})
}

// TestService_LastOwner: the service passes the store's last-owner rule
// through, with its code, and allows deleting the last owner's user.
func TestService_LastOwner(t *testing.T) {
	e := newEnv(t)
	o, a, b := e.org(t, "engines"), e.user(t, "ada@example.com"), e.user(t, "bob@example.com")
	for _, u := range []account.User{a, b} {
		if _, err := e.svc.AddMember(e.ctx, e.admin, o.ID, account.NewMember{UserID: u.ID, Role: "owner"}); err != nil {
			t.Fatalf("AddMember: %v", err)
		}
	}
	if _, err := e.svc.UpdateMember(e.ctx, e.admin, o.ID, a.ID, "member"); err != nil {
		t.Fatalf("UpdateMember of one of two owners: %v", err)
	}
	_, err := e.svc.UpdateMember(e.ctx, e.admin, o.ID, b.ID, "admin")
	wantCode(t, err, account.CodeLastOwner)
	wantCode(t, e.svc.RemoveMember(e.ctx, e.admin, o.ID, b.ID), account.CodeLastOwner)
	if err := e.svc.RemoveMember(e.ctx, e.admin, o.ID, a.ID); err != nil {
		t.Fatalf("RemoveMember of a member: %v", err)
	}
	if err := e.svc.DeleteUser(e.ctx, e.admin, b.ID); err != nil {
		t.Fatalf("DeleteUser of the last owner: %v", err)
	}
	l, err := e.svc.ListMembers(e.ctx, e.admin, o.ID, account.PageRequest{})
	if err != nil || len(l.Items) != 0 {
		t.Errorf("members after deleting the last owner: %+v, %v; want none", l.Items, err)
	}
}

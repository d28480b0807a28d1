package httpapi_test

import (
	"net/http"
	"net/url"
	"testing"
)

// userBody is a user as the API returns it.
type userBody struct {
	ID         string            `json:"id"`
	Email      string            `json:"email"`
	Name       string            `json:"name"`
	Role       string            `json:"role"`
	ExternalID *string           `json:"external_id"`
	Metadata   map[string]string `json:"metadata"`
}

type orgBody struct {
	ID         string            `json:"id"`
	Name       string            `json:"name"`
	Slug       string            `json:"slug"`
	Plan       string            `json:"plan"`
	ExternalID *string           `json:"external_id"`
	Metadata   map[string]string `json:"metadata"`
}

// listOf decodes a list response's data.
func listOf[T any](t *testing.T, a api, path string) []T {
	t.Helper()
	res := a.do(http.MethodGet, path, a.AdminKey, nil)
	want(t, res, http.StatusOK)
	var l struct {
		Data []T `json:"data"`
	}
	res.Decode(t, &l)
	return l.Data
}

// TestUsers_ExternalIDAndMetadata follows a user through the integrator's
// own fields: created with them, found by external id, updated with PUT
// (null removes), moved to another e-mail with PATCH, which frees the old
// address at once.
func TestUsers_ExternalIDAndMetadata(t *testing.T) {
	a := newAPI(t)
	admin := a.AdminKey
	email, ext := uniqueEmail(), unique("crm-")

	res := a.do(http.MethodPost, "/v1/users", admin, map[string]any{
		"email": email, "name": "Ada", "external_id": ext, "metadata": map[string]string{"plan": "pro", "crm": "hubspot"},
	})
	want(t, res, http.StatusCreated)
	var u userBody
	res.Decode(t, &u)
	if u.ExternalID == nil || *u.ExternalID != ext || u.Metadata["plan"] != "pro" || len(u.Metadata) != 2 {
		t.Fatalf("created %+v; want the external id and metadata as sent", u)
	}

	t.Run("Defaults", func(t *testing.T) {
		res := a.do(http.MethodPost, "/v1/users", admin, map[string]any{"email": uniqueEmail(), "name": "Bob", "external_id": nil, "metadata": nil})
		want(t, res, http.StatusCreated)
		m := res.Map(t)
		if m["external_id"] != nil || len(m["metadata"].(map[string]any)) != 0 {
			t.Errorf("got external_id %v, metadata %v; want null and {}", m["external_id"], m["metadata"])
		}
	})

	t.Run("LookupByExternalID", func(t *testing.T) {
		got := listOf[userBody](t, a, "/v1/users?external_id="+url.QueryEscape(ext))
		if len(got) != 1 || got[0].ID != u.ID {
			t.Fatalf("?external_id=: got %+v, want only %s", got, u.ID)
		}
		if got := listOf[userBody](t, a, "/v1/users?external_id=nobody"); len(got) != 0 {
			t.Errorf("?external_id=nobody: got %+v, want none", got)
		}
	})

	t.Run("ErrExternalIDTaken", func(t *testing.T) {
		wantProblem(t, a.do(http.MethodPost, "/v1/users", admin, map[string]any{"email": uniqueEmail(), "name": "X", "external_id": ext}),
			http.StatusConflict, "external_id_taken")
		other := a.CreateUser(t, uniqueEmail())
		wantProblem(t, a.do(http.MethodPut, "/v1/users/"+other.ID, admin, map[string]any{"external_id": ext}),
			http.StatusConflict, "external_id_taken")
	})

	t.Run("PUT", func(t *testing.T) {
		res := a.do(http.MethodPut, "/v1/users/"+u.ID, admin, map[string]any{"role": "admin", "metadata": map[string]string{"tier": "gold"}})
		want(t, res, http.StatusOK)
		var got userBody
		res.Decode(t, &got)
		if got.Role != "admin" || got.Name != "Ada" || len(got.Metadata) != 1 || got.Metadata["tier"] != "gold" || *got.ExternalID != ext {
			t.Fatalf("PUT role and metadata: got %+v; want them replaced, the rest kept", got)
		}
		res = a.do(http.MethodPut, "/v1/users/"+u.ID, admin, map[string]any{"metadata": nil, "external_id": nil})
		want(t, res, http.StatusOK)
		m := res.Map(t)
		if m["external_id"] != nil || len(m["metadata"].(map[string]any)) != 0 || m["role"] != "admin" {
			t.Fatalf("PUT nulls: got %v; want external_id null, metadata {}, role kept", m)
		}
		// The external id is free again.
		want(t, a.do(http.MethodPost, "/v1/users", admin, map[string]any{"email": uniqueEmail(), "name": "X", "external_id": ext}), http.StatusCreated)
		wantProblem(t, a.do(http.MethodPut, "/v1/users/"+u.ID, admin, map[string]any{}), http.StatusBadRequest, "invalid_request")
	})

	t.Run("PATCHEmail", func(t *testing.T) {
		taken := a.CreateUser(t, uniqueEmail())
		wantProblem(t, a.do(http.MethodPatch, "/v1/users/"+u.ID, admin, map[string]any{"email": taken.Email, "name": "Not Applied"}),
			http.StatusConflict, "email_taken")
		newEmail := uniqueEmail()
		res := a.do(http.MethodPatch, "/v1/users/"+u.ID, admin, map[string]any{"email": upper(newEmail)})
		want(t, res, http.StatusOK)
		var got userBody
		res.Decode(t, &got)
		if got.Email != newEmail || got.Name != "Ada" {
			t.Fatalf("PATCH email: got %+v; want %s lower-cased and the name kept", got, newEmail)
		}
		if got := listOf[userBody](t, a, "/v1/users?email="+url.QueryEscape(newEmail)); len(got) != 1 || got[0].ID != u.ID {
			t.Errorf("?email= the new address: got %+v", got)
		}
		if got := listOf[userBody](t, a, "/v1/users?email="+url.QueryEscape(email)); len(got) != 0 {
			t.Errorf("?email= the old address: got %+v, want none", got)
		}
		want(t, a.do(http.MethodPost, "/v1/users", admin, map[string]any{"email": email, "name": "Another Ada"}), http.StatusCreated)
		// PUT does not take the e-mail.
		p := wantProblem(t, a.do(http.MethodPut, "/v1/users/"+u.ID, admin, map[string]any{"email": uniqueEmail()}), http.StatusBadRequest, "invalid_request")
		wantField(t, p, "email")
	})
}

// TestOrganizations_ExternalIDAndMetadata: the same for organizations, and
// the lookup by slug.
func TestOrganizations_ExternalIDAndMetadata(t *testing.T) {
	a := newAPI(t)
	admin := a.AdminKey
	slug, ext := uniqueSlug(), unique("acct ")
	res := a.do(http.MethodPost, "/v1/organizations", admin, map[string]any{
		"name": "Acme", "slug": slug, "external_id": ext, "metadata": map[string]string{"region": "eu"},
	})
	want(t, res, http.StatusCreated)
	var o orgBody
	res.Decode(t, &o)
	if o.ExternalID == nil || *o.ExternalID != ext || o.Metadata["region"] != "eu" {
		t.Fatalf("created %+v; want the external id and metadata as sent", o)
	}
	for _, q := range []string{"slug=" + slug, "external_id=" + url.QueryEscape(ext)} {
		if got := listOf[orgBody](t, a, "/v1/organizations?"+q); len(got) != 1 || got[0].ID != o.ID {
			t.Errorf("?%s: got %+v, want only %s", q, got, o.ID)
		}
	}
	if got := listOf[orgBody](t, a, "/v1/organizations?slug=nobody-here"); len(got) != 0 {
		t.Errorf("?slug=nobody-here: got %+v, want none", got)
	}
	p := wantProblem(t, a.do(http.MethodGet, "/v1/organizations?slug=Not%20A%20Slug", admin, nil), http.StatusBadRequest, "invalid_request")
	wantField(t, p, "slug")
	wantProblem(t, a.do(http.MethodPost, "/v1/organizations", admin, map[string]any{"name": "X", "slug": uniqueSlug(), "external_id": ext}),
		http.StatusConflict, "external_id_taken")

	res = a.do(http.MethodPatch, "/v1/organizations/"+o.ID, admin, map[string]any{"external_id": nil, "metadata": map[string]string{}})
	want(t, res, http.StatusOK)
	m := res.Map(t)
	if m["external_id"] != nil || len(m["metadata"].(map[string]any)) != 0 || m["name"] != "Acme" {
		t.Fatalf("PATCH removing: got %v", m)
	}
	want(t, a.do(http.MethodPost, "/v1/organizations", admin, map[string]any{"name": "X", "slug": uniqueSlug(), "external_id": ext}), http.StatusCreated)
}

// upper returns s in upper case, ASCII only.
func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

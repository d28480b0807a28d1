package httpapi_test

import (
	"net/http"
	"net/url"
	"slices"
	"testing"

	"latchkey/pkg/account"
)

// tenant is a world of two organizations, a and b, with a key bound to
// each (every grant) and users inside and outside them, seeded by the
// admin key: onlyA is a member of a alone, onlyB of b alone, shared of
// both, none of neither.
type tenant struct {
	api
	a, b                 orgBody
	keyA, keyB           apiKey
	onlyA, onlyB, shared userBody
	none                 userBody
}

func newTenant(t *testing.T) tenant {
	t.Helper()
	a := newAPI(t)
	w := tenant{api: a}
	w.a = w.createOrg(uniqueSlug())
	w.b = w.createOrg(uniqueSlug())
	w.keyA = w.boundKey(w.a.ID)
	w.keyB = w.boundKey(w.b.ID)
	w.onlyA, w.onlyB, w.shared, w.none = w.createUser(), w.createUser(), w.createUser(), w.createUser()
	w.addMember(w.a.ID, w.onlyA.ID)
	w.addMember(w.b.ID, w.onlyB.ID)
	w.addMember(w.a.ID, w.shared.ID)
	w.addMember(w.b.ID, w.shared.ID)
	return w
}

func (w tenant) createOrg(slug string) orgBody {
	w.t.Helper()
	res := w.do(http.MethodPost, "/v1/organizations", w.AdminKey, map[string]any{"name": slug, "slug": slug, "external_id": "ext " + slug})
	want(w.t, res, http.StatusCreated)
	var o orgBody
	res.Decode(w.t, &o)
	return o
}

func (w tenant) createUser() userBody {
	w.t.Helper()
	email := uniqueEmail()
	res := w.do(http.MethodPost, "/v1/users", w.AdminKey, map[string]any{"email": email, "name": "U", "external_id": "crm " + email})
	want(w.t, res, http.StatusCreated)
	var u userBody
	res.Decode(w.t, &u)
	return u
}

func (w tenant) addMember(orgID, userID string) {
	w.t.Helper()
	want(w.t, w.do(http.MethodPost, "/v1/organizations/"+orgID+"/members", w.AdminKey, map[string]any{"user_id": userID}), http.StatusCreated)
}

// boundKey creates a key bound to the organization with every grant, and
// a token for it.
func (w tenant) boundKey(orgID string) apiKey {
	w.t.Helper()
	res := w.do(http.MethodPost, "/v1/api-keys", w.AdminKey, map[string]any{"name": "tenant", "scopes": []string{account.ScopeAll}, "organization_id": orgID})
	want(w.t, res, http.StatusCreated)
	var k struct {
		ID  string `json:"id"`
		Key string `json:"key"`
	}
	res.Decode(w.t, &k)
	tok, _ := w.IssueToken(w.t, k.Key, "", account.ScopeAll)
	return apiKey{id: k.ID, secret: k.Key, token: tok}
}

// ids returns the ids of a list's data, read with the credential.
func (w tenant) ids(credential, path string) []string {
	w.t.Helper()
	res := w.do(http.MethodGet, path, credential, nil)
	want(w.t, res, http.StatusOK)
	var l struct {
		Data []struct {
			ID     string `json:"id"`
			UserID string `json:"user_id"`
			OrgID  string `json:"organization_id"`
		} `json:"data"`
	}
	res.Decode(w.t, &l)
	out := []string{}
	for _, d := range l.Data {
		if d.UserID != "" {
			// A membership.
			out = append(out, d.OrgID+"/"+d.UserID)
		} else {
			out = append(out, d.ID)
		}
	}
	slices.Sort(out)
	return out
}

func sorted(ids ...string) []string {
	out := slices.Clone(ids)
	slices.Sort(out)
	return out
}

// TestBoundKey_Organizations: a key bound to an organization lists, reads,
// changes and deletes its own only; another is 404, and not found by
// slug or external id; it creates none (403 outside_organization). Its
// token is held to the same rule.
func TestBoundKey_Organizations(t *testing.T) {
	w := newTenant(t)
	for _, cred := range []struct{ name, value string }{{"Key", w.keyA.secret}, {"Token", w.keyA.token}} {
		t.Run(cred.name, func(t *testing.T) {
			k := cred.value
			if got := w.ids(k, "/v1/organizations"); !slices.Equal(got, []string{w.a.ID}) {
				t.Errorf("GET /v1/organizations: got %v, want only %s", got, w.a.ID)
			}
			if got := w.ids(k, "/v1/organizations?limit=1"); !slices.Equal(got, []string{w.a.ID}) {
				t.Errorf("GET /v1/organizations?limit=1: got %v, want only %s", got, w.a.ID)
			}
			for _, q := range []string{"slug=" + w.b.Slug, "external_id=" + url.QueryEscape("ext "+w.b.Slug)} {
				if got := w.ids(k, "/v1/organizations?"+q); len(got) != 0 {
					t.Errorf("?%s of another organization: got %v, want none", q, got)
				}
			}
			if got := w.ids(k, "/v1/organizations?slug="+w.a.Slug); !slices.Equal(got, []string{w.a.ID}) {
				t.Errorf("?slug= of its own: got %v", got)
			}
			want(t, w.do(http.MethodGet, "/v1/organizations/"+w.a.ID, k, nil), http.StatusOK)
			wantProblem(t, w.do(http.MethodGet, "/v1/organizations/"+w.b.ID, k, nil), http.StatusNotFound, "not_found")
			wantProblem(t, w.do(http.MethodPatch, "/v1/organizations/"+w.b.ID, k, map[string]any{"name": "taken over"}), http.StatusNotFound, "not_found")
			wantProblem(t, w.do(http.MethodDelete, "/v1/organizations/"+w.b.ID, k, nil), http.StatusNotFound, "not_found")
			wantProblem(t, w.do(http.MethodPost, "/v1/organizations", k, map[string]any{"name": "New", "slug": uniqueSlug()}), http.StatusForbidden, "outside_organization")
			want(t, w.do(http.MethodPatch, "/v1/organizations/"+w.a.ID, k, map[string]any{"name": "Renamed by its tenant"}), http.StatusOK)
			// Its plan and external id are the integrator's.
			for _, patch := range []map[string]any{{"plan": "enterprise"}, {"external_id": "ext " + w.b.Slug + " 2"}, {"name": "x", "plan": "free"}} {
				wantProblem(t, w.do(http.MethodPatch, "/v1/organizations/"+w.a.ID, k, patch), http.StatusForbidden, "outside_organization")
			}
			// It cannot delete its own: the delete would take every key
			// bound to it, the keys above its own included.
			wantProblem(t, w.do(http.MethodDelete, "/v1/organizations/"+w.a.ID, k, nil), http.StatusForbidden, "outside_organization")
		})
	}
	// Nothing of b changed; the admin key still sees both.
	if got := w.do(http.MethodGet, "/v1/organizations/"+w.b.ID, w.AdminKey, nil).Map(t); got["name"] != w.b.Name {
		t.Errorf("b after the bound key's attempts: %v", got)
	}
	if got := w.ids(w.AdminKey, "/v1/organizations"); !slices.Equal(got, sorted(w.a.ID, w.b.ID)) {
		t.Errorf("the admin key's list: got %v, want both", got)
	}
	if got := w.do(http.MethodGet, "/v1/organizations/"+w.a.ID, w.AdminKey, nil).Map(t); got["plan"] != "free" || got["external_id"] != "ext "+w.a.Slug {
		t.Errorf("a after its tenant's attempts: %v, want plan and external_id unchanged", got)
	}
	// Nor can a key below it, its previous secret after a rotation, or
	// a token: each would otherwise delete the keys above it.
	child := w.createKey(w.keyA.secret, account.ScopeDeleteOrganizations, account.ScopeWriteAPIKeys)
	wantProblem(t, w.do(http.MethodDelete, "/v1/api-keys/"+w.keyA.id, child.secret, nil), http.StatusForbidden, "insufficient_scope")
	wantProblem(t, w.do(http.MethodDelete, "/v1/organizations/"+w.a.ID, child.secret, nil), http.StatusForbidden, "outside_organization")
	want(t, w.do(http.MethodPost, "/v1/api-keys/"+w.keyA.id+"/rotate", w.keyA.secret, map[string]any{"expires_in": "1h"}), http.StatusOK)
	wantProblem(t, w.do(http.MethodDelete, "/v1/organizations/"+w.a.ID, w.keyA.secret, nil), http.StatusForbidden, "outside_organization")
	wantProblem(t, w.do(http.MethodDelete, "/v1/organizations/"+w.a.ID, w.keyA.token, nil), http.StatusForbidden, "outside_organization")
	want(t, w.do(http.MethodGet, "/v1/organizations/"+w.a.ID, w.keyA.secret, nil), http.StatusOK)
	// A key bound to no organization deletes it, and its keys with it.
	want(t, w.do(http.MethodDelete, "/v1/organizations/"+w.a.ID, w.AdminKey, nil), http.StatusNoContent)
	wantProblem(t, w.do(http.MethodGet, "/v1/organizations", w.keyA.secret, nil), http.StatusUnauthorized, "unauthorized")
}

// TestBoundKey_Members: only its own organization's members; adding an
// existing user it cannot see is 404, as the user is to it.
func TestBoundKey_Members(t *testing.T) {
	w := newTenant(t)
	k := w.keyA.secret
	if got := w.ids(k, "/v1/organizations/"+w.a.ID+"/members"); !slices.Equal(got, sorted(w.a.ID+"/"+w.onlyA.ID, w.a.ID+"/"+w.shared.ID)) {
		t.Errorf("its members: got %v", got)
	}
	b := "/v1/organizations/" + w.b.ID + "/members"
	wantProblem(t, w.do(http.MethodGet, b, k, nil), http.StatusNotFound, "not_found")
	wantProblem(t, w.do(http.MethodPost, b, k, map[string]any{"user_id": w.none.ID}), http.StatusNotFound, "not_found")
	wantProblem(t, w.do(http.MethodGet, b+"/"+w.onlyB.ID, k, nil), http.StatusNotFound, "not_found")
	wantProblem(t, w.do(http.MethodPatch, b+"/"+w.onlyB.ID, k, map[string]any{"role": "owner"}), http.StatusNotFound, "not_found")
	wantProblem(t, w.do(http.MethodDelete, b+"/"+w.onlyB.ID, k, nil), http.StatusNotFound, "not_found")

	own := "/v1/organizations/" + w.a.ID + "/members"
	for _, u := range []userBody{w.onlyB, w.none} {
		p := wantProblem(t, w.do(http.MethodPost, own, k, map[string]any{"user_id": u.ID}), http.StatusNotFound, "not_found")
		if p.Detail != account.ErrUserNotFound().Message {
			t.Errorf("adding a user outside: detail %q, want %q", p.Detail, account.ErrUserNotFound().Message)
		}
	}
	wantProblem(t, w.do(http.MethodPost, own, k, map[string]any{"user_id": w.onlyA.ID}), http.StatusConflict, "already_member")
	want(t, w.do(http.MethodPatch, own+"/"+w.onlyA.ID, k, map[string]any{"role": "admin"}), http.StatusOK)
	if got := w.ids(w.AdminKey, "/v1/users/"+w.none.ID+"/organizations"); len(got) != 0 {
		t.Errorf("the user of no organization after the bound key's attempts: memberships %v", got)
	}
	if got := w.ids(w.AdminKey, b); !slices.Equal(got, sorted(w.b.ID+"/"+w.onlyB.ID, w.b.ID+"/"+w.shared.ID)) {
		t.Errorf("b's members after the bound key's attempts: %v", got)
	}
}

// TestBoundKey_Users: a user is seen through the organization's
// membership only; a user it creates joins the organization; a shared
// user is changed and deleted by a key bound to no organization only.
func TestBoundKey_Users(t *testing.T) {
	w := newTenant(t)
	for _, cred := range []struct{ name, value string }{{"Key", w.keyA.secret}, {"Token", w.keyA.token}} {
		t.Run(cred.name+"/Reads", func(t *testing.T) {
			k := cred.value
			if got := w.ids(k, "/v1/users"); !slices.Equal(got, sorted(w.onlyA.ID, w.shared.ID)) {
				t.Errorf("GET /v1/users: got %v, want %s and %s", got, w.onlyA.ID, w.shared.ID)
			}
			for _, u := range []userBody{w.onlyB, w.none} {
				wantProblem(t, w.do(http.MethodGet, "/v1/users/"+u.ID, k, nil), http.StatusNotFound, "not_found")
				wantProblem(t, w.do(http.MethodGet, "/v1/users/"+u.ID+"/organizations", k, nil), http.StatusNotFound, "not_found")
				for _, q := range []string{"email=" + url.QueryEscape(u.Email), "external_id=" + url.QueryEscape(*u.ExternalID)} {
					if got := w.ids(k, "/v1/users?"+q); len(got) != 0 {
						t.Errorf("?%s of a user outside: got %v, want none", q, got)
					}
				}
			}
			for _, u := range []userBody{w.onlyA, w.shared} {
				want(t, w.do(http.MethodGet, "/v1/users/"+u.ID, k, nil), http.StatusOK)
				if got := w.ids(k, "/v1/users?email="+url.QueryEscape(u.Email)); !slices.Equal(got, []string{u.ID}) {
					t.Errorf("?email= of its member: got %v", got)
				}
				if got := w.ids(k, "/v1/users?external_id="+url.QueryEscape(*u.ExternalID)); !slices.Equal(got, []string{u.ID}) {
					t.Errorf("?external_id= of its member: got %v", got)
				}
			}
			// The shared user's memberships: its organization's only.
			if got := w.ids(k, "/v1/users/"+w.shared.ID+"/organizations"); !slices.Equal(got, []string{w.a.ID + "/" + w.shared.ID}) {
				t.Errorf("the shared user's memberships: got %v, want a's only", got)
			}
			if got := w.ids(w.AdminKey, "/v1/users/"+w.shared.ID+"/organizations"); len(got) != 2 {
				t.Errorf("the shared user's memberships to the admin key: got %v, want both", got)
			}
		})
	}
	k := w.keyA.secret
	t.Run("ChangesOutside", func(t *testing.T) {
		for _, u := range []userBody{w.onlyB, w.none} {
			wantProblem(t, w.do(http.MethodPatch, "/v1/users/"+u.ID, k, map[string]any{"name": "taken over"}), http.StatusNotFound, "not_found")
			wantProblem(t, w.do(http.MethodPut, "/v1/users/"+u.ID, k, map[string]any{"name": "taken over"}), http.StatusNotFound, "not_found")
			wantProblem(t, w.do(http.MethodDelete, "/v1/users/"+u.ID, k, nil), http.StatusNotFound, "not_found")
		}
		wantProblem(t, w.do(http.MethodPatch, "/v1/users/"+w.shared.ID, k, map[string]any{"name": "taken over"}), http.StatusForbidden, "outside_organization")
		wantProblem(t, w.do(http.MethodDelete, "/v1/users/"+w.shared.ID, k, nil), http.StatusForbidden, "outside_organization")
		wantProblem(t, w.do(http.MethodDelete, "/v1/users/"+w.shared.ID, w.keyA.token, nil), http.StatusForbidden, "outside_organization")
		for _, u := range []userBody{w.onlyB, w.none, w.shared} {
			if got := w.do(http.MethodGet, "/v1/users/"+u.ID, w.AdminKey, nil).Map(t); got["name"] != "U" {
				t.Errorf("user %s after the bound key's attempts: %v", u.ID, got)
			}
		}
		// Its own user it changes, but not the user's global role or
		// external id, which are the integrator's.
		want(t, w.do(http.MethodPatch, "/v1/users/"+w.onlyA.ID, k, map[string]any{"name": "Changed"}), http.StatusOK)
		for _, patch := range []map[string]any{{"role": "admin"}, {"external_id": "claimed"}, {"external_id": nil}} {
			wantProblem(t, w.do(http.MethodPatch, "/v1/users/"+w.onlyA.ID, k, patch), http.StatusForbidden, "outside_organization")
		}
		if got := w.do(http.MethodGet, "/v1/users/"+w.onlyA.ID, w.AdminKey, nil).Map(t); got["role"] != account.DefaultUserRole || got["external_id"] != *w.onlyA.ExternalID {
			t.Errorf("its user after the attempts: %v, want role and external_id unchanged", got)
		}
	})
	t.Run("Create", func(t *testing.T) {
		res := w.do(http.MethodPost, "/v1/users", k, map[string]any{"email": uniqueEmail(), "name": "New"})
		want(t, res, http.StatusCreated)
		var u userBody
		res.Decode(t, &u)
		if got := w.ids(w.AdminKey, "/v1/users/"+u.ID+"/organizations"); !slices.Equal(got, []string{w.a.ID + "/" + u.ID}) {
			t.Errorf("the created user's memberships: got %v, want a's", got)
		}
		m := w.do(http.MethodGet, "/v1/organizations/"+w.a.ID+"/members/"+u.ID, k, nil).Map(t)
		if m["role"] != account.DefaultMemberRole {
			t.Errorf("the created user's membership: %v, want role %s", m, account.DefaultMemberRole)
		}
		if got := w.ids(k, "/v1/users"); !slices.Contains(got, u.ID) {
			t.Errorf("GET /v1/users after the create: %v, want %s in it", got, u.ID)
		}
		for _, body := range []map[string]any{{"email": uniqueEmail(), "name": "N", "role": "admin"}, {"email": uniqueEmail(), "name": "N", "external_id": "claimed"}} {
			wantProblem(t, w.do(http.MethodPost, "/v1/users", k, body), http.StatusForbidden, "outside_organization")
		}
		// The address is unique among all users: taken, whoever has it.
		wantProblem(t, w.do(http.MethodPost, "/v1/users", k, map[string]any{"email": w.onlyB.Email, "name": "Dup"}), http.StatusConflict, "email_taken")
		if got := w.ids(k, "/v1/users"); len(got) != 3 {
			t.Errorf("GET /v1/users after a failed create: %v, want 3 users", got)
		}
		want(t, w.do(http.MethodDelete, "/v1/users/"+u.ID, k, nil), http.StatusNoContent)
		wantProblem(t, w.do(http.MethodGet, "/v1/users/"+u.ID, w.AdminKey, nil), http.StatusNotFound, "not_found")
	})
	t.Run("Paging", func(t *testing.T) {
		var pages [][]string
		path := "/v1/users?limit=1"
		for range 5 {
			res := w.do(http.MethodGet, path, k, nil)
			want(t, res, http.StatusOK)
			var l struct {
				Data []userBody `json:"data"`
				Next *string    `json:"next_cursor"`
			}
			res.Decode(t, &l)
			var ids []string
			for _, u := range l.Data {
				ids = append(ids, u.ID)
			}
			pages = append(pages, ids)
			if l.Next == nil || *l.Next == "" {
				break
			}
			path = "/v1/users?limit=1&cursor=" + url.QueryEscape(*l.Next)
		}
		var all []string
		for _, p := range pages {
			all = append(all, p...)
		}
		slices.Sort(all)
		if !slices.Equal(all, sorted(w.onlyA.ID, w.shared.ID)) {
			t.Errorf("pages of one: %v, want %s and %s", pages, w.onlyA.ID, w.shared.ID)
		}
	})
}

// TestBoundKey_Tokens: another tenant's token (a key bound to another
// organization, or to none) is inactive to the bound key's introspection,
// and its revocation, on either endpoint, is refused and changes nothing.
func TestBoundKey_Tokens(t *testing.T) {
	w := newTenant(t)
	adminTok, _ := w.IssueToken(t, w.AdminKey, "", account.ScopeReadUsers)
	clientA := basicClient(w.keyA.id, w.keyA.secret)
	for name, tok := range map[string]string{"OtherOrganization": w.keyB.token, "Unbound": adminTok} {
		t.Run(name, func(t *testing.T) {
			if got := w.introspect(clientA, tok); got["active"] != false || len(got) != 1 {
				t.Errorf("introspected by the bound key: got %v, want only active false", got)
			}
			if got := w.introspect(basicClient(w.keyB.id, w.keyB.secret), w.keyA.token); got["active"] != false {
				t.Errorf("a's token introspected by b's key: got %v", got)
			}
			wantProblem(t, w.do(http.MethodPost, "/v1/auth/revoke", w.keyA.secret, map[string]any{"token": tok}), http.StatusForbidden, "outside_organization")
			wantOAuthError(t, w.form("/oauth2/revoke", clientA, url.Values{"token": {tok}}), http.StatusBadRequest, "unauthorized_client")
			if v := w.do(http.MethodGet, "/v1/auth/verify", tok, nil).Map(t); v["valid"] != true {
				t.Errorf("the token after the bound key's revocations: %v, want valid", v)
			}
		})
	}
	// Its own organization's tokens it introspects and revokes.
	if got := w.introspect(clientA, w.keyA.token); got["active"] != true || got["org_id"] != w.a.ID {
		t.Errorf("its own token introspected: %v", got)
	}
	if got := w.introspect(basicClient(w.keyB.id, w.keyB.secret), w.keyB.token); got["active"] != true {
		t.Errorf("b's token introspected by b's key: %v", got)
	}
	want(t, w.do(http.MethodPost, "/v1/auth/revoke", w.keyA.secret, map[string]any{"token": w.keyA.token}), http.StatusOK)
	if v := w.do(http.MethodGet, "/v1/auth/verify", w.keyA.token, nil).Map(t); v["valid"] != false {
		t.Errorf("its own token after its revocation: %v, want invalid", v)
	}
	// The admin key introspects every tenant's token.
	if got := w.introspect(basicClient(w.keyAdminID(t), w.AdminKey), w.keyB.token); got["active"] != true {
		t.Errorf("b's token introspected by the admin key: %v", got)
	}
}

// keyAdminID returns the id of the bootstrap admin key.
func (w tenant) keyAdminID(t *testing.T) string {
	t.Helper()
	p, err := w.Service.Authenticate(t.Context(), w.AdminKey)
	if err != nil {
		t.Fatal(err)
	}
	return p.KeyID
}

// TestBoundKey_Events: GET /v1/events shows a bound key the events of its
// organization, its members and its keys, and nothing else.
func TestBoundKey_Events(t *testing.T) {
	w := tenant{api: newAPI(t)}
	w.a = w.createOrg(uniqueSlug())
	w.keyA = w.boundKey(w.a.ID)
	w.b = w.createOrg(uniqueSlug())
	w.keyB = w.boundKey(w.b.ID)
	inA, inB := w.createUser(), w.createUser()
	w.addMember(w.a.ID, inA.ID)
	w.addMember(w.b.ID, inB.ID)
	res := w.do(http.MethodPost, "/v1/users", w.keyA.secret, map[string]any{"email": uniqueEmail(), "name": "Tenant's"})
	want(t, res, http.StatusCreated)
	var own userBody
	res.Decode(t, &own)
	want(t, w.do(http.MethodPatch, "/v1/users/"+own.ID, w.keyA.secret, map[string]any{"name": "Tenant's own"}), http.StatusOK)
	want(t, w.do(http.MethodPatch, "/v1/users/"+inB.ID, w.AdminKey, map[string]any{"name": "B's"}), http.StatusOK)
	want(t, w.do(http.MethodPost, "/v1/auth/revoke", w.AdminKey, map[string]any{"token": w.keyA.token}), http.StatusOK)
	want(t, w.do(http.MethodPost, "/v1/auth/revoke", w.AdminKey, map[string]any{"token": w.keyB.token}), http.StatusOK)

	wantA := []struct{ typ, id string }{
		{account.EventOrganizationCreated, w.a.ID},
		{account.EventAPIKeyCreated, w.keyA.id},
		{account.EventOrganizationMembershipCreated, inA.ID},
		{account.EventUserCreated, own.ID},
		{account.EventOrganizationMembershipCreated, own.ID},
		{account.EventUserUpdated, own.ID},
		{account.EventTokenRevoked, ""},
	}
	got := w.tail(w.keyA.secret, feedStart, len(wantA))
	// Every event of the admin key's feed is there by now: any more of a's
	// would show up too.
	all := w.tail(w.AdminKey, feedStart, 14)
	got = append(got, w.tail(w.keyA.secret, got[len(got)-1].ID, 0)...)
	if len(all) != 14 {
		t.Errorf("the admin key's feed: %d events, want 14", len(all))
	}
	if len(got) != len(wantA) {
		for _, e := range got {
			t.Logf("%s %s %v", e.ID, e.Type, e.Data)
		}
		t.Fatalf("the bound key's feed: %d events, want %d", len(got), len(wantA))
	}
	for i, e := range got {
		id, _ := e.Data["id"].(string)
		if e.Type == account.EventOrganizationMembershipCreated {
			id, _ = e.Data["user_id"].(string)
		}
		if e.Type != wantA[i].typ || wantA[i].id != "" && id != wantA[i].id {
			t.Errorf("event %d: %s %s, want %s %s", i, e.Type, id, wantA[i].typ, wantA[i].id)
		}
	}
	if tokID := got[len(got)-1].Data["token_id"]; tokID != payload(t, w.keyA.token)["jti"] {
		t.Errorf("the revocation the bound key sees: token %v, want its own token's", tokID)
	}
	// Newest first, the same events.
	res = w.do(http.MethodGet, "/v1/events?limit=100", w.keyA.secret, nil)
	want(t, res, http.StatusOK)
	var page struct {
		Data []feedEvent `json:"data"`
	}
	res.Decode(t, &page)
	if len(page.Data) != len(wantA) || page.Data[0].ID != got[len(got)-1].ID {
		t.Errorf("newest first: %d events, want %d, newest %s", len(page.Data), len(wantA), got[len(got)-1].ID)
	}
}

package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"latchkey/pkg/account"
	"latchkey/pkg/dynamostore/dynamotest"
	"latchkey/pkg/tablestore"
)

// TestConsole_ChooseByName: the forms that ask for an organization or a
// user offer them by name, and the pages show names beside ids; a session
// that cannot list them types an id, as before.
func TestConsole_ChooseByName(t *testing.T) {
	s := newStack(t)
	admin := mustAuth(t, s.Env, s.AdminKey)
	session := s.signIn(t, s.AdminKey)
	bound, _, err := s.Service.CreateAPIKey(t.Context(), admin, account.NewAPIKey{Name: "bound", Scopes: []string{account.ScopeReadUsers},
		OrganizationID: s.org.ID, OwnerID: s.user.ID})
	if err != nil {
		t.Fatal(err)
	}

	t.Run("OK", func(t *testing.T) {
		page := s.send(t, http.MethodGet, "/console/api-keys", session, nil, nil)
		for _, want := range []string{
			`<select id="organization_id" name="organization_id"`, `<option value="` + s.org.ID + `">Acme (acme)</option>`,
			`<select id="f-org" name="organization_id">`,
			`<option value="` + s.user.ID + `" label="ada@example.com (Ada)"></option>`, `list="owners"`,
			// The bound key's row names its organization and owner.
			`">Acme</a>`, `ada@example.com (Ada) <code class="small">` + s.user.ID + `</code>`,
		} {
			if !strings.Contains(page.body, want) {
				t.Errorf("the keys page lacks %s", want)
			}
		}
		page = s.send(t, http.MethodGet, "/console/api-keys/"+bound.ID, session, nil, nil)
		for _, want := range []string{`<a href="/console/organizations/` + s.org.ID + `">Acme</a>`, `<a href="/console/users/` + s.user.ID + `">ada@example.com</a>`} {
			if !strings.Contains(page.body, want) {
				t.Errorf("the key's page lacks %s", want)
			}
		}
		// Creating with the organization chosen binds the key to it.
		res := s.send(t, http.MethodPost, "/console/api-keys", session, url.Values{"name": {"chosen"}, "scope": {account.ScopeReadUsers}, "organization_id": {s.org.ID}, "owner_id": {s.user.ID}}, sameOrigin)
		if res.StatusCode != http.StatusCreated {
			t.Fatalf("create with the organization chosen: %d", res.StatusCode)
		}

		org := "/console/organizations/" + s.org.ID
		page = s.send(t, http.MethodGet, org, session, nil, nil)
		if want := `<option value="` + s.user.ID + `">ada@example.com (Ada)</option>`; !strings.Contains(page.body, want) {
			t.Errorf("the add-member form lacks %s", want)
		}
		res = s.send(t, http.MethodPost, org+"/members", session, url.Values{"user_id": {s.user.ID}, "role": {"member"}}, sameOrigin)
		if res.StatusCode != http.StatusSeeOther {
			t.Fatalf("add the member chosen: %d", res.StatusCode)
		}
		page = s.send(t, http.MethodGet, org, session, nil, nil)
		if strings.Contains(page.body, `<option value="`+s.user.ID+`"`) || !strings.Contains(page.body, `<option value="">choose a user</option>`) {
			t.Error("the add-member form still offers a member")
		}
	})

	t.Run("WithoutListScopes", func(t *testing.T) {
		keys := s.signIn(t, s.keyWith(t, account.ScopeReadAPIKeys, account.ScopeWriteAPIKeys, account.ScopeReadUsers))
		page := s.send(t, http.MethodGet, "/console/api-keys", keys, nil, nil)
		if !strings.Contains(page.body, `<input id="organization_id" name="organization_id"`) || strings.Contains(page.body, `<select id="organization_id"`) {
			t.Error("a session that cannot list organizations is not offered an id field")
		}
	})
}

// TestConsole_EventActors: the events feed names the key that made each
// event, beside its id.
func TestConsole_EventActors(t *testing.T) {
	s := newStack(t)
	admin := mustAuth(t, s.Env, s.AdminKey)
	boot, err := s.Service.GetAPIKey(t.Context(), admin, admin.KeyID)
	if err != nil {
		t.Fatal(err)
	}
	session := s.signIn(t, s.AdminKey)
	if res := s.send(t, http.MethodPost, "/console/users", session, url.Values{"email": {"bob@example.com"}, "name": {"Bob"}, "role": {account.UserRoles[0]}}, sameOrigin); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("create a user: %d", res.StatusCode)
	}
	want := `<a href="/console/api-keys/` + admin.KeyID + `">` + boot.Name + `</a> <code class="small">` + admin.KeyID + `</code>`
	// DynamoDB's feed shows an event the store's lag after it is written
	// (tablestore.EventLag of the tests' timeout, which grows with the
	// machine's load): read until it is there, for that lag and 30 s more.
	for deadline := time.Now().Add(tablestore.EventLag(dynamotest.Timeout) + 30*time.Second); ; time.Sleep(200 * time.Millisecond) {
		page := s.send(t, http.MethodGet, "/console/events", session, nil, nil)
		if strings.Contains(page.body, want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the events page does not name the actor: lacks %s", want)
		}
	}
}

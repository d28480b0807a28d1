package oldlayout_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"latchkey/pkg/account"
	"latchkey/pkg/boltstore/oldlayout"
)

// TestDomain_NewFields: a field added to account.User, Organization or
// Membership leaves this package and its caller compiling. The earlier
// layout's items are frozen; the domain types are not, and a struct
// conversion between them breaks the build of every release that adds
// a field. It builds both packages with go build's -overlay standing a
// copy of the domain's files, each type one field longer, in for them.
func TestDomain_NewFields(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	replace := map[string]string{}
	for file, types := range map[string][]string{"users.go": {"User"}, "types.go": {"Organization", "Membership"}} {
		path, err := filepath.Abs(filepath.Join("..", "..", "account", file))
		if err != nil {
			t.Fatal(err)
		}
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		text := string(src)
		for _, name := range types {
			decl := "\ntype " + name + " struct {\n"
			if !strings.Contains(text, decl) {
				t.Fatalf("%s: no %q", path, strings.TrimSpace(decl))
			}
			text = strings.Replace(text, decl, decl+"\tAddedInALaterRelease string\n", 1)
		}
		replace[path] = filepath.Join(dir, file)
		if err := os.WriteFile(replace[path], []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	overlay, err := json.Marshal(map[string]any{"Replace": replace})
	if err != nil {
		t.Fatal(err)
	}
	overlayFile := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(overlayFile, overlay, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("go", "build", "-overlay", overlayFile, ".", "..").CombinedOutput(); err != nil {
		t.Fatalf("with a field added to User, Organization and Membership: %v\n%s", err, out)
	}
}

// TestDomain_EveryField: every field of an item of the earlier layout
// reaches the field of its name in the domain type, as it is.
func TestDomain_EveryField(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	meta := account.Metadata{"team": "core"}
	user := oldlayout.UserItem{ID: "usr_1", Email: "ada@example.com", Name: "Ada", Role: "admin", ExternalID: "ext-ada", Metadata: meta, CreatedAt: at, UpdatedAt: at.Add(time.Hour)}
	org := oldlayout.OrgItem{ID: "org_1", Name: "Acme", Slug: "acme", Plan: "free", ExternalID: "ext-acme", Metadata: meta, CreatedAt: at, UpdatedAt: at.Add(time.Hour)}
	member := oldlayout.MemberItem{OrganizationID: "org_1", UserID: "usr_1", Role: "member", CreatedAt: at, UpdatedAt: at.Add(time.Hour)}
	key := oldlayout.APIKeyItem{ID: "key_2", Name: "child", Hash: []byte{1}, Last4: "abcd", Scopes: []string{"read:users"}, CreatedBy: "key_1",
		Ancestors: []string{"key_1"}, Bootstrap: true, OrganizationID: "org_1", OwnerID: "usr_1", Metadata: meta, Disabled: true,
		PreviousHash: []byte{2}, PreviousExpiresAt: at.Add(time.Minute), TokensRevokedBefore: at.Add(2 * time.Minute), CreatedAt: at, ExpiresAt: at.Add(time.Hour)}
	for _, c := range []struct{ item, domain any }{
		{user, oldlayout.UserDomain(user)},
		{org, oldlayout.OrgDomain(org)},
		{member, oldlayout.MemberDomain(member)},
		{key, oldlayout.APIKeyDomain(key)},
	} {
		item, domain := reflect.ValueOf(c.item), reflect.ValueOf(c.domain)
		for i := range item.NumField() {
			name, v := item.Type().Field(i).Name, item.Field(i)
			if v.IsZero() {
				t.Errorf("%T.%s is not set in the test case", c.item, name)
			}
			d := domain.FieldByName(name)
			if !d.IsValid() || !d.CanConvert(v.Type()) {
				t.Errorf("%T has no field %s of a type %T.%s converts to", c.domain, name, c.item, name)
				continue
			}
			if got := d.Convert(v.Type()).Interface(); !reflect.DeepEqual(got, v.Interface()) {
				t.Errorf("%T.%s: got %v, want %v", c.domain, name, got, v.Interface())
			}
		}
	}
}

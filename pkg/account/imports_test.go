package account_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestDomain_NoHTTP proves that the domain is tested without HTTP: its
// tests import no net/http and link no part of the HTTP layer (handler,
// test stack, assembly, console). The DynamoDB client they reach through
// teststore speaks HTTP to DynamoDB Local, so net/http may be linked; the
// tests themselves never use it.
func TestDomain_NoHTTP(t *testing.T) {
	out, err := exec.Command("go", "list", "-test", "-deps", "-f", "{{.ImportPath}}|{{join .Imports \" \"}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -test -deps: %v", err)
	}
	var linked []string
	for l := range strings.Lines(string(out)) {
		path, imports, _ := strings.Cut(strings.TrimSpace(l), "|")
		path, variant, _ := strings.Cut(path, " ")
		linked = append(linked, path)
		// The test files: package account_test, and package account
		// compiled with its own test files (the [account.test] variant).
		if path == "latchkey/pkg/account_test" || path == "latchkey/pkg/account" && variant != "" {
			for _, imp := range strings.Fields(imports) {
				if imp == "net/http" || strings.HasPrefix(imp, "net/http/") {
					t.Errorf("%s imports %s", path, imp)
				}
			}
		}
	}
	if !slices.Contains(linked, "latchkey/pkg/account_test") {
		t.Fatalf("go list found no latchkey/pkg/account_test in:\n%s", out)
	}
	for _, p := range []string{"net/http/httptest", "latchkey/pkg/httpapi", "latchkey/pkg/httpapi/httpapitest", "latchkey/pkg/assembly", "latchkey/pkg/console"} {
		if slices.Contains(linked, p) {
			t.Errorf("pkg/account's tests link %s", p)
		}
	}
}

package account_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
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

// TestSource_NoContextValues: what a write does is decided by its
// arguments (WriteOptions, which the Service passes to the Store), never
// by a value a context carries: no production file calls
// context.WithValue, nor Value with one argument, a context's lookup
// (issue 30).
func TestSource_NoContextValues(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		parsed, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(parsed, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok {
				if sel, ok := call.Fun.(*ast.SelectorExpr); ok {
					pkg, _ := sel.X.(*ast.Ident)
					if sel.Sel.Name == "WithValue" && pkg != nil && pkg.Name == "context" || sel.Sel.Name == "Value" && len(call.Args) == 1 {
						t.Errorf("%s: a context value", fset.Position(call.Pos()))
					}
				}
			}
			return true
		})
	}
}

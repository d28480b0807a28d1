package tablestore_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImports_NoExpressions: the store sends its port's typed operations
// and builds no DynamoDB expression; only TableDefinition (table.go) has
// an SDK type (issue 30).
func TestImports_NoExpressions(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		parsed, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range parsed.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(path, "github.com/aws/") && (f != "table.go" || strings.Contains(path, "expression")) {
				t.Errorf("%s imports %s", f, path)
			}
		}
	}
}

// TestSource_NoContextValues: what a write does is decided by its
// arguments (account.WriteOptions, the events of a change, the copy a
// verify reads), never by a value a context carries: no production file
// calls context.WithValue, nor Value with one argument, a context's lookup
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

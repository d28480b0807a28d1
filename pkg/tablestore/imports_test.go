package tablestore_test

import (
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

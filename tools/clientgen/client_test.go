// Package clientgen_test generates a Go client from openapi.yaml with
// oapi-codegen, the generator integrators reach for, and checks that it
// compiles and types every list's items: a list whose items the document
// leaves untyped reaches clients as []interface{} (unknown[] in
// TypeScript). The client is generated into a temporary directory, never
// into the checkout.
package clientgen_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	// What the generated client imports, kept in go.mod and go.sum so
	// that the client builds with them as they are.
	_ "github.com/oapi-codegen/runtime"
	_ "github.com/oapi-codegen/runtime/types"
)

const spec = "../../openapi.yaml"

func TestGeneratedClient(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "oapi-codegen.yaml")
	write(t, cfg, "package: client\ngenerate:\n  client: true\n  models: true\n")
	gen := filepath.Join(dir, "client.gen.go")
	run(t, ".", "go", "tool", "oapi-codegen", "-config", cfg, "-o", gen, spec)

	// The temporary directory is a module with this one's requirements.
	for _, f := range []string{"go.mod", "go.sum"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(dir, f), string(b))
	}
	run(t, dir, "go", "vet", "./...")

	file, err := parser.ParseFile(token.NewFileSet(), gen, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	structs := map[string]*ast.StructType{}
	for _, d := range file.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok {
			continue
		}
		for _, s := range g.Specs {
			if ts, ok := s.(*ast.TypeSpec); ok {
				if st, ok := ts.Type.(*ast.StructType); ok {
					structs[ts.Name.Name] = st
				}
			}
		}
	}
	lists := listOperations(t)
	if len(lists) == 0 {
		t.Fatal("openapi.yaml has no list operation (one that takes cursor)")
	}
	for _, op := range lists {
		res := strings.ToUpper(op[:1]) + op[1:] + "Response"
		page := field(structs[res], "JSON200")
		star, ok := page.(*ast.StarExpr)
		if !ok {
			t.Errorf("%s: %s.JSON200 is %s, want a pointer to a named page type", op, res, show(page))
			continue
		}
		name, _ := star.X.(*ast.Ident)
		if name == nil || structs[name.Name] == nil {
			t.Errorf("%s: the page is %s, want a named struct", op, show(star.X))
			continue
		}
		data := field(structs[name.Name], "Data")
		arr, ok := data.(*ast.ArrayType)
		if !ok {
			t.Errorf("%s: %s.Data is %s, want a slice", op, name.Name, show(data))
			continue
		}
		if item, ok := arr.Elt.(*ast.Ident); !ok || structs[item.Name] == nil {
			t.Errorf("%s: %s.Data is %s, want a slice of a named struct", op, name.Name, show(data))
		}
	}
}

// listOperations returns the operationId of every operation of openapi.yaml
// that takes the cursor parameter.
func listOperations(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(spec)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]yaml.Node `yaml:"paths"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	var ops []string
	for _, item := range doc.Paths {
		for method, node := range item {
			if !slices.Contains([]string{"get", "put", "post", "delete", "patch"}, method) {
				continue // the path's parameters, say
			}
			var op struct {
				OperationID string           `yaml:"operationId"`
				Parameters  []map[string]any `yaml:"parameters"`
			}
			if err := node.Decode(&op); err != nil {
				t.Fatal(err)
			}
			for _, p := range op.Parameters {
				if p["$ref"] == "#/components/parameters/cursor" || p["name"] == "cursor" {
					ops = append(ops, op.OperationID)
				}
			}
		}
	}
	slices.Sort(ops)
	return ops
}

// field returns the type of s's field name, or nil.
func field(s *ast.StructType, name string) ast.Expr {
	if s == nil {
		return nil
	}
	for _, f := range s.Fields.List {
		for _, n := range f.Names {
			if n.Name == name {
				return f.Type
			}
		}
	}
	return nil
}

func show(e ast.Expr) string {
	switch e := e.(type) {
	case nil:
		return "missing"
	case *ast.Ident:
		return e.Name
	case *ast.StarExpr:
		return "*" + show(e.X)
	case *ast.ArrayType:
		return "[]" + show(e.Elt)
	case *ast.InterfaceType:
		return "interface{}"
	case *ast.MapType:
		return "map[" + show(e.Key) + "]" + show(e.Value)
	}
	return "an unnamed type"
}

func write(t *testing.T, name, s string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func run(t *testing.T, dir string, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

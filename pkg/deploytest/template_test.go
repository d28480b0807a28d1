package deploytest_test

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// templatePath is the SAM template at the repository root.
const templatePath = "../../template.yaml"

// template is template.yaml decoded into maps, lists and strings, with the
// short-form intrinsics (!Ref X, !GetAtt A.B, !Sub s, !If [...]) turned
// into their long forms ({"Ref": "X"}, {"Fn::GetAtt": "A.B"}, ...).
type template map[string]any

func loadTemplate(tb testing.TB) template {
	tb.Helper()
	b, err := os.ReadFile(templatePath)
	if err != nil {
		tb.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		tb.Fatalf("template.yaml: %v", err)
	}
	v, err := decodeNode(doc.Content[0])
	if err != nil {
		tb.Fatalf("template.yaml: %v", err)
	}
	return v.(map[string]any)
}

func decodeNode(n *yaml.Node) (any, error) {
	var v any
	switch n.Kind {
	case yaml.ScalarNode:
		v = n.Value
	case yaml.SequenceNode:
		list := []any{}
		for _, c := range n.Content {
			cv, err := decodeNode(c)
			if err != nil {
				return nil, err
			}
			list = append(list, cv)
		}
		v = list
	case yaml.MappingNode:
		m := map[string]any{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			cv, err := decodeNode(n.Content[i+1])
			if err != nil {
				return nil, err
			}
			m[n.Content[i].Value] = cv
		}
		v = m
	case yaml.AliasNode:
		return decodeNode(n.Alias)
	default:
		return nil, fmt.Errorf("line %d: unexpected YAML node", n.Line)
	}
	if tag, ok := strings.CutPrefix(n.Tag, "!"); ok && !strings.HasPrefix(tag, "!") {
		name := "Fn::" + tag
		if tag == "Ref" {
			name = "Ref"
		}
		v = map[string]any{name: v}
	}
	return v, nil
}

// resource returns the Properties of the resource with logical id, failing
// if it is missing or of another type.
func (t template) resource(tb testing.TB, id, typ string) map[string]any {
	tb.Helper()
	r, ok := t["Resources"].(map[string]any)[id].(map[string]any)
	if !ok {
		tb.Fatalf("template.yaml has no resource %s", id)
	}
	if got := r["Type"]; got != typ {
		tb.Fatalf("%s: type %v, want %s", id, got, typ)
	}
	props, _ := r["Properties"].(map[string]any)
	return props
}

// path walks maps by key; nil if any step is missing.
func path(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func list(v any) []any {
	l, _ := v.([]any)
	return l
}

// strs turns a list of strings (or one string) into a sorted []string.
func strs(v any) []string {
	var out []string
	switch v := v.(type) {
	case string:
		out = []string{v}
	case []any:
		for _, e := range v {
			out = append(out, fmt.Sprint(e))
		}
	}
	slices.Sort(out)
	return out
}

// refOf returns X for {"Ref": X}, "".
func refOf(v any) string {
	s, _ := path(v, "Ref").(string)
	return s
}

// functionEnv returns the environment of a function as the template sets
// it: Globals, overridden by the function's own variables.
func (t template) functionEnv(tb testing.TB, id string) map[string]any {
	tb.Helper()
	env := map[string]any{}
	if g, ok := path(map[string]any(t), "Globals", "Function", "Environment", "Variables").(map[string]any); ok {
		for k, v := range g {
			env[k] = v
		}
	}
	if f, ok := path(t.resource(tb, id, "AWS::Serverless::Function"), "Environment", "Variables").(map[string]any); ok {
		for k, v := range f {
			env[k] = v
		}
	}
	return env
}

// policyStatement returns the statement with Sid of the function's inline
// policy, failing if there is none.
func (t template) policyStatement(tb testing.TB, id, sid string) map[string]any {
	tb.Helper()
	for _, p := range list(t.resource(tb, id, "AWS::Serverless::Function")["Policies"]) {
		for _, s := range list(path(p, "Statement")) {
			if m, ok := s.(map[string]any); ok && m["Sid"] == sid {
				if m["Effect"] != "Allow" {
					tb.Fatalf("%s statement %s: Effect %v", id, sid, m["Effect"])
				}
				return m
			}
		}
	}
	tb.Fatalf("%s has no policy statement %s", id, sid)
	return nil
}

// functionPolicies returns the function's Policies: the test insists on
// inline statements only, since a managed or SAM policy template would
// grant more than the code uses.
func (t template) functionPolicies(tb testing.TB, id string) []any {
	tb.Helper()
	return list(t.resource(tb, id, "AWS::Serverless::Function")["Policies"])
}

package deploytest_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// templatePath is the SAM template at the repository root.
const templatePath = "../../template.yaml"

// template is template.yaml decoded into maps, lists and strings, with the
// short-form intrinsics (!Ref X, !GetAtt A.B, !Sub s, !If [...],
// !Condition C) turned into their long forms ({"Ref": "X"},
// {"Fn::GetAtt": "A.B"}, ..., {"Condition": "C"}).
type template map[string]any

func loadTemplate(tb testing.TB) template {
	tb.Helper()
	return loadTemplateFile(tb, templatePath)
}

// loadTemplateFile decodes the template at path as loadTemplate does.
func loadTemplateFile(tb testing.TB, path string) template {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	v, err := decodeNode(doc.Content[0])
	if err != nil {
		tb.Fatalf("%s: %v", path, err)
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
		if tag == "Ref" || tag == "Condition" { // the two without Fn::
			name = tag
		}
		v = map[string]any{name: v}
	}
	return v, nil
}

// under returns the template as CloudFormation sees it when each condition
// in conds has the value given: every Fn::If on one of them replaced by the
// branch it takes, AWS::NoValue dropped where it lands, and resources whose
// Condition is false removed. Conditions not in conds are left as written.
func (t template) under(conds map[string]bool) template {
	resolved := resolveIfs(map[string]any(t), conds).(map[string]any)
	if res, ok := resolved["Resources"].(map[string]any); ok {
		for id, r := range res {
			if c, ok := path(r, "Condition").(string); ok {
				if v, known := conds[c]; known && !v {
					delete(res, id)
				}
			}
		}
	}
	return resolved
}

// isNoValue reports whether v is !Ref AWS::NoValue.
func isNoValue(v any) bool { return refOf(v) == "AWS::NoValue" }

func resolveIfs(v any, conds map[string]bool) any {
	switch v := v.(type) {
	case map[string]any:
		if args, ok := v["Fn::If"].([]any); ok && len(v) == 1 && len(args) == 3 {
			if name, ok := args[0].(string); ok {
				if val, known := conds[name]; known {
					if val {
						return resolveIfs(args[1], conds)
					}
					return resolveIfs(args[2], conds)
				}
			}
			// Left as written, with its branches resolved: an
			// AWS::NoValue branch stays, or the !If would lose an argument.
			return map[string]any{"Fn::If": []any{args[0], resolveIfs(args[1], conds), resolveIfs(args[2], conds)}}
		}
		out := make(map[string]any, len(v))
		for k, e := range v {
			r := resolveIfs(e, conds)
			if !isNoValue(r) {
				out[k] = r
			}
		}
		return out
	case []any:
		out := []any{}
		for _, e := range v {
			r := resolveIfs(e, conds)
			if !isNoValue(r) {
				out = append(out, r)
			}
		}
		return out
	default:
		return v
	}
}

// variants are the values of the conditions that change the roles and what
// the functions are given, as a stack can be deployed: each branch of each
// condition is taken by at least one variant.
var variants = []struct {
	name  string
	conds map[string]bool
}{
	{"NewTable", map[string]bool{"CreateTable": true, "TracingEnabled": false}},
	{"ExistingTableTracing", map[string]bool{"CreateTable": false, "TracingEnabled": true}},
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

// functionRole returns the logical id of the role the function runs as,
// failing unless the function names one of the template's own roles: a
// role generated by SAM always carries AWSLambdaBasicExecutionRole, whose
// logs permissions cover every log group.
func (t template) functionRole(tb testing.TB, id string) string {
	tb.Helper()
	props := t.resource(tb, id, "AWS::Serverless::Function")
	if props["Policies"] != nil {
		tb.Fatalf("%s has Policies: they belong on its role", id)
	}
	att, _ := path(props, "Role", "Fn::GetAtt").(string)
	role, ok := strings.CutSuffix(att, ".Arn")
	if !ok {
		tb.Fatalf("%s: Role is %v, want !GetAtt <one of the template's roles>.Arn", id, props["Role"])
	}
	t.resource(tb, role, "AWS::IAM::Role")
	return role
}

// checkOwnRoleAndLogs: the function id (named what in errors) has a role
// no other function of the template shares, and may put log events in its
// own log group (LoggingConfig.LogGroup) alone.
func (t template) checkOwnRoleAndLogs(tb testing.TB, id, what string) {
	tb.Helper()
	role := t.functionRole(tb, id)
	for _, other := range t.functions() {
		if other != id && t.functionRole(tb, other) == role {
			tb.Errorf("the %s shares its role with %s", what, other)
		}
	}
	logGroup := refOf(path(t.resource(tb, id, "AWS::Serverless::Function"), "LoggingConfig", "LogGroup"))
	var logs bool
	for _, st := range t.statements(tb, id) {
		if slices.Contains(strs(st["Action"]), "logs:PutLogEvents") {
			logs = path(st["Resource"], "Fn::GetAtt") == logGroup+".Arn"
		}
	}
	if logGroup == "" || !logs {
		tb.Errorf("the %s does not log to a log group of its own (%q) alone", what, logGroup)
	}
}

// statements returns the statements of the function's role as a stack
// with the parameters' defaults deploys it: the test insists on one inline
// policy and nothing else, since a managed policy would grant more than
// the code uses.
func (t template) statements(tb testing.TB, id string) []map[string]any {
	tb.Helper()
	return t.statementsWith(tb, id, nil)
}

// statementsWith is statements with the parameters in params set, the
// others at their defaults: a statement under !If is kept or dropped as
// its condition holds. They are the statements of the role's one inline
// policy and of the AWS::IAM::RolePolicy resources that name the role
// (inline policies too, kept apart where the role may not depend on what
// they name: see AuthSecretsPolicy).
func (t template) statementsWith(tb testing.TB, id string, params map[string]string) []map[string]any {
	tb.Helper()
	role := t.functionRole(tb, id)
	props := t.resource(tb, role, "AWS::IAM::Role")
	for _, k := range []string{"ManagedPolicyArns", "PermissionsBoundary"} {
		if props[k] != nil {
			tb.Errorf("%s: %s is set; the role must hold inline policies and nothing else", role, k)
		}
	}
	policies := list(props["Policies"])
	if len(policies) != 1 {
		tb.Fatalf("%s: %d inline policies, want 1", role, len(policies))
	}
	docs := []any{path(policies[0], "PolicyDocument")}
	for _, rid := range slices.Sorted(maps.Keys(t["Resources"].(map[string]any))) {
		r := t["Resources"].(map[string]any)[rid]
		switch path(r, "Type") {
		case "AWS::IAM::RolePolicy":
			if refOf(path(r, "Properties", "RoleName")) == role {
				docs = append(docs, path(r, "Properties", "PolicyDocument"))
			}
		case "AWS::IAM::Policy", "AWS::IAM::ManagedPolicy":
			b, _ := json.Marshal(path(r, "Properties"))
			if strings.Contains(string(b), `{"Ref":"`+role+`"}`) {
				tb.Errorf("%s: %s %s attaches to it; only inline policies may", role, path(r, "Type"), rid)
			}
		}
	}
	var out []map[string]any
	for _, doc := range docs {
		for _, s := range list(path(doc, "Statement")) {
			if args := list(path(s, "Fn::If")); args != nil {
				if len(args) != 3 {
					tb.Fatalf("%s: !If %v does not have 3 arguments", role, args)
				}
				name, _ := args[0].(string)
				if s = args[2]; t.condition(tb, name, params) {
					s = args[1]
				}
				if refOf(s) == "AWS::NoValue" {
					continue
				}
			}
			m, ok := s.(map[string]any)
			if !ok || m["Fn::If"] != nil {
				tb.Fatalf("%s: statement %v is not a plain statement (test the template under each variant)", role, s)
			}
			out = append(out, m)
		}
	}
	return out
}

// parameterValue returns the value of a template parameter: params[name]
// if set, else its Default.
func (t template) parameterValue(tb testing.TB, name string, params map[string]string) string {
	tb.Helper()
	if v, ok := params[name]; ok {
		return v
	}
	if name == "AWS::Region" { // a pseudo parameter, as the tools deploy
		return "us-east-1"
	}
	return fmt.Sprint(t.parameter(tb, name)["Default"])
}

// condition evaluates a condition of the template, of the forms it uses
// (!Equals of a !Ref to a parameter and a string, !Not), failing on any
// other, so that a condition it cannot judge fails the test.
func (t template) condition(tb testing.TB, name string, params map[string]string) bool {
	tb.Helper()
	c := path(map[string]any(t), "Conditions", name)
	if c == nil {
		tb.Fatalf("no condition %s", name)
	}
	var eval func(v any) bool
	operand := func(v any) string {
		if r := refOf(v); r != "" {
			return t.parameterValue(tb, r, params)
		}
		s, ok := v.(string)
		if !ok {
			tb.Fatalf("condition %s: operand %v is neither a !Ref nor a string", name, v)
		}
		return s
	}
	eval = func(v any) bool {
		if args := list(path(v, "Fn::Equals")); len(args) == 2 {
			return operand(args[0]) == operand(args[1])
		}
		if args := list(path(v, "Fn::Not")); len(args) == 1 {
			return !eval(args[0])
		}
		tb.Fatalf("condition %s: %v is not understood by this evaluator", name, v)
		return false
	}
	return eval(c)
}

// policyStatement returns the Allow statement with Sid of the function's
// role, failing if there is none.
func (t template) policyStatement(tb testing.TB, id, sid string) map[string]any {
	tb.Helper()
	for _, m := range t.statements(tb, id) {
		if m["Sid"] == sid {
			if m["Effect"] != "Allow" {
				tb.Fatalf("%s statement %s: Effect %v", id, sid, m["Effect"])
			}
			return m
		}
	}
	tb.Fatalf("%s has no policy statement %s", id, sid)
	return nil
}

// getenv returns a getenv over a function's env (functionEnv) as a stack
// with params deploys it: a !Ref to a parameter is the parameter's value;
// any other value, and a parameter whose value is empty (ExistingTableName,
// which a stack that uses it sets), is its text, so that a !Ref is
// non-empty.
func (t template) getenv(tb testing.TB, env map[string]any, params map[string]string) func(string) string {
	tb.Helper()
	return func(k string) string {
		v, ok := env[k]
		if !ok {
			return ""
		}
		if r := refOf(v); path(map[string]any(t), "Parameters", r) != nil {
			if p := t.parameterValue(tb, r, params); p != "" {
				return p
			}
		}
		return fmt.Sprint(v)
	}
}

// TestDocs_DeployingParameters checks that every parameter of the template
// has a row in docs/deploying.md's parameter table, the one place an
// operator reads what to set: a row names its parameters in backquotes
// (`A` / `B` for a pair), and `Alarm...Threshold` stands for the
// thresholds, which docs/operating.md lists one by one.
func TestDocs_DeployingParameters(t *testing.T) {
	b, err := os.ReadFile("../../docs/deploying.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "\n| Parameter | Default | Meaning |\n|---|---|---|\n")
	if !ok {
		t.Fatal("docs/deploying.md has no parameter table")
	}
	documented := map[string]bool{}
	for _, line := range strings.Split(table, "\n") {
		if !strings.HasPrefix(line, "| ") {
			break // the table ends at its first line that is not a row
		}
		first, _, _ := strings.Cut(strings.TrimPrefix(line, "| "), " | ")
		for _, name := range strings.Split(first, " / ") {
			documented[strings.Trim(name, "`")] = true
		}
	}
	params, _ := loadTemplate(t)["Parameters"].(map[string]any)
	if len(params) == 0 {
		t.Fatal("the template has no parameters")
	}
	for name := range params {
		threshold := strings.HasPrefix(name, "Alarm") && strings.HasSuffix(name, "Threshold")
		if !documented[name] && !(threshold && documented["Alarm...Threshold"]) {
			t.Errorf("template parameter %s has no row in docs/deploying.md's parameter table", name)
		}
	}
}

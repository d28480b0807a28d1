package deploytest_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The principals the secrets' resource policies are judged for: the auth
// function's role, the canary hook's and the probe's, two operators
// (OperatorPrincipalArns), and another principal of the account that an
// IAM policy allows everything.
var (
	authPrincipal   = "role:AuthRole"
	canaryPrincipal = "role:CanaryHookRole"
	probePrincipal  = "role:ProbeRole"
	operatorARNs    = []string{"arn:aws:iam::123456789012:role/deployer", "arn:aws:iam::123456789012:role/break-glass"}
	otherPrincipal  = "arn:aws:iam::123456789012:role/admin"
)

// secretWrites are the actions that change what a secret holds or who may
// read it: with any of them a principal could choose the signing key or
// the admin key (and so mint tokens), or lift the policy.
var secretWrites = []string{
	"secretsmanager:PutSecretValue",
	"secretsmanager:UpdateSecret",
	"secretsmanager:UpdateSecretVersionStage",
	"secretsmanager:RestoreSecret",
	"secretsmanager:DeleteSecret",
	"secretsmanager:RotateSecret",
	"secretsmanager:CancelRotateSecret",
	"secretsmanager:PutResourcePolicy",
	"secretsmanager:DeleteResourcePolicy",
}

// resolvePrincipals resolves a policy value the secrets' policies use into
// the principal ARNs it stands for: a string, !GetAtt <Role>.Arn,
// !Ref OperatorPrincipalArns, and !Join and !Split over them. Anything
// else fails the test.
func resolvePrincipals(tb testing.TB, v any) []string {
	tb.Helper()
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, e := range v {
			out = append(out, resolvePrincipals(tb, e)...)
		}
		return out
	case map[string]any:
		if att, ok := v["Fn::GetAtt"].(string); ok {
			if role, ok := strings.CutSuffix(att, ".Arn"); ok {
				return []string{"role:" + role}
			}
		}
		if refOf(v) == operatorsParam {
			return operatorARNs
		}
		if args := list(v["Fn::Join"]); len(args) == 2 {
			return []string{strings.Join(resolvePrincipals(tb, args[1]), args[0].(string))}
		}
		if args := list(v["Fn::Split"]); len(args) == 2 {
			var out []string
			for _, s := range resolvePrincipals(tb, args[1]) {
				out = append(out, strings.Split(s, args[0].(string))...)
			}
			return out
		}
	}
	tb.Fatalf("policy value %v is not understood by this evaluator", v)
	return nil
}

// secretPolicy returns the statements of the resource policy on secret.
func secretPolicy(tb testing.TB, tpl template, secret string) []any {
	tb.Helper()
	for id, r := range tpl["Resources"].(map[string]any) {
		if path(r, "Type") == "AWS::SecretsManager::ResourcePolicy" && refOf(path(r, "Properties", "SecretId")) == secret {
			if path(r, "Properties", "BlockPublicPolicy") != "true" {
				tb.Errorf("%s: BlockPublicPolicy %v, want true", id, path(r, "Properties", "BlockPublicPolicy"))
			}
			return list(path(r, "Properties", "ResourcePolicy", "Statement"))
		}
	}
	return nil
}

// deniedBy reports whether a statement of a resource policy made only of
// denies (Principal "*", conditions on aws:PrincipalArn) denies principal
// the action, failing on any statement it cannot judge: IAM's explicit
// Deny wins over every Allow, so this alone decides.
func deniedBy(tb testing.TB, statements []any, principal, action string) bool {
	tb.Helper()
	denied := false
	for _, st := range statements {
		if path(st, "Effect") != "Deny" || path(st, "Principal") != "*" {
			tb.Fatalf("statement %v: want Effect Deny and Principal \"*\" (a policy of denies)", path(st, "Sid"))
		}
		if !slices.ContainsFunc(strs(path(st, "Action")), func(a string) bool { return globMatch(strings.ToLower(a), strings.ToLower(action)) }) {
			continue
		}
		applies := true
		for op, keys := range path(st, "Condition").(map[string]any) {
			for k, vals := range keys.(map[string]any) {
				if op != "ArnNotEquals" || k != "aws:PrincipalArn" {
					tb.Fatalf("statement %v: condition %s %s is not understood by this evaluator", path(st, "Sid"), op, k)
				}
				applies = applies && !slices.Contains(resolvePrincipals(tb, vals), principal)
			}
		}
		denied = denied || applies
	}
	return denied
}

// TestTemplate_SecretResourcePolicies: whatever an IAM policy allows, only
// the auth function reads the signing key and only it and the operators
// change it (it puts an RSA key with RS256; the operators rotate it and
// deploy the stack); only they read the admin key, and only the operators
// change it; the probe key is read by them, the canary hook and the probe,
// which use it, and changed by the operators alone. Another principal of
// the account, allowed everything by IAM, can neither read nor write any,
// nor lift the policies.
func TestTemplate_SecretResourcePolicies(t *testing.T) {
	tpl := loadTemplate(t)
	everyone := append([]string{authPrincipal, canaryPrincipal, probePrincipal, otherPrincipal}, operatorARNs...)
	for _, c := range []struct {
		secret          string
		readers, writer []string
	}{
		{"SigningKeySecret", []string{authPrincipal}, append([]string{authPrincipal}, operatorARNs...)},
		{"AdminApiKeySecret", append([]string{authPrincipal}, operatorARNs...), operatorARNs},
		{"ProbeKeySecret", append([]string{authPrincipal, canaryPrincipal, probePrincipal}, operatorARNs...), operatorARNs},
	} {
		statements := secretPolicy(t, tpl, c.secret)
		if statements == nil {
			t.Errorf("%s has no resource policy", c.secret)
			continue
		}
		for _, p := range everyone {
			want := slices.Contains(c.readers, p)
			if got := !deniedBy(t, statements, p, "secretsmanager:GetSecretValue"); got != want {
				t.Errorf("%s: %s may read it: %v, want %v", c.secret, p, got, want)
			}
			want = slices.Contains(c.writer, p)
			for _, a := range secretWrites {
				if got := !deniedBy(t, statements, p, a); got != want {
					t.Errorf("%s: %s may %s: %v, want %v", c.secret, p, a, got, want)
				}
			}
		}
	}
}

// TestDocs_SecretReadersCanDecrypt: every get-secret-value the docs and the
// template's outputs tell an operator to run names the secret it reads
// (through an output), and that secret's key lets the operators decrypt it
// through Secrets Manager and its resource policy lets them read it. A
// command that could only fail with AccessDenied is not documentation.
func TestDocs_SecretReadersCanDecrypt(t *testing.T) {
	tpl := loadTemplate(t)
	type command struct{ where, line, output string }
	var cmds []command
	docs, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	outRef := regexp.MustCompile(`\$\(out (\w+)\)`)
	for _, name := range append(docs, "../../README.md") {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for n, line := range strings.Split(string(b), "\n") {
			if !strings.Contains(line, "secretsmanager get-secret-value") {
				continue
			}
			c := command{where: fmt.Sprintf("%s:%d", filepath.Base(name), n+1), line: line}
			if m := outRef.FindStringSubmatch(line); m != nil {
				c.output = m[1]
			}
			cmds = append(cmds, c)
		}
	}
	for name, o := range path(map[string]any(tpl), "Outputs").(map[string]any) {
		if d := fmt.Sprint(path(o, "Description")); strings.Contains(d, "secretsmanager get-secret-value") {
			cmds = append(cmds, command{where: "template.yaml output " + name, line: d, output: name})
		}
	}
	if len(cmds) == 0 {
		t.Fatal("no get-secret-value documented: how does an operator read the admin key?")
	}
	res := tpl["Resources"].(map[string]any)
	for _, c := range cmds {
		secret := refOf(path(map[string]any(tpl), "Outputs", c.output, "Value"))
		if path(res[secret], "Type") != "AWS::SecretsManager::Secret" {
			t.Errorf("%s: %q reads no secret of the template this test can name (want --secret-id \"$(out <Output>)\")", c.where, strings.TrimSpace(c.line))
			continue
		}
		key := refOf(path(res[secret], "Properties", "KmsKeyId"))
		decrypts := false
		for _, st := range list(path(res[key], "Properties", "KeyPolicy", "Statement")) {
			if path(st, "Effect") == "Allow" && refOf(path(st, "Principal", "AWS")) == operatorsParam &&
				slices.Contains(strs(path(st, "Action")), "kms:Decrypt") &&
				fmt.Sprint(path(st, "Condition", "StringEquals", "kms:ViaService")) == viaSecretsManager {
				decrypts = true
			}
		}
		if !decrypts {
			t.Errorf("%s: the operators read %s, but its key %s does not let them decrypt it", c.where, secret, key)
		}
		if st := secretPolicy(t, tpl, secret); st != nil && deniedBy(t, st, operatorARNs[0], "secretsmanager:GetSecretValue") {
			t.Errorf("%s: the operators read %s, but its resource policy denies them", c.where, secret)
		}
	}
}

// TestTemplate_AdminKeyNarrowedAfterProbeKey (issue 34): the admin key's
// resource policy, which no longer lets the canary hook and the probe read
// it, changes only once both use the probe key (the hook's function,
// which CodeDeploy invokes, and the probe's live alias, which its
// schedule invokes): an upgrade from a release where they read the admin
// key refuses neither, and pages nobody.
func TestTemplate_AdminKeyNarrowedAfterProbeKey(t *testing.T) {
	tpl := loadTemplate(t)
	r := tpl["Resources"].(map[string]any)["AdminApiKeySecretPolicy"]
	deps := strs(path(r, "DependsOn"))
	for _, want := range []string{"CanaryHookFunction", "ProbeFunctionAliaslive"} {
		if !slices.Contains(deps, want) {
			t.Errorf("AdminApiKeySecretPolicy DependsOn %v, want %s among them", deps, want)
		}
	}
	for fn, env := range map[string]string{"CanaryHookFunction": "PROBE_KEY_SECRET_ARN", "ProbeFunction": "PROBE_KEY_SECRET_ARN"} {
		if got := refOf(tpl.functionEnv(t, fn)[env]); got != "ProbeKeySecret" {
			t.Errorf("%s %s = !Ref %s, want ProbeKeySecret", fn, env, got)
		}
	}
}

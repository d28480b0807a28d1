package deploytest_test

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"latchkey/pkg/lambdaapp"
)

// The facts of issue 22 ("Production on AWS, round 2") that a deploy of
// template.yaml must hold: versions and aliases, gradual deployment with
// alarm rollback, alarms that reach someone, secrets under keys of their
// own, CORS, a retained access log, and samconfig environments.

// TestTemplate_Aliases: every function publishes a version at each deploy
// and is invoked through its alias live, so that a deploy can shift
// traffic and be rolled back; any changed property (an environment
// variable too) makes a new version.
func TestTemplate_Aliases(t *testing.T) {
	tpl := loadTemplate(t)
	g := path(map[string]any(tpl), "Globals", "Function").(map[string]any)
	if g["AutoPublishAlias"] != "live" || g["AutoPublishAliasAllProperties"] != "true" {
		t.Errorf("Globals: AutoPublishAlias %v, AutoPublishAliasAllProperties %v; want live and true", g["AutoPublishAlias"], g["AutoPublishAliasAllProperties"])
	}
	for _, fn := range tpl.functions() {
		props := tpl.resource(t, fn, "AWS::Serverless::Function")
		if _, ok := props["AutoPublishAlias"]; ok {
			t.Errorf("%s sets AutoPublishAlias %v of its own", fn, props["AutoPublishAlias"])
		}
	}
}

// TestTemplate_GradualDeployment: the auth function, the authorizer, the
// verify URL, organizations and users move to a new version
// gradually by default, after the canary's pre-traffic check
// (CanaryHookFunction), rolled back by CodeDeploy when their alias's errors
// or latency alarm fires, or an alarm of the new version's own answers
// (5xx, and failed verifications; TestCanary_Alarms); a development stack
// may deploy all at once. The publisher, which the stream invokes, has no
// deployment preference (its alias moves at once), nor the hook.
func TestTemplate_GradualDeployment(t *testing.T) {
	tpl := loadTemplate(t)
	p := tpl.parameter(t, "DeploymentType")
	if d := fmt.Sprint(p["Default"]); !strings.HasPrefix(d, "Canary") && !strings.HasPrefix(d, "Linear") {
		t.Errorf("DeploymentType defaults to %s, want a canary or linear deployment", d)
	}
	if !slices.Contains(strs(p["AllowedValues"]), "AllAtOnce") {
		t.Errorf("DeploymentType allows %v, want AllAtOnce among them (a development stack)", p["AllowedValues"])
	}
	gradual := []string{logicalID(lambdaapp.Auth), authorizerID, verifyID, logicalID(lambdaapp.Organizations), logicalID(lambdaapp.Users)}
	// The alarms of each version's own answers (canaryAlarms), by function.
	versionAlarms := map[string][]string{}
	for _, a := range canaryAlarms {
		versionAlarms[a.function] = append(versionAlarms[a.function], a.id)
	}
	alarms := tpl.alarms(t)
	for _, fn := range tpl.functions() {
		pref := tpl.resource(t, fn, "AWS::Serverless::Function")["DeploymentPreference"]
		if !slices.Contains(gradual, fn) {
			if pref != nil {
				t.Errorf("%s has a DeploymentPreference", fn)
			}
			continue
		}
		if refOf(path(pref, "Type")) != "DeploymentType" {
			t.Errorf("%s: DeploymentPreference Type %v, want !Ref DeploymentType", fn, path(pref, "Type"))
		}
		if path(pref, "Enabled") == "false" {
			t.Errorf("%s: DeploymentPreference disabled", fn)
		}
		if refOf(path(pref, "Hooks", "PreTraffic")) != "CanaryHookFunction" {
			t.Errorf("%s: pre-traffic hook %v, want !Ref CanaryHookFunction", fn, path(pref, "Hooks", "PreTraffic"))
		}
		// The rollback alarms: exactly the alarms on the function's alias
		// (errors, and latency but for the verify URL's), and those of
		// its new version's answers. The verify URL's under its
		// condition: SAM makes its deployment group whatever the
		// function's condition.
		rollback := path(pref, "Alarms")
		if fn == verifyID {
			args := list(path(rollback, "Fn::If"))
			if len(args) != 3 || args[0] != "ServeVerifyUrl" || len(list(args[2])) != 0 {
				t.Fatalf("%s: rollback alarms %v, want !If [ServeVerifyUrl, [...], []]", fn, rollback)
			}
			rollback = args[1]
		}
		var got []string
		for _, a := range list(rollback) {
			got = append(got, refOf(a))
		}
		slices.Sort(got)
		want := slices.Clone(versionAlarms[fn])
		var metrics []string
		for _, a := range alarms {
			dims := strings.Join(a.metrics, " ")
			if strings.Contains(dims, "FunctionName=!Ref "+fn+" ") && strings.Contains(dims, `Resource={"Fn::Sub":"${`+fn+`}:live"}`) {
				want = append(want, a.id)
				for _, m := range a.metrics {
					metrics = append(metrics, strings.Fields(m)[1])
				}
			}
		}
		slices.Sort(want)
		slices.Sort(metrics)
		if len(versionAlarms[fn]) == 0 || !slices.Equal(got, want) {
			t.Errorf("%s: rollback alarms %v, want the alarms on its alias and its version's answers %v", fn, got, want)
		}
		// Organizations and users have no alarm on their alias: their
		// version's 5xx roll them back.
		wantMetrics := []string{"Duration", "Errors"}
		switch fn {
		case verifyID:
			wantMetrics = []string{"Errors"}
		case logicalID(lambdaapp.Organizations), logicalID(lambdaapp.Users):
			wantMetrics = nil
		}
		if !slices.Equal(metrics, wantMetrics) {
			t.Errorf("%s: its alias's alarms watch %v, want %v", fn, metrics, wantMetrics)
		}
	}
	// Other stacks attach the authorizer's alias: the export.
	out := path(map[string]any(tpl), "Outputs", "AuthorizerAliasArn")
	if refOf(path(out, "Value")) != authorizerID+".Alias" || path(out, "Export", "Name", "Fn::Sub") != "${AWS::StackName}-AuthorizerAliasArn" {
		t.Errorf("output AuthorizerAliasArn %v, want !Ref %s.Alias exported as ${AWS::StackName}-AuthorizerAliasArn", out, authorizerID)
	}
}

// TestTemplate_AlarmTopic: by default the stack creates the alarms' topic
// and subscribes AlarmEmail to it; a stack with neither a topic of its
// own nor an address is refused by a rule before anything is created.
func TestTemplate_AlarmTopic(t *testing.T) {
	tpl := loadTemplate(t)
	res := tpl["Resources"].(map[string]any)
	if path(res["AlarmTopic"], "Type") != "AWS::SNS::Topic" || path(res["AlarmTopic"], "Condition") != "CreateAlarmTopic" {
		t.Errorf("AlarmTopic: %v, want an AWS::SNS::Topic under CreateAlarmTopic", res["AlarmTopic"])
	}
	sub := tpl.resource(t, "AlarmEmailSubscription", "AWS::SNS::Subscription")
	if sub["Protocol"] != "email" || refOf(sub["Endpoint"]) != "AlarmEmail" || !notifiesTopic([]any{sub["TopicArn"]}) {
		t.Errorf("AlarmEmailSubscription: %v, want AlarmEmail by e-mail on the alarm topic", sub)
	}
	for _, c := range []struct {
		params            map[string]string
		topic, subscribes bool
	}{
		{map[string]string{}, true, false},
		{map[string]string{"AlarmEmail": "oncall@example.com"}, true, true},
		{map[string]string{"AlarmTopicArn": "arn:aws:sns:us-east-1:123456789012:pager"}, false, false},
	} {
		if got := tpl.condition(t, "CreateAlarmTopic", c.params); got != c.topic {
			t.Errorf("%v: CreateAlarmTopic %v, want %v", c.params, got, c.topic)
		}
		if got := tpl.condition(t, "SubscribeAlarmEmail", c.params); got != c.subscribes {
			t.Errorf("%v: SubscribeAlarmEmail %v, want %v", c.params, got, c.subscribes)
		}
	}
	ops := "OperatorPrincipalArns=arn:aws:iam::123456789012:role/deployer"
	for params, deploys := range map[string]bool{
		ops:                       false,
		ops + " AlarmEmail=a@b.c": true,
		ops + " AlarmTopicArn=arn:aws:sns:us-east-1:123456789012:pager": true,
		// With no operators nobody could create the secrets.
		"AlarmEmail=a@b.c": false,
	} {
		p := map[string]string{}
		for _, kv := range strings.Fields(params) {
			k, v, _ := strings.Cut(kv, "=")
			p[k] = v
		}
		ok := true
		for _, rule := range path(map[string]any(tpl), "Rules").(map[string]any) {
			if path(rule, "RuleCondition") != nil {
				t.Fatalf("rule %v has a RuleCondition this test does not evaluate", rule)
			}
			for _, a := range list(path(rule, "Assertions")) {
				ok = ok && tpl.ruleAssert(t, path(a, "Assert"), p)
			}
		}
		if ok != deploys {
			t.Errorf("parameters %q: the rules allow the deploy: %v, want %v", params, ok, deploys)
		}
	}
}

// ruleAssert evaluates a rule's assertion of the forms the template uses
// (!Or, !Not, !Equals of a !Ref and a string, !Contains of a list
// parameter and a string), failing on any other.
func (t template) ruleAssert(tb testing.TB, v any, params map[string]string) bool {
	tb.Helper()
	if args := list(path(v, "Fn::Or")); len(args) > 0 {
		for _, a := range args {
			if t.ruleAssert(tb, a, params) {
				return true
			}
		}
		return false
	}
	if args := list(path(v, "Fn::Not")); len(args) == 1 {
		return !t.ruleAssert(tb, args[0], params)
	}
	// !Contains of a CommaDelimitedList parameter and a string.
	if args := list(path(v, "Fn::Contains")); len(args) == 2 && refOf(args[0]) != "" {
		return slices.Contains(strings.Split(t.parameterValue(tb, refOf(args[0]), params), ","), fmt.Sprint(args[1]))
	}
	if args := list(path(v, "Fn::Equals")); len(args) == 2 {
		val := func(x any) string {
			if r := refOf(x); r != "" {
				return t.parameterValue(tb, r, params)
			}
			return fmt.Sprint(x)
		}
		return val(args[0]) == val(args[1])
	}
	tb.Fatalf("rule assertion %v is not understood by this evaluator", v)
	return false
}

// TestTemplate_SecretsKeys: every secret is encrypted under a customer
// managed key of the template, rotated yearly, whose key policy lets the
// account administer it but never use it (no kms:Decrypt, and no
// kms:CreateGrant, with which an administrator could grant itself
// Decrypt), lets the operators (OperatorPrincipalArns) generate data keys
// and decrypt, as Secrets Manager requires of whoever creates or changes a
// secret, and lets exactly the roles of the functions given one of its
// secrets decrypt; the operators and the roles through Secrets Manager in
// the stack's own region and partition only.
func TestTemplate_SecretsKeys(t *testing.T) {
	for _, v := range []struct {
		name   string
		params map[string]string
	}{{"EdDSA", nil}, {"RS256", map[string]string{"SigningAlgorithm": "RS256"}}} {
		t.Run(v.name, func(t *testing.T) {
			tpl := loadTemplate(t).under(map[string]bool{"SignsWithRSA": v.params != nil})
			res := tpl["Resources"].(map[string]any)
			readers := map[string][]string{} // key -> roles of functions given a secret under it
			for _, fn := range tpl.functions() {
				for _, val := range tpl.functionEnv(t, fn) {
					secret := refOf(val)
					if path(res[secret], "Type") != "AWS::SecretsManager::Secret" {
						continue
					}
					key := refOf(path(res[secret], "Properties", "KmsKeyId"))
					role := tpl.functionRole(t, fn)
					if !slices.Contains(readers[key], role) {
						readers[key] = append(readers[key], role)
					}
				}
			}
			for id, r := range res {
				if path(r, "Type") != "AWS::SecretsManager::Secret" {
					continue
				}
				key := refOf(path(r, "Properties", "KmsKeyId"))
				if path(res[key], "Type") != "AWS::KMS::Key" {
					t.Errorf("%s: KmsKeyId %v, want !Ref of a key of the template (not the AWS managed key)", id, path(r, "Properties", "KmsKeyId"))
				}
			}
			for key, roles := range readers {
				props := tpl.resource(t, key, "AWS::KMS::Key")
				if props["EnableKeyRotation"] != "true" {
					t.Errorf("%s: EnableKeyRotation %v, want true", key, props["EnableKeyRotation"])
				}
				checkKeyPolicy(t, key, props, roles, v.params != nil)
			}
		})
	}
}

// operatorsParam names the operators in the key policies and the secrets'
// resource policies.
const operatorsParam = "OperatorPrincipalArns"

// viaSecretsManager is the kms:ViaService of Secrets Manager in the stack's
// region, in any partition.
const viaSecretsManager = "map[Fn::Sub:secretsmanager.${AWS::Region}.${AWS::URLSuffix}]"

func checkKeyPolicy(t *testing.T, key string, props map[string]any, roles []string, rsa bool) {
	t.Helper()
	root := `map[Fn::Sub:arn:${AWS::Partition}:iam::${AWS::AccountId}:root]`
	var decrypters []string
	operators := false
	for _, st := range list(path(props, "KeyPolicy", "Statement")) {
		if path(st, "Effect") != "Allow" {
			continue
		}
		actions := strs(path(st, "Action"))
		principal := path(st, "Principal", "AWS")
		uses := slices.ContainsFunc(actions, func(a string) bool {
			a = strings.ToLower(a)
			return a == "kms:*" || strings.HasPrefix(a, "kms:decrypt") || strings.HasPrefix(a, "kms:reencrypt") || strings.HasPrefix(a, "kms:generatedatakey") || a == "kms:encrypt"
		})
		via := path(st, "Condition", "StringEquals", "kms:ViaService")
		if fmt.Sprint(principal) == root {
			for _, a := range actions {
				if globMatch(strings.ToLower(a), "kms:creategrant") {
					t.Errorf("%s statement %v: the account may %s, which includes kms:CreateGrant: an administrator could grant itself Decrypt", key, path(st, "Sid"), a)
				}
			}
			if uses {
				t.Errorf("%s statement %v: the account may %v: any principal an IAM policy allows could use the key", key, path(st, "Sid"), actions)
			}
			continue
		}
		if !uses {
			continue
		}
		if fmt.Sprint(via) != viaSecretsManager {
			t.Errorf("%s statement %v: %v with kms:ViaService %v, want %s (Secrets Manager only)", key, path(st, "Sid"), actions, via, viaSecretsManager)
		}
		if refOf(principal) == operatorsParam {
			operators = true
			if want := []string{"kms:Decrypt", "kms:GenerateDataKey"}; !slices.Equal(actions, want) {
				t.Errorf("%s statement %v: the operators may %v, want %v (what Secrets Manager requires of whoever creates or changes a secret)", key, path(st, "Sid"), actions, want)
			}
			continue
		}
		want := []string{"kms:Decrypt"}
		var ps []string
		for _, p := range list(principal) {
			att, _ := path(p, "Fn::GetAtt").(string)
			role, ok := strings.CutSuffix(att, ".Arn")
			if !ok {
				t.Errorf("%s statement %v: principal %v is not a role of the template", key, path(st, "Sid"), p)
			}
			ps = append(ps, role)
			if rsa && role == "AuthRole" && key == "AuthSecretsKey" {
				// The RS256 bootstrap puts a new value into the signing secret.
				want = []string{"kms:Decrypt", "kms:GenerateDataKey"}
			}
		}
		if !slices.Equal(actions, want) {
			t.Errorf("%s statement %v: %v may %v, want %v", key, path(st, "Sid"), ps, actions, want)
		}
		decrypters = append(decrypters, ps...)
	}
	if !operators {
		t.Errorf("%s: no statement lets %s use the key through Secrets Manager: nobody could create its secrets or put a new value", key, operatorsParam)
	}
	slices.Sort(decrypters)
	slices.Sort(roles)
	if !slices.Equal(decrypters, roles) {
		t.Errorf("%s: decrypted by %v, want exactly the roles given its secrets %v", key, decrypters, roles)
	}
}

// TestSamconfig_Environments: samconfig.toml has a dev and a prod
// environment, each with its own stack name and region; sam sync (which
// hot-swaps code and skips CloudFormation's change sets and CodeDeploy)
// is configured for dev alone, and the prod deploy shows its change set.
func TestSamconfig_Environments(t *testing.T) {
	cfg := readSamconfig(t, "../../samconfig.toml")
	stacks := map[string]bool{}
	for _, env := range []string{"dev", "prod"} {
		// sam deploy reads its own section, then global.
		at := func(k string) string {
			if v := cfg[env+".deploy.parameters"][k]; v != "" {
				return v
			}
			return cfg[env+".global.parameters"][k]
		}
		stack, region := at("stack_name"), at("region")
		if stack == "" || region == "" {
			t.Errorf("%s: stack_name %q, region %q; want both", env, stack, region)
		}
		if stacks[stack] {
			t.Errorf("%s shares the stack name %s", env, stack)
		}
		stacks[stack] = true
		if cfg[env+".deploy.parameters"] == nil {
			t.Errorf("%s has no deploy parameters", env)
		}
	}
	for section := range cfg {
		env, cmd, _ := strings.Cut(section, ".")
		if strings.HasPrefix(cmd, "sync") && env != "dev" {
			t.Errorf("[%s]: sam sync is configured outside dev", section)
		}
	}
	// sam sync takes its stack from the global section too: production's
	// stack is named only where a command that goes through a change set
	// reads it, so `sam sync --config-env prod` has no stack to hot-swap.
	for k := range cfg["prod.global.parameters"] {
		if k == "stack_name" || k == "region" {
			t.Errorf("[prod.global.parameters] sets %s: sam sync --config-env prod would find the production stack", k)
		}
	}
	if cfg["dev.sync.parameters"] == nil {
		t.Error("dev has no sync parameters")
	}
	if got := cfg["prod.deploy.parameters"]["confirm_changeset"]; got != "true" {
		t.Errorf("prod confirm_changeset %q, want true", got)
	}
	if got := cfg["dev.deploy.parameters"]["parameter_overrides"]; !strings.Contains(got, "DeploymentType=AllAtOnce") {
		t.Errorf("dev parameter_overrides %q, want DeploymentType=AllAtOnce", got)
	}
	if got := cfg["prod.deploy.parameters"]["parameter_overrides"]; strings.Contains(got, "AllAtOnce") {
		t.Errorf("prod parameter_overrides %q deploy all at once", got)
	}
}

// readSamconfig reads the [section] key = value lines of a samconfig.toml,
// strings unquoted: all this file uses of TOML.
func readSamconfig(t *testing.T, name string) map[string]map[string]string {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]map[string]string{}
	var section string
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = strings.Trim(line, "[]")
			out[section] = map[string]string{}
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				t.Fatalf("%s:%d: not a key = value line: %s", name, n, line)
			}
			k, v = strings.TrimSpace(k), strings.TrimSpace(v)
			if strings.HasPrefix(v, `"`) {
				v = strings.ReplaceAll(strings.Trim(v, `"`), `\"`, `"`)
			}
			if section != "" {
				out[section][k] = v
			}
		}
	}
	return out
}

// TestDocs_CountsFromTemplate: the numbers docs/cost.md states about the
// template are counted from it, not trusted: the routes (the detailed
// metrics line), the alarms (the fixed cost line), and the secrets every
// stack has ($0.40 each; the edge's origin secret is priced with the
// edge).
func TestDocs_CountsFromTemplate(t *testing.T) {
	tpl := loadTemplate(t)
	routes := len(tpl.functionEvents(t))
	alarms := len(tpl.alarms(t))
	secrets := 0
	for _, r := range tpl["Resources"].(map[string]any) {
		if path(r, "Type") == "AWS::SecretsManager::Secret" && path(r, "Condition") == nil {
			secrets++
		}
	}
	b, err := os.ReadFile("../../docs/cost.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, want := range []string{fmt.Sprintf("if all %d routes are", routes), fmt.Sprintf("| %d alarms watching", alarms),
		fmt.Sprintf("| %d secrets (", secrets), fmt.Sprintf(") | $%.2f |", 0.40*float64(secrets))} {
		if !strings.Contains(doc, want) {
			t.Errorf("docs/cost.md does not say %q (counted from template.yaml)", want)
		}
	}
}

// TestMakefile_ReproducibleBuild: LAMBDA_BUILD stamps neither the checkout's
// path nor its commit into a binary: an unchanged function builds to the
// same bytes at any commit, so a deploy publishes no new version of it and
// runs no canary for it (docs/deploying.md).
func TestMakefile_ReproducibleBuild(t *testing.T) {
	_, args := lambdaBuild(t)
	for _, flag := range []string{"-trimpath", "-buildvcs=false"} {
		if !slices.Contains(args, flag) {
			t.Errorf("Makefile LAMBDA_BUILD %v lacks %s", args, flag)
		}
	}
}

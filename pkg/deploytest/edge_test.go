package deploytest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"latchkey/pkg/canary"
	"latchkey/pkg/lambdaapp"
	"latchkey/pkg/lambdaapp/canaryapp"
	"latchkey/pkg/lambdaapp/lambdaenv"
	"latchkey/pkg/lambdaapp/replay"
)

// TestCanary_ThroughEdge (issue 34): with the edge on, the functions the
// canary checks refuse what does not carry the origin secret, so the hook,
// given it as they are (ORIGIN_SECRET), sends it, and its check of a good
// build passes; without it, the check fails at its first step.
func TestCanary_ThroughEdge(t *testing.T) {
	const secret = "pW7rT2yU9iO4aS1dF6gH3jK8lZ5xC0vB7nM2qE9wR4tY1uI6"
	ctx := context.Background()
	b := newBackend(t)
	build := func(fn lambdaapp.Function) canary.HTTPFunction {
		t.Helper()
		cfg := replay.Config(fn, "latchkey")
		cfg.OriginSecret = secret
		deps := lambdaapp.Deps{Store: b.store, Keys: b.keys, Secrets: replay.NewSecrets(), Logger: discard}
		if fn == lambdaapp.Verify {
			deps.Secrets = nil
		}
		app, err := lambdaapp.New(ctx, cfg, deps)
		if err != nil {
			t.Fatal(err)
		}
		return canary.HTTPFunction(app.Lambda())
	}
	targets := canary.Targets{
		Auth: build(lambdaapp.Auth), Verify: build(lambdaapp.Verify), Organizations: build(lambdaapp.Organizations), Users: build(lambdaapp.Users),
		Authorizer: canary.AuthorizerFunction(newAuthorizer(t, b, `{"*": {"audience": "https://orders.example.com"}}`, discard)),
	}
	var f *canary.Failure
	if err := canary.Check(ctx, targets, replay.ProbeSecret); !errors.As(err, &f) {
		t.Fatalf("without the origin secret: %v, want the check to fail", err)
	}
	edge := targets
	for _, fn := range []*canary.HTTPFunction{&edge.Auth, &edge.Verify, &edge.Organizations, &edge.Users} {
		*fn = canaryapp.ThroughEdge(*fn, secret)
	}
	if err := canary.Check(ctx, edge, replay.ProbeSecret); err != nil {
		t.Fatalf("through the edge: %v", err)
	}
	if canaryapp.EnvOriginSecret != lambdaenv.EnvOriginSecret || lambdaapp.EnvOriginSecret != lambdaenv.EnvOriginSecret {
		t.Error("the hook and the functions read the origin secret from different variables")
	}
}

// originSecretRef is what CloudFront sends and the functions are given:
// the edge's generated secret, resolved by CloudFormation.
const originSecretRef = "{{resolve:secretsmanager:${EdgeOriginSecret}:SecretString}}"

// edgeFunctions are the functions behind the edge: every one serving the
// API or the verify URL, and the canary hook and the probe, which call them.
var edgeFunctions = []string{"AuthFunction", "OrganizationsFunction", "UsersFunction", verifyID, "CanaryHookFunction", "ProbeFunction"}

// TestTemplate_Edge (issue 34): EdgeProtection, off by default, puts
// CloudFront and a WAF web ACL in front of the API and the verify URL;
// the web ACL's rate-based rules count per address and per Authorization
// header, with limits from parameters, and answer 429; CloudFront sends
// every request to the origins with the generated secret, which every
// function behind it is given (and none with the edge off); the stack is
// refused where it cannot make the web ACL.
func TestTemplate_Edge(t *testing.T) {
	tpl := loadTemplate(t)
	if p := tpl.parameter(t, "EdgeProtection"); p["Default"] != "false" || !slices.Equal(strs(p["AllowedValues"]), []string{"false", "true"}) {
		t.Errorf("EdgeProtection: default %v, allowed %v; want off by default", p["Default"], p["AllowedValues"])
	}
	for params, want := range map[string]bool{"": false, "EdgeProtection=true": true} {
		p := map[string]string{}
		if k, v, ok := strings.Cut(params, "="); ok {
			p[k] = v
		}
		if got := tpl.condition(t, "EdgeProtected", p); got != want {
			t.Errorf("%q: EdgeProtected %v, want %v", params, got, want)
		}
	}

	t.Run("Off", func(t *testing.T) {
		off := tpl.under(map[string]bool{"EdgeProtected": false, "CreateEdgeWebAcl": false, "EdgeServesVerifyUrl": false, "EdgeServesCustomDomain": false})
		for _, section := range []string{"Resources", "Outputs"} {
			for id, r := range off[section].(map[string]any) {
				if path(r, "Condition") == "EdgeProtected" {
					continue // an output under the condition (under drops resources only)
				}
				b, _ := json.Marshal(r)
				if strings.HasPrefix(id, "Edge") || strings.Contains(string(b), "Edge") && id != "IssuerConfig" {
					t.Errorf("%s %s is there with the edge off: %s", section, id, b)
				}
			}
		}
		for _, fn := range edgeFunctions {
			if v, ok := off.functionEnv(t, fn)[lambdaenv.EnvOriginSecret]; ok {
				t.Errorf("%s: %s is %v with the edge off", fn, lambdaenv.EnvOriginSecret, v)
			}
		}
		if got := path(off.resource(t, "IssuerConfig", "Custom::Issuer"), "Issuer", "Fn::If"); fmt.Sprint(list(got)[2]) != "map[Fn::Sub:https://${HttpApi}.execute-api.${AWS::Region}.${AWS::URLSuffix}]" {
			t.Errorf("the issuer without a custom domain, edge off: %v", got)
		}
	})

	for _, verifyURL := range []bool{false, true} {
		t.Run(fmt.Sprintf("OnVerifyURL%v", verifyURL), func(t *testing.T) {
			on := tpl.under(map[string]bool{"EdgeProtected": true, "CreateEdgeWebAcl": true, "ServeVerifyUrl": verifyURL, "EdgeServesVerifyUrl": verifyURL, "EdgeServesCustomDomain": false})
			for _, fn := range edgeFunctions {
				if fn == verifyID && !verifyURL {
					continue
				}
				if got := path(on.functionEnv(t, fn)[lambdaenv.EnvOriginSecret], "Fn::Sub"); got != originSecretRef {
					t.Errorf("%s: %s is %v, want %s", fn, lambdaenv.EnvOriginSecret, got, originSecretRef)
				}
			}
			if fn := "AuthorizerFunction"; on.functionEnv(t, fn)[lambdaenv.EnvOriginSecret] != nil {
				t.Errorf("%s, which no request of this stack's edge reaches, is given the origin secret", fn)
			}
			secret := on.resource(t, "EdgeOriginSecret", "AWS::SecretsManager::Secret")
			if n, _ := strconv.Atoi(fmt.Sprint(path(secret, "GenerateSecretString", "PasswordLength"))); n < lambdaapp.MinOriginSecretLength {
				t.Errorf("EdgeOriginSecret: %d characters, want at least %d (lambdaapp refuses a shorter one)", n, lambdaapp.MinOriginSecretLength)
			}

			dist := path(on.resource(t, "EdgeDistribution", "AWS::CloudFront::Distribution"), "DistributionConfig")
			if got := fmt.Sprint(path(dist, "WebACLId")); got != "map[Fn::GetAtt:EdgeWebAcl.Arn]" {
				t.Errorf("the distribution's web ACL is %s, want the stack's", got)
			}
			origins := map[string]any{}
			for _, o := range list(path(dist, "Origins")) {
				origins[fmt.Sprint(path(o, "Id"))] = o
				headers := list(path(o, "OriginCustomHeaders"))
				if len(headers) != 1 || path(headers[0], "HeaderName") != lambdaenv.OriginSecretHeader || path(headers[0], "HeaderValue", "Fn::Sub") != originSecretRef {
					t.Errorf("origin %v sends %v, want %s: %s", path(o, "Id"), headers, lambdaenv.OriginSecretHeader, originSecretRef)
				}
				if path(o, "CustomOriginConfig", "OriginProtocolPolicy") != "https-only" {
					t.Errorf("origin %v: %v, want https only", path(o, "Id"), path(o, "CustomOriginConfig"))
				}
			}
			if got := fmt.Sprint(path(origins["api"], "DomainName")); got != "map[Fn::Sub:${HttpApi}.execute-api.${AWS::Region}.${AWS::URLSuffix}]" {
				t.Errorf("origin api is %s, want the HTTP API", got)
			}
			behaviors := append([]any{path(dist, "DefaultCacheBehavior")}, list(path(dist, "CacheBehaviors"))...)
			for _, b := range behaviors {
				// CachingDisabled and AllViewerExceptHostHeader, AWS's
				// managed policies: nothing cached, Authorization passed.
				if path(b, "CachePolicyId") != "4135ea2d-6df8-44a3-9df3-4b5a84be39ad" || path(b, "OriginRequestPolicyId") != "b689b0a8-53d0-40ab-baf2-68738e2966ac" || path(b, "ViewerProtocolPolicy") != "https-only" {
					t.Errorf("cache behavior %v: want CachingDisabled, AllViewerExceptHostHeader, https only", b)
				}
			}
			if path(behaviors[0], "TargetOriginId") != "api" {
				t.Errorf("the default behavior goes to %v, want the API", path(behaviors[0], "TargetOriginId"))
			}
			if verifyURL {
				if len(behaviors) != 2 || path(behaviors[1], "PathPattern") != "/v1/auth/verify" || path(behaviors[1], "TargetOriginId") != "verify-url" {
					t.Errorf("behaviors %v, want /v1/auth/verify to the verify URL", behaviors[1:])
				}
				if got := fmt.Sprint(path(origins["verify-url"], "DomainName")); !strings.Contains(got, "VerifyUrlConfig.FunctionUrl") {
					t.Errorf("origin verify-url is %s, want the verify function's URL", got)
				}
			} else if len(behaviors) != 1 || len(origins) != 1 {
				t.Errorf("without the verify URL: %d behaviors, origins %v; want the API's alone", len(behaviors), origins)
			}

			acl := on.resource(t, "EdgeWebAcl", "AWS::WAFv2::WebACL")
			if acl["Scope"] != "CLOUDFRONT" || path(acl, "DefaultAction", "Allow") == nil {
				t.Errorf("EdgeWebAcl: scope %v, default %v; want CLOUDFRONT, allow", acl["Scope"], acl["DefaultAction"])
			}
			rates := map[string]string{} // aggregate key: limit parameter
			for _, r := range list(acl["Rules"]) {
				rb := path(r, "Statement", "RateBasedStatement")
				if rb == nil {
					continue
				}
				key := fmt.Sprint(path(rb, "AggregateKeyType"))
				if key == "CUSTOM_KEYS" {
					keys := list(path(rb, "CustomKeys"))
					if len(keys) != 1 || !strings.EqualFold(fmt.Sprint(path(keys[0], "Header", "Name")), "authorization") {
						t.Errorf("rule %v aggregates on %v, want the Authorization header alone", path(r, "Name"), keys)
					}
					key = "Authorization"
				}
				rates[key] = refOf(path(rb, "Limit"))
				if path(r, "Action", "Block", "CustomResponse", "ResponseCode") != "429" {
					t.Errorf("rule %v answers %v, want 429", path(r, "Name"), path(r, "Action"))
				}
				body := path(acl, "CustomResponseBodies", fmt.Sprint(path(r, "Action", "Block", "CustomResponse", "CustomResponseBodyKey")), "Content")
				var problem map[string]any
				if err := json.Unmarshal([]byte(fmt.Sprint(body)), &problem); err != nil || problem["code"] != "rate_limited" || problem["status"] != float64(429) {
					t.Errorf("rule %v's body %v (%v), want a problem with code rate_limited", path(r, "Name"), body, err)
				}
			}
			if fmt.Sprint(rates) != "map[Authorization:EdgeRateLimitPerAuthorization IP:EdgeRateLimitPerIp]" {
				t.Errorf("rate-based rules %v, want one per address and one per Authorization header, each limited by its parameter", rates)
			}
			if got := path(on["Outputs"], "EdgeUrl", "Value", "Fn::Sub"); got != "https://${EdgeDistribution.DomainName}" {
				t.Errorf("output EdgeUrl %v", got)
			}
		})
	}

	// Where the web ACL can be made (us-east-1), or is named.
	ops := map[string]string{"OperatorPrincipalArns": "arn:aws:iam::123456789012:role/deployer", "AlarmEmail": "a@b.c"}
	for params, deploys := range map[string]bool{
		"AWS::Region=eu-west-1":                     true,
		"AWS::Region=eu-west-1 EdgeProtection=true": false,
		"AWS::Region=us-east-1 EdgeProtection=true": true,
		"AWS::Region=eu-west-1 EdgeProtection=true EdgeWebAclArn=arn:aws:wafv2:us-east-1:123456789012:global/webacl/x/1":                                  true,
		"AWS::Region=us-east-1 EdgeProtection=true CustomDomainName=auth.example.com":                                                                     false,
		"AWS::Region=us-east-1 EdgeProtection=true CustomDomainName=auth.example.com EdgeCertificateArn=arn:aws:acm:us-east-1:123456789012:certificate/c": true,
	} {
		p := maps.Clone(ops)
		for _, kv := range strings.Fields(params) {
			k, v, _ := strings.Cut(kv, "=")
			p[k] = v
		}
		ok := true
		for _, rule := range path(map[string]any(tpl), "Rules").(map[string]any) {
			for _, a := range list(path(rule, "Assertions")) {
				ok = ok && tpl.ruleAssert(t, path(a, "Assert"), p)
			}
		}
		if ok != deploys {
			t.Errorf("%s: the rules allow the deploy: %v, want %v", params, ok, deploys)
		}
	}
}

// TestDocs_EdgeCost (issue 34): docs/cost.md's price of the edge per
// million requests is computed from the prices it states, and the totals
// of a verify behind it from the section's and the verifies' own.
func TestDocs_EdgeCost(t *testing.T) {
	b, err := os.ReadFile("../../docs/cost.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	const (
		cloudFrontPerM   = 0.0100 * 100 // per 10,000 requests
		wafPerM          = 0.60
		outPerGB         = 0.085
		toOriginPerGB    = 0.020
		bytesPerGB       = 1 << 30
		apiVerifyPerM    = 1.49 // docs/cost.md's verify through the API (TestDocs_CostArithmetic)
		urlVerifyPerM    = 0.47 // and through the function URL
		cloudFrontPrices = "| CloudFront (`EdgeProtection`), price class 100 | $0.0100 per 10,000 HTTPS requests; $0.085 per GB out to the internet (first 10 TB a month); $0.020 per GB to the origin |"
		wafPrices        = "| AWS WAF (`EdgeProtection`) | $5.00 per web ACL and $1.00 per rule (a managed rule group is one) a month; $0.60 per million requests |"
	)
	for _, want := range []string{cloudFrontPrices, wafPrices, fmt.Sprintf("**$%.2f**", apiVerifyPerM), fmt.Sprintf("**$%.2f a million**", urlVerifyPerM)} {
		if !strings.Contains(doc, want) {
			t.Fatalf("docs/cost.md no longer says %q, which this test computes with", want)
		}
	}
	_, section, ok := strings.Cut(doc, "\n## The edge\n")
	if !ok {
		t.Fatal("docs/cost.md has no section \"The edge\"")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	cell := func(label string) (money float64, bytes float64) {
		t.Helper()
		for _, line := range strings.Split(section, "\n") {
			if !strings.HasPrefix(line, "| "+label) {
				continue
			}
			cells := strings.Split(strings.Trim(line, "| "), " | ")
			if len(cells) != 2 {
				t.Fatalf("row %q: %d cells, want 2", label, len(cells))
			}
			if money, err = strconv.ParseFloat(strings.Trim(cells[1], "*$"), 64); err != nil {
				t.Fatalf("row %q: %v", label, err)
			}
			if _, after, ok := strings.Cut(cells[0], ": "); ok {
				bytes, _ = strconv.ParseFloat(strings.ReplaceAll(strings.Fields(after)[0], ",", ""), 64)
			}
			return money, bytes
		}
		t.Fatalf("the edge's section has no row %q", label)
		return 0, 0
	}
	_, out := cell("CloudFront out to the internet")
	_, in := cell("CloudFront to the origin")
	want := map[string]float64{
		"CloudFront requests":            cloudFrontPerM,
		"AWS WAF requests":               wafPerM,
		"CloudFront out to the internet": out * 1e6 / bytesPerGB * outPerGB,
		"CloudFront to the origin":       in * 1e6 / bytesPerGB * toOriginPerGB,
	}
	total := 0.0
	for label, w := range want {
		total += w
		if got, _ := cell(label); fmt.Sprintf("%.2f", got) != fmt.Sprintf("%.2f", w) {
			t.Errorf("docs/cost.md, the edge's %s: $%.2f, computed $%.2f", label, got, w)
		}
	}
	if out == 0 || in == 0 {
		t.Errorf("the transfer rows name no bytes: out %v, in %v", out, in)
	}
	if got, _ := cell("**Total**"); fmt.Sprintf("%.2f", got) != fmt.Sprintf("%.2f", total) {
		t.Errorf("docs/cost.md, the edge's total: $%.2f, computed $%.2f", got, total)
	}
	for _, v := range []struct {
		what string
		base float64
	}{{"the API", apiVerifyPerM}, {"the verify URL", urlVerifyPerM}} {
		if want := fmt.Sprintf("$%.2f + $%.2f = $%.2f", v.base, total, v.base+total); !strings.Contains(section, want) {
			t.Errorf("the edge's section does not say %q for a verify through %s", want, v.what)
		}
	}
	// The fixed part: the web ACL and one dollar per rule the template gives it.
	rules := len(list(loadTemplate(t).resource(t, "EdgeWebAcl", "AWS::WAFv2::WebACL")["Rules"]))
	if want := fmt.Sprintf("the web ACL $5.00 and its %d rules", rules); !strings.Contains(strings.Join(strings.Fields(section), " "), want) {
		t.Errorf("the edge's section does not say %q (rules counted from template.yaml)", want)
	}
}

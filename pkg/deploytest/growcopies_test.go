package deploytest_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"latchkey/pkg/lambdaapp/copygrowth"
)

// TestTemplate_GrowCopiesInvoke: the verify URL and the authorizer, whose
// roles may not write a key's verify copies, ask auth to grow a busy
// key's through AuthGrowAlias, the alias auth serves that request alone
// through (copygrowth.Alias): each has its ARN in AUTH_GROW_ALIAS_ARN, and
// its role may invoke that alias and nothing else of Lambda (not auth's
// live alias, which serves every event, no other function, no other
// action), and still writes no KEY# item (TestTemplate_LeastPrivilege).
func TestTemplate_GrowCopiesInvoke(t *testing.T) {
	tpl := loadTemplate(t)
	alias := tpl.resource(t, "AuthGrowAlias", "AWS::Lambda::Alias")
	if got := fmt.Sprint(refOf(alias["FunctionName"]), " ", alias["FunctionVersion"], " ", alias["Name"]); got != "AuthFunction $LATEST "+copygrowth.Alias {
		t.Errorf("AuthGrowAlias: %s, want AuthFunction $LATEST %s", got, copygrowth.Alias)
	}
	const ref = `{"Ref":"AuthGrowAlias"}`
	for fn, role := range map[string]string{"VerifyFunction": "VerifyRole", authorizerID: "AuthorizerRole"} {
		t.Run(fn, func(t *testing.T) {
			b, _ := json.Marshal(tpl.functionEnv(t, fn)[copygrowth.EnvAuthAliasARN])
			if string(b) != ref {
				t.Errorf("%s = %s, want %s", copygrowth.EnvAuthAliasARN, b, ref)
			}
			var lambdaActions []string
			for a, res := range roleActions(t, tpl, role) {
				if strings.HasPrefix(a, "lambda:") {
					lambdaActions = append(lambdaActions, fmt.Sprint(a, res))
				}
			}
			if want := fmt.Sprint("lambda:InvokeFunction", []string{ref}); len(lambdaActions) != 1 || lambdaActions[0] != want {
				t.Errorf("%s may %v of Lambda, want only %s", role, lambdaActions, want)
			}
		})
	}
}

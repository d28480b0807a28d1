package deploytest_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"latchkey/pkg/lambdaapp/copygrowth"
)

// authAliasARN is the ARN of auth's live alias as the template builds it
// where !Ref AuthFunctionAliaslive would close a cycle (the alias waits on
// the canary hook, whose policy names the verifying functions' versions).
const authAliasARN = `{"Fn::Sub":"arn:${AWS::Partition}:lambda:${AWS::Region}:${AWS::AccountId}:function:${AuthFunction}:live"}`

// TestTemplate_GrowCopiesInvoke: the verify URL and the authorizer, whose
// roles may not write a key's verify copies, ask auth to grow a busy
// key's: each has the alias's ARN in AUTH_ALIAS_ARN, and its role may
// invoke that alias and nothing else of Lambda (no other function, no
// version, no other action), and still write no KEY# item
// (TestTemplate_LeastPrivilege).
func TestTemplate_GrowCopiesInvoke(t *testing.T) {
	tpl := loadTemplate(t)
	for fn, role := range map[string]string{"VerifyFunction": "VerifyRole", authorizerID: "AuthorizerRole"} {
		t.Run(fn, func(t *testing.T) {
			b, _ := json.Marshal(tpl.functionEnv(t, fn)[copygrowth.EnvAuthAliasARN])
			if string(b) != authAliasARN {
				t.Errorf("%s = %s, want %s", copygrowth.EnvAuthAliasARN, b, authAliasARN)
			}
			var lambdaActions []string
			actions := roleActions(t, tpl, role)
			for a, res := range actions {
				if strings.HasPrefix(a, "lambda:") {
					lambdaActions = append(lambdaActions, fmt.Sprint(a, res))
				}
			}
			if want := fmt.Sprint("lambda:InvokeFunction", []string{authAliasARN}); len(lambdaActions) != 1 || lambdaActions[0] != want {
				t.Errorf("%s may %v of Lambda, want only %s", role, lambdaActions, want)
			}
		})
	}
}

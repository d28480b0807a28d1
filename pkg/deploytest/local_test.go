package deploytest_test

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"latchkey/pkg/dynamostore/dynamotest"
	"latchkey/pkg/lambdaapp"
	"latchkey/pkg/lambdaapp/replay"
)

// localEnvPath is the env-vars file of `sam local start-api`.
const localEnvPath = "../../local/env.json"

func readLocalEnv(tb testing.TB) map[string]map[string]string {
	tb.Helper()
	b, err := os.ReadFile(localEnvPath)
	if err != nil {
		tb.Fatal(err)
	}
	var env map[string]map[string]string
	if err := json.Unmarshal(b, &env); err != nil {
		tb.Fatalf("local/env.json: %v", err)
	}
	return env
}

// TestLocalEnv_Declared: local/env.json names each function of the template
// and, for each, exactly the variables the template declares for it. SAM
// sets only declared variables, so one it does not declare would be
// silently dropped, and one the file leaves out would keep its local value
// (a !Ref resolves to the resource's logical id, such as "Table").
func TestLocalEnv_Declared(t *testing.T) {
	env := readLocalEnv(t)
	tpl := loadTemplate(t)
	var want []string
	for _, fn := range lambdaapp.Functions() {
		want = append(want, logicalID(fn))
	}
	if got := slices.Sorted(maps.Keys(env)); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
		t.Fatalf("local/env.json names %v, want the functions %v", got, want)
	}
	for _, fn := range lambdaapp.Functions() {
		vars := env[logicalID(fn)]
		declared := slices.Sorted(maps.Keys(tpl.functionEnv(t, logicalID(fn))))
		if got := slices.Sorted(maps.Keys(vars)); !slices.Equal(got, declared) {
			t.Errorf("%s: local/env.json sets %v, the template declares %v", logicalID(fn), got, declared)
		}
		for k, v := range vars {
			if v == "" {
				t.Errorf("%s: %s is empty", logicalID(fn), k)
			}
		}
	}
}

// TestLocalEnv_Functions prepares DynamoDB Local and moto as `make
// sam-local` does (cmd/samlocal: table, secrets, bootstrap), then runs each
// built function under the fake Runtime API with exactly the variables
// local/env.json gives it, its endpoints pointing at those services, and
// the region and placeholder credentials SAM gives a container when no
// profile is set. The organizations function serves the admin key before
// auth has run at all (the bootstrap of `make sam-local` put it in place);
// auth issues a token that users accepts (the public key the bootstrap
// published is auth's) and that auth verifies.
func TestLocalEnv_Functions(t *testing.T) {
	dynamoURL, smURL := os.Getenv(dynamotest.EndpointEnv), os.Getenv(secretsEndpointEnv)
	if dynamoURL == "" || smURL == "" {
		t.Skip(dynamotest.EndpointEnv + " and " + secretsEndpointEnv + " are not both set; run through scripts/dynamodb-local.sh scripts/moto.sh (make test does)")
	}
	env := readLocalEnv(t)
	prepare := exec.Command("go", "run", "./cmd/samlocal", "-env", "local/env.json", "-dynamodb", dynamoURL, "-secretsmanager", smURL)
	prepare.Dir = "../.."
	if out, err := prepare.CombinedOutput(); err != nil {
		t.Fatalf("go run ./cmd/samlocal: %v\n%s", err, out)
	}
	sm := secretsmanager.New(secretsmanager.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(smURL),
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", ""),
	})
	admin, err := sm.GetSecretValue(context.Background(), &secretsmanager.GetSecretValueInput{
		SecretId: aws.String(env[logicalID(lambdaapp.Auth)][lambdaapp.EnvAdminKeySecret]),
	})
	if err != nil {
		t.Fatal(err)
	}
	adminKey := aws.ToString(admin.SecretString)

	start := func(fn lambdaapp.Function) *lambdaProcess {
		t.Helper()
		vars := []string{"AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=defaultkey", "AWS_SECRET_ACCESS_KEY=defaultsecret"}
		for k, v := range env[logicalID(fn)] {
			switch k {
			case lambdaapp.EnvDynamoDBEndpoint:
				v = dynamoURL
			case lambdaapp.EnvSecretsManagerEndpoint:
				v = smURL
			}
			vars = append(vars, k+"="+v)
		}
		return startLambda(t, buildFunction(t, fn), vars)
	}
	call := func(p *lambdaProcess, event, credential string, want int) events.APIGatewayV2HTTPResponse {
		t.Helper()
		ev, err := replay.LoadEvent(filepath.Join(eventsDir, event))
		if err != nil {
			t.Fatal(err)
		}
		ev.Headers["authorization"] = "Bearer " + credential
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		var res events.APIGatewayV2HTTPResponse
		if err := json.Unmarshal(p.invoke(b), &res); err != nil {
			t.Fatal(err)
		}
		if res.StatusCode != want {
			t.Fatalf("%s: got %d, want %d: %s\n%s", event, res.StatusCode, want, res.Body, p.logs.String())
		}
		return res
	}

	call(start(lambdaapp.Organizations), "organizations-list.json", adminKey, http.StatusOK)
	auth := start(lambdaapp.Auth)
	issued := call(auth, "auth-token.json", adminKey, http.StatusCreated)
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.Unmarshal([]byte(issued.Body), &tok); err != nil || tok.AccessToken == "" {
		t.Fatalf("token response: %v: %s", err, issued.Body)
	}
	call(start(lambdaapp.Users), "users-list.json", tok.AccessToken, http.StatusOK)
	call(auth, "auth-verify.json", tok.AccessToken, http.StatusOK)
}

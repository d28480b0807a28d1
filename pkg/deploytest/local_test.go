package deploytest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
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
		// A variable set only under a condition (AWS::NoValue
		// otherwise: ORIGIN_SECRET, with the edge on) is not one a local
		// run has.
		var declared []string
		for k, v := range tpl.functionEnv(t, logicalID(fn)) {
			if args := list(path(v, "Fn::If")); len(args) != 3 || !isNoValue(args[2]) {
				declared = append(declared, k)
			}
		}
		slices.Sort(declared)
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

// TestSamLocal_MotoOnLoopback: `make sam-local` starts moto, which holds
// the local admin key, on loopback unless MOTO_HOST asks otherwise, and
// scripts/moto.sh listens where it is told: the socket moto opens is
// 127.0.0.1's, read from /proc/net/tcp, not every interface's.
func TestSamLocal_MotoOnLoopback(t *testing.T) {
	// Without --moto-host the script would start the services and wait
	// for Ctrl-C.
	if b, err := os.ReadFile("../../scripts/sam-local.sh"); err != nil || !strings.Contains(string(b), `"--moto-host"`) {
		t.Fatalf("scripts/sam-local.sh cannot say where moto listens (--moto-host): %v", err)
	}
	host := func(env ...string) string {
		cmd := exec.Command("scripts/sam-local.sh", "--moto-host")
		cmd.Dir = "../.."
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "MOTO_HOST=") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		cmd.Env = append(cmd.Env, env...)
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}
	if got := host(); got != "127.0.0.1" {
		t.Errorf("make sam-local binds moto to %q by default, want 127.0.0.1", got)
	}
	if got := host("MOTO_HOST=0.0.0.0"); got != "0.0.0.0" {
		t.Errorf("with MOTO_HOST=0.0.0.0: %q", got)
	}

	if _, err := exec.LookPath("moto_server"); err != nil {
		t.Skip("moto_server is not on PATH (make test installs nothing; scripts/moto.sh says what to install)")
	}
	cmd := exec.Command("scripts/moto.sh", "sh", "-c", `echo "$LATCHKEY_TEST_SECRETSMANAGER_ENDPOINT"; cat /proc/net/tcp /proc/net/tcp6 2>/dev/null`)
	cmd.Dir = "../.."
	cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "MOTO_HOST=") || strings.HasPrefix(kv, "MOTO_PORT=")
	}), "MOTO_HOST="+host())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("scripts/moto.sh: %v", err)
	}
	lines := strings.Split(string(out), "\n")
	_, portText, _ := strings.Cut(strings.TrimPrefix(lines[0], "http://"), ":")
	port, err := strconv.Atoi(portText)
	if err != nil {
		t.Fatalf("endpoint %q", lines[0])
	}
	suffix := fmt.Sprintf(":%04X", port)
	var listening []string
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		// sl local_address rem_address st ...; st 0A is LISTEN.
		if len(f) > 3 && strings.HasSuffix(f[1], suffix) && f[3] == "0A" {
			listening = append(listening, f[1])
		}
	}
	if !slices.Equal(listening, []string{"0100007F" + suffix}) {
		t.Errorf("moto listens on %v, want 127.0.0.1 (0100007F%s) alone", listening, suffix)
	}
}

package deploytest_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"latchkey/pkg/dynamostore"
	"latchkey/pkg/dynamostore/dynamotest"
	"latchkey/pkg/lambdaapp"
	"latchkey/pkg/lambdaapp/replay"
)

const secretsEndpointEnv = "LATCHKEY_TEST_SECRETSMANAGER_ENDPOINT"

// buildFunction builds a function's main as the Makefile does, for the host
// architecture so that it can run here, and returns the binary's path.
// -trimpath is left out: it changes no behaviour, and without it the build
// reuses the packages `go test` has just compiled instead of compiling every
// dependency again.
func buildFunction(tb testing.TB, fn lambdaapp.Function) string {
	tb.Helper()
	out := filepath.Join(tb.TempDir(), "bootstrap")
	cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-ldflags=-s -w", "-o", out, "./functions/"+string(fn))
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("go build ./functions/%s: %v\n%s", fn, err, b)
	}
	return out
}

// TestBinary_InitFailure runs a built function without its configuration:
// it must exit 1 after one JSON log line naming what is missing, before any
// request, rather than panic later.
func TestBinary_InitFailure(t *testing.T) {
	bin := buildFunction(t, lambdaapp.Users)
	cmd := exec.Command(bin)
	cmd.Env = []string{"TABLE_NAME=latchkey"}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	exit, ok := err.(*exec.ExitError)
	if !ok || exit.ExitCode() != 1 {
		t.Fatalf("exit: got %v, want status 1", err)
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(lines) != 1 || stderr.Len() != 0 {
		t.Fatalf("want one log line on stdout and nothing on stderr; stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	}
	var l struct {
		Level, Msg, Function string
	}
	if err := json.Unmarshal([]byte(lines[0]), &l); err != nil {
		t.Fatalf("log line is not JSON: %s", lines[0])
	}
	if l.Level != "ERROR" || l.Function != "users" || !strings.Contains(l.Msg, "ISSUER") || !strings.Contains(l.Msg, "ADMIN_KEY_SECRET_ARN") {
		t.Fatalf("log line does not name the missing variables: %s", lines[0])
	}
}

// liveEnv is a DynamoDB Local table and moto secrets holding the fixture,
// and the environment a function gets from the template, pointing at them.
func liveEnv(tb testing.TB) []string {
	tb.Helper()
	dynamoURL, smURL := os.Getenv(dynamotest.EndpointEnv), os.Getenv(secretsEndpointEnv)
	if dynamoURL == "" || smURL == "" {
		tb.Skip(dynamotest.EndpointEnv + " and " + secretsEndpointEnv + " are not both set; run through scripts/dynamodb-local.sh scripts/moto.sh (make test does)")
	}
	ctx := context.Background()
	creds := credentials.NewStaticCredentialsProvider("local", "local", "")
	db := dynamotest.NewClient(tb)
	sm := secretsmanager.New(secretsmanager.Options{Region: "us-east-1", BaseEndpoint: aws.String(smURL), Credentials: creds})
	name := dynamotest.NewTable(tb, db)
	store := dynamostore.New(db, name)
	if err := replay.Seed(ctx, store); err != nil {
		tb.Fatal(err)
	}
	// As the auth function's init would, so that each function can be run
	// alone and in any order.
	if err := replay.PublishKeys(ctx, store); err != nil {
		tb.Fatal(err)
	}
	arn := func(id, value string) string {
		out, err := sm.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String(name + "-" + id), SecretString: aws.String(value)})
		if err != nil {
			tb.Fatal(err)
		}
		return aws.ToString(out.ARN)
	}
	return []string{
		"AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local",
		"AWS_ENDPOINT_URL_DYNAMODB=" + dynamoURL, "AWS_ENDPOINT_URL_SECRETS_MANAGER=" + smURL,
		lambdaapp.EnvTableName + "=" + name, lambdaapp.EnvIssuer + "=" + replay.Issuer,
		lambdaapp.EnvSigningKeySecret + "=" + arn("signing", replay.SigningSecret),
		lambdaapp.EnvAdminKeySecret + "=" + arn("admin", replay.AdminSecret),
		lambdaapp.EnvCursorKeySecret + "=" + arn("cursor", replay.CursorSecret),
	}
}

// runtimeAPI is a fake Lambda Runtime API that hands out one event and
// receives its response.
type runtimeAPI struct {
	event []byte
	mu    sync.Mutex
	sent  bool
	done  chan result
}

type result struct {
	body []byte
	err  string
}

func (rt *runtimeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/2018-06-01/runtime/invocation/next":
		rt.mu.Lock()
		first := !rt.sent
		rt.sent = true
		rt.mu.Unlock()
		if !first {
			<-r.Context().Done() // the process is killed after its one event
			return
		}
		w.Header().Set("Lambda-Runtime-Aws-Request-Id", "8476a536-e9f4-11e8-9739-2dfe598c3fcd")
		w.Header().Set("Lambda-Runtime-Deadline-Ms", strconv.FormatInt(time.Now().Add(10*time.Second).UnixMilli(), 10))
		w.Header().Set("Lambda-Runtime-Invoked-Function-Arn", "arn:aws:lambda:us-east-1:123456789012:function:latchkey")
		w.Header().Set("Lambda-Runtime-Trace-Id", "Root=1-5bef4de7-ad49b0e87f6ef6c87fc2e700;Parent=9a9197af755a6419;Sampled=1")
		w.Write(rt.event)
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/response"):
		b, _ := io.ReadAll(r.Body)
		w.WriteHeader(http.StatusAccepted)
		rt.done <- result{body: b}
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/error"):
		b, _ := io.ReadAll(r.Body)
		w.WriteHeader(http.StatusAccepted)
		rt.done <- result{err: r.URL.Path + ": " + string(b)}
	default:
		http.NotFound(w, r)
	}
}

// coldStart starts bin as Lambda would, gives it the event through the fake
// Runtime API and returns the time from process start to the response, the
// response, and the process's peak resident memory in KiB.
func coldStart(tb testing.TB, bin string, env []string, event []byte) (time.Duration, events.APIGatewayV2HTTPResponse, int64) {
	tb.Helper()
	rt := &runtimeAPI{event: event, done: make(chan result, 1)}
	srv := httptest.NewServer(rt)
	defer srv.Close()
	cmd := exec.Command(bin)
	cmd.Env = append(env, "AWS_LAMBDA_RUNTIME_API="+strings.TrimPrefix(srv.URL, "http://"))
	logs, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	var logBuf bytes.Buffer
	var logDone sync.WaitGroup
	logDone.Add(1)
	go func() { defer logDone.Done(); io.Copy(&logBuf, bufio.NewReader(logs)) }()
	start := time.Now()
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { logDone.Wait(); exited <- cmd.Wait() }()
	var res result
	select {
	case res = <-rt.done:
	case err := <-exited:
		tb.Fatalf("the function exited before responding: %v\n%s", err, logBuf.String())
	case <-time.After(15 * time.Second):
		cmd.Process.Kill()
		tb.Fatalf("no response within 15 s\n%s", logBuf.String())
	}
	elapsed := time.Since(start)
	cmd.Process.Kill()
	<-exited
	var maxRSS int64
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		maxRSS = ru.Maxrss // KiB on Linux
	}
	if res.err != "" {
		tb.Fatalf("the function reported an error: %s\n%s", res.err, logBuf.String())
	}
	var out events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(res.body, &out); err != nil {
		tb.Fatalf("response: %v: %s", err, res.body)
	}
	return elapsed, out, maxRSS
}

// coldStartEvents is the event each function answers in the binary tests.
var coldStartEvents = map[lambdaapp.Function]string{
	lambdaapp.Auth:          "auth-verify.json",
	lambdaapp.Organizations: "organizations-get.json",
	lambdaapp.Users:         "users-get.json",
}

// TestBinary_Lambda runs each built function as Lambda does, configured
// only by the environment the template sets, against DynamoDB Local and
// moto: main, lambdaapp.FromEnv, the Runtime API client and the adapter,
// end to end.
func TestBinary_Lambda(t *testing.T) {
	env := liveEnv(t)
	for _, fn := range lambdaapp.Functions() {
		t.Run(string(fn), func(t *testing.T) {
			event, err := os.ReadFile(filepath.Join(eventsDir, coldStartEvents[fn]))
			if err != nil {
				t.Fatal(err)
			}
			elapsed, res, rss := coldStart(t, buildFunction(t, fn), env, event)
			if res.StatusCode != http.StatusOK {
				t.Fatalf("status: got %d, want 200: %s", res.StatusCode, res.Body)
			}
			t.Logf("%s: process start to first response %v, peak RSS %d KiB", fn, elapsed.Round(time.Millisecond), rss)
		})
	}
}

// BenchmarkColdStart measures, for each function, the time from process
// start to the first response (init with its Secrets Manager and DynamoDB
// calls, then one event), each iteration a new process.
func BenchmarkColdStart(b *testing.B) {
	env := liveEnv(b)
	for _, fn := range lambdaapp.Functions() {
		b.Run(string(fn), func(b *testing.B) {
			event, err := os.ReadFile(filepath.Join(eventsDir, coldStartEvents[fn]))
			if err != nil {
				b.Fatal(err)
			}
			bin := buildFunction(b, fn)
			var total time.Duration
			b.ResetTimer()
			for b.Loop() {
				elapsed, res, _ := coldStart(b, bin, env, event)
				if res.StatusCode != http.StatusOK {
					b.Fatalf("status %d: %s", res.StatusCode, res.Body)
				}
				total += elapsed
			}
			b.ReportMetric(float64(total.Microseconds())/float64(b.N)/1000, "ms/cold-start")
			if fi, err := os.Stat(bin); err == nil {
				b.ReportMetric(float64(fi.Size())/(1<<20), "MiB-binary")
			}
		})
	}
}

// maxBinaryBytes is the size target for each function's binary,
// "under 10 MB", in decimal megabytes: 10,000,000 bytes (9.54 MiB).
const maxBinaryBytes = 10_000_000

// lambdaBuild returns the environment and arguments of the Makefile's
// LAMBDA_BUILD, so that the size test builds exactly what `sam build` and
// `make build-lambdas` ship, and follows the Makefile if its flags change.
func lambdaBuild(tb testing.TB) (env, args []string) {
	tb.Helper()
	b, err := os.ReadFile("../../Makefile")
	if err != nil {
		tb.Fatal(err)
	}
	var line string
	for l := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(l, "LAMBDA_BUILD :="); ok {
			line = strings.TrimSpace(v)
		}
	}
	if line == "" {
		tb.Fatal("Makefile: no LAMBDA_BUILD := line")
	}
	// Words split on spaces outside single quotes, the only quoting it uses.
	var words []string
	var word strings.Builder
	quoted, inWord := false, false
	for _, r := range line {
		switch {
		case r == '\'':
			quoted, inWord = !quoted, true
		case r == ' ' && !quoted:
			if inWord {
				words = append(words, word.String())
				word.Reset()
			}
			inWord = false
		default:
			word.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		words = append(words, word.String())
	}
	for len(words) > 0 && strings.Contains(words[0], "=") {
		env, words = append(env, words[0]), words[1:]
	}
	if len(words) < 2 || words[0] != "$(GO)" || words[1] != "build" || quoted {
		tb.Fatalf("Makefile: LAMBDA_BUILD is not [VAR=value ...] $(GO) build ...: %s", line)
	}
	return env, words[1:]
}

// TestBinary_Size builds each function as the Makefile's LAMBDA_BUILD does
// (linux/arm64, lambda.norpc, -trimpath, -s -w) and fails if a binary is
// not under the 10 MB target.
func TestBinary_Size(t *testing.T) {
	env, args := lambdaBuild(t)
	dir := t.TempDir()
	for _, fn := range lambdaapp.Functions() {
		out := filepath.Join(dir, string(fn), "bootstrap")
		cmd := exec.Command("go", append(args, "-o", out, "./functions/"+string(fn))...)
		cmd.Dir = "../.."
		cmd.Env = append(os.Environ(), env...)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s %s: %v\n%s", strings.Join(env, " "), strings.Join(cmd.Args, " "), err, b)
		}
		fi, err := os.Stat(out)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%-13s %d bytes (%.2f MiB)", fn, fi.Size(), float64(fi.Size())/(1<<20))
		if fi.Size() >= maxBinaryBytes {
			t.Errorf("%s: %d bytes, want under %d (10 MB)", fn, fi.Size(), maxBinaryBytes)
		}
	}
}

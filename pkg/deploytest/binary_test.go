package deploytest_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/cfn"
	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"latchkey/pkg/dynamostore"
	"latchkey/pkg/dynamostore/dynamotest"
	"latchkey/pkg/httpapi/httpapitest"
	"latchkey/pkg/lambdaapp"
	"latchkey/pkg/lambdaapp/authorizerapp"
	"latchkey/pkg/lambdaapp/publisherapp"
	"latchkey/pkg/lambdaapp/replay"
	"latchkey/pkg/tablestore"
	"latchkey/pkg/version"
)

const secretsEndpointEnv = "LATCHKEY_TEST_SECRETSMANAGER_ENDPOINT"

// buildFunction builds a function's main as the Makefile does, for the host
// architecture so that it can run here, and returns the binary's path.
// -trimpath is left out: it changes no behaviour, and without it the build
// reuses the packages `go test` has just compiled instead of compiling every
// dependency again.
//
// Each function is built once for the package's tests, which run five
// binaries twelve times: a build whose packages are all
// compiled still links, seconds of CPU each. The binaries are only run,
// never changed.
func buildFunction(tb testing.TB, fn lambdaapp.Function) string {
	tb.Helper()
	built.mu.Lock()
	defer built.mu.Unlock()
	if bin, ok := built.bins[fn]; ok {
		return bin
	}
	if built.dir == "" {
		dir, err := os.MkdirTemp("", "deploytest-functions-")
		if err != nil {
			tb.Fatal(err)
		}
		built.dir, built.bins = dir, map[lambdaapp.Function]string{}
	}
	out := filepath.Join(built.dir, string(fn), "bootstrap")
	cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-ldflags=-s -w", "-o", out, "./functions/"+string(fn))
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("go build ./functions/%s: %v\n%s", fn, err, b)
	}
	built.bins[fn] = out
	return out
}

// built holds buildFunction's binaries, in a directory TestMain removes.
var built struct {
	mu   sync.Mutex
	dir  string
	bins map[lambdaapp.Function]string
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		_ = os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// TestBinary_InitFailure runs a built function without its configuration:
// it must exit 1 after its start line (with the release) and one JSON log
// line naming what is missing, before any request, rather than panic later.
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
	if len(lines) != 2 || stderr.Len() != 0 {
		t.Fatalf("want the start line and one more on stdout, and nothing on stderr; stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	}
	var start struct{ Msg, Function, Release string }
	if err := json.Unmarshal([]byte(lines[0]), &start); err != nil || start.Msg != "start" || start.Function != "users" || start.Release != version.Version {
		t.Fatalf("start line: got %s, want start of users at %s", lines[0], version.Version)
	}
	var l struct {
		Level, Msg, Function string
	}
	if err := json.Unmarshal([]byte(lines[1]), &l); err != nil {
		t.Fatalf("log line is not JSON: %s", lines[1])
	}
	if l.Level != "ERROR" || l.Function != "users" || !strings.Contains(l.Msg, "CURSOR_KEY_SECRET_ARN") {
		t.Fatalf("log line does not name the missing variables: %s", lines[0])
	}
}

// live is a DynamoDB Local table and moto secrets, and the environment
// the template gives each function, pointing at them.
type live struct {
	sm    *secretsmanager.Client
	store *tablestore.Store
	db    *dynamodb.Client
	table string
	// arns of the admin, signing and cursor secrets, by environment variable.
	arns map[string]string
	base []string // what every function gets
}

// newLive creates the table and the fixture's secrets. With seed, the table
// holds the replay fixture, its published public key and its recorded
// issuer, so that each function can be run alone and in any order;
// without, it is empty, as after a first deploy.
func newLive(tb testing.TB, seed bool) *live {
	tb.Helper()
	dynamoURL, smURL := os.Getenv(dynamotest.EndpointEnv), os.Getenv(secretsEndpointEnv)
	if dynamoURL == "" || smURL == "" {
		tb.Skip(dynamotest.EndpointEnv + " and " + secretsEndpointEnv + " are not both set; run through scripts/dynamodb-local.sh scripts/moto.sh (make test does)")
	}
	return newLiveAt(tb, dynamoURL, dynamotest.NewClient(tb), seed)
}

// newLiveAt is newLive on the DynamoDB Local at dynamoURL, which db talks to.
func newLiveAt(tb testing.TB, dynamoURL string, db *dynamodb.Client, seed bool) *live {
	tb.Helper()
	smURL := os.Getenv(secretsEndpointEnv)
	if smURL == "" {
		tb.Skip(secretsEndpointEnv + " is not set; run through scripts/moto.sh (make test does)")
	}
	ctx := context.Background()
	l := newLiveTable(tb, dynamoURL, db, seed)
	creds := credentials.NewStaticCredentialsProvider("local", "local", "")
	l.sm = secretsmanager.New(secretsmanager.Options{Region: "us-east-1", BaseEndpoint: aws.String(smURL), Credentials: creds})
	arn := func(id, value string) string {
		out, err := l.sm.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String(l.table + "-" + id), SecretString: aws.String(value)})
		if err != nil {
			tb.Fatal(err)
		}
		return aws.ToString(out.ARN)
	}
	l.arns = map[string]string{
		lambdaapp.EnvSigningKeySecret: arn("signing", replay.SigningSecret),
		lambdaapp.EnvAdminKeySecret:   arn("admin", replay.AdminSecret),
		lambdaapp.EnvCursorKeySecret:  arn("cursor", replay.CursorSecret),
	}
	l.base = append(l.base, "AWS_ENDPOINT_URL_SECRETS_MANAGER="+smURL,
		lambdaapp.EnvCursorKeySecret+"="+l.arns[lambdaapp.EnvCursorKeySecret])
	return l
}

// newLiveTable is newLiveAt without Secrets Manager: the table alone, for
// a function that reads no secret (verify); l.arns is empty.
func newLiveTable(tb testing.TB, dynamoURL string, db *dynamodb.Client, seed bool) *live {
	tb.Helper()
	ctx := context.Background()
	l := &live{}
	name := dynamotest.NewTable(tb, db)
	l.db, l.table = db, name
	l.store = dynamostore.New(db, name, dynamostore.WithTimeout(dynamotest.Timeout))
	if seed {
		if err := replay.Seed(ctx, l.store); err != nil {
			tb.Fatal(err)
		}
		// As the auth function's init, and the IssuerConfig custom
		// resource, would.
		if err := replay.PublishKeys(ctx, l.store); err != nil {
			tb.Fatal(err)
		}
		if err := l.store.PutIssuer(ctx, replay.Issuer); err != nil {
			tb.Fatal(err)
		}
	}
	l.base = []string{
		"AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local",
		"AWS_ENDPOINT_URL_DYNAMODB=" + dynamoURL,
		// No ISSUER, as in the template: the functions read the recorded one.
		lambdaapp.EnvTableName + "=" + name,
		// The longest deadline allowed: a loaded test machine must slow
		// these tests down, not fail them (the stall tests set their own).
		lambdaapp.EnvStoreTimeout + "=" + dynamostore.MaxTimeout.String(),
	}
	return l
}

// env is fn's environment as the template sets it: only auth is given the
// signing and admin key secrets, and verify none.
func (l *live) env(fn lambdaapp.Function) []string {
	env := slices.Clone(l.base)
	if !fn.ListsItems() { // verify: no secret at all
		env = slices.DeleteFunc(env, func(v string) bool { return strings.HasPrefix(v, lambdaapp.EnvCursorKeySecret+"=") })
	}
	if fn.WritesCredentials() {
		env = append(env, lambdaapp.EnvAdminKeySecret+"="+l.arns[lambdaapp.EnvAdminKeySecret])
	}
	if fn.SignsTokens() {
		env = append(env, lambdaapp.EnvSigningKeySecret+"="+l.arns[lambdaapp.EnvSigningKeySecret])
	}
	return env
}

// rotate puts value as the new current version of the secret that the
// environment variable names, as `aws secretsmanager put-secret-value` does.
func (l *live) rotate(tb testing.TB, variable, value string) {
	tb.Helper()
	_, err := l.sm.PutSecretValue(context.Background(), &secretsmanager.PutSecretValueInput{
		SecretId: aws.String(l.arns[variable]), SecretString: aws.String(value),
	})
	if err != nil {
		tb.Fatal(err)
	}
}

// runtimeAPI is a fake Lambda Runtime API: it hands the process each event
// sent on next, one per request for the next invocation, and sends back
// each response or error on done.
type runtimeAPI struct {
	next chan []byte
	done chan result
	n    atomic.Int64
}

type result struct {
	body []byte
	err  string
}

func (rt *runtimeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/2018-06-01/runtime/invocation/next":
		var event []byte
		select {
		case event = <-rt.next:
		case <-r.Context().Done(): // the process is killed while it waits
			return
		}
		w.Header().Set("Lambda-Runtime-Aws-Request-Id", fmt.Sprintf("8476a536-e9f4-11e8-9739-%012d", rt.n.Add(1)))
		w.Header().Set("Lambda-Runtime-Deadline-Ms", strconv.FormatInt(time.Now().Add(10*time.Second).UnixMilli(), 10))
		w.Header().Set("Lambda-Runtime-Invoked-Function-Arn", "arn:aws:lambda:us-east-1:123456789012:function:latchkey")
		w.Header().Set("Lambda-Runtime-Trace-Id", "Root=1-5bef4de7-ad49b0e87f6ef6c87fc2e700;Parent=9a9197af755a6419;Sampled=1")
		w.Write(event)
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

// lambdaProcess is a built function running as Lambda runs it, behind a
// fake Runtime API, one invocation at a time.
type lambdaProcess struct {
	tb      testing.TB
	rt      *runtimeAPI
	cmd     *exec.Cmd
	logs    *httpapitest.SyncBuffer
	start   time.Time
	exited  chan struct{} // closed when the process has exited, with exitErr set
	exitErr error
	stop    func() int64 // kills the process; its peak RSS in KiB
}

// startLambda starts bin with env and the address of a fake Runtime API;
// the process is killed at the end of the test if not before.
func startLambda(tb testing.TB, bin string, env []string) *lambdaProcess {
	tb.Helper()
	p := &lambdaProcess{tb: tb, rt: &runtimeAPI{next: make(chan []byte), done: make(chan result, 1)}, logs: &httpapitest.SyncBuffer{}, exited: make(chan struct{})}
	srv := httptest.NewServer(p.rt)
	p.cmd = exec.Command(bin)
	p.cmd.Env = append(slices.Clone(env), "AWS_LAMBDA_RUNTIME_API="+strings.TrimPrefix(srv.URL, "http://"))
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	var logDone sync.WaitGroup
	logDone.Add(1)
	go func() { defer logDone.Done(); io.Copy(p.logs, bufio.NewReader(out)) }()
	p.start = time.Now()
	if err := p.cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	go func() { logDone.Wait(); p.exitErr = p.cmd.Wait(); close(p.exited) }()
	p.stop = sync.OnceValue(func() int64 {
		p.cmd.Process.Kill()
		<-p.exited
		srv.Close()
		if ru, ok := p.cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			return ru.Maxrss // KiB on Linux
		}
		return 0
	})
	tb.Cleanup(func() { p.stop() })
	return p
}

// invoke hands the process one event and returns what the function
// answered, failing the test if it reported an error or exited.
func (p *lambdaProcess) invoke(event []byte) []byte {
	p.tb.Helper()
	// A bound for a hang, not a measurement: generous, for a loaded machine.
	timeout := time.After(60 * time.Second)
	select {
	case p.rt.next <- event:
	case <-p.exited:
		p.tb.Fatalf("the function exited before taking the event: %v\n%s", p.exitErr, p.logs.String())
	case <-timeout:
		p.tb.Fatalf("the function asked for no event within 60 s\n%s", p.logs.String())
	}
	var res result
	select {
	case res = <-p.rt.done:
	case <-p.exited:
		p.tb.Fatalf("the function exited before responding: %v\n%s", p.exitErr, p.logs.String())
	case <-timeout:
		p.tb.Fatalf("no response within 60 s\n%s", p.logs.String())
	}
	if res.err != "" {
		p.tb.Fatalf("the function reported an error: %s\n%s", res.err, p.logs.String())
	}
	return res.body
}

// coldStart starts bin as Lambda would, gives it the event through the fake
// Runtime API and returns the time from process start to the response, the
// response, and the process's peak resident memory in KiB.
func coldStart(tb testing.TB, bin string, env []string, event []byte) (time.Duration, events.APIGatewayV2HTTPResponse, int64) {
	tb.Helper()
	p := startLambda(tb, bin, env)
	body := p.invoke(event)
	elapsed := time.Since(p.start)
	maxRSS := p.stop()
	var out events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(body, &out); err != nil {
		tb.Fatalf("response: %v: %s", err, body)
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
// moto: main, its wiring, the Runtime API client and the adapter,
// end to end.
func TestBinary_Lambda(t *testing.T) {
	l := newLive(t, true)
	for _, fn := range lambdaapp.Functions() {
		t.Run(string(fn), func(t *testing.T) {
			event, err := os.ReadFile(filepath.Join(eventsDir, coldStartEvents[fn]))
			if err != nil {
				t.Fatal(err)
			}
			elapsed, res, rss := coldStart(t, buildFunction(t, fn), l.env(fn), event)
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
	l := newLive(b, true)
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
				elapsed, res, _ := coldStart(b, bin, l.env(fn), event)
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
	// The authorizer: init (the published keys) and one decision on a
	// valid token (the revocation entry and the key).
	b.Run(authorizerapp.Name, func(b *testing.B) {
		routes, _, err := replay.AuthorizerManifest(authorizerEventsDir)
		if err != nil {
			b.Fatal(err)
		}
		event, err := os.ReadFile(filepath.Join(authorizerEventsDir, "valid.json"))
		if err != nil {
			b.Fatal(err)
		}
		bin := buildAuthorizer(b)
		var total time.Duration
		b.ResetTimer()
		for b.Loop() {
			elapsed, res, _ := authorizerColdStart(b, bin, l.authorizerEnv(routes), event)
			if !res.IsAuthorized {
				b.Fatal("the valid token was refused")
			}
			total += elapsed
		}
		b.ReportMetric(float64(total.Microseconds())/float64(b.N)/1000, "ms/cold-start")
		if fi, err := os.Stat(bin); err == nil {
			b.ReportMetric(float64(fi.Size())/(1<<20), "MiB-binary")
		}
	})
}

// buildAuthorizer builds functions/authorizer as buildFunction builds the
// others.
func buildAuthorizer(tb testing.TB) string {
	tb.Helper()
	return buildFunction(tb, authorizerapp.Name)
}

// authorizerEnv is the authorizer's environment as the template sets it,
// with routes as the AuthorizerRoutes parameter.
func (l *live) authorizerEnv(routes string) []string {
	var env []string
	for _, kv := range l.base {
		if !strings.HasPrefix(kv, lambdaapp.EnvCursorKeySecret+"=") { // the template gives it no secret
			env = append(env, kv)
		}
	}
	return append(env, authorizerapp.EnvRoutes+"="+routes)
}

// authorizerColdStart is coldStart for the authorizer, whose answer is a
// simple response.
func authorizerColdStart(tb testing.TB, bin string, env []string, event []byte) (time.Duration, events.APIGatewayV2CustomAuthorizerSimpleResponse, int64) {
	tb.Helper()
	p := startLambda(tb, bin, env)
	body := p.invoke(event)
	elapsed := time.Since(p.start)
	maxRSS := p.stop()
	var out events.APIGatewayV2CustomAuthorizerSimpleResponse
	if err := json.Unmarshal(body, &out); err != nil {
		tb.Fatalf("response: %v: %s", err, body)
	}
	return elapsed, out, maxRSS
}

// TestBinary_Authorizer runs the built authorizer as Lambda does, with
// only the environment the template gives it, against DynamoDB Local:
// every request of events/authorizer/ through one warm process, then a
// cold start measured as for the other functions.
func TestBinary_Authorizer(t *testing.T) {
	l := newLive(t, true)
	routes, entries, err := replay.AuthorizerManifest(authorizerEventsDir)
	if err != nil {
		t.Fatal(err)
	}
	bin := buildAuthorizer(t)
	p := startLambda(t, bin, l.authorizerEnv(routes))
	for _, e := range entries {
		event, err := os.ReadFile(filepath.Join(authorizerEventsDir, e.Event))
		if err != nil {
			t.Fatal(err)
		}
		var res events.APIGatewayV2CustomAuthorizerSimpleResponse
		if err := json.Unmarshal(p.invoke(event), &res); err != nil {
			t.Fatal(err)
		}
		if res.IsAuthorized != e.Authorized {
			t.Errorf("%s: isAuthorized %v, want %v (%s)\n%s", e.Event, res.IsAuthorized, e.Authorized, e.Description, p.logs.String())
		}
	}
	p.stop()
	event, err := os.ReadFile(filepath.Join(authorizerEventsDir, "valid.json"))
	if err != nil {
		t.Fatal(err)
	}
	elapsed, res, rss := authorizerColdStart(t, bin, l.authorizerEnv(routes), event)
	if !res.IsAuthorized || res.Context["key_id"] != replay.KeyID {
		t.Fatalf("cold start: got %+v", res)
	}
	t.Logf("authorizer: process start to first decision %v, peak RSS %d KiB", elapsed.Round(time.Millisecond), rss)
}

// maxBinaryBytes is the size target for each function's binary,
// "under 10 MB", in decimal megabytes: 10,000,000 bytes (9.54 MiB).
const maxBinaryBytes = 10_000_000

// maxConsoleBinaryBytes bounds the auth function, which serves the console
// (issue 24) and so links html/template: text/template calls
// reflect.Value.MethodByName with names it reads from templates, so the
// linker keeps every exported method of every type the binary converts to
// an interface. That alone costs 3.9 MB (9.90 MB to 13.76 MB for the auth
// binary of before the console, executing one template); the console's
// own code 0.33 MB more, 14.09 MB in all. The other functions link no
// console (only functions/auth sets lambdaapp.Config.Console) and keep the
// 10 MB target.
const maxConsoleBinaryBytes = 15_000_000

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
// not under the 10 MB target; auth, which serves the console, under
// maxConsoleBinaryBytes.
func TestBinary_Size(t *testing.T) {
	env, args := lambdaBuild(t)
	dir := t.TempDir()
	for _, fn := range append(lambdaapp.Functions(), authorizerapp.Name, publisherapp.Name) {
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
		limit := int64(maxBinaryBytes)
		if fn == lambdaapp.Auth {
			limit = maxConsoleBinaryBytes
		}
		if fi.Size() >= limit {
			t.Errorf("%s: %d bytes, want under %d", fn, fi.Size(), limit)
		}
	}
}

// responseServer stands in for the pre-signed S3 URL to which a custom
// resource sends its response: it records each request made to it.
type responseServer struct {
	*httptest.Server
	got  chan *http.Request // with Body read into body
	mu   sync.Mutex
	body map[*http.Request][]byte
}

func newResponseServer(t *testing.T) *responseServer {
	t.Helper()
	rs := &responseServer{got: make(chan *http.Request, 4), body: map[*http.Request][]byte{}}
	rs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rs.mu.Lock()
		rs.body[r] = b
		rs.mu.Unlock()
		rs.got <- r
	}))
	t.Cleanup(rs.Close)
	return rs
}

// customResourceEvent reads a CloudFormation custom resource request from
// events/cloudformation/ and points its ResponseURL at rs, keeping the
// pre-signed URL's path and query.
func customResourceEvent(t *testing.T, rs *responseServer, name string) (cfn.Event, []byte) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(eventsDir, "cloudformation", name))
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(raw["ResponseURL"].(string))
	if err != nil {
		t.Fatal(err)
	}
	target, _ := url.Parse(rs.URL)
	u.Scheme, u.Host = target.Scheme, target.Host
	raw["ResponseURL"] = u.String()
	if b, err = json.Marshal(raw); err != nil {
		t.Fatal(err)
	}
	var ev cfn.Event
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatal(err)
	}
	return ev, b
}

// sendCustomResource invokes the running function with the event and
// returns the response document it PUT to the event's ResponseURL.
func sendCustomResource(t *testing.T, p *lambdaProcess, rs *responseServer, ev cfn.Event, raw []byte) cfn.Response {
	t.Helper()
	if out := p.invoke(raw); string(out) != `""` {
		t.Errorf("%s: the function answered %s, want the empty reason (the response was sent)", ev.RequestType, out)
	}
	var r *http.Request
	select {
	case r = <-rs.got:
	default:
		t.Fatalf("%s: nothing was sent to the ResponseURL\n%s", ev.RequestType, p.logs.String())
	}
	want, _ := url.Parse(ev.ResponseURL)
	if r.Method != http.MethodPut || r.URL.Path != want.Path || r.URL.RawQuery != want.RawQuery {
		t.Errorf("%s: got %s %s, want PUT to the pre-signed URL %s", ev.RequestType, r.Method, r.URL, want.RequestURI())
	}
	// A pre-signed S3 URL is signed without a Content-Type; sending one
	// makes S3 refuse the response.
	if ct := r.Header.Get("Content-Type"); ct != "" {
		t.Errorf("%s: response sent with Content-Type %q", ev.RequestType, ct)
	}
	rs.mu.Lock()
	body := rs.body[r]
	rs.mu.Unlock()
	var res cfn.Response
	if err := json.Unmarshal(body, &res); err != nil {
		t.Fatalf("%s: response document: %v: %s", ev.RequestType, err, body)
	}
	if res.RequestID != ev.RequestID || res.StackID != ev.StackID || res.LogicalResourceID != ev.LogicalResourceID {
		t.Errorf("%s: response %+v does not echo the request's RequestId, StackId and LogicalResourceId", ev.RequestType, res)
	}
	return res
}

// usersStatus cold-starts the users function, with only the environment
// the template gives it, on events/users-list.json presenting credential,
// and returns the status.
func usersStatus(t *testing.T, bin string, l *live, credential string) int {
	t.Helper()
	ev, err := replay.LoadEvent(filepath.Join(eventsDir, "users-list.json"))
	if err != nil {
		t.Fatal(err)
	}
	ev.Headers["authorization"] = "Bearer " + credential
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	_, res, _ := coldStart(t, bin, l.env(lambdaapp.Users), b)
	return res.StatusCode
}

// TestBinary_Bootstrap deploys as CloudFormation does, against DynamoDB
// Local and moto, with the built functions: the Bootstrap custom resource's
// requests (events/cloudformation/) go to the running auth function, whose
// responses are PUT to the request's pre-signed URL; the users function,
// which may not write the keys and is given no admin key secret, then
// serves the first request made with the admin key and with a token from
// auth. A rotation of the admin key followed by a stack update (or a direct
// invocation with {"action":"bootstrap"}) takes effect at once, though auth
// holds the old key in its cache; a Delete takes nothing away.
func TestBinary_Bootstrap(t *testing.T) {
	l := newLive(t, false)
	rs := newResponseServer(t)
	usersBin := buildFunction(t, lambdaapp.Users)
	auth := startLambda(t, buildFunction(t, lambdaapp.Auth), l.env(lambdaapp.Auth))

	ev, raw := customResourceEvent(t, rs, "bootstrap-create.json")
	res := sendCustomResource(t, auth, rs, ev, raw)
	if res.Status != cfn.StatusSuccess || res.PhysicalResourceID == "" {
		t.Fatalf("Create: got %+v, want SUCCESS with a physical id\n%s", res, auth.logs.String())
	}
	if got := usersStatus(t, usersBin, l, replay.AdminSecret); got != http.StatusOK {
		t.Fatalf("users, first request with the admin key: got %d, want 200", got)
	}
	// The API exists now, and with it the issuer: IssuerConfig records it,
	// and answers it as an attribute for the stack's outputs.
	ev, raw = customResourceEvent(t, rs, "issuer-create.json")
	res = sendCustomResource(t, auth, rs, ev, raw)
	if res.Status != cfn.StatusSuccess || res.PhysicalResourceID == "" || res.Data["Issuer"] != replay.Issuer {
		t.Fatalf("IssuerConfig Create: got %+v, want SUCCESS with the attribute Issuer %s\n%s", res, replay.Issuer, auth.logs.String())
	}
	tokenEvent, err := replay.LoadEvent(filepath.Join(eventsDir, "auth-token.json"))
	if err != nil {
		t.Fatal(err)
	}
	tokenEvent.Headers["authorization"] = "Bearer " + replay.AdminSecret
	b, err := json.Marshal(tokenEvent)
	if err != nil {
		t.Fatal(err)
	}
	var issued events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(auth.invoke(b), &issued); err != nil || issued.StatusCode != http.StatusCreated {
		t.Fatalf("issue a token with the admin key: got %d %v: %s", issued.StatusCode, err, issued.Body)
	}
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.Unmarshal([]byte(issued.Body), &tok); err != nil || tok.AccessToken == "" {
		t.Fatalf("token response: %v: %s", err, issued.Body)
	}
	if got := usersStatus(t, usersBin, l, tok.AccessToken); got != http.StatusOK {
		t.Fatalf("users with a token from auth: got %d, want 200", got)
	}

	// A custom domain, by a stack update: the metadata names it at once on
	// the instance that recorded it.
	ev, raw = customResourceEvent(t, rs, "issuer-update.json")
	if res := sendCustomResource(t, auth, rs, ev, raw); res.Status != cfn.StatusSuccess || res.PhysicalResourceID != ev.PhysicalResourceID || res.Data["Issuer"] != "https://auth.example.com" {
		t.Fatalf("IssuerConfig Update: got %+v, want SUCCESS with the same physical id\n%s", res, auth.logs.String())
	}
	metaEvent, err := os.ReadFile(filepath.Join(eventsDir, "well-known-openid-configuration.json"))
	if err != nil {
		t.Fatal(err)
	}
	var meta events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(auth.invoke(metaEvent), &meta); err != nil || meta.StatusCode != http.StatusOK || !strings.Contains(meta.Body, `"issuer":"https://auth.example.com"`) {
		t.Fatalf("metadata after the domain changed: got %d %v: %s", meta.StatusCode, err, meta.Body)
	}

	// Rotation, then a stack update: the warm auth instance read the admin
	// key moments ago, but the bootstrap reads it afresh.
	rotated := replay.AdminSecret + "-rotated-by-put-secret-value"
	l.rotate(t, lambdaapp.EnvAdminKeySecret, rotated)
	ev, raw = customResourceEvent(t, rs, "bootstrap-update.json")
	if res := sendCustomResource(t, auth, rs, ev, raw); res.Status != cfn.StatusSuccess || res.PhysicalResourceID != ev.PhysicalResourceID {
		t.Fatalf("Update: got %+v, want SUCCESS with the same physical id\n%s", res, auth.logs.String())
	}
	if got := usersStatus(t, usersBin, l, rotated); got != http.StatusOK {
		t.Fatalf("users with the rotated admin key after the update: got %d, want 200", got)
	}
	if got := usersStatus(t, usersBin, l, replay.AdminSecret); got != http.StatusUnauthorized {
		t.Fatalf("users with the old admin key after the update: got %d, want 401", got)
	}

	// Rotation, then a direct invocation.
	again := replay.AdminSecret + "-rotated-again"
	l.rotate(t, lambdaapp.EnvAdminKeySecret, again)
	if out := auth.invoke([]byte(`{"action":"bootstrap"}`)); string(out) != `{"bootstrapped":true}` {
		t.Fatalf(`{"action":"bootstrap"}: got %s`, out)
	}
	if got := usersStatus(t, usersBin, l, again); got != http.StatusOK {
		t.Fatalf("users with the admin key after a direct bootstrap: got %d, want 200", got)
	}

	ev, raw = customResourceEvent(t, rs, "bootstrap-delete.json")
	if res := sendCustomResource(t, auth, rs, ev, raw); res.Status != cfn.StatusSuccess || res.PhysicalResourceID != ev.PhysicalResourceID {
		t.Fatalf("Delete: got %+v, want SUCCESS with the same physical id", res)
	}
	if got := usersStatus(t, usersBin, l, again); got != http.StatusOK {
		t.Fatalf("users with the admin key after Delete: got %d, want 200 (the table outlives the stack)", got)
	}
}

// TestBinary_CustomResourceFailures runs the built auth function, as
// CloudFormation reaches it, in the states a stack can leave it in: its
// signing key secret deleted, then its table too. It does not exit at the
// failed init; it answers every custom resource request (events/
// cloudformation/) at the pre-signed URL: Create and Update FAILED, with a
// reason naming the secret that CloudFormation shows in the stack's events,
// and Delete SUCCESS, so that a stack delete completes. Before, the process
// exited at init and no request was ever answered.
func TestBinary_CustomResourceFailures(t *testing.T) {
	l := newLive(t, false)
	rs := newResponseServer(t)
	if _, err := l.sm.DeleteSecret(context.Background(), &secretsmanager.DeleteSecretInput{
		SecretId: aws.String(l.arns[lambdaapp.EnvSigningKeySecret]), ForceDeleteWithoutRecovery: aws.Bool(true),
	}); err != nil {
		t.Fatal(err)
	}
	auth := startLambda(t, buildFunction(t, lambdaapp.Auth), l.env(lambdaapp.Auth))
	for _, name := range []string{"bootstrap-create.json", "issuer-create.json", "bootstrap-update.json", "issuer-update.json"} {
		ev, raw := customResourceEvent(t, rs, name)
		res := sendCustomResource(t, auth, rs, ev, raw)
		if res.Status != cfn.StatusFailed || !strings.Contains(res.Reason, l.arns[lambdaapp.EnvSigningKeySecret]) || res.PhysicalResourceID == "" {
			t.Fatalf("%s: got %+v, want FAILED naming the signing key secret\n%s", name, res, auth.logs.String())
		}
	}
	ev, raw := customResourceEvent(t, rs, "bootstrap-delete.json")
	if res := sendCustomResource(t, auth, rs, ev, raw); res.Status != cfn.StatusSuccess || res.PhysicalResourceID != ev.PhysicalResourceID {
		t.Fatalf("Delete with the secret gone: got %+v, want SUCCESS\n%s", res, auth.logs.String())
	}
	if _, err := l.db.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(l.table)}); err != nil {
		t.Fatal(err)
	}
	if res := sendCustomResource(t, auth, rs, ev, raw); res.Status != cfn.StatusSuccess {
		t.Fatalf("Delete with the table gone too: got %+v, want SUCCESS\n%s", res, auth.logs.String())
	}
}

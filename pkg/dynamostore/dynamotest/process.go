package dynamotest

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"latchkey/pkg/account"
	"latchkey/pkg/dynamostore"
)

// JarEnv names the variable that holds the path of DynamoDBLocal.jar, which
// scripts/dynamodb-local.sh exports next to the endpoint.
const JarEnv = "LATCHKEY_TEST_DYNAMODB_JAR"

// Process is a DynamoDB Local of one test's own, in memory, that the test
// may freeze (SIGSTOP: the process is alive, its sockets accept, nothing
// answers), thaw and restart without disturbing the DynamoDB Local that the
// other tests share.
type Process struct {
	// Endpoint is the process's address; it survives Restart.
	Endpoint string

	jar, port string
	cmd       *exec.Cmd
	exited    chan struct{}
	output    *output
}

// StartProcess starts a DynamoDB Local on a free loopback port and waits
// until it answers. It is killed when the test ends. Without the jar
// (`go test` outside scripts/dynamodb-local.sh) the test is skipped.
func StartProcess(tb testing.TB) *Process {
	tb.Helper()
	jar := os.Getenv(JarEnv)
	if jar == "" {
		tb.Skip("set " + JarEnv + " or run make test")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	p := &Process{Endpoint: "http://127.0.0.1:" + port, jar: jar, port: port}
	tb.Cleanup(p.kill)
	p.start(tb)
	return p
}

// Client returns a client for this process, built like NewClient's.
func (p *Process) Client(optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	return ClientAt(p.Endpoint, optFns...)
}

// Freeze stops the process with SIGSTOP.
func (p *Process) Freeze(tb testing.TB) {
	tb.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		tb.Fatalf("SIGSTOP DynamoDB Local: %v", err)
	}
	// The signal is delivered to each of the JVM's threads as it next runs:
	// on a loaded machine one may still answer a request sent at once.
	// Frozen means every thread stopped, as /proc says.
	deadline := time.Now().Add(30 * time.Second)
	for !p.stopped() {
		if time.Now().After(deadline) {
			tb.Fatalf("DynamoDB Local (pid %d) not stopped 30 s after SIGSTOP", p.cmd.Process.Pid)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// stopped reports whether every thread of the process is stopped (state T
// in /proc/PID/task/TID/stat). Where /proc cannot be read it says true:
// the signal was sent, and nothing better is known.
func (p *Process) stopped() bool {
	tasks, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(p.cmd.Process.Pid), "task"))
	if err != nil {
		return true
	}
	for _, task := range tasks {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p.cmd.Process.Pid), "task", task.Name(), "stat"))
		if err != nil {
			continue // the thread ended
		}
		// The state follows the command name, which is in parentheses.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 || i+2 >= len(b) {
			continue
		}
		if state := b[i+2]; state != 'T' && state != 't' {
			return false
		}
	}
	return true
}

// Thaw continues the process with SIGCONT.
func (p *Process) Thaw(tb testing.TB) {
	tb.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		tb.Fatalf("SIGCONT DynamoDB Local: %v", err)
	}
}

// Restart kills the process and starts a new one on the same port: what a
// developer's DynamoDB Local in memory does when restarted, every table gone.
func (p *Process) Restart(tb testing.TB) {
	tb.Helper()
	p.kill()
	p.start(tb)
}

func (p *Process) start(tb testing.TB) {
	tb.Helper()
	dir := filepath.Dir(p.jar)
	p.output = &output{}
	// The JVM flags trade peak speed, which a test does not need, for a
	// start several times faster on a busy machine (about 2 s instead of
	// 10 s measured with the load of a full test run): only the quick
	// compiler, one GC thread, a small heap.
	p.cmd = exec.Command("java", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx256m",
		"-Djava.library.path="+filepath.Join(dir, "DynamoDBLocal_lib"),
		"-jar", p.jar, "-inMemory", "-sharedDb", "-disableTelemetry", "-port", p.port)
	p.cmd.Dir = dir
	p.cmd.Stdout, p.cmd.Stderr = p.output, p.output
	if err := p.cmd.Start(); err != nil {
		tb.Fatalf("start DynamoDB Local: %v", err)
	}
	p.exited = make(chan struct{})
	go func(cmd *exec.Cmd, exited chan struct{}) { cmd.Wait(); close(exited) }(p.cmd, p.exited)
	// Like scripts/dynamodb-local.sh: any HTTP answer (400 without a
	// signature) means it is up.
	c := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-p.exited:
			tb.Fatalf("DynamoDB Local exited before it answered:\n%s", p.output)
		default:
		}
		if res, err := c.Get(p.Endpoint); err == nil {
			res.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			tb.Fatalf("DynamoDB Local did not answer on %s within 60 s:\n%s", p.Endpoint, p.output)
		}
		time.Sleep(100 * time.Millisecond)
	}
	p.warmUp(tb)
}

// warmUp makes the requests a test will make once, on a table it then
// deletes: a JVM just started is slow to answer each kind of request the
// first time, which a test with a short store timeout would take for a
// stall.
func (p *Process) warmUp(tb testing.TB) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := p.Client()
	const table = "warm-up"
	if err := dynamostore.CreateTable(ctx, client, table); err != nil {
		tb.Fatalf("warm up DynamoDB Local: %v", err)
	}
	// The tests' Timeout, which scales with the load: a busy machine makes
	// a first answer slow, not missing.
	s := dynamostore.New(client, table, dynamostore.WithTimeout(Timeout))
	now := time.Now().UTC()
	u := account.User{ID: account.NewID(account.PrefixUser, now), Email: "warm-up@example.com", Name: "Warm-up", Role: "member", CreatedAt: now, UpdatedAt: now}
	for _, err := range []error{
		s.CreateUser(ctx, account.WriteOptions{}, u),
		func() error { _, err := s.GetUser(ctx, u.ID); return err }(),
		func() error { _, err := s.ListUsers(ctx, account.ListParams{Limit: 1}); return err }(),
		func() error {
			_, err := s.TokenStatus(ctx, account.NewID(account.PrefixToken, now), account.NewID(account.PrefixAPIKey, now), nil, "", false)
			return err
		}(),
	} {
		if err != nil {
			tb.Fatalf("warm up DynamoDB Local: %v", err)
		}
	}
	if _, err := client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(table)}); err != nil {
		tb.Fatalf("warm up DynamoDB Local: %v", err)
	}
}

// kill ends the process, frozen or not, and waits for it to exit.
func (p *Process) kill() {
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	p.cmd.Process.Kill() // SIGKILL ends a stopped process too
	<-p.exited
	p.cmd = nil
}

// output collects the process's stdout and stderr, for the failure message
// when it does not start.
type output struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (o *output) Write(b []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.Write(b)
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

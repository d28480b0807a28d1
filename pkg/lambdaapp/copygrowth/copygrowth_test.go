package copygrowth_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"latchkey/pkg/account"
	"latchkey/pkg/dynamostore"
	"latchkey/pkg/dynamostore/dynamotest"
	"latchkey/pkg/lambdaapp/copygrowth"
	"latchkey/pkg/lambdaapp/lambdaenv"
	"latchkey/pkg/tablestore"
)

const aliasARN = "arn:aws:lambda:us-east-1:123456789012:function:latchkey-AuthFunction:grow"

// invocation is one request the stand-in of Lambda received.
type invocation struct {
	path, invocationType string
	payload              copygrowth.Request
}

// fakeLambda speaks Lambda's Invoke API (POST
// /2015-03-31/functions/{name}/invocations): it keeps each request and
// answers an asynchronous one 202, or status when set.
type fakeLambda struct {
	*httptest.Server
	mu     sync.Mutex
	got    []invocation
	status int
	delay  time.Duration
}

func newFakeLambda(t *testing.T) *fakeLambda {
	t.Helper()
	f := &fakeLambda{status: http.StatusAccepted}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var inv invocation
		if err := json.Unmarshal(body, &inv.payload); err != nil {
			t.Errorf("payload %q: %v", body, err)
		}
		inv.path, inv.invocationType = r.Method+" "+r.URL.Path, r.Header.Get("X-Amz-Invocation-Type")
		f.mu.Lock()
		f.got = append(f.got, inv)
		status, delay := f.status, f.delay
		f.mu.Unlock()
		time.Sleep(delay)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		if status >= 300 {
			w.Header().Set("X-Amzn-ErrorType", "ServiceException")
			io.WriteString(w, `{"Type":"Service","message":"down"}`)
		}
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeLambda) take() []invocation {
	f.mu.Lock()
	defer f.mu.Unlock()
	got := f.got
	f.got = nil
	return got
}

// TestStoreOption_InvokesAuth (DynamoDB Local): the store of the verify
// URL and of the authorizer, built by StoreOption from their environment,
// asks for a busy key's growth with one asynchronous Invoke of auth's
// grow alias, payload {"latchkey":"grow-copies","key_id":…}, and not again
// within the minute; a quiet key asks nothing. Without AUTH_GROW_ALIAS_ARN it
// asks nothing. A Lambda that fails or hangs costs the flush a log line
// (with no secret) and at most the invoke's timeout, and the flush is
// made.
func TestStoreOption_InvokesAuth(t *testing.T) {
	client := dynamotest.NewClient(t)
	table := dynamotest.NewTable(t, client)
	fake := newFakeLambda(t)
	env := map[string]string{
		"AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local-secret",
		lambdaenv.EnvLambdaEndpoint: fake.URL, copygrowth.EnvAuthAliasARN: aliasARN,
	}
	var logs bytes.Buffer
	store := func(env map[string]string) *storeT {
		t.Helper()
		cfg, err := lambdaenv.AWSConfig(func(k string) string { return env[k] })
		if err != nil {
			t.Fatal(err)
		}
		opt := copygrowth.StoreOption(cfg, func(k string) string { return env[k] }, slog.New(slog.NewJSONHandler(&logs, nil)))
		return &storeT{t: t, s: dynamostore.New(client, table, dynamostore.WithTimeout(dynamotest.Timeout), opt)}
	}
	s := store(env)
	busy, quiet := account.NewID(account.PrefixAPIKey, time.Now()), account.NewID(account.PrefixAPIKey, time.Now())

	s.flush(busy, 30000)
	got := fake.take()
	want := invocation{"POST /2015-03-31/functions/" + aliasARN + "/invocations", "Event", copygrowth.Request{Latchkey: "grow-copies", KeyID: busy}}
	if len(got) != 1 || got[0] != want {
		t.Fatalf("a busy flush invoked %+v, want once %+v", got, want)
	}
	s.flush(busy, 30000)
	s.flush(quiet, 1)
	if got := fake.take(); len(got) != 0 {
		t.Errorf("a second busy flush within the minute and a quiet one invoked %+v, want nothing", got)
	}

	store(map[string]string{"AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local-secret",
		lambdaenv.EnvLambdaEndpoint: fake.URL}).flush(busy, 30000)
	if got := fake.take(); len(got) != 0 {
		t.Errorf("without %s: invoked %+v, want nothing", copygrowth.EnvAuthAliasARN, got)
	}

	for _, c := range []struct {
		name   string
		status int
		delay  time.Duration
	}{{"fails", http.StatusInternalServerError, 0}, {"hangs", http.StatusAccepted, 3 * time.Second}} {
		fake.mu.Lock()
		fake.status, fake.delay = c.status, c.delay
		fake.mu.Unlock()
		logs.Reset()
		start := time.Now()
		store(env).flush(account.NewID(account.PrefixAPIKey, time.Now()), 30000)
		if took := time.Since(start); took > 2500*time.Millisecond {
			t.Errorf("Lambda %s: the flush took %v, want the invoke's timeout at most", c.name, took)
		}
		if len(fake.take()) == 0 || !strings.Contains(logs.String(), "grow a busy key") || strings.Contains(logs.String(), "local-secret") {
			t.Errorf("Lambda %s: logs %q, want one line that names the failure and holds no secret", c.name, logs.String())
		}
	}
}

// storeT is a store of one process, whose flushes count verifications.
type storeT struct {
	t       *testing.T
	s       *tablestore.Store
	process string
	seq     int64
}

// flush adds rate verifies a second of the key id over the last two
// minutes, as heat does in pkg/tablestore: enough to show it busy.
func (s *storeT) flush(id string, rate int64) {
	s.t.Helper()
	if s.process == "" {
		s.process = account.NewID("", time.Now())
	}
	s.seq++
	now := time.Now().UTC()
	start := now.Truncate(time.Minute)
	n := rate * int64(now.Sub(start.Add(-time.Minute))/time.Second)
	f := account.UsageFlush{Process: s.process, Seq: s.seq, Deltas: []account.UsageDelta{{
		Subject: id, Interval: account.IntervalMinute, Start: start, ExpireAt: now.Add(time.Hour),
		Counts: account.UsageCounts{Verifications: map[string]int64{account.OutcomeValid: n}},
	}}}
	if err := s.s.AddUsage(s.t.Context(), f); err != nil {
		s.t.Fatalf("AddUsage: %v", err)
	}
}

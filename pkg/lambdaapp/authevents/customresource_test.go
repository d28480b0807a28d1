package authevents_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/cfn"
	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"
	"github.com/aws/smithy-go"

	"latchkey/pkg/account"
	"latchkey/pkg/lambdaapp"
	"latchkey/pkg/lambdaapp/authevents"
	"latchkey/pkg/lambdaapp/replay"
	"latchkey/pkg/lambdaapp/replay/replaytest"
	"latchkey/pkg/mock"
	"latchkey/pkg/token"
	"latchkey/pkg/version"
)

// cfnResponses stands in for the pre-signed S3 URL of CloudFormation's
// requests: it keeps each response document PUT to it.
type cfnResponses struct {
	*httptest.Server
	got chan cfn.Response
}

func newCfnResponses(t *testing.T) *cfnResponses {
	t.Helper()
	rs := &cfnResponses{got: make(chan cfn.Response, 4)}
	rs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var res cfn.Response
		if r.Method != http.MethodPut {
			t.Errorf("response sent with %s, want PUT", r.Method)
		}
		if err := json.NewDecoder(r.Body).Decode(&res); err != nil {
			t.Errorf("response body: %v", err)
		}
		rs.got <- res
	}))
	t.Cleanup(rs.Close)
	return rs
}

// event reads a request of events/cloudformation/, as CloudFormation sends
// it, with its ResponseURL pointed at rs.
func (rs *cfnResponses) event(t *testing.T, name string) json.RawMessage {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("../../../events/cloudformation", name))
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	raw["ResponseURL"] = rs.URL + "/cloudformation-custom-resource-response?X-Amz-Signature=x"
	if b, err = json.Marshal(raw); err != nil {
		t.Fatal(err)
	}
	return b
}

// handler is auth's handler over app, as functions/auth's main builds it.
func handler(app *lambdaapp.App) authevents.EventHandler {
	return authevents.Handler(app, app.Lambda())
}

// send invokes h with the event and returns the response it PUT.
func (rs *cfnResponses) send(t *testing.T, ctx context.Context, h authevents.EventHandler, ev json.RawMessage) cfn.Response {
	t.Helper()
	if out, err := h(ctx, ev); err != nil || out != "" {
		t.Fatalf("invoke: got %#v, %v; want the empty reason (the response was sent)", out, err)
	}
	select {
	case res := <-rs.got:
		return res
	default:
		t.Fatal("no response was PUT")
		return cfn.Response{}
	}
}

// goneSecrets is Secrets Manager after the signing key secret was deleted,
// or with a key policy that refuses the function, or with the RS256 setup
// denied: each read (or write) of the secrets in fail gets err.
type goneSecrets struct {
	*replay.Secrets
	mu   sync.Mutex
	fail map[string]error
}

func (g *goneSecrets) set(id string, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.fail[id] = err
}

func (g *goneSecrets) failure(id *string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.fail[aws.ToString(id)]
}

func (g *goneSecrets) GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, opts ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	if err := g.failure(in.SecretId); err != nil {
		return nil, err
	}
	return g.Secrets.GetSecretValue(ctx, in, opts...)
}

func (g *goneSecrets) PutSecretValue(ctx context.Context, in *secretsmanager.PutSecretValueInput, opts ...func(*secretsmanager.Options)) (*secretsmanager.PutSecretValueOutput, error) {
	if err := g.failure(in.SecretId); err != nil {
		return nil, err
	}
	return g.Secrets.PutSecretValue(ctx, in, opts...)
}

// TestAfterFailedStart: auth's start fails (its signing key secret was
// deleted), and it still answers every CloudFormation request with the
// real event shapes: Delete SUCCESS without trying to start, Create and
// Update FAILED with a reason that names the cause; an API event fails the
// invocation. Once the secret is back, the next request starts it and is
// served. Before AfterFailedStart, the process exited and no answer was
// ever sent.
func TestAfterFailedStart(t *testing.T) {
	e := replaytest.NewEnv(t)
	c := mock.NewClock(time.Now())
	sm := &goneSecrets{Secrets: e.Secrets, fail: map[string]error{}}
	notFound := &types.ResourceNotFoundException{Message: aws.String("Secrets Manager can't find the specified secret.")}
	sm.set(replay.SigningARN, notFound)
	var starts int
	start := func(ctx context.Context) (authevents.EventHandler, error) {
		starts++
		app, err := lambdaapp.New(ctx, replay.Config(lambdaapp.Auth, "latchkey"), lambdaapp.Deps{
			Store: e.Store, Keys: e.Keys, Secrets: sm, Now: c.Now, Logger: slog.New(slog.DiscardHandler),
		})
		if err != nil {
			return nil, err
		}
		return handler(app), nil
	}
	if _, err := start(context.Background()); err == nil {
		t.Fatal("the start succeeded with the signing key secret gone")
	}
	h := authevents.AfterFailedStart(start, slog.New(slog.DiscardHandler))
	rs := newCfnResponses(t)
	ctx := context.Background()

	res := rs.send(t, ctx, h, rs.event(t, "bootstrap-delete.json"))
	if res.Status != cfn.StatusSuccess || res.PhysicalResourceID != "latchkey-Table-1K8ZQ4W2N3B5C-bootstrap" || res.RequestID != "1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d" {
		t.Fatalf("Delete: got %+v, want SUCCESS with its physical id", res)
	}
	if starts != 1 {
		t.Fatalf("Delete tried to start the function (%d starts)", starts-1)
	}
	for _, name := range []string{"bootstrap-create.json", "bootstrap-update.json", "issuer-create.json", "issuer-update.json"} {
		res := rs.send(t, ctx, h, rs.event(t, name))
		if res.Status != cfn.StatusFailed || !strings.Contains(res.Reason, "SigningKeySecret") || !strings.Contains(res.Reason, "can't find the specified secret") {
			t.Fatalf("%s: got %+v, want FAILED naming the signing key secret", name, res)
		}
		if res.PhysicalResourceID == "" {
			t.Fatalf("%s: no physical id", name)
		}
		for _, secret := range []string{replay.AdminSecret, replay.SigningSecret, replay.CursorSecret} {
			if strings.Contains(res.Reason, secret) {
				t.Fatalf("%s: the reason holds a secret: %s", name, res.Reason)
			}
		}
	}
	if res := rs.send(t, ctx, h, rs.event(t, "bootstrap-create.json")); res.PhysicalResourceID != "latchkey-Table-1K8ZQ4W2N3B5C-bootstrap" {
		t.Fatalf("Create: physical id %q, want the table's name and the logical id", res.PhysicalResourceID)
	}
	jwks := jwksEvent(t)
	if _, err := h(ctx, jwks); err == nil || !strings.Contains(err.Error(), "could not start") {
		t.Fatalf("API event before a start: got %v, want the start's error", err)
	}

	sm.set(replay.SigningARN, nil)
	res = rs.send(t, ctx, h, rs.event(t, "issuer-update.json"))
	if res.Status != cfn.StatusSuccess || res.Data["Issuer"] != "https://auth.example.com" {
		t.Fatalf("Update once the secret is back: got %+v, want SUCCESS", res)
	}
	out, err := h(ctx, jwks)
	if r, ok := out.(events.APIGatewayV2HTTPResponse); err != nil || !ok || r.StatusCode != http.StatusOK {
		t.Fatalf("API event once started: got %#v, %v", out, err)
	}
}

// TestAfterFailedStart_AccessDeniedBackoff: on a stack's first create the
// auth role's new permissions may not yet have spread through IAM, and its
// start is refused with AccessDenied. A Create is then started again with
// backoff (1, 2, 4, 8 seconds, on the given clock: nothing waits here) while
// the invocation's deadline, less the 2 seconds kept to answer, allows,
// and answered SUCCESS once IAM lets it in; FAILED with the refusal once
// the deadline leaves no room. Other failures are answered at once.
func TestAfterFailedStart_AccessDeniedBackoff(t *testing.T) {
	rs := newCfnResponses(t)
	denied := &smithy.GenericAPIError{Code: "AccessDeniedException", Message: "User: arn:aws:sts::123456789012:assumed-role/latchkey-AuthRole/auth is not authorized to perform: secretsmanager:GetSecretValue"}
	notFound := &types.ResourceNotFoundException{Message: aws.String("Secrets Manager can't find the specified secret.")}
	run := func(t *testing.T, refusal error, refusals int, within time.Duration) (cfn.Response, []time.Duration) {
		t.Helper()
		e := replaytest.NewEnv(t)
		c := mock.NewClock(time.Now())
		sm := &goneSecrets{Secrets: e.Secrets, fail: map[string]error{}}
		var starts int
		start := func(ctx context.Context) (authevents.EventHandler, error) {
			starts++
			if starts > refusals {
				sm.set(replay.SigningARN, nil)
			} else {
				sm.set(replay.SigningARN, refusal)
			}
			app, err := lambdaapp.New(ctx, replay.Config(lambdaapp.Auth, "latchkey"), lambdaapp.Deps{
				Store: e.Store, Keys: e.Keys, Secrets: sm, Now: c.Now, Logger: slog.New(slog.DiscardHandler),
			})
			if err != nil {
				return nil, err
			}
			return handler(app), nil
		}
		var waits []time.Duration
		sleep := func(_ context.Context, d time.Duration) error {
			waits = append(waits, d)
			c.Advance(d)
			return nil
		}
		h := authevents.AfterFailedStartClock(start, slog.New(slog.DiscardHandler), c.Now, sleep)
		ctx, cancel := context.WithDeadline(context.Background(), c.Now().Add(within))
		defer cancel()
		return rs.send(t, ctx, h, rs.event(t, "bootstrap-create.json")), waits
	}

	t.Run("StartsOnceIAMLetsIn", func(t *testing.T) {
		res, waits := run(t, denied, 3, time.Minute)
		if res.Status != cfn.StatusSuccess {
			t.Fatalf("Create: got %+v, want SUCCESS after IAM let the role in", res)
		}
		if want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}; !slices.Equal(waits, want) {
			t.Fatalf("waits %v, want %v", waits, want)
		}
	})
	t.Run("GivesUpBeforeTheDeadline", func(t *testing.T) {
		// 20 s, less 2 s to answer: 1+2+4+8 = 15 s of waits, and another 8 s
		// would pass 18 s.
		res, waits := run(t, denied, 1000, 20*time.Second)
		if res.Status != cfn.StatusFailed || !strings.Contains(res.Reason, "AccessDeniedException") {
			t.Fatalf("Create: got %+v, want FAILED with the refusal", res)
		}
		if want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second}; !slices.Equal(waits, want) {
			t.Fatalf("waits %v, want %v", waits, want)
		}
	})
	t.Run("NotForOtherFailures", func(t *testing.T) {
		res, waits := run(t, notFound, 1000, time.Minute)
		if res.Status != cfn.StatusFailed || len(waits) != 0 {
			t.Fatalf("Create with the secret gone: got %+v after waits %v, want FAILED at once", res, waits)
		}
	})
}

func jwksEvent(t *testing.T) json.RawMessage {
	t.Helper()
	ev, err := replay.LoadEvent("../../../events/auth-jwks.json")
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestApp_CustomResourceFailures: a started auth instance answers FAILED
// with the cause when the bootstrap fails, for each way it does: the
// table's writes refused (the table deleted), the RS256 setup denied, a
// hung dependency cut off before the invocation's deadline with time left
// to answer. A Delete succeeds whatever the state.
func TestApp_CustomResourceFailures(t *testing.T) {
	rs := newCfnResponses(t)
	c := mock.NewClock(time.Now())

	t.Run("TableGone", func(t *testing.T) {
		e := replaytest.NewEnv(t)
		keys := &failingKeys{MemoryKeys: e.Keys}
		app, err := lambdaapp.New(context.Background(), replay.Config(lambdaapp.Auth, "latchkey"), lambdaapp.Deps{
			Store: e.Store, Keys: keys, Secrets: e.Secrets, Now: c.Now, Logger: slog.New(slog.DiscardHandler),
		})
		if err != nil {
			t.Fatal(err)
		}
		keys.err = errors.New("operation error DynamoDB: PutItem, ResourceNotFoundException: Requested resource not found")
		// A bootstrap publishes again only what changed; a new signing
		// version makes it publish.
		e.Secrets.Put(replay.SigningARN, replay.SigningSecret+"-rotated")
		res := rs.send(t, context.Background(), handler(app), rs.event(t, "bootstrap-update.json"))
		if res.Status != cfn.StatusFailed || !strings.Contains(res.Reason, "Requested resource not found") {
			t.Fatalf("Update with the table gone: got %+v, want FAILED with the cause", res)
		}
		if res := rs.send(t, context.Background(), handler(app), rs.event(t, "issuer-update.json")); res.Status != cfn.StatusFailed || !strings.Contains(res.Reason, "record the issuer") {
			t.Fatalf("IssuerConfig Update with the table gone: got %+v, want FAILED", res)
		}
		if res := rs.send(t, context.Background(), handler(app), rs.event(t, "bootstrap-delete.json")); res.Status != cfn.StatusSuccess {
			t.Fatalf("Delete with the table gone: got %+v, want SUCCESS", res)
		}
	})

	t.Run("RS256Denied", func(t *testing.T) {
		e := replaytest.NewEnv(t)
		cfg := replay.Config(lambdaapp.Auth, "latchkey")
		cfg.SigningAlgorithm = token.RS256
		sm := &deniedPut{Secrets: e.Secrets, err: errors.New("operation error Secrets Manager: PutSecretValue, AccessDeniedException: User is not authorized to perform: secretsmanager:PutSecretValue")}
		start := func(ctx context.Context) (authevents.EventHandler, error) {
			app, err := lambdaapp.New(ctx, cfg, lambdaapp.Deps{Store: e.Store, Keys: e.Keys, Secrets: sm, Now: c.Now, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				return nil, err
			}
			return handler(app), nil
		}
		h := authevents.AfterFailedStart(start, slog.New(slog.DiscardHandler))
		res := rs.send(t, context.Background(), h, rs.event(t, "bootstrap-create.json"))
		if res.Status != cfn.StatusFailed || !strings.Contains(res.Reason, "AccessDeniedException") || !strings.Contains(res.Reason, "RSA key") {
			t.Fatalf("Create with the RS256 setup denied: got %+v, want FAILED with the cause", res)
		}
	})

	t.Run("Hung", func(t *testing.T) {
		// The deadline the work gets is the invocation's less the margin
		// kept to answer: read from the context, not measured on a clock.
		var got time.Time
		start := func(ctx context.Context) (authevents.EventHandler, error) {
			got, _ = ctx.Deadline()
			return nil, context.DeadlineExceeded
		}
		h := authevents.AfterFailedStart(start, slog.New(slog.DiscardHandler))
		deadline := time.Now().Add(time.Hour)
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		defer cancel()
		res := rs.send(t, ctx, h, rs.event(t, "bootstrap-create.json"))
		if res.Status != cfn.StatusFailed || !strings.Contains(res.Reason, "deadline exceeded") {
			t.Fatalf("Create with a hung start: got %+v", res)
		}
		if want := deadline.Add(-2 * time.Second); !got.Equal(want) {
			t.Fatalf("the start's deadline: got %v, want %v (the invocation's less 2 s)", got, want)
		}
	})
}

// failingKeys refuses every write once err is set, as DynamoDB does after
// the table was deleted.
type failingKeys struct {
	*replay.MemoryKeys
	err error
}

func (f *failingKeys) PutPublicKeys(ctx context.Context, jwks []byte, version time.Time) error {
	if f.err != nil {
		return f.err
	}
	return f.MemoryKeys.PutPublicKeys(ctx, jwks, version)
}

func (f *failingKeys) PutIssuer(ctx context.Context, issuer string) error {
	if f.err != nil {
		return f.err
	}
	return f.MemoryKeys.PutIssuer(ctx, issuer)
}

// deniedPut refuses PutSecretValue, as IAM does when the role may not
// write the signing secret or the key policy refuses GenerateDataKey.
type deniedPut struct {
	*replay.Secrets
	err error
}

func (d *deniedPut) PutSecretValue(context.Context, *secretsmanager.PutSecretValueInput, ...func(*secretsmanager.Options)) (*secretsmanager.PutSecretValueOutput, error) {
	return nil, d.err
}

// TestApp_FormatsResource: the template's Formats resource puts
// revocations on the key and status lists in force FormatsMargin after
// its Create (which
// runs once every alias serves the release), and its Update back to a
// list without them (a stack rollback's first step) and its Delete take
// them out of force, answering only after FormatsRefresh, when no
// instance relies on them any more.
func TestApp_FormatsResource(t *testing.T) {
	rs := newCfnResponses(t)
	c := mock.NewClock(time.Now().Truncate(time.Second))
	e := replaytest.NewEnv(t)
	if err := e.Store.PutFormats(context.Background(), account.Formats{}); err != nil {
		t.Fatal(err)
	}
	app, err := lambdaapp.New(context.Background(), replay.Config(lambdaapp.Auth, "latchkey"), lambdaapp.Deps{
		Store: e.Store, Keys: e.Keys, Secrets: e.Secrets, Now: c.Now, Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	formats := func() account.Formats {
		t.Helper()
		f, err := e.Store.Formats(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	if res := rs.send(t, context.Background(), handler(app), rs.event(t, "formats-create.json")); res.Status != cfn.StatusSuccess {
		t.Fatalf("Create: got %+v, want SUCCESS", res)
	}
	want := c.Now().Add(account.FormatsMargin).UTC()
	if got := formats(); !got.InlineRevocationSince.Equal(want) || !got.StatusListsSince.Equal(want) || got.SetBy != version.Version {
		t.Fatalf("after Create: got %+v, want revocations on the key and status lists from %v, set by %s", got, want, version.Version)
	}
	for _, name := range []string{"formats-update-rollback.json", "formats-delete.json"} {
		if err := e.Store.PutFormats(context.Background(), account.Formats{InlineRevocationSince: want, StatusListsSince: want}); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if res := rs.send(t, context.Background(), handler(app), rs.event(t, name)); res.Status != cfn.StatusSuccess {
			t.Fatalf("%s: got %+v, want SUCCESS", name, res)
		}
		if took := time.Since(start); took < account.FormatsRefresh {
			t.Errorf("%s answered after %v, want at least FormatsRefresh (%v)", name, took, account.FormatsRefresh)
		}
		if got := formats(); !got.InlineRevocationSince.IsZero() || !got.StatusListsSince.IsZero() {
			t.Errorf("after %s: got %+v, want revocations on the key and status lists out of force", name, got)
		}
	}
}

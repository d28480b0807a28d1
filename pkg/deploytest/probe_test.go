package deploytest_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"maps"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"latchkey/pkg/account"
	"latchkey/pkg/canary"
	"latchkey/pkg/httpapi/httpapitest"
	"latchkey/pkg/lambdaapp/lambdaenv"
	"latchkey/pkg/lambdaapp/probeapp"
	"latchkey/pkg/lambdaapp/replay"
)

// probeLine is one line of the probe's log.
type probeLine struct {
	Msg     string   `json:"msg"`
	Path    string   `json:"path"`
	Outcome string   `json:"outcome"`
	SeenMS  *float64 `json:"seen_ms"`
	Error   string   `json:"error"`
}

// stale answers every request under prefix with the first answer it got
// there: a build that caches its answers and never sees a revocation.
func stale(next canary.HTTPFunction, prefix string) canary.HTTPFunction {
	var once sync.Once
	var first events.APIGatewayV2HTTPResponse
	var firstErr error
	return func(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		if !strings.HasPrefix(req.RawPath, prefix) {
			return next(ctx, req)
		}
		once.Do(func() { first, firstErr = next(ctx, req) })
		return first, firstErr
	}
}

// withoutStatusClaim is a build whose tokens carry no status claim, as
// when the status-lists format is not in force: the probe is handed each
// token with the claim taken out of its payload, and each function gets
// the token as issued back (its signature covers the claim).
func withoutStatusClaim(t *testing.T, g canary.Targets) canary.Targets {
	var mu sync.Mutex
	issued := map[string]string{} // stripped: as issued
	restore := func(s string) string {
		mu.Lock()
		defer mu.Unlock()
		for stripped, orig := range issued {
			s = strings.ReplaceAll(s, stripped, orig)
			s = strings.ReplaceAll(s, url.QueryEscape(stripped), url.QueryEscape(orig))
		}
		return s
	}
	wrap := func(next canary.HTTPFunction) canary.HTTPFunction {
		return func(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
			req.Headers = maps.Clone(req.Headers)
			req.Headers["authorization"] = restore(req.Headers["authorization"])
			req.Body = restore(req.Body)
			res, err := next(ctx, req)
			if err != nil || req.RawPath != "/v1/auth/token" {
				return res, err
			}
			var body map[string]any
			if err := json.Unmarshal([]byte(res.Body), &body); err != nil {
				t.Fatal(err)
			}
			orig, _ := body["access_token"].(string)
			parts := strings.Split(orig, ".")
			payload, err := base64.RawURLEncoding.DecodeString(parts[1])
			if err != nil {
				t.Fatal(err)
			}
			var claims map[string]any
			if err := json.Unmarshal(payload, &claims); err != nil {
				t.Fatal(err)
			}
			if claims["status"] == nil {
				t.Fatal("the build's token has no status claim to take out")
			}
			delete(claims, "status")
			payload, _ = json.Marshal(claims)
			parts[1] = base64.RawURLEncoding.EncodeToString(payload)
			stripped := strings.Join(parts, ".")
			mu.Lock()
			issued[stripped] = orig
			mu.Unlock()
			body["access_token"] = stripped
			b, _ := json.Marshal(body)
			res.Body = string(b)
			return res, nil
		}
	}
	authz := g.Authorizer
	g.Authorizer = func(ctx context.Context, req events.APIGatewayV2CustomAuthorizerV2Request) (events.APIGatewayV2CustomAuthorizerSimpleResponse, error) {
		req.Headers = maps.Clone(req.Headers)
		req.Headers["authorization"] = restore(req.Headers["authorization"])
		return authz(ctx, req)
	}
	g.Auth, g.Verify = wrap(g.Auth), wrap(g.Verify)
	return g
}

// TestProbe runs the probe (probeapp.Run, canary.Probe) against the real
// handlers of auth, verify and the authorizer, in process, over one store
// (DynamoDB Local in make test), and reads its log: a good build refuses
// the revoked token on every path and each path's line holds the time it
// took; a verify URL that keeps answering as before the revocation is the
// one path that failed, and the run is not ok. Neither the key nor a token
// is ever in the log.
func TestProbe(t *testing.T) {
	for _, c := range []struct {
		name   string
		build  func(canary.Targets) canary.Targets
		failed string // the path that fails; "" none
		// noStatus: the status list is not applicable.
		noStatus bool
	}{
		{name: "good"},
		{name: "verify URL never sees the revocation", build: func(g canary.Targets) canary.Targets { g.Verify = stale(g.Verify, ""); return g }, failed: canary.PathVerifyURL},
		{name: "status list never shows the revocation", build: func(g canary.Targets) canary.Targets { g.Auth = stale(g.Auth, account.StatusListPath); return g }, failed: canary.PathStatusList},
		{name: "no status claim", noStatus: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := newBackend(t)
			targets := newCanaryBuild(t, b, nil).targets
			if c.build != nil {
				targets = c.build(targets)
			}
			if c.noStatus {
				targets = withoutStatusClaim(t, targets)
			}
			var logs httpapitest.SyncBuffer
			start := time.Now()
			ok := probeapp.Run(context.Background(), targets, func(context.Context) (string, error) { return replay.KeySecret, nil }, time.Second, lambdaenv.NewLogger(&logs, probeapp.Name))
			took := time.Since(start)
			if ok != (c.failed == "") {
				t.Errorf("ok %v, want %v; logs:\n%s", ok, c.failed == "", logs.String())
			}
			if strings.Contains(logs.String(), replay.KeySecret) || strings.Contains(logs.String(), "eyJ") {
				t.Errorf("the key or a token is in the probe's log: %s", logs.String())
			}
			got := map[string]probeLine{}
			var done bool
			for _, l := range logs.Lines() {
				var line probeLine
				if err := json.Unmarshal([]byte(l), &line); err != nil {
					t.Fatalf("line %q: %v", l, err)
				}
				switch line.Msg {
				case "probe path":
					got[line.Path] = line
				case "probe done":
					done = true
				case "start":
				default:
					t.Errorf("line %q", l)
				}
			}
			if !done {
				t.Errorf("no probe done line")
			}
			for _, p := range []string{canary.PathVerify, canary.PathVerifyURL, canary.PathIntrospect, canary.PathAuthorizer, canary.PathStatusList} {
				line, seen := got[p]
				switch {
				case !seen:
					t.Errorf("%s: no line", p)
				case p == c.failed:
					if line.Outcome != canary.Failed || line.SeenMS != nil || !strings.Contains(line.Error, "after revocation") {
						t.Errorf("%s: %+v, want failed with the wrong answer", p, line)
					}
				case p == canary.PathStatusList && c.noStatus:
					if line.Outcome != canary.NotApplicable || line.SeenMS != nil {
						t.Errorf("%s: %+v, want not applicable", p, line)
					}
				case line.Outcome != canary.Refused || line.SeenMS == nil || *line.SeenMS < 0 || *line.SeenMS > float64(canary.Bounds[p].Milliseconds()):
					t.Errorf("%s: %+v, want refused within %v", p, line, canary.Bounds[p])
				}
			}
			t.Logf("probe in %v: %v", took.Round(time.Millisecond), got)
		})
	}
}

package dynamostore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"latchkey/pkg/account"
	"latchkey/pkg/assembly"
	"latchkey/pkg/dynamostore"
	"latchkey/pkg/dynamostore/dynamotest"
	"latchkey/pkg/httpapi/httpapitest"
)

// throttled is the HTTP stack over a table behind a Throttler, with a
// token to verify.
type throttled struct {
	proxy *Throttler
	table string
	env   *httpapitest.Env
	token string
}

// newThrottled builds the stack over a fresh table and issues the token,
// before any throttling and with the tests' timeout, for a loaded machine.
// The stacks under test are handler's.
func newThrottled(tb testing.TB) throttled {
	tb.Helper()
	client := dynamotest.NewClient(tb)
	table := dynamotest.NewTable(tb, client)
	proxy := NewThrottler(tb, dynamotest.Endpoint(tb))
	env := httpapitest.NewServerOver(tb, dynamostore.New(client, table, dynamostore.WithTimeout(dynamotest.Timeout)))
	token, _ := env.IssueToken(tb, env.AdminKey, "", account.ScopeReadUsers)
	return throttled{proxy: proxy, table: table, env: env, token: token}
}

// verify sends GET /v1/auth/verify with the token, under ctx, to h, and
// returns the answer and how long it took.
func (s throttled) verify(ctx context.Context, h http.Handler) (*httpapitest.Response, time.Duration) {
	req := httptest.NewRequestWithContext(ctx, http.MethodGet, "/v1/auth/verify", nil)
	req.Header.Set("Authorization", "Bearer "+s.token)
	rec := httptest.NewRecorder()
	start := time.Now()
	h.ServeHTTP(rec, req)
	took := time.Since(start)
	return &httpapitest.Response{Response: rec.Result(), Body: rec.Body.Bytes(), Request: req}, took
}

// TestThrottling: a throttled table costs a verify a few quick retries,
// not the call's whole timeout. Each retry waits less than a tenth of the
// timeout, so a verify that every retry finds throttled is answered 503
// unavailable with Retry-After within a fifth of it (and the round trips),
// after exactly MaxAttempts calls; a retry is not made when less than a
// fifth is left before the caller's deadline; and a table that throttles
// a share of the calls is still read through the retries.
func TestThrottling(t *testing.T) {
	const timeout = dynamostore.DefaultTimeout
	// The SDK's default waits (up to 2 s, then up to 4 s) exceed this
	// bound in nearly every verify, and five of them all within it
	// happen about once in 10,000 runs.
	const bound = timeout/5 + time.Second

	t.Run("WireFormat", func(t *testing.T) {
		// The proxy's answer is what the SDK reads as DynamoDB throttling.
		proxy := NewThrottler(t, dynamotest.Endpoint(t))
		proxy.Throttle(1)
		_, err := proxy.Client().GetItem(t.Context(), &dynamodb.GetItemInput{
			TableName: aws.String("any"),
			Key:       map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "a"}, "sk": &types.AttributeValueMemberS{Value: "b"}},
		}, func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
		var throttled *types.ProvisionedThroughputExceededException
		if !errors.As(err, &throttled) {
			t.Fatalf("GetItem through the throttling proxy: got %v, want ProvisionedThroughputExceededException", err)
		}
	})

	t.Run("AllThrottled", func(t *testing.T) {
		s := newThrottled(t)
		h := s.handler(t, timeout)
		s.proxy.Throttle(1)
		const verifies = 5
		before := s.proxy.BatchGets()
		for range verifies {
			res, took := s.verify(t.Context(), h)
			s.env.CheckResponse(t, res)
			if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" ||
				res.Header.Get("Content-Type") != "application/problem+json" {
				t.Fatalf("verify on a throttled table: %d, Retry-After %q, %s; want 503 problem+json with Retry-After",
					res.StatusCode, res.Header.Get("Retry-After"), res.Header.Get("Content-Type"))
			}
			if p := res.Map(t); p["code"] != "unavailable" {
				t.Errorf("verify on a throttled table: code %v, want unavailable", p["code"])
			}
			if took > bound {
				t.Errorf("verify on a throttled table answered after %v, want within %v", took, bound)
			}
		}
		if after := s.proxy.BatchGets(); after-before != verifies*dynamostore.MaxAttempts {
			t.Errorf("verify's calls to DynamoDB (BatchGetItem) for %d verifies: got %d, want %d (MaxAttempts each)", verifies, after-before, verifies*dynamostore.MaxAttempts)
		}
	})

	t.Run("CallerDeadline", func(t *testing.T) {
		// Less than a fifth of the timeout left (a Lambda invocation near
		// its end): no retry, and the answer before the caller's deadline.
		s := newThrottled(t)
		h := s.handler(t, timeout)
		s.proxy.Throttle(1)
		const left = timeout / 6
		ctx, cancel := context.WithTimeout(t.Context(), left)
		defer cancel()
		before := s.proxy.BatchGets()
		res, took := s.verify(ctx, h)
		if res.StatusCode != http.StatusServiceUnavailable || took >= left {
			t.Errorf("verify with %v left: %d after %v, want 503 before the deadline", left, res.StatusCode, took)
		}
		if after := s.proxy.BatchGets(); after-before != 1 {
			t.Errorf("verify's calls to DynamoDB (BatchGetItem) with %v left: got %d, want 1", left, after-before)
		}
	})

	t.Run("PartlyThrottled", func(t *testing.T) {
		// DynamoDB Local answers the calls that pass: the tests' timeout,
		// for a loaded machine.
		s := newThrottled(t)
		h := s.handler(t, dynamotest.Timeout)
		const share, verifies = 0.3, 50
		s.proxy.Throttle(share)
		before, _ := s.proxy.Calls()
		ok := 0
		for range verifies {
			res, _ := s.verify(t.Context(), h)
			switch res.StatusCode {
			case http.StatusOK:
				ok++
			case http.StatusServiceUnavailable:
			default:
				t.Fatalf("verify on a table throttling %v of calls: %d %s, want 200 or 503", share, res.StatusCode, res.Body)
			}
		}
		// Three attempts fail together 2.7% of the time (more than 7
		// failures in 50: about once in 10,000 runs); one, 30%.
		if ok < 43 {
			t.Errorf("verifies answered 200 with %v of calls throttled: %d of %d, want at least 43", share, ok, verifies)
		}
		if calls, _ := s.proxy.Calls(); calls-before <= verifies {
			t.Errorf("calls to DynamoDB for %d verifies: %d, want retries", verifies, calls-before)
		}
	})
}

// BenchmarkVerifyThrottled measures verifies answered a second, and their
// latency, at the verify path over a table behind a Throttler that
// throttles a share of the calls, with this store's retryer ("sized") and
// with the SDK's default one ("sdk", the store before): loadWorkers
// verifiers at once, each with a client and store of its own as each
// Lambda execution environment has (so a retry quota of its own), each
// verify waited for before the next. Run it with a fixed count, as
// scripts/throttle-bench.sh does: -benchtime=320x.
func BenchmarkVerifyThrottled(b *testing.B) {
	for _, share := range []float64{0, 0.3, 1} {
		for _, retryer := range []string{"sdk", "sized"} {
			b.Run(fmt.Sprintf("share=%v/retryer=%s", share, retryer), func(b *testing.B) {
				var opts []dynamostore.Option
				if retryer == "sdk" {
					opts = append(opts, dynamostore.WithSDKRetryer())
				}
				s := newThrottled(b)
				handlers := make([]http.Handler, loadWorkers)
				for i := range handlers {
					handlers[i] = s.handler(b, dynamostore.DefaultTimeout, opts...)
				}
				s.proxy.Throttle(share)
				b.ResetTimer()
				latencies, ok := s.load(handlers, b.N)
				elapsed := b.Elapsed()
				b.StopTimer()
				slices.Sort(latencies)
				b.ReportMetric(0, "ns/op")
				b.ReportMetric(float64(b.N)/elapsed.Seconds(), "answers/s")
				b.ReportMetric(float64(ok)/float64(b.N)*100, "%ok")
				b.ReportMetric(ms(latencies[len(latencies)/2]), "p50-ms")
				b.ReportMetric(ms(latencies[len(latencies)*99/100]), "p99-ms")
			})
		}
	}
}

// loadWorkers is how many verifies the load keeps in flight.
const loadWorkers = 8

// handler returns a stack over the table through the proxy, with a
// client and store of its own (the call timeout given), that accepts s's
// token: as one Lambda execution environment has.
func (s throttled) handler(tb testing.TB, timeout time.Duration, opts ...dynamostore.Option) http.Handler {
	tb.Helper()
	store := dynamostore.New(s.proxy.Client(), s.table, append([]dynamostore.Option{dynamostore.WithTimeout(timeout)}, opts...)...)
	asm, err := assembly.New(assembly.Parts{
		Store: store, CursorKey: bytes.Repeat([]byte("k"), 32), Issuer: httpapitest.Issuer,
		SigningKey: s.env.PrivateKey, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		tb.Fatal(err)
	}
	return asm.Handler()
}

// load sends n verifies, one at a time on each handler, and returns their
// latencies and how many were answered 200.
func (s throttled) load(handlers []http.Handler, n int) ([]time.Duration, int) {
	var next, ok atomic.Int64
	latencies := make([]time.Duration, n)
	var wg sync.WaitGroup
	for _, h := range handlers {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(n); i = next.Add(1) - 1 {
				res, took := s.verify(context.Background(), h)
				latencies[i] = took
				if res.StatusCode == http.StatusOK {
					ok.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return latencies, int(ok.Load())
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

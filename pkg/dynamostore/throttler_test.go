package dynamostore_test

import (
	"io"
	"log"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"latchkey/pkg/dynamostore/dynamotest"
)

// ThrottledBody is what DynamoDB answers a call to a throttled table, with
// HTTP status 400: the wire format of the JSON 1.0 protocol, which the SDK
// reads as *types.ProvisionedThroughputExceededException.
const ThrottledBody = `{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",` +
	`"message":"The level of configured provisioned throughput for the table was exceeded. Consider increasing your provisioning level with the UpdateTable API."}`

// Throttler is a DynamoDB that throttles: an HTTP proxy in front of a
// DynamoDB Local that answers a share of the calls itself, as a throttled
// table does (ThrottledBody), and passes the others on. It is closed when
// the test ends.
type Throttler struct {
	// URL is the proxy's address, for a client's BaseEndpoint.
	URL string

	share     atomic.Uint64 // math.Float64bits of the share throttled
	calls     atomic.Int64
	batchGets atomic.Int64 // of calls, the BatchGetItems: a verify's read
	throttled atomic.Int64
	seq       atomic.Int64
}

// NewThrottler starts a proxy to the DynamoDB at endpoint that throttles
// nothing until Throttle says otherwise.
func NewThrottler(tb testing.TB, endpoint string) *Throttler {
	tb.Helper()
	target, err := url.Parse(endpoint)
	if err != nil {
		tb.Fatalf("DynamoDB endpoint %q: %v", endpoint, err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	// Enough idle connections for a load test's clients: the default
	// two would open and close one per call.
	proxy.Transport = &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256}
	// A call its client abandoned at its deadline is expected under
	// throttling, and answered 502 to nobody: not worth a log line.
	proxy.ErrorLog = log.New(io.Discard, "", 0)
	t := &Throttler{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.calls.Add(1)
		if r.Header.Get("X-Amz-Target") == batchGetItemTarget {
			t.batchGets.Add(1)
		}
		if share := math.Float64frombits(t.share.Load()); share > 0 && rand.Float64() < share {
			t.throttled.Add(1)
			w.Header().Set("Content-Type", "application/x-amz-json-1.0")
			w.Header().Set("x-amzn-RequestId", "THROTTLED"+strconv.FormatInt(t.seq.Add(1), 10))
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(ThrottledBody))
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	tb.Cleanup(srv.Close)
	t.URL = srv.URL
	return t
}

// Throttle sets the share of the calls from now on that are throttled,
// from 0 (none) to 1 (all).
func (t *Throttler) Throttle(share float64) {
	t.share.Store(math.Float64bits(share))
}

// batchGetItemTarget is the X-Amz-Target of a BatchGetItem call.
const batchGetItemTarget = "DynamoDB_20120810.BatchGetItem"

// BatchGets returns how many BatchGetItem calls the proxy received: a
// verify's read, without the process's own reads beside it (the formats
// item, every account.FormatsRefresh).
func (t *Throttler) BatchGets() int64 { return t.batchGets.Load() }

// Calls returns how many calls the proxy received, and how many of them
// it throttled.
func (t *Throttler) Calls() (calls, throttled int64) {
	return t.calls.Load(), t.throttled.Load()
}

// Client returns a client for the proxy, built like NewClient's: each
// client has a retryer, and its retry quota, of its own.
func (t *Throttler) Client(optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	return dynamotest.ClientAt(t.URL, optFns...)
}

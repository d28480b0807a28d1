package deploytest_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"

	"latchkey/pkg/account"
	"latchkey/pkg/boltstore"
	"latchkey/pkg/dynamostore"
	"latchkey/pkg/dynamostore/dynamotest"
	"latchkey/pkg/lambdaapp"
	"latchkey/pkg/lambdaapp/replay"
)

// eventsDir is events/ at the repository root.
const eventsDir = "../../events"

// backend is a fresh, seeded store for one replay.
type backend struct {
	store account.Store
	keys  lambdaapp.PublicKeyStore
	// calls records the IAM actions of the DynamoDB requests made through
	// store; nil over bbolt.
	calls *callRecorder
}

// newBackend returns a seeded store: a new table in DynamoDB Local when
// LATCHKEY_TEST_DYNAMODB_ENDPOINT is set, else bbolt in a temp dir. The
// fixture's public key is published, as the auth function would have done.
func newBackend(tb testing.TB) backend {
	tb.Helper()
	ctx := context.Background()
	var b backend
	if os.Getenv(dynamotest.EndpointEnv) != "" {
		b = dynamoBackend(tb)
	} else {
		s, err := boltstore.Open(filepath.Join(tb.TempDir(), "latchkey.db"))
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { s.Close() })
		b = backend{store: s, keys: &replay.MemoryKeys{}}
	}
	if err := replay.Seed(ctx, b.store); err != nil {
		tb.Fatal(err)
	}
	if err := replay.PublishKeys(ctx, b.keys); err != nil {
		tb.Fatal(err)
	}
	if b.calls != nil {
		b.calls.reset() // the seed is the test's doing, not the function's
	}
	return b
}

// dynamoBackend creates a table from dynamostore.TableDefinition with an
// unrecorded client and returns a store over a recording one.
func dynamoBackend(tb testing.TB) backend {
	tb.Helper()
	table := dynamotest.NewTable(tb, dynamotest.NewClient(tb))
	rec := &callRecorder{}
	client := dynamotest.NewClient(tb, func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, rec.register) })
	s := dynamostore.New(client, table)
	return backend{store: s, keys: s, calls: rec}
}

// callRecorder is SDK middleware that records, for every DynamoDB request,
// the IAM actions it needs. Transactions need the actions of their parts
// (there is no dynamodb:TransactWriteItems action), so it looks inside.
type callRecorder struct {
	mu      sync.Mutex
	actions map[string]bool
	index   bool // a Query or Scan named an index
}

func (r *callRecorder) register(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("RecordIAMActions",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			r.record(awsmiddleware.GetOperationName(ctx), in.Parameters)
			return next.HandleInitialize(ctx, in)
		}), middleware.Before)
}

func (r *callRecorder) record(op string, params any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.actions == nil {
		r.actions = map[string]bool{}
	}
	add := func(a string) { r.actions["dynamodb:"+a] = true }
	switch in := params.(type) {
	case *dynamodb.TransactWriteItemsInput:
		for _, it := range in.TransactItems {
			switch {
			case it.Put != nil:
				add("PutItem")
			case it.Update != nil:
				add("UpdateItem")
			case it.Delete != nil:
				add("DeleteItem")
			case it.ConditionCheck != nil:
				add("ConditionCheckItem")
			}
		}
	case *dynamodb.TransactGetItemsInput:
		add("GetItem")
	case *dynamodb.QueryInput:
		add(op)
		r.index = r.index || in.IndexName != nil
	case *dynamodb.ScanInput:
		add(op)
		r.index = r.index || in.IndexName != nil
	default:
		add(op)
	}
}

func (r *callRecorder) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.actions, r.index = nil, false
}

// merge adds what r recorded to actions and returns whether an index was used.
func (r *callRecorder) merge(actions map[string]bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for a := range r.actions {
		actions[a] = true
	}
	return r.index
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// discard is a logger for tests that do not look at logs.
var discard = slog.New(slog.DiscardHandler)

package deploytest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"latchkey/pkg/account"
	"latchkey/pkg/boltstore"
	"latchkey/pkg/dynamostore"
	"latchkey/pkg/dynamostore/dynamotest"
	"latchkey/pkg/lambdaapp"
	"latchkey/pkg/lambdaapp/replay"
	"latchkey/pkg/tablestore"
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
	// snapshot returns every item the store holds but idempotency
	// records and API keys' last uses (which authenticating a request
	// records, whatever the request then does) and status list leases
	// (which a process takes, a block at a time, before it signs a token
	// whose write may yet be refused), each as a string, by its key.
	snapshot func(tb testing.TB) map[string]string
	// table is the DynamoDB table; "" over bbolt.
	table string
}

// newBackend returns a seeded store: a new table in DynamoDB Local when
// LATCHKEY_TEST_DYNAMODB_ENDPOINT is set, else bbolt in a temp dir. The
// fixture's public key is published, as the auth function would have done,
// and its issuer recorded, as the IssuerConfig custom resource would have.
func newBackend(tb testing.TB) backend {
	tb.Helper()
	if os.Getenv(dynamotest.EndpointEnv) != "" {
		return seededDynamo(tb)
	}
	return seeded(tb, boltBackend(tb))
}

// boltBackend opens a bbolt store in a temp dir.
func boltBackend(tb testing.TB) backend {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "latchkey.db")
	s, err := boltstore.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return backend{store: s, keys: &replay.MemoryKeys{}, snapshot: func(tb testing.TB) map[string]string { return boltSnapshot(tb, path) }}
}

// seeded writes the fixture into b, publishes its key and records its
// issuer, and returns b.
func seeded(tb testing.TB, b backend) backend {
	tb.Helper()
	ctx := context.Background()
	if err := replay.Seed(ctx, b.store); err != nil {
		tb.Fatal(err)
	}
	if err := replay.PublishKeys(ctx, b.keys); err != nil {
		tb.Fatal(err)
	}
	if err := b.keys.PutIssuer(ctx, replay.Issuer); err != nil {
		tb.Fatal(err)
	}
	if b.calls != nil {
		b.calls.reset() // the seed is the test's doing, not the function's
	}
	return b
}

// seedItems are the items of a table seeded through the store, written
// once (the fixture's times are fixed, and its rate-limit counters are
// today's and tomorrow's) and copied into each table seededDynamo makes:
// a few batch writes instead of the seed's twenty-odd transactions.
var seedItems struct {
	once  sync.Once
	items []map[string]types.AttributeValue
}

// seededDynamo returns a DynamoDB backend over a new table holding the
// seed's items, as seeded(tb, dynamoBackend(tb)) would write them.
func seededDynamo(tb testing.TB) backend {
	tb.Helper()
	client := dynamotest.NewClient(tb)
	seedItems.once.Do(func() {
		b := seeded(tb, dynamoBackend(tb))
		seedItems.items = dynamotest.Items(tb, client, b.table)
	})
	if len(seedItems.items) == 0 {
		tb.Fatal("no seeded items: seeding the first table failed")
	}
	return dynamoBackendOn(tb, dynamotest.NewTableWith(tb, client, seedItems.items))
}

// dynamoBackend creates a table from tablestore.TableDefinition with an
// unrecorded client and returns a store over a recording one.
func dynamoBackend(tb testing.TB) backend {
	tb.Helper()
	return dynamoBackendOn(tb, dynamotest.NewTable(tb, dynamotest.NewClient(tb)))
}

// dynamoBackendOn returns a store over table through a recording client.
func dynamoBackendOn(tb testing.TB, table string) backend {
	tb.Helper()
	rec := &callRecorder{}
	client := dynamotest.NewClient(tb, func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, rec.register) })
	s := dynamostore.New(client, table, dynamostore.WithTimeout(dynamotest.Timeout))
	raw := dynamotest.NewClient(tb)
	return backend{store: s, keys: s, calls: rec, table: table, snapshot: func(tb testing.TB) map[string]string { return tableSnapshot(tb, raw, table) }}
}

// sameTable returns another store over b's table (b itself over bbolt),
// with a recorder of its own: what a second function, such as the
// authorizer, reads through its own client.
func (b backend) sameTable(tb testing.TB) backend {
	tb.Helper()
	if b.table == "" {
		return b
	}
	rec := &callRecorder{}
	client := dynamotest.NewClient(tb, func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, rec.register) })
	s := dynamostore.New(client, b.table, dynamostore.WithTimeout(dynamotest.Timeout))
	return backend{store: s, keys: s, calls: rec, table: b.table, snapshot: b.snapshot}
}

// tableSnapshot scans the table, strongly consistently. The deleting flag
// is left out: it is what a delete cut off before its last transaction
// leaves (docs/dynamodb.md, Cascades), gone to readers until a retry.
func tableSnapshot(tb testing.TB, client *dynamodb.Client, table string) map[string]string {
	tb.Helper()
	out := map[string]string{}
	pages := dynamodb.NewScanPaginator(client, &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(context.Background())
		if err != nil {
			tb.Fatal(err)
		}
		for _, av := range page.Items {
			snapshotItem(tb, out, av)
		}
	}
	return out
}

// snapshotItem adds av to out, by its key, unless it is an idempotency
// record, an API key's last use (which authenticating a request records,
// whatever the request then does) or a status list lease (see backend);
// the deleting flag is left out.
func snapshotItem(tb testing.TB, out map[string]string, av map[string]types.AttributeValue) {
	tb.Helper()
	var item map[string]any
	if err := attributevalue.UnmarshalMap(av, &item); err != nil {
		tb.Fatal(err)
	}
	pk, _ := item["pk"].(string)
	if strings.HasPrefix(pk, idempotencyPartition) || sharedKinds[fmt.Sprint(item["sk"])] != "" || pk == "STATUSLISTS" {
		return
	}
	delete(item, "deleting")
	b, err := json.Marshal(item)
	if err != nil {
		tb.Fatal(err)
	}
	out[pk+" "+fmt.Sprint(item["sk"])] = string(b)
}

// boltSnapshot reads a copy of the bbolt file at path, which the store
// holds open: between transactions the file is consistent. It holds the
// same table as DynamoDB, and its items are read as tableSnapshot reads
// them.
func boltSnapshot(tb testing.TB, path string) map[string]string {
	tb.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	cp := filepath.Join(tb.TempDir(), "snapshot.db")
	if err := os.WriteFile(cp, raw, 0o600); err != nil {
		tb.Fatal(err)
	}
	// A copy to read, not to sweep: the clock at the epoch, before every
	// expiry.
	t, err := boltstore.OpenTable(cp,
		boltstore.WithTTL(tablestore.TTLAttribute), boltstore.WithSweepInterval(0),
		boltstore.WithClock(func() time.Time { return time.Unix(0, 0) }))
	if err != nil {
		tb.Fatal(err)
	}
	defer t.Close()
	out := map[string]string{}
	err = t.Items(func(item tablestore.Item) error {
		snapshotItem(tb, out, dynamostore.ToAV(item))
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// callRecorder is SDK middleware that records, for every DynamoDB request,
// the IAM actions it needs and the requests IAM authorizes, with the
// partition keys they touch. Transactions are authorized per item, with the
// action of each part (there is no dynamodb:TransactWriteItems action), so
// it looks inside.
type callRecorder struct {
	mu       sync.Mutex
	actions  map[string]bool
	ops      map[string]bool // DynamoDB API operations called
	index    bool            // a Query or Scan named an index
	requests []iamRequest
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
		r.actions, r.ops = map[string]bool{}, map[string]bool{}
	}
	r.ops[op] = true
	// add records one authorized request; items are the keys (or whole
	// items) it touches, nil when their partition keys are not known.
	add := func(a string, index bool, items ...map[string]types.AttributeValue) {
		r.actions["dynamodb:"+a] = true
		req := iamRequest{Action: "dynamodb:" + a, Index: index}
		for _, it := range items {
			req.LeadingKeys = append(req.LeadingKeys, attrString(it["pk"]))
			if len(items) == 1 {
				req.SortKey = attrString(it["sk"])
			}
		}
		r.requests = append(r.requests, req)
	}
	switch in := params.(type) {
	case *dynamodb.TransactWriteItemsInput:
		for _, it := range in.TransactItems {
			switch {
			case it.Put != nil:
				add("PutItem", false, it.Put.Item)
			case it.Update != nil:
				add("UpdateItem", false, it.Update.Key)
			case it.Delete != nil:
				add("DeleteItem", false, it.Delete.Key)
			case it.ConditionCheck != nil:
				add("ConditionCheckItem", false, it.ConditionCheck.Key)
			}
		}
	case *dynamodb.TransactGetItemsInput:
		for _, it := range in.TransactItems {
			add("GetItem", false, it.Get.Key)
		}
	case *dynamodb.GetItemInput:
		add(op, false, in.Key)
	case *dynamodb.PutItemInput:
		add(op, false, in.Item)
	case *dynamodb.UpdateItemInput:
		add(op, false, in.Key)
	case *dynamodb.DeleteItemInput:
		add(op, false, in.Key)
	case *dynamodb.BatchGetItemInput:
		var keys []map[string]types.AttributeValue
		for _, ka := range in.RequestItems {
			keys = append(keys, ka.Keys...)
		}
		add(op, false, keys...)
	case *dynamodb.BatchWriteItemInput:
		var items []map[string]types.AttributeValue
		for _, ws := range in.RequestItems {
			for _, w := range ws {
				if w.PutRequest != nil {
					items = append(items, w.PutRequest.Item)
				} else if w.DeleteRequest != nil {
					items = append(items, w.DeleteRequest.Key)
				}
			}
		}
		add(op, false, items...)
	case *dynamodb.QueryInput:
		add(op, in.IndexName != nil)
		r.index = r.index || in.IndexName != nil
	case *dynamodb.ScanInput:
		add(op, in.IndexName != nil)
		r.index = r.index || in.IndexName != nil
	default:
		// Table-level calls (DescribeTable and the like): no items.
		add(op, false)
	}
}

// attrString is the value of a string attribute, "" for any other.
func attrString(v types.AttributeValue) string {
	s, _ := v.(*types.AttributeValueMemberS)
	if s == nil {
		return ""
	}
	return s.Value
}

func (r *callRecorder) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.actions, r.ops, r.index, r.requests = nil, nil, false, nil
}

// merge adds what r recorded to actions, ops and requests and returns
// whether an index was used.
func (r *callRecorder) merge(actions, ops map[string]bool, requests *[]iamRequest) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for a := range r.actions {
		actions[a] = true
	}
	for o := range r.ops {
		ops[o] = true
	}
	*requests = append(*requests, r.requests...)
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

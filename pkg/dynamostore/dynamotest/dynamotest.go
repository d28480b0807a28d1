// Package dynamotest connects tests to a real DynamoDB Local: the endpoint
// that scripts/dynamodb-local.sh exports, a client for it, and fresh tables
// made from the same definition the template deploys.
package dynamotest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"latchkey/pkg/dynamostore"
	"latchkey/pkg/tablestore"
)

// EndpointEnv names the variable that holds DynamoDB Local's address.
const EndpointEnv = "LATCHKEY_TEST_DYNAMODB_ENDPOINT"

// Endpoint returns DynamoDB Local's address, or skips the test with a
// one-line reason when there is none (`go test` without `make test`).
func Endpoint(tb testing.TB) string {
	tb.Helper()
	ep := os.Getenv(EndpointEnv)
	if ep == "" {
		tb.Skip("set " + EndpointEnv + " or run make test")
	}
	return ep
}

// NewClient returns a client for DynamoDB Local, built without the shared
// AWS configuration so that a developer's profile cannot point a test at a
// real account. optFns may add middleware.
func NewClient(tb testing.TB, optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	tb.Helper()
	return ClientAt(Endpoint(tb), optFns...)
}

// ClientAt returns a client for the DynamoDB (Local, or a proxy in front
// of it) at endpoint, with the tests' region and static credentials.
func ClientAt(endpoint string, optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	opts := dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("local", "local", ""),
	}
	return dynamodb.New(opts, optFns...)
}

var tableSeq atomic.Int64

// NewTable creates a fresh table from tablestore.TableDefinition, deleted
// when the test ends (unless the test deleted it itself), and returns its
// name.
func NewTable(tb testing.TB, client *dynamodb.Client) string {
	tb.Helper()
	name := fmt.Sprintf("latchkey-test-%d-%d", time.Now().UnixNano(), tableSeq.Add(1))
	if err := dynamostore.CreateTable(context.Background(), client, name); err != nil {
		tb.Fatalf("CreateTable: %v", err)
	}
	tb.Cleanup(func() {
		_, err := client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
		var gone *types.ResourceNotFoundException
		if err != nil && !errors.As(err, &gone) {
			tb.Errorf("DeleteTable %s: %v", name, err)
		}
	})
	return name
}

// Items returns every item of table, read with a consistent Scan: a
// fixture written once through a store, for NewTableWith to give each test
// a table of its own holding the same items.
func Items(tb testing.TB, client *dynamodb.Client, table string) []map[string]types.AttributeValue {
	tb.Helper()
	var items []map[string]types.AttributeValue
	pages := dynamodb.NewScanPaginator(client, &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(context.Background())
		if err != nil {
			tb.Fatalf("Scan %s: %v", table, err)
		}
		items = append(items, page.Items...)
	}
	return items
}

// NewTableWith creates a fresh table as NewTable does and puts items in
// it, 25 to a BatchWriteItem: a few calls where writing the fixture
// through a store takes one or more per item.
func NewTableWith(tb testing.TB, client *dynamodb.Client, items []map[string]types.AttributeValue) string {
	tb.Helper()
	name := NewTable(tb, client)
	for chunk := range slices.Chunk(items, 25) {
		writes := make([]types.WriteRequest, len(chunk))
		for i, item := range chunk {
			writes[i] = types.WriteRequest{PutRequest: &types.PutRequest{Item: item}}
		}
		pending := map[string][]types.WriteRequest{name: writes}
		for len(pending) > 0 {
			out, err := client.BatchWriteItem(context.Background(), &dynamodb.BatchWriteItemInput{RequestItems: pending})
			if err != nil {
				tb.Fatalf("BatchWriteItem %s: %v", name, err)
			}
			pending = out.UnprocessedItems
		}
	}
	return name
}

// Timeout is the per-call deadline of the tests' stores. The production
// default (dynamostore.DefaultTimeout) is tuned for an unloaded DynamoDB; on a
// shared, loaded test machine a slow answer must slow a test down, not fail
// it. Only the deadline tests use a short one, on purpose. It is 10 s on a
// machine whose load is within its cores, scaled up with the load when the
// test binary starts (loadScale), and set outright by TimeoutEnv. It is no
// longer than it need be because the event feed holds events back for the
// store's timeout plus 2 s (tablestore.EventLag), and each event test waits
// that long: on a busy machine the event tests take longer, as the feed
// itself would.
var Timeout = testTimeout()

// TimeoutEnv names the variable that sets Timeout (a Go duration, like 30s).
const TimeoutEnv = "LATCHKEY_TEST_DYNAMODB_TIMEOUT"

func testTimeout() time.Duration {
	if d, err := time.ParseDuration(os.Getenv(TimeoutEnv)); err == nil && d > 0 {
		return d
	}
	return time.Duration(float64(10*time.Second) * loadScale())
}

// loadScale is the one-minute load average per core, from 1 (a machine
// within its cores, or one that does not say) to 4: a first run of make
// test on a fresh clone beside other work met loads of 11 to 14 on 2 cores,
// where DynamoDB Local (a JVM on the same cores) answered some calls after
// more than 10 s.
func loadScale() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 1
	}
	var load float64
	if _, err := fmt.Sscan(string(b), &load); err != nil {
		return 1
	}
	return min(max(load/float64(runtime.NumCPU()), 1), 4)
}

// NewStore returns a store over a fresh table, with the tests' Timeout.
func NewStore(tb testing.TB) *tablestore.Store {
	tb.Helper()
	client := NewClient(tb)
	return dynamostore.New(client, NewTable(tb, client), dynamostore.WithTimeout(Timeout))
}

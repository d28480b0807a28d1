package dynamostore_test

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"latchkey/pkg/account"
	"latchkey/pkg/dynamostore"
	"latchkey/pkg/storetest"
)

// endpointEnv names the DynamoDB Local endpoint that scripts/dynamodb-local.sh
// exports; make test runs the tests under that script.
const endpointEnv = "LATCHKEY_TEST_DYNAMODB_ENDPOINT"

// endpoint returns the DynamoDB Local endpoint or skips the test.
func endpoint(tb testing.TB) string {
	tb.Helper()
	ep := os.Getenv(endpointEnv)
	if ep == "" {
		tb.Skip("set LATCHKEY_TEST_DYNAMODB_ENDPOINT or run make test")
	}
	return ep
}

// newClient returns a client for DynamoDB Local, built without the shared
// AWS configuration so that a developer's profile cannot point a test at a
// real account. optFns may add middleware (see meter).
func newClient(tb testing.TB, optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	tb.Helper()
	opts := dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint(tb)),
		Credentials:  credentials.NewStaticCredentialsProvider("local", "local", ""),
	}
	return dynamodb.New(opts, optFns...)
}

var tableSeq atomic.Int64

// newTable creates a fresh table from dynamostore.TableDefinition, deleted
// when the test ends, and returns its name.
func newTable(tb testing.TB, client *dynamodb.Client) string {
	tb.Helper()
	name := fmt.Sprintf("latchkey-test-%d-%d", time.Now().UnixNano(), tableSeq.Add(1))
	ctx := context.Background()
	if err := dynamostore.CreateTable(ctx, client, name); err != nil {
		tb.Fatalf("CreateTable: %v", err)
	}
	tb.Cleanup(func() {
		if _, err := client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)}); err != nil {
			tb.Errorf("DeleteTable %s: %v", name, err)
		}
	})
	return name
}

// TestStore runs the contract suite that every account.Store passes, each
// subtest on a table of its own.
func TestStore(t *testing.T) {
	client := newClient(t)
	storetest.Run(t, func(t *testing.T) account.Store {
		s := dynamostore.New(client, newTable(t, client))
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}

func TestCreateTable(t *testing.T) {
	t.Run("Idempotent", func(t *testing.T) {
		// The local server calls CreateTable on every start.
		client := newClient(t)
		name := newTable(t, client)
		if err := dynamostore.CreateTable(t.Context(), client, name); err != nil {
			t.Fatalf("CreateTable of an existing table: %v", err)
		}
		ttl, err := client.DescribeTimeToLive(t.Context(), &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(name)})
		if err != nil {
			t.Fatalf("DescribeTimeToLive: %v", err)
		}
		if got := aws.ToString(ttl.TimeToLiveDescription.AttributeName); got != dynamostore.TTLAttribute {
			t.Errorf("TTL attribute: got %q, want %q", got, dynamostore.TTLAttribute)
		}
	})
	t.Run("MatchesDefinition", func(t *testing.T) {
		client := newClient(t)
		name := newTable(t, client)
		out, err := client.DescribeTable(t.Context(), &dynamodb.DescribeTableInput{TableName: aws.String(name)})
		if err != nil {
			t.Fatalf("DescribeTable: %v", err)
		}
		def := dynamostore.TableDefinition(name)
		if got, want := len(out.Table.GlobalSecondaryIndexes), len(def.GlobalSecondaryIndexes); got != want {
			t.Fatalf("GSIs: got %d, want %d", got, want)
		}
		if got, want := aws.ToString(out.Table.GlobalSecondaryIndexes[0].IndexName), dynamostore.GSI1; got != want {
			t.Errorf("GSI name: got %q, want %q", got, want)
		}
		if got, want := len(out.Table.AttributeDefinitions), len(def.AttributeDefinitions); got != want {
			t.Errorf("attribute definitions: got %d, want %d", got, want)
		}
	})
}

func TestPublicKeys(t *testing.T) {
	client := newClient(t)
	s := dynamostore.New(client, newTable(t, client))
	ctx := t.Context()
	_, err := s.PublicKeys(ctx)
	if !account.IsCode(err, account.CodeNotFound) {
		t.Fatalf("PublicKeys before any put: got %v, want code not_found", err)
	}
	for _, jwks := range []string{`{"keys":[{"kid":"a"}]}`, `{"keys":[{"kid":"b"}]}`} {
		if err := s.PutPublicKeys(ctx, []byte(jwks)); err != nil {
			t.Fatalf("PutPublicKeys: %v", err)
		}
		got, err := s.PublicKeys(ctx)
		if err != nil {
			t.Fatalf("PublicKeys: %v", err)
		}
		if string(got) != jwks {
			t.Errorf("PublicKeys: got %s, want %s", got, jwks)
		}
	}
}

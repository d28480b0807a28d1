package dynamostore_test

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"latchkey/pkg/account"
	"latchkey/pkg/dynamostore"
	"latchkey/pkg/dynamostore/dynamotest"
	"latchkey/pkg/storetest"
)

// TestStore runs the contract suite that every account.Store passes, each
// subtest on a table of its own.
func TestStore(t *testing.T) {
	client := dynamotest.NewClient(t)
	storetest.Run(t, func(t *testing.T) account.Store {
		s := dynamostore.New(client, dynamotest.NewTable(t, client))
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}

func TestCreateTable(t *testing.T) {
	t.Run("Idempotent", func(t *testing.T) {
		// The local server calls CreateTable on every start.
		client := dynamotest.NewClient(t)
		name := dynamotest.NewTable(t, client)
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
}

func TestPublicKeys(t *testing.T) {
	client := dynamotest.NewClient(t)
	s := dynamostore.New(client, dynamotest.NewTable(t, client))
	ctx := t.Context()
	_, err := s.PublicKeys(ctx)
	if !account.IsCode(err, account.CodeNotFound) {
		t.Fatalf("PublicKeys before any put: got %v, want code not_found", err)
	}
	for i, jwks := range []string{`{"keys":[{"kid":"a"}]}`, `{"keys":[{"kid":"b"}]}`} {
		if err := s.PutPublicKeys(ctx, []byte(jwks), time.UnixMilli(int64(i))); err != nil {
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

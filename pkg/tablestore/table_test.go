package tablestore_test

import (
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"latchkey/pkg/account"
	"latchkey/pkg/dynamostore/dynamotest"
	"latchkey/pkg/tablestore"
)

// TestCreateTable_AsDefined: the table DynamoDB Local reports after
// CreateTable has exactly the keys, attribute types, billing mode, index and
// TTL of TableDefinition (TestTemplate_Table holds template.yaml to the same
// definition).
func TestCreateTable_AsDefined(t *testing.T) {
	client := dynamotest.NewClient(t)
	name := dynamotest.NewTable(t, client)
	out, err := client.DescribeTable(t.Context(), &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	if err != nil {
		t.Fatalf("DescribeTable: %v", err)
	}
	got, want := out.Table, tablestore.TableDefinition(name)
	if !slices.EqualFunc(got.KeySchema, want.KeySchema, sameKey) {
		t.Errorf("key schema: got %v, want %v", keys(got.KeySchema), keys(want.KeySchema))
	}
	attrs := func(ds []types.AttributeDefinition) []string {
		var out []string
		for _, d := range ds {
			out = append(out, aws.ToString(d.AttributeName)+":"+string(d.AttributeType))
		}
		slices.Sort(out)
		return out
	}
	if g, w := attrs(got.AttributeDefinitions), attrs(want.AttributeDefinitions); !slices.Equal(g, w) {
		t.Errorf("attribute definitions: got %v, want %v", g, w)
	}
	if got.BillingModeSummary == nil || got.BillingModeSummary.BillingMode != want.BillingMode {
		t.Errorf("billing mode: got %+v, want %s", got.BillingModeSummary, want.BillingMode)
	}
	if len(got.GlobalSecondaryIndexes) != len(want.GlobalSecondaryIndexes) {
		t.Fatalf("GSIs: got %d, want %d", len(got.GlobalSecondaryIndexes), len(want.GlobalSecondaryIndexes))
	}
	for i, w := range want.GlobalSecondaryIndexes {
		g := got.GlobalSecondaryIndexes[i]
		if aws.ToString(g.IndexName) != aws.ToString(w.IndexName) || !slices.EqualFunc(g.KeySchema, w.KeySchema, sameKey) ||
			g.Projection == nil || g.Projection.ProjectionType != w.Projection.ProjectionType {
			t.Errorf("GSI %d: got %s %v %+v, want %s %v %s", i, aws.ToString(g.IndexName), keys(g.KeySchema), g.Projection,
				aws.ToString(w.IndexName), keys(w.KeySchema), w.Projection.ProjectionType)
		}
	}
	ttl, err := client.DescribeTimeToLive(t.Context(), &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(name)})
	if err != nil {
		t.Fatalf("DescribeTimeToLive: %v", err)
	}
	if d := ttl.TimeToLiveDescription; d == nil || aws.ToString(d.AttributeName) != tablestore.TTLAttribute || d.TimeToLiveStatus != types.TimeToLiveStatusEnabled {
		t.Errorf("TTL: got %+v, want %s enabled", d, tablestore.TTLAttribute)
	}
}

func sameKey(a, b types.KeySchemaElement) bool {
	return aws.ToString(a.AttributeName) == aws.ToString(b.AttributeName) && a.KeyType == b.KeyType
}

func keys(ks []types.KeySchemaElement) []string {
	var out []string
	for _, k := range ks {
		out = append(out, aws.ToString(k.AttributeName)+" "+string(k.KeyType))
	}
	return out
}

// TestAPIKeyTTL: a key that expires carries the TTL attribute on both of
// its copies, account.ExpiredKeyRetention after its expiry, so DynamoDB
// drops them together; a key that never expires carries none.
func TestAPIKeyTTL(t *testing.T) {
	s := dynamotest.NewStore(t)
	ctx := t.Context()
	now := time.Now().UTC().Truncate(time.Millisecond)
	expiring, forever := newKey(now), newKey(now.Add(time.Millisecond))
	expiring.ExpiresAt = now.Add(time.Hour)
	for _, k := range []account.APIKey{expiring, forever} {
		must(t, s.CreateAPIKey(ctx, account.WriteOptions{}, k), "CreateAPIKey")
	}
	want := expiring.ExpiresAt.Add(account.ExpiredKeyRetention).Unix()
	if byID, byHash, err := s.APIKeyExpireAt(ctx, expiring.ID, expiring.Hash); err != nil || byID != want || byHash != want {
		t.Errorf("expiring key: expire_at %d and %d, %v; want %d on both copies", byID, byHash, err, want)
	}
	if byID, byHash, err := s.APIKeyExpireAt(ctx, forever.ID, forever.Hash); err != nil || byID != 0 || byHash != 0 {
		t.Errorf("key without expiry: expire_at %d and %d, %v; want none", byID, byHash, err)
	}
}

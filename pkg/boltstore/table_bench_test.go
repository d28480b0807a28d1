package boltstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"latchkey/pkg/account"
	"latchkey/pkg/tablestore"
)

// benchItem is the size and shape of an API key record: a dozen
// attributes, strings, numbers, a flag and a small map.
func benchItem(pk string) map[string]types.AttributeValue {
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	return map[string]types.AttributeValue{
		"pk": s(pk), "sk": s("KEY"),
		"gsi1pk": s("KEYS"), "gsi1sk": s("01JDQ4Z5V6X7Y8Z9A0B1C2D3E4"),
		"id":         s("01JDQ4Z5V6X7Y8Z9A0B1C2D3E4"),
		"name":       s("deploy key"),
		"hash":       s("3f2a9c0d4e5b6a7f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f7"),
		"last4":      s("x9Qz"),
		"owner_id":   s("USER#01JDQ4Z5V6X7Y8Z9A0B1C2D3E5"),
		"scopes":     &types.AttributeValueMemberSS{Value: []string{"users:read", "orgs:read"}},
		"version":    &types.AttributeValueMemberN{Value: "3"},
		"expire_at":  &types.AttributeValueMemberN{Value: "1893456000"},
		"disabled":   &types.AttributeValueMemberBOOL{Value: false},
		"created_at": s("2026-11-26T10:00:00Z"),
		"metadata":   &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"team": s("platform")}},
	}
}

// BenchmarkTable_BatchGetItem is the local server's token verify: one
// BatchGetItem of three items.
func BenchmarkTable_BatchGetItem(b *testing.B) {
	tb, name := openTable(b)
	ctx := context.Background()
	var keys []map[string]types.AttributeValue
	for i := range 3 {
		it := benchItem(fmt.Sprintf("KEY#%d", i))
		if _, err := tb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(name), Item: it}); err != nil {
			b.Fatal(err)
		}
		keys = append(keys, map[string]types.AttributeValue{"pk": it["pk"], "sk": it["sk"]})
	}
	in := &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{name: {Keys: keys, ConsistentRead: aws.Bool(true)}}}
	b.ReportAllocs()
	for b.Loop() {
		out, err := tb.BatchGetItem(ctx, in)
		if err != nil || len(out.Responses[name]) != 3 {
			b.Fatalf("got %v, %v", out, err)
		}
	}
}

// BenchmarkTable_TransactWriteItems is a create: a conditional put of an
// item and of its uniqueness guard, and an ADD to a counter, in one
// transaction (with its fsync).
func BenchmarkTable_TransactWriteItems(b *testing.B) {
	tb, name := openTable(b)
	ctx := context.Background()
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		i++
		it := benchItem(fmt.Sprintf("KEY#%d", i))
		_, err := tb.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			{Put: &types.Put{TableName: aws.String(name), Item: it, ConditionExpression: aws.String("attribute_not_exists (#0)"), ExpressionAttributeNames: map[string]string{"#0": "pk"}}},
			{Put: &types.Put{TableName: aws.String(name), Item: map[string]types.AttributeValue{
				"pk": &types.AttributeValueMemberS{Value: fmt.Sprintf("HASH#%d", i)}, "sk": &types.AttributeValueMemberS{Value: "HASH"}, "key_id": it["id"],
			}, ConditionExpression: aws.String("attribute_not_exists (#0)"), ExpressionAttributeNames: map[string]string{"#0": "pk"}}},
			{Update: &types.Update{TableName: aws.String(name), Key: map[string]types.AttributeValue{
				"pk": &types.AttributeValueMemberS{Value: "COUNTER"}, "sk": &types.AttributeValueMemberS{Value: "KEYS"},
			}, UpdateExpression: aws.String("ADD #0 :0"), ExpressionAttributeNames: map[string]string{"#0": "children"},
				ExpressionAttributeValues: map[string]types.AttributeValue{":0": &types.AttributeValueMemberN{Value: "1"}}}},
		}})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTable_TokenStatus is BenchmarkTokenStatus (the store side of a
// verify) on the single-table logic over a Table, to compare with the
// store it is to replace.
func BenchmarkTable_TokenStatus(b *testing.B) {
	tb, name := openTable(b)
	s := tablestore.New(tb, name)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	k := account.APIKey{ID: account.NewID(account.PrefixAPIKey, now), Name: "bench", Hash: account.HashAPIKey("bench"), Last4: "ench", Scopes: []string{"*:*"}, CreatedAt: now}
	tr := account.TokenRecord{ID: account.NewID(account.PrefixToken, now), KeyID: k.ID, Scopes: []string{"read:users"}, IssuedAt: now, ExpiresAt: now.Add(time.Hour)}
	if err := s.CreateAPIKey(ctx, k); err != nil {
		b.Fatal(err)
	}
	if err := s.CreateToken(ctx, tr); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			st, err := s.TokenStatus(ctx, tr.ID, k.ID, nil, "", false)
			if err != nil || st.Key == nil {
				b.Fatalf("TokenStatus: %+v, %v", st, err)
			}
		}
	})
}

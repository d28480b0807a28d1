package boltstore_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"latchkey/pkg/account"
	"latchkey/pkg/boltstore"
	"latchkey/pkg/tablestore"
)

// The store reads a verify's items through the Table's KeyReader.
var _ tablestore.KeyReader = (*boltstore.Table)(nil)

// TestTable_BatchGetKeys: BatchGetKeys answers what BatchGetItem answers
// for the same keys (the items that exist, in the order of their keys),
// and refuses what BatchGetItem refuses, with the same errors.
func TestTable_BatchGetKeys(t *testing.T) {
	tb, name := openTable(t)
	ctx := context.Background()
	var keys [][2]string
	var avs []map[string]types.AttributeValue
	for i := range 4 {
		it := benchItem(fmt.Sprintf("KEY#%d", i))
		if i != 2 { // KEY#2 is asked for and absent
			if _, err := tb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(name), Item: it}); err != nil {
				t.Fatal(err)
			}
		}
		keys = append(keys, [2]string{it["pk"].(*types.AttributeValueMemberS).Value, "KEY"})
		avs = append(avs, map[string]types.AttributeValue{"pk": it["pk"], "sk": it["sk"]})
	}
	got, err := tb.BatchGetKeys(ctx, name, keys)
	if err != nil {
		t.Fatalf("BatchGetKeys: %v", err)
	}
	out, err := tb.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{name: {Keys: avs}}})
	if err != nil {
		t.Fatalf("BatchGetItem: %v", err)
	}
	want := out.Responses[name]
	if len(got) != 3 || !reflect.DeepEqual(got, want) {
		t.Fatalf("BatchGetKeys = %v, BatchGetItem = %v", got, want)
	}
	if pk := got[2]["pk"].(*types.AttributeValueMemberS).Value; pk != "KEY#3" {
		t.Errorf("third item is %s, want KEY#3", pk)
	}

	many := make([][2]string, 101)
	for i := range many {
		many[i] = [2]string{fmt.Sprintf("KEY#%d", i), "KEY"}
	}
	for _, c := range []struct {
		name, table string
		keys        [][2]string
		code        string
	}{
		{"no keys", name, nil, "ValidationException"},
		{"empty hash", name, [][2]string{{"", "KEY"}}, "ValidationException"},
		{"empty range", name, [][2]string{{"KEY#0", ""}}, "ValidationException"},
		{"duplicates", name, [][2]string{{"KEY#0", "KEY"}, {"KEY#1", "KEY"}, {"KEY#0", "KEY"}}, "ValidationException"},
		{"over 100", name, many, "ValidationException"},
		{"another table", "other", keys, "ResourceNotFoundException"},
	} {
		t.Run(c.name, func(t *testing.T) {
			items, err := tb.BatchGetKeys(ctx, c.table, c.keys)
			var ae smithy.APIError
			if !errors.As(err, &ae) || ae.ErrorCode() != c.code {
				t.Fatalf("BatchGetKeys = %v, %v; want %s", items, err, c.code)
			}
		})
	}

	done, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := tb.BatchGetKeys(done, name, keys); !errors.Is(err, context.Canceled) {
		t.Errorf("BatchGetKeys on a canceled context: %v, want context.Canceled", err)
	}
}

// TestTokenStatus_Allocations: a verify's reads on the embedded store
// allocate no more than the SDK-free read path needs. Through
// BatchGetItem (its request and answer maps, a map per key) TokenStatus
// made 33 allocations; through BatchGetKeys 19, 24 with the read copies
// of branch shards, and 17 since a verify reads keyMemo's items without a
// clone, one cursor seeks all its keys, a copy's key is one string and
// batchGetOnce's ConsistentRead flag is made only for BatchGetItem.
// It is a count, not a time, so it holds on a loaded machine.
func TestTokenStatus_Allocations(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	k := account.APIKey{ID: account.NewID(account.PrefixAPIKey, now), Name: "bench", Hash: account.HashAPIKey("bench"), Last4: "ench", Scopes: []string{"*:*"}, CreatedAt: now}
	tr := account.TokenRecord{ID: account.NewID(account.PrefixToken, now), KeyID: k.ID, Scopes: []string{"read:users"}, IssuedAt: now, ExpiresAt: now.Add(time.Hour)}
	if err := s.CreateAPIKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateToken(ctx, tr); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(200, func() {
		st, err := s.TokenStatus(ctx, tr.ID, k.ID, nil, "", false)
		if err != nil || st.Key == nil {
			t.Fatalf("TokenStatus: %+v, %v", st, err)
		}
	})
	t.Logf("TokenStatus: %.0f allocations", allocs)
	if allocs > 17 {
		t.Errorf("TokenStatus makes %.0f allocations, want at most 17", allocs)
	}
}

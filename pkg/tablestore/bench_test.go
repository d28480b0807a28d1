package tablestore_test

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"latchkey/pkg/account"
	"latchkey/pkg/dynamostore"
	"latchkey/pkg/dynamostore/dynamotest"
)

// BenchmarkTokenStatus measures the store side of a verify (one strongly
// consistent BatchGetItem) against DynamoDB Local, in parallel like a
// Lambda fleet would call it. Latency against DynamoDB Local over loopback
// is a floor for the code path, not a prediction of AWS latency.
func BenchmarkTokenStatus(b *testing.B) {
	client := dynamotest.NewClient(b)
	s := dynamostore.New(client, dynamotest.NewTable(b, client), dynamostore.WithTimeout(dynamotest.Timeout))
	ctx := b.Context()
	now := time.Now().UTC().Truncate(time.Millisecond)
	k := newKey(now)
	if err := s.CreateAPIKey(ctx, account.WriteOptions{}, k); err != nil {
		b.Fatal(err)
	}
	tok := account.TokenRecord{ID: account.NewID(account.PrefixToken, now), KeyID: k.ID, Scopes: []string{"read:users"}, IssuedAt: now, ExpiresAt: now.Add(time.Hour)}
	if err := s.CreateToken(ctx, account.WriteOptions{}, tok); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			st, err := s.TokenStatus(ctx, tok.ID, k.ID, nil, "", false)
			if err != nil || st.Key == nil {
				b.Errorf("TokenStatus: %v, key %v", err, st.Key)
				return
			}
		}
	})
}

// BenchmarkCreateUser measures one TransactWriteItems of a user and its
// e-mail guard against DynamoDB Local.
func BenchmarkCreateUser(b *testing.B) {
	client := dynamotest.NewClient(b)
	s := dynamostore.New(client, dynamotest.NewTable(b, client), dynamostore.WithTimeout(dynamotest.Timeout))
	ctx := b.Context()
	var n atomic.Int64
	base := time.Now().UTC().Truncate(time.Millisecond)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			at := base.Add(time.Duration(n.Add(1)) * time.Microsecond)
			u := newUser(at)
			u.Email = strings.ToLower(u.ID) + "@bench.example.com"
			if err := s.CreateUser(ctx, account.WriteOptions{}, u); err != nil {
				b.Errorf("CreateUser: %v", err)
				return
			}
		}
	})
}

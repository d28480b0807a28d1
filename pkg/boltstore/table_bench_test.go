package boltstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"latchkey/pkg/account"
	"latchkey/pkg/tablestore"
)

// benchItem is the size and shape of an API key record: a dozen
// attributes, strings, numbers, a flag and a small map.
func benchItem(pk string) tablestore.Item {
	s := func(v string) tablestore.Value { return tablestore.S(v) }
	return tablestore.Item{
		"pk": s(pk), "sk": s("KEY"),
		"gsi1pk": s("KEYS"), "gsi1sk": s("01JDQ4Z5V6X7Y8Z9A0B1C2D3E4"),
		"id":         s("01JDQ4Z5V6X7Y8Z9A0B1C2D3E4"),
		"name":       s("deploy key"),
		"hash":       s("3f2a9c0d4e5b6a7f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f7"),
		"last4":      s("x9Qz"),
		"owner_id":   s("USER#01JDQ4Z5V6X7Y8Z9A0B1C2D3E5"),
		"scopes":     tablestore.L{s("users:read"), s("orgs:read")},
		"version":    tablestore.N(3),
		"expire_at":  tablestore.N(1893456000),
		"disabled":   tablestore.Bool(false),
		"created_at": s("2026-11-26T10:00:00Z"),
		"metadata":   tablestore.M{"team": s("platform")},
	}
}

// BenchmarkTable_BatchGet is the local server's token verify: one batch
// read of three items.
func BenchmarkTable_BatchGet(b *testing.B) {
	p := openTable(b).Port()
	ctx := context.Background()
	var keys []tablestore.Key
	for i := range 3 {
		it := benchItem(fmt.Sprintf("KEY#%d", i))
		if _, err := p.Write(ctx, tablestore.Write{Kind: tablestore.WritePut, Item: it}, false); err != nil {
			b.Fatal(err)
		}
		keys = append(keys, tablestore.Key{PK: fmt.Sprintf("KEY#%d", i), SK: "KEY"})
	}
	b.ReportAllocs()
	for b.Loop() {
		items, err := p.BatchGet(ctx, keys, true)
		if err != nil || len(items) != 3 {
			b.Fatalf("got %v, %v", items, err)
		}
	}
}

// BenchmarkTable_Transact is a create: a conditional put of an item and of
// its uniqueness guard, and an add to a counter, in one transaction (with
// its fsync).
func BenchmarkTable_Transact(b *testing.B) {
	p := openTable(b).Port()
	ctx := context.Background()
	absent := tablestore.Cond{Op: tablestore.OpNotExists, Name: "pk"}
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		i++
		it := benchItem(fmt.Sprintf("KEY#%d", i))
		err := p.Transact(ctx, []tablestore.Write{
			{Kind: tablestore.WritePut, Item: it, If: absent},
			{Kind: tablestore.WritePut, Item: tablestore.Item{"pk": tablestore.S(fmt.Sprintf("HASH#%d", i)), "sk": tablestore.S("HASH"), "key_id": it["id"]}, If: absent},
			{Kind: tablestore.WriteUpdate, Key: tablestore.Key{PK: "COUNTER", SK: "KEYS"}, Update: tablestore.Update{{Kind: tablestore.ActAdd, Name: "children", Value: tablestore.N(1)}}},
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTable_TokenStatus is BenchmarkTokenStatus (the store side of a
// verify) on the single-table logic over a Table, to compare with the
// store it is to replace.
func BenchmarkTable_TokenStatus(b *testing.B) {
	s := tablestore.New(openTable(b).Port())
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	k := account.APIKey{ID: account.NewID(account.PrefixAPIKey, now), Name: "bench", Hash: account.HashAPIKey("bench"), Last4: "ench", Scopes: []string{"*:*"}, CreatedAt: now}
	tr := account.TokenRecord{ID: account.NewID(account.PrefixToken, now), KeyID: k.ID, Scopes: []string{"read:users"}, IssuedAt: now, ExpiresAt: now.Add(time.Hour)}
	if err := s.CreateAPIKey(ctx, account.WriteOptions{}, k); err != nil {
		b.Fatal(err)
	}
	if err := s.CreateToken(ctx, account.WriteOptions{}, tr); err != nil {
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

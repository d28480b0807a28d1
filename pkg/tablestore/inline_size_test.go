package tablestore

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"latchkey/pkg/account"
)

// itemBytes is an item's size by DynamoDB's rule: each attribute's name
// and value; a number about one byte per two digits, plus one; a map or a
// list 3 bytes and 1 per element.
func itemBytes(av map[string]types.AttributeValue) int {
	n := 0
	for name, v := range av {
		n += len(name) + valueBytes(v)
	}
	return n
}

func valueBytes(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return (len(strings.TrimLeft(v.Value, "-"))+1)/2 + 1
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberSS:
		n := 0
		for _, s := range v.Value {
			n += len(s)
		}
		return n
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += 1 + valueBytes(e)
		}
		return n
	case *types.AttributeValueMemberM:
		return 3 + len(v.Value) + itemBytes(v.Value)
	}
	panic(fmt.Sprintf("no size for %T", v))
}

// TestInlineRevocations_Size: maxInlineRevocations revocations add under
// 1 KB to a key's read copy, so a key of the usual size (a few scopes, a
// rate limit, credits, some metadata) stays within the 4 KB of one read
// unit with all of them; the largest key the limits allow takes what it
// took before, or one read unit more when the revocations cross a 4 KB
// boundary (docs/dynamodb.md gives both figures).
func TestInlineRevocations_Size(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	full := func(it apiKeyItem) apiKeyItem {
		it.Revoked = map[string]inlineRevocation{}
		for i := range maxInlineRevocations {
			at := now.Add(time.Duration(i) * time.Second)
			it.Revoked[account.NewID(account.PrefixToken, at)] = inlineRevocation{RevokedAt: at.UnixNano(), ExpiresAt: at.Add(account.MaxTokenLifetime).Unix()}
		}
		until, before := now.Add(account.MaxTokenLifetime), now.Add(time.Millisecond)
		it.RevokedOverflowUntil, it.RevokedOverflowIssuedBefore = &until, &before
		return it
	}
	size := func(it apiKeyItem) int {
		av, err := attributevalue.MarshalMap(it.readCopy(1))
		if err != nil {
			t.Fatal(err)
		}
		return itemBytes(av)
	}
	usual := account.APIKey{
		ID: account.NewID(account.PrefixAPIKey, now), Name: "billing service", Hash: make([]byte, 32), Last4: "abcd",
		Scopes: []string{"read:users", "write:users", "read:organizations", "revoke:tokens"}, CreatedAt: now, ExpiresAt: now.AddDate(1, 0, 0),
		Metadata:   account.Metadata{"team": "billing", "ticket": "OPS-4711", "environment": "production"},
		RateLimits: []account.RateLimit{{Name: "second", Limit: 100, Period: time.Second}},
		Credits:    &account.Credits{Remaining: 1000000, Set: "s"},
	}
	byID, _ := newAPIKeyItems(usual)
	before, after := size(byID), size(full(byID))
	t.Logf("a usual key: %d bytes, %d with %d revocations (%d bytes each)", before, after, maxInlineRevocations, (after-before)/maxInlineRevocations)
	if after-before > 1024 {
		t.Errorf("%d revocations add %d bytes, want at most 1 KB", maxInlineRevocations, after-before)
	}
	if after > 4096 {
		t.Errorf("a usual key with %d revocations is %d bytes, over the 4 KB of one read unit", maxInlineRevocations, after)
	}

	largest := usual
	largest.Name = strings.Repeat("名", 200)
	largest.Scopes = nil
	for i := range 32 {
		largest.Scopes = append(largest.Scopes, fmt.Sprintf("%s:%s%02d", strings.Repeat("a", 32), strings.Repeat("r", 62), i))
	}
	largest.Metadata = account.Metadata{}
	for i := range 8 {
		largest.Metadata[fmt.Sprintf("%s%02d", strings.Repeat("k", 38), i)] = strings.Repeat("v", 460)
	}
	largest.OwnerID = strings.Repeat("名", 256)
	largest.RateLimits = nil
	for i := range account.MaxRateLimits {
		largest.RateLimits = append(largest.RateLimits, account.RateLimit{Name: fmt.Sprintf("limit-%d", i), Limit: 1 << 40, Period: time.Hour})
	}
	for range account.MaxKeyAncestors {
		largest.Ancestors = append(largest.Ancestors, account.NewID(account.PrefixAPIKey, now))
	}
	byID, _ = newAPIKeyItems(largest)
	before, after = size(byID), size(full(byID))
	rru := func(n int) int { return (n + 4095) / 4096 }
	t.Logf("the largest key: %d bytes (%d RRU), %d with %d revocations (%d RRU)", before, rru(before), after, maxInlineRevocations, rru(after))
	if rru(after) > rru(before)+1 {
		t.Errorf("revocations take the largest key from %d to %d RRU, want at most one more", rru(before), rru(after))
	}
}

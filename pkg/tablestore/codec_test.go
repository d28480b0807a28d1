package tablestore

import (
	"fmt"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"latchkey/pkg/account"
)

// TestCodec_AsAttributeValue: the items' codec encodes every item as the
// SDK's attributevalue does (the encoding of every item stored so far, on
// either store) and decodes what attributevalue encodes to the same item.
func TestCodec_AsAttributeValue(t *testing.T) {
	now := time.Date(2026, 11, 28, 10, 11, 12, 345678900, time.UTC)
	later := now.Add(time.Hour)
	k := account.APIKey{
		ID: "key_1", Name: "n", Hash: []byte{1, 2, 3}, Last4: "abcd", Scopes: []string{"a", "b"},
		Ancestors: []string{"key_0"}, OrganizationID: "org_1", OwnerID: "usr_1", Metadata: map[string]string{"x": "y"},
		CreatedAt: now, ExpiresAt: later, PreviousHash: []byte{4}, PreviousExpiresAt: later, TokensRevokedBefore: now,
		RateLimits: []account.RateLimit{{Name: "r", Limit: 5, Period: time.Minute}},
		Credits:    &account.Credits{Remaining: 7, SetAt: now, Set: "s", Refill: &account.CreditRefill{Amount: 3, Interval: "day"}},
	}
	byID, byHash := newAPIKeyItems(k)
	byID.Version, byID.Children, byID.Deleting = 3, 2, true
	byID.Revoked = map[string]inlineRevocation{"tok_1": {RevokedAt: 9, ExpiresAt: 10}}
	byID.RevokedOverflowUntil, byID.RevokedOverflowIssuedBefore = &later, &now
	orgSide, userSide := newMemberItems(account.Membership{OrganizationID: "org_1", UserID: "usr_1", Role: "owner", CreatedAt: now, UpdatedAt: later})
	items := []any{
		newUserItem(account.User{ID: "usr_1", Email: "a@b.c", Name: "A", Role: "admin", CreatedAt: now, UpdatedAt: later, ExternalID: "e", Metadata: map[string]string{"k": "v"}}),
		newUserItem(account.User{ID: "usr_2"}),
		newOrgItem(account.Organization{ID: "org_1", Name: "O", Slug: "o", Plan: "p", CreatedAt: now, UpdatedAt: now}),
		orgSide, userSide, byID, byHash, newAPIKeyItems2(account.APIKey{ID: "key_2", CreatedAt: now}),
		guardItem{key: emailKey("a@b.c"), OwnerID: "usr_1"},
		newKeyLinkItem(keyLinkKey("key_0", "key_1"), k),
		keyUseItem{key: keyUseKey("key_1"), KeyID: "key_1", LastUsedAt: 12, ExpireAt: 13},
		newTokenItem(account.TokenRecord{ID: "tok_1", KeyID: "key_1", Scopes: []string{"a"}, Audience: "aud", IssuedAt: now, ExpiresAt: later}),
		newTokenItem(account.TokenRecord{ID: "tok_2", KeyID: "key_1"}),
		newRevocationItem(account.Revocation{TokenID: "tok_1", KeyID: "key_1", RevokedAt: now, ExpiresAt: later}),
		jwksItem{key: jwksKey(), JWKS: []byte("{}"), Issuer: "https://x"},
		newIdempotencyItem(account.IdempotencyRecord{KeyID: "key_1", Key: "i", Fingerprint: []byte{7}, Owner: "o", State: account.IdempotencyStarted, LeaseUntil: now, Response: []byte("r"), CreatedAt: now, ExpiresAt: later}),
		eventItem{key: key{"EVENT#x", "evt_1"}, Type: "user.created", Event: "{}", ExpireAt: 5},
		orgCopyItem{key: key{"ORG#x#1", "ORG"}, OwnerID: "org_1", Deleting: true, ExpireAt: 8},
	}
	for _, it := range items {
		t.Run(reflect.TypeOf(it).Name(), func(t *testing.T) {
			av, err := attributevalue.MarshalMap(it)
			if err != nil {
				t.Fatal(err)
			}
			want, err := fromAV(av)
			if err != nil {
				t.Fatal(err)
			}
			got, err := marshal(it)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("marshal:\n got %#v\nwant %#v", got, want)
			}
			wantBack := reflect.New(reflect.TypeOf(it))
			if err := attributevalue.UnmarshalMap(av, wantBack.Interface()); err != nil {
				t.Fatal(err)
			}
			gotBack := reflect.New(reflect.TypeOf(it))
			if err := unmarshal(want, gotBack.Interface()); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(gotBack.Elem().Interface(), wantBack.Elem().Interface()) {
				t.Errorf("unmarshal:\n got %+v\nwant %+v", gotBack.Elem().Interface(), wantBack.Elem().Interface())
			}
		})
	}
}

// newAPIKeyItems2 is the item of a key with nothing optional.
func newAPIKeyItems2(k account.APIKey) apiKeyItem {
	byID, _ := newAPIKeyItems(k)
	return byID
}

// fromAV is the item av, as attributevalue encodes it, in the port's
// values: the kinds the items hold.
func fromAV(av map[string]types.AttributeValue) (Item, error) {
	it := Item{}
	for name, v := range av {
		x, err := valueOfAV(v)
		if err != nil {
			return nil, err
		}
		it[name] = x
	}
	return it, nil
}

func valueOfAV(av types.AttributeValue) (Value, error) {
	switch v := av.(type) {
	case *types.AttributeValueMemberS:
		return S(v.Value), nil
	case *types.AttributeValueMemberN:
		n, err := strconv.ParseInt(v.Value, 10, 64)
		return N(n), err
	case *types.AttributeValueMemberB:
		return B(v.Value), nil
	case *types.AttributeValueMemberBOOL:
		return Bool(v.Value), nil
	case *types.AttributeValueMemberNULL:
		return Null{}, nil
	case *types.AttributeValueMemberL:
		l := make(L, len(v.Value))
		for i, x := range v.Value {
			var err error
			if l[i], err = valueOfAV(x); err != nil {
				return nil, err
			}
		}
		return l, nil
	case *types.AttributeValueMemberM:
		m, err := fromAV(v.Value)
		return M(m), err
	}
	return nil, fmt.Errorf("a value of type %T", av)
}

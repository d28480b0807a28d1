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
	"latchkey/pkg/tablestore"
)

// TestStore runs the contract suite that every account.Store passes, each
// subtest on a table of its own.
func TestStore(t *testing.T) {
	client := dynamotest.NewClient(t)
	storetest.Run(t, func(t *testing.T) account.Store {
		s := dynamostore.New(client, dynamotest.NewTable(t, client), dynamostore.WithTimeout(dynamotest.Timeout))
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
	storetest.RunKeyLimits(t, func(t *testing.T) account.Store {
		s := dynamostore.New(client, dynamotest.NewTable(t, client), dynamostore.WithTimeout(dynamotest.Timeout))
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
		if got := aws.ToString(ttl.TimeToLiveDescription.AttributeName); got != tablestore.TTLAttribute {
			t.Errorf("TTL attribute: got %q, want %q", got, tablestore.TTLAttribute)
		}
	})
}

func TestPublicKeys(t *testing.T) {
	client := dynamotest.NewClient(t)
	s := dynamostore.New(client, dynamotest.NewTable(t, client), dynamostore.WithTimeout(dynamotest.Timeout))
	ctx := t.Context()
	_, _, err := s.Published(ctx)
	if !account.IsCode(err, account.CodeNotFound) {
		t.Fatalf("Published before any put: got %v, want code not_found", err)
	}
	for i, jwks := range []string{`{"keys":[{"kid":"a"}]}`, `{"keys":[{"kid":"b"}]}`} {
		if err := s.PutPublicKeys(ctx, []byte(jwks), time.UnixMilli(int64(i))); err != nil {
			t.Fatalf("PutPublicKeys: %v", err)
		}
		got, _, err := s.Published(ctx)
		if err != nil {
			t.Fatalf("Published: %v", err)
		}
		if string(got) != jwks {
			t.Errorf("Published: got %s, want %s", got, jwks)
		}
	}
}

// TestPublishedIssuer: the issuer and the key set share the config item
// and are written apart; neither write erases the other, in either order.
func TestPublishedIssuer(t *testing.T) {
	client := dynamotest.NewClient(t)
	ctx := t.Context()
	const jwks, issuer, domain = `{"keys":[{"kid":"a"}]}`, "https://abc123.execute-api.us-east-1.amazonaws.com", "https://auth.example.com"
	t.Run("IssuerFirst", func(t *testing.T) {
		s := dynamostore.New(client, dynamotest.NewTable(t, client), dynamostore.WithTimeout(dynamotest.Timeout))
		if err := s.PutIssuer(ctx, issuer); err != nil {
			t.Fatal(err)
		}
		if got, iss, err := s.Published(ctx); err != nil || got != nil || iss != issuer {
			t.Fatalf("Published with only the issuer: got %q %q %v, want no keys and %s", got, iss, err, issuer)
		}
		if err := s.PutPublicKeys(ctx, []byte(jwks), time.UnixMilli(1)); err != nil {
			t.Fatal(err)
		}
		if got, iss, err := s.Published(ctx); err != nil || string(got) != jwks || iss != issuer {
			t.Fatalf("Published: got %s %q %v, want the keys and %s", got, iss, err, issuer)
		}
	})
	t.Run("KeysFirst", func(t *testing.T) {
		s := dynamostore.New(client, dynamotest.NewTable(t, client), dynamostore.WithTimeout(dynamotest.Timeout))
		if err := s.PutPublicKeys(ctx, []byte(jwks), time.UnixMilli(1)); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{issuer, domain} {
			if err := s.PutIssuer(ctx, want); err != nil {
				t.Fatal(err)
			}
			if got, iss, err := s.Published(ctx); err != nil || string(got) != jwks || iss != want {
				t.Fatalf("Published: got %s %q %v, want the keys and %s", got, iss, err, want)
			}
		}
		// A newer key set keeps the issuer.
		if err := s.PutPublicKeys(ctx, []byte(`{"keys":[{"kid":"b"}]}`), time.UnixMilli(2)); err != nil {
			t.Fatal(err)
		}
		if _, iss, err := s.Published(ctx); err != nil || iss != domain {
			t.Fatalf("issuer after a new key set: got %q %v, want %s", iss, err, domain)
		}
	})
}

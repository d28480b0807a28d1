package tablestore_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"latchkey/pkg/account"
	"latchkey/pkg/assembly"
	"latchkey/pkg/dynamostore"
	"latchkey/pkg/dynamostore/dynamotest"
	"latchkey/pkg/tablestore"
)

// TestInlineRevocation_Setting: with the formats item putting revocations
// on the key in force, a service built with NoInlineRevocation
// (INLINE_REVOCATION=false) issues tokens without the claim irv, whose
// revocation, through the service, writes the entry and its read copies
// (ReadShards items, as the release before the claim wrote them) and
// nothing on the key, and whose verify reads the key and the entry: 2
// items in one BatchGetItem. With the setting on (the default): irv, the
// revocation on the key and the entry with its copies too (which the
// previous release reads after a rollback), one item read. Neither
// revocation writes an item of an index (the key's listed item least of
// all: every revocation would write the one KEYS partition of gsi1).
func TestInlineRevocation_Setting(t *testing.T) {
	var m itemMeter
	var calls meter
	client := dynamotest.NewClient(t, m.option, calls.option)
	for _, c := range []struct {
		name        string
		off         bool
		entryWrites int // items of the token written by the revocation: the entry, and its copies
		keyWrites   bool
		verifyItems int
	}{
		{"On", false, 1, true, 1},
		{"Off", true, 1 + tablestore.MaxReadCopies, false, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := t.Context()
			// A verify reads copy 1 of its items, as in the budgets.
			table := dynamotest.NewTable(t, client)
			store := dynamostore.New(client, table, dynamostore.WithTimeout(dynamotest.Timeout)).ReadCopy(1)
			if _, err := account.PutFormatsInForce(ctx, store, time.Now().Add(-time.Minute), "test"); err != nil {
				t.Fatal(err)
			}
			_, priv, err := ed25519.GenerateKey(nil)
			if err != nil {
				t.Fatal(err)
			}
			asm, err := assembly.New(assembly.Parts{
				Store: store, CursorKey: bytes.Repeat([]byte("c"), 32), Issuer: "https://latchkey.test", SigningKey: priv,
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), NoInlineRevocation: c.off,
			})
			if err != nil {
				t.Fatal(err)
			}
			svc := asm.Service
			// A root key of no organization: with the claim, its verify
			// reads its key alone.
			secret := account.NewAPIKeySecret()
			must(t, svc.EnsureBootstrapKey(ctx, secret, time.Time{}), "EnsureBootstrapKey")
			p, err := svc.Authenticate(ctx, secret)
			must(t, err, "Authenticate")
			tok, claims, err := svc.IssueToken(ctx, p, account.TokenRequest{Scopes: []string{"read:users"}})
			must(t, err, "IssueToken")
			if claims.InlineRevocation == c.off {
				t.Errorf("IssueToken: InlineRevocation %v, want %v", claims.InlineRevocation, !c.off)
			}
			parts := strings.Split(tok, ".")
			raw, err := base64.RawURLEncoding.DecodeString(parts[1])
			must(t, err, "decode the payload")
			var payload map[string]any
			must(t, json.Unmarshal(raw, &payload), "unmarshal the payload")
			if irv, ok := payload["irv"]; ok == c.off || (ok && irv != true) {
				t.Errorf("payload %s: irv %v (present %v), want it present and true only with the setting on", raw, irv, ok)
			}

			m.reset()
			r, err := svc.RevokeToken(ctx, p, tok)
			must(t, err, "RevokeToken")
			if r.Inline == c.off {
				t.Errorf("RevokeToken: Inline %v, want %v", r.Inline, !c.off)
			}
			entries, keys := 0, false
			for k, n := range m.writes {
				switch {
				case !strings.Contains(k, "|"):
				case strings.Contains(k, claims.ID):
					entries += n
				case strings.Contains(k, p.KeyID):
					keys = true
				}
			}
			if entries != c.entryWrites || keys != c.keyWrites {
				t.Errorf("RevokeToken wrote %d items of the token (want %d), the key's: %v (want %v); writes %v", entries, c.entryWrites, keys, c.keyWrites, m.writes)
			}
			// No item it wrote is in an index: the key's listed item (gsi1
			// KEYS) is not one of them, so no revocation writes the one
			// KEYS partition of gsi1.
			for k := range m.writes {
				pk, sk, ok := strings.Cut(k, "|")
				if !ok {
					continue
				}
				out, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true), Key: map[string]types.AttributeValue{
					"pk": &types.AttributeValueMemberS{Value: pk}, "sk": &types.AttributeValueMemberS{Value: sk},
				}})
				must(t, err, "GetItem")
				if _, ok := out.Item["gsi1pk"]; ok {
					t.Errorf("RevokeToken wrote %s, an item of gsi1", k)
				}
			}

			m.reset()
			got := calls.measure(func() {
				v, err := svc.VerifyToken(ctx, tok)
				must(t, err, "VerifyToken")
				if v.Valid || v.Reason != account.ReasonRevoked {
					t.Errorf("VerifyToken of the revoked token: %+v, want revoked", v)
				}
			})
			items, entry := 0, false
			for k, n := range m.reads {
				if strings.Contains(k, "|") {
					items += n
					entry = entry || strings.Contains(k, claims.ID)
				}
			}
			if len(got) != 1 || got[0].op != "BatchGetItem" || items != c.verifyItems || entry != c.off {
				t.Errorf("VerifyToken: %v reading %d items (the entry's: %v), want one BatchGetItem of %d (the entry's: %v); reads %v", got, items, entry, c.verifyItems, c.off, m.reads)
			}
		})
	}
}

package tablestore_test

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"latchkey/pkg/account"
	"latchkey/pkg/boltstore"
	"latchkey/pkg/dynamostore"
	"latchkey/pkg/dynamostore/dynamotest"
	"latchkey/pkg/tablestore"
)

// onBothTables runs fn over a store on DynamoDB Local and over one on the
// bbolt Table, each on a fresh table, with that table's port to write raw
// items.
func onBothTables(t *testing.T, fn func(t *testing.T, table tablestore.Port, s *tablestore.Store)) {
	t.Run("DynamoDBLocal", func(t *testing.T) {
		client := dynamotest.NewClient(t)
		name := dynamotest.NewTable(t, client)
		fn(t, dynamostore.Port(client, name), tablestore.New(dynamostore.Port(client, name)))
	})
	t.Run("Bolt", func(t *testing.T) {
		table, err := boltstore.OpenTable(filepath.Join(t.TempDir(), "table.db"), boltstore.WithTTL(tablestore.TTLAttribute))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { table.Close() })
		fn(t, table.Port(), tablestore.New(table.Port()))
	})
}

// TestEventPut_AppendOnly: an event is never replaced. A second write of
// an event's key (here the same id, with other content) is refused, and
// the event and its organization's copy keep what the first one wrote.
// IAM lets three roles put events and cannot require the condition, so
// the code holds it (docs/security.md).
func TestEventPut_AppendOnly(t *testing.T) {
	onBothTables(t, func(t *testing.T, _ tablestore.Port, s *tablestore.Store) {
		at := time.Now().UTC().Truncate(time.Millisecond)
		id := account.NewEventID(at)
		org := account.NewID(account.PrefixOrganization, at)
		src := &account.EventSource{
			Encode: func(e account.Event) ([]byte, error) {
				return json.Marshal(map[string]string{"id": e.ID, "name": e.Data.(account.Organization).Name})
			},
		}
		write := func(name string) error {
			e := account.PendingEvent{Type: account.EventOrganizationUpdated, Data: account.Organization{ID: org, Name: name}}
			return s.PutEvent(t.Context(), src, e, id, at)
		}
		must(t, write("first"), "first write")
		if err := write("second"); !account.IsCode(err, account.CodeInternal) {
			t.Fatalf("second write of the event's key: got %v, want a refusal (internal: no change makes one)", err)
		}
		day, ofOrg, err := s.StoredEvent(t.Context(), id, at, org)
		must(t, err, "StoredEvent")
		want := `{"id":"` + id + `","name":"first"}`
		if day != want || ofOrg != want {
			t.Errorf("after the second write: event %s, organization's copy %s; want both %s", day, ofOrg, want)
		}
	})
}

// TestDeleteOrganization_ForeignLink: IAM lets the organizations role
// delete in any API key's partitions, for the cascade of an
// organization's delete, and cannot name the organization's keys. The
// code confines the cascade: it deletes only the keys whose own item names
// the organization, so a link in the organization's KEYORG# partition to
// another key (here the bootstrap admin key's, which no create writes and
// only the auth role could put) deletes the link and no key.
func TestDeleteOrganization_ForeignLink(t *testing.T) {
	onBothTables(t, func(t *testing.T, table tablestore.Port, s *tablestore.Store) {
		ctx := t.Context()
		now := time.Now().UTC().Truncate(time.Millisecond)
		org := account.Organization{ID: account.NewID(account.PrefixOrganization, now), Name: "Acme", Slug: "acme", CreatedAt: now, UpdatedAt: now}
		must(t, s.CreateOrganization(ctx, account.WriteOptions{}, org), "CreateOrganization")
		secret := account.NewAPIKeySecret()
		admin := account.APIKey{
			ID: account.NewID(account.PrefixAPIKey, now), Name: "bootstrap admin key", Hash: account.HashAPIKey(secret),
			Last4: secret[len(secret)-4:], Scopes: []string{account.ScopeAll}, Bootstrap: true, CreatedAt: now,
		}
		must(t, s.CreateAPIKey(ctx, account.WriteOptions{}, admin), "CreateAPIKey")
		link := tablestore.Item{"pk": tablestore.S("KEYORG#" + org.ID), "sk": tablestore.S("KEY#" + admin.ID)}
		_, err := table.Write(ctx, tablestore.Write{Kind: tablestore.WritePut, Item: link}, false)
		must(t, err, "PutItem of the link")

		must(t, s.DeleteOrganization(ctx, account.WriteOptions{}, org.ID), "DeleteOrganization")
		if _, err := s.GetOrganization(ctx, org.ID); !account.IsCode(err, account.CodeNotFound) {
			t.Fatalf("GetOrganization after the delete: %v, want not found", err)
		}
		if _, err := s.GetAPIKey(ctx, admin.ID); err != nil {
			t.Errorf("the admin key after the organization's delete: GetAPIKey: %v", err)
		}
		if _, err := s.GetAPIKeyByHash(ctx, admin.Hash); err != nil {
			t.Errorf("the admin key after the organization's delete: GetAPIKeyByHash: %v", err)
		}
	})
}

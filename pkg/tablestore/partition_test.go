package tablestore_test

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"latchkey/pkg/account"
	"latchkey/pkg/dynamostore"
	"latchkey/pkg/dynamostore/dynamotest"
	"latchkey/pkg/tablestore"
)

// newTableStore returns a client of DynamoDB Local, a new table and a
// store over it.
func newTableStore(t *testing.T) (*dynamodb.Client, string, *tablestore.Store) {
	t.Helper()
	client := dynamotest.NewClient(t)
	table := dynamotest.NewTable(t, client)
	return client, table, dynamostore.New(client, table, dynamostore.WithTimeout(dynamotest.Timeout))
}

// plant writes item as it is, the way a function allowed to write outside
// the auth-only partitions could: IAM conditions on the partition key, not
// on gsi1pk, so such a function can put an item into any list of gsi1.
func plant(t *testing.T, client *dynamodb.Client, table string, item map[string]any) {
	t.Helper()
	av, err := attributevalue.MarshalMap(item)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: av}); err != nil {
		t.Fatalf("PutItem: %v", err)
	}
}

// TestListAPIKeys_ForeignPartition: an item in the KEYS list of gsi1 whose
// partition is not a key's (here a user's partition, which the users
// function may write) is no API key. It is not listed, and a fake
// bootstrap key planted that way, newer than any real one, does not stop
// the rotation of the admin key: the new key is installed and the old one
// retired.
func TestListAPIKeys_ForeignPartition(t *testing.T) {
	client, table, store := newTableStore(t)
	ctx := t.Context()
	svc := newService(t, store).Service
	created := time.Now().UTC().Truncate(time.Second)
	old := account.NewAPIKeySecret()
	must(t, svc.EnsureBootstrapKey(ctx, old, created), "EnsureBootstrapKey")

	fakeID := "key_7ZZZZZZZZZZZZZZZZZZZZZZZZZ" // the greatest ULID: first in the list
	plant(t, client, table, map[string]any{
		"pk": "USER#" + account.NewID(account.PrefixUser, created), "sk": "KEY",
		"gsi1pk": "KEYS", "gsi1sk": fakeID,
		"key_id": fakeID, "name": "bootstrap admin key", "hash": account.HashAPIKey("planted"),
		"last4": "nted", "scopes": []string{account.ScopeAll}, "bootstrap": true,
		"created_at": created.AddDate(100, 0, 0), "expires_at": time.Time{},
	})

	page, err := store.ListAPIKeys(ctx, account.APIKeyFilter{}, account.ListParams{Limit: 100})
	must(t, err, "ListAPIKeys")
	if len(page.Items) != 1 || page.Items[0].ID == fakeID {
		t.Errorf("ListAPIKeys: got %+v, want only the real bootstrap key", page.Items)
	}

	rotated := account.NewAPIKeySecret()
	must(t, svc.EnsureBootstrapKey(ctx, rotated, created.Add(time.Hour)), "EnsureBootstrapKey with a rotated key")
	if _, err := store.GetAPIKeyByHash(ctx, account.HashAPIKey(rotated)); err != nil {
		t.Errorf("the rotated admin key was not installed: %v", err)
	}
	if _, err := store.GetAPIKeyByHash(ctx, account.HashAPIKey(old)); !account.IsCode(err, account.CodeNotFound) {
		t.Errorf("the old admin key after the rotation: got %v, want not_found", err)
	}
}

// TestList_ForeignPartition: every list of gsi1 holds one kind of item,
// and an item of another partition planted in it is dropped, not turned
// into a user, an organization or a membership with a malformed ID.
func TestList_ForeignPartition(t *testing.T) {
	client, table, store := newTableStore(t)
	ctx := t.Context()
	now := time.Now().UTC().Truncate(time.Millisecond)
	u, o := newUser(now), newOrg(now.Add(time.Millisecond))
	must(t, store.CreateUser(ctx, account.WriteOptions{}, u), "CreateUser")
	must(t, store.CreateOrganization(ctx, account.WriteOptions{}, o), "CreateOrganization")
	must(t, store.AddMember(ctx, account.WriteOptions{}, account.Membership{OrganizationID: o.ID, UserID: u.ID, Role: "member", CreatedAt: now, UpdatedAt: now}), "AddMember")
	for _, gsi1pk := range []string{"USERS", "ORGS", "MEMBERS#" + o.ID, "MEMBERSHIPS#" + u.ID} {
		plant(t, client, table, map[string]any{
			"pk": "SLUG#planted-" + gsi1pk, "sk": "SLUG", "gsi1pk": gsi1pk, "gsi1sk": "~", // sorts after every ID and time
			"email": "planted@example.com", "name": "planted", "slug": "planted", "role": "owner",
			"created_at": now, "updated_at": now,
		})
	}
	p := account.ListParams{Limit: 100}
	users, err := store.ListUsers(ctx, p)
	must(t, err, "ListUsers")
	if len(users.Items) != 1 || users.Items[0].ID != u.ID {
		t.Errorf("ListUsers: got %+v, want only %s", users.Items, u.ID)
	}
	orgs, err := store.ListOrganizations(ctx, p)
	must(t, err, "ListOrganizations")
	if len(orgs.Items) != 1 || orgs.Items[0].ID != o.ID {
		t.Errorf("ListOrganizations: got %+v, want only %s", orgs.Items, o.ID)
	}
	for name, list := range map[string]func() (account.Page[account.Membership], error){
		"ListMembers": func() (account.Page[account.Membership], error) { return store.ListMembers(ctx, o.ID, p) },
		"ListUserMemberships": func() (account.Page[account.Membership], error) {
			page, err := store.ListUserMemberships(ctx, u.ID, p)
			out := account.Page[account.Membership]{Next: page.Next}
			for _, m := range page.Items {
				out.Items = append(out.Items, m.Membership)
			}
			return out, err
		},
	} {
		page, err := list()
		must(t, err, name)
		if len(page.Items) != 1 || page.Items[0].UserID != u.ID || page.Items[0].OrganizationID != o.ID {
			t.Errorf("%s: got %+v, want only the membership of %s in %s", name, page.Items, u.ID, o.ID)
		}
	}
}

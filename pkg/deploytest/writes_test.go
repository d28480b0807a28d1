package deploytest_test

import (
	"slices"
	"strings"
	"testing"
)

// tableActions returns the DynamoDB actions that the Allow statements of
// a role grant on the table or its index, sorted, each once.
func tableActions(statements []map[string]any) []string {
	var out []string
	for _, st := range statements {
		if st["Effect"] != "Allow" {
			continue
		}
		var onTable bool
		resources := list(st["Resource"])
		if resources == nil {
			resources = []any{st["Resource"]}
		}
		for _, r := range resources {
			onTable = onTable || strings.HasPrefix(resolveARN(r), tableARN)
		}
		if onTable {
			out = append(out, strs(st["Action"])...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// partitionWrites states, for one partition of each kind of item
// (pkg/tablestore/keys.go), the writes each role may make there: P
// PutItem, U UpdateItem, D DeleteItem. Every other write (BatchWriteItem,
// PartiQL) is refused everywhere. Each role may write only where its
// routes write; the replay (checkLeastPrivilege) proves it may write
// there, this table that it may write nowhere else.
//
// What IAM cannot say, since it conditions on the partition key alone:
//   - which API keys the organizations role deletes. Its DeleteItem in the
//     partitions of API keys is for the cascade of an organization's
//     delete; a key's partition (KEY#<key_id>) does not name its
//     organization, and the bootstrap admin key's is like any other's. The
//     code confines the cascade to the organization's keys
//     (tablestore.TestDeleteOrganization_ForeignLink on both stores).
//   - whether a put of an event is conditional: three roles may PutItem
//     an event, none may change or delete one, and every event put of the
//     code is conditional on the event not existing
//     (tablestore.TestEventPut_AppendOnly on both stores).
//   - an organization's item from its memberships, which share its
//     partition: the users role updates the owner count there. Its read
//     copies, in partitions of their own, are the organizations function's
//     (and the console's, in auth) alone.
var partitionWrites = []struct {
	pk                                     string
	auth, organizations, users, authorizer string
}{
	// The credentials: auth's alone, but for the organization cascade's deletes.
	{pk: "CONFIG", auth: "U"},
	{pk: "KEY#key_01KF0E44M00000000000000001", auth: "PUD", organizations: "D"},
	{pk: "KEY#key_01KF0E44M00000000000000001#3", auth: "PUD", organizations: "D"},
	{pk: "KEYHASH#9f86d081884c7d65", auth: "PUD", organizations: "D"},
	{pk: "KEYORG#org_01KF0E44M00000000000000001", auth: "PD", organizations: "D"},
	{pk: "KEYOWNER#acme-ops", auth: "PD", organizations: "D"},
	{pk: "TOKEN#tok_01KF0E44M00000000000000001", auth: "P"},
	{pk: "TOKEN#tok_01KF0E44M00000000000000001#3", auth: "P"},
	// Every function's: a key's last use, a limited key's count.
	{pk: "KEYUSE#key_01KF0E44M00000000000000001", auth: "UD", organizations: "UD", users: "U"},
	{pk: "KEYLIMIT#key_01KF0E44M00000000000000001#0", auth: "U", organizations: "U", users: "U", authorizer: "U"},
	// Users and organizations, which the console (auth) changes too.
	{pk: "USER#usr_01KF0E44M00000000000000001", auth: "PUD", organizations: "PUD", users: "PUD"},
	{pk: "EMAIL#ada@example.com", auth: "PD", users: "PD"},
	{pk: "USEREXT#crm-ada", auth: "PD", users: "PD"},
	{pk: "ORG#org_01KF0E44M00000000000000001", auth: "PUD", organizations: "PUD", users: "PUD"},
	{pk: "ORG#org_01KF0E44M00000000000000001#3", auth: "PUD", organizations: "PUD"},
	{pk: "SLUG#acme", auth: "PD", organizations: "PD"},
	{pk: "ORGEXT#acct-acme", auth: "PD", organizations: "PD"},
	// Every function's: its requests' idempotency records, its changes' events.
	{pk: "IDEM#key_01KF0E44M00000000000000001", auth: "PUD", organizations: "PUD", users: "PUD"},
	{pk: "EVENT#2026-01-02", auth: "P", organizations: "P", users: "P"},
	{pk: "EVENT#2026-01-02#3", auth: "P", organizations: "P", users: "P"},
	{pk: "EVENTORG#org_01KF0E44M00000000000000001", auth: "P", organizations: "P", users: "P"},
	{pk: "EVENTORG#org_01KF0E44M00000000000000001#3", auth: "P", organizations: "P", users: "P"},
	// A partition of no kind (a list of gsi1 names no item's pk): nobody's.
	{pk: "KEYS"},
}

// checkWrites evaluates every write action of partitionWrites against the
// roles of tpl, as IAM would, and fails on any cell that differs.
func checkWrites(t *testing.T, tpl template) {
	letters := map[string]string{"dynamodb:PutItem": "P", "dynamodb:UpdateItem": "U", "dynamodb:DeleteItem": "D"}
	for _, row := range partitionWrites {
		for id, want := range map[string]string{
			"AuthFunction": row.auth, "OrganizationsFunction": row.organizations, "UsersFunction": row.users,
			"AuthorizerFunction": row.authorizer,
		} {
			statements := tpl.statements(t, id)
			for _, action := range writeActions {
				req := iamRequest{Action: action, LeadingKeys: []string{row.pk}}
				allowed, err := decide(statements, req)
				if err != nil {
					t.Fatalf("%s: %s: %v", id, req, err)
				}
				if l := letters[action]; allowed != (l != "" && strings.Contains(want, l)) {
					t.Errorf("%s's role: %s in %s: allowed %v, want %v", id, action, row.pk, allowed, !allowed)
				}
			}
		}
	}
}

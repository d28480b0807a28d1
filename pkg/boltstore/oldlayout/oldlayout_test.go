package oldlayout_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"latchkey/pkg/account"
	"latchkey/pkg/boltstore"
	"latchkey/pkg/boltstore/oldlayout"
)

// writeOld writes a file of the earlier layout as fda3049's boltstore.Open
// and its writes left it: every bucket, and in them the given values,
// each JSON but the last uses (RFC 3339 text).
func writeOld(tb testing.TB, path string, fill map[string]map[string]any) {
	tb.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		tb.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, name := range oldlayout.Buckets {
			b, err := tx.CreateBucketIfNotExists([]byte(name))
			if err != nil {
				return err
			}
			for k, v := range fill[name] {
				var data []byte
				if t, ok := v.(time.Time); ok {
					data, err = t.MarshalText()
				} else {
					data, err = json.Marshal(v)
				}
				if err == nil {
					err = b.Put([]byte(k), data)
				}
				if err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err := errors.Join(err, db.Close()); err != nil {
		tb.Fatal(err)
	}
}

// TestOpen_MigratesOldLayout: a file of the earlier layout is converted by
// Open: every user, organization, membership, key (its tree, its
// organization, its owner), last use, token record and revocation is
// there with the same ids; a key's secret and its previous secret still
// find it by hash; the old file is kept beside the new one; a second Open
// opens the converted file as it is.
func TestOpen_MigratesOldLayout(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	at := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	later := time.Now().UTC().Add(24 * time.Hour).Truncate(time.Second)
	ada := oldlayout.UserItem{ID: "usr_01KF0E7ST00000000000000001", Email: "ada@example.com", Name: "Ada", Role: "admin", ExternalID: "ext-ada", Metadata: account.Metadata{"team": "core"}, CreatedAt: at, UpdatedAt: at}
	bob := oldlayout.UserItem{ID: "usr_01KF0E7ST00000000000000002", Email: "bob@example.com", Name: "Bob", Role: "user", CreatedAt: at, UpdatedAt: at}
	org := oldlayout.OrgItem{ID: "org_01KF0E7ST00000000000000003", Name: "Acme", Slug: "acme", Plan: "free", CreatedAt: at, UpdatedAt: at}
	owner := oldlayout.MemberItem{OrganizationID: org.ID, UserID: ada.ID, Role: account.OwnerRole, CreatedAt: at, UpdatedAt: at}
	member := oldlayout.MemberItem{OrganizationID: org.ID, UserID: bob.ID, Role: "member", CreatedAt: at, UpdatedAt: at}
	rootSecret, prevSecret, childSecret := account.NewAPIKeySecret(), account.NewAPIKeySecret(), account.NewAPIKeySecret()
	root := oldlayout.APIKeyItem{ID: "key_01KF0E7ST00000000000000004", Name: "root", Hash: account.HashAPIKey(rootSecret), Last4: rootSecret[len(rootSecret)-4:],
		Scopes: []string{"admin"}, Bootstrap: true, PreviousHash: account.HashAPIKey(prevSecret), PreviousExpiresAt: later, CreatedAt: at}
	child := oldlayout.APIKeyItem{ID: "key_01KF0E7ST00000000000000005", Name: "child", Hash: account.HashAPIKey(childSecret), Last4: childSecret[len(childSecret)-4:],
		Scopes: []string{"users:read"}, CreatedBy: root.ID, Ancestors: []string{root.ID}, OrganizationID: org.ID, OwnerID: ada.ID, Metadata: map[string]string{"env": "dev"}, CreatedAt: at, ExpiresAt: later}
	token := oldlayout.TokenItem{ID: "tok_01KF0E7ST00000000000000006", KeyID: child.ID, Scopes: child.Scopes, IssuedAt: time.Now().UTC().Truncate(time.Second), ExpiresAt: later}
	revoked := oldlayout.RevocationItem{TokenID: "tok_01KF0E7ST00000000000000007", KeyID: child.ID, RevokedAt: at, ExpiresAt: later}
	used := at.Add(time.Hour)

	dir := t.TempDir()
	path := filepath.Join(dir, "latchkey.db")
	writeOld(t, path, map[string]map[string]any{
		"users":        {ada.ID: ada, bob.ID: bob},
		"orgs":         {org.ID: org},
		"members":      {org.ID + "/" + ada.ID: owner, org.ID + "/" + bob.ID: member},
		"api_keys":     {child.ID: child, root.ID: root}, // any order
		"api_key_uses": {child.ID: used},
		"tokens":       {token.ID: token},
		"revocations":  {revoked.TokenID: revoked},
		"events":       {"01KF0E7ST00000000000000008": map[string]string{"type": "user.created"}},
	})
	old, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	var m boltstore.Migration
	s, err := boltstore.Open(path, boltstore.OnMigrated(func(got boltstore.Migration) { m = got }))
	if err != nil {
		t.Fatalf("Open of a file of the earlier layout: %v", err)
	}
	defer func() { s.Close() }()
	if m.Backup != path+boltstore.BackupSuffix || m.Users != 2 || m.Organizations != 1 || m.Members != 2 || m.APIKeys != 2 || m.KeyUses != 1 || m.Tokens != 1 || m.Revocations != 1 || m.Events != 1 {
		t.Errorf("migration: %+v", m)
	}
	if kept, err := os.ReadFile(path + boltstore.BackupSuffix); err != nil || string(kept) != string(old) {
		t.Errorf("the old file is not kept as it was at %s (%v)", path+boltstore.BackupSuffix, err)
	}

	for _, u := range []oldlayout.UserItem{ada, bob} {
		got, err := s.GetUserByEmail(ctx, u.Email)
		if err != nil || got.ID != u.ID || got.Name != u.Name || !got.CreatedAt.Equal(u.CreatedAt) {
			t.Errorf("user %s: got %+v, %v", u.Email, got, err)
		}
	}
	if got, err := s.GetUserByExternalID(ctx, "ext-ada"); err != nil || got.ID != ada.ID || got.Metadata["team"] != "core" {
		t.Errorf("user by external id: got %+v, %v", got, err)
	}
	if got, err := s.GetOrganizationBySlug(ctx, "acme"); err != nil || got.ID != org.ID {
		t.Errorf("organization: got %+v, %v", got, err)
	}
	members, err := s.ListMembers(ctx, org.ID, account.ListParams{Limit: 10})
	if err != nil || len(members.Items) != 2 {
		t.Fatalf("members: got %+v, %v", members, err)
	}
	// The owner count came with the owner: the last owner cannot leave.
	if err := s.RemoveMember(ctx, account.WriteOptions{}, org.ID, ada.ID); !account.IsCode(err, account.CodeLastOwner) {
		t.Errorf("removing the one owner: got %v, want %s", err, account.CodeLastOwner)
	}
	for secret, id := range map[string]string{rootSecret: root.ID, prevSecret: root.ID, childSecret: child.ID} {
		got, err := s.GetAPIKeyByHash(ctx, account.HashAPIKey(secret))
		if err != nil || got.ID != id {
			t.Errorf("key by the hash of its secret: got %q, %v; want %s", got.ID, err, id)
		}
	}
	// What Authenticate compares in constant time: the hashes as they were.
	if got, err := s.GetAPIKey(ctx, root.ID); err != nil || !bytes.Equal(got.Hash, root.Hash) || !bytes.Equal(got.PreviousHash, root.PreviousHash) ||
		!got.PreviousActive(time.Now()) || !got.Bootstrap {
		t.Errorf("root key: got %+v, %v", got, err)
	}
	got, err := s.GetAPIKey(ctx, child.ID)
	if err != nil || !got.LastUsedAt.Equal(used) || len(got.Ancestors) != 1 || got.OrganizationID != org.ID || got.OwnerID != ada.ID {
		t.Errorf("child key: got %+v, %v", got, err)
	}
	owned, err := s.ListAPIKeys(ctx, account.APIKeyFilter{OrganizationID: org.ID}, account.ListParams{Limit: 10})
	if err != nil || len(owned.Items) != 1 || owned.Items[0].ID != child.ID {
		t.Errorf("the organization's keys: got %+v, %v", owned, err)
	}
	st, err := s.TokenStatus(ctx, revoked.TokenID, child.ID, child.Ancestors, org.ID, false)
	if err != nil || !st.RevokedAt.Equal(revoked.RevokedAt) || st.Key == nil {
		t.Errorf("revoked token: got %+v, %v", st, err)
	}
	tokens, err := s.ListTokens(ctx, child.ID, time.Time{}, account.ListParams{Limit: 10})
	if err != nil || len(tokens.Items) != 1 || tokens.Items[0].ID != token.ID {
		t.Errorf("tokens: got %+v, %v", tokens, err)
	}

	// The new file opens as it is.
	s.Close()
	m = boltstore.Migration{}
	s, err = boltstore.Open(path, boltstore.OnMigrated(func(got boltstore.Migration) { m = got }))
	if err != nil || m.Backup != "" {
		t.Fatalf("second Open: %v, migration %+v", err, m)
	}
	if _, err := s.GetUser(ctx, ada.ID); err != nil {
		t.Errorf("after reopening: %v", err)
	}
}

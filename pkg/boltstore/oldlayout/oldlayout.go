// Package oldlayout reads a bbolt file of the embedded store's earlier
// layout (a bucket per entity, JSON values; the store of fda3049, before
// issue 20) and writes what it holds into a store of the single-table
// layout through the store's own methods, so that every rule of the new
// layout (guards, links, counts, TTL) holds for what is carried over.
// boltstore.Open calls it when it finds such a file.
package oldlayout

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"latchkey/pkg/account"
	"latchkey/pkg/tablestore"
)

// Buckets are the earlier layout's buckets. A file holds data of that
// layout if any of them holds anything.
var Buckets = []string{
	"users", "users_by_email", "users_by_external_id", "orgs", "orgs_by_slug", "orgs_by_external_id",
	"members", "members_by_org", "members_by_user",
	"api_keys", "api_keys_by_hash", "api_keys_by_parent", "api_key_uses", "api_keys_by_org", "api_keys_by_owner",
	"tokens", "tokens_by_key", "revocations", "expiries",
	"idempotency", "events", "events_by_org",
}

// Holds reports whether tx's file holds data of the earlier layout.
func Holds(tx *bolt.Tx) bool {
	for _, name := range Buckets {
		if b := tx.Bucket([]byte(name)); b != nil {
			if k, _ := b.Cursor().First(); k != nil {
				return true
			}
		}
	}
	return false
}

// Counts is what Copy carried over.
type Counts struct {
	Users, Organizations, Members, APIKeys, KeyUses, Tokens, Revocations int
	// Events and IdempotencyRecords were in the old file and are not
	// carried over: the old feed's ids and the new feed's are not one
	// sequence, and an idempotency record lives a day.
	Events, IdempotencyRecords int
}

// Copy writes everything tx's file holds in the earlier layout into s:
// users, organizations, memberships, API keys (hashes, ancestors,
// previous secrets, flags) with their last use, token records and
// revocations, each with the same ids and times. Its writes take no
// event source (zero account.WriteOptions), so the copy records no events. Expired token records and
// revocations are skipped; everything else that expired is left for the
// new store's TTL, as it would have been for the old one's pruning.
func Copy(ctx context.Context, tx *bolt.Tx, s *tablestore.Store, now time.Time) (Counts, error) {
	var c Counts
	var err error
	if c.Users, err = each(tx, "users", func(_ []byte, it userItem) error {
		return s.CreateUser(ctx, account.WriteOptions{}, it.domain())
	}); err != nil {
		return c, err
	}
	if c.Organizations, err = each(tx, "orgs", func(_ []byte, it orgItem) error {
		return s.CreateOrganization(ctx, account.WriteOptions{}, it.domain())
	}); err != nil {
		return c, err
	}
	if c.Members, err = each(tx, "members", func(_ []byte, it memberItem) error {
		return s.AddMember(ctx, account.WriteOptions{}, it.domain())
	}); err != nil {
		return c, err
	}
	// A key goes below its parent: parents first.
	var keys []account.APIKey
	if _, err = each(tx, "api_keys", func(_ []byte, it apiKeyItem) error {
		keys = append(keys, it.domain())
		return nil
	}); err != nil {
		return c, err
	}
	slices.SortStableFunc(keys, func(a, b account.APIKey) int { return len(a.Ancestors) - len(b.Ancestors) })
	uses := tx.Bucket([]byte("api_key_uses"))
	for _, k := range keys {
		if err := s.CreateAPIKey(ctx, account.WriteOptions{}, k); err != nil {
			return c, fmt.Errorf("API key %s: %w", k.ID, err)
		}
		c.APIKeys++
		if uses == nil {
			continue
		}
		if v := uses.Get([]byte(k.ID)); v != nil {
			var at time.Time
			if at.UnmarshalText(v) == nil { // a bad one read as never used
				if _, err := s.RecordAPIKeyUse(ctx, k, at); err != nil {
					return c, fmt.Errorf("API key %s's last use: %w", k.ID, err)
				}
				c.KeyUses++
			}
		}
	}
	if c.Tokens, err = each(tx, "tokens", func(_ []byte, it tokenItem) error {
		if !it.ExpiresAt.After(now) {
			return errSkip
		}
		return s.CreateToken(ctx, account.WriteOptions{}, account.TokenRecord{ID: it.ID, KeyID: it.KeyID, Scopes: it.Scopes, Audience: it.Audience, IssuedAt: it.IssuedAt, ExpiresAt: it.ExpiresAt})
	}); err != nil {
		return c, err
	}
	if c.Revocations, err = each(tx, "revocations", func(_ []byte, it revocationItem) error {
		if !it.ExpiresAt.After(now) {
			return errSkip
		}
		_, err := s.RevokeToken(ctx, account.WriteOptions{}, account.Revocation{TokenID: it.TokenID, KeyID: it.KeyID, RevokedAt: it.RevokedAt, ExpiresAt: it.ExpiresAt})
		return err
	}); err != nil {
		return c, err
	}
	c.Events = count(tx, "events")
	c.IdempotencyRecords = count(tx, "idempotency")
	return c, nil
}

// errSkip: each leaves the value out of its count.
var errSkip = fmt.Errorf("skip")

// each decodes every value of the bucket name as a T and calls fn with
// it, and returns how many it took.
func each[T any](tx *bolt.Tx, name string, fn func(k []byte, it T) error) (int, error) {
	b := tx.Bucket([]byte(name))
	if b == nil {
		return 0, nil
	}
	n := 0
	err := b.ForEach(func(k, v []byte) error {
		var it T
		if err := json.Unmarshal(v, &it); err != nil {
			return fmt.Errorf("%s %q: %w", name, k, err)
		}
		switch err := fn(k, it); {
		case err == errSkip:
		case err != nil:
			return fmt.Errorf("%s %q: %w", name, k, err)
		default:
			n++
		}
		return nil
	})
	return n, err
}

func count(tx *bolt.Tx, name string) int {
	if b := tx.Bucket([]byte(name)); b != nil {
		return b.Stats().KeyN
	}
	return 0
}

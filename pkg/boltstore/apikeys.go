package boltstore

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"latchkey/pkg/account"
)

// CreateAPIKey implements account.Store. A second key with the same hash
// (or ID) is refused: the hash is how a secret finds its key. A key with
// Ancestors is entered in the tree index under its parent, which must
// exist; deletes take a key's whole subtree in one transaction, so the
// other ancestors exist too.
func (s *Store) CreateAPIKey(ctx context.Context, k account.APIKey) error {
	ev := s.events(ctx)
	return s.write(ctx, func(tx *bolt.Tx) error {
		keys, hashes := tx.Bucket(bucketKeys), tx.Bucket(bucketKeyHashes)
		if n := len(k.Ancestors); n > 0 {
			parent := k.Ancestors[n-1]
			if keys.Get([]byte(parent)) == nil {
				return account.ErrAPIKeyNotFound()
			}
			if err := tx.Bucket(bucketKeyTree).Put(join(parent, k.ID), nil); err != nil {
				return err
			}
		}
		if k.OrganizationID != "" {
			if tx.Bucket(bucketOrgs).Get([]byte(k.OrganizationID)) == nil {
				return account.ErrOrganizationNotFound()
			}
			if err := tx.Bucket(bucketKeyOrgs).Put(join(k.OrganizationID, k.ID), nil); err != nil {
				return err
			}
		}
		if k.OwnerID != "" {
			if err := tx.Bucket(bucketKeyOwners).Put(ownerIndexKey(k.OwnerID, k.ID), nil); err != nil {
				return err
			}
		}
		if hashes.Get(k.Hash) != nil {
			return account.Internal(errors.New("boltstore: an API key with this hash exists already"))
		}
		if keys.Get([]byte(k.ID)) != nil {
			return account.Internal(fmt.Errorf("boltstore: API key %s exists already", k.ID))
		}
		if len(k.Hash) == 0 {
			return account.Internal(fmt.Errorf("boltstore: API key %s has no hash", k.ID))
		}
		if err := put(keys, []byte(k.ID), toAPIKeyItem(k)); err != nil {
			return err
		}
		if !k.ExpiresAt.IsZero() {
			drop := k.ExpiresAt.Add(account.ExpiredKeyRetention)
			if err := tx.Bucket(bucketExpiries).Put(join(sortTime(drop), expiryAPIKey, k.ID), nil); err != nil {
				return err
			}
		}
		if err := hashes.Put(k.Hash, []byte(k.ID)); err != nil {
			return err
		}
		return ev.emit(tx, account.EventAPIKeyCreated, k)
	})
}

// GetAPIKey implements account.Store.
func (s *Store) GetAPIKey(_ context.Context, id string) (account.APIKey, error) {
	var k account.APIKey
	err := s.read(func(tx *bolt.Tx) error {
		var err error
		k, err = s.readAPIKey(tx, []byte(id))
		k.LastUsedAt = lastUse(tx, id)
		return err
	})
	return k, err
}

// lastUse returns the key id's last use recorded, or the zero time.
func lastUse(tx *bolt.Tx, id string) time.Time {
	var t time.Time
	if v := tx.Bucket(bucketKeyUses).Get([]byte(id)); v != nil {
		_ = t.UnmarshalText(v) // written by RecordAPIKeyUse; a bad one reads as never used
	}
	return t
}

// RecordAPIKeyUse implements account.Store, in one write transaction: it
// reads the last use recorded, and records at only if that is at least
// account.KeyUseResolution older. A key deleted meanwhile gets nothing recorded.
func (s *Store) RecordAPIKeyUse(ctx context.Context, k account.APIKey, at time.Time) (time.Time, error) {
	last := at
	// Never part of a request's change: an idempotency record stays out.
	err := s.write(account.WithIdempotencyCommit(ctx, nil), func(tx *bolt.Tx) error {
		last = at
		if tx.Bucket(bucketKeys).Get([]byte(k.ID)) == nil {
			return nil
		}
		if prev := lastUse(tx, k.ID); prev.After(at.Add(-account.KeyUseResolution)) {
			last = prev
			return nil
		}
		v, err := at.UTC().MarshalText()
		if err != nil {
			return err
		}
		return tx.Bucket(bucketKeyUses).Put([]byte(k.ID), v)
	})
	return last, err
}

// readAPIKey reads the key id and sets its DisabledAbove from its
// ancestors. A delete takes a key and every key below it in one
// transaction, so the ancestors of a key that is there are there too.
// CodeNotFound.
func (s *Store) readAPIKey(tx *bolt.Tx, id []byte) (account.APIKey, error) {
	keys := tx.Bucket(bucketKeys)
	k, ok, err := s.keys.get(keys, id)
	if err != nil || !ok {
		return account.APIKey{}, orNotFound(err, account.ErrAPIKeyNotFound())
	}
	for _, a := range k.Ancestors {
		above, ok, err := s.keys.get(keys, []byte(a))
		if err != nil {
			return account.APIKey{}, err
		}
		k.DisabledAbove = k.DisabledAbove || (ok && above.Disabled)
	}
	return k, nil
}

// GetAPIKeyByHash implements account.Store.
func (s *Store) GetAPIKeyByHash(_ context.Context, hash []byte) (account.APIKey, error) {
	var k account.APIKey
	err := s.read(func(tx *bolt.Tx) error {
		if len(hash) == 0 {
			return account.ErrAPIKeyNotFound()
		}
		id := tx.Bucket(bucketKeyHashes).Get(hash)
		if id == nil {
			return account.ErrAPIKeyNotFound()
		}
		var err error
		k, err = s.readAPIKey(tx, id)
		return err
	})
	return k, err
}

// UpdateAPIKey implements account.Store: the read, allow and the write are
// one transaction, so the key changed is the key allow saw. A rotation
// enters the new hash in api_keys_by_hash, keeps the replaced one there
// for its grace period (an expiryKeyHash entry drops it after) or drops
// it at once, and drops an earlier previous hash.
func (s *Store) UpdateAPIKey(ctx context.Context, id string, p account.APIKeyPatch, allow func(account.APIKey) error) (account.APIKey, error) {
	var k account.APIKey
	ev := s.events(ctx)
	err := s.write(ctx, func(tx *bolt.Tx) error {
		var err error
		if k, err = s.readAPIKey(tx, []byte(id)); err != nil {
			return err
		}
		if allow != nil {
			if err := allow(k); err != nil {
				return err
			}
		}
		if p.Name != nil {
			k.Name = *p.Name
		}
		if p.Metadata != nil {
			k.Metadata = *p.Metadata
		}
		if p.Disabled != nil {
			k.Disabled = *p.Disabled
		}
		if p.RateLimits != nil {
			k.RateLimits = slices.Clip(*p.RateLimits)
			if len(k.RateLimits) == 0 {
				k.RateLimits = nil
			}
		}
		if p.Credits != nil {
			k.Credits = p.Credits.Credits
		}
		k.TokensRevokedBefore = p.TokensRevokedBefore(k.TokensRevokedBefore)
		hashes := tx.Bucket(bucketKeyHashes)
		if len(k.PreviousHash) > 0 && (p.Rotate != nil || !p.At.Before(k.PreviousExpiresAt)) {
			if err := dropHash(hashes, k.PreviousHash, id); err != nil {
				return err
			}
			k.PreviousHash, k.PreviousExpiresAt = nil, time.Time{}
		}
		if r := p.Rotate; r != nil {
			if len(r.Hash) == 0 || hashes.Get(r.Hash) != nil {
				return account.Internal(errors.New("boltstore: an API key with this hash exists already"))
			}
			if r.PreviousUntil.IsZero() {
				if err := dropHash(hashes, k.Hash, id); err != nil {
					return err
				}
			} else {
				k.PreviousHash, k.PreviousExpiresAt = k.Hash, r.PreviousUntil
				entry := join(sortTime(r.PreviousUntil), expiryKeyHash, hex.EncodeToString(k.Hash))
				if err := tx.Bucket(bucketExpiries).Put(entry, nil); err != nil {
					return err
				}
			}
			k.Hash, k.Last4 = r.Hash, r.Last4
			if err := hashes.Put(k.Hash, []byte(id)); err != nil {
				return err
			}
		}
		k.LastUsedAt = lastUse(tx, id)
		if err := put(tx.Bucket(bucketKeys), []byte(id), toAPIKeyItem(k)); err != nil {
			return err
		}
		if len(k.Metadata) == 0 {
			k.Metadata = nil // as a read would return it
		}
		return ev.emit(tx, p.EventType(), k)
	})
	if err != nil {
		return account.APIKey{}, err
	}
	if len(k.Metadata) == 0 {
		k.Metadata = nil // as a read would return it
	}
	return k, nil
}

// dropHash removes hash from api_keys_by_hash if it finds the key id.
func dropHash(hashes *bolt.Bucket, hash []byte, id string) error {
	if bytes.Equal(hashes.Get(hash), []byte(id)) {
		return hashes.Delete(hash)
	}
	return nil
}

// dropPreviousHash is the expiryKeyHash entry of hexHash falling due: if
// it is still a key's previous hash, the key's previous secret has stopped,
// and both its entry in api_keys_by_hash and the key's record of it go.
func dropPreviousHash(tx *bolt.Tx, hexHash string) error {
	hash, err := hex.DecodeString(hexHash)
	if err != nil {
		return fmt.Errorf("malformed hash %q in the expiry index", hexHash)
	}
	hashes, keys := tx.Bucket(bucketKeyHashes), tx.Bucket(bucketKeys)
	id := hashes.Get(hash)
	if id == nil {
		return nil
	}
	it, ok, err := get[apiKeyItem](keys, id)
	if err != nil || !ok || bytes.Equal(it.Hash, hash) {
		return err // the current secret, or a key gone: nothing to drop
	}
	if err := hashes.Delete(hash); err != nil {
		return err
	}
	if bytes.Equal(it.PreviousHash, hash) {
		it.PreviousHash, it.PreviousExpiresAt = nil, time.Time{}
		return put(keys, id, it)
	}
	return nil
}

// DeleteAPIKey implements account.Store: the key, every key below it, their
// hash entries and tree index entries go in one transaction, so every
// secret of the tree stops authenticating with this commit.
func (s *Store) DeleteAPIKey(ctx context.Context, id string, allow func(account.APIKey) error) error {
	ev := s.events(ctx)
	return s.write(ctx, func(tx *bolt.Tx) error {
		it, ok, err := get[apiKeyItem](tx.Bucket(bucketKeys), []byte(id))
		if err != nil || !ok {
			return orNotFound(err, account.ErrAPIKeyNotFound())
		}
		if allow != nil {
			if err := allow(it.domain()); err != nil {
				return err
			}
		}
		return deleteKeyTree(tx, ev, id)
	})
}

// deleteKeyTree removes the key id and every key below it, found through
// the tree index, each with deleteAPIKey and its event (ev).
func deleteKeyTree(tx *bolt.Tx, ev *emitter, id string) error {
	tree := tx.Bucket(bucketKeyTree)
	// Collect first: deleting under a live cursor can skip keys in bbolt.
	ids := []string{id}
	for i := 0; i < len(ids); i++ {
		prefix := []byte(ids[i] + "/")
		c := tree.Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			ids = append(ids, string(k[len(prefix):]))
		}
	}
	for _, id := range ids {
		if err := deleteAPIKey(tx, ev, id); err != nil {
			return err
		}
	}
	return nil
}

// deleteAPIKey removes the key id, its hash entry and its entry under its
// parent in the tree index, if the key is there, and records its event.
func deleteAPIKey(tx *bolt.Tx, ev *emitter, id string) error {
	keys := tx.Bucket(bucketKeys)
	it, ok, err := get[apiKeyItem](keys, []byte(id))
	if err != nil || !ok {
		return err
	}
	k := it.domain()
	k.LastUsedAt = lastUse(tx, id)
	if err := ev.emit(tx, account.EventAPIKeyDeleted, k); err != nil {
		return err
	}
	if err := keys.Delete([]byte(id)); err != nil {
		return err
	}
	if n := len(it.Ancestors); n > 0 {
		if err := tx.Bucket(bucketKeyTree).Delete(join(it.Ancestors[n-1], id)); err != nil {
			return err
		}
	}
	if err := tx.Bucket(bucketKeyUses).Delete([]byte(id)); err != nil {
		return err
	}
	if it.OrganizationID != "" {
		if err := tx.Bucket(bucketKeyOrgs).Delete(join(it.OrganizationID, id)); err != nil {
			return err
		}
	}
	if it.OwnerID != "" {
		if err := tx.Bucket(bucketKeyOwners).Delete(ownerIndexKey(it.OwnerID, id)); err != nil {
			return err
		}
	}
	hashes := tx.Bucket(bucketKeyHashes)
	if err := dropHash(hashes, it.PreviousHash, id); err != nil {
		return err
	}
	return dropHash(hashes, it.Hash, id)
}

// ListAPIKeys implements account.Store, in ULID (creation) order: from the
// keys, or from the index of the organization or the owner f names. With
// both, the organization's index is read and keys of other owners are left
// out of the page.
func (s *Store) ListAPIKeys(_ context.Context, f account.APIKeyFilter, p account.ListParams) (account.Page[account.APIKey], error) {
	var page account.Page[account.APIKey]
	err := s.read(func(tx *bolt.Tx) error {
		keys := tx.Bucket(bucketKeys)
		read := func(id string) (account.APIKey, error) {
			it, _, err := get[apiKeyItem](keys, []byte(id))
			k := it.domain()
			k.LastUsedAt = lastUse(tx, id)
			return k, err
		}
		var err error
		switch {
		case f.OrganizationID != "":
			page, err = list(tx.Bucket(bucketKeyOrgs), f.OrganizationID+"/", p, func(id string, _ []byte) (account.APIKey, error) { return read(id) })
		case f.OwnerID != "":
			page, err = list(tx.Bucket(bucketKeyOwners), f.OwnerID+"\x00", p, func(id string, _ []byte) (account.APIKey, error) { return read(id) })
		default:
			page, err = list(keys, "", p, func(id string, _ []byte) (account.APIKey, error) { return read(id) })
		}
		if f.OrganizationID != "" && f.OwnerID != "" {
			page.Items = slices.DeleteFunc(page.Items, func(k account.APIKey) bool { return k.OwnerID != f.OwnerID })
		}
		return err
	})
	return page, err
}

// ownerIndexKey is the key of the key id in api_keys_by_owner.
func ownerIndexKey(owner, id string) []byte { return []byte(owner + "\x00" + id) }

// deleteOrgKeys deletes the keys bound to the organization orgID, with the
// keys below them (bound to it too).
func deleteOrgKeys(tx *bolt.Tx, ev *emitter, orgID string) error {
	prefix := []byte(orgID + "/")
	var ids []string
	c := tx.Bucket(bucketKeyOrgs).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		ids = append(ids, string(k[len(prefix):]))
	}
	for _, id := range ids {
		if err := deleteKeyTree(tx, ev, id); err != nil {
			return err
		}
	}
	return nil
}

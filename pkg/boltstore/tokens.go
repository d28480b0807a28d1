package boltstore

import (
	"context"
	"time"

	bolt "go.etcd.io/bbolt"

	"latchkey/pkg/account"
)

// CreateToken implements account.Store. The record is also entered in
// tokens_by_key, under its key, and in the expiry index, so that pruning
// finds it without a scan.
func (s *Store) CreateToken(ctx context.Context, t account.TokenRecord) error {
	return s.write(ctx, func(tx *bolt.Tx) error {
		if err := put(tx.Bucket(bucketTokens), []byte(t.ID), toTokenItem(t)); err != nil {
			return err
		}
		if err := tx.Bucket(bucketKeyTokens).Put(join(t.KeyID, t.ID), nil); err != nil {
			return err
		}
		return tx.Bucket(bucketExpiries).Put(join(sortTime(t.ExpiresAt), expiryToken, t.ID), nil)
	})
}

// pruneToken deletes an expired token's record and its entry under its
// key.
func pruneToken(tx *bolt.Tx, id []byte) error {
	tokens := tx.Bucket(bucketTokens)
	it, ok, err := get[tokenItem](tokens, id)
	if err != nil || !ok {
		return err
	}
	if err := tx.Bucket(bucketKeyTokens).Delete(join(it.KeyID, it.ID)); err != nil {
		return err
	}
	return tokens.Delete(id)
}

// ListTokens implements account.Store: one read transaction walks the
// key's entries in tokens_by_key from the newest, stopping at the first
// issued at or before since, and reads each record and revocation entry.
func (s *Store) ListTokens(_ context.Context, keyID string, since time.Time, p account.ListParams) (account.Page[account.TokenRecord], error) {
	var page account.Page[account.TokenRecord]
	first := account.FirstID(account.PrefixToken, since.Add(time.Millisecond))
	err := s.read(func(tx *bolt.Tx) error {
		tokens, revoked := tx.Bucket(bucketTokens), tx.Bucket(bucketRevoked)
		var err error
		page, err = list(tx.Bucket(bucketKeyTokens), keyID+"/", p, func(id string, _ []byte) (account.TokenRecord, error) {
			if id < first {
				return account.TokenRecord{}, errListEnd
			}
			it, _, err := get[tokenItem](tokens, []byte(id))
			if err != nil {
				return account.TokenRecord{}, err
			}
			t := it.domain()
			r, ok, err := get[revocationItem](revoked, []byte(id))
			if ok {
				t.RevokedAt = r.RevokedAt
			}
			return t, err
		})
		return err
	})
	return page, err
}

// RevokeToken implements account.Store.
func (s *Store) RevokeToken(ctx context.Context, r account.Revocation) (time.Time, error) {
	var at time.Time
	ev := s.events(ctx)
	err := s.write(ctx, func(tx *bolt.Tx) error {
		revoked := tx.Bucket(bucketRevoked)
		it, ok, err := get[revocationItem](revoked, []byte(r.TokenID))
		if err != nil {
			return err
		}
		if ok {
			at = it.RevokedAt
			return errNothingChanged
		}
		at = r.RevokedAt
		if err := put(revoked, []byte(r.TokenID), toRevocationItem(r)); err != nil {
			return err
		}
		if err := tx.Bucket(bucketExpiries).Put(join(sortTime(r.ExpiresAt), expiryRevocation, r.TokenID), nil); err != nil {
			return err
		}
		return ev.emit(tx, account.EventTokenRevoked, r)
	})
	return at, err
}

// TokenStatus implements account.Store: one read transaction covers the
// revocation entry and the key (with its ancestors, for DisabledAbove), so
// they are consistent with each other. Whether the ancestors exist needs no
// reading: a delete takes a key and every key below it in one transaction,
// so a key is there only while they are.
func (s *Store) TokenStatus(_ context.Context, tokenID, keyID string, _ []string, _ string) (account.TokenStatus, error) {
	var st account.TokenStatus
	err := s.read(func(tx *bolt.Tx) error {
		r, ok, err := get[revocationItem](tx.Bucket(bucketRevoked), []byte(tokenID))
		if err != nil {
			return err
		}
		if ok {
			st.RevokedAt = r.RevokedAt
		}
		k, err := s.readAPIKey(tx, []byte(keyID))
		if account.IsCode(err, account.CodeNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		st.Key = &k
		return nil
	})
	return st, err
}

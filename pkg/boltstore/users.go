package boltstore

import (
	"bytes"
	"context"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"latchkey/pkg/account"
)

// CreateUser implements account.Store.
func (s *Store) CreateUser(_ context.Context, u account.User) error {
	return s.write(func(tx *bolt.Tx) error {
		users, emails := tx.Bucket(bucketUsers), tx.Bucket(bucketUserEmails)
		if emails.Get([]byte(u.Email)) != nil {
			return account.ErrEmailTaken()
		}
		if users.Get([]byte(u.ID)) != nil {
			return account.Internal(fmt.Errorf("boltstore: user %s exists already", u.ID))
		}
		if err := put(users, []byte(u.ID), toUserItem(u)); err != nil {
			return err
		}
		return emails.Put([]byte(u.Email), []byte(u.ID))
	})
}

// GetUser implements account.Store.
func (s *Store) GetUser(_ context.Context, id string) (account.User, error) {
	var u account.User
	err := s.read(func(tx *bolt.Tx) error {
		it, ok, err := get[userItem](tx.Bucket(bucketUsers), []byte(id))
		if err != nil || !ok {
			return orNotFound(err, account.ErrUserNotFound())
		}
		u = it.domain()
		return nil
	})
	return u, err
}

// GetUserByEmail implements account.Store.
func (s *Store) GetUserByEmail(_ context.Context, email string) (account.User, error) {
	var u account.User
	err := s.read(func(tx *bolt.Tx) error {
		id := tx.Bucket(bucketUserEmails).Get([]byte(email))
		if id == nil {
			return account.ErrUserNotFound()
		}
		it, ok, err := get[userItem](tx.Bucket(bucketUsers), id)
		if err != nil || !ok {
			// A guard without its user would be a broken invariant; answer
			// as the guard's absence would, and let the cause show in logs.
			return orNotFound(err, account.ErrUserNotFound())
		}
		u = it.domain()
		return nil
	})
	return u, err
}

// UpdateUser implements account.Store: the read, the patch and the write
// share one transaction, so a concurrent update cannot slip in between.
// The e-mail and its guard stay as they are.
func (s *Store) UpdateUser(_ context.Context, id string, p account.UserPatch) (account.User, error) {
	var u account.User
	err := s.write(func(tx *bolt.Tx) error {
		users := tx.Bucket(bucketUsers)
		it, ok, err := get[userItem](users, []byte(id))
		if err != nil || !ok {
			return orNotFound(err, account.ErrUserNotFound())
		}
		if p.Name != nil {
			it.Name = *p.Name
		}
		it.UpdatedAt = p.UpdatedAt
		if err := put(users, []byte(id), it); err != nil {
			return err
		}
		u = it.domain()
		return nil
	})
	if err != nil {
		return account.User{}, err
	}
	return u, nil
}

// DeleteUser implements account.Store: the user, its e-mail guard and all
// its memberships go in one transaction.
func (s *Store) DeleteUser(_ context.Context, id string) error {
	return s.write(func(tx *bolt.Tx) error {
		users := tx.Bucket(bucketUsers)
		it, ok, err := get[userItem](users, []byte(id))
		if err != nil || !ok {
			return orNotFound(err, account.ErrUserNotFound())
		}
		if err := users.Delete([]byte(id)); err != nil {
			return err
		}
		emails := tx.Bucket(bucketUserEmails)
		if bytes.Equal(emails.Get([]byte(it.Email)), []byte(id)) {
			if err := emails.Delete([]byte(it.Email)); err != nil {
				return err
			}
		}
		return deleteMemberships(tx, bucketUserOrgs, id, func(other string) (string, string) { return other, id })
	})
}

// ListUsers implements account.Store. Users are keyed by ID, a ULID, so
// key order is creation order.
func (s *Store) ListUsers(_ context.Context, p account.ListParams) (account.Page[account.User], error) {
	var page account.Page[account.User]
	err := s.read(func(tx *bolt.Tx) error {
		var err error
		page, err = list(tx.Bucket(bucketUsers), "", p, func(_ string, v []byte) (account.User, error) {
			it, err := decode[userItem](v)
			return it.domain(), err
		})
		return err
	})
	return page, err
}

package boltstore

import (
	"context"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"latchkey/pkg/account"
)

// CreateUser implements account.Store.
func (s *Store) CreateUser(ctx context.Context, u account.User) error {
	ev := s.events(ctx)
	return s.write(ctx, func(tx *bolt.Tx) error { return createUser(tx, ev, u) })
}

// CreateUserInOrganization implements account.Store: CreateUser and
// AddMember in one transaction.
func (s *Store) CreateUserInOrganization(ctx context.Context, u account.User, m account.Membership) error {
	ev := s.events(ctx)
	return s.write(ctx, func(tx *bolt.Tx) error {
		if err := createUser(tx, ev, u); err != nil {
			return err
		}
		return addMember(tx, ev, m)
	})
}

// createUser writes the user u and claims its unique values in tx.
func createUser(tx *bolt.Tx, ev *emitter, u account.User) error {
	if err := emailGuard.claim(tx, u.Email, u.ID); err != nil {
		return err
	}
	if err := userExtIDGuard.claim(tx, u.ExternalID, u.ID); err != nil {
		return err
	}
	users := tx.Bucket(bucketUsers)
	if users.Get([]byte(u.ID)) != nil {
		return account.Internal(fmt.Errorf("boltstore: user %s exists already", u.ID))
	}
	if err := put(users, []byte(u.ID), toUserItem(u)); err != nil {
		return err
	}
	return ev.emit(tx, account.EventUserCreated, u)
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
	var it userItem
	err := s.read(func(tx *bolt.Tx) (err error) {
		it, err = lookupBy[userItem](tx, emailGuard, bucketUsers, email, account.ErrUserNotFound())
		return err
	})
	return it.domain(), err
}

// UpdateUser implements account.Store: the read, the patch and the write
// share one transaction, so a concurrent update cannot slip in between. A
// new e-mail or external id is claimed, and the old one freed, in it too.
func (s *Store) UpdateUser(ctx context.Context, id string, p account.UserPatch) (account.User, error) {
	var u account.User
	ev := s.events(ctx)
	err := s.write(ctx, func(tx *bolt.Tx) error {
		users := tx.Bucket(bucketUsers)
		it, ok, err := get[userItem](users, []byte(id))
		if err != nil || !ok {
			return orNotFound(err, account.ErrUserNotFound())
		}
		if p.Email != nil {
			if err := emailGuard.move(tx, it.Email, *p.Email, id); err != nil {
				return err
			}
		}
		if p.ExternalID != nil {
			if err := userExtIDGuard.move(tx, it.ExternalID, *p.ExternalID, id); err != nil {
				return err
			}
		}
		u = p.Apply(it.domain())
		u.UpdatedAt = account.NextUpdatedAt(p.UpdatedAt, it.UpdatedAt)
		if err := put(users, []byte(id), toUserItem(u)); err != nil {
			return err
		}
		return ev.emit(tx, account.EventUserUpdated, u)
	})
	if err != nil {
		return account.User{}, err
	}
	return u, nil
}

// DeleteUser implements account.Store: the user, its e-mail guard and all
// its memberships go in one transaction.
func (s *Store) DeleteUser(ctx context.Context, id string) error {
	ev := s.events(ctx)
	return s.write(ctx, func(tx *bolt.Tx) error {
		users := tx.Bucket(bucketUsers)
		it, ok, err := get[userItem](users, []byte(id))
		if err != nil || !ok {
			return orNotFound(err, account.ErrUserNotFound())
		}
		if err := users.Delete([]byte(id)); err != nil {
			return err
		}
		if err := emailGuard.release(tx, it.Email, id); err != nil {
			return err
		}
		if err := userExtIDGuard.release(tx, it.ExternalID, id); err != nil {
			return err
		}
		if err := deleteMemberships(tx, ev, bucketUserOrgs, id, func(other string) (string, string) { return other, id }); err != nil {
			return err
		}
		return ev.emit(tx, account.EventUserDeleted, it.domain())
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

// GetUserByExternalID implements account.Store.
func (s *Store) GetUserByExternalID(_ context.Context, externalID string) (account.User, error) {
	var it userItem
	err := s.read(func(tx *bolt.Tx) (err error) {
		it, err = lookupBy[userItem](tx, userExtIDGuard, bucketUsers, externalID, account.ErrUserNotFound())
		return err
	})
	return it.domain(), err
}

package boltstore

import (
	"context"
	"fmt"
	"strings"

	bolt "go.etcd.io/bbolt"

	"latchkey/pkg/account"
)

// AddMember implements account.Store. The existence checks and the three
// writes share one transaction, so a membership never outlives a user or
// organization deleted concurrently.
func (s *Store) AddMember(_ context.Context, m account.Membership) error {
	return s.write(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketOrgs).Get([]byte(m.OrganizationID)) == nil {
			return account.ErrOrganizationNotFound()
		}
		if tx.Bucket(bucketUsers).Get([]byte(m.UserID)) == nil {
			return account.ErrUserNotFound()
		}
		members := tx.Bucket(bucketMembers)
		key := join(m.OrganizationID, m.UserID)
		if members.Get(key) != nil {
			return account.ErrAlreadyMember()
		}
		if err := put(members, key, toMemberItem(m)); err != nil {
			return err
		}
		at := sortTime(m.CreatedAt)
		if err := tx.Bucket(bucketOrgMembers).Put(join(m.OrganizationID, at, m.UserID), nil); err != nil {
			return err
		}
		return tx.Bucket(bucketUserOrgs).Put(join(m.UserID, at, m.OrganizationID), nil)
	})
}

// GetMember implements account.Store.
func (s *Store) GetMember(_ context.Context, orgID, userID string) (account.Membership, error) {
	var m account.Membership
	err := s.read(func(tx *bolt.Tx) error {
		it, ok, err := get[memberItem](tx.Bucket(bucketMembers), join(orgID, userID))
		if err != nil || !ok {
			return orNotFound(err, account.ErrMembershipNotFound())
		}
		m = it.domain()
		return nil
	})
	return m, err
}

// UpdateMember implements account.Store as UpdateUser does. Only role and
// updated_at change: created_at is part of the list index keys.
func (s *Store) UpdateMember(_ context.Context, orgID, userID string, p account.MemberPatch) (account.Membership, error) {
	var m account.Membership
	err := s.write(func(tx *bolt.Tx) error {
		members := tx.Bucket(bucketMembers)
		key := join(orgID, userID)
		it, ok, err := get[memberItem](members, key)
		if err != nil || !ok {
			return orNotFound(err, account.ErrMembershipNotFound())
		}
		it.Role, it.UpdatedAt = p.Role, p.UpdatedAt
		if err := put(members, key, it); err != nil {
			return err
		}
		m = it.domain()
		return nil
	})
	if err != nil {
		return account.Membership{}, err
	}
	return m, nil
}

// RemoveMember implements account.Store.
func (s *Store) RemoveMember(_ context.Context, orgID, userID string) error {
	return s.write(func(tx *bolt.Tx) error { return removeMember(tx, orgID, userID) })
}

// removeMember deletes a membership and both of its index entries.
func removeMember(tx *bolt.Tx, orgID, userID string) error {
	members := tx.Bucket(bucketMembers)
	key := join(orgID, userID)
	it, ok, err := get[memberItem](members, key)
	if err != nil || !ok {
		return orNotFound(err, account.ErrMembershipNotFound())
	}
	at := sortTime(it.CreatedAt)
	if err := members.Delete(key); err != nil {
		return err
	}
	if err := tx.Bucket(bucketOrgMembers).Delete(join(orgID, at, userID)); err != nil {
		return err
	}
	return tx.Bucket(bucketUserOrgs).Delete(join(userID, at, orgID))
}

// ListMembers implements account.Store, newest membership first. The
// position is "<sort time>/<user id>".
func (s *Store) ListMembers(_ context.Context, orgID string, p account.ListParams) (account.Page[account.Membership], error) {
	return s.listMemberships(bucketOrgMembers, orgID, p, func(other string) (string, string) { return orgID, other })
}

// ListUserMemberships implements account.Store, newest membership first.
// The position is "<sort time>/<organization id>".
func (s *Store) ListUserMemberships(_ context.Context, userID string, p account.ListParams) (account.Page[account.Membership], error) {
	return s.listMemberships(bucketUserOrgs, userID, p, func(other string) (string, string) { return other, userID })
}

func (s *Store) listMemberships(idx []byte, owner string, p account.ListParams, pair func(other string) (orgID, userID string)) (account.Page[account.Membership], error) {
	var page account.Page[account.Membership]
	err := s.read(func(tx *bolt.Tx) error {
		members := tx.Bucket(bucketMembers)
		var err error
		page, err = list(tx.Bucket(idx), owner+"/", p, func(suffix string, _ []byte) (account.Membership, error) {
			_, other, ok := strings.Cut(suffix, "/")
			if !ok {
				return account.Membership{}, fmt.Errorf("malformed membership index key %q", suffix)
			}
			orgID, userID := pair(other)
			it, found, err := get[memberItem](members, join(orgID, userID))
			if err == nil && !found {
				err = fmt.Errorf("membership index entry %s/%s has no membership", owner, suffix)
			}
			return it.domain(), err
		})
		return err
	})
	return page, err
}

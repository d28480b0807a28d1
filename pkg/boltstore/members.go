package boltstore

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	bolt "go.etcd.io/bbolt"

	"latchkey/pkg/account"
)

// AddMember implements account.Store. The existence checks and the three
// writes share one transaction, so a membership never outlives a user or
// organization deleted concurrently.
func (s *Store) AddMember(ctx context.Context, m account.Membership) error {
	ev := s.events(ctx)
	return s.write(ctx, func(tx *bolt.Tx) error { return addMember(tx, ev, m) })
}

// addMember checks that the organization and the user exist and writes
// the membership m and its index entries in tx.
func addMember(tx *bolt.Tx, ev *emitter, m account.Membership) error {
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
	if err := tx.Bucket(bucketUserOrgs).Put(join(m.UserID, at, m.OrganizationID), nil); err != nil {
		return err
	}
	return ev.emit(tx, account.EventOrganizationMembershipCreated, m)
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
// updated_at change: created_at is part of the list index keys. Writes are
// serial, so the last-owner check and the write cannot be separated by
// another.
func (s *Store) UpdateMember(ctx context.Context, orgID, userID string, p account.MemberPatch) (account.Membership, error) {
	var m account.Membership
	ev := s.events(ctx)
	err := s.write(ctx, func(tx *bolt.Tx) error {
		members := tx.Bucket(bucketMembers)
		key := join(orgID, userID)
		it, ok, err := get[memberItem](members, key)
		if err != nil || !ok {
			return orNotFound(err, account.ErrMembershipNotFound())
		}
		if it.Role == account.OwnerRole && p.Role != account.OwnerRole {
			if err := keepsAnOwner(tx, orgID, userID); err != nil {
				return err
			}
		}
		it.Role, it.UpdatedAt = p.Role, p.UpdatedAt
		if err := put(members, key, it); err != nil {
			return err
		}
		m = it.domain()
		return ev.emit(tx, account.EventOrganizationMembershipUpdated, m)
	})
	if err != nil {
		return account.Membership{}, err
	}
	return m, nil
}

// RemoveMember implements account.Store, with the last-owner check in the
// same transaction as the delete.
func (s *Store) RemoveMember(ctx context.Context, orgID, userID string) error {
	ev := s.events(ctx)
	return s.write(ctx, func(tx *bolt.Tx) error {
		it, ok, err := get[memberItem](tx.Bucket(bucketMembers), join(orgID, userID))
		if err != nil || !ok {
			return orNotFound(err, account.ErrMembershipNotFound())
		}
		if it.Role == account.OwnerRole {
			if err := keepsAnOwner(tx, orgID, userID); err != nil {
				return err
			}
		}
		return removeMember(tx, ev, orgID, userID)
	})
}

// keepsAnOwner returns account.ErrLastOwner unless the organization has an
// owner besides userID. It walks the organization's members until it finds
// one: a count on the organization would save the walk, but would be a
// second record of the same fact, and a local read of a member is cheap.
func keepsAnOwner(tx *bolt.Tx, orgID, userID string) error {
	members := tx.Bucket(bucketMembers)
	prefix := []byte(orgID + "/")
	c := tx.Bucket(bucketOrgMembers).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		_, other, ok := strings.Cut(string(k[len(prefix):]), "/")
		if !ok {
			return fmt.Errorf("malformed membership index key %q", k)
		}
		if other == userID {
			continue
		}
		it, found, err := get[memberItem](members, join(orgID, other))
		if err != nil {
			return err
		}
		if found && it.Role == account.OwnerRole {
			return nil
		}
	}
	return account.ErrLastOwner()
}

// removeMember deletes a membership and both of its index entries. It
// does not check the last-owner rule: a cascade (deleting a user or an
// organization) may remove an organization's last owner. ev records its
// event.
func removeMember(tx *bolt.Tx, ev *emitter, orgID, userID string) error {
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
	if err := tx.Bucket(bucketUserOrgs).Delete(join(userID, at, orgID)); err != nil {
		return err
	}
	return ev.emit(tx, account.EventOrganizationMembershipDeleted, it.domain())
}

// ListMembers implements account.Store, newest membership first. The
// position is "<sort time>/<user id>".
func (s *Store) ListMembers(_ context.Context, orgID string, p account.ListParams) (account.Page[account.Membership], error) {
	return listMemberships(s, bucketOrgMembers, orgID, p, func(other string) (string, string) { return orgID, other },
		func(_ *bolt.Tx, it memberItem) (account.Membership, error) { return it.domain(), nil })
}

// ListOrganizationUsers implements account.Store: the members' list, each
// with its user, read in the same transaction.
func (s *Store) ListOrganizationUsers(_ context.Context, orgID string, p account.ListParams) (account.Page[account.User], error) {
	return listMemberships(s, bucketOrgMembers, orgID, p, func(other string) (string, string) { return orgID, other },
		func(tx *bolt.Tx, it memberItem) (account.User, error) {
			u, found, err := get[userItem](tx.Bucket(bucketUsers), []byte(it.UserID))
			if err == nil && !found {
				// A user's delete takes its memberships in the same
				// transaction, as an organization's does.
				err = fmt.Errorf("membership %s/%s has no user", it.OrganizationID, it.UserID)
			}
			return u.domain(), err
		})
}

// ListUserMemberships implements account.Store, newest membership first,
// each with its organization's name and slug, read in the same
// transaction. The position is "<sort time>/<organization id>".
func (s *Store) ListUserMemberships(_ context.Context, userID string, p account.ListParams) (account.Page[account.UserMembership], error) {
	return listMemberships(s, bucketUserOrgs, userID, p, func(other string) (string, string) { return other, userID },
		func(tx *bolt.Tx, it memberItem) (account.UserMembership, error) {
			o, found, err := get[orgItem](tx.Bucket(bucketOrgs), []byte(it.OrganizationID))
			if err == nil && !found {
				// An organization's delete takes its memberships in the
				// same transaction: a membership without one is a broken
				// invariant.
				err = fmt.Errorf("membership %s/%s has no organization", it.OrganizationID, it.UserID)
			}
			return account.UserMembership{Membership: it.domain(), OrganizationName: o.Name, OrganizationSlug: o.Slug}, err
		})
}

// listMemberships reads a page of the membership index idx under owner;
// pair maps the other side's id to (org id, user id), and conv turns each
// membership into the list's item.
func listMemberships[T any](s *Store, idx []byte, owner string, p account.ListParams, pair func(other string) (orgID, userID string), conv func(*bolt.Tx, memberItem) (T, error)) (account.Page[T], error) {
	var page account.Page[T]
	err := s.read(func(tx *bolt.Tx) error {
		members := tx.Bucket(bucketMembers)
		var err error
		page, err = list(tx.Bucket(idx), owner+"/", p, func(suffix string, _ []byte) (T, error) {
			var zero T
			_, other, ok := strings.Cut(suffix, "/")
			if !ok {
				return zero, fmt.Errorf("malformed membership index key %q", suffix)
			}
			orgID, userID := pair(other)
			it, found, err := get[memberItem](members, join(orgID, userID))
			if err == nil && !found {
				err = fmt.Errorf("membership index entry %s/%s has no membership", owner, suffix)
			}
			if err != nil {
				return zero, err
			}
			return conv(tx, it)
		})
		return err
	})
	return page, err
}

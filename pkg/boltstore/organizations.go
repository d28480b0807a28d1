package boltstore

import (
	"context"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"latchkey/pkg/account"
)

// CreateOrganization implements account.Store.
func (s *Store) CreateOrganization(ctx context.Context, o account.Organization) error {
	ev := s.events(ctx)
	return s.write(ctx, func(tx *bolt.Tx) error {
		if err := slugGuard.claim(tx, o.Slug, o.ID); err != nil {
			return err
		}
		if err := orgExtIDGuard.claim(tx, o.ExternalID, o.ID); err != nil {
			return err
		}
		orgs := tx.Bucket(bucketOrgs)
		if orgs.Get([]byte(o.ID)) != nil {
			return account.Internal(fmt.Errorf("boltstore: organization %s exists already", o.ID))
		}
		if err := put(orgs, []byte(o.ID), toOrgItem(o)); err != nil {
			return err
		}
		return ev.emit(tx, account.EventOrganizationCreated, o)
	})
}

// GetOrganization implements account.Store.
func (s *Store) GetOrganization(_ context.Context, id string) (account.Organization, error) {
	var o account.Organization
	err := s.read(func(tx *bolt.Tx) error {
		it, ok, err := get[orgItem](tx.Bucket(bucketOrgs), []byte(id))
		if err != nil || !ok {
			return orNotFound(err, account.ErrOrganizationNotFound())
		}
		o = it.domain()
		return nil
	})
	return o, err
}

// UpdateOrganization implements account.Store as UpdateUser does. The slug
// and its guard stay as they are.
func (s *Store) UpdateOrganization(ctx context.Context, id string, p account.OrganizationPatch) (account.Organization, error) {
	var o account.Organization
	ev := s.events(ctx)
	err := s.write(ctx, func(tx *bolt.Tx) error {
		orgs := tx.Bucket(bucketOrgs)
		it, ok, err := get[orgItem](orgs, []byte(id))
		if err != nil || !ok {
			return orNotFound(err, account.ErrOrganizationNotFound())
		}
		if p.ExternalID != nil {
			if err := orgExtIDGuard.move(tx, it.ExternalID, *p.ExternalID, id); err != nil {
				return err
			}
		}
		o = p.Apply(it.domain())
		o.UpdatedAt = account.NextUpdatedAt(p.UpdatedAt, it.UpdatedAt)
		if err := put(orgs, []byte(id), toOrgItem(o)); err != nil {
			return err
		}
		return ev.emit(tx, account.EventOrganizationUpdated, o)
	})
	if err != nil {
		return account.Organization{}, err
	}
	return o, nil
}

// DeleteOrganization implements account.Store: the organization, its slug
// guard and all its memberships go in one transaction.
func (s *Store) DeleteOrganization(ctx context.Context, id string) error {
	ev := s.events(ctx)
	return s.write(ctx, func(tx *bolt.Tx) error {
		orgs := tx.Bucket(bucketOrgs)
		it, ok, err := get[orgItem](orgs, []byte(id))
		if err != nil || !ok {
			return orNotFound(err, account.ErrOrganizationNotFound())
		}
		if err := orgs.Delete([]byte(id)); err != nil {
			return err
		}
		if err := deleteOrgKeys(tx, ev, id); err != nil {
			return err
		}
		if err := slugGuard.release(tx, it.Slug, id); err != nil {
			return err
		}
		if err := orgExtIDGuard.release(tx, it.ExternalID, id); err != nil {
			return err
		}
		if err := deleteMemberships(tx, ev, bucketOrgMembers, id, func(other string) (string, string) { return id, other }); err != nil {
			return err
		}
		return ev.emit(tx, account.EventOrganizationDeleted, it.domain())
	})
}

// ListOrganizations implements account.Store, in ULID (creation) order.
func (s *Store) ListOrganizations(_ context.Context, p account.ListParams) (account.Page[account.Organization], error) {
	var page account.Page[account.Organization]
	err := s.read(func(tx *bolt.Tx) error {
		var err error
		page, err = list(tx.Bucket(bucketOrgs), "", p, func(_ string, v []byte) (account.Organization, error) {
			it, err := decode[orgItem](v)
			return it.domain(), err
		})
		return err
	})
	return page, err
}

// GetOrganizationBySlug implements account.Store.
func (s *Store) GetOrganizationBySlug(_ context.Context, slug string) (account.Organization, error) {
	var it orgItem
	err := s.read(func(tx *bolt.Tx) (err error) {
		it, err = lookupBy[orgItem](tx, slugGuard, bucketOrgs, slug, account.ErrOrganizationNotFound())
		return err
	})
	return it.domain(), err
}

// GetOrganizationByExternalID implements account.Store.
func (s *Store) GetOrganizationByExternalID(_ context.Context, externalID string) (account.Organization, error) {
	var it orgItem
	err := s.read(func(tx *bolt.Tx) (err error) {
		it, err = lookupBy[orgItem](tx, orgExtIDGuard, bucketOrgs, externalID, account.ErrOrganizationNotFound())
		return err
	})
	return it.domain(), err
}

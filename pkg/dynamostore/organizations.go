package dynamostore

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"latchkey/pkg/account"
)

// CreateOrganization writes the organization and its slug guard in one
// transaction; see claim. CodeSlugTaken.
func (s *Store) CreateOrganization(ctx context.Context, o account.Organization) error {
	items, err := build(
		func() (types.TransactWriteItem, error) { return s.put(newOrgItem(o), condAbsent) },
		func() (types.TransactWriteItem, error) {
			return s.put(guardItem{key: slugKey(o.Slug), OwnerID: o.ID}, condAbsent)
		},
	)
	if err != nil {
		return err
	}
	return s.claim(ctx, items, account.ErrSlugTaken(), orgKey, s.DeleteOrganization)
}

// GetOrganization reads the organization strongly consistently.
// CodeNotFound, also for an organization whose delete has begun.
func (s *Store) GetOrganization(ctx context.Context, id string) (account.Organization, error) {
	var it orgItem
	found, err := s.getItem(ctx, orgKey(id), &it)
	if err != nil {
		return account.Organization{}, err
	}
	if !found || it.Deleting {
		return account.Organization{}, account.ErrOrganizationNotFound()
	}
	return it.organization(), nil
}

// UpdateOrganization applies the patch as UpdateUser does: one UpdateItem,
// no read. CodeNotFound, also while the organization is being deleted.
func (s *Store) UpdateOrganization(ctx context.Context, id string, p account.OrganizationPatch) (account.Organization, error) {
	upd := expression.Set(expression.Name("updated_at"), expression.Value(p.UpdatedAt.UTC()))
	if p.Name != nil {
		upd = upd.Set(expression.Name("name"), expression.Value(*p.Name))
	}
	if p.Plan != nil {
		upd = upd.Set(expression.Name("plan"), expression.Value(*p.Plan))
	}
	var it orgItem
	if err := s.updateItem(ctx, orgKey(id), upd, condLive, &it, account.ErrOrganizationNotFound()); err != nil {
		return account.Organization{}, err
	}
	return it.organization(), nil
}

// DeleteOrganization deletes the organization, both sides of each of its
// memberships and its slug guard; see cascade for organizations with more
// than 49 members. CodeNotFound.
func (s *Store) DeleteOrganization(ctx context.Context, id string) error {
	var o orgItem
	if err := s.markDeleting(ctx, orgKey(id), &o, account.ErrOrganizationNotFound()); err != nil {
		return err
	}
	return s.deleteWithMemberships(ctx, id, orgKey(id), slugKey(o.Slug), func(userID string) [2]key {
		return [2]key{orgMemberKey(id, userID), userMemberKey(userID, id)}
	}, account.ErrOrganizationNotFound())
}

// ListOrganizations lists organizations newest first from the ORGS
// partition of gsi1.
func (s *Store) ListOrganizations(ctx context.Context, p account.ListParams) (account.Page[account.Organization], error) {
	return list(ctx, s, listOrgs, prefixOrg, p, func(it orgItem) (account.Organization, bool) {
		return it.organization(), !it.Deleting // as in GetOrganization
	})
}

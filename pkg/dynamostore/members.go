package dynamostore

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"latchkey/pkg/account"
)

// AddMember checks that the organization and the user exist (and are not
// being deleted) and writes both sides of the membership, in one
// transaction. CodeNotFound naming the organization or the user;
// CodeAlreadyMember.
func (s *Store) AddMember(ctx context.Context, m account.Membership) error {
	orgSide, userSide := newMemberItems(m)
	items, err := build(
		func() (types.TransactWriteItem, error) { return s.check(orgKey(m.OrganizationID), condLive) },
		func() (types.TransactWriteItem, error) { return s.check(userKey(m.UserID), condLive) },
		func() (types.TransactWriteItem, error) { return s.put(orgSide, condAbsent) },
		func() (types.TransactWriteItem, error) { return s.put(userSide, condAbsent) },
	)
	if err != nil {
		return err
	}
	return s.transact(ctx, items, account.ErrOrganizationNotFound(), account.ErrUserNotFound(), account.ErrAlreadyMember(), account.ErrAlreadyMember())
}

// GetMember reads the organization's side of the membership strongly
// consistently. CodeNotFound.
func (s *Store) GetMember(ctx context.Context, orgID, userID string) (account.Membership, error) {
	var it memberItem
	found, err := s.getItem(ctx, orgMemberKey(orgID, userID), &it)
	if err != nil {
		return account.Membership{}, err
	}
	if !found {
		return account.Membership{}, account.ErrMembershipNotFound()
	}
	return it.membership(), nil
}

// UpdateMember sets role and updated_at on both sides in one transaction,
// then reads the organization's side strongly consistently for the one
// thing the patch does not say, created_at (a transaction returns no
// items): 2 requests. Role and updated_at come from the patch, so the
// result is the membership as this update left it even if another update
// lands between the two requests. A membership removed in that instant is
// reported not found, as if the removal had come first. CodeNotFound.
func (s *Store) UpdateMember(ctx context.Context, orgID, userID string, p account.MemberPatch) (account.Membership, error) {
	updatedAt := p.UpdatedAt.UTC()
	upd := expression.Set(expression.Name("role"), expression.Value(p.Role)).
		Set(expression.Name("updated_at"), expression.Value(updatedAt))
	items, err := build(
		func() (types.TransactWriteItem, error) {
			return s.update(orgMemberKey(orgID, userID), upd, condPresent)
		},
		func() (types.TransactWriteItem, error) {
			return s.update(userMemberKey(userID, orgID), upd, condPresent)
		},
	)
	if err != nil {
		return account.Membership{}, err
	}
	if err := s.transact(ctx, items, account.ErrMembershipNotFound(), account.ErrMembershipNotFound()); err != nil {
		return account.Membership{}, err
	}
	var it memberItem
	found, err := s.getItem(ctx, orgMemberKey(orgID, userID), &it)
	if err != nil {
		return account.Membership{}, err
	}
	if !found {
		return account.Membership{}, account.ErrMembershipNotFound()
	}
	m := it.membership()
	m.Role, m.UpdatedAt = p.Role, updatedAt
	return m, nil
}

// RemoveMember deletes both sides in one transaction. CodeNotFound.
func (s *Store) RemoveMember(ctx context.Context, orgID, userID string) error {
	items, err := build(
		func() (types.TransactWriteItem, error) { return s.del(orgMemberKey(orgID, userID), &condPresent) },
		func() (types.TransactWriteItem, error) { return s.del(userMemberKey(userID, orgID), &condPresent) },
	)
	if err != nil {
		return err
	}
	return s.transact(ctx, items, account.ErrMembershipNotFound(), account.ErrMembershipNotFound())
}

// ListMembers lists an organization's memberships, newest first.
func (s *Store) ListMembers(ctx context.Context, orgID string, p account.ListParams) (account.Page[account.Membership], error) {
	return s.listMemberships(ctx, membersList(orgID), orgKey(orgID).PK, p)
}

// ListUserMemberships lists a user's memberships, newest first.
func (s *Store) ListUserMemberships(ctx context.Context, userID string, p account.ListParams) (account.Page[account.Membership], error) {
	return s.listMemberships(ctx, memberOfList(userID), userKey(userID).PK, p)
}

// listMemberships lists the gsi1 partition of one side's memberships,
// whose items are all in that side's partition, owner.
func (s *Store) listMemberships(ctx context.Context, partition, owner string, p account.ListParams) (account.Page[account.Membership], error) {
	return list(ctx, s, partition, owner, p, func(it memberItem) (account.Membership, bool) { return it.membership(), true })
}

package dynamostore

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"latchkey/pkg/account"
)

// CreateUser writes the user and its e-mail guard in one transaction; see
// claim for an e-mail held by a user whose delete was cut off.
// CodeEmailTaken.
func (s *Store) CreateUser(ctx context.Context, u account.User) error {
	items, err := build(
		func() (types.TransactWriteItem, error) { return s.put(newUserItem(u), condAbsent) },
		func() (types.TransactWriteItem, error) {
			return s.put(guardItem{key: emailKey(u.Email), OwnerID: u.ID}, condAbsent)
		},
	)
	if err != nil {
		return err
	}
	return s.claim(ctx, items, account.ErrEmailTaken(), userKey, s.DeleteUser)
}

// GetUser reads the user strongly consistently, so that a client reads its
// own writes. CodeNotFound, also for a user whose delete has begun.
func (s *Store) GetUser(ctx context.Context, id string) (account.User, error) {
	var it userItem
	found, err := s.getItem(ctx, userKey(id), &it)
	if err != nil {
		return account.User{}, err
	}
	if !found || it.Deleting {
		// A user whose delete has begun is gone to readers, as it is to
		// updates and AddMember; the delete's retry still finds it.
		return account.User{}, account.ErrUserNotFound()
	}
	return it.user(), nil
}

// GetUserByEmail reads the e-mail guard, then the user it names, both
// strongly consistently. CodeNotFound.
func (s *Store) GetUserByEmail(ctx context.Context, email string) (account.User, error) {
	var g guardItem
	found, err := s.getItem(ctx, emailKey(email), &g)
	if err != nil {
		return account.User{}, err
	}
	if !found {
		return account.User{}, account.ErrUserNotFound()
	}
	return s.GetUser(ctx, g.OwnerID)
}

// UpdateUser applies the patch with one UpdateItem that sets only the
// fields it holds, so a concurrent update of another field is kept, and
// returns the item as written (ReturnValues ALL_NEW): no read before or
// after. A user whose deletion has begun is not found. CodeNotFound.
func (s *Store) UpdateUser(ctx context.Context, id string, p account.UserPatch) (account.User, error) {
	upd := expression.Set(expression.Name("updated_at"), expression.Value(p.UpdatedAt.UTC()))
	if p.Name != nil {
		upd = upd.Set(expression.Name("name"), expression.Value(*p.Name))
	}
	var it userItem
	if err := s.updateItem(ctx, userKey(id), upd, condLive, &it, account.ErrUserNotFound()); err != nil {
		return account.User{}, err
	}
	return it.user(), nil
}

// DeleteUser deletes the user, both sides of each of its memberships and its
// e-mail guard; see cascade for users with more than 49 memberships.
// CodeNotFound.
func (s *Store) DeleteUser(ctx context.Context, id string) error {
	var u userItem
	if err := s.markDeleting(ctx, userKey(id), &u, account.ErrUserNotFound()); err != nil {
		return err
	}
	return s.deleteWithMemberships(ctx, id, userKey(id), emailKey(u.Email), func(orgID string) [2]key {
		return [2]key{orgMemberKey(orgID, id), userMemberKey(id, orgID)}
	}, account.ErrUserNotFound())
}

// ListUsers lists users newest first from the USERS partition of gsi1.
func (s *Store) ListUsers(ctx context.Context, p account.ListParams) (account.Page[account.User], error) {
	return list(ctx, s, listUsers, prefixUser, p, func(it userItem) (account.User, bool) {
		return it.user(), !it.Deleting // as in GetUser
	})
}

package tablestore

import (
	"context"
	"time"

	"latchkey/pkg/account"
)

// CreateUser writes the user, its e-mail guard and its external id guard
// (if it has one) in one transaction; see claim for a value held by a user
// whose delete was cut off. CodeEmailTaken, CodeExternalIDTaken.
func (s *Store) CreateUser(ctx context.Context, opts account.WriteOptions, u account.User) error {
	c := newChange(opts, account.PendingEvent{Type: account.EventUserCreated, Data: u})
	return s.create(ctx, c, newUserItem(u), u.ID, []claimed{{uniqueEmail, u.Email}, {uniqueUserExtID, u.ExternalID}}, s.userOwners(), nil, nil)
}

// CreateUserInOrganization writes the user, its guards and both sides of
// its membership in one transaction, on condition that the organization
// is live (AddMember's items, less the check of the user, whose Put is in
// the same transaction): 1 request. CodeNotFound naming the organization,
// CodeEmailTaken, CodeExternalIDTaken.
func (s *Store) CreateUserInOrganization(ctx context.Context, opts account.WriteOptions, u account.User, m account.Membership) error {
	member, memberFailed, err := s.memberItems(m, false)
	if err != nil {
		return err
	}
	c := newChange(opts,
		account.PendingEvent{Type: account.EventUserCreated, Data: u},
		account.PendingEvent{Type: account.EventOrganizationMembershipCreated, Data: m})
	return s.create(ctx, c, newUserItem(u), u.ID, []claimed{{uniqueEmail, u.Email}, {uniqueUserExtID, u.ExternalID}}, s.userOwners(), member, memberFailed)
}

func (s *Store) userOwners() owners { return owners{userKey, s.DeleteUser, account.ErrUserNotFound} }

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
	return lookupBy(ctx, s, emailKey(email), s.GetUser, account.ErrUserNotFound)
}

// GetUserByExternalID reads the external id guard, then the user it
// names, both strongly consistently. CodeNotFound.
func (s *Store) GetUserByExternalID(ctx context.Context, externalID string) (account.User, error) {
	return lookupBy(ctx, s, userExtKey(externalID), s.GetUser, account.ErrUserNotFound)
}

// UpdateUser applies the patch with one UpdateItem that sets only the
// fields it holds, so a concurrent update of another field is kept, and
// returns the item as written (ReturnValues ALL_NEW): no read before or
// after. A user whose deletion has begun is not found. CodeNotFound.
func (s *Store) UpdateUser(ctx context.Context, opts account.WriteOptions, id string, p account.UserPatch) (account.User, error) {
	c := newChange(opts)
	var it userItem
	// The item as read: none yet in the UpdateItem without a read.
	stamp := func() time.Time { return account.NextUpdatedAt(p.UpdatedAt, it.UpdatedAt) }
	// A builder's operations live in a map that copies share: each
	// attempt of updateClaiming builds its own.
	upd := func() Update { return userChanges(set("updated_at", stamp()), p) }
	if p.Email == nil && p.ExternalID == nil && !c.recording() {
		if err := s.updateItem(ctx, c, userKey(id), upd(), condLive, &it, account.ErrUserNotFound()); err != nil {
			return account.User{}, err
		}
		return it.user(), nil
	}
	// The user as the patch leaves it, from the item as read.
	patched := func() account.User {
		u := p.Apply(it.user())
		u.UpdatedAt = stamp()
		return u
	}
	// With events, every update reads the user first (updateClaiming), so
	// that its event, written in the same transaction, holds the user as
	// the update leaves it.
	err := s.updateClaiming(ctx, c, userKey(id), id, &it, upd, func() []move {
		var moves []move
		if p.Email != nil {
			moves = append(moves, move{uniqueEmail, it.Email, *p.Email})
		}
		if p.ExternalID != nil {
			moves = append(moves, move{uniqueUserExtID, it.ExternalID, *p.ExternalID})
		}
		return moves
	}, func() bool { return it.Deleting }, func() time.Time { return it.UpdatedAt }, func() account.PendingEvent {
		return account.PendingEvent{Type: account.EventUserUpdated, Data: patched()}
	}, s.userOwners(), nil)
	if err != nil {
		return account.User{}, err
	}
	return patched(), nil
}

// DeleteUser deletes the user, both sides of each of its memberships, its
// e-mail guard and its external id guard; see cascade for users with more
// than 49 memberships (48 with an external id), 32 (31) with their
// events. Leaving an organization
// as an owner takes 1 from its owner count in the same transaction as the
// membership (see leaveSteps), also when the user is its last owner,
// which the API allows. CodeNotFound.
func (s *Store) DeleteUser(ctx context.Context, opts account.WriteOptions, id string) error {
	var u userItem
	if err := s.markDeleting(ctx, userKey(id), &u, account.ErrUserNotFound()); err != nil {
		return err
	}
	guards := []key{emailKey(u.Email)}
	if u.ExternalID != "" {
		guards = append(guards, userExtKey(u.ExternalID))
	}
	return s.deleteWithMemberships(ctx, newChange(opts), id, userKey(id), guards, nil, nil, func(m memberSide) ([]step, error) {
		steps, err := s.leaveSteps(m.otherID, id, m.role, false)
		if err == nil {
			steps[0].event = &account.PendingEvent{Type: account.EventOrganizationMembershipDeleted, Data: m.membership("", id)}
		}
		return steps, err
	}, account.PendingEvent{Type: account.EventUserDeleted, Data: u.user()}, account.ErrUserNotFound())
}

// ListOrganizationUsers lists the organization's members' users, newest
// membership first: one Query of the organization's members' list, then
// one strongly consistent BatchGetItem of the page's users (none for an
// empty page), so a page costs 2 requests whatever its size, as
// ListUserMemberships does. A user whose delete has begun is left out.
func (s *Store) ListOrganizationUsers(ctx context.Context, orgID string, p account.ListParams) (account.Page[account.User], error) {
	page, err := s.ListMembers(ctx, orgID, p)
	if err != nil || len(page.Items) == 0 {
		return account.Page[account.User]{Items: []account.User{}, Next: page.Next}, err
	}
	keys := make([]key, len(page.Items))
	for i, m := range page.Items {
		keys[i] = userKey(m.UserID)
	}
	read, err := s.batchGet(ctx, keys)
	if err != nil {
		return account.Page[account.User]{}, err
	}
	users := make(map[string]userItem, len(read))
	for _, av := range read {
		var it userItem
		if err := unmarshal(av, &it); err != nil {
			return account.Page[account.User]{}, err
		}
		users[idFrom(it.PK, prefixUser)] = it
	}
	out := account.Page[account.User]{Items: make([]account.User, 0, len(page.Items)), Next: page.Next}
	for _, m := range page.Items {
		it, ok := users[m.UserID]
		if !ok || it.Deleting || it.SK != sortUser {
			continue
		}
		out.Items = append(out.Items, it.user())
	}
	return out, nil
}

// ListUsers lists users newest first from the USERS partition of gsi1.
func (s *Store) ListUsers(ctx context.Context, p account.ListParams) (account.Page[account.User], error) {
	return list(ctx, s, listUsers, prefixUser, p, func(it userItem) (account.User, bool) {
		return it.user(), !it.Deleting // as in GetUser
	})
}

package tablestore

import (
	"context"
	"errors"

	"latchkey/pkg/account"
)

// Owner counts. An organization item carries owners, the number of its
// memberships with account.OwnerRole, changed in the same transaction as
// each membership that gains or loses the role. A change that takes the
// role from a member is conditioned on owners > 1, so that two owners
// demoting or removing each other at once cannot both succeed: DynamoDB
// serializes the two transactions on the organization item, and the
// second finds owners = 1. The count is the one fact the rule needs that
// no single membership holds; keeping it costs one more item in those
// transactions (and a gsi1 write, as the item is in the ORGS list).
var (
	condKeepsAnOwner = attr("owners").GreaterThan(1)
	addOwner         = Update(nil).add("owners", 0, 1)
	dropOwner        = Update(nil).add("owners", 0, -1)
	isOwner          = attr("role").Equal(account.OwnerRole)
)

// AddMember checks that the organization and the user exist (and are not
// being deleted) and writes both sides of the membership, in one
// transaction; for an owner, the check of the organization is the update
// of its owner count. CodeNotFound naming the organization or the user;
// CodeAlreadyMember.
func (s *Store) AddMember(ctx context.Context, opts account.WriteOptions, m account.Membership) error {
	items, onCheckFailed, err := s.memberItems(m, true)
	if err != nil {
		return err
	}
	c := newChange(opts, account.PendingEvent{Type: account.EventOrganizationMembershipCreated, Data: m})
	return s.transact(ctx, c, items, onCheckFailed...)
}

// memberItems are the items of a transaction that adds the membership m,
// and the errors their failed conditions mean: the check of the
// organization (for an owner, the update of its owner count), of the user
// if checkUser, and both sides.
func (s *Store) memberItems(m account.Membership, checkUser bool) ([]Write, []error, error) {
	orgSide, userSide := newMemberItems(m)
	org := func() (Write, error) { return s.check(orgKey(m.OrganizationID), condLive) }
	if m.Role == account.OwnerRole {
		org = func() (Write, error) { return s.update(orgKey(m.OrganizationID), addOwner, condLive) }
	}
	steps := []func() (Write, error){org}
	onCheckFailed := []error{account.ErrOrganizationNotFound()}
	if checkUser {
		steps = append(steps, func() (Write, error) { return s.check(userKey(m.UserID), condLive) })
		onCheckFailed = append(onCheckFailed, account.ErrUserNotFound())
	}
	steps = append(steps,
		func() (Write, error) { return s.put(orgSide, condAbsent) },
		func() (Write, error) { return s.put(userSide, condAbsent) },
	)
	onCheckFailed = append(onCheckFailed, account.ErrAlreadyMember(), account.ErrAlreadyMember())
	items, err := build(steps...)
	return items, onCheckFailed, err
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

// UpdateMember reads the organization's side strongly consistently
// (whether the member is an owner now, and created_at for the answer),
// then sets role and updated_at on both sides in one transaction, on
// condition that the membership is still the one read (created_at) and
// still an owner's or still not, as read; when the role changes to or
// from owner, the organization's owner count changes in the same
// transaction, on condition, when it drops, that another owner remains. 2
// requests. Concurrent changes between roles other than owner do not
// collide. If the membership changed in between, both are repeated, up to
// updateAttempts times. CodeNotFound, CodeLastOwner.
func (s *Store) UpdateMember(ctx context.Context, opts account.WriteOptions, orgID, userID string, p account.MemberPatch) (account.Membership, error) {
	updatedAt := p.UpdatedAt.UTC()
	for attempt := 0; ; attempt++ {
		var it memberItem
		found, err := s.getItem(ctx, orgMemberKey(orgID, userID), &it)
		if err != nil {
			return account.Membership{}, err
		}
		if !found {
			return account.Membership{}, account.ErrMembershipNotFound()
		}
		upd := set("role", p.Role).
			set("updated_at", updatedAt)
		owner := isOwner
		if it.Role != account.OwnerRole {
			owner = isOwner.Not()
		}
		unchanged := condPresent.And(owner).And(attr("created_at").Equal(it.CreatedAt.UTC()))
		steps := []func() (Write, error){
			func() (Write, error) { return s.update(orgMemberKey(orgID, userID), upd, unchanged) },
			func() (Write, error) {
				return s.update(userMemberKey(userID, orgID), upd, condPresent)
			},
		}
		onCheckFailed := []error{errChanged, errChanged}
		switch was, is := it.Role == account.OwnerRole, p.Role == account.OwnerRole; {
		case was && !is:
			steps = append(steps, func() (Write, error) {
				return s.update(orgKey(orgID), dropOwner, condKeepsAnOwner)
			})
			onCheckFailed = append(onCheckFailed, account.ErrLastOwner())
		case is && !was:
			steps = append(steps, func() (Write, error) {
				return s.update(orgKey(orgID), addOwner, condPresent)
			})
			onCheckFailed = append(onCheckFailed, errChanged)
		}
		items, err := build(steps...)
		if err != nil {
			return account.Membership{}, err
		}
		m := it.membership()
		m.Role, m.UpdatedAt = p.Role, updatedAt
		err = s.transact(ctx, newChange(opts, account.PendingEvent{Type: account.EventOrganizationMembershipUpdated, Data: m}), items, onCheckFailed...)
		if err == nil {
			return m, nil
		}
		if !errors.Is(err, errChanged) {
			return account.Membership{}, err
		}
		if attempt+1 >= updateAttempts {
			return account.Membership{}, account.ErrConcurrentUpdate("membership")
		}
	}
}

// RemoveMember deletes both sides in one transaction, on condition that
// the member is not an owner: 1 request. An owner's membership comes back
// with the failed condition; then both sides are deleted on condition
// that it is still an owner's, with 1 taken from the organization's owner
// count on condition that another owner remains: 2 requests. A membership
// that changed in between starts it over, up to updateAttempts times.
// CodeNotFound, CodeLastOwner.
func (s *Store) RemoveMember(ctx context.Context, opts account.WriteOptions, orgID, userID string) error {
	c := newChange(opts)
	if c.recording() {
		return s.removeMemberRecorded(ctx, c, orgID, userID)
	}
	for attempt := 0; ; attempt++ {
		notOwner := condPresent.And(isOwner.Not())
		items, err := build(
			func() (Write, error) {
				it, err := s.del(orgMemberKey(orgID, userID), notOwner)
				if err == nil {
					it.ReturnOld = true
				}
				return it, err
			},
			func() (Write, error) { return s.del(userMemberKey(userID, orgID), condPresent) },
		)
		if err != nil {
			return err
		}
		old, err := s.transactReturningOld(ctx, c, items, errChanged, account.ErrMembershipNotFound())
		if !errors.Is(err, errChanged) {
			return err
		}
		var it memberItem
		if old == nil || unmarshal(old, &it) != nil {
			return account.ErrMembershipNotFound()
		}
		if it.Role == account.OwnerRole {
			steps, err := s.leaveSteps(orgID, userID, it.Role, true)
			if err != nil {
				return err
			}
			err = s.transactSteps(ctx, c, steps)
			if !errors.Is(err, errMembershipsChanged) {
				return err
			}
		}
		if attempt+1 >= updateAttempts {
			return account.ErrConcurrentUpdate("membership")
		}
	}
}

// removeMemberRecorded is RemoveMember with its event, which must hold the
// membership as it was: it reads the membership strongly consistently,
// then deletes both sides (leaveSteps) and writes the event in one
// transaction, on condition that the membership is still as read (role
// and updated_at). A membership that changed in between starts it over,
// up to updateAttempts times. 2 requests.
func (s *Store) removeMemberRecorded(ctx context.Context, c change, orgID, userID string) error {
	for attempt := 0; ; attempt++ {
		var it memberItem
		found, err := s.getItem(ctx, orgMemberKey(orgID, userID), &it)
		if err != nil {
			return err
		}
		if !found {
			return account.ErrMembershipNotFound()
		}
		steps, err := s.leaveSteps(orgID, userID, it.Role, true)
		if err != nil {
			return err
		}
		unchanged := condPresent.And(attr("role").Equal(it.Role)).
			And(attr("updated_at").Equal(it.UpdatedAt.UTC()))
		del, err := s.del(orgMemberKey(orgID, userID), unchanged)
		if err != nil {
			return err
		}
		steps[0] = step{del, errMembershipsChanged, &account.PendingEvent{Type: account.EventOrganizationMembershipDeleted, Data: it.membership()}}
		err = s.transactSteps(ctx, c, steps)
		if !errors.Is(err, errMembershipsChanged) {
			return err
		}
		if attempt+1 >= updateAttempts {
			return account.ErrConcurrentUpdate("membership")
		}
	}
}

// leaveSteps are the steps that take userID out of orgID when the
// membership has role: both sides deleted, the organization's side on
// condition that the role is still the one read (errMembershipsChanged
// otherwise), and for an owner 1 taken from the organization's owner
// count. With keepAnOwner (RemoveMember) the count must stay above 0
// (account.ErrLastOwner otherwise); without (a user's delete, which may
// take the last owner) the organization must merely exist, as a delete
// of the organization may have taken it (errMembershipsChanged), so that
// the count never makes an item from nothing.
func (s *Store) leaveSteps(orgID, userID, role string, keepAnOwner bool) ([]step, error) {
	cond := attr("pk").NotExists().Or(isOwner.Not())
	if role == account.OwnerRole {
		cond = isOwner
	}
	org, err := s.del(orgMemberKey(orgID, userID), cond)
	if err != nil {
		return nil, err
	}
	user, err := s.del(userMemberKey(userID, orgID), Cond{})
	if err != nil {
		return nil, err
	}
	steps := []step{{org, errMembershipsChanged, nil}, {user, nil, nil}}
	if role == account.OwnerRole {
		cond, failed := condPresent, errMembershipsChanged
		if keepAnOwner {
			cond, failed = condKeepsAnOwner, account.ErrLastOwner()
		}
		count, err := s.update(orgKey(orgID), dropOwner, cond)
		if err != nil {
			return nil, err
		}
		steps = append(steps, step{count, failed, nil})
	}
	return steps, nil
}

// ListMembers lists an organization's memberships, newest first.
func (s *Store) ListMembers(ctx context.Context, orgID string, p account.ListParams) (account.Page[account.Membership], error) {
	return s.listMemberships(ctx, membersList(orgID), orgKey(orgID).PK, p)
}

// ListUserMemberships lists a user's memberships, newest first, each with
// its organization's name and slug: one Query of the user's list, then one
// strongly consistent BatchGetItem of the page's organizations (none for
// an empty page), so a page costs 2 requests whatever its size, and shows
// an organization's current name, however recently renamed. Keeping the
// name on the membership instead would make a rename write every member's
// item, in more transactions than one for a large organization. A
// membership whose organization is gone or being deleted is left out.
func (s *Store) ListUserMemberships(ctx context.Context, userID string, p account.ListParams) (account.Page[account.UserMembership], error) {
	page, err := s.listMemberships(ctx, memberOfList(userID), userKey(userID).PK, p)
	if err != nil || len(page.Items) == 0 {
		return account.Page[account.UserMembership]{Items: []account.UserMembership{}, Next: page.Next}, err
	}
	keys := make([]key, len(page.Items))
	for i, m := range page.Items {
		keys[i] = orgKey(m.OrganizationID)
	}
	read, err := s.batchGet(ctx, keys)
	if err != nil {
		return account.Page[account.UserMembership]{}, err
	}
	orgs := make(map[string]orgItem, len(read))
	for _, av := range read {
		var o orgItem
		if err := unmarshal(av, &o); err != nil {
			return account.Page[account.UserMembership]{}, err
		}
		orgs[idFrom(o.PK, prefixOrg)] = o
	}
	out := account.Page[account.UserMembership]{Items: make([]account.UserMembership, 0, len(page.Items)), Next: page.Next}
	for _, m := range page.Items {
		o, ok := orgs[m.OrganizationID]
		if !ok || o.Deleting || o.SK != sortOrg {
			continue
		}
		out.Items = append(out.Items, account.UserMembership{Membership: m, OrganizationName: o.Name, OrganizationSlug: o.Slug})
	}
	return out, nil
}

// listMemberships lists the gsi1 partition of one side's memberships,
// whose items are all in that side's partition, owner.
func (s *Store) listMemberships(ctx context.Context, partition, owner string, p account.ListParams) (account.Page[account.Membership], error) {
	return list(ctx, s, partition, owner, p, func(it memberItem) (account.Membership, bool) { return it.membership(), true })
}

package account

import "context"

// A key bound to an organization (APIKey.OrganizationID, and every token
// issued for it) acts inside that organization only: it never reads or
// changes anything outside it. This file holds the rule, once, for every
// operation the service carries out; the stores only look up what it asks
// them to (Store.ListOrganizationUsers, EventQuery.OrganizationID) and
// store what it writes (Store.CreateUserInOrganization).
//
//   - Organizations: its own only; another is not found, as if it did not
//     exist, and so are its members. It creates none, deletes not even its
//     own, and changes neither its plan nor its external id
//     (CodeOutsideOrganization): those are the integrator's.
//   - Users: it sees a user through its organization's membership only;
//     another user is not found. A user it creates joins its organization
//     (DefaultMemberRole) in the same atomic write, so that no failed
//     request leaves a user it cannot see. It changes and deletes only
//     users who belong to no other organization (CodeOutsideOrganization):
//     a shared user is changed by a key bound to no organization. It sets
//     no user's role (a user it creates has DefaultUserRole) and no
//     user's external id (CodeOutsideOrganization): both are global, the
//     integrator's, and a role is not its organization's to give.
//   - API keys: those bound to its organization (Principal.sees).
//   - Tokens: another tenant's token (one whose key is not bound to its
//     organization) is inactive to its introspection, and it cannot
//     revoke one (CodeOutsideOrganization).
//   - Events: those about its organization (EventSource.Organization).

// CodeOutsideOrganization answers a key bound to an organization that asks
// for a change outside it: creating an organization, changing or deleting
// a user who belongs to another organization too, revoking another
// tenant's token.
const CodeOutsideOrganization Code = "outside_organization"

// bound reports whether the principal's key is bound to an organization.
func (p Principal) bound() bool { return p.KeyOrganizationID != "" }

// seesOrganization reports whether the principal may know of the
// organization id at all.
func (p Principal) seesOrganization(id string) bool {
	return !p.bound() || p.KeyOrganizationID == id
}

// seesToken reports whether the principal may know of a token with the
// claims c: a key bound to an organization knows of its organization's
// tokens only (org_id), not those of a key bound to another or to none;
// a key with an owner, of that owner's tokens only (owner_id), as it sees
// that owner's keys only (Principal.sees).
func (p Principal) seesToken(c TokenClaims) bool {
	return (!p.bound() || p.KeyOrganizationID == c.OrganizationID) &&
		(p.KeyOwnerID == "" || p.KeyOwnerID == c.OwnerID)
}

// errOtherOwnersToken answers a key with an owner that revokes a token of
// another owner's key, which it does not see.
var errOtherOwnersToken = &Error{Code: CodeForbidden, Message: "this API key has an owner: it revokes the tokens of that owner's keys only"}

// outside returns CodeOutsideOrganization for a bound principal that asks
// to act outside its organization; what says what it asked.
func outside(what string) *Error {
	return Errorf(CodeOutsideOrganization, "this API key is bound to an organization and acts inside it only: it cannot %s", what)
}

// seesUser returns ErrUserNotFound unless the principal may know of the
// user id: any user for a key bound to no organization, a member of its
// organization for a bound one (one strongly consistent read).
func (s *Service) seesUser(ctx context.Context, p Principal, id string) error {
	if !p.bound() {
		return nil
	}
	_, err := s.store.GetMember(ctx, p.KeyOrganizationID, id)
	if IsCode(err, CodeNotFound) {
		return ErrUserNotFound()
	}
	return storeErr(err)
}

// mayChangeUser returns the error that keeps the principal from changing
// or deleting (verb) the user id, or nil: a bound principal must see the
// user (ErrUserNotFound), and the user must belong to no other
// organization (CodeOutsideOrganization), whose members the change would
// change too.
func (s *Service) mayChangeUser(ctx context.Context, p Principal, id, verb string) error {
	if !p.bound() {
		return nil
	}
	if err := s.seesUser(ctx, p, id); err != nil {
		return err
	}
	// Two are enough to tell whether there is another than the caller's.
	page, err := s.store.ListUserMemberships(ctx, id, ListParams{Limit: 2})
	if err != nil {
		return storeErr(err)
	}
	for _, m := range page.Items {
		if m.OrganizationID != p.KeyOrganizationID {
			return outside(verb + " a user who belongs to another organization too; a key bound to no organization can")
		}
	}
	return nil
}

// seesOrganizationOf is seesOrganization for the organization o.
func (p Principal) seesOrganizationOf(o Organization) bool { return p.seesOrganization(o.ID) }

// lookupWhere is lookup that finds nothing when sees says the principal
// may not know of the item found: exactly the answer for an item that
// does not exist.
func lookupWhere[T any](sees func(T) bool) func(T, error) (List[T], error) {
	return func(item T, err error) (List[T], error) {
		if err == nil && !sees(item) {
			return List[T]{Items: []T{}}, nil
		}
		return lookup(item, err)
	}
}

// lookupUser is lookup of a user found by a unique value (u, err), which
// a bound principal finds only if it sees the user (seesUser).
func (s *Service) lookupUser(ctx context.Context, p Principal, u User, err error) (List[User], error) {
	if err == nil {
		if serr := s.seesUser(ctx, p, u.ID); serr != nil {
			err = serr
		}
	}
	return lookup(u, err)
}

// ownMembership is a user's list of memberships as a principal bound to an
// organization sees it: its organization's membership, the one page, or
// ErrUserNotFound for a user who is not a member.
func (s *Service) ownMembership(ctx context.Context, p Principal, userID string, params ListParams) (List[UserMembership], error) {
	m, err := s.store.GetMember(ctx, p.KeyOrganizationID, userID)
	if IsCode(err, CodeNotFound) {
		return List[UserMembership]{}, ErrUserNotFound()
	}
	if err != nil {
		return List[UserMembership]{}, storeErr(err)
	}
	if params.After != "" {
		return List[UserMembership]{Items: []UserMembership{}}, nil
	}
	o, err := s.store.GetOrganization(ctx, p.KeyOrganizationID)
	if err != nil {
		return List[UserMembership]{}, storeErr(err)
	}
	return List[UserMembership]{Items: []UserMembership{{Membership: m, OrganizationName: o.Name, OrganizationSlug: o.Slug}}}, nil
}

// errDeleteOwnOrganization answers a bound principal that deletes its own
// organization. The delete takes every key bound to it, the keys above the
// caller's and the caller's rotated key included: it would get round the
// rules that keep a key from changing the keys above it, from managing
// keys with a previous secret or with a token. Deleting a tenant is the
// integrator's act, with a key bound to no organization.
var errDeleteOwnOrganization = &Error{Code: CodeOutsideOrganization, Message: "this API key is bound to an organization and acts inside it only: it cannot delete its own organization, with every key bound to it; a key bound to no organization can"}

// The changes a bound principal may not make to what it sees: an
// organization's plan (what the integrator bills) and external id (the
// integrator's identifier, which ?external_id= lookups trust); a user's
// role, which is global, and external id, the integrator's identifier.
var (
	errOrganizationPlan       = &Error{Code: CodeOutsideOrganization, Message: "this API key is bound to an organization and acts inside it only: it cannot change its organization's plan; a key bound to no organization can"}
	errOrganizationLimits     = &Error{Code: CodeOutsideOrganization, Message: "this API key is bound to an organization and acts inside it only: it cannot change its organization's rate_limits or credits, which bound its own uses; a key bound to no organization can"}
	errOrganizationExternalID = &Error{Code: CodeOutsideOrganization, Message: "this API key is bound to an organization and acts inside it only: it cannot change its organization's external_id; a key bound to no organization can"}
	errUserRole               = &Error{Code: CodeOutsideOrganization, Message: "this API key is bound to an organization and acts inside it only: it cannot set a user's role, which is global; a key bound to no organization can (the role in its organization is the membership's)"}
	errUserExternalID         = &Error{Code: CodeOutsideOrganization, Message: "this API key is bound to an organization and acts inside it only: it cannot set a user's external_id, the integrator's identifier; a key bound to no organization can"}
)

// mayChangeOrganization returns the error that keeps the principal from
// making the change req to an organization it sees, or nil: a bound
// principal changes its organization's name and metadata only: not its
// plan, external id or limits, which are the integrator's.
func (p Principal) mayChangeOrganization(req OrganizationUpdate) error {
	switch {
	case !p.bound():
		return nil
	case req.Plan != nil:
		return errOrganizationPlan
	case req.ExternalID != nil:
		return errOrganizationExternalID
	case req.RateLimits != nil || req.SetCredits:
		return errOrganizationLimits
	}
	return nil
}

// maySetUserFields returns the error that keeps the principal from setting
// a user's role or external id (set says which it asks to), or nil.
func (p Principal) maySetUserFields(role, externalID bool) error {
	switch {
	case !p.bound():
		return nil
	case role:
		return errUserRole
	case externalID:
		return errUserExternalID
	}
	return nil
}

package account

import (
	"context"
	"strings"
	"time"
)

// User is a person with an account.
type User struct {
	ID    string
	Email string // lower-cased; unique
	Name  string
	Role  string // one of UserRoles
	// ExternalID is the integrator's own identifier for the user, unique
	// among users (ValidExternalID); "" when there is none.
	ExternalID string
	Metadata   Metadata // nil when there is none
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// UserPatch is a change to a user, applied as OrganizationPatch is.
type UserPatch struct {
	Name *string
	Role *string
	// Email moves the user to another (lower-cased) address: the store
	// claims it and frees the old one in the same atomic step as the rest
	// of the patch. CodeEmailTaken.
	Email *string
	// ExternalID and Metadata: as in OrganizationPatch.
	ExternalID *string
	Metadata   *Metadata
	// UpdatedAt is always written.
	UpdatedAt time.Time
}

// Apply returns u with the patch's fields set, as OrganizationPatch.Apply
// does.
func (p UserPatch) Apply(u User) User {
	if p.Name != nil {
		u.Name = *p.Name
	}
	if p.Role != nil {
		u.Role = *p.Role
	}
	if p.Email != nil {
		u.Email = *p.Email
	}
	if p.ExternalID != nil {
		u.ExternalID = *p.ExternalID
	}
	if p.Metadata != nil {
		u.Metadata = p.Metadata.OrNil()
	}
	return u
}

// NewUser describes a user to create.
type NewUser struct {
	Email      string
	Name       string
	Role       string // "" means DefaultUserRole
	ExternalID string // "" means none
	Metadata   Metadata
}

// UserQuery filters and pages the user list.
type UserQuery struct {
	PageRequest
	// Email, when set, finds the one user with that address, ignoring case.
	Email string
	// ExternalID, when set, finds the one user with that external id.
	ExternalID string
}

// CreateUser creates a user. A user created by a key bound to an
// organization joins it (DefaultMemberRole) in the same atomic write, so
// that it sees the user it created, and no failed request leaves a user it
// cannot see. E-mail addresses and external ids are unique among all
// users, whatever their organizations. A bound caller sets neither the
// role nor the external id (CodeOutsideOrganization). CodeInsufficientScope,
// CodeInvalidRequest, CodeEmailTaken, CodeExternalIDTaken.
func (s *Service) CreateUser(ctx context.Context, p Principal, req NewUser) (User, error) {
	if err := p.Authorize(OpCreateUser); err != nil {
		return User{}, err
	}
	var problems Problems
	now := s.now()
	u := User{
		ID:        NewID(PrefixUser, now),
		Email:     normalizeEmail("email", req.Email, &problems),
		Name:      normalizeName("name", req.Name, &problems),
		Role:      normalizeChoice("role", req.Role, DefaultUserRole, UserRoles, &problems),
		CreatedAt: now,
		UpdatedAt: now,
	}
	u.ExternalID = checkExternalID("external_id", req.ExternalID, &problems)
	req.Metadata.check("metadata", &problems)
	u.Metadata = req.Metadata.normalized()
	if err := problems.Err(); err != nil {
		return User{}, err
	}
	if err := p.maySetUserFields(req.Role != "", req.ExternalID != ""); err != nil {
		return User{}, err
	}
	var err error
	if p.bound() {
		m := Membership{OrganizationID: p.KeyOrganizationID, UserID: u.ID, Role: DefaultMemberRole, CreatedAt: now, UpdatedAt: now}
		err = s.store.CreateUserInOrganization(ctx, p.Write, u, m)
	} else {
		err = s.store.CreateUser(ctx, p.Write, u)
	}
	if err != nil {
		return User{}, storeErr(err)
	}
	return u, nil
}

// GetUser returns a user. CodeInsufficientScope, CodeNotFound, also for
// a user outside a bound caller's organization.
func (s *Service) GetUser(ctx context.Context, p Principal, id string) (User, error) {
	if err := p.Authorize(OpGetUser); err != nil {
		return User{}, err
	}
	if !ValidID(PrefixUser, id) {
		return User{}, ErrUserNotFound()
	}
	if err := s.seesUser(ctx, p, id); err != nil {
		return User{}, err
	}
	u, err := s.store.GetUser(ctx, id)
	return u, storeErr(err)
}

// ListUsers lists users newest first, or finds one by e-mail or by
// external id: a lookup is strongly consistent, and its list holds the one
// user or none. A caller bound to an organization lists its members,
// newest membership first, and finds no other user by a lookup.
// CodeInsufficientScope, CodeInvalidRequest.
func (s *Service) ListUsers(ctx context.Context, p Principal, q UserQuery) (List[User], error) {
	if err := p.Authorize(OpListUsers); err != nil {
		return List[User]{}, err
	}
	list := "users"
	if p.bound() {
		// Its pages are positions in the members' list, not the users'.
		list = "users/" + p.KeyOrganizationID
	}
	params, err := s.cursors.params(list, q.PageRequest)
	if err != nil {
		return List[User]{}, err
	}
	var problems Problems
	switch {
	case q.Email != "" && q.ExternalID != "":
		problems.Add("external_id", "cannot be given with email: look a user up by one of them")
		return List[User]{}, problems.Err()
	case q.Email != "":
		email := normalizeEmail("email", q.Email, &problems)
		if err := problems.Err(); err != nil {
			return List[User]{}, err
		}
		u, err := s.store.GetUserByEmail(ctx, email)
		return s.lookupUser(ctx, p, u, err)
	case q.ExternalID != "":
		id := checkExternalID("external_id", q.ExternalID, &problems)
		if err := problems.Err(); err != nil {
			return List[User]{}, err
		}
		u, err := s.store.GetUserByExternalID(ctx, id)
		return s.lookupUser(ctx, p, u, err)
	}
	var page Page[User]
	if p.bound() {
		page, err = s.store.ListOrganizationUsers(ctx, p.KeyOrganizationID, params)
	} else {
		page, err = s.store.ListUsers(ctx, params)
	}
	if err != nil {
		return List[User]{}, storeErr(err)
	}
	return toList(s.cursors, list, page), nil
}

// lookup turns the result of a store's lookup by a unique value into a
// list of that one item, or of none when it is not found.
func lookup[T any](item T, err error) (List[T], error) {
	switch {
	case IsCode(err, CodeNotFound):
		return List[T]{Items: []T{}}, nil
	case err != nil:
		return List[T]{}, storeErr(err)
	}
	return List[T]{Items: []T{item}}, nil
}

// UserUpdate holds the fields of a user that can change; nil leaves a
// field as it is.
type UserUpdate struct {
	Name  *string
	Role  *string
	Email *string
	// ExternalID replaces the external id; "" removes it.
	ExternalID *string
	// Metadata replaces the metadata whole; nil or empty removes it.
	Metadata *Metadata
}

// UpdateUser changes the given fields of a user, and only those, in one
// atomic step; a new e-mail or external id is claimed and the old one freed
// in that step. A caller bound to an organization changes only the users
// who belong to it and to no other, and changes neither their role nor
// their external id. CodeInsufficientScope, CodeNotFound,
// CodeOutsideOrganization, CodeInvalidRequest, CodeEmailTaken,
// CodeExternalIDTaken.
func (s *Service) UpdateUser(ctx context.Context, p Principal, id string, req UserUpdate) (User, error) {
	if err := p.Authorize(OpUpdateUser); err != nil {
		return User{}, err
	}
	if !ValidID(PrefixUser, id) {
		return User{}, ErrUserNotFound()
	}
	if req == (UserUpdate{}) {
		return User{}, errNothingToChange
	}
	var problems Problems
	patch := UserPatch{UpdatedAt: s.now()}
	if req.Name != nil {
		name := normalizeName("name", *req.Name, &problems)
		patch.Name = &name
	}
	if req.Role != nil {
		if *req.Role == "" {
			problems.Add("role", "must be one of "+strings.Join(UserRoles, ", "))
		}
		role := normalizeChoice("role", *req.Role, "", UserRoles, &problems)
		patch.Role = &role
	}
	if req.Email != nil {
		email := normalizeEmail("email", *req.Email, &problems)
		patch.Email = &email
	}
	if req.ExternalID != nil {
		ext := checkExternalID("external_id", *req.ExternalID, &problems)
		patch.ExternalID = &ext
	}
	if req.Metadata != nil {
		req.Metadata.check("metadata", &problems)
		m := req.Metadata.normalized()
		patch.Metadata = &m
	}
	if err := problems.Err(); err != nil {
		return User{}, err
	}
	if err := p.maySetUserFields(req.Role != nil, req.ExternalID != nil); err != nil {
		return User{}, err
	}
	if err := s.mayChangeUser(ctx, p, id, "change"); err != nil {
		return User{}, err
	}
	u, err := s.store.UpdateUser(ctx, p.Write, id, patch)
	if err != nil {
		return User{}, storeErr(err)
	}
	return u, nil
}

// DeleteUser deletes a user and its memberships; its e-mail is free again.
// A caller bound to an organization deletes only the users who belong to
// it and to no other. CodeInsufficientScope, CodeNotFound,
// CodeOutsideOrganization.
func (s *Service) DeleteUser(ctx context.Context, p Principal, id string) error {
	if err := p.Authorize(OpDeleteUser); err != nil {
		return err
	}
	if !ValidID(PrefixUser, id) {
		return ErrUserNotFound()
	}
	if err := s.mayChangeUser(ctx, p, id, "delete"); err != nil {
		return err
	}
	return storeErr(s.store.DeleteUser(ctx, p.Write, id))
}

// ListUserMemberships lists the organizations a user belongs to, newest
// membership first, each with the organization's name and slug. A caller
// bound to an organization sees its organization's membership only.
// CodeInsufficientScope, CodeNotFound, CodeInvalidRequest.
func (s *Service) ListUserMemberships(ctx context.Context, p Principal, userID string, r PageRequest) (List[UserMembership], error) {
	if err := p.Authorize(OpListUserMemberships); err != nil {
		return List[UserMembership]{}, err
	}
	if !ValidID(PrefixUser, userID) {
		return List[UserMembership]{}, ErrUserNotFound()
	}
	list := "memberships/" + userID
	params, err := s.cursors.params(list, r)
	if err != nil {
		return List[UserMembership]{}, err
	}
	if p.bound() {
		return s.ownMembership(ctx, p, userID, params)
	}
	if _, err := s.store.GetUser(ctx, userID); err != nil {
		return List[UserMembership]{}, storeErr(err)
	}
	page, err := s.store.ListUserMemberships(ctx, userID, params)
	if err != nil {
		return List[UserMembership]{}, storeErr(err)
	}
	return toList(s.cursors, list, page), nil
}

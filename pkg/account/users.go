package account

import (
	"context"
	"strings"
)

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

// CreateUser creates a user. CodeInsufficientScope, CodeInvalidRequest,
// CodeEmailTaken.
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
	if err := s.store.CreateUser(ctx, u); err != nil {
		return User{}, storeErr(err)
	}
	return u, nil
}

// GetUser returns a user. CodeInsufficientScope, CodeNotFound.
func (s *Service) GetUser(ctx context.Context, p Principal, id string) (User, error) {
	if err := p.Authorize(OpGetUser); err != nil {
		return User{}, err
	}
	if !ValidID(PrefixUser, id) {
		return User{}, ErrUserNotFound()
	}
	u, err := s.store.GetUser(ctx, id)
	return u, storeErr(err)
}

// ListUsers lists users newest first, or finds one by e-mail or by
// external id: a lookup is strongly consistent, and its list holds the one
// user or none. CodeInsufficientScope, CodeInvalidRequest.
func (s *Service) ListUsers(ctx context.Context, p Principal, q UserQuery) (List[User], error) {
	if err := p.Authorize(OpListUsers); err != nil {
		return List[User]{}, err
	}
	params, err := s.cursors.params("users", q.PageRequest)
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
		return lookup(s.store.GetUserByEmail(ctx, email))
	case q.ExternalID != "":
		id := checkExternalID("external_id", q.ExternalID, &problems)
		if err := problems.Err(); err != nil {
			return List[User]{}, err
		}
		return lookup(s.store.GetUserByExternalID(ctx, id))
	}
	page, err := s.store.ListUsers(ctx, params)
	if err != nil {
		return List[User]{}, storeErr(err)
	}
	return toList(s.cursors, "users", page), nil
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
// in that step. CodeInsufficientScope, CodeNotFound, CodeInvalidRequest,
// CodeEmailTaken, CodeExternalIDTaken.
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
	u, err := s.store.UpdateUser(ctx, id, patch)
	if err != nil {
		return User{}, storeErr(err)
	}
	return u, nil
}

// DeleteUser deletes a user and its memberships; its e-mail is free again.
// CodeInsufficientScope, CodeNotFound.
func (s *Service) DeleteUser(ctx context.Context, p Principal, id string) error {
	if err := p.Authorize(OpDeleteUser); err != nil {
		return err
	}
	if !ValidID(PrefixUser, id) {
		return ErrUserNotFound()
	}
	return storeErr(s.store.DeleteUser(ctx, id))
}

// ListUserMemberships lists the organizations a user belongs to, newest
// membership first, each with the organization's name and slug.
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
	if _, err := s.store.GetUser(ctx, userID); err != nil {
		return List[UserMembership]{}, storeErr(err)
	}
	page, err := s.store.ListUserMemberships(ctx, userID, params)
	if err != nil {
		return List[UserMembership]{}, storeErr(err)
	}
	return toList(s.cursors, list, page), nil
}

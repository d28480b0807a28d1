package account

import "context"

// NewUser describes a user to create.
type NewUser struct {
	Email string
	Name  string
	Role  string // "" means DefaultUserRole
}

// UserQuery filters and pages the user list.
type UserQuery struct {
	PageRequest
	// Email, when set, finds the one user with that address, ignoring case.
	Email string
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

// ListUsers lists users newest first, or finds one by e-mail.
// CodeInsufficientScope, CodeInvalidRequest.
func (s *Service) ListUsers(ctx context.Context, p Principal, q UserQuery) (List[User], error) {
	if err := p.Authorize(OpListUsers); err != nil {
		return List[User]{}, err
	}
	params, err := s.cursors.params("users", q.PageRequest)
	if err != nil {
		return List[User]{}, err
	}
	if q.Email != "" {
		var problems Problems
		email := normalizeEmail("email", q.Email, &problems)
		if err := problems.Err(); err != nil {
			return List[User]{}, err
		}
		u, err := s.store.GetUserByEmail(ctx, email)
		switch {
		case IsCode(err, CodeNotFound):
			return List[User]{Items: []User{}}, nil
		case err != nil:
			return List[User]{}, storeErr(err)
		}
		return List[User]{Items: []User{u}}, nil
	}
	page, err := s.store.ListUsers(ctx, params)
	if err != nil {
		return List[User]{}, storeErr(err)
	}
	return toList(s.cursors, "users", page), nil
}

// UserUpdate holds the fields of a user that can change.
type UserUpdate struct {
	Name string
}

// UpdateUser changes a user's name. CodeInsufficientScope, CodeNotFound,
// CodeInvalidRequest.
func (s *Service) UpdateUser(ctx context.Context, p Principal, id string, req UserUpdate) (User, error) {
	if err := p.Authorize(OpUpdateUser); err != nil {
		return User{}, err
	}
	if !ValidID(PrefixUser, id) {
		return User{}, ErrUserNotFound()
	}
	var problems Problems
	name := normalizeName("name", req.Name, &problems)
	if err := problems.Err(); err != nil {
		return User{}, err
	}
	u, err := s.store.UpdateUser(ctx, id, UserPatch{Name: &name, UpdatedAt: s.now()})
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
// membership first. CodeInsufficientScope, CodeNotFound, CodeInvalidRequest.
func (s *Service) ListUserMemberships(ctx context.Context, p Principal, userID string, r PageRequest) (List[Membership], error) {
	if err := p.Authorize(OpListUserMemberships); err != nil {
		return List[Membership]{}, err
	}
	if !ValidID(PrefixUser, userID) {
		return List[Membership]{}, ErrUserNotFound()
	}
	list := "memberships/" + userID
	params, err := s.cursors.params(list, r)
	if err != nil {
		return List[Membership]{}, err
	}
	if _, err := s.store.GetUser(ctx, userID); err != nil {
		return List[Membership]{}, storeErr(err)
	}
	page, err := s.store.ListUserMemberships(ctx, userID, params)
	if err != nil {
		return List[Membership]{}, storeErr(err)
	}
	return toList(s.cursors, list, page), nil
}

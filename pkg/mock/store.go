package mock

import (
	"context"
	"time"

	"latchkey/pkg/account"
)

// Store is an account.Store whose every method calls the function field
// of its name with Fn appended, as benbjohnson/wtf's mock/user.go does: a
// test sets the ones its code path calls, and a call to one left nil
// panics, naming a call the test did not expect. Close alone may be left
// nil.
type Store struct {
	CreateUserFn                  func(ctx context.Context, u account.User) error
	CreateUserInOrganizationFn    func(ctx context.Context, u account.User, m account.Membership) error
	ListOrganizationUsersFn       func(ctx context.Context, orgID string, p account.ListParams) (account.Page[account.User], error)
	GetUserFn                     func(ctx context.Context, id string) (account.User, error)
	GetUserByEmailFn              func(ctx context.Context, email string) (account.User, error)
	GetUserByExternalIDFn         func(ctx context.Context, externalID string) (account.User, error)
	UpdateUserFn                  func(ctx context.Context, id string, patch account.UserPatch) (account.User, error)
	DeleteUserFn                  func(ctx context.Context, id string) error
	ListUsersFn                   func(ctx context.Context, p account.ListParams) (account.Page[account.User], error)
	CreateOrganizationFn          func(ctx context.Context, o account.Organization) error
	GetOrganizationFn             func(ctx context.Context, id string) (account.Organization, error)
	GetOrganizationBySlugFn       func(ctx context.Context, slug string) (account.Organization, error)
	GetOrganizationByExternalIDFn func(ctx context.Context, externalID string) (account.Organization, error)
	UpdateOrganizationFn          func(ctx context.Context, id string, patch account.OrganizationPatch) (account.Organization, error)
	DeleteOrganizationFn          func(ctx context.Context, id string) error
	ListOrganizationsFn           func(ctx context.Context, p account.ListParams) (account.Page[account.Organization], error)
	AddMemberFn                   func(ctx context.Context, m account.Membership) error
	GetMemberFn                   func(ctx context.Context, orgID, userID string) (account.Membership, error)
	UpdateMemberFn                func(ctx context.Context, orgID, userID string, patch account.MemberPatch) (account.Membership, error)
	RemoveMemberFn                func(ctx context.Context, orgID, userID string) error
	ListMembersFn                 func(ctx context.Context, orgID string, p account.ListParams) (account.Page[account.Membership], error)
	ListUserMembershipsFn         func(ctx context.Context, userID string, p account.ListParams) (account.Page[account.UserMembership], error)
	CreateAPIKeyFn                func(ctx context.Context, k account.APIKey) error
	GetAPIKeyFn                   func(ctx context.Context, id string) (account.APIKey, error)
	GetAPIKeyByHashFn             func(ctx context.Context, hash []byte) (account.APIKey, error)
	UpdateAPIKeyFn                func(ctx context.Context, id string, patch account.APIKeyPatch, allow func(account.APIKey) error) (account.APIKey, error)
	DeleteAPIKeyFn                func(ctx context.Context, id string, allow func(account.APIKey) error) error
	RecordAPIKeyUseFn             func(ctx context.Context, k account.APIKey, at time.Time) (time.Time, error)
	ChangeKeyUsageFn              func(ctx context.Context, keyID string, shard int, c account.UsageChange) (map[string]int64, bool, error)
	ChangeKeysUsageFn             func(ctx context.Context, changes []account.KeyUsageChange) ([]map[string]int64, bool, error)
	KeyUsageFn                    func(ctx context.Context, shard int, keyIDs ...string) (map[string]map[string]int64, error)
	ListAPIKeysFn                 func(ctx context.Context, f account.APIKeyFilter, p account.ListParams) (account.Page[account.APIKey], error)
	CreateTokenFn                 func(ctx context.Context, t account.TokenRecord) error
	ListTokensFn                  func(ctx context.Context, keyID string, since time.Time, p account.ListParams) (account.Page[account.TokenRecord], error)
	RevokeTokenFn                 func(ctx context.Context, r account.Revocation) (time.Time, error)
	TokenStatusFn                 func(ctx context.Context, tokenID, keyID string, ancestors []string, orgID string, inline bool) (account.TokenStatus, error)
	ClaimIdempotencyFn            func(ctx context.Context, r account.IdempotencyRecord, now time.Time) (account.IdempotencyRecord, bool, error)
	FinishIdempotencyFn           func(ctx context.Context, r account.IdempotencyRecord) error
	ReleaseIdempotencyFn          func(ctx context.Context, keyID, key, owner string) error
	ListEventsFn                  func(ctx context.Context, q account.EventQuery) (account.Page[account.StoredEvent], error)
	CloseFn                       func() error
}

var _ account.Store = (*Store)(nil)

// CreateUser calls CreateUserFn.
func (s *Store) CreateUser(ctx context.Context, u account.User) error {
	return s.CreateUserFn(ctx, u)
}

// CreateUserInOrganization calls CreateUserInOrganizationFn.
func (s *Store) CreateUserInOrganization(ctx context.Context, u account.User, m account.Membership) error {
	return s.CreateUserInOrganizationFn(ctx, u, m)
}

// ListOrganizationUsers calls ListOrganizationUsersFn.
func (s *Store) ListOrganizationUsers(ctx context.Context, orgID string, p account.ListParams) (account.Page[account.User], error) {
	return s.ListOrganizationUsersFn(ctx, orgID, p)
}

// GetUser calls GetUserFn.
func (s *Store) GetUser(ctx context.Context, id string) (account.User, error) {
	return s.GetUserFn(ctx, id)
}

// GetUserByEmail calls GetUserByEmailFn.
func (s *Store) GetUserByEmail(ctx context.Context, email string) (account.User, error) {
	return s.GetUserByEmailFn(ctx, email)
}

// GetUserByExternalID calls GetUserByExternalIDFn.
func (s *Store) GetUserByExternalID(ctx context.Context, externalID string) (account.User, error) {
	return s.GetUserByExternalIDFn(ctx, externalID)
}

// UpdateUser calls UpdateUserFn.
func (s *Store) UpdateUser(ctx context.Context, id string, patch account.UserPatch) (account.User, error) {
	return s.UpdateUserFn(ctx, id, patch)
}

// DeleteUser calls DeleteUserFn.
func (s *Store) DeleteUser(ctx context.Context, id string) error {
	return s.DeleteUserFn(ctx, id)
}

// ListUsers calls ListUsersFn.
func (s *Store) ListUsers(ctx context.Context, p account.ListParams) (account.Page[account.User], error) {
	return s.ListUsersFn(ctx, p)
}

// CreateOrganization calls CreateOrganizationFn.
func (s *Store) CreateOrganization(ctx context.Context, o account.Organization) error {
	return s.CreateOrganizationFn(ctx, o)
}

// GetOrganization calls GetOrganizationFn.
func (s *Store) GetOrganization(ctx context.Context, id string) (account.Organization, error) {
	return s.GetOrganizationFn(ctx, id)
}

// GetOrganizationBySlug calls GetOrganizationBySlugFn.
func (s *Store) GetOrganizationBySlug(ctx context.Context, slug string) (account.Organization, error) {
	return s.GetOrganizationBySlugFn(ctx, slug)
}

// GetOrganizationByExternalID calls GetOrganizationByExternalIDFn.
func (s *Store) GetOrganizationByExternalID(ctx context.Context, externalID string) (account.Organization, error) {
	return s.GetOrganizationByExternalIDFn(ctx, externalID)
}

// UpdateOrganization calls UpdateOrganizationFn.
func (s *Store) UpdateOrganization(ctx context.Context, id string, patch account.OrganizationPatch) (account.Organization, error) {
	return s.UpdateOrganizationFn(ctx, id, patch)
}

// DeleteOrganization calls DeleteOrganizationFn.
func (s *Store) DeleteOrganization(ctx context.Context, id string) error {
	return s.DeleteOrganizationFn(ctx, id)
}

// ListOrganizations calls ListOrganizationsFn.
func (s *Store) ListOrganizations(ctx context.Context, p account.ListParams) (account.Page[account.Organization], error) {
	return s.ListOrganizationsFn(ctx, p)
}

// AddMember calls AddMemberFn.
func (s *Store) AddMember(ctx context.Context, m account.Membership) error {
	return s.AddMemberFn(ctx, m)
}

// GetMember calls GetMemberFn.
func (s *Store) GetMember(ctx context.Context, orgID, userID string) (account.Membership, error) {
	return s.GetMemberFn(ctx, orgID, userID)
}

// UpdateMember calls UpdateMemberFn.
func (s *Store) UpdateMember(ctx context.Context, orgID, userID string, patch account.MemberPatch) (account.Membership, error) {
	return s.UpdateMemberFn(ctx, orgID, userID, patch)
}

// RemoveMember calls RemoveMemberFn.
func (s *Store) RemoveMember(ctx context.Context, orgID, userID string) error {
	return s.RemoveMemberFn(ctx, orgID, userID)
}

// ListMembers calls ListMembersFn.
func (s *Store) ListMembers(ctx context.Context, orgID string, p account.ListParams) (account.Page[account.Membership], error) {
	return s.ListMembersFn(ctx, orgID, p)
}

// ListUserMemberships calls ListUserMembershipsFn.
func (s *Store) ListUserMemberships(ctx context.Context, userID string, p account.ListParams) (account.Page[account.UserMembership], error) {
	return s.ListUserMembershipsFn(ctx, userID, p)
}

// CreateAPIKey calls CreateAPIKeyFn.
func (s *Store) CreateAPIKey(ctx context.Context, k account.APIKey) error {
	return s.CreateAPIKeyFn(ctx, k)
}

// GetAPIKey calls GetAPIKeyFn.
func (s *Store) GetAPIKey(ctx context.Context, id string) (account.APIKey, error) {
	return s.GetAPIKeyFn(ctx, id)
}

// GetAPIKeyByHash calls GetAPIKeyByHashFn.
func (s *Store) GetAPIKeyByHash(ctx context.Context, hash []byte) (account.APIKey, error) {
	return s.GetAPIKeyByHashFn(ctx, hash)
}

// UpdateAPIKey calls UpdateAPIKeyFn.
func (s *Store) UpdateAPIKey(ctx context.Context, id string, patch account.APIKeyPatch, allow func(account.APIKey) error) (account.APIKey, error) {
	return s.UpdateAPIKeyFn(ctx, id, patch, allow)
}

// DeleteAPIKey calls DeleteAPIKeyFn.
func (s *Store) DeleteAPIKey(ctx context.Context, id string, allow func(account.APIKey) error) error {
	return s.DeleteAPIKeyFn(ctx, id, allow)
}

// RecordAPIKeyUse calls RecordAPIKeyUseFn.
func (s *Store) RecordAPIKeyUse(ctx context.Context, k account.APIKey, at time.Time) (time.Time, error) {
	return s.RecordAPIKeyUseFn(ctx, k, at)
}

// ChangeKeyUsage calls ChangeKeyUsageFn.
func (s *Store) ChangeKeyUsage(ctx context.Context, keyID string, shard int, c account.UsageChange) (map[string]int64, bool, error) {
	return s.ChangeKeyUsageFn(ctx, keyID, shard, c)
}

// ChangeKeysUsage calls ChangeKeysUsageFn.
func (s *Store) ChangeKeysUsage(ctx context.Context, changes []account.KeyUsageChange) ([]map[string]int64, bool, error) {
	return s.ChangeKeysUsageFn(ctx, changes)
}

// KeyUsage calls KeyUsageFn.
func (s *Store) KeyUsage(ctx context.Context, shard int, keyIDs ...string) (map[string]map[string]int64, error) {
	return s.KeyUsageFn(ctx, shard, keyIDs...)
}

// ListAPIKeys calls ListAPIKeysFn.
func (s *Store) ListAPIKeys(ctx context.Context, f account.APIKeyFilter, p account.ListParams) (account.Page[account.APIKey], error) {
	return s.ListAPIKeysFn(ctx, f, p)
}

// CreateToken calls CreateTokenFn.
func (s *Store) CreateToken(ctx context.Context, t account.TokenRecord) error {
	return s.CreateTokenFn(ctx, t)
}

// ListTokens calls ListTokensFn.
func (s *Store) ListTokens(ctx context.Context, keyID string, since time.Time, p account.ListParams) (account.Page[account.TokenRecord], error) {
	return s.ListTokensFn(ctx, keyID, since, p)
}

// RevokeToken calls RevokeTokenFn.
func (s *Store) RevokeToken(ctx context.Context, r account.Revocation) (time.Time, error) {
	return s.RevokeTokenFn(ctx, r)
}

// TokenStatus calls TokenStatusFn.
func (s *Store) TokenStatus(ctx context.Context, tokenID, keyID string, ancestors []string, orgID string, inline bool) (account.TokenStatus, error) {
	return s.TokenStatusFn(ctx, tokenID, keyID, ancestors, orgID, inline)
}

// ClaimIdempotency calls ClaimIdempotencyFn.
func (s *Store) ClaimIdempotency(ctx context.Context, r account.IdempotencyRecord, now time.Time) (account.IdempotencyRecord, bool, error) {
	return s.ClaimIdempotencyFn(ctx, r, now)
}

// FinishIdempotency calls FinishIdempotencyFn.
func (s *Store) FinishIdempotency(ctx context.Context, r account.IdempotencyRecord) error {
	return s.FinishIdempotencyFn(ctx, r)
}

// ReleaseIdempotency calls ReleaseIdempotencyFn.
func (s *Store) ReleaseIdempotency(ctx context.Context, keyID, key, owner string) error {
	return s.ReleaseIdempotencyFn(ctx, keyID, key, owner)
}

// ListEvents calls ListEventsFn.
func (s *Store) ListEvents(ctx context.Context, q account.EventQuery) (account.Page[account.StoredEvent], error) {
	return s.ListEventsFn(ctx, q)
}

// Close calls CloseFn, if set.
func (s *Store) Close() error {
	if s.CloseFn == nil {
		return nil
	}
	return s.CloseFn()
}

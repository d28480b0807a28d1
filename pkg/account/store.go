package account

import (
	"context"
	"time"
)

// The page size rule of every list: DefaultPageSize items unless the
// client asks for another number, from 1 to MaxPageSize.
const (
	DefaultPageSize = 20
	MaxPageSize     = 100
)

// ListParams asks a store for one page of a list, newest first.
type ListParams struct {
	// Limit is the most items to return, 1..MaxPageSize. The service
	// validates it; a store reads it through PageSize.
	Limit int
	// After is a position from a previous Page.Next; empty for the first page.
	// Positions are the store's own strings; the service signs them into
	// cursors, so a store may trust one it is given.
	After string
}

// PageSize is the number of items a store returns at most for p: Limit,
// DefaultPageSize when Limit is not set, and never more than MaxPageSize.
// Stores read the limit through it rather than keep a rule of their own.
func (p ListParams) PageSize() int {
	if p.Limit < 1 {
		return DefaultPageSize
	}
	return min(p.Limit, MaxPageSize)
}

// Page is one page of a list, newest first.
type Page[T any] struct {
	Items []T
	// Next is the position after the last item, or empty when there are no
	// more items. Items created after paging began sort before the first page,
	// so following Next never repeats or skips an item that already existed.
	Next string
}

// OrganizationPatch is a change to an organization that a store applies to
// the stored item in one atomic step. Nil fields are left as they are, so
// two concurrent patches of different fields both take effect; a read,
// modify and write in the service would lose one of them.
type OrganizationPatch struct {
	Name *string
	Plan *string
	// ExternalID replaces the external id; "" removes it. The store claims
	// the new one and frees the old one in the same atomic step as the rest
	// of the patch. CodeExternalIDTaken.
	ExternalID *string
	// Metadata replaces the metadata whole; nil or empty removes it.
	Metadata *Metadata
	// RateLimits, when set, replaces the organization's rate limits; empty
	// removes them. Credits, when set, replaces its credits. The store
	// writes them on the organization's read copies too, in the same step.
	RateLimits *[]RateLimit
	Credits    *CreditsChange
	// UpdatedAt is always written.
	UpdatedAt time.Time
}

// Apply returns o with the patch's fields set: what a store writes once
// it has claimed the new external id. UpdatedAt is left to the store,
// which orders it after the stored one (NextUpdatedAt).
func (p OrganizationPatch) Apply(o Organization) Organization {
	if p.Name != nil {
		o.Name = *p.Name
	}
	if p.Plan != nil {
		o.Plan = *p.Plan
	}
	if p.ExternalID != nil {
		o.ExternalID = *p.ExternalID
	}
	if p.Metadata != nil {
		o.Metadata = p.Metadata.OrNil()
	}
	if p.RateLimits != nil {
		o.RateLimits = *p.RateLimits
	}
	if p.Credits != nil {
		o.Credits = p.Credits.Credits
	}
	return o
}

// APIKeyPatch is a change to an API key that a store applies to the stored
// key, every copy of it, in one atomic step. Nil fields are left as they
// are.
type APIKeyPatch struct {
	Name *string
	// Metadata, when set, replaces the metadata whole; an empty one removes
	// it.
	Metadata *Metadata
	Disabled *bool
	// Rotate, when set, gives the key a new secret.
	Rotate *KeyRotation
	// RevokeTokens, when set, revokes every token of the key issued until
	// At: the store sets the key's TokensRevokedBefore to
	// TokensRevokedBefore(the stored one), and records the change under
	// EventType.
	RevokeTokens bool
	// RateLimits, when set, replaces the key's rate limits; empty removes
	// them.
	RateLimits *[]RateLimit
	// Credits, when set, replaces the key's credits.
	Credits *CreditsChange
	// At is the time of the change. A previous secret that has stopped by
	// then (PreviousExpiresAt) is dropped with it.
	At time.Time
}

// CreditsChange replaces a key's credits with Credits; nil removes them.
type CreditsChange struct {
	Credits *Credits
}

// KeyRotation gives a key a new secret (APIKeyPatch.Rotate): Hash and Last4
// replace the key's. The secret they replace becomes PreviousHash, accepted
// until PreviousUntil, unless PreviousUntil is zero: then it stops with the
// change. A previous secret from an earlier rotation stops with the change
// either way.
type KeyRotation struct {
	Hash          []byte
	Last4         string
	PreviousUntil time.Time
}

// APIKeyFilter narrows a list of API keys to an organization's or an
// owner's, or both; an empty field does not narrow it.
type APIKeyFilter struct {
	OrganizationID string
	OwnerID        string
}

// MemberPatch is a change to a membership, applied as OrganizationPatch is.
// The role is the only field the API can change, so it is always set.
type MemberPatch struct {
	Role      string
	UpdatedAt time.Time
}

// WriteOptions are how a Store method writes a change, besides the change
// itself: who makes it, for its events, and the idempotency record it
// commits. The HTTP layer makes them for each request (Principal.Write);
// the zero value records no event and commits no record, for the writes a
// process makes on its own (the bootstrap key).
type WriteOptions struct {
	// Events, when set, makes the write record one event per object it
	// creates, changes or removes (see events.go).
	Events *EventSource
	// Commit, when set, is committed with the change (see
	// IdempotencyCommit).
	Commit *IdempotencyCommit
}

// Store persists the domain. Implementations enforce uniqueness and the
// atomicity of multi-item writes; every other rule lives in Service.
//
// Every method that changes data takes the WriteOptions of its caller:
// it commits their IdempotencyCommit, if any, with the change (see
// IdempotencyCommit), and, with their EventSource, writes one event per
// object it creates, changes or removes in the same atomic write as that
// object (see events.go). RecordAPIKeyUse takes none: a key's use records
// no event and belongs to no request's idempotency record.
//
// Errors: methods return CodeNotFound, CodeEmailTaken, CodeSlugTaken,
// CodeExternalIDTaken, CodeAlreadyMember or CodeLastOwner as documented, each built by its
// constructor
// (ErrUserNotFound for a user, ErrOrganizationNotFound, ErrEmailTaken, …)
// so that the message a client reads is the domain's, not the store's;
// CodeUnavailable when the backend asks to retry later or does not answer
// in time, and CodeInternal (or any other error) otherwise. A store that watches ctx returns an error
// wrapping ctx.Err(), with no code, when ctx ends before it has finished.
type Store interface {
	UsageStore
	UsageCounter

	// CreateUser stores a new user and claims its e-mail and its external
	// id, if it has one. CodeEmailTaken if another user has the e-mail,
	// CodeExternalIDTaken if another user has the external id.
	CreateUser(ctx context.Context, opts WriteOptions, u User) error
	// CreateUserInOrganization stores a new user, as CreateUser does, and
	// the membership m of it in m's organization, in one atomic write, with
	// the events of both, user first: CreateUser and AddMember in one. It
	// stores nothing on an error: CodeNotFound naming the organization if
	// it does not exist at the time of the write (or its delete has begun);
	// CodeEmailTaken, CodeExternalIDTaken as CreateUser.
	CreateUserInOrganization(ctx context.Context, opts WriteOptions, u User, m Membership) error
	// GetUser returns a user. CodeNotFound.
	GetUser(ctx context.Context, id string) (User, error)
	// GetUserByEmail returns the user with the (lower-cased) e-mail, read
	// strongly consistently. CodeNotFound.
	GetUserByEmail(ctx context.Context, email string) (User, error)
	// GetUserByExternalID returns the user with the external id, read
	// strongly consistently. CodeNotFound.
	GetUserByExternalID(ctx context.Context, externalID string) (User, error)
	// UpdateUser applies patch to the user with the given id atomically, in
	// the store, and returns the user as the patch left it. CodeNotFound,
	// CodeEmailTaken, CodeExternalIDTaken.
	UpdateUser(ctx context.Context, opts WriteOptions, id string, patch UserPatch) (User, error)
	// DeleteUser deletes a user, its memberships and its e-mail and
	// external id claims. CodeNotFound. It is allowed when the user is an
	// organization's last owner: the organization is then left without
	// one.
	DeleteUser(ctx context.Context, opts WriteOptions, id string) error
	// ListUsers lists users, newest first.
	ListUsers(ctx context.Context, p ListParams) (Page[User], error)
	// ListOrganizationUsers lists the users who are members of the
	// organization orgID, newest membership first: the page's positions are
	// those of ListMembers, and a member whose user is gone or being
	// deleted is left out (a page may then hold fewer than p.Limit, with
	// Next set). It reads no other user, at a bounded cost per page
	// whatever its size (a store documents how).
	ListOrganizationUsers(ctx context.Context, orgID string, p ListParams) (Page[User], error)

	// CreateOrganization stores a new organization and claims its slug and
	// its external id, if it has one. CodeSlugTaken, CodeExternalIDTaken.
	CreateOrganization(ctx context.Context, opts WriteOptions, o Organization) error
	// GetOrganization returns an organization. CodeNotFound.
	GetOrganization(ctx context.Context, id string) (Organization, error)
	// GetOrganizationBySlug returns the organization with the slug, read
	// strongly consistently. CodeNotFound.
	GetOrganizationBySlug(ctx context.Context, slug string) (Organization, error)
	// GetOrganizationByExternalID returns the organization with the
	// external id, read strongly consistently. CodeNotFound.
	GetOrganizationByExternalID(ctx context.Context, externalID string) (Organization, error)
	// UpdateOrganization applies patch to the organization with the given id
	// atomically, in the store, and returns the organization as the patch
	// left it. CodeNotFound, also for an organization whose deletion has
	// begun; CodeExternalIDTaken.
	UpdateOrganization(ctx context.Context, opts WriteOptions, id string, patch OrganizationPatch) (Organization, error)
	// DeleteOrganization deletes an organization, its memberships, its
	// slug and external id claims and the API keys bound to it, with every
	// key below them, which stop authenticating and verifying tokens when
	// the delete begins. CodeNotFound.
	DeleteOrganization(ctx context.Context, opts WriteOptions, id string) error
	// ListOrganizations lists organizations, newest first.
	ListOrganizations(ctx context.Context, p ListParams) (Page[Organization], error)

	// AddMember stores a membership. CodeNotFound (with a message naming
	// the organization or the user) if either does not exist at the time of
	// the write; CodeAlreadyMember.
	AddMember(ctx context.Context, opts WriteOptions, m Membership) error
	// GetMember returns a membership. CodeNotFound.
	GetMember(ctx context.Context, orgID, userID string) (Membership, error)
	// UpdateMember applies patch to the membership of userID in orgID
	// atomically, in the store, and returns the membership as the patch left
	// it. CodeNotFound; CodeLastOwner, changing nothing, if it would take
	// the OwnerRole from the organization's only owner. The rule holds
	// under concurrent updates and removals: of two owners demoting each
	// other at once, one succeeds.
	UpdateMember(ctx context.Context, opts WriteOptions, orgID, userID string, patch MemberPatch) (Membership, error)
	// RemoveMember deletes a membership. CodeNotFound; CodeLastOwner, as
	// for UpdateMember, if it is the organization's only owner's.
	RemoveMember(ctx context.Context, opts WriteOptions, orgID, userID string) error
	// ListMembers lists the memberships of an organization, newest first.
	ListMembers(ctx context.Context, orgID string, p ListParams) (Page[Membership], error)
	// ListUserMemberships lists the memberships of a user, newest first,
	// each with its organization's name and slug as they are when the page
	// is read, at a bounded cost per page whatever its size (a store
	// documents how). A membership whose organization's delete has begun
	// is left out.
	ListUserMemberships(ctx context.Context, userID string, p ListParams) (Page[UserMembership], error)

	// CreateAPIKey stores a new API key. It fails (with any error) if a key
	// with the same hash exists: EnsureBootstrapKey relies on that when
	// several processes race to install the same admin key. A key with
	// Ancestors goes below the last of them: CodeNotFound, storing nothing,
	// if that key does not exist or its delete has begun, so that no key is
	// created below a key being deleted.
	CreateAPIKey(ctx context.Context, opts WriteOptions, k APIKey) error
	// GetAPIKey returns a key by ID. CodeNotFound, also for a key whose
	// delete, or that of one of its Ancestors, has begun.
	GetAPIKey(ctx context.Context, id string) (APIKey, error)
	// GetAPIKeyByHash returns the key whose secret, or previous secret
	// (PreviousHash), hashes to hash, read strongly consistently. A store
	// may find a key by a previous secret after it has stopped; the caller
	// checks PreviousExpiresAt. CodeNotFound, as for GetAPIKey.
	GetAPIKeyByHash(ctx context.Context, hash []byte) (APIKey, error)
	// DeleteAPIKey deletes the key id and every key below it (whose
	// Ancestors include id), so that from the caller's view they all stop
	// authenticating, verifying tokens and being found at one instant. It
	// reads the key, strongly consistently, and calls allow (unless nil)
	// with it; if allow returns an error, it deletes nothing and returns
	// that error. A store that cannot delete the whole tree in one atomic
	// step makes it disappear to readers in the first one and documents
	// how the rest is finished: calling DeleteAPIKey again finishes a
	// delete that failed halfway. CodeNotFound if there is no key id, or
	// the delete of one of its Ancestors has begun.
	DeleteAPIKey(ctx context.Context, opts WriteOptions, id string, allow func(APIKey) error) error
	// UpdateAPIKey reads the key id strongly consistently, as GetAPIKey
	// does, calls allow (unless nil) with it, and applies patch to it in one
	// atomic step, on the key as it was read: a change made meanwhile makes
	// the store read it again and call allow again. It returns the key as
	// the patch left it. If allow returns an error, it changes nothing and
	// returns that error. A rotation to a hash that another key has fails
	// (with any error), as CreateAPIKey does. CodeNotFound as for GetAPIKey;
	// CodeConcurrentUpdate (ErrConcurrentUpdate) when other changes of the
	// key won every one of a bounded number of tries, never CodeUnavailable
	// for that.
	UpdateAPIKey(ctx context.Context, opts WriteOptions, id string, patch APIKeyPatch, allow func(APIKey) error) (APIKey, error)
	// RecordAPIKeyUse records that k's secret authenticated a request at
	// at, unless a use after at minus KeyUseResolution is recorded
	// already, and returns the last use recorded after the call: at, or
	// the later one it kept. A use recorded for a key deleted a moment
	// before is harmless: nothing reads it but GetAPIKey and ListAPIKeys,
	// which do not find the key.
	RecordAPIKeyUse(ctx context.Context, k APIKey, at time.Time) (time.Time, error)
	// ListAPIKeys lists keys, newest first: every key, or those f names.
	// With both an organization and an owner, a page holds the keys of the
	// organization, among p.Limit of them, that have the owner: it may hold
	// fewer, even none, with Next set. A store may drop a key
	// ExpiredKeyRetention after it has expired. It leaves out a key whose
	// delete has begun; the keys below it may show until the delete is
	// finished (see DeleteAPIKey), and so may the keys of an organization
	// being deleted until that is finished.
	ListAPIKeys(ctx context.Context, f APIKeyFilter, p ListParams) (Page[APIKey], error)

	// CreateToken stores the record of an issued access token, found by
	// its key (ListTokens).
	CreateToken(ctx context.Context, opts WriteOptions, t TokenRecord) error
	// ListTokens lists the records of the tokens issued for the key keyID
	// after since (by the time in their IDs), newest first, each with the
	// RevokedAt of its revocation entry, read strongly consistently. It
	// leaves nothing out for having expired or been revoked: the service
	// decides what is live. A key that does not exist has no records.
	ListTokens(ctx context.Context, keyID string, since time.Time, p ListParams) (Page[TokenRecord], error)
	// RevokeToken writes a revocation entry unless one exists, and returns
	// the time of the entry that is in force: r.RevokedAt, or the earlier
	// one. Idempotent.
	RevokeToken(ctx context.Context, opts WriteOptions, r Revocation) (time.Time, error)
	// TokenStatus reads the revocation entry of tokenID, the key keyID and
	// the key's Ancestors (and its organization), strongly consistently.
	// ancestors and orgID are what the token says the key's Ancestors and
	// OrganizationID are: a store may read them in the same round trip as
	// the key, but it decides by the key's own, so a wrong or missing hint
	// costs a read and never changes the answer. inline is the token's
	// InlineRevocation: a store that records such a token's revocation on
	// its key (RevokeToken with Revocation.Inline) reads it there, and a
	// token without it as before. The Key is the caller's: nothing in it is
	// shared with the store's other reads.
	TokenStatus(ctx context.Context, tokenID, keyID string, ancestors []string, orgID string, inline bool) (TokenStatus, error)
	// Formats returns the formats in force the table records (zero
	// Formats when it records none), strongly consistently.
	Formats(ctx context.Context) (Formats, error)
	// PutFormats records f as the formats in force.
	PutFormats(ctx context.Context, f Formats) error

	// LeaseStatusIndexes reserves the next n indexes of the status list id
	// (retiring at expires) with one atomic addition, and returns the end
	// of the block: the indexes end-n to end-1 are the caller's alone. An
	// end past MaxStatusListSize is a full list.
	LeaseStatusIndexes(ctx context.Context, id string, n int64, expires time.Time) (end int64, err error)
	// GetStatusList reads the list id strongly consistently: every status
	// change a store call has returned from is in it. CodeNotFound for a
	// list with no index leased.
	GetStatusList(ctx context.Context, id string) (StatusList, error)
	// ListStatusLists returns the IDs of the lists that have not retired
	// at now, oldest first.
	ListStatusLists(ctx context.Context, now time.Time) ([]string, error)

	// ClaimIdempotency writes r, a started record, unless the record of
	// r.KeyID and r.Key that the store holds is in force at now for r's
	// fingerprint; the check and the write are one atomic step. A record
	// is in force until its ExpiresAt if it is applied or done, or started
	// for another request (another fingerprint), or started by a request
	// that still holds its lease (LeaseUntil after now); a started record
	// of the same request whose lease has passed belonged to a request
	// that died before changing anything, and a retry takes it over. The
	// rule is executed once, as the condition of tablestore's
	// ClaimIdempotency; storetest's Claim cases check it on each store.
	// It returns r and true when it wrote r, and the record in force and
	// false otherwise.
	ClaimIdempotency(ctx context.Context, r IdempotencyRecord, now time.Time) (IdempotencyRecord, bool, error)
	// FinishIdempotency stores r, a done record with its Response, in place
	// of the record of r.KeyID and r.Key, if r.Owner holds that record.
	// CodeIdempotencyInProgress, writing nothing, if another request has
	// taken it over.
	FinishIdempotency(ctx context.Context, r IdempotencyRecord) error
	// ReleaseIdempotency deletes the record of keyID and key if owner holds
	// it and it is still started (no change was committed with it), and
	// does nothing otherwise.
	ReleaseIdempotency(ctx context.Context, keyID, key, owner string) error

	// ListEvents returns a page of events (see EventQuery). An event is
	// returned only once the change it records is committed, and a store
	// makes events visible in id order: a reader that has seen an event
	// never later finds one with a smaller id, so paging with After skips
	// none. A store whose concurrent writers may commit out of id order
	// (DynamoDB) holds back the newest events for a bounded time it
	// documents.
	ListEvents(ctx context.Context, q EventQuery) (Page[StoredEvent], error)

	// Close releases the store's resources.
	Close() error
}

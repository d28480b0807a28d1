package tablestore

import (
	"strings"
	"time"

	"latchkey/pkg/account"
)

// The items of the table. They are private so that the attribute layout can
// change without touching the domain; every conversion between an item and a
// domain type is in this file. Times are stored as RFC 3339 strings (the
// attributevalue default), which keeps items readable in the console;
// expire_at is epoch seconds because that is what DynamoDB TTL reads.

type userItem struct {
	key
	GSI1PK    string    `dynamodbav:"gsi1pk"`
	GSI1SK    string    `dynamodbav:"gsi1sk"`
	Email     string    `dynamodbav:"email"`
	Name      string    `dynamodbav:"name"`
	Role      string    `dynamodbav:"role"`
	CreatedAt time.Time `dynamodbav:"created_at"`
	UpdatedAt time.Time `dynamodbav:"updated_at"`
	// ExternalID and Metadata are absent when there are none.
	ExternalID string            `dynamodbav:"external_id,omitempty"`
	Metadata   map[string]string `dynamodbav:"metadata,omitempty"`
	// Deleting is set by the first step of DeleteUser; AddMember refuses a
	// user that has it, so the cascade sees every membership.
	Deleting bool `dynamodbav:"deleting,omitempty"`
}

func newUserItem(u account.User) userItem {
	return userItem{
		key:        userKey(u.ID),
		GSI1PK:     listUsers,
		GSI1SK:     u.ID,
		Email:      u.Email,
		Name:       u.Name,
		Role:       u.Role,
		CreatedAt:  u.CreatedAt.UTC(),
		UpdatedAt:  u.UpdatedAt.UTC(),
		ExternalID: u.ExternalID,
		Metadata:   u.Metadata,
	}
}

func (it userItem) user() account.User {
	return account.User{
		ID:         idFrom(it.PK, prefixUser),
		Email:      it.Email,
		Name:       it.Name,
		Role:       it.Role,
		ExternalID: it.ExternalID,
		Metadata:   account.Metadata(it.Metadata).OrNil(),
		CreatedAt:  it.CreatedAt,
		UpdatedAt:  it.UpdatedAt,
	}
}

// userChanges adds to upd the fields of the patch that UpdateUser writes as
// they are, those the patch holds: all but the e-mail and the external id,
// whose guards move with them (updateClaiming). Here, beside userItem, so
// that a new field of the user is stored, read and updated in one file.
func userChanges(upd Update, p account.UserPatch) Update {
	if p.Name != nil {
		upd = upd.set("name", *p.Name)
	}
	if p.Role != nil {
		upd = upd.set("role", *p.Role)
	}
	return setMetadata(upd, p.Metadata)
}

// guardItem claims a unique value (an e-mail or a slug) for its owner.
type guardItem struct {
	key
	OwnerID string `dynamodbav:"owner_id"`
}

type orgItem struct {
	key
	GSI1PK    string    `dynamodbav:"gsi1pk"`
	GSI1SK    string    `dynamodbav:"gsi1sk"`
	Name      string    `dynamodbav:"name"`
	Slug      string    `dynamodbav:"slug"`
	Plan      string    `dynamodbav:"plan"`
	CreatedAt time.Time `dynamodbav:"created_at"`
	UpdatedAt time.Time `dynamodbav:"updated_at"`
	// ExternalID and Metadata: as for userItem.
	ExternalID string            `dynamodbav:"external_id,omitempty"`
	Metadata   map[string]string `dynamodbav:"metadata,omitempty"`
	// Deleting: as for userItem.
	Deleting bool `dynamodbav:"deleting,omitempty"`
	orgLimits
}

// orgLimits are an organization's limits, on its item and its read copies
// alike: a verify reads them from the copy it reads, and every change of
// them writes every copy in the same transaction.
type orgLimits struct {
	RateLimits []rateLimitItem `dynamodbav:"rate_limits,omitempty"`
	Credits    *creditsItem    `dynamodbav:"credits,omitempty"`
}

func newOrgLimits(o account.Organization) orgLimits {
	return orgLimits{RateLimits: rateLimitItems(o.RateLimits), Credits: newCreditsItem(o.Credits)}
}

func newOrgItem(o account.Organization) orgItem {
	return orgItem{
		key:        orgKey(o.ID),
		GSI1PK:     listOrgs,
		GSI1SK:     o.ID,
		Name:       o.Name,
		Slug:       o.Slug,
		Plan:       o.Plan,
		CreatedAt:  o.CreatedAt.UTC(),
		UpdatedAt:  o.UpdatedAt.UTC(),
		ExternalID: o.ExternalID,
		Metadata:   o.Metadata,
		orgLimits:  newOrgLimits(o),
	}
}

func (it orgItem) organization() account.Organization {
	ls, c := limitsOf(it.RateLimits, it.Credits)
	return account.Organization{
		RateLimits: ls,
		Credits:    c,
		ID:         idFrom(it.PK, prefixOrg),
		Name:       it.Name,
		Slug:       it.Slug,
		Plan:       it.Plan,
		ExternalID: it.ExternalID,
		Metadata:   account.Metadata(it.Metadata).OrNil(),
		CreatedAt:  it.CreatedAt,
		UpdatedAt:  it.UpdatedAt,
	}
}

// memberItem is one side of a membership: stored once in the organization's
// partition and once in the user's, so that either side can be listed in
// order and cascaded with a strongly consistent Query.
type memberItem struct {
	key
	GSI1PK    string    `dynamodbav:"gsi1pk"`
	GSI1SK    string    `dynamodbav:"gsi1sk"`
	Role      string    `dynamodbav:"role"`
	CreatedAt time.Time `dynamodbav:"created_at"`
	UpdatedAt time.Time `dynamodbav:"updated_at"`
}

// newMemberItems returns the organization's side and the user's side.
func newMemberItems(m account.Membership) (orgSide, userSide memberItem) {
	orgSide = memberItem{
		key:       orgMemberKey(m.OrganizationID, m.UserID),
		GSI1PK:    membersList(m.OrganizationID),
		GSI1SK:    memberSort(m.CreatedAt, m.UserID),
		Role:      m.Role,
		CreatedAt: m.CreatedAt.UTC(),
		UpdatedAt: m.UpdatedAt.UTC(),
	}
	userSide = orgSide
	userSide.key = userMemberKey(m.UserID, m.OrganizationID)
	userSide.GSI1PK = memberOfList(m.UserID)
	userSide.GSI1SK = memberSort(m.CreatedAt, m.OrganizationID)
	return orgSide, userSide
}

func (it memberItem) membership() account.Membership {
	m := account.Membership{Role: it.Role, CreatedAt: it.CreatedAt, UpdatedAt: it.UpdatedAt}
	if strings.HasPrefix(it.PK, prefixOrg) {
		m.OrganizationID, m.UserID = idFrom(it.PK, prefixOrg), idFrom(it.SK, prefixMember)
	} else {
		m.UserID, m.OrganizationID = idFrom(it.PK, prefixUser), idFrom(it.SK, prefixMember)
	}
	return m
}

// apiKeyItem is stored twice with the same attributes: under its ID (listed,
// read by TokenStatus) and under its hash (read on every API-key request).
// Every change to a key (UpdateAPIKey) writes both copies in one
// transaction, on condition that the item under the ID still has the
// Version that was read, so the copies never diverge. The attributes a
// store operation writes on one copy alone are Children, which only the
// item under the ID carries, and Deleting, which a tree delete sets on both
// in one transaction.
type apiKeyItem struct {
	key
	GSI1PK    string   `dynamodbav:"gsi1pk,omitempty"`
	GSI1SK    string   `dynamodbav:"gsi1sk,omitempty"`
	KeyID     string   `dynamodbav:"key_id"`
	Name      string   `dynamodbav:"name"`
	Hash      []byte   `dynamodbav:"hash"`
	Last4     string   `dynamodbav:"last4"`
	Scopes    []string `dynamodbav:"scopes"`
	CreatedBy string   `dynamodbav:"created_by,omitempty"`
	Ancestors []string `dynamodbav:"ancestors,omitempty"`
	Bootstrap bool     `dynamodbav:"bootstrap,omitempty"`
	// Probe is absent on every other key: a release before it reads the
	// probe key as an ordinary key, which it is but for its retirement.
	Probe bool `dynamodbav:"probe,omitempty"`
	// OrganizationID and OwnerID are listed in the key's KEYORG# and
	// KEYOWNER# partitions too (see keyLinkItem).
	OrganizationID string            `dynamodbav:"organization_id,omitempty"`
	OwnerID        string            `dynamodbav:"owner_id,omitempty"`
	Metadata       map[string]string `dynamodbav:"metadata,omitempty"`
	Disabled       bool              `dynamodbav:"disabled,omitempty"`
	// PreviousHash is the hash of the secret the last rotation replaced,
	// until PreviousExpiresAt; a third copy of the key is stored under it
	// meanwhile (see previousCopy).
	PreviousHash      []byte     `dynamodbav:"previous_hash,omitempty"`
	PreviousExpiresAt *time.Time `dynamodbav:"previous_expires_at,omitempty"`
	// TokensRevokedBefore is on both copies, set by UpdateAPIKey in its
	// transaction: every verify reads it with the key, so one write
	// revokes every token of the key at once (account.APIKey).
	TokensRevokedBefore *time.Time `dynamodbav:"tokens_revoked_before,omitempty"`
	// RateLimits and Credits are the key's limits, on both copies: every
	// use reads them with the key. The counts live in the KEYLIMIT#
	// partitions (usage.go).
	RateLimits []rateLimitItem `dynamodbav:"rate_limits,omitempty"`
	Credits    *creditsItem    `dynamodbav:"credits,omitempty"`
	CreatedAt  time.Time       `dynamodbav:"created_at"`
	ExpiresAt  time.Time       `dynamodbav:"expires_at"`
	// ExpireAt is the TTL attribute (epoch seconds), on keys that expire:
	// DynamoDB drops both copies account.ExpiredKeyRetention after expiry.
	ExpireAt int64 `dynamodbav:"expire_at,omitempty"`
	// Version counts the changes made to the key since it was created:
	// every change, and every delete of it, is conditional on the version
	// it read, so none is made to a key other than the one it read.
	Version int `dynamodbav:"version,omitempty"`
	// Children counts the keys ever created below this one (each create
	// adds 1 in its transaction): a delete of the tree deletes this item
	// only if the count is still the one it read, so no key created
	// meanwhile is left behind. On the item under the ID only.
	Children int `dynamodbav:"children,omitempty"`
	// Deleting is set, on both copies, by a delete of the tree that takes
	// more than one transaction, before the first: the key and every key
	// below it are then gone to readers.
	Deleting bool `dynamodbav:"deleting,omitempty"`
	// CopiesSince is the previous release's (0.1.0) time since which its
	// read copies and entry copies were written; it copies it from this
	// item onto the 15 copies it writes at each change, and then trusts
	// the entry copies of tokens issued since. This release writes none
	// and removes it from this item at every key change: its revocations
	// write no entry copy for 0.1.0 (see copyPlan.entryCopies).
	CopiesSince *time.Time `dynamodbav:"copies_since,omitempty"`
	// Revoked holds the inline revocations of the key's tokens that carry
	// the claim (account.TokenClaims.InlineRevocation), by token ID, on the
	// item under the ID and its read copies: a verify of such a token reads
	// the key and nothing else. At most maxInlineRevocations of tokens not
	// yet expired; a revocation past them goes to the entry and its copies,
	// and moves RevokedOverflowUntil to the latest expiry among them and
	// RevokedOverflowIssuedBefore past the last-issued of them; a verify of
	// a token not found here, issued before both, reads its entry's copy
	// too (overflowMayHold). Read only, once decoded: the key memo hands the
	// same map to every reader (clone leaves it), and a revocation writes
	// a new one.
	Revoked              map[string]inlineRevocation `dynamodbav:"revoked,omitempty"`
	RevokedOverflowUntil *time.Time                  `dynamodbav:"revoked_overflow_until,omitempty"`
	// RevokedOverflowIssuedBefore is a millisecond after the issuance (the
	// time in its ID) of the last-issued token of the overflow: a token
	// issued since cannot be in it, and its verify reads the key alone.
	// Set with RevokedOverflowUntil and dropped with it; absent on an
	// overflow begun by a commit before it existed, which then holds any
	// token issued before RevokedOverflowUntil until it ends.
	RevokedOverflowIssuedBefore *time.Time `dynamodbav:"revoked_overflow_issued_before,omitempty"`
	// On the verify copies only (see shards.go); none on a copy the
	// previous release wrote. ReadCopies is the key's number of verify
	// copies, N: copies 1..N exist and are current. CopiesVersion counts
	// the writes of the copies: every one is conditional on copy 1's.
	// EntryCopiesSince is when this release began to write the key's
	// copies (at its creation, or its first write over the previous
	// release's): a token issued before it may have been revoked with no
	// entry copy (before copies existed), so its entry is read itself.
	// KeyWithoutSince: the item under the ID has no copies_since (see
	// copyPlan.entryCopies).
	ReadCopies       int        `dynamodbav:"read_copies,omitempty"`
	CopiesVersion    int        `dynamodbav:"copies_version,omitempty"`
	EntryCopiesSince *time.Time `dynamodbav:"entry_copies_since,omitempty"`
	KeyWithoutSince  bool       `dynamodbav:"key_without_since,omitempty"`
}

// overflowMayHold reports whether the token tokenID may be one of those
// revoked outside the key's item (RevokedOverflowUntil): issued before the
// overflow's end and, where the key records it, not after the last-issued
// of them.
func (it *apiKeyItem) overflowMayHold(tokenID string) bool {
	return it.RevokedOverflowUntil != nil && issuedBefore(tokenID, *it.RevokedOverflowUntil) &&
		(it.RevokedOverflowIssuedBefore == nil || issuedBefore(tokenID, *it.RevokedOverflowIssuedBefore))
}

// inlineRevocation is a token's revocation on its key: short names and
// numbers, so that maxInlineRevocations of them add about 1 KB to the
// key's item (a 30-character ID and two numbers: about 55 bytes each).
type inlineRevocation struct {
	// RevokedAt is the revocation's time in Unix nanoseconds, as the entry
	// has it; ExpiresAt the token's expiry in Unix seconds, after which the
	// revocation is dropped at the key's next revocation.
	RevokedAt int64 `dynamodbav:"r"`
	ExpiresAt int64 `dynamodbav:"e"`
}

// newAPIKeyItems returns the item under the ID and the copy under the hash.
// Only the first is in the gsi1 list.
func newAPIKeyItems(k account.APIKey) (byID, byHash apiKeyItem) {
	scopes := k.Scopes
	if scopes == nil {
		scopes = []string{}
	}
	byID = apiKeyItem{
		key:       apiKeyKey(k.ID),
		GSI1PK:    listKeys,
		GSI1SK:    k.ID,
		KeyID:     k.ID,
		Name:      k.Name,
		Hash:      k.Hash,
		Last4:     k.Last4,
		Scopes:    scopes,
		CreatedBy: k.CreatedBy,
		Ancestors: k.Ancestors,
		Bootstrap: k.Bootstrap,
		Probe:     k.Probe,
		Disabled:  k.Disabled,

		OrganizationID: k.OrganizationID,
		OwnerID:        k.OwnerID,
		CreatedAt:      k.CreatedAt.UTC(),
		ExpiresAt:      k.ExpiresAt.UTC(),
		RateLimits:     rateLimitItems(k.RateLimits),
		Credits:        newCreditsItem(k.Credits),
	}
	if len(k.Metadata) > 0 {
		byID.Metadata = k.Metadata
	}
	// A new key has neither; a key carried over from another store
	// (boltstore's conversion of its earlier layout) may.
	if k.PreviousHash != nil {
		until := k.PreviousExpiresAt.UTC()
		byID.PreviousHash, byID.PreviousExpiresAt = k.PreviousHash, &until
	}
	if !k.TokensRevokedBefore.IsZero() {
		before := k.TokensRevokedBefore.UTC()
		byID.TokensRevokedBefore = &before
	}
	if !k.ExpiresAt.IsZero() {
		byID.ExpireAt = k.ExpiresAt.Add(account.ExpiredKeyRetention).Unix()
	}
	return byID, byID.hashCopy()
}

// hashCopy returns the copy of the item under the ID (it) that is stored
// under the key's hash: outside the list, without Children.
func (it apiKeyItem) hashCopy() apiKeyItem {
	it.key = keyHashKey(it.Hash)
	it.GSI1PK, it.GSI1SK = "", ""
	it.Children = 0
	// A secret authenticates the key, not a token: no revocations, so a
	// revocation need not write this copy.
	it.Revoked, it.RevokedOverflowUntil, it.RevokedOverflowIssuedBefore = nil, nil, nil
	it.ReadCopies, it.CopiesVersion, it.EntryCopiesSince, it.KeyWithoutSince = 0, 0, nil, false
	return it
}

// previousCopy returns the copy of the item under the ID (it) that is
// stored under its PreviousHash while that secret is accepted. DynamoDB
// deletes it (TTL) once the grace period has ended; the service refuses the
// secret from that instant on whether or not it is gone.
func (it apiKeyItem) previousCopy() apiKeyItem {
	c := it.hashCopy()
	c.key = keyHashKey(it.PreviousHash)
	c.ExpireAt = it.PreviousExpiresAt.Unix()
	return c
}

// apiKey returns the key as stored; DisabledAbove is for the reader to set.
func (it apiKeyItem) apiKey() account.APIKey {
	k := account.APIKey{
		ID:        it.KeyID,
		Name:      it.Name,
		Hash:      it.Hash,
		Last4:     it.Last4,
		Scopes:    it.Scopes,
		CreatedBy: it.CreatedBy,
		Ancestors: it.Ancestors,
		Bootstrap: it.Bootstrap,
		Probe:     it.Probe,
		Metadata:  it.Metadata,

		OrganizationID: it.OrganizationID,
		OwnerID:        it.OwnerID,
		Disabled:       it.Disabled,
		CreatedAt:      it.CreatedAt,
		ExpiresAt:      it.ExpiresAt,

		PreviousHash: it.PreviousHash,
	}
	if it.PreviousExpiresAt != nil {
		k.PreviousExpiresAt = *it.PreviousExpiresAt
	}
	if it.TokensRevokedBefore != nil {
		k.TokensRevokedBefore = *it.TokensRevokedBefore
	}
	if k.Scopes == nil {
		k.Scopes = []string{}
	}
	k.RateLimits, k.Credits = it.limits()
	return k
}

// keyLinkItem lists a key in another partition, found with a strongly
// consistent Query of that partition: in the partition of its parent (the
// last of its Ancestors), so that a delete finds the keys below a key; in
// the KEYORG# partition of its organization, so that deleting the
// organization finds its keys, and so do lists by organization; in the
// KEYOWNER# partition of its owner, for lists by owner. It expires with the
// key.
type keyLinkItem struct {
	key
	ExpireAt int64 `dynamodbav:"expire_at,omitempty"`
}

// linkKeys returns the keys of the links of the key it in its
// organization's and its owner's partitions (not the link below its
// parent: a link to a key whose item is gone is found in its parent's
// partition, not through the item).
func (it apiKeyItem) linkKeys() []key {
	var ks []key
	if it.OrganizationID != "" {
		ks = append(ks, keyOrgLinkKey(it.OrganizationID, it.KeyID))
	}
	if it.OwnerID != "" {
		ks = append(ks, keyOwnerLinkKey(it.OwnerID, it.KeyID))
	}
	return ks
}

// newKeyLinkItem returns the link at where to the key k.
func newKeyLinkItem(where key, k account.APIKey) keyLinkItem {
	it := keyLinkItem{key: where}
	if !k.ExpiresAt.IsZero() {
		it.ExpireAt = k.ExpiresAt.Add(account.ExpiredKeyRetention).Unix()
	}
	return it
}

// keyUseItem records when a key's secret last authenticated a request. It
// is an item of its own, in a partition of its own, so that every function
// may write it (each authenticates API keys) while only the auth function
// may write the key's items: a function that can set a key's last use can
// change nothing else about it. It expires with the key.
type keyUseItem struct {
	key
	KeyID string `dynamodbav:"key_id"`
	// LastUsedAt is epoch milliseconds, so that a condition can compare it.
	LastUsedAt int64 `dynamodbav:"last_used_at"`
	ExpireAt   int64 `dynamodbav:"expire_at,omitempty"`
}

func (it keyUseItem) lastUsed() time.Time {
	if it.LastUsedAt == 0 {
		return time.Time{}
	}
	return time.UnixMilli(it.LastUsedAt).UTC()
}

// tokenItem is a token's record, in its key's partition (KEY#<key_id>,
// TOKEN#<tok_id>), so that a strongly consistent Query of that partition
// lists the key's tokens newest first (token IDs are ULIDs).
type tokenItem struct {
	key
	KeyID     string    `dynamodbav:"key_id"`
	Scopes    []string  `dynamodbav:"scopes"`
	Audience  string    `dynamodbav:"audience,omitempty"`
	IssuedAt  time.Time `dynamodbav:"issued_at"`
	ExpiresAt time.Time `dynamodbav:"expires_at"`
	// ExpireAt is the TTL attribute: DynamoDB deletes the record, for free,
	// some time after the token has expired.
	ExpireAt time.Time `dynamodbav:"expire_at,unixtime"`
	// StatusList and StatusIndex are the token's status list entry, which
	// a change of its key flips (statuslist.go); absent on a token issued
	// without one.
	StatusList  string `dynamodbav:"status_list,omitempty"`
	StatusIndex *int64 `dynamodbav:"status_idx,omitempty"`
}

func newTokenItem(t account.TokenRecord) tokenItem {
	scopes := t.Scopes
	if scopes == nil {
		scopes = []string{}
	}
	it := tokenItem{
		key:       tokenKey(t.KeyID, t.ID),
		KeyID:     t.KeyID,
		Scopes:    scopes,
		Audience:  t.Audience,
		IssuedAt:  t.IssuedAt.UTC(),
		ExpiresAt: t.ExpiresAt.UTC(),
		ExpireAt:  t.ExpiresAt,
	}
	if t.Status != nil {
		it.StatusList, it.StatusIndex = t.Status.List, &t.Status.Index
	}
	return it
}

func (it tokenItem) record() account.TokenRecord {
	t := account.TokenRecord{
		ID: idFrom(it.SK, prefixToken), KeyID: it.KeyID, Scopes: it.Scopes, Audience: it.Audience,
		IssuedAt: it.IssuedAt, ExpiresAt: it.ExpiresAt,
	}
	if it.StatusIndex != nil {
		t.Status = &account.StatusRef{List: it.StatusList, Index: *it.StatusIndex}
	}
	return t
}

type revocationItem struct {
	key
	KeyID     string    `dynamodbav:"key_id"`
	RevokedAt time.Time `dynamodbav:"revoked_at"`
	ExpiresAt time.Time `dynamodbav:"expires_at"`
	// ExpireAt is the TTL attribute: once the token has expired it is
	// refused for that reason, and its revocation entry is no longer needed.
	ExpireAt time.Time `dynamodbav:"expire_at,unixtime"`
}

func newRevocationItem(r account.Revocation) revocationItem {
	return revocationItem{
		key:       revocationKey(r.TokenID),
		KeyID:     r.KeyID,
		RevokedAt: r.RevokedAt.UTC(),
		ExpiresAt: r.ExpiresAt.UTC(),
		ExpireAt:  r.ExpiresAt,
	}
}

// jwksItem is the config item as it is read (see publickeys.go).
type jwksItem struct {
	key
	JWKS   []byte `dynamodbav:"jwks"`
	Issuer string `dynamodbav:"issuer"`
}

// idempotencyItem is an account.IdempotencyRecord. The lease and the
// expiry are epoch milliseconds, for the conditions of ClaimIdempotency;
// ExpireAt is the TTL attribute (epoch seconds, rounded up).
type idempotencyItem struct {
	key
	KeyID       string                   `dynamodbav:"key_id"`
	Key         string                   `dynamodbav:"idempotency_key"`
	Fingerprint []byte                   `dynamodbav:"fingerprint"`
	Owner       string                   `dynamodbav:"owner"`
	State       account.IdempotencyState `dynamodbav:"state"`
	LeaseUntil  int64                    `dynamodbav:"lease_until"`
	Response    []byte                   `dynamodbav:"response,omitempty"`
	CreatedAt   time.Time                `dynamodbav:"created_at"`
	ExpiresAt   int64                    `dynamodbav:"expires_at"`
	ExpireAt    int64                    `dynamodbav:"expire_at"`
}

func newIdempotencyItem(r account.IdempotencyRecord) idempotencyItem {
	return idempotencyItem{
		key:         idempotencyKey(r.KeyID, r.Key),
		KeyID:       r.KeyID,
		Key:         r.Key,
		Fingerprint: r.Fingerprint,
		Owner:       r.Owner,
		State:       r.State,
		LeaseUntil:  r.LeaseUntil.UnixMilli(),
		Response:    r.Response,
		CreatedAt:   r.CreatedAt.UTC(),
		ExpiresAt:   r.ExpiresAt.UnixMilli(),
		ExpireAt:    r.ExpiresAt.Add(time.Second - 1).Unix(),
	}
}

func (it idempotencyItem) record() account.IdempotencyRecord {
	return account.IdempotencyRecord{
		KeyID:       it.KeyID,
		Key:         it.Key,
		Fingerprint: it.Fingerprint,
		Owner:       it.Owner,
		State:       it.State,
		LeaseUntil:  time.UnixMilli(it.LeaseUntil).UTC(),
		Response:    it.Response,
		CreatedAt:   it.CreatedAt,
		ExpiresAt:   time.UnixMilli(it.ExpiresAt).UTC(),
	}
}

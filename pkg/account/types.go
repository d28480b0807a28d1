package account

import "time"

// Organization groups users.
type Organization struct {
	ID   string
	Name string
	Slug string // unique
	Plan string // one of Plans
	// ExternalID is the integrator's own identifier for the organization,
	// unique among organizations; "" when there is none.
	ExternalID string
	Metadata   Metadata // nil when there is none
	// RateLimits and Credits bound the uses of every key bound to the
	// organization together, as a key's bound the uses of its own (see
	// APIKey.OrganizationLimits); nil for none.
	RateLimits []RateLimit
	Credits    *Credits
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// OwnerRole is the member role that LastOwner protects: an organization
// that has a member with it always keeps one, except when that user is
// deleted.
const OwnerRole = "owner"

// UserMembership is a membership as a user's list shows it: with the
// organization's name and slug, read by the store with the page.
type UserMembership struct {
	Membership
	OrganizationName string
	OrganizationSlug string
}

// Membership says that a user belongs to an organization with a role.
type Membership struct {
	OrganizationID string
	UserID         string
	Role           string // one of MemberRoles
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// APIKey is a long-lived secret credential. Only the SHA-256 hash of the
// secret is stored; the secret itself is shown once, at creation.
type APIKey struct {
	ID        string
	Name      string
	Hash      []byte // SHA-256 of the secret
	Last4     string // last four characters of the secret, for display
	Scopes    []string
	CreatedBy string // ID of the key that created it; empty for the bootstrap key
	// Ancestors are the keys whose deletion deletes this one: the key that
	// created it, the key that created that one, and so on up to a
	// bootstrap key (not included), root first, so that the last is
	// CreatedBy. Empty for a bootstrap key and for the keys one creates:
	// a bootstrap key is retired by rotating the configured secret, which
	// replaces the credential and keeps what the administrator created.
	// At most MaxKeyAncestors.
	Ancestors []string
	Bootstrap bool // the admin key from configuration; cannot be deleted or disabled through the API
	// Probe marks the probe key from configuration (EnsureProbeKey), which
	// the canary and the probe issue, check and revoke their tokens with:
	// replacing its secret retires it.
	Probe bool
	// OrganizationID is the organization the key is bound to, "" for none:
	// the keys below it are bound to it too, a key bound to it acts on the
	// keys of no other organization, its tokens say it (org_id), and
	// deleting the organization deletes the key. Fixed at creation.
	OrganizationID string
	// OwnerID is the integrator's own identifier of whom the key belongs
	// to (ValidExternalID), not unique, "" for none; its tokens say it
	// (owner_id). Fixed at creation.
	OwnerID string
	// Metadata is the integrator's own data on the key.
	Metadata Metadata
	// Disabled is the key's own switch (UpdateAPIKey): a disabled key
	// authenticates nothing and its tokens do not verify, and neither do
	// the keys below it nor theirs (see DisabledAbove), until it is
	// enabled again.
	Disabled bool
	// DisabledAbove is never stored: the stores set it on every read that
	// checks a key's Ancestors (GetAPIKey, GetAPIKeyByHash, UpdateAPIKey,
	// TokenStatus) when one of them is Disabled. A key acts with the
	// authority of the keys above it, so pausing a key pauses what was made
	// with it, as deleting one deletes it.
	DisabledAbove bool
	// PreviousHash is the hash of the secret the last rotation replaced,
	// which authenticates too until PreviousExpiresAt (the end of the grace
	// period the rotation gave it), then stops by itself. Empty when the
	// rotation gave none, and once a later rotation has replaced it.
	PreviousHash      []byte
	PreviousExpiresAt time.Time
	// LastUsedAt is the last time the key's secret (either one, during a
	// rotation's grace period) authenticated a request, to within
	// KeyUseResolution; zero if it never has. GetAPIKey, ListAPIKeys and
	// UpdateAPIKey read it; GetAPIKeyByHash and TokenStatus, which decide
	// whether a credential is valid, do not.
	LastUsedAt time.Time
	// TokensRevokedBefore revokes, at once, every token issued for the key
	// at or before it (RevokeAPIKeyTokens); zero if none has been. Tokens
	// issued after it are not affected. One attribute of the key, which
	// every verify reads anyway, however many tokens it revokes.
	TokensRevokedBefore time.Time
	// RateLimits bound the uses of the key (requests it authenticates and
	// verifications of its tokens); nil for none. At most MaxRateLimits.
	RateLimits []RateLimit
	// Credits is the verifications the key has left; nil for no bound.
	Credits *Credits
	// LimitsAbove are the limits of the keys above this one (of its
	// Ancestors) that have any, root first: a use of the key counts
	// against each of them too. Never stored: the stores set it where they
	// set DisabledAbove, from the ancestors' items they read anyway.
	LimitsAbove []KeyLimits
	// OrganizationLimits are the limits of the key's organization, nil
	// when it has none (or the key none): a use of the key counts against
	// them too. Never stored: the stores set it where they read the
	// organization to know whether it is being deleted.
	OrganizationLimits *KeyLimits

	CreatedAt time.Time
	ExpiresAt time.Time // zero: never expires
}

// KeyUseResolution is how exact APIKey.LastUsedAt is: a use of a key is
// recorded only if the last one recorded is at least this old, so that
// a key in constant use costs at most one write a minute, not one per
// request.
const KeyUseResolution = time.Minute

// PreviousActive reports whether the key has a previous secret that is
// still accepted at now.
func (k APIKey) PreviousActive(now time.Time) bool {
	return len(k.PreviousHash) > 0 && now.Before(k.PreviousExpiresAt)
}

// Paused reports whether the key is disabled, itself or by a key above it:
// it then authenticates nothing, and its tokens do not verify.
func (k APIKey) Paused() bool { return k.Disabled || k.DisabledAbove }

// ExpiredKeyRetention is how long stores keep an API key after it has
// expired: long enough for an operator to see in the list why a caller is
// refused, then the key is dropped like other expired records (DynamoDB TTL,
// bbolt pruning). An expired key authenticates nothing meanwhile, and no
// token outlives its key, so dropping it changes no answer but GET.
const ExpiredKeyRetention = 30 * 24 * time.Hour

// Expired reports whether the key has an expiry that has passed at now.
func (k APIKey) Expired(now time.Time) bool {
	return !k.ExpiresAt.IsZero() && !now.Before(k.ExpiresAt)
}

// NextUpdatedAt is the updated_at an update writes over an object whose
// updated_at is prev: the patch's time, or 1 ms after prev when that is
// not later. So updated_at never goes backwards (a patch stamped earlier
// may commit after one stamped later) and every update changes it, which
// the DynamoDB store relies on: its read-then-write updates are
// conditioned on updated_at as read, and timestamps have millisecond
// precision, so two updates in one millisecond would otherwise look like
// none to each other.
func NextUpdatedAt(patch, prev time.Time) time.Time {
	if patch = patch.UTC(); patch.After(prev) {
		return patch
	}
	return prev.UTC().Add(time.Millisecond)
}

package boltstore

import (
	"encoding/json"
	"fmt"
	"time"

	"latchkey/pkg/account"
)

// The items below are the stored form of the domain types. They are
// converted to and from account types here and nowhere else, so that a
// change to the domain cannot silently change the file format.

type userItem struct {
	ID         string           `json:"id"`
	Email      string           `json:"email"`
	Name       string           `json:"name"`
	Role       string           `json:"role"`
	ExternalID string           `json:"external_id,omitempty"`
	Metadata   account.Metadata `json:"metadata,omitempty"`
	CreatedAt  time.Time        `json:"created_at"`
	UpdatedAt  time.Time        `json:"updated_at"`
}

func toUserItem(u account.User) userItem { return userItem(u) }

func (it userItem) domain() account.User {
	u := account.User(it)
	u.Metadata = u.Metadata.OrNil()
	return u
}

type orgItem struct {
	ID         string           `json:"id"`
	Name       string           `json:"name"`
	Slug       string           `json:"slug"`
	Plan       string           `json:"plan"`
	ExternalID string           `json:"external_id,omitempty"`
	Metadata   account.Metadata `json:"metadata,omitempty"`
	CreatedAt  time.Time        `json:"created_at"`
	UpdatedAt  time.Time        `json:"updated_at"`
}

func toOrgItem(o account.Organization) orgItem { return orgItem(o) }

func (it orgItem) domain() account.Organization {
	o := account.Organization(it)
	o.Metadata = o.Metadata.OrNil()
	return o
}

type memberItem struct {
	OrganizationID string    `json:"organization_id"`
	UserID         string    `json:"user_id"`
	Role           string    `json:"role"`
	CreatedAt      time.Time `json:"created_at"`
	UpdatedAt      time.Time `json:"updated_at"`
}

func toMemberItem(m account.Membership) memberItem { return memberItem(m) }

func (it memberItem) domain() account.Membership { return account.Membership(it) }

type apiKeyItem struct {
	ID        string   `json:"id"`
	Name      string   `json:"name"`
	Hash      []byte   `json:"hash"`
	Last4     string   `json:"last4"`
	Scopes    []string `json:"scopes"`
	CreatedBy string   `json:"created_by,omitempty"`
	Ancestors []string `json:"ancestors,omitempty"`
	Bootstrap bool     `json:"bootstrap,omitempty"`
	// OrganizationID and OwnerID are entered in api_keys_by_org and
	// api_keys_by_owner too.
	OrganizationID string            `json:"organization_id,omitempty"`
	OwnerID        string            `json:"owner_id,omitempty"`
	Metadata       map[string]string `json:"metadata,omitempty"`
	Disabled       bool              `json:"disabled,omitempty"`
	// PreviousHash is entered in api_keys_by_hash too, until
	// PreviousExpiresAt (see the expiry kind expiryKeyHash).
	PreviousHash      []byte    `json:"previous_hash,omitempty"`
	PreviousExpiresAt time.Time `json:"previous_expires_at,omitzero"`
	// TokensRevokedBefore is read with the key by every verify.
	TokensRevokedBefore time.Time `json:"tokens_revoked_before,omitzero"`
	CreatedAt           time.Time `json:"created_at"`
	ExpiresAt           time.Time `json:"expires_at"`
	// Interim, until the table store runs over bbolt (issue 20).
	RateLimits []account.RateLimit `json:"rate_limits,omitempty"`
	Credits    *account.Credits    `json:"credits,omitempty"`
}

func toAPIKeyItem(k account.APIKey) apiKeyItem {
	return apiKeyItem{
		ID:        k.ID,
		Name:      k.Name,
		Hash:      k.Hash,
		Last4:     k.Last4,
		Scopes:    k.Scopes,
		CreatedBy: k.CreatedBy,
		Ancestors: k.Ancestors,
		Bootstrap: k.Bootstrap,
		Metadata:  k.Metadata,
		Disabled:  k.Disabled,

		OrganizationID:    k.OrganizationID,
		OwnerID:           k.OwnerID,
		PreviousHash:      k.PreviousHash,
		PreviousExpiresAt: k.PreviousExpiresAt,
		CreatedAt:         k.CreatedAt,
		ExpiresAt:         k.ExpiresAt,

		TokensRevokedBefore: k.TokensRevokedBefore,
		RateLimits:          k.RateLimits,
		Credits:             k.Credits,
	}
}

// domain returns the key as stored; DisabledAbove is for the reader to set.
func (it apiKeyItem) domain() account.APIKey {
	return account.APIKey{
		ID:        it.ID,
		Name:      it.Name,
		Hash:      it.Hash,
		Last4:     it.Last4,
		Scopes:    it.Scopes,
		CreatedBy: it.CreatedBy,
		Ancestors: it.Ancestors,
		Bootstrap: it.Bootstrap,
		Metadata:  it.Metadata,
		Disabled:  it.Disabled,

		OrganizationID:    it.OrganizationID,
		OwnerID:           it.OwnerID,
		PreviousHash:      it.PreviousHash,
		PreviousExpiresAt: it.PreviousExpiresAt,
		CreatedAt:         it.CreatedAt,
		ExpiresAt:         it.ExpiresAt,

		TokensRevokedBefore: it.TokensRevokedBefore,
		RateLimits:          it.RateLimits,
		Credits:             it.Credits,
	}
}

// tokenItem is a token's record, entered in tokens_by_key too (the list
// of a key's tokens).
type tokenItem struct {
	ID        string    `json:"id"`
	KeyID     string    `json:"key_id"`
	Scopes    []string  `json:"scopes"`
	Audience  string    `json:"audience,omitempty"`
	IssuedAt  time.Time `json:"issued_at"`
	ExpiresAt time.Time `json:"expires_at"`
}

func toTokenItem(t account.TokenRecord) tokenItem {
	return tokenItem{ID: t.ID, KeyID: t.KeyID, Scopes: t.Scopes, Audience: t.Audience, IssuedAt: t.IssuedAt, ExpiresAt: t.ExpiresAt}
}

func (it tokenItem) domain() account.TokenRecord {
	return account.TokenRecord{ID: it.ID, KeyID: it.KeyID, Scopes: it.Scopes, Audience: it.Audience, IssuedAt: it.IssuedAt, ExpiresAt: it.ExpiresAt}
}

type revocationItem struct {
	TokenID   string    `json:"token_id"`
	KeyID     string    `json:"key_id"`
	RevokedAt time.Time `json:"revoked_at"`
	ExpiresAt time.Time `json:"expires_at"`
}

func toRevocationItem(r account.Revocation) revocationItem {
	return revocationItem{TokenID: r.TokenID, KeyID: r.KeyID, RevokedAt: r.RevokedAt, ExpiresAt: r.ExpiresAt}
}

// encode marshals an item. The item types hold only strings, times, bools
// and byte slices, so a failure here is a programming error; it is still
// reported rather than ignored.
func encode(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, account.Internal(fmt.Errorf("boltstore: encode %T: %w", v, err))
	}
	return b, nil
}

// decode unmarshals an item; a corrupt record is an internal error.
func decode[T any](b []byte) (T, error) {
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		return v, account.Internal(fmt.Errorf("boltstore: decode %T: %w", v, err))
	}
	return v, nil
}

// idempotencyItem is an account.IdempotencyRecord.
type idempotencyItem struct {
	KeyID       string                   `json:"key_id"`
	Key         string                   `json:"key"`
	Fingerprint []byte                   `json:"fingerprint"`
	Owner       string                   `json:"owner"`
	State       account.IdempotencyState `json:"state"`
	LeaseUntil  time.Time                `json:"lease_until"`
	Response    []byte                   `json:"response,omitempty"`
	CreatedAt   time.Time                `json:"created_at"`
	ExpiresAt   time.Time                `json:"expires_at"`
}

func toIdempotencyItem(r account.IdempotencyRecord) idempotencyItem { return idempotencyItem(r) }

func (it idempotencyItem) domain() account.IdempotencyRecord { return account.IdempotencyRecord(it) }

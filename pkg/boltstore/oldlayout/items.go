package oldlayout

import (
	"time"

	"latchkey/pkg/account"
)

// The stored forms of the earlier layout, JSON in each bucket, as fda3049's
// pkg/boltstore/items.go wrote them. They are read here and nowhere else.
// Each converts to its domain type field by field, never by a struct
// conversion, so that a field added to the domain type leaves this
// package compiling (TestDomain_NewFields).
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

func (it userItem) domain() account.User {
	return account.User{
		ID: it.ID, Email: it.Email, Name: it.Name, Role: it.Role, ExternalID: it.ExternalID,
		Metadata: it.Metadata.OrNil(), CreatedAt: it.CreatedAt, UpdatedAt: it.UpdatedAt,
	}
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

func (it orgItem) domain() account.Organization {
	return account.Organization{
		ID: it.ID, Name: it.Name, Slug: it.Slug, Plan: it.Plan, ExternalID: it.ExternalID,
		Metadata: it.Metadata.OrNil(), CreatedAt: it.CreatedAt, UpdatedAt: it.UpdatedAt,
	}
}

type memberItem struct {
	OrganizationID string    `json:"organization_id"`
	UserID         string    `json:"user_id"`
	Role           string    `json:"role"`
	CreatedAt      time.Time `json:"created_at"`
	UpdatedAt      time.Time `json:"updated_at"`
}

func (it memberItem) domain() account.Membership {
	return account.Membership{OrganizationID: it.OrganizationID, UserID: it.UserID, Role: it.Role, CreatedAt: it.CreatedAt, UpdatedAt: it.UpdatedAt}
}

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
	}
}

type tokenItem struct {
	ID        string    `json:"id"`
	KeyID     string    `json:"key_id"`
	Scopes    []string  `json:"scopes"`
	Audience  string    `json:"audience,omitempty"`
	IssuedAt  time.Time `json:"issued_at"`
	ExpiresAt time.Time `json:"expires_at"`
}

type revocationItem struct {
	TokenID   string    `json:"token_id"`
	KeyID     string    `json:"key_id"`
	RevokedAt time.Time `json:"revoked_at"`
	ExpiresAt time.Time `json:"expires_at"`
}

package account

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Key lifetimes.
const (
	MinKeyLifetime = time.Minute
	MaxKeyLifetime = 365 * 24 * time.Hour
)

// MaxKeyAncestors is how many keys may stand above a key (APIKey.Ancestors):
// a key with that many cannot create keys. It bounds what every request
// with a key or a token of it must check (the key and each ancestor), and
// the size of its tokens, which name the ancestors.
const MaxKeyAncestors = 8

// NewAPIKey describes a key to create.
type NewAPIKey struct {
	Name      string
	Scopes    []string
	ExpiresIn string // "" means the key does not expire (unless its creator does)
	Metadata  Metadata
	// OrganizationID binds the key to an existing organization; "" binds
	// it to the caller's key's organization, if that has one.
	OrganizationID string
	// OwnerID is the integrator's identifier of the key's owner; "" for
	// none, or the caller's key's owner, if that has one.
	OwnerID string
	// RateLimits and Credits bound the key's uses; none when empty, nil.
	RateLimits []RateLimitRequest
	Credits    *CreditsRequest
}

// CreateAPIKey creates a key with grants within the caller's own, below the
// caller's key (APIKey.Ancestors), and returns it with its secret, which is
// never shown again. A key never outlives the key that created it, a key
// bound to an organization creates keys bound to it and to no other, and a
// key with an owner creates keys with that owner and no other.
// CodeForbidden for an access token caller, a key MaxKeyAncestors deep, or
// another organization or owner than the caller's; CodePreviousSecret;
// CodeInsufficientScope,
// CodeInvalidRequest; CodeNotFound for an organization that does not
// exist; CodeUnauthorized if the caller's key is deleted meanwhile.
func (s *Service) CreateAPIKey(ctx context.Context, p Principal, req NewAPIKey) (APIKey, string, error) {
	if err := p.Authorize(OpCreateAPIKey); err != nil {
		return APIKey{}, "", err
	}
	var problems Problems
	name := normalizeName("name", req.Name, &problems)
	scopes := normalizeScopes("scopes", req.Scopes, maxScopes, &problems)
	req.Metadata.check("metadata", &problems)
	if req.OwnerID != "" && !ValidExternalID(req.OwnerID) {
		problems.Add("owner_id", fmt.Sprintf("must be 1 to %d printable characters, not starting or ending with a space", MaxExternalIDLength))
	}
	var lifetime time.Duration
	if req.ExpiresIn != "" {
		d, err := ParseDuration(req.ExpiresIn, MinKeyLifetime, MaxKeyLifetime)
		if err != nil {
			problems.Add("expires_in", err.Error())
		}
		lifetime = d
	}
	now := s.now()
	limits := checkRateLimits("rate_limits", req.RateLimits, &problems)
	credits := checkCredits("credits", req.Credits, now, &problems)
	if err := problems.Err(); err != nil {
		return APIKey{}, "", err
	}
	credits.spread(limits)
	// A key bound to an organization, or with an owner, creates keys of
	// its own organization and owner when the request names none.
	org, owner := req.OrganizationID, req.OwnerID
	if org == "" {
		org = p.KeyOrganizationID
	}
	if owner == "" {
		owner = p.KeyOwnerID
	}
	var ancestors []string
	if !p.KeyBootstrap {
		ancestors = append(slices.Clip(p.KeyAncestors), p.KeyID)
	}
	secret := NewAPIKeySecret()
	key := APIKey{
		ID:        NewID(PrefixAPIKey, now),
		Name:      name,
		Hash:      HashAPIKey(secret),
		Last4:     last4(secret),
		Scopes:    scopes,
		CreatedBy: p.KeyID,
		Ancestors: ancestors,
		Metadata:  req.Metadata,
		CreatedAt: now,

		OrganizationID: org,
		OwnerID:        owner,
		RateLimits:     limits,
		Credits:        credits,
	}
	if lifetime > 0 {
		key.ExpiresAt = now.Add(lifetime)
	}
	if !p.KeyExpiresAt.IsZero() && (key.ExpiresAt.IsZero() || p.KeyExpiresAt.Before(key.ExpiresAt)) {
		key.ExpiresAt = p.KeyExpiresAt
	}
	if err := p.Decide(ActionCreate, key); err != nil {
		return APIKey{}, "", err
	}
	if org != "" && !ValidID(PrefixOrganization, org) {
		return APIKey{}, "", ErrOrganizationNotFound()
	}
	err := s.store.CreateAPIKey(ctx, p.Write, key)
	if sameError(err, ErrOrganizationNotFound()) {
		return APIKey{}, "", storeErr(err)
	}
	if IsCode(err, CodeNotFound) {
		// The caller's key was deleted after it authenticated this request.
		return APIKey{}, "", errUnauthorized
	}
	if err != nil {
		return APIKey{}, "", storeErr(err)
	}
	s.startCredits(ctx, key.Limits())
	return key, secret, nil
}

// GetAPIKey returns a key whose grants are within the caller's.
// CodeForbidden for an access token caller, CodeInsufficientScope (also for
// a key with a grant the caller does not hold), CodeNotFound.
func (s *Service) GetAPIKey(ctx context.Context, p Principal, id string) (APIKey, error) {
	if err := p.Authorize(OpGetAPIKey); err != nil {
		return APIKey{}, err
	}
	if !ValidID(PrefixAPIKey, id) {
		return APIKey{}, ErrAPIKeyNotFound()
	}
	k, err := s.store.GetAPIKey(ctx, id)
	if err != nil {
		return APIKey{}, storeErr(err)
	}
	if err := p.Decide(ActionRead, k); err != nil {
		return APIKey{}, err
	}
	return s.shown(ctx, k)
}

// sameError reports whether err is the domain's error want: its code and
// its message, which is how a store's errors tell apart what CodeNotFound
// alone does not (CreateAPIKey: the parent key, or the organization).
func sameError(err error, want *Error) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == want.Code && e.Message == want.Message
}

// sees reports whether the principal may know of the key k at all: a key
// bound to an organization acts only on the keys bound to it, as if no
// other existed (the tenants of an integrator do not see each other's),
// and a key with an owner only on the keys of that owner: resource servers
// authorize by owner_id, so a key that could rotate another owner's key
// would get that key's secret, and tokens that say that owner.
func (p Principal) sees(k APIKey) bool {
	return (p.KeyOrganizationID == "" || p.KeyOrganizationID == k.OrganizationID) &&
		(p.KeyOwnerID == "" || p.KeyOwnerID == k.OwnerID)
}

// errOtherOwner answers a key with an owner that lists another owner's
// keys.
var errOtherOwner = &Error{Code: CodeForbidden, Message: "this API key has an owner: it lists the keys of that owner only"}

// ListAPIKeys lists the keys whose grants are within the caller's, newest
// first, of the organization and owner f names if it does. The others are
// left out of each page after the store has read it, so a page may hold
// fewer than the limit, even none, while Next says there is more; paging
// stays exact because the position is the store's, after the last key
// read, not the last key returned. A caller bound to an organization lists
// only its keys, and a caller with an owner only that owner's.
// CodeForbidden (a caller bound to an organization naming another, or
// with an owner naming another), CodeInsufficientScope, CodeInvalidRequest.
func (s *Service) ListAPIKeys(ctx context.Context, p Principal, r PageRequest, f APIKeyFilter) (List[APIKey], error) {
	if err := p.Authorize(OpListAPIKeys); err != nil {
		return List[APIKey]{}, err
	}
	var problems Problems
	if f.OrganizationID != "" && !ValidID(PrefixOrganization, f.OrganizationID) {
		problems.Add("organization_id", "must be an organization id, like org_01JD3Q5T2H7R9C4M8P1Q6W3E5R")
	}
	if f.OwnerID != "" && !ValidExternalID(f.OwnerID) {
		problems.Add("owner_id", fmt.Sprintf("must be 1 to %d printable characters, not starting or ending with a space", MaxExternalIDLength))
	}
	if err := problems.Err(); err != nil {
		return List[APIKey]{}, err
	}
	switch {
	case p.KeyOrganizationID != "" && f.OrganizationID == "":
		f.OrganizationID = p.KeyOrganizationID
	case p.KeyOrganizationID != "" && f.OrganizationID != p.KeyOrganizationID:
		return List[APIKey]{}, Errorf(CodeForbidden, "this API key is bound to an organization: it lists the keys of that organization only")
	}
	switch {
	case p.KeyOwnerID != "" && f.OwnerID == "":
		f.OwnerID = p.KeyOwnerID
	case p.KeyOwnerID != "" && f.OwnerID != p.KeyOwnerID:
		return List[APIKey]{}, errOtherOwner
	}
	// Each filter is a list of its own: a cursor of one is refused by
	// another (NUL cannot occur in an id).
	name := "api_keys"
	if f != (APIKeyFilter{}) {
		name += "\x00" + f.OrganizationID + "\x00" + f.OwnerID
	}
	params, err := s.cursors.params(name, r)
	if err != nil {
		return List[APIKey]{}, err
	}
	page, err := s.store.ListAPIKeys(ctx, f, params)
	if err != nil {
		return List[APIKey]{}, storeErr(err)
	}
	page.Items = slices.DeleteFunc(page.Items, func(k APIKey) bool { return p.Decide(ActionRead, k) != nil })
	for i, k := range page.Items {
		page.Items[i] = s.asOfNow(k)
	}
	// One read for the keys with credits on the page, none without.
	if err := s.verifier.limiter.remainingCredits(ctx, keysCredits(page.Items), s.now()); err != nil {
		return List[APIKey]{}, err
	}
	return toList(s.cursors, name, page), nil
}

// DeleteAPIKey deletes a key whose grants are within the caller's, and
// every key below it (whose Ancestors name it): they and every token issued
// for them stop working at once. The bootstrap admin key cannot be deleted
// through the API, nor a key above the caller's (in its Ancestors). A delete
// that failed halfway (see the store) is finished by calling DeleteAPIKey
// again. CodeForbidden, CodePreviousSecret, CodeInsufficientScope (also
// for a key with a grant the caller does not hold), CodeNotFound.
func (s *Service) DeleteAPIKey(ctx context.Context, p Principal, id string) error {
	if err := p.Authorize(OpDeleteAPIKey); err != nil {
		return err
	}
	if !ValidID(PrefixAPIKey, id) {
		return ErrAPIKeyNotFound()
	}
	// The store reads the key, asks whether it may go, and deletes it in
	// the same call: one read, and the answer is about the key it deletes.
	return storeErr(s.store.DeleteAPIKey(ctx, p.Write, id, func(k APIKey) error {
		return p.Decide(ActionDelete, k)
	}))
}

// APIKeyUpdate holds the fields of an API key that can change; nil leaves a
// field as it is.
type APIKeyUpdate struct {
	Name    *string
	Enabled *bool
	// Metadata, when set, replaces the metadata whole; an empty one removes
	// it.
	Metadata *Metadata
	// RateLimits, when set, replaces the key's rate limits; an empty list
	// removes them.
	RateLimits *[]RateLimitRequest
	// SetCredits replaces the key's credits with Credits (nil removes
	// them): the remaining count starts again from Credits.Remaining.
	SetCredits bool
	Credits    *CreditsRequest
}

// UpdateAPIKey renames, disables or enables a key, or replaces its
// metadata, and returns the key as changed. A disabled key authenticates
// nothing and its tokens do not verify, nor do those of the keys below it,
// until it is enabled again; tokens that have not expired meanwhile then
// work again. Principal.Decide judges each part the update changes: the
// key must be within the caller's grants and not above the caller's key,
// as for DeleteAPIKey; the bootstrap admin key cannot be disabled; rate
// limits and credits are changed only by a key above the key, or by the
// bootstrap admin key. CodeForbidden, CodePreviousSecret,
// CodeInsufficientScope, CodeInvalidRequest, CodeNotFound.
func (s *Service) UpdateAPIKey(ctx context.Context, p Principal, id string, req APIKeyUpdate) (APIKey, error) {
	if err := p.Authorize(OpUpdateAPIKey); err != nil {
		return APIKey{}, err
	}
	if !ValidID(PrefixAPIKey, id) {
		return APIKey{}, notFound("API key")
	}
	if req.Name == nil && req.Enabled == nil && req.Metadata == nil && req.RateLimits == nil && !req.SetCredits {
		return APIKey{}, errNothingToChange
	}
	var problems Problems
	patch := APIKeyPatch{At: s.now()}
	if req.RateLimits != nil {
		limits := checkRateLimits("rate_limits", *req.RateLimits, &problems)
		patch.RateLimits = &limits
	}
	if req.SetCredits {
		patch.Credits = &CreditsChange{Credits: checkCredits("credits", req.Credits, patch.At, &problems)}
	}
	limitsChange := patch.RateLimits != nil || patch.Credits != nil
	if req.Name != nil {
		name := normalizeName("name", *req.Name, &problems)
		patch.Name = &name
	}
	if req.Metadata != nil {
		req.Metadata.check("metadata", &problems)
		patch.Metadata = req.Metadata
	}
	if req.Enabled != nil {
		disabled := !*req.Enabled
		patch.Disabled = &disabled
	}
	if err := problems.Err(); err != nil {
		return APIKey{}, err
	}
	if c := patch.Credits; c != nil && c.Credits != nil {
		var limits []RateLimit
		if patch.RateLimits != nil {
			limits = *patch.RateLimits
		} else if c.Credits.maxRecords() > 1 {
			// Only to size the credits' records: a rate limit changed
			// meanwhile changes how fast they spread, not their count.
			k, err := s.store.GetAPIKey(ctx, id)
			if err != nil {
				return APIKey{}, storeErr(err)
			}
			limits = k.RateLimits
		}
		c.Credits.spread(limits)
	}
	// As for a delete: the store reads the key, asks whether it may change,
	// and changes the key it read.
	k, err := s.store.UpdateAPIKey(ctx, p.Write, id, patch, func(k APIKey) error {
		if patch.Name != nil || patch.Metadata != nil || patch.Disabled != nil && !*patch.Disabled {
			if err := p.Decide(ActionEdit, k); err != nil {
				return err
			}
		}
		if patch.Disabled != nil && *patch.Disabled {
			if err := p.Decide(ActionDisable, k); err != nil {
				return err
			}
		}
		if limitsChange {
			limited := k
			if patch.RateLimits != nil {
				limited.RateLimits = *patch.RateLimits
			}
			if patch.Credits != nil {
				limited.Credits = patch.Credits.Credits
			}
			if err := p.Decide(ActionSetLimits, limited); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return APIKey{}, storeErr(err)
	}
	if patch.Credits != nil {
		s.startCredits(ctx, k.Limits())
	}
	return s.shown(ctx, k)
}

// Grace periods of a rotation: how long the replaced secret keeps working.
const (
	DefaultRotationGrace time.Duration = 0
	MaxRotationGrace     time.Duration = 7 * 24 * time.Hour
)

// KeyRotationRequest asks for a new secret for a key.
type KeyRotationRequest struct {
	// ExpiresIn is how long the secret being replaced keeps working, 0s
	// to 7d; "" means DefaultRotationGrace: it stops at once.
	ExpiresIn string
}

// RotateAPIKey gives a key a new secret and returns the key with it, shown
// this once. Its id, grants, metadata and tokens stay. The secret it
// replaces keeps working for the grace period asked for, then stops by
// itself; a secret replaced by an earlier rotation whose grace period has
// not ended stops at once. The key must be within the caller's grants and
// not above the caller's key, as for DeleteAPIKey; the bootstrap admin key
// is rotated through its configuration, not here. A previous secret, in
// its grace period, rotates no key (CodePreviousSecret: see
// Principal.Authorize). CodeForbidden, CodeInsufficientScope,
// CodeInvalidRequest, CodeNotFound.
func (s *Service) RotateAPIKey(ctx context.Context, p Principal, id string, req KeyRotationRequest) (APIKey, string, error) {
	if err := p.Authorize(OpRotateAPIKey); err != nil {
		return APIKey{}, "", err
	}
	if !ValidID(PrefixAPIKey, id) {
		return APIKey{}, "", notFound("API key")
	}
	grace := DefaultRotationGrace
	if req.ExpiresIn != "" {
		d, err := ParseDuration(req.ExpiresIn, 0, MaxRotationGrace)
		if err != nil {
			return APIKey{}, "", invalid("expires_in", err.Error())
		}
		grace = d
	}
	now := s.now()
	secret := NewAPIKeySecret()
	rotation := &KeyRotation{Hash: HashAPIKey(secret), Last4: last4(secret)}
	if grace > 0 {
		rotation.PreviousUntil = now.Add(grace)
	}
	k, err := s.store.UpdateAPIKey(ctx, p.Write, id, APIKeyPatch{Rotate: rotation, At: now}, func(k APIKey) error {
		if err := p.Decide(ActionRotate, k); err != nil {
			return err
		}
		// The old secret never outlives the key.
		if !k.ExpiresAt.IsZero() && k.ExpiresAt.Before(rotation.PreviousUntil) {
			rotation.PreviousUntil = k.ExpiresAt
		}
		return nil
	})
	if err != nil {
		return APIKey{}, "", storeErr(err)
	}
	k, err = s.shown(ctx, k)
	if err != nil {
		return APIKey{}, "", err
	}
	return k, secret, nil
}

// shown is asOfNow with the key's credits as of now, read from its usage
// record (one read, for a key with credits only).
func (s *Service) shown(ctx context.Context, k APIKey) (APIKey, error) {
	keys := []APIKey{s.asOfNow(k)}
	if err := s.verifier.limiter.remainingCredits(ctx, keysCredits(keys), s.now()); err != nil {
		return APIKey{}, err
	}
	return keys[0], nil
}

// asOfNow returns k without a previous secret that has stopped: what
// clients see of a key.
func (s *Service) asOfNow(k APIKey) APIKey {
	if !k.PreviousActive(s.now()) {
		k.PreviousHash, k.PreviousExpiresAt = nil, time.Time{}
	}
	return k
}

package account

import (
	"crypto/subtle"
	"fmt"
	"slices"
)

// Action is what a principal does to one API key, as Decide judges it.
type Action string

// The actions on an API key. An update asks one for each part it changes.
const (
	// ActionRead: GetAPIKey, a key of a page of ListAPIKeys,
	// ListAPIKeyTokens.
	ActionRead Action = "read"
	// ActionCreate: CreateAPIKey, judged on the key as it would be.
	ActionCreate Action = "create"
	// ActionEdit: an update of the name or metadata, or an enable.
	ActionEdit Action = "edit"
	// ActionDisable: an update that disables the key.
	ActionDisable Action = "disable"
	// ActionSetLimits: an update of rate_limits or credits, judged on the
	// key with its new ones.
	ActionSetLimits Action = "set_limits"
	// ActionRotate: RotateAPIKey.
	ActionRotate Action = "rotate"
	// ActionDelete: DeleteAPIKey, which takes the keys below too.
	ActionDelete Action = "delete"
	// ActionRevokeTokens: RevokeAPIKeyTokens.
	ActionRevokeTokens Action = "revoke_tokens"
)

// actionOperations says of which Service operation each action is part:
// what its caller needs before anything else (Authorize).
var actionOperations = map[Action]Operation{
	ActionRead:         OpGetAPIKey,
	ActionCreate:       OpCreateAPIKey,
	ActionEdit:         OpUpdateAPIKey,
	ActionDisable:      OpUpdateAPIKey,
	ActionSetLimits:    OpUpdateAPIKey,
	ActionRotate:       OpRotateAPIKey,
	ActionDelete:       OpDeleteAPIKey,
	ActionRevokeTokens: OpRevokeAPIKeyTokens,
}

// Decide is the one decision of who may do what to an API key: nil if the
// principal may do a to the key k, or the error that refuses it. Every
// door asks it, through the Service: the JSON API, the console and the
// OAuth endpoints call the same Service methods, which ask it about the key
// they act on, as the store read it, in the same call that writes it. k is
// the key as stored; for ActionCreate and ActionSetLimits, the key as it
// would be.
//
// First, for every action, the operation's rule (Authorize): the scope it
// needs, a key or its console session and no other access token for key
// management, the current secret (never a previous one in its grace
// period) for any change. A console session is resolved only while its
// key's secret is the one that signed in (Service.AuthenticateSession), so
// it may do what that current secret may do, and no more. Then:
//
//	action          the key k must be                       else
//	read            seen (organization, owner)              not_found
//	                within the caller's grants              insufficient_scope
//	create          of the caller's organization and owner  forbidden
//	                grants held by the caller               insufficient_scope
//	                limited as tightly as the caller and    forbidden
//	                every limited key above it
//	                at most MaxKeyAncestors deep            forbidden
//	edit            as for read, and not above the caller   forbidden
//	disable         as for edit, not the bootstrap key      forbidden
//	set_limits      as for edit, not the bootstrap key,     forbidden
//	                not the caller's own, below the caller
//	                (its Ancestors hold the caller's key) or
//	                the caller is the bootstrap key, and
//	                limited as tightly as the caller and
//	                every limited key above k
//	edit            not the bootstrap key, but by itself    forbidden
//	rotate          as for edit, not the bootstrap key;     forbidden
//	                another's only if it is limited as
//	                tightly as the caller (as for create)
//	delete          as for edit, not the bootstrap key      forbidden
//	revoke_tokens   as for edit; the bootstrap key's only   forbidden
//	                by the bootstrap key itself
//
// docs/security.md ("Who may do what") states the same table.
func (p Principal) Decide(a Action, k APIKey) error {
	op, ok := actionOperations[a]
	if !ok {
		return Internal(fmt.Errorf("account: unknown action %q", a))
	}
	if err := p.Authorize(op); err != nil {
		return err
	}
	switch a {
	case ActionRead:
		return p.mayRead(k)
	case ActionCreate:
		return p.mayCreate(k)
	}
	if err := p.mayRead(k); err != nil {
		return err
	}
	if slices.Contains(p.KeyAncestors, k.ID) {
		return Errorf(CodeForbidden, "an API key cannot %s a key above it (one that created it, directly or not); use that key or one above it", verbs[a])
	}
	// The caller's own key as the store read it, in the same call that
	// writes it: if its secret was rotated after this request
	// authenticated, the request was made with a secret (or a session of
	// one) that no longer manages anything.
	if k.ID == p.KeyID && p.keyHash != nil && subtle.ConstantTimeCompare(p.keyHash, k.Hash) != 1 {
		return errSecretReplaced
	}
	switch {
	case a == ActionEdit && k.Bootstrap && k.ID != p.KeyID:
		return Errorf(CodeForbidden, "the bootstrap admin key is managed by configuration: only it changes its own name and metadata")
	case a == ActionDisable && k.Bootstrap:
		return Errorf(CodeForbidden, "the bootstrap admin key is managed by configuration and cannot be disabled through the API")
	case a == ActionRotate && k.Bootstrap:
		return Errorf(CodeForbidden, "the bootstrap admin key is managed by configuration: rotate its configured secret instead")
	case a == ActionDelete && k.Bootstrap:
		return Errorf(CodeForbidden, "the bootstrap admin key is managed by configuration and cannot be deleted through the API")
	case a == ActionRevokeTokens && k.Bootstrap && k.ID != p.KeyID:
		return Errorf(CodeForbidden, "the bootstrap admin key is managed by configuration: only it revokes all of its tokens")
	case (a == ActionRotate || a == ActionDelete) && k.Probe:
		// Its record follows its configured secret: a new secret here, or
		// none, would stop the probe until auth made the record again.
		return Errorf(CodeForbidden, "the probe key is managed by configuration: put a new value in its secret (ProbeKeySecret) instead")
	case a == ActionSetLimits:
		return p.maySetLimits(k)
	case a == ActionRotate && k.ID != p.KeyID:
		// A rotation hands the caller the key's new secret: it may take
		// only a credential it could have created, limited as tightly as
		// its own key and every limited key above it, so that a limited
		// key cannot escape its limits through a sibling's secret, nor a
		// tenant's key take the plan key the integrator made for it.
		if err := limitsWithin(p.keyLimits(), k.RateLimits, k.Credits); err != nil {
			return Errorf(CodeForbidden, "a rotation hands over the key's new secret, and this key is less limited than the calling key (%s): rotate it with a key above it", err.(*Error).Message)
		}
	}
	return nil
}

// errSecretReplaced answers a change of its own key by a request whose
// secret, or the secret that started its console session, was replaced
// by a rotation while the request ran.
var errSecretReplaced = Errorf(CodeUnauthorized, "the secret that authenticated this request was replaced by a rotation while it ran: sign in again with the current secret")

// verbs say what each action does, in a refusal.
var verbs = map[Action]string{
	ActionEdit: "change", ActionDisable: "disable", ActionSetLimits: "change the limits of",
	ActionRotate: "rotate", ActionDelete: "delete", ActionRevokeTokens: "revoke the tokens of",
}

// mayRead: the principal sees the key (Principal.sees: its organization,
// its owner), and the key's grants are within its own.
func (p Principal) mayRead(k APIKey) error {
	if !p.sees(k) {
		return notFound("API key")
	}
	return p.requireWithin(k.Scopes)
}

// mayCreate: the key k, as it would be created, stays within the caller's
// organization, owner, grants and limits, and below MaxKeyAncestors.
func (p Principal) mayCreate(k APIKey) error {
	if err := p.requireHeld(k.Scopes, "it cannot grant it to another key"); err != nil {
		return err
	}
	if err := limitsWithin(p.keyLimits(), k.RateLimits, k.Credits); err != nil {
		return err
	}
	if p.KeyOrganizationID != "" && k.OrganizationID != p.KeyOrganizationID {
		return Errorf(CodeForbidden, "this API key is bound to an organization: the keys it creates are bound to it, and to no other")
	}
	// Resource servers authorize by owner_id, as by org_id: a key with an
	// owner creates keys of that owner only.
	if p.KeyOwnerID != "" && k.OwnerID != p.KeyOwnerID {
		return Errorf(CodeForbidden, "this API key has an owner: the keys it creates have the same owner_id, and no other")
	}
	if !p.KeyBootstrap && len(p.KeyAncestors) >= MaxKeyAncestors {
		return Errorf(CodeForbidden, "this key is %d levels below the keys the admin key creates, the most there may be; it cannot create keys", len(p.KeyAncestors))
	}
	return nil
}

// maySetLimits: limits bound a key from above. A key that could lift its
// own would have none, and one that could change a sibling's (or, bound to
// an organization, those of the plan key the integrator made for it) could
// refill or lift them without end; the keys above set them, and the
// bootstrap admin key, above every key, does too.
func (p Principal) maySetLimits(k APIKey) error {
	switch {
	case k.Bootstrap:
		return Errorf(CodeForbidden, "the bootstrap admin key has no rate limits or credits: a limit on it could lock the administrator out")
	case k.ID == p.KeyID:
		return Errorf(CodeForbidden, "an API key cannot change its own rate limits or credits; use a key above it")
	case !p.KeyBootstrap && !slices.Contains(k.Ancestors, p.KeyID):
		return Errorf(CodeForbidden, "only a key above this key (one that created it, directly or not), or the bootstrap admin key, changes its rate limits or credits")
	}
	// Within the caller's, and within those of every key above the key,
	// which its uses count against.
	return limitsWithin(append(p.keyLimits(), k.LimitsAbove...), k.RateLimits, k.Credits)
}

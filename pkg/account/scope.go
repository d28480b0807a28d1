package account

import (
	"regexp"
	"strings"
	"time"
)

// The scopes that Latchkey itself checks. Any other well-formed scope may be
// granted and requested too: services that call verify use them for their
// own resources.
const (
	ScopeReadUsers           = "read:users"
	ScopeWriteUsers          = "write:users"
	ScopeDeleteUsers         = "delete:users"
	ScopeReadOrganizations   = "read:organizations"
	ScopeWriteOrganizations  = "write:organizations"
	ScopeDeleteOrganizations = "delete:organizations"
	ScopeReadAPIKeys         = "read:api_keys"
	ScopeWriteAPIKeys        = "write:api_keys"
	ScopeRevokeTokens        = "revoke:tokens"
	ScopeReadEvents          = "read:events"
	ScopeAll                 = "*:*"
)

// maxScopes bounds the scopes of a token request and the grants of a new
// key.
const maxScopes = 32

// KnownScopes lists the scopes that Latchkey itself checks, for the
// authorization server metadata (scopes_supported). "*:*" and the other
// wildcards are not listed: they are grants, not scopes a client asks for
// by name.
func KnownScopes() []string {
	return []string{
		ScopeReadUsers, ScopeWriteUsers, ScopeDeleteUsers,
		ScopeReadOrganizations, ScopeWriteOrganizations, ScopeDeleteOrganizations,
		ScopeReadAPIKeys, ScopeWriteAPIKeys, ScopeRevokeTokens,
		ScopeReadEvents,
	}
}

var (
	scopeAction   = regexp.MustCompile(`^(?:\*|[a-z][a-z0-9_-]{0,31})$`)
	scopeResource = regexp.MustCompile(`^(?:\*|[a-z][a-z0-9_.-]{0,63})$`)
)

// ValidScope reports whether s has the form <action>:<resource>.
func ValidScope(s string) bool {
	action, resource, ok := strings.Cut(s, ":")
	return ok && scopeAction.MatchString(action) && scopeResource.MatchString(resource)
}

// scopeCovers reports whether grant permits want. A "*" part of the grant
// matches anything; a "*" part of want is only covered by "*".
func scopeCovers(grant, want string) bool {
	ga, gr, _ := strings.Cut(grant, ":")
	wa, wr, _ := strings.Cut(want, ":")
	return (ga == "*" || ga == wa) && (gr == "*" || gr == wr)
}

// ScopesCover reports whether any of grants permits want.
func ScopesCover(grants []string, want string) bool {
	for _, g := range grants {
		if scopeCovers(g, want) {
			return true
		}
	}
	return false
}

// Principal is the authenticated caller of a request: an API key, or an
// access token issued for one.
type Principal struct {
	KeyID string
	// TokenID is set when the caller presented an access token.
	TokenID string
	// Scopes are the key's grants, or the token's scopes.
	Scopes []string
	// KeyExpiresAt is the expiry of the key; zero if it never expires.
	// Tokens and keys the principal creates never outlive it.
	KeyExpiresAt time.Time
	// KeyAncestors and KeyBootstrap are the key's Ancestors and Bootstrap:
	// keys the principal creates go below its key, and its tokens name
	// the ancestors (TokenClaims.KeyAncestors).
	KeyAncestors []string
	KeyBootstrap bool
	// KeyOrganizationID and KeyOwnerID are the key's OrganizationID and
	// OwnerID: its tokens say them, and a key bound to an organization
	// acts only on the keys bound to it.
	KeyOrganizationID string
	KeyOwnerID        string
	// PreviousSecret is set when the caller presented its key's previous
	// secret, during the grace period of a rotation: it authenticates, but
	// manages no API key (CodePreviousSecret), so that a leaked old secret
	// cannot rotate the key again and lock its holder out.
	PreviousSecret bool
	// Session is set when the caller presented a console session token
	// (StartSession), which Service.AuthenticateSession alone accepts: it
	// acts with its key's grants, API key management included (see
	// RequireKey).
	Session bool
	// Usage is, for a key with rate limits or credits, where its limits
	// stand after this request: what the RateLimit header fields say.
	Usage *KeyUsage
	// KeyRateLimits and KeyCredits are the key's, and KeyLimitsAbove
	// those of the limited keys above it (APIKey.LimitsAbove): the keys it
	// creates or changes are limited as tightly as each (limitsWithin).
	KeyRateLimits  []RateLimit
	KeyCredits     *Credits
	KeyLimitsAbove []KeyLimits
	// Write is how the changes the principal's request makes are written:
	// the HTTP layer sets its EventSource for a request that may change
	// something, and its IdempotencyCommit for one with an
	// Idempotency-Key. The Service passes it to every Store write.
	Write WriteOptions
	// keyHash is the key's current secret's hash: a console session
	// started by the principal is marked with it (StartSession).
	keyHash []byte
}

// IsToken reports whether the caller presented an access token.
func (p Principal) IsToken() bool { return p.TokenID != "" }

// Require returns CodeInsufficientScope unless the principal holds scope.
func (p Principal) Require(scope string) error {
	if ScopesCover(p.Scopes, scope) {
		return nil
	}
	return &Error{Code: CodeInsufficientScope, Message: "this operation needs the scope " + scope, Scope: scope}
}

// requireHeld returns CodeInsufficientScope, naming the first scope of want that
// the principal's grants do not cover. Unlike Require, which guards an
// operation, it checks scopes the caller asked for (a token's, or a new
// key's grants), so the message says that the caller lacks the requested
// scope, not that the operation needs it.
func (p Principal) requireHeld(want []string, purpose string) error {
	if scope := p.uncovered(want); scope != "" {
		return &Error{Code: CodeInsufficientScope, Scope: scope,
			Message: "the API key does not hold the requested scope " + scope + ", so " + purpose}
	}
	return nil
}

// requireWithin returns CodeInsufficientScope, naming the first grant
// missing, unless the principal holds every one of grants, those of a key
// it reads, lists or deletes: the rule requireHeld applies to a key it
// creates.
func (p Principal) requireWithin(grants []string) error {
	if scope := p.uncovered(grants); scope != "" {
		return &Error{Code: CodeInsufficientScope, Scope: scope,
			Message: "the API key has the grant " + scope + ", which the calling key does not hold: a key reads and deletes only keys within its own grants"}
	}
	return nil
}

// uncovered returns the first of want that the principal's grants do not
// cover, or "" if they cover every one.
func (p Principal) uncovered(want []string) string {
	for _, scope := range want {
		if !ScopesCover(p.Scopes, scope) {
			return scope
		}
	}
	return ""
}

// RequireKey returns CodeForbidden when the caller used an access token on an
// operation that only API keys may call (API key management), and otherwise
// checks scope, if one is given. A console session passes: its token is
// the key's own sign-in, held by the console in a cookie that no script
// reads and no other origin can send, and accepted nowhere else, so it
// stands for the key (AuthenticateSession). A token issued through the API
// is handed to resource servers, which must not manage keys with it.
func (p Principal) RequireKey(scope string) error {
	if p.IsToken() && !p.Session {
		return Errorf(CodeForbidden, "this operation needs an API key; access tokens are not accepted")
	}
	if scope == "" {
		return nil
	}
	return p.Require(scope)
}

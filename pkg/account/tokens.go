package account

import (
	"context"
	"errors"
	"time"
)

// TokenClaims is what a signed access token asserts.
type TokenClaims struct {
	ID    string // tok_…, the JWT's jti
	KeyID string // key_…, the JWT's sub and client_id: the API key the token was issued for
	// KeyAncestors are the key's Ancestors as they were at issuance (they
	// never change), so that a verify can read them in the same round trip
	// as the key. A hint only: the store checks the key's own list.
	KeyAncestors []string
	// OrganizationID and OwnerID are the key's (org_id and owner_id),
	// which never change: what a resource server authorizes a tenant by.
	// Verify reads the organization with the key, in the same round trip.
	OrganizationID string
	OwnerID        string
	// Issuer is the JWT's iss: the URL at which the issuing service is
	// served. Set by the parser; a signer writes its own.
	Issuer string
	// Audience is the JWT's aud: the resource server the token is meant
	// for, the issuer when the client named none.
	Audience  string
	Scopes    []string
	IssuedAt  time.Time
	ExpiresAt time.Time
	// InlineRevocation says that a revocation of the token is recorded
	// on its key, which a verify reads anyway, so that the verify reads
	// nothing else (Store.RevokeToken, Store.TokenStatus) once the format
	// is in force for it (Formats.InlineRevocationAt its IssuedAt). Every
	// token issued while the format is in force says so, unless
	// Options.NoInlineRevocation; one issued before, or with that option,
	// does not, and its revocation entry is read as it always was.
	InlineRevocation bool
	// Secret is, on a console session (StartSession), the mark of the
	// key's secret that signed in (SecretMark): the session lasts while
	// that secret is the key's current one. "" on any other token.
	Secret string
	// Status is the token's entry in a status list (the claim status); nil
	// on a token issued while status lists were not in force
	// (Formats.StatusListsAt its IssuedAt), or before they existed.
	Status *StatusRef
}

// Errors of TokenParser.Parse.
var (
	// ErrTokenInvalid: not a token, tampered with, signed by an unknown key
	// or with an algorithm other than the pinned one, or breaking a rule of
	// JWT (a crit header, a time claim that is not a number, an nbf or iat
	// in the future).
	ErrTokenInvalid = errors.New("token invalid")
	// ErrTokenExpired: well signed, but past its expiry. Parse returns the
	// claims along with it.
	ErrTokenExpired = errors.New("token expired")
)

// TokenSigner signs access tokens. Only the function that issues tokens
// holds one, because only it may read the private key.
type TokenSigner interface {
	// Sign returns the signed token of c, with the signer's issuer as iss.
	Sign(c TokenClaims) (string, error)
	// SignStatusList returns the signed Status List Token of c.
	SignStatusList(c StatusListClaims) (string, error)
	// Issuer returns the iss of the tokens it signs: the service's issuer
	// identifier, a URL (RFC 8414, section 2).
	Issuer() string
}

// TokenParser checks the signature of access tokens with public keys only.
type TokenParser interface {
	// Parse verifies token at now, the service's clock, and returns its claims. ErrTokenInvalid,
	// or ErrTokenExpired together with the claims. ctx is the request's: a
	// parser that has to fetch keys (for a kid it does not know yet) does so,
	// and logs, with the request's values, such as its id.
	Parse(ctx context.Context, token string, now time.Time) (TokenClaims, error)
	// ParseCredential is Parse for a token presented to this service as
	// its credential: the token's one audience must also be the service's
	// own, its issuer (RFC 9068, section 4), or it is ErrTokenInvalid.
	ParseCredential(ctx context.Context, token string, now time.Time) (TokenClaims, error)
}

// TokenRecord is written when an access token is issued. Stores may drop it
// once ExpiresAt has passed.
//
// A store finds the records of a key's tokens by the key, newest first
// (ListTokens): what GET /v1/api-keys/{id}/tokens lists. The token itself
// is never stored.
type TokenRecord struct {
	ID        string
	KeyID     string
	Scopes    []string
	Audience  string
	IssuedAt  time.Time
	ExpiresAt time.Time
	// RevokedAt is the time of the token's revocation entry, zero if it
	// has none: set by ListTokens, which reads the entries with the
	// records. Not stored in the record.
	RevokedAt time.Time
	// Status is the token's status list entry, which a change of its key
	// finds here; nil for a token issued without one.
	Status *StatusRef
}

// Revocation is the entry that makes a token invalid. Stores may drop it once
// ExpiresAt (the token's own expiry) has passed: the token is invalid anyway.
type Revocation struct {
	TokenID   string
	KeyID     string
	RevokedAt time.Time
	ExpiresAt time.Time
	// OrganizationID is the token's org_id: the organization whose events
	// show the revocation. Not stored.
	OrganizationID string
	// Inline is the token's InlineRevocation: a store records the
	// revocation where TokenStatus reads it for such a token.
	Inline bool
	// Status is the token's status list entry: a store marks it
	// StatusInvalid in the revocation's own atomic write.
	Status *StatusRef
}

// TokenStatus is what a verify needs from the store, read in one round trip:
// the revocation entry of the token and the key that issued it.
type TokenStatus struct {
	// RevokedAt is the time of the revocation entry; zero if there is none.
	RevokedAt time.Time
	// Key is the issuing key; nil if it has been deleted, or if its delete
	// or that of one of its Ancestors has begun.
	Key *APIKey
}

// Token lifetimes.
const (
	DefaultTokenLifetime = time.Hour
	MinTokenLifetime     = time.Minute
	MaxTokenLifetime     = 24 * time.Hour
)

// Reasons a token is not valid, as reported by VerifyToken.
const (
	ReasonRevoked = "revoked"
	ReasonExpired = "expired"
	ReasonInvalid = "invalid"
	// ReasonDisabled: the token's key, or a key above it, is disabled. It
	// verifies again once the key is enabled, if it has not expired.
	ReasonDisabled = "disabled"
)

// invalidReason says why the well-signed, unexpired token with claims c is
// not valid: it was revoked, alone or with every token of its key issued
// until then (APIKey.TokensRevokedBefore), or its key was deleted or has
// expired, or it is a console session whose key's secret has been rotated
// since it signed in (ReasonRevoked, for good), or its key or one above it
// is disabled (ReasonDisabled, for now). "" if it is valid. Every door
// that checks a token asks it, so a session a rotation ended is ended at
// verify and introspection too, not only in the console.
func (st TokenStatus) invalidReason(c TokenClaims, now time.Time) string {
	switch {
	case !st.RevokedAt.IsZero() || st.Key == nil || st.Key.Expired(now) || st.Key.revokesToken(c.ID),
		isSession(c) && !signedInWith(c, *st.Key):
		return ReasonRevoked
	case st.Key.Paused():
		return ReasonDisabled
	}
	return ""
}

// Verification is the result of VerifyToken.
type Verification struct {
	Valid  bool
	Reason string // when not valid: ReasonRevoked, ReasonDisabled, ReasonExpired, ReasonInvalid, ReasonRateLimited or ReasonUsageExceeded
	Claims TokenClaims
	// Usage is, for a token of a limited key that got as far as its
	// limits, the key's limits after this verification; nil otherwise.
	Usage *KeyUsage
	// CheckedAt is the service clock's time of the check, from which the
	// token's remaining lifetime counts.
	CheckedAt time.Time
}

// VerifyToken checks an access token: signature, expiry, revocation entry,
// issuing key and the keys above it. A forged or expired token costs no
// store read.
func (s *Service) VerifyToken(ctx context.Context, token string) (Verification, error) {
	return s.verifier.Verify(ctx, token)
}

// IntrospectToken is VerifyToken for a client that asks about a token
// (RFC 7662): a client bound to an organization learns nothing of another
// tenant's token, nor a client with an owner of another owner's token, which is not valid to it (ReasonInvalid), as RFC 7662
// section 2.2 allows, and which it neither counts nor spends a credit of.
// The use of the client's own key is counted once per request: when the
// token is the client's own, its verification spends a credit but counts
// no second use against the rate limits.
func (s *Service) IntrospectToken(ctx context.Context, p Principal, token string) (Verification, error) {
	v, err := s.verifier.verify(ctx, token, func(c TokenClaims) string {
		if !p.seesToken(c) {
			return ReasonInvalid
		}
		return ""
	}, p.KeyID)
	if err != nil || v.Valid || v.Reason != ReasonInvalid {
		return v, err
	}
	return Verification{Reason: ReasonInvalid, CheckedAt: v.CheckedAt}, nil
}

// TokenStatusReader is the part of Store that verification reads, and
// the usage records it counts the verifications of a limited key in.
type TokenStatusReader interface {
	// TokenStatus is Store.TokenStatus.
	TokenStatus(ctx context.Context, tokenID, keyID string, ancestors []string, orgID string, inline bool) (TokenStatus, error)
	FormatsReader
	UsageStore
	UsageCounter
}

// TokenVerifier checks access tokens, and nothing else: what
// Service.VerifyToken does, for a process that verifies tokens but serves
// none of the API (the gateway authorizer), and so holds no cursor key and
// no signer, and reads nothing but token statuses.
type TokenVerifier struct {
	store   TokenStatusReader
	parser  TokenParser
	now     func() time.Time
	limiter *limiter
	formats *formatsCache
	usage   *UsageTally
}

// NewTokenVerifier returns a TokenVerifier that checks signatures with
// parser, and the revocation entry, the issuing key and the keys above it
// in store. now is the clock; time.Now when nil.
func NewTokenVerifier(store TokenStatusReader, parser TokenParser, now func() time.Time) *TokenVerifier {
	if now == nil {
		now = time.Now
	}
	utc := func() time.Time { return now().UTC().Truncate(time.Millisecond) }
	return &TokenVerifier{
		store: store, parser: parser, now: utc,
		limiter: &limiter{store: store},
		formats: &formatsCache{store: store, now: utc},
		usage:   NewUsageTally(store, UsageOptions{}, utc),
	}
}

// tokenStatus reads the status of the token claims describes: by its
// key alone when it carries the claim irv and revocations on the key were
// in force when it was issued (Formats), otherwise by its key and its
// revocation entry, which every release writes.
func (v *TokenVerifier) tokenStatus(ctx context.Context, claims TokenClaims) (TokenStatus, error) {
	inline := claims.InlineRevocation && v.formats.get(ctx).InlineRevocationAt(claims.IssuedAt)
	return v.store.TokenStatus(ctx, claims.ID, claims.KeyID, claims.KeyAncestors, claims.OrganizationID, inline)
}

// Verify checks an access token: signature, expiry, revocation entry,
// issuing key and the keys above it, the last three in one store read,
// then counts the use against the key's rate limits and spends one of its
// credits, in one conditional write, if it has any. A forged or expired
// token costs no store read, a token of a key without limits no write.
// Only a failure of the store is an error.
func (v *TokenVerifier) Verify(ctx context.Context, token string) (Verification, error) {
	return v.verify(ctx, token, nil, "")
}

// VerifyFor is Verify for a caller with a rule of its own: accept is asked
// about the claims of a token that is valid but for its key's limits,
// before the use is counted, and returns "" to accept it or the reason to
// refuse it. A refused token counts no use and spends no credit; its
// Verification has that reason and the claims, to log.
func (v *TokenVerifier) VerifyFor(ctx context.Context, token string, accept func(TokenClaims) string) (Verification, error) {
	return v.verify(ctx, token, accept, "")
}

// verify is Verify with VerifyFor's accept (nil accepts all) and counted,
// the id of a key whose use this request already counted against its rate
// limits ("" for none): a token of that key spends its credit only.
func (v *TokenVerifier) verify(ctx context.Context, token string, accept func(TokenClaims) string, counted string) (ver Verification, err error) {
	now := v.now()
	var claims TokenClaims
	defer func() {
		if err == nil {
			v.usage.verified(claims, ver, now)
		}
	}()
	claims, err = v.parser.Parse(ctx, token, now)
	switch {
	case errors.Is(err, ErrTokenExpired):
		return Verification{Reason: ReasonExpired, CheckedAt: now}, nil
	case err != nil:
		return Verification{Reason: ReasonInvalid, CheckedAt: now}, nil
	}
	status, err := v.tokenStatus(ctx, claims)
	if err != nil {
		return Verification{}, storeErr(err)
	}
	if reason := status.invalidReason(claims, now); reason != "" {
		return Verification{Reason: reason, CheckedAt: now}, nil
	}
	if accept != nil {
		if reason := accept(claims); reason != "" {
			return Verification{Reason: reason, Claims: claims, CheckedAt: now}, nil
		}
	}
	key := *status.Key
	if counted != "" && key.ID == counted {
		key = key.creditsOnly()
	}
	usage, err := v.limiter.use(ctx, key, now, true)
	if err != nil {
		return Verification{}, err
	}
	if usage != nil && usage.Refused != "" {
		return Verification{Reason: usage.Refused, Usage: usage, CheckedAt: now}, nil
	}
	return Verification{Valid: true, Claims: claims, Usage: usage, CheckedAt: now}, nil
}

// TokenRequest asks for an access token.
type TokenRequest struct {
	Scopes    []string
	ExpiresIn string // "" means DefaultTokenLifetime
	// Audience is the resource server the token is meant for (its aud):
	// an absolute URI or a plain identifier (ValidAudience). "" means the
	// service's issuer.
	Audience string
}

// IssueToken issues an access token for the calling API key, with scopes
// within the key's grants. The token never outlives the key.
// CodeForbidden for an access token caller, CodeInvalidRequest,
// CodeInsufficientScope.
func (s *Service) IssueToken(ctx context.Context, p Principal, req TokenRequest) (string, TokenClaims, error) {
	if err := p.Authorize(OpIssueToken); err != nil {
		return "", TokenClaims{}, err
	}
	var problems Problems
	scopes := normalizeScopes("scopes", req.Scopes, maxScopes, &problems)
	lifetime := DefaultTokenLifetime
	if req.ExpiresIn != "" {
		d, err := ParseDuration(req.ExpiresIn, MinTokenLifetime, MaxTokenLifetime)
		if err != nil {
			problems.Add("expires_in", err.Error())
		}
		lifetime = d
	}
	audience := req.Audience
	switch {
	case audience == "":
		audience = s.Issuer()
	case checkAudience(audience) != "":
		problems.Add("audience", checkAudience(audience))
	case s.signer != nil && audience == ConsoleAudience(s.signer.Issuer()):
		problems.Add("audience", "is the console's: only a sign-in to the console gets a token for it")
	}
	if err := problems.Err(); err != nil {
		return "", TokenClaims{}, err
	}
	if err := p.requireHeld(scopes, "a token for it cannot carry it"); err != nil {
		return "", TokenClaims{}, err
	}
	return s.issue(ctx, p, scopes, lifetime, audience, "")
}

// issue signs and records a token for the key of p, which never outlives
// the key, with the claim secret (TokenClaims.Secret).
func (s *Service) issue(ctx context.Context, p Principal, scopes []string, lifetime time.Duration, audience, secret string) (string, TokenClaims, error) {
	if s.signer == nil {
		// A deployment whose issuer is not recorded yet (the moments between
		// the functions' creation and the API's): retry shortly.
		return "", TokenClaims{}, Unavailable(errors.New("account: this process has no token signer"))
	}
	now := s.now()
	formats := s.verifier.formats.get(ctx)
	claims := TokenClaims{
		ID:             NewID(PrefixToken, now),
		KeyID:          p.KeyID,
		KeyAncestors:   p.KeyAncestors,
		OrganizationID: p.KeyOrganizationID,
		OwnerID:        p.KeyOwnerID,
		Issuer:         s.signer.Issuer(),
		Audience:       audience,
		Scopes:         scopes,
		IssuedAt:       now.Truncate(time.Second),
		ExpiresAt:      now.Truncate(time.Second).Add(lifetime),

		InlineRevocation: s.inline && formats.InlineRevocationAt(now),
		Secret:           secret,
	}
	if formats.StatusListsAt(now) {
		// Only then: a token whose entry the previous release, serving
		// beside this one, would not flip when it revokes it has none.
		ref, err := s.statuses.allocate(ctx, formats.StatusListsSince, now)
		if err != nil {
			return "", TokenClaims{}, storeErr(err)
		}
		claims.Status = &ref
	}
	if !p.KeyExpiresAt.IsZero() && p.KeyExpiresAt.Before(claims.ExpiresAt) {
		claims.ExpiresAt = p.KeyExpiresAt.Truncate(time.Second)
	}
	token, err := s.signer.Sign(claims)
	if err != nil {
		return "", TokenClaims{}, Internal(err)
	}
	// Written after signing, before returning: a token the client receives
	// always has its record.
	err = s.store.CreateToken(ctx, p.Write, TokenRecord{
		ID: claims.ID, KeyID: claims.KeyID, Scopes: claims.Scopes, Audience: claims.Audience,
		IssuedAt: claims.IssuedAt, ExpiresAt: claims.ExpiresAt, Status: claims.Status,
	})
	if err != nil {
		return "", TokenClaims{}, storeErr(err)
	}
	s.verifier.usage.issued(claims, now)
	return token, claims, nil
}

// RevokeToken makes a token invalid at once. A key may revoke the tokens it
// issued; another key's token needs ScopeRevokeTokens, and a key bound to
// an organization revokes only the tokens of its organization's keys.
// Revoking again returns the first revocation time. CodeInvalidRequest if
// token is not one this service signed; CodeOutsideOrganization,
// changing nothing, for another tenant's token; CodeInsufficientScope.
func (s *Service) RevokeToken(ctx context.Context, p Principal, token string) (Revocation, error) {
	if err := p.Authorize(OpRevokeToken); err != nil {
		return Revocation{}, err
	}
	if token == "" {
		return Revocation{}, invalid("token", "is required")
	}
	claims, err := s.parser.Parse(ctx, token, s.now())
	if err != nil && !errors.Is(err, ErrTokenExpired) {
		return Revocation{}, invalid("token", "is not an access token issued by this service")
	}
	if !p.seesToken(claims) {
		if p.bound() && p.KeyOrganizationID != claims.OrganizationID {
			return Revocation{}, outside("revoke a token of a key that is not bound to its organization")
		}
		return Revocation{}, errOtherOwnersToken
	}
	if claims.KeyID != p.KeyID {
		if err := p.Require(ScopeRevokeTokens); err != nil {
			return Revocation{}, err
		}
	}
	r := Revocation{TokenID: claims.ID, KeyID: claims.KeyID, RevokedAt: s.now(), ExpiresAt: claims.ExpiresAt, OrganizationID: claims.OrganizationID, Inline: claims.InlineRevocation, Status: claims.Status}
	at, err := s.store.RevokeToken(ctx, p.Write, r)
	if err != nil {
		return Revocation{}, storeErr(err)
	}
	r.RevokedAt = at
	return r, nil
}

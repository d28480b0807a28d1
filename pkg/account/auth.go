package account

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base32"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// APIKeyPrefix starts every generated API key secret, so that a leaked key is
// recognisable (and greppable by secret scanners).
const APIKeyPrefix = "lk_"

// MinBootstrapKeyLength is the shortest admin key accepted from configuration.
const MinBootstrapKeyLength = 32

// Token and key lifetimes.
const (
	DefaultTokenLifetime = time.Hour
	MinTokenLifetime     = time.Minute
	MaxTokenLifetime     = 24 * time.Hour
	MinKeyLifetime       = time.Minute
	MaxKeyLifetime       = 365 * 24 * time.Hour
	maxScopes            = 32
)

// MaxKeyAncestors is how many keys may stand above a key (APIKey.Ancestors):
// a key with that many cannot create keys. It bounds what every request
// with a key or a token of it must check (the key and each ancestor), and
// the size of its tokens, which name the ancestors.
const MaxKeyAncestors = 8

var keyEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// NewAPIKeySecret returns a new secret: the prefix and 32 random bytes.
func NewAPIKeySecret() string {
	b := make([]byte, 32)
	rand.Read(b) // never fails (crypto/rand documents it)
	return APIKeyPrefix + strings.ToLower(keyEncoding.EncodeToString(b))
}

// HashAPIKey returns the SHA-256 of a secret: the only form ever stored.
func HashAPIKey(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}

func last4(secret string) string { return secret[len(secret)-4:] }

var errUnauthorized = Errorf(CodeUnauthorized, "the credential is missing, malformed, unknown, expired or revoked")

// looksLikeJWT tells an access token (three base64url segments) from an API key.
func looksLikeJWT(s string) bool {
	return strings.HasPrefix(s, "eyJ") && strings.Count(s, ".") == 2
}

// Authenticate resolves a bearer credential, API key or access token, to the
// principal that presented it. The key is read from the store on every call,
// so a deleted key, and every key below it, stops working at once; a
// token's revocation entry, issuing key and the key's ancestors are read in
// one round trip. CodeUnauthorized.
func (s *Service) Authenticate(ctx context.Context, credential string) (Principal, error) {
	if credential == "" {
		return Principal{}, errUnauthorized
	}
	now := s.now()
	if looksLikeJWT(credential) {
		claims, err := s.parser.Parse(ctx, credential, now)
		if err != nil {
			return Principal{}, errUnauthorized
		}
		status, err := s.store.TokenStatus(ctx, claims.ID, claims.KeyID, claims.KeyAncestors)
		if err != nil {
			return Principal{}, storeErr(err)
		}
		if reason := status.invalidReason(now); reason != "" {
			return Principal{}, errUnauthorized
		}
		return Principal{
			KeyID: claims.KeyID, TokenID: claims.ID, Scopes: claims.Scopes,
			KeyExpiresAt: status.Key.ExpiresAt, KeyAncestors: status.Key.Ancestors, KeyBootstrap: status.Key.Bootstrap,
		}, nil
	}
	hash := HashAPIKey(credential)
	key, err := s.store.GetAPIKeyByHash(ctx, hash)
	if IsCode(err, CodeNotFound) {
		return Principal{}, errUnauthorized
	}
	if err != nil {
		return Principal{}, storeErr(err)
	}
	if subtle.ConstantTimeCompare(key.Hash, hash) != 1 || key.Expired(now) {
		return Principal{}, errUnauthorized
	}
	return Principal{KeyID: key.ID, Scopes: key.Scopes, KeyExpiresAt: key.ExpiresAt, KeyAncestors: key.Ancestors, KeyBootstrap: key.Bootstrap}, nil
}

// Reasons a token is not valid, as reported by VerifyToken.
const (
	ReasonRevoked = "revoked"
	ReasonExpired = "expired"
	ReasonInvalid = "invalid"
)

// invalidReason says why a well-signed, unexpired token is no longer valid:
// it was revoked, or its key was deleted or has expired. "" if it is valid.
func (st TokenStatus) invalidReason(now time.Time) string {
	if !st.RevokedAt.IsZero() || st.Key == nil || st.Key.Expired(now) {
		return ReasonRevoked
	}
	return ""
}

// Verification is the result of VerifyToken.
type Verification struct {
	Valid  bool
	Reason string // when not valid: ReasonRevoked, ReasonExpired or ReasonInvalid
	Claims TokenClaims
}

// VerifyToken checks an access token: signature, expiry, revocation entry,
// issuing key and the keys above it. A forged or expired token costs no
// store read.
func (s *Service) VerifyToken(ctx context.Context, token string) (Verification, error) {
	now := s.now()
	claims, err := s.parser.Parse(ctx, token, now)
	switch {
	case errors.Is(err, ErrTokenExpired):
		return Verification{Reason: ReasonExpired}, nil
	case err != nil:
		return Verification{Reason: ReasonInvalid}, nil
	}
	status, err := s.store.TokenStatus(ctx, claims.ID, claims.KeyID, claims.KeyAncestors)
	if err != nil {
		return Verification{}, storeErr(err)
	}
	if reason := status.invalidReason(now); reason != "" {
		return Verification{Reason: reason}, nil
	}
	return Verification{Valid: true, Claims: claims}, nil
}

// TokenRequest asks for an access token.
type TokenRequest struct {
	Scopes    []string
	ExpiresIn string // "" means DefaultTokenLifetime
}

// IssueToken issues an access token for the calling API key, with scopes
// within the key's grants. The token never outlives the key.
// CodeForbidden for an access token caller, CodeInvalidRequest,
// CodeInsufficientScope.
func (s *Service) IssueToken(ctx context.Context, p Principal, req TokenRequest) (string, TokenClaims, error) {
	if err := p.RequireKey(""); err != nil {
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
	if err := problems.Err(); err != nil {
		return "", TokenClaims{}, err
	}
	if err := p.requireHeld(scopes, "a token for it cannot carry it"); err != nil {
		return "", TokenClaims{}, err
	}
	if s.signer == nil {
		return "", TokenClaims{}, Internal(errors.New("account: this process has no token signer"))
	}
	now := s.now()
	claims := TokenClaims{
		ID:           NewID(PrefixToken, now),
		KeyID:        p.KeyID,
		KeyAncestors: p.KeyAncestors,
		Scopes:       scopes,
		IssuedAt:     now.Truncate(time.Second),
		ExpiresAt:    now.Truncate(time.Second).Add(lifetime),
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
	err = s.store.CreateToken(ctx, TokenRecord{
		ID: claims.ID, KeyID: claims.KeyID, Scopes: claims.Scopes, IssuedAt: claims.IssuedAt, ExpiresAt: claims.ExpiresAt,
	})
	if err != nil {
		return "", TokenClaims{}, storeErr(err)
	}
	return token, claims, nil
}

// RevokeToken makes a token invalid at once. A key may revoke the tokens it
// issued; another key's token needs ScopeRevokeTokens. Revoking again returns
// the first revocation time. CodeInvalidRequest if token is not one this
// service signed; CodeInsufficientScope.
func (s *Service) RevokeToken(ctx context.Context, p Principal, token string) (Revocation, error) {
	if token == "" {
		return Revocation{}, invalid("token", "is required")
	}
	claims, err := s.parser.Parse(ctx, token, s.now())
	if err != nil && !errors.Is(err, ErrTokenExpired) {
		return Revocation{}, invalid("token", "is not an access token issued by this service")
	}
	if claims.KeyID != p.KeyID {
		if err := p.Require(ScopeRevokeTokens); err != nil {
			return Revocation{}, err
		}
	}
	r := Revocation{TokenID: claims.ID, KeyID: claims.KeyID, RevokedAt: s.now(), ExpiresAt: claims.ExpiresAt}
	at, err := s.store.RevokeToken(ctx, r)
	if err != nil {
		return Revocation{}, storeErr(err)
	}
	r.RevokedAt = at
	return r, nil
}

// NewAPIKey describes a key to create.
type NewAPIKey struct {
	Name      string
	Scopes    []string
	ExpiresIn string // "" means the key does not expire (unless its creator does)
}

// CreateAPIKey creates a key with grants within the caller's own, below the
// caller's key (APIKey.Ancestors), and returns it with its secret, which is
// never shown again. A key never outlives the key that created it.
// CodeForbidden for an access token caller or a key MaxKeyAncestors deep,
// CodeInsufficientScope, CodeInvalidRequest; CodeUnauthorized if the
// caller's key is deleted meanwhile.
func (s *Service) CreateAPIKey(ctx context.Context, p Principal, req NewAPIKey) (APIKey, string, error) {
	if err := p.RequireKey(ScopeWriteAPIKeys); err != nil {
		return APIKey{}, "", err
	}
	var problems Problems
	name := normalizeName("name", req.Name, &problems)
	scopes := normalizeScopes("scopes", req.Scopes, maxScopes, &problems)
	var lifetime time.Duration
	if req.ExpiresIn != "" {
		d, err := ParseDuration(req.ExpiresIn, MinKeyLifetime, MaxKeyLifetime)
		if err != nil {
			problems.Add("expires_in", err.Error())
		}
		lifetime = d
	}
	if err := problems.Err(); err != nil {
		return APIKey{}, "", err
	}
	if err := p.requireHeld(scopes, "it cannot grant it to another key"); err != nil {
		return APIKey{}, "", err
	}
	var ancestors []string
	if !p.KeyBootstrap {
		if len(p.KeyAncestors) >= MaxKeyAncestors {
			return APIKey{}, "", Errorf(CodeForbidden, "this key is %d levels below the keys the admin key creates, the most there may be; it cannot create keys", len(p.KeyAncestors))
		}
		ancestors = append(slices.Clip(p.KeyAncestors), p.KeyID)
	}
	now := s.now()
	secret := NewAPIKeySecret()
	key := APIKey{
		ID:        NewID(PrefixAPIKey, now),
		Name:      name,
		Hash:      HashAPIKey(secret),
		Last4:     last4(secret),
		Scopes:    scopes,
		CreatedBy: p.KeyID,
		Ancestors: ancestors,
		CreatedAt: now,
	}
	if lifetime > 0 {
		key.ExpiresAt = now.Add(lifetime)
	}
	if !p.KeyExpiresAt.IsZero() && (key.ExpiresAt.IsZero() || p.KeyExpiresAt.Before(key.ExpiresAt)) {
		key.ExpiresAt = p.KeyExpiresAt
	}
	err := s.store.CreateAPIKey(ctx, key)
	if IsCode(err, CodeNotFound) {
		// The caller's key was deleted after it authenticated this request.
		return APIKey{}, "", errUnauthorized
	}
	if err != nil {
		return APIKey{}, "", storeErr(err)
	}
	return key, secret, nil
}

// GetAPIKey returns a key whose grants are within the caller's.
// CodeForbidden for an access token caller, CodeInsufficientScope (also for
// a key with a grant the caller does not hold), CodeNotFound.
func (s *Service) GetAPIKey(ctx context.Context, p Principal, id string) (APIKey, error) {
	if err := p.RequireKey(ScopeReadAPIKeys); err != nil {
		return APIKey{}, err
	}
	if !ValidID(PrefixAPIKey, id) {
		return APIKey{}, notFound("API key")
	}
	k, err := s.store.GetAPIKey(ctx, id)
	if err != nil {
		return APIKey{}, storeErr(err)
	}
	if err := p.requireWithin(k.Scopes); err != nil {
		return APIKey{}, err
	}
	return k, nil
}

// ListAPIKeys lists the keys whose grants are within the caller's, newest
// first. The others are left out of each page after the store has read it,
// so a page may hold fewer than the limit, even none, while Next says
// there is more; paging stays exact because the position is the store's,
// after the last key read, not the last key returned. CodeForbidden,
// CodeInsufficientScope, CodeInvalidRequest.
func (s *Service) ListAPIKeys(ctx context.Context, p Principal, r PageRequest) (List[APIKey], error) {
	if err := p.RequireKey(ScopeReadAPIKeys); err != nil {
		return List[APIKey]{}, err
	}
	params, err := s.cursors.params("api_keys", r)
	if err != nil {
		return List[APIKey]{}, err
	}
	page, err := s.store.ListAPIKeys(ctx, params)
	if err != nil {
		return List[APIKey]{}, storeErr(err)
	}
	page.Items = slices.DeleteFunc(page.Items, func(k APIKey) bool { return p.requireWithin(k.Scopes) != nil })
	return toList(s.cursors, "api_keys", page), nil
}

// DeleteAPIKey deletes a key whose grants are within the caller's, and
// every key below it (whose Ancestors name it): they and every token issued
// for them stop working at once. The bootstrap admin key cannot be deleted
// through the API, nor a key above the caller's (in its Ancestors). A delete
// that failed halfway (see the store) is finished by calling DeleteAPIKey
// again. CodeForbidden, CodeInsufficientScope (also
// for a key with a grant the caller does not hold), CodeNotFound.
func (s *Service) DeleteAPIKey(ctx context.Context, p Principal, id string) error {
	if err := p.RequireKey(ScopeWriteAPIKeys); err != nil {
		return err
	}
	if !ValidID(PrefixAPIKey, id) {
		return notFound("API key")
	}
	// The store reads the key, asks whether it may go, and deletes it in
	// the same call: one read, and the answer is about the key it deletes.
	return storeErr(s.store.DeleteAPIKey(ctx, id, func(k APIKey) error {
		if err := p.requireWithin(k.Scopes); err != nil {
			return err
		}
		if k.Bootstrap {
			return Errorf(CodeForbidden, "the bootstrap admin key is managed by configuration and cannot be deleted through the API")
		}
		// Deleting a key above the caller's would delete the caller's key
		// too, and every sibling: a leaked key must not be able to take
		// down the keys that created it, whatever their grants.
		if slices.Contains(p.KeyAncestors, k.ID) {
			return Errorf(CodeForbidden, "an API key cannot delete a key above it (one that created it, directly or not); use that key or one above it")
		}
		return nil
	}))
}

// EnsureBootstrapKey is EnsureBootstrapKeyAt with the current time: right
// for one process whose configured key changes only across restarts (the
// local server), where the key configured last is the newest.
func (s *Service) EnsureBootstrapKey(ctx context.Context, secret string) error {
	return s.EnsureBootstrapKeyAt(ctx, secret, s.now())
}

// EnsureBootstrapKeyAt makes secret the bootstrap admin key (grant "*:*"),
// creating its record if needed and deleting any older bootstrap key, so
// that changing the configured key retires the old one. created is when the
// secret was created (the secret version's creation time, in a deployment);
// it becomes the key's CreatedAt and orders bootstrap keys, so that a
// process still holding an older secret, during a rotation, neither retires
// the newer key nor brings its own back once the newer one exists. Safe to
// call from several processes at once. A zero created is taken as now.
// CodeInvalidRequest for a secret unfit to be a key.
func (s *Service) EnsureBootstrapKeyAt(ctx context.Context, secret string, created time.Time) error {
	if len(secret) < MinBootstrapKeyLength {
		return Errorf(CodeInvalidRequest, "the admin API key must be at least %d characters", MinBootstrapKeyLength)
	}
	if looksLikeJWT(secret) {
		// Authenticate would take it for an access token and never find it.
		return Errorf(CodeInvalidRequest, "the admin API key must not have the shape of a JWT (eyJ….….…)")
	}
	hash := HashAPIKey(secret)
	_, err := s.store.GetAPIKeyByHash(ctx, hash)
	if err == nil || !IsCode(err, CodeNotFound) {
		// Present already (the common cold start: one read), or a store failure.
		return err
	}
	if created.IsZero() {
		created = s.now()
	}
	current := APIKey{
		ID:        NewID(PrefixAPIKey, s.now()),
		Name:      "bootstrap admin key",
		Hash:      hash,
		Last4:     last4(secret),
		Scopes:    []string{ScopeAll},
		Bootstrap: true,
		CreatedAt: created,
	}
	keys, err := s.bootstrapKeys(ctx)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if newerBootstrapKey(k, current) {
			// secret has been replaced: the key stays retired.
			return nil
		}
	}
	if err := s.store.CreateAPIKey(ctx, current); err != nil {
		// Another process may have won the race to create the same key.
		_, err = s.store.GetAPIKeyByHash(ctx, hash)
		return err
	}
	// Listed again after the create: of two processes ensuring different
	// keys at once, at least one sees the other's key here (a DynamoDB
	// index lags a little, which narrows the window rather than closing
	// it), and both agree which is newer, so the older key is deleted
	// whichever process sees both.
	if keys, err = s.bootstrapKeys(ctx); err != nil {
		return err
	}
	for _, k := range keys {
		if k.ID == current.ID {
			current = k // as stored, for comparisons other processes make too
			break
		}
	}
	for _, k := range keys {
		if k.ID != current.ID && newerBootstrapKey(k, current) {
			return ignoreNotFound(s.store.DeleteAPIKey(ctx, current.ID, onlyBootstrap))
		}
	}
	// Every other bootstrap key is older: retire it.
	for _, k := range keys {
		if k.ID != current.ID {
			if err := ignoreNotFound(s.store.DeleteAPIKey(ctx, k.ID, onlyBootstrap)); err != nil {
				return err
			}
		}
	}
	return nil
}

// onlyBootstrap lets EnsureBootstrapKeyAt delete bootstrap keys and nothing
// else. A bootstrap key is nobody's ancestor, so deleting one deletes no
// other key: the keys it created stay, as keys of the administrator.
func onlyBootstrap(k APIKey) error {
	if !k.Bootstrap {
		return Internal(fmt.Errorf("account: key %s is not a bootstrap key", k.ID))
	}
	return nil
}

// newerBootstrapKey reports whether a was created after b. Keys of one
// instant are ordered by ID, so that every process agrees on which to keep.
func newerBootstrapKey(a, b APIKey) bool {
	if !a.CreatedAt.Equal(b.CreatedAt) {
		return a.CreatedAt.After(b.CreatedAt)
	}
	return a.ID > b.ID
}

// bootstrapKeys lists every bootstrap key.
func (s *Service) bootstrapKeys(ctx context.Context) ([]APIKey, error) {
	var out []APIKey
	params := ListParams{Limit: maxPageSize}
	for {
		page, err := s.store.ListAPIKeys(ctx, params)
		if err != nil {
			return nil, err
		}
		for _, k := range page.Items {
			if k.Bootstrap {
				out = append(out, k)
			}
		}
		if page.Next == "" {
			return out, nil
		}
		params.After = page.Next
	}
}

// ignoreNotFound treats deleting a key another process deleted first as done.
func ignoreNotFound(err error) error {
	if IsCode(err, CodeNotFound) {
		return nil
	}
	return err
}

// HasBootstrapKey reports whether a bootstrap admin key exists. The local
// server generates and shows a key only when none does.
func (s *Service) HasBootstrapKey(ctx context.Context) (bool, error) {
	keys, err := s.bootstrapKeys(ctx)
	return len(keys) > 0, err
}

package account

import (
	"context"
	"crypto/subtle"
	"strings"
	"time"
)

var errUnauthorized = Errorf(CodeUnauthorized, "the credential is missing, malformed, unknown, expired or revoked")

// errPaused answers a credential of a disabled key, or of a key below one:
// it is valid, so saying why it is refused helps its holder, who knows it.
func errPaused(k APIKey, what string) error {
	if k.Disabled {
		return Errorf(CodeUnauthorized, "%s is disabled", what)
	}
	return Errorf(CodeUnauthorized, "a key above %s is disabled", what)
}

// looksLikeJWT tells an access token (three base64url segments) from an API key.
func looksLikeJWT(s string) bool {
	return strings.HasPrefix(s, "eyJ") && strings.Count(s, ".") == 2
}

// errTokenRefused answers an access token the parser refuses. A token for
// another resource server is one, and well signed: the message names that
// case too, for its holder, who may not know that this API is one.
var errTokenRefused = Errorf(CodeUnauthorized, "the access token is malformed, forged, expired, or for another audience: this API accepts tokens whose audience (aud) is its issuer, which a token request that names no audience gets")

// Authenticate resolves a bearer credential, API key or access token, to the
// principal that presented it. The key is read from the store on every call,
// so a deleted or disabled key, and every key below it, stops working at
// once; a token's revocation entry, issuing key and the key's ancestors are
// read in one round trip. A token is accepted only if its audience is this
// service (RFC 9068, section 4): its issuer, the audience of a token
// requested without one. A console session's token, whose audience is the
// console's (ConsoleAudience), is refused with the rest: the console alone
// accepts it (AuthenticateSession). CodeUnauthorized.
func (s *Service) Authenticate(ctx context.Context, credential string) (Principal, error) {
	if credential == "" {
		return Principal{}, errUnauthorized
	}
	now := s.now()
	if looksLikeJWT(credential) {
		// Verify and introspection (the verifier's Parse) report a token
		// for any audience; as a credential it must be for this API.
		claims, err := s.parser.ParseCredential(ctx, credential, now)
		if err != nil {
			return Principal{}, errTokenRefused
		}
		return s.tokenPrincipal(ctx, claims, now)
	}
	hash := HashAPIKey(credential)
	key, err := s.store.GetAPIKeyByHash(ctx, hash)
	if IsCode(err, CodeNotFound) {
		return Principal{}, errUnauthorized
	}
	if err != nil {
		return Principal{}, storeErr(err)
	}
	// The current secret, or the previous one during its grace period.
	current := subtle.ConstantTimeCompare(key.Hash, hash) == 1
	previous := subtle.ConstantTimeCompare(key.PreviousHash, hash) == 1 && key.PreviousActive(now)
	if !current && !previous || key.Expired(now) {
		return Principal{}, errUnauthorized
	}
	if key.Paused() {
		return Principal{}, errPaused(key, "the API key")
	}
	usage, err := s.verifier.limiter.use(ctx, key, now, false)
	if err != nil {
		return Principal{}, err
	}
	if usage != nil && usage.Refused != "" {
		return Principal{}, errRateLimited(usage)
	}
	s.recordUse(ctx, key, now)
	p := keyPrincipal(key)
	p.PreviousSecret = !current
	p.Usage = usage
	return p, nil
}

// tokenPrincipal resolves the claims of an access token its caller has
// parsed to the principal that presented it: the token's revocation entry,
// its key and the key's ancestors decide, read in one round trip.
func (s *Service) tokenPrincipal(ctx context.Context, claims TokenClaims, now time.Time) (Principal, error) {
	status, err := s.verifier.tokenStatus(ctx, claims)
	if err != nil {
		return Principal{}, storeErr(err)
	}
	switch status.invalidReason(claims, now) {
	case "":
	case ReasonDisabled:
		return Principal{}, errPaused(*status.Key, "the access token's API key")
	default:
		return Principal{}, errUnauthorized
	}
	// A request the token authenticates is a use of its key, counted
	// against its rate limits; credits pay for verifications only.
	usage, err := s.verifier.limiter.use(ctx, *status.Key, now, false)
	if err != nil {
		return Principal{}, err
	}
	if usage != nil && usage.Refused != "" {
		return Principal{}, errRateLimited(usage)
	}
	p := keyPrincipal(*status.Key)
	p.TokenID, p.Scopes, p.Usage = claims.ID, claims.Scopes, usage
	return p, nil
}

// keyPrincipal is the principal that presents k's secret.
func keyPrincipal(k APIKey) Principal {
	return Principal{
		KeyID: k.ID, Scopes: k.Scopes, KeyExpiresAt: k.ExpiresAt, KeyAncestors: k.Ancestors, KeyBootstrap: k.Bootstrap,
		KeyOrganizationID: k.OrganizationID, KeyOwnerID: k.OwnerID,
		KeyRateLimits: k.RateLimits, KeyCredits: k.Credits, KeyLimitsAbove: k.LimitsAbove,
		keyHash: k.Hash,
	}
}

// AuthenticateClient authenticates an OAuth 2.0 client by its client
// credentials (RFC 6749, section 2.3.1): clientID is the id of an API key
// (key_…) and secret is that key's secret. The key is read as Authenticate
// reads it, so a deleted or expired key fails at once. A secret that belongs
// to another key, an access token in place of the secret, or anything else
// that is not the named key's own secret is CodeUnauthorized, with the same
// message whichever part was wrong.
func (s *Service) AuthenticateClient(ctx context.Context, clientID, secret string) (Principal, error) {
	if !ValidID(PrefixAPIKey, clientID) || secret == "" || looksLikeJWT(secret) {
		return Principal{}, errUnauthorized
	}
	p, err := s.Authenticate(ctx, secret)
	if err != nil {
		return Principal{}, err
	}
	if subtle.ConstantTimeCompare([]byte(p.KeyID), []byte(clientID)) != 1 {
		return Principal{}, errUnauthorized
	}
	return p, nil
}

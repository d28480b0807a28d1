package account

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"slices"
	"strings"
	"time"
)

// SessionLifetime is how long a console session lasts: an operator signs
// in again after it. Short, because a session manages API keys with every
// grant of the key that signed in.
const SessionLifetime = 30 * time.Minute

// ConsoleAudience is the audience (aud) of the console's session tokens
// at a service whose issuer is issuer: the console's own address, which
// IssueToken gives to no token it is asked for, so that only a sign-in
// makes one.
func ConsoleAudience(issuer string) string {
	return strings.TrimSuffix(issuer, "/") + "/console"
}

// isSession reports whether claims are a console session's: the audience
// is the console of the token's own issuer, which the parser has checked.
func isSession(c TokenClaims) bool {
	return c.Audience == ConsoleAudience(c.Issuer)
}

var errSessionRefused = Errorf(CodeForbidden, "this operation needs an API key; a console session cannot make credentials")

var errNotSession = Errorf(CodeUnauthorized, "the console session is missing, expired or revoked: sign in again")

// StartSession exchanges the API key of p for a console session: an access
// token with every grant of the key, for the console's audience
// (ConsoleAudience), for SessionLifetime or until the key expires. The key
// itself is not kept: the console holds the token in a cookie and
// AuthenticateSession resolves it to the key's principal, with Session
// set. Like any token, it stops at once when it is revoked (RevokeToken,
// the console's sign-out) or when its key, or a key above it, is deleted
// or disabled, and when its key gets a new secret (RotateAPIKey): the
// session carries the mark of the secret that signed in (TokenClaims.Secret),
// which must be the key's current one. CodeForbidden for an access token
// caller, CodeUnavailable in a process that does not issue tokens.
func (s *Service) StartSession(ctx context.Context, p Principal) (string, TokenClaims, error) {
	if err := p.Authorize(OpStartSession); err != nil {
		return "", TokenClaims{}, err
	}
	return s.issue(ctx, p, slices.Clone(p.Scopes), SessionLifetime, ConsoleAudience(s.Issuer()), SecretMark(p.keyHash))
}

// SecretMark names a key's secret, by its hash, in a console session's
// claims (TokenClaims.Secret): a value of its own (a SHA-256 of the hash,
// cut to 96 bits), so that the session, readable by whoever holds it, does
// not carry the hash the store finds the key by.
func SecretMark(hash []byte) string {
	h := sha256.New()
	h.Write([]byte("latchkey console session\x00"))
	h.Write(hash)
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:12])
}

// signedInWith reports whether the session claims c were started by the
// current secret of their key k: a rotation ends the sessions of the
// secret it replaces, whatever its grace period (a previous secret manages
// no key, and a session manages keys). A session without the mark (one
// started before sessions carried it) is ended too.
func signedInWith(c TokenClaims, k APIKey) bool {
	return subtle.ConstantTimeCompare([]byte(c.Secret), []byte(SecretMark(k.Hash))) == 1
}

// AuthenticateSession resolves a console session token (StartSession) to
// the principal of its key, with the key's grants as they were at sign-in
// and Session set, which API key management accepts as the key itself
// (Principal.RequireKey). Any other credential, an access token the API
// issued included, is CodeUnauthorized, as is a session that has expired
// or been revoked, whose key has been deleted, or whose key's secret is no
// longer the one that signed in; a disabled key's is CodeUnauthorized
// saying so.
func (s *Service) AuthenticateSession(ctx context.Context, token string) (Principal, error) {
	if !looksLikeJWT(token) {
		return Principal{}, errNotSession
	}
	// A session's audience is the console's, not this API's: parsed for
	// any audience, then held to the console's.
	now := s.now()
	claims, err := s.parser.Parse(ctx, token, now)
	if err != nil || !isSession(claims) {
		return Principal{}, errNotSession
	}
	p, err := s.tokenPrincipal(ctx, claims, now)
	if err == errUnauthorized { // the same answer for every token that is no live session
		return Principal{}, errNotSession
	}
	if err != nil {
		return Principal{}, err
	}
	p.Session = true
	return p, nil
}

// Package verifier checks Latchkey's access tokens in a Go service, and
// protects its http.Handlers with them:
//
//	v, err := verifier.New(verifier.Config{Issuer: "https://auth.example.com", Audience: "https://orders.example.com"})
//	if err != nil {
//		log.Fatal(err)
//	}
//	mux.Handle("GET /orders", v.Require("read:orders")(orders))
//
// and in the handler, verifier.ClaimsFrom(r.Context()) returns the token's
// claims.
//
// A token is checked offline, with no request to Latchkey per token: its
// signature against the issuer's JSON Web Key Set (found through the
// discovery document, cached, and fetched again for a kid it does not hold,
// at most once per KeyRefetchInterval), its typ (at+jwt, RFC 9068), its
// algorithm (Config.Algorithms), iss, aud (Config.Audience, required),
// exp, nbf and iat with Config.Leeway, and its status in the Token Status
// List its status claim names (draft-ietf-oauth-status-list), fetched and
// cached for the list's ttl, revalidated with If-None-Match. A revoked
// token is refused within ttl (10 s by default) of its revocation.
//
// A token seen again is not decoded again: the claims of the tokens it
// has verified are kept (10,000 at most, by the token's SHA-256) while the
// key that verified them is published; exp and the status are checked on
// every call. A warm check makes no request and costs a few microseconds.
//
// With Config.Online, the status is asked of Latchkey's /v1/auth/verify
// instead, on every request: a revoked token is refused at once, for one
// round trip per request.
//
// When Latchkey cannot be reached the Verifier fails closed, within a
// bound: a cached status list is used until it is Config.StaleLists times
// its ttl old, and after that every token it covers is refused with
// ReasonUnavailable until a fetch succeeds. A list Latchkey answers 404
// for is not used from the cache: its tokens are refused at once. The
// online mode refuses at once. A token without a status claim (issued
// while the deployment's status lists were not in force: before its
// upgrade's last step, or after a rollback) is accepted on its signature
// and claims alone, and so until it expires, unless Config.RequireStatus.
//
// Refusals are *Error values whose Reason is one of the words Latchkey's
// verify endpoint answers (revoked, disabled, expired, invalid,
// rate_limited, usage_exceeded), or that its gateway authorizer logs
// (wrong_audience, insufficient_scope, no_bearer_token), or unavailable.
package verifier

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Config says which tokens a Verifier accepts. Issuer and Audience are
// required.
type Config struct {
	// Issuer is the Latchkey deployment's issuer identifier, as its
	// discovery document names it ("issuer" at
	// <Issuer>/.well-known/oauth-authorization-server): tokens must carry
	// it as iss.
	Issuer string
	// Audience is this service's identifier, as clients request tokens
	// for it ("audience" at the token endpoint): tokens must carry it as
	// aud. A token for another service, or for Latchkey itself, is
	// refused (RFC 9068, section 4).
	Audience string
	// JWKSURL is the key set's address; "" reads jwks_uri from the
	// discovery document.
	JWKSURL string
	// Algorithms are the JWS algorithms accepted; nil is EdDSA and RS256,
	// the two Latchkey signs with. Only those two may be named: never
	// "none" nor a MAC.
	Algorithms []string
	// Leeway is the clock difference allowed on exp, nbf and iat; 0 is
	// DefaultLeeway, a negative value none.
	Leeway time.Duration
	// RequireStatus refuses (ReasonInvalid) tokens that carry no status
	// claim. Off by default: Latchkey issues tokens without one while its
	// status lists are not in force (during an upgrade until its last
	// step, and after a rollback until the next upgrade's), and those
	// would all be refused.
	RequireStatus bool
	// StaleLists is how many times its ttl a cached status list may be
	// used while it cannot be fetched again; 0 is DefaultStaleLists. Past
	// that, tokens it covers are refused with ReasonUnavailable.
	StaleLists int
	// DefaultTTL is how long a status list without a ttl claim is cached;
	// 0 is DefaultListTTL.
	DefaultTTL time.Duration
	// Online asks Latchkey's verify endpoint about every token that passes
	// the offline checks, instead of the status list: revocation at once,
	// for one round trip per request. Unreachable, it refuses
	// (ReasonUnavailable).
	Online bool
	// VerifyURL is the verify endpoint of Online; "" is
	// <Issuer>/v1/auth/verify. A deployment's verify function URL (its
	// VerifyUrl output) answers the same.
	VerifyURL string
	// HTTPClient makes every request; nil is a client with a 5 s timeout.
	HTTPClient *http.Client
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// Defaults of Config.
const (
	DefaultLeeway     = 5 * time.Second
	DefaultStaleLists = 3
	DefaultListTTL    = 10 * time.Second
	// KeyRefetchInterval is the least time between two fetches of the key
	// set for a token whose kid it does not hold: a rotation publishes the
	// new key before signing with it, so one fetch finds it, and a flood
	// of made-up kids costs one fetch per interval.
	KeyRefetchInterval = 10 * time.Second
	// KeyRefreshInterval is the age after which the key set is fetched
	// again on the next token, so that retired keys stop verifying.
	KeyRefreshInterval = 5 * time.Minute
	// MaxTokenBytes is the longest token accepted: Latchkey signs none
	// longer.
	MaxTokenBytes = 8 << 10
)

// The reasons of a refusal (Error.Reason).
const (
	// ReasonInvalid: not a token, tampered with, signed by an unknown key
	// or with an algorithm not allowed, a typ other than at+jwt, another
	// issuer, an nbf or iat in the future, a malformed status claim.
	ReasonInvalid = "invalid"
	// ReasonExpired: past its exp, and wrong in nothing else.
	ReasonExpired = "expired"
	// ReasonWrongAudience: a well-signed token for another audience.
	ReasonWrongAudience = "wrong_audience"
	// ReasonRevoked: the status list says INVALID (revoked, or its key
	// deleted), or verify says revoked.
	ReasonRevoked = "revoked"
	// ReasonDisabled: the status list says SUSPENDED (its key, or a key
	// above it, is disabled), or verify says disabled. It passes again
	// once the key is enabled.
	ReasonDisabled = "disabled"
	// ReasonRateLimited and ReasonUsageExceeded: verify's answers for a
	// key with limits (Online only).
	ReasonRateLimited   = "rate_limited"
	ReasonUsageExceeded = "usage_exceeded"
	// ReasonInsufficientScope: the token lacks a scope the route requires.
	ReasonInsufficientScope = "insufficient_scope"
	// ReasonNoToken: the request carries no Bearer token.
	ReasonNoToken = "no_bearer_token"
	// ReasonUnavailable: the token's status cannot be known: its status
	// list could not be fetched and the cached copy is older than
	// StaleLists × ttl, or (Online) verify could not be asked.
	ReasonUnavailable = "unavailable"
)

// Error is a refusal: Reason is one of the Reason constants, Detail says
// more, for logs (it never holds the token).
type Error struct {
	Reason string
	Detail string
	// Scope is the scope that was missing, for ReasonInsufficientScope.
	Scope string
	err   error
}

func (e *Error) Error() string {
	if e.Detail == "" {
		return "verifier: " + e.Reason
	}
	return "verifier: " + e.Reason + ": " + e.Detail
}

// Unwrap returns the cause, such as a network error for ReasonUnavailable.
func (e *Error) Unwrap() error { return e.err }

// Is reports whether target is an *Error with the same Reason, so that
// errors.Is(err, verifier.ErrRevoked) works.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Reason == e.Reason && t.Detail == "" && t.err == nil
}

// Sentinels for errors.Is.
var (
	ErrInvalid           = &Error{Reason: ReasonInvalid}
	ErrExpired           = &Error{Reason: ReasonExpired}
	ErrWrongAudience     = &Error{Reason: ReasonWrongAudience}
	ErrRevoked           = &Error{Reason: ReasonRevoked}
	ErrDisabled          = &Error{Reason: ReasonDisabled}
	ErrRateLimited       = &Error{Reason: ReasonRateLimited}
	ErrUsageExceeded     = &Error{Reason: ReasonUsageExceeded}
	ErrInsufficientScope = &Error{Reason: ReasonInsufficientScope}
	ErrNoToken           = &Error{Reason: ReasonNoToken}
	ErrUnavailable       = &Error{Reason: ReasonUnavailable}
)

func refuse(reason, detail string, err error) *Error {
	return &Error{Reason: reason, Detail: detail, err: err}
}

// Claims are a verified token's claims. Each Verify returns a Claims of
// its own, but its Scopes and Status may be shared with other calls: read
// them, do not change them.
type Claims struct {
	TokenID  string // jti
	KeyID    string // sub and client_id: the API key the token was issued for
	Issuer   string
	Audience string
	Scopes   []string
	// OrganizationID and OwnerID are the key's organization and owner
	// (org_id, owner_id); "" when it has none.
	OrganizationID string
	OwnerID        string
	IssuedAt       time.Time
	ExpiresAt      time.Time
	// Status is the token's entry in a status list; nil when it has none.
	Status *StatusRef
	// Limits is, in the online mode, where the limits verify counted the
	// token against stand after it; nil offline, and when it counted
	// against none.
	Limits *Limits
}

// StatusRef is a token's status claim: its index in the list at URI.
type StatusRef struct {
	Index int
	URI   string
}

// HasScope reports whether the token's scopes cover want, by Latchkey's
// rule: a "*" action or resource of a scope matches any ("*:orders" covers
// "read:orders"; "*:*" covers all).
func (c *Claims) HasScope(want string) bool {
	wa, wr, _ := strings.Cut(want, ":")
	for _, s := range c.Scopes {
		a, r, _ := strings.Cut(s, ":")
		if (a == "*" || a == wa) && (r == "*" || r == wr) {
			return true
		}
	}
	return false
}

// Verifier checks tokens. It is safe for concurrent use; make one per
// process and share it, so that its caches are shared.
type Verifier struct {
	cfg    Config
	algs   []string
	leeway time.Duration
	client *http.Client
	now    func() time.Time
	parser *jwt.Parser

	keys   keySet
	lists  lists
	tokens tokenCache
}

// New returns a Verifier for cfg. It makes no request: the discovery
// document, the key set and the status lists are fetched when the first
// token needs them. It fails only on a wrong cfg.
func New(cfg Config) (*Verifier, error) {
	iss, err := url.Parse(cfg.Issuer)
	if err != nil || (iss.Scheme != "https" && iss.Scheme != "http") || iss.Host == "" {
		return nil, fmt.Errorf("verifier: Issuer %q is not an http(s) URL", cfg.Issuer)
	}
	if cfg.Audience == "" {
		return nil, errors.New("verifier: Audience is required: the identifier clients request tokens for this service with")
	}
	v := &Verifier{cfg: cfg, algs: cfg.Algorithms, leeway: cfg.Leeway, client: cfg.HTTPClient, now: cfg.Now}
	if v.algs == nil {
		v.algs = []string{"EdDSA", "RS256"}
	}
	for _, a := range v.algs {
		if a != "EdDSA" && a != "RS256" {
			return nil, fmt.Errorf("verifier: algorithm %q: Latchkey signs with EdDSA or RS256 only", a)
		}
	}
	if len(v.algs) == 0 {
		return nil, errors.New("verifier: Algorithms is empty")
	}
	switch {
	case v.leeway == 0:
		v.leeway = DefaultLeeway
	case v.leeway < 0:
		v.leeway = 0
	}
	if v.cfg.StaleLists <= 0 {
		v.cfg.StaleLists = DefaultStaleLists
	}
	if v.cfg.DefaultTTL <= 0 {
		v.cfg.DefaultTTL = DefaultListTTL
	}
	if v.cfg.VerifyURL == "" {
		v.cfg.VerifyURL = strings.TrimSuffix(cfg.Issuer, "/") + "/v1/auth/verify"
	}
	if v.client == nil {
		v.client = &http.Client{Timeout: 5 * time.Second}
	}
	if v.now == nil {
		v.now = time.Now
	}
	// Claims are checked by check, at the Verifier's clock and with its
	// reasons; the library checks the algorithm and the signature.
	v.parser = jwt.NewParser(jwt.WithValidMethods(v.algs), jwt.WithoutClaimsValidation())
	v.keys.v = v
	v.lists.v = v
	v.lists.m = map[string]*list{}
	return v, nil
}

// tokenClaims is an access token's payload as read.
type tokenClaims struct {
	Scope    string `json:"scope"`
	ClientID string `json:"client_id"`
	OrgID    string `json:"org_id"`
	OwnerID  string `json:"owner_id"`
	Status   *struct {
		StatusList *struct {
			Idx *int64 `json:"idx"`
			URI string `json:"uri"`
		} `json:"status_list"`
	} `json:"status"`
	jwt.RegisteredClaims
}

// Verify checks token and returns its claims, or an *Error that says why
// it is refused. ctx bounds the requests it may make (discovery, keys, a
// status list, verify).
func (v *Verifier) Verify(ctx context.Context, token string) (*Claims, error) {
	c, err := v.verifyOffline(ctx, token)
	if err != nil {
		return nil, err
	}
	if v.cfg.Online {
		if err := v.verifyOnline(ctx, token, c); err != nil {
			return nil, err
		}
		return c, nil
	}
	if c.Status == nil {
		if v.cfg.RequireStatus {
			return nil, refuse(ReasonInvalid, "the token has no status claim", nil)
		}
		return c, nil
	}
	if err := v.lists.check(ctx, c); err != nil {
		return nil, err
	}
	return c, nil
}

// verifyOffline checks everything but the status: the signature, the
// header, the claims.
func (v *Verifier) verifyOffline(ctx context.Context, token string) (*Claims, error) {
	if len(token) > MaxTokenBytes {
		return nil, refuse(ReasonInvalid, "longer than MaxTokenBytes", nil)
	}
	sum := sha256.Sum256([]byte(token))
	if c, ok := v.tokens.get(ctx, &v.keys, sum); ok {
		// Every rule but exp held when it was checked, and holds for good.
		if !v.now().Before(c.ExpiresAt.Add(v.leeway)) {
			return nil, refuse(ReasonExpired, "", nil)
		}
		return c, nil
	}
	var tc tokenClaims
	var signedWith publicKey
	t, err := v.parser.ParseWithClaims(token, &tc, func(t *jwt.Token) (any, error) {
		pk, err := v.keys.key(ctx, t)
		signedWith.key = pk
		return pk, err
	})
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			return nil, e
		}
		return nil, refuse(ReasonInvalid, "signature or format", err)
	}
	if !hasType(t.Header["typ"], "at+jwt") {
		return nil, refuse(ReasonInvalid, "typ is not at+jwt", nil)
	}
	now := v.now()
	if tc.Issuer != v.cfg.Issuer {
		return nil, refuse(ReasonInvalid, "another issuer", nil)
	}
	if tc.IssuedAt == nil || tc.ExpiresAt == nil {
		return nil, refuse(ReasonInvalid, "iat or exp missing", nil)
	}
	if tc.IssuedAt.After(now.Add(v.leeway)) || (tc.NotBefore != nil && tc.NotBefore.After(now.Add(v.leeway))) {
		return nil, refuse(ReasonInvalid, "iat or nbf in the future", nil)
	}
	c := &Claims{
		TokenID: tc.ID, KeyID: tc.Subject, Issuer: tc.Issuer, Scopes: strings.Fields(tc.Scope),
		OrganizationID: tc.OrgID, OwnerID: tc.OwnerID, IssuedAt: tc.IssuedAt.Time, ExpiresAt: tc.ExpiresAt.Time,
	}
	if len(tc.Audience) == 1 {
		c.Audience = tc.Audience[0]
	}
	if tc.Status != nil {
		// An index beyond the longest list accepted (1 bit a status) is
		// in none; the bound also keeps idx × bits within an int.
		sl := tc.Status.StatusList
		if sl == nil || sl.Idx == nil || *sl.Idx < 0 || *sl.Idx >= maxListBytes*8 || !v.lists.allowedURI(sl.URI) {
			return nil, refuse(ReasonInvalid, "malformed status claim", nil)
		}
		c.Status = &StatusRef{Index: int(*sl.Idx), URI: sl.URI}
	}
	if !now.Before(tc.ExpiresAt.Add(v.leeway)) {
		return nil, refuse(ReasonExpired, "", nil)
	}
	if len(tc.Audience) != 1 || tc.Audience[0] != v.cfg.Audience {
		return nil, refuse(ReasonWrongAudience, "", nil)
	}
	kid, _ := t.Header["kid"].(string)
	v.tokens.put(sum, c, kid, signedWith.key, now)
	return c, nil
}

// hasType reports whether a typ header names the media type want
// ("at+jwt" or "application/at+jwt"), compared without regard to case
// (RFC 7515, section 4.1.9).
func hasType(typ any, want string) bool {
	s, _ := typ.(string)
	return strings.EqualFold(s, want) || strings.EqualFold(s, "application/"+want)
}

// once is a lazily filled value that is tried again after a failure.
type once[T any] struct {
	mu  sync.Mutex
	val T
	ok  bool
}

func (o *once[T]) get(fill func() (T, error)) (T, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ok {
		return o.val, nil
	}
	val, err := fill()
	if err != nil {
		return val, err
	}
	o.val, o.ok = val, true
	return val, nil
}

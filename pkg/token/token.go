// Package token signs and verifies Latchkey's access tokens: JWTs in the
// JWT profile for OAuth 2.0 access tokens (RFC 9068) signed with one
// configured algorithm: Ed25519 (JWS alg "EdDSA"), the default, or RS256
// for gateways that take only RSA. Verification accepts that one
// algorithm, keys of it it knows by kid, and the typ at+jwt, and nothing
// else: no "none", no HMAC, never the algorithm a token's header names.
// It accepts only tokens of the form Latchkey signs: no critical header
// extensions, time claims that are JSON integers, none of them in the
// future beyond ClockSkew.
//
// It wraps github.com/golang-jwt/jwt/v5, a well-kept library that verifies
// the signature before it looks at any claim, so an expired-but-forged
// token is reported invalid, never expired; its validator then checks exp,
// nbf, iss and, when the Parser has one, aud.
package token

import (
	"bytes"
	"compress/zlib"
	"context"
	"crypto"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"latchkey/pkg/account"
)

// MaxTokenBytes is the length beyond which a string is refused as a token
// before any of it is decoded, and Sign refuses to sign one. The longest
// token the limits allow, with 32 scopes of the longest form, 8
// ancestors, an organization, an audience of 256 characters, an owner id
// of 256 four-byte characters, an issuer of account.MaxIssuerLength, irv
// and the status claim (whose uri repeats the issuer), is 8,268 bytes with
// EdDSA, 8,524 with RS256 and 8,865 with the largest RSA key allowed:
// TestSigner_Longest. 9 KiB still passes API Gateway's 10 KiB of headers.
const MaxTokenBytes = 9 << 10

// ClockSkew is how far in the future a token's iat may lie: the clocks of
// the instance that signed it and the one that checks it may differ by
// that much.
const ClockSkew = 30 * time.Second

// Type is the JWS typ header of Latchkey's access tokens: the JWT profile
// for OAuth 2.0 access tokens (RFC 9068, section 2.1), so that a token
// cannot be taken for another kind of JWT (an OpenID Connect ID token).
const Type = "at+jwt"

// claims is the JWT payload as signed: the claims of RFC 9068, section 2.2
// (iss, exp, aud, sub, client_id, iat, jti, and scope, space-separated as
// in OAuth 2.0, RFC 6749 section 3.3), and anc. sub and client_id are both
// the API key's id: the key is the client, and it acts for itself. aud is
// one audience, a single string as RFC 7519 (section 4.1.3) allows; this
// Audience hides the embedded one's "aud" (encoding/json takes the
// shallower field), which the library would write as an array. anc lists
// the ids of the keys above the token's key (sub), root first, omitted when
// there are none: verify reads them with the key, in one round trip. The
// store checks the key's own list, so anc is a hint, never trusted to
// decide validity. org_id and owner_id are the API key's organization and
// owner, when it has them, so that a resource server can authorize per
// tenant from the token alone; verify reads the organization with the key,
// as it reads the ancestors. irv, a private claim, true on every token
// issued since revocations are recorded on the key (unless
// EnvInlineRevocation is false), says that the token's
// revocation is read with its key (account.TokenClaims.InlineRevocation):
// signed, so a client cannot take it off to make a verify skip the place
// its revocation is. sec, a private claim on console sessions only, marks
// the key's secret that signed in (account.TokenClaims.Secret).
type claims struct {
	Scope     string   `json:"scope"`
	ClientID  string   `json:"client_id"`
	Audience  string   `json:"aud"`
	Ancestors []string `json:"anc,omitempty"`
	OrgID     string   `json:"org_id,omitempty"`
	OwnerID   string   `json:"owner_id,omitempty"`
	Inline    bool     `json:"irv,omitempty"`
	Secret    string   `json:"sec,omitempty"`
	// Status is the token's entry in a status list
	// (draft-ietf-oauth-status-list, section 6.1).
	Status *statusClaim `json:"status,omitempty"`
	jwt.RegisteredClaims
}

// statusClaim is the claim status of a Referenced Token.
type statusClaim struct {
	StatusList struct {
		Index *int64 `json:"idx"`
		URI   string `json:"uri"`
	} `json:"status_list"`
}

// parsedClaims is the JWT payload as read. Its time claims are strict:
// jwt.NumericDate also takes a string that holds a number ("exp":"123"),
// which RFC 7519 (section 2, NumericDate) does not allow. Its methods give
// the library's validator these strict values (it implements jwt.Claims).
type parsedClaims struct {
	ID       string `json:"jti"`
	Subject  string `json:"sub"`
	ClientID string `json:"client_id"`
	Issuer   string `json:"iss"`
	// Audience takes a string or an array (RFC 7519, section 4.1.3).
	Audience  jwt.ClaimStrings `json:"aud"`
	Scope     string           `json:"scope"`
	Ancestors []string         `json:"anc"`
	OrgID     string           `json:"org_id"`
	OwnerID   string           `json:"owner_id"`
	Inline    bool             `json:"irv"`
	Secret    string           `json:"sec"`
	Status    *statusClaim     `json:"status"`
	IssuedAt  unixTime         `json:"iat"`
	ExpiresAt unixTime         `json:"exp"`
	NotBefore unixTime         `json:"nbf"`
}

var _ jwt.Claims = (*parsedClaims)(nil)

func (c *parsedClaims) GetExpirationTime() (*jwt.NumericDate, error) {
	return c.ExpiresAt.numericDate(), nil
}

func (c *parsedClaims) GetIssuedAt() (*jwt.NumericDate, error) {
	return c.IssuedAt.numericDate(), nil
}

func (c *parsedClaims) GetNotBefore() (*jwt.NumericDate, error) {
	return c.NotBefore.numericDate(), nil
}

func (c *parsedClaims) GetIssuer() (string, error) { return c.Issuer, nil }

func (c *parsedClaims) GetSubject() (string, error) { return c.Subject, nil }

func (c *parsedClaims) GetAudience() (jwt.ClaimStrings, error) { return c.Audience, nil }

// unixTime is a NumericDate claim that must be a JSON integer when present.
type unixTime struct {
	present bool
	t       time.Time
}

var errNotInteger = errors.New("token: a time claim is not an integer")

// UnmarshalJSON takes an integer number of seconds and nothing else: not a
// string, a boolean, null, a fraction or an exponent. Latchkey signs whole
// seconds.
func (u *unixTime) UnmarshalJSON(b []byte) error {
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return errNotInteger
	}
	u.present, u.t = true, time.Unix(n, 0).UTC()
	return nil
}

// numericDate is u for the library's validator: nil when absent.
func (u unixTime) numericDate() *jwt.NumericDate {
	if !u.present {
		return nil
	}
	return jwt.NewNumericDate(u.t)
}

// Signer issues access tokens with one private key.
type Signer struct {
	key    crypto.Signer
	alg    Algorithm
	kid    string
	issuer string
}

var _ account.TokenSigner = (*Signer)(nil)

// NewSigner returns a Signer for priv, naming issuer in the iss claim. It
// signs with the algorithm of the key: EdDSA for an ed25519.PrivateKey,
// RS256 for an *rsa.PrivateKey. It panics on a key of another type, which
// is a wiring bug.
func NewSigner(priv crypto.Signer, issuer string) *Signer {
	alg, ok := AlgorithmOf(priv)
	if !ok {
		panic(fmt.Sprintf("token: NewSigner with a %T", priv))
	}
	return &Signer{key: priv, alg: alg, kid: KeyID(priv.Public()), issuer: issuer}
}

// KeyID returns the kid of the signing key.
func (s *Signer) KeyID() string { return s.kid }

// Algorithm returns the algorithm the Signer signs with.
func (s *Signer) Algorithm() Algorithm { return s.alg }

// PublicKey returns the public half of the signing key: an
// ed25519.PublicKey or an *rsa.PublicKey.
func (s *Signer) PublicKey() crypto.PublicKey { return s.key.Public() }

// Issuer returns the iss of the tokens it signs.
func (s *Signer) Issuer() string { return s.issuer }

// Sign returns the compact JWS of c, an RFC 9068 access token: typ at+jwt,
// iss the signer's issuer (c.Issuer is ignored), sub and client_id
// c.KeyID, aud c.Audience, which must not be empty. It returns
// ErrTokenTooLong rather than a token longer than MaxTokenBytes, which
// every verifier refuses.
func (s *Signer) Sign(c account.TokenClaims) (string, error) {
	if c.Audience == "" {
		return "", errors.New("token: an access token needs an audience")
	}
	// The library's SigningString would encode with json.Marshal, which
	// writes <, > and & as \u003c, \u003e and \u0026: six bytes for one, in
	// an owner id or an audience that a client chose. Escaping HTML has no
	// purpose in a JWT; without it every claim costs what its characters
	// do, and the longest token the limits allow fits MaxTokenBytes.
	header, err := marshalPlain(map[string]string{"alg": string(s.alg), "kid": s.kid, "typ": Type})
	if err != nil {
		return "", err
	}
	var status *statusClaim
	if c.Status != nil {
		status = &statusClaim{}
		status.StatusList.Index = &c.Status.Index
		status.StatusList.URI = account.StatusListURI(s.issuer, c.Status.List)
	}
	payload, err := marshalPlain(claims{
		Status:    status,
		Scope:     strings.Join(c.Scopes, " "),
		ClientID:  c.KeyID,
		Audience:  c.Audience,
		Ancestors: c.KeyAncestors,
		OrgID:     c.OrganizationID,
		OwnerID:   c.OwnerID,
		Inline:    c.InlineRevocation,
		Secret:    c.Secret,
		RegisteredClaims: jwt.RegisteredClaims{
			ID:        c.ID,
			Subject:   c.KeyID,
			Issuer:    s.issuer,
			IssuedAt:  jwt.NewNumericDate(c.IssuedAt),
			ExpiresAt: jwt.NewNumericDate(c.ExpiresAt),
		},
	})
	if err != nil {
		return "", err
	}
	enc := base64.RawURLEncoding
	input := enc.EncodeToString(header) + "." + enc.EncodeToString(payload)
	sig, err := s.alg.method().Sign(input, s.key)
	if err != nil {
		return "", err
	}
	tok := input + "." + enc.EncodeToString(sig)
	if len(tok) > MaxTokenBytes {
		return "", fmt.Errorf("%w: %d bytes", ErrTokenTooLong, len(tok))
	}
	return tok, nil
}

// ErrTokenTooLong is the error of Sign for claims whose token would be
// longer than MaxTokenBytes. The limits on what a token carries (scopes,
// ancestors, audience, owner id, issuer) keep every token below it.
var ErrTokenTooLong = errors.New("token: the token would be longer than MaxTokenBytes")

// marshalPlain is json.Marshal without HTML escaping.
func marshalPlain(v any) ([]byte, error) {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// Parser verifies access tokens against a set of public keys of one
// algorithm, so that a process can check tokens without holding the
// private key, and keys can be rotated by publishing the new one beside the
// old.
type Parser struct {
	keys     map[string]crypto.PublicKey
	alg      Algorithm
	issuer   string
	audience string      // "": any one audience
	jwt      *jwt.Parser // the library's parser, pinned to alg
	cache    *Cache      // nil: every token is checked in full
}

var _ account.TokenParser = (*Parser)(nil)

// NewParser returns a Parser that accepts tokens from issuer signed by any
// of keys, with the algorithm of the keys (see AlgorithmOf) and no other;
// EdDSA when there are none (it then accepts nothing). It panics if the
// keys are of different algorithms or of an unknown type: a wiring bug,
// since a Parser has one algorithm. NewParserFor pins the algorithm.
func NewParser(issuer string, keys ...crypto.PublicKey) *Parser {
	alg := EdDSA
	if len(keys) > 0 {
		alg, _ = AlgorithmOf(keys[0])
	}
	return NewParserFor(alg, issuer, keys...)
}

// NewParserFor returns a Parser that accepts tokens from issuer signed with
// alg by any of keys. It panics if a key is not one of alg's: a wiring bug.
func NewParserFor(alg Algorithm, issuer string, keys ...crypto.PublicKey) *Parser {
	// The library's parser checks the algorithm and the signature; its
	// validator then checks the registered claims at the caller's now (see
	// validate). Strict base64: a token has exactly one encoding, so
	// flipping the unused bits of its last character does not yield a
	// second valid string. Built once: it holds only its options.
	p := &Parser{keys: make(map[string]crypto.PublicKey, len(keys)), alg: alg, issuer: issuer,
		jwt: jwt.NewParser(jwt.WithValidMethods([]string{string(alg)}), jwt.WithoutClaimsValidation(), jwt.WithStrictDecoding())}
	for _, k := range keys {
		if a, ok := AlgorithmOf(k); !ok || a != alg {
			panic(fmt.Sprintf("token: a %s Parser given a %T", alg, k))
		}
		p.keys[KeyID(k)] = k
	}
	return p
}

// Algorithm returns the one algorithm the Parser accepts.
func (p *Parser) Algorithm() Algorithm { return p.alg }

// WithAudience returns a copy of p that accepts only tokens for aud (their
// one audience), checked by the library's validator; a token from p's
// cache, which any Parser may share, is checked against it too. An empty
// aud accepts any one audience, as NewParser does.
func (p *Parser) WithAudience(aud string) *Parser {
	cp := *p
	cp.audience = aud
	return &cp
}

// WithCache returns a copy of p that remembers the tokens it has verified
// in c (see Cache), and skips their signature check until they expire. c
// may be shared with other Parsers: each honours an entry only while it
// holds the key that verified the token and accepts its issuer.
func (p *Parser) WithCache(c *Cache) *Parser {
	cp := *p
	cp.cache = c
	return &cp
}

// errUnknownKid is the error of parse for a token whose kid names none of
// the parser's keys: a KeySet reloads its keys on it. Parse reports it as
// account.ErrTokenInvalid.
var errUnknownKid = errors.New("token: unknown kid")

// Parse verifies token at now, the service's clock. It returns
// account.ErrTokenInvalid, or account.ErrTokenExpired together with the
// claims of a well-signed token whose expiry has passed. Its keys are
// fixed, so it never uses ctx.
//
// A token is invalid, whatever its signature, if it is longer than
// MaxTokenBytes, names a critical header extension (crit), has a typ other
// than at+jwt (RFC 9068, section 4), lacks iat or exp, has a time claim
// that is not an integer, has an nbf after now or an iat more than
// ClockSkew after now, has a client_id other than its sub, or has not
// exactly one audience (the Parser's, if it has one). A Parser without an
// issuer accepts no token.
func (p *Parser) Parse(_ context.Context, token string, now time.Time) (account.TokenClaims, error) {
	tc, err := p.parse(token, now)
	if errors.Is(err, errUnknownKid) {
		err = account.ErrTokenInvalid
	}
	return tc, err
}

// ParseCredential implements account.TokenParser: Parse, and the token's
// audience must be p's issuer, checked by the library's validator (see
// WithAudience). A Parser with an audience of its own keeps it.
func (p *Parser) ParseCredential(ctx context.Context, token string, now time.Time) (account.TokenClaims, error) {
	return p.own().Parse(ctx, token, now)
}

// own returns p for a token presented to its issuer as a credential: with
// the issuer as its audience, unless it has one.
func (p *Parser) own() *Parser {
	if p.audience != "" {
		return p
	}
	return p.WithAudience(p.issuer)
}

// parse is Parse, with errUnknownKid for a token signed with a kid that p
// does not hold. A token found in p's cache is not decoded at all: every
// rule above holds at any time between its check and the token's exp.
func (p *Parser) parse(token string, now time.Time) (account.TokenClaims, error) {
	if len(token) > MaxTokenBytes || p.issuer == "" {
		return account.TokenClaims{}, account.ErrTokenInvalid
	}
	if p.cache != nil {
		if tc, ok := p.cache.get(token, now, p.issuer, p.keys); ok {
			if p.audience != "" && tc.Audience != p.audience {
				return account.TokenClaims{}, account.ErrTokenInvalid
			}
			return tc, nil
		}
	}
	var c parsedClaims
	t, err := p.jwt.ParseWithClaims(token, &c, p.key)
	if errors.Is(err, errUnknownKid) {
		return account.TokenClaims{}, errUnknownKid
	}
	if err != nil || !isAccessTokenType(t.Header["typ"]) {
		return account.TokenClaims{}, account.ErrTokenInvalid
	}
	// Only a token wrong in nothing but its expiry is reported expired:
	// the validator's expiry error is kept aside until every other rule
	// has passed.
	expired, err := p.validate(&c, now)
	if err != nil || !c.IssuedAt.present ||
		!account.ValidID(account.PrefixToken, c.ID) || !account.ValidID(account.PrefixAPIKey, c.Subject) ||
		c.ClientID != c.Subject || len(c.Audience) != 1 || c.Audience[0] == "" ||
		len(c.Ancestors) > account.MaxKeyAncestors ||
		(c.OrgID != "" && !account.ValidID(account.PrefixOrganization, c.OrgID)) ||
		(c.OwnerID != "" && !account.ValidExternalID(c.OwnerID)) {
		return account.TokenClaims{}, account.ErrTokenInvalid
	}
	for _, id := range c.Ancestors {
		if !account.ValidID(account.PrefixAPIKey, id) {
			return account.TokenClaims{}, account.ErrTokenInvalid
		}
	}
	// Latchkey signs an iat of the signing instant: a token issued in the
	// future, beyond the skew between instances, was not issued by this
	// service as it is (RFC 7519, section 4.1.6).
	if c.IssuedAt.t.After(now.Add(ClockSkew)) {
		return account.TokenClaims{}, account.ErrTokenInvalid
	}
	tc := account.TokenClaims{
		ID:             c.ID,
		KeyID:          c.Subject,
		KeyAncestors:   c.Ancestors,
		OrganizationID: c.OrgID,
		OwnerID:        c.OwnerID,
		Issuer:         c.Issuer,
		Audience:       c.Audience[0],
		Scopes:         strings.Fields(c.Scope),
		IssuedAt:       c.IssuedAt.t,
		ExpiresAt:      c.ExpiresAt.t,

		InlineRevocation: c.Inline,
		Secret:           c.Secret,
	}
	if c.Status != nil {
		// A reference this service did not write makes the token invalid:
		// its signature says this service wrote it.
		id, ok := account.StatusListFromURI(c.Issuer, c.Status.StatusList.URI)
		idx := c.Status.StatusList.Index
		if !ok || idx == nil || *idx < 0 || *idx >= account.MaxStatusListSize {
			return account.TokenClaims{}, account.ErrTokenInvalid
		}
		tc.Status = &account.StatusRef{List: id, Index: *idx}
	}
	if expired {
		return tc, account.ErrTokenExpired
	}
	if p.cache != nil {
		kid := t.Header["kid"].(string) // p.key has found a key under it
		p.cache.put(token, kid, p.keys[kid], tc, now)
	}
	return tc, nil
}

// validate checks c's registered claims at now with the library's
// validator: exp required, and passed at now or later (expired reports it,
// with a nil error, when it is the only fault); nbf, when present, not
// after now (Latchkey signs none); iss the Parser's; aud, when the Parser
// has one, the token's. No leeway: the library applies one leeway to exp,
// nbf and iat alike, and Latchkey allows ClockSkew on iat alone (parse
// checks it), never on exp, which would keep a token valid past its
// expiry. The validator is built per call, for the caller's clock.
func (p *Parser) validate(c *parsedClaims, now time.Time) (expired bool, err error) {
	opts := []jwt.ParserOption{jwt.WithTimeFunc(func() time.Time { return now }), jwt.WithExpirationRequired(), jwt.WithIssuer(p.issuer)}
	if p.audience != "" {
		opts = append(opts, jwt.WithAudience(p.audience))
	}
	err = jwt.NewValidator(opts...).Validate(c)
	if err == nil {
		return false, nil
	}
	if all, ok := err.(interface{ Unwrap() []error }); ok && len(all.Unwrap()) == 1 && errors.Is(err, jwt.ErrTokenExpired) {
		return true, nil
	}
	return false, err
}

// isAccessTokenType reports whether a typ header names an RFC 9068 access
// token: "at+jwt", or its full media type "application/at+jwt" (section
// 4), compared without regard to case as media types are (RFC 7515,
// section 4.1.9).
func isAccessTokenType(typ any) bool {
	s, _ := typ.(string)
	return strings.EqualFold(s, Type) || strings.EqualFold(s, "application/"+Type)
}

// key is the jwt.Keyfunc: the public key named by the token's kid. It runs
// before the signature is checked, and refuses any token that lists a
// critical extension: Latchkey understands none, and a recipient that does
// not understand one must refuse the token (RFC 7515, section 4.1.11).
// jwt/v5 ignores crit.
func (p *Parser) key(t *jwt.Token) (any, error) {
	if _, ok := t.Header["crit"]; ok {
		return nil, errors.New("critical header extension")
	}
	kid, _ := t.Header["kid"].(string)
	if k, ok := p.keys[kid]; ok {
		return k, nil
	}
	return nil, errUnknownKid
}

// jwk is one JSON Web Key (RFC 8037 for OKP/Ed25519, RFC 7518 section 6.3
// for RSA).
type jwk struct {
	Kty string `json:"kty"`
	Crv string `json:"crv,omitempty"`
	X   string `json:"x,omitempty"`
	N   string `json:"n,omitempty"`
	E   string `json:"e,omitempty"`
	Kid string `json:"kid"`
	Alg string `json:"alg"`
	Use string `json:"use"`
}

// JWKS returns the JSON Web Key Set of keys, as served at /v1/auth/jwks:
// each key with its kid and its algorithm (alg). It panics on a key of a
// type Latchkey does not sign with.
func JWKS(keys ...crypto.PublicKey) []byte {
	set := struct {
		Keys []jwk `json:"keys"`
	}{Keys: make([]jwk, 0, len(keys))}
	for _, k := range keys {
		set.Keys = append(set.Keys, toJWK(k))
	}
	b, _ := json.Marshal(set) // plain strings: cannot fail
	return b
}

// ParserFromJWKS returns a Parser for the keys of alg in a JSON Web Key Set.
// A key that is neither a valid Ed25519 nor a valid RSA public key (of at
// least MinRSAKeyBits), names an alg other than its type's, or whose kid is
// not its thumbprint fails the whole set, so a tampered set is noticed.
// Valid keys of the other algorithm are left out: the Parser would never
// use them, and the set holds some for a moment after a deployment
// switches algorithms. A set with no key of alg gives a Parser that
// accepts nothing.
func ParserFromJWKS(alg Algorithm, issuer string, set []byte) (*Parser, error) {
	var s struct {
		Keys []jwk `json:"keys"`
	}
	if err := json.Unmarshal(set, &s); err != nil {
		return nil, fmt.Errorf("token: decode JWKS: %w", err)
	}
	if len(s.Keys) == 0 {
		return nil, errors.New("token: JWKS has no keys")
	}
	keys := make([]crypto.PublicKey, 0, len(s.Keys))
	for _, k := range s.Keys {
		pub, a, err := k.publicKey()
		if err != nil {
			return nil, err
		}
		if a == alg {
			keys = append(keys, pub)
		}
	}
	return NewParserFor(alg, issuer, keys...), nil
}

// StatusListType is the typ of a Status List Token
// (draft-ietf-oauth-status-list, section 5.1).
const StatusListType = "statuslist+jwt"

// SignStatusList returns the compact JWS of c, a Status List Token: typ
// statuslist+jwt, the signing key's kid, sub the list's uri, iat, exp, ttl
// in seconds, and status_list with bits and lst, the statuses compressed
// with ZLIB (RFC 1950) at the best compression and base64url-encoded
// without padding (section 4.1).
func (s *Signer) SignStatusList(c account.StatusListClaims) (string, error) {
	lst, err := CompressStatusList(c.List.Statuses)
	if err != nil {
		return "", err
	}
	header, err := marshalPlain(map[string]string{"alg": string(s.alg), "kid": s.kid, "typ": StatusListType})
	if err != nil {
		return "", err
	}
	type statusList struct {
		Bits int    `json:"bits"`
		Lst  string `json:"lst"`
	}
	payload, err := marshalPlain(struct {
		Subject    string     `json:"sub"`
		IssuedAt   int64      `json:"iat"`
		ExpiresAt  int64      `json:"exp"`
		TTL        int64      `json:"ttl"`
		StatusList statusList `json:"status_list"`
	}{c.URI, c.IssuedAt.Unix(), c.ExpiresAt.Unix(), int64(c.TTL / time.Second), statusList{account.StatusBits, lst}})
	if err != nil {
		return "", err
	}
	enc := base64.RawURLEncoding
	input := enc.EncodeToString(header) + "." + enc.EncodeToString(payload)
	sig, err := s.alg.method().Sign(input, s.key)
	if err != nil {
		return "", err
	}
	return input + "." + enc.EncodeToString(sig), nil
}

// CompressStatusList returns lst of the byte array statuses: ZLIB (RFC
// 1950, not a raw DEFLATE stream), base64url without padding.
func CompressStatusList(statuses []byte) (string, error) {
	var b bytes.Buffer
	w, err := zlib.NewWriterLevel(&b, zlib.BestCompression)
	if err != nil {
		return "", err
	}
	if _, err := w.Write(statuses); err != nil {
		return "", err
	}
	if err := w.Close(); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b.Bytes()), nil
}

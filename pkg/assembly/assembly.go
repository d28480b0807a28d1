// Package assembly puts Latchkey together from its parts: the account
// service over a store, the token signer and parser its keys make, the key
// set it publishes, and the HTTP handler over the service. The local
// server, the Lambda functions and the test stack all build theirs with
// New, so they differ only in the parts they hand over, never in how the
// parts are joined.
//
// What outlives an Assembly is a part, passed in: the store, and a
// Verifier (token.KeySet) that keeps its own keys fresh. A Lambda function
// builds a new Assembly when a secret changes; the local server builds one
// for its lifetime.
package assembly

import (
	"context"
	"crypto"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"latchkey/pkg/account"
	"latchkey/pkg/httpapi"
	"latchkey/pkg/logsample"
	"latchkey/pkg/token"
)

// Parts are what a service is built from. The keys decide what it can do:
// with a SigningKey it issues tokens and verifies them with its own public
// keys (the local server, the auth function); without one it only verifies
// them, with a Verifier over the keys that the signing process publishes
// (the organizations and users functions).
type Parts struct {
	// Store persists the domain. Required.
	Store account.Store
	// Usage is the process's tally of usage counts, which outlives an
	// Assembly; nil for one of the service's own.
	Usage *account.UsageTally
	// CursorKey signs list cursors. Required; at least 32 bytes.
	CursorKey []byte
	// Issuer is the iss claim of the tokens signed and accepted.
	Issuer string
	// SigningKey signs access tokens; nil in a process that does not
	// issue them. With an empty Issuer (an auth function before the
	// deployment has recorded one) nothing is signed: the key's tokens are
	// verified and its key set served, and issuance answers 503.
	// An ed25519.PrivateKey or an *rsa.PrivateKey, of Algorithm.
	SigningKey crypto.Signer
	// StatusListTTL is the ttl of the status lists served
	// (STATUS_LIST_TTL); account.DefaultStatusTTL when zero.
	StatusListTTL time.Duration
	// NoInlineRevocation issues tokens without the claim irv
	// (account.Options.NoInlineRevocation): INLINE_REVOCATION=false.
	NoInlineRevocation bool
	// PreviousKeys are accepted beside SigningKey's public key, and
	// published after it: the keys of earlier signing secrets, so that
	// tokens signed before a rotation stay valid until they expire. Keys
	// of Algorithm only.
	PreviousKeys []crypto.PublicKey
	// Algorithm is the one algorithm tokens are signed and accepted with,
	// named by the discovery documents; EdDSA when empty. A SigningKey or
	// PreviousKeys of another algorithm is an error.
	Algorithm token.Algorithm
	// PreviousSealKeys open answers stored for Idempotency-Key under
	// earlier signing keys (SealKey of each), so that they still replay
	// after a rotation. The answers are sealed under SealKey(SigningKey):
	// only a process that holds it (the local server, the auth function)
	// can read or forge them.
	PreviousSealKeys [][]byte
	// Verifier checks tokens when there is no SigningKey. Required then,
	// and ignored otherwise.
	Verifier account.TokenParser
	// TokenCache remembers the tokens the parser made from SigningKey and
	// PreviousKeys has verified (token.Cache); nil for none. It outlives
	// an Assembly: a rebuilt one, after a rotation, honours an entry only
	// while it still holds the key that verified the token. A Verifier
	// brings its own (token.KeySetOptions.Cache).
	TokenCache *token.Cache
	// Now is the service clock; time.Now when nil.
	Now func() time.Time
	// Logger, RequestID and Local go to the handler (httpapi.Config):
	// Local is set by the local server alone.
	Logger    *slog.Logger
	RequestID func(r *http.Request) string
	Local     *httpapi.Local
	// SuccessLog samples the request lines of successes
	// (httpapi.Config.SuccessLog); nil logs them all. It outlives an
	// Assembly, as TokenCache does, so that a rebuild keeps the count.
	SuccessLog *logsample.Sampler
	// Console, when set, builds the console (console.Mount), served beside
	// the auth group's routes: by the local server and the auth function,
	// which issue the console's session tokens. It needs a SigningKey. A
	// func passed in, not an import: html/template costs a binary that
	// links it 3.9 MB (its reflection keeps every exported method), which
	// the organizations and users functions do not carry.
	Console httpapi.MountFunc
	// Audit makes the request lines audit records (httpapi.Config.Audit):
	// the verify function's, which has no access log.
	Audit *httpapi.Audit
}

// Assembly is a service and what serves and publishes it.
type Assembly struct {
	Service *account.Service
	// Signer signs the service's tokens; nil without a SigningKey or an
	// Issuer.
	Signer *token.Signer
	// JWKS is the JSON Web Key Set of the keys that verify the tokens the
	// service signs, current first: what the handler serves at
	// GET /v1/auth/jwks and what the signing Lambda function publishes for
	// the others. Nil without a SigningKey.
	JWKS []byte
	// Config is what Handler builds routers from.
	Config httpapi.Config
}

// New builds the service, its signer and parser, and the handler
// configuration from p.
func New(p Parts) (*Assembly, error) { return build(p, sign) }

// NewVerifier is New for a process that only verifies tokens, with
// p.Verifier, and has no SigningKey: the organizations and users Lambda
// functions. It is New's other entry point so that their binaries link no
// token signer (deploytest's TestBinary_Links).
func NewVerifier(p Parts) (*Assembly, error) {
	if p.SigningKey != nil {
		return nil, errors.New("assembly: NewVerifier with a SigningKey; New builds a signing service")
	}
	return build(p, nil)
}

// build is New with the signing half passed in: sign, reached only
// through New.
func build(p Parts, sign func(*Assembly, Parts, *account.Options) (seal []byte, err error)) (*Assembly, error) {
	a := &Assembly{}
	opts := account.Options{CursorKey: p.CursorKey, Now: p.Now, Parser: p.Verifier, Logger: p.Logger, NoInlineRevocation: p.NoInlineRevocation, Usage: p.Usage}
	if p.Algorithm == "" {
		p.Algorithm = token.EdDSA
	}
	var seal []byte
	if p.SigningKey != nil {
		var err error
		if seal, err = sign(a, p, &opts); err != nil {
			return nil, err
		}
	} else if p.Verifier == nil {
		return nil, errors.New("assembly: a SigningKey or a Verifier is required")
	}
	svc, err := account.NewService(p.Store, opts)
	if err != nil {
		return nil, err
	}
	a.Service = svc
	a.Config = httpapi.Config{Service: svc, StatusListTTL: p.StatusListTTL, SigningAlgorithm: string(p.Algorithm), Logger: p.Logger, SuccessLog: p.SuccessLog, RequestID: p.RequestID, Local: p.Local, Audit: p.Audit}
	if p.Console != nil {
		if p.SigningKey == nil {
			return nil, errors.New("assembly: the console signs its operators in with tokens; it needs a SigningKey")
		}
		a.Config.Mounts = append(a.Config.Mounts, p.Console(svc, p.Logger))
	}
	if seal != nil {
		a.Config.SealKeys = append([][]byte{seal}, p.PreviousSealKeys...)
	}
	if a.JWKS != nil {
		set := a.JWKS
		a.Config.JWKS = func(context.Context) ([]byte, error) { return set, nil }
	}
	return a, nil
}

// sign gives a the signing half of p.SigningKey: the key set, the parser
// of its keys and the signer (with an Issuer); it returns the key's seal
// key.
func sign(a *Assembly, p Parts, opts *account.Options) ([]byte, error) {
	public := append([]crypto.PublicKey{p.SigningKey.Public()}, p.PreviousKeys...)
	for _, k := range public {
		if alg, ok := token.AlgorithmOf(k); !ok || alg != p.Algorithm {
			return nil, fmt.Errorf("assembly: a %T key, and the algorithm is %s", k, p.Algorithm)
		}
	}
	a.JWKS = token.JWKS(public...)
	opts.Parser = token.NewParserFor(p.Algorithm, p.Issuer, public...).WithCache(p.TokenCache)
	if p.Issuer != "" {
		a.Signer = token.NewSigner(p.SigningKey, p.Issuer)
		opts.Signer = a.Signer
	}
	return SealKey(p.SigningKey)
}

// SealKey is the key (httpapi.SealKey) that seals the answers stored for
// Idempotency-Key in a process whose signing key is priv, derived from the
// key's PKCS #8 form: a key of either algorithm, only from its private
// half.
func SealKey(priv crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, fmt.Errorf("assembly: the signing key cannot make a seal key: %w", err)
	}
	return httpapi.SealKey(der), nil
}

// Handler returns the router of the named groups, or of every group when
// none is named (httpapi.New).
func (a *Assembly) Handler(groups ...httpapi.Group) http.Handler {
	return httpapi.New(a.Config, groups...)
}

// Package account is Latchkey's domain: users, organizations, memberships,
// API keys and access tokens, the rules that govern them, and the Store
// interface that persists them. It imports nothing from AWS or net/http.
package account

import (
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Options configure a Service.
type Options struct {
	// CursorKey signs list cursors. Required; at least 32 bytes.
	CursorKey []byte
	// Signer issues access tokens. Nil in processes that do not issue them;
	// IssueToken then fails.
	Signer TokenSigner
	// NoInlineRevocation issues tokens without InlineRevocation even
	// while the stored Formats put revocations on the key in force: each
	// is then revoked and verified as before the claim existed. Verify and
	// revocation follow each token's claim and the Formats whatever this
	// says. No upgrade needs it (docs/deploying.md, "Formats in force").
	NoInlineRevocation bool
	// Parser checks access tokens. Required.
	Parser TokenParser
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Logger receives what the service does besides the request it serves
	// and does not let fail it: a last use of an API key it could not
	// record. Nil discards it.
	Logger *slog.Logger
	// Usage is the process's tally of usage counts (analytics.go); nil
	// for one of the service's own, which flushes only when asked.
	Usage *UsageTally
}

// Service carries out every operation of the API for an authenticated
// principal. Each method checks the principal's scope first, then validates
// its input, then calls the store.
type Service struct {
	store    Store
	signer   TokenSigner
	inline   bool // TokenClaims.InlineRevocation of the tokens issued
	parser   TokenParser
	verifier *TokenVerifier
	cursors  cursorCodec
	now      func() time.Time
	uses     keyUses
	statuses *statusAllocator
	log      *slog.Logger
}

// NewService returns a Service over store.
func NewService(store Store, opts Options) (*Service, error) {
	if len(opts.CursorKey) < 32 {
		return nil, errors.New("account: cursor key must be at least 32 bytes")
	}
	if opts.Parser == nil {
		return nil, errors.New("account: a token parser is required")
	}
	if opts.Signer != nil {
		if err := CheckIssuer(opts.Signer.Issuer()); err != nil {
			return nil, fmt.Errorf("account: %w", err)
		}
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	log := opts.Logger
	if log == nil {
		log = discardLogger
	}
	verifier := NewTokenVerifier(store, opts.Parser, now)
	if opts.Usage != nil {
		verifier.UseTally(opts.Usage)
	}
	return &Service{
		store:    store,
		signer:   opts.Signer,
		inline:   !opts.NoInlineRevocation,
		parser:   opts.Parser,
		verifier: verifier,
		cursors:  cursorCodec{key: opts.CursorKey},
		now:      func() time.Time { return now().UTC().Truncate(time.Millisecond) },
		statuses: &statusAllocator{store: store},
		log:      log,
	}, nil
}

// Issuer returns the issuer identifier of the tokens the service issues
// (the signer's), "" in a process that does not issue them.
func (s *Service) Issuer() string {
	if s.signer == nil {
		return ""
	}
	return s.signer.Issuer()
}

// Now returns the service clock's current time.
func (s *Service) Now() time.Time { return s.now() }

// storeErr passes the store's domain errors through and wraps anything else
// as internal, so that no store message reaches a client.
func storeErr(err error) error {
	var e *Error
	if err == nil || errors.As(err, &e) {
		return err
	}
	return Internal(err)
}

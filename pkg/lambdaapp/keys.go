package lambdaapp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"latchkey/pkg/account"
	"latchkey/pkg/token"
)

// PublicKeyStore holds the JSON Web Key Set that the auth function publishes
// for the others: the only way the organizations and users functions learn
// the public key, since they may not read the signing secret.
// dynamostore.Store implements it.
type PublicKeyStore interface {
	// PutPublicKeys replaces the published key set, unless that was
	// derived from a newer signing secret version than version (the
	// version's creation time): publication is monotonic, so that an auth
	// instance that read the secret just before a rotation cannot put the
	// old keys back, which would make the other functions refuse the new
	// tokens until their next refresh. Keeping the newer set is not an error.
	PutPublicKeys(ctx context.Context, jwks []byte, version time.Time) error
	// PublicKeys returns the published key set; account.CodeNotFound before
	// the auth function has ever started.
	PublicKeys(ctx context.Context) ([]byte, error)
}

// unknownKidRefresh is the least time between two reloads of the key set
// caused by a token with an unknown kid. A rotation makes the auth function
// publish a new key before it signs with it, so the first token signed with
// the new key triggers one reload; a flood of forged kids costs at most one
// table read per container per interval.
const unknownKidRefresh = 10 * time.Second

// jwksParser is the account.TokenParser of the functions that do not sign:
// a token.Parser over the key set read from the table, reloaded every
// refresh interval and when a token names a kid it does not know.
type jwksParser struct {
	issuer   string
	keys     PublicKeyStore
	logger   *slog.Logger
	now      func() time.Time
	interval time.Duration

	state atomic.Pointer[parserState]
	// mu serialises reloads; Parse never waits on it for a known kid.
	mu             sync.Mutex
	lastUnknownKid time.Time
}

type parserState struct {
	parser    *token.Parser
	kids      map[string]bool
	fetchedAt time.Time
}

var _ account.TokenParser = (*jwksParser)(nil)

func newJWKSParser(ctx context.Context, issuer string, keys PublicKeyStore, logger *slog.Logger, now func() time.Time, interval time.Duration) (*jwksParser, error) {
	p := &jwksParser{issuer: issuer, keys: keys, logger: logger, now: now, interval: interval}
	if err := p.reload(ctx); err != nil {
		return nil, err
	}
	return p, nil
}

// reload reads the key set. Before the auth function has published one
// there is none; then no token is valid, which is true: none was issued.
func (p *jwksParser) reload(ctx context.Context) error {
	set, err := p.keys.PublicKeys(ctx)
	switch {
	case account.IsCode(err, account.CodeNotFound):
		p.logger.InfoContext(ctx, "no public keys published yet; tokens are refused until the auth function starts")
		p.state.Store(&parserState{parser: token.NewParser(p.issuer), kids: map[string]bool{}, fetchedAt: p.now()})
		return nil
	case err != nil:
		return err
	}
	parser, err := token.ParserFromJWKS(p.issuer, set)
	if err != nil {
		return err
	}
	p.state.Store(&parserState{parser: parser, kids: kidsOf(set), fetchedAt: p.now()})
	return nil
}

// refreshIfStale reloads the key set when it is older than the interval.
// A failure keeps the keys in use and is logged: verifying with a key set a
// few minutes old is better than refusing every token.
func (p *jwksParser) refreshIfStale(ctx context.Context) {
	if p.now().Sub(p.state.Load().fetchedAt) < p.interval || !p.mu.TryLock() {
		return
	}
	defer p.mu.Unlock()
	if err := p.reload(ctx); err != nil {
		p.logger.WarnContext(ctx, "public key refresh failed; keeping the keys in use", "error", err.Error())
		// Try again after the unknown-kid interval rather than on every request.
		st := *p.state.Load()
		st.fetchedAt = p.now().Add(unknownKidRefresh - p.interval)
		p.state.Store(&st)
	}
}

// Parse implements account.TokenParser. ctx is the request's, so that the
// lines a reload logs carry its request id.
func (p *jwksParser) Parse(ctx context.Context, tok string, now time.Time) (account.TokenClaims, error) {
	st := p.state.Load()
	if kid := kidOf(tok); kid != "" && !st.kids[kid] && p.mayReloadForUnknownKid() {
		// The reload serves every later request too, so the client that
		// triggered it must not cancel it by going away; it keeps the
		// request's values (the request id) and its own deadline.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		if err := p.reload(rctx); err != nil {
			p.logger.WarnContext(rctx, "public key reload for an unknown kid failed", "error", err.Error())
		}
		cancel()
		p.mu.Unlock()
		st = p.state.Load()
	}
	return st.parser.Parse(ctx, tok, now)
}

// mayReloadForUnknownKid takes mu (the caller unlocks) if a reload for an
// unknown kid is due.
func (p *jwksParser) mayReloadForUnknownKid() bool {
	p.mu.Lock()
	if p.now().Sub(p.lastUnknownKid) < unknownKidRefresh {
		p.mu.Unlock()
		return false
	}
	p.lastUnknownKid = p.now()
	return true
}

// kidOf returns the kid in a compact JWS header, or "" if tok is not one.
// Only the header is decoded; the signature is checked by token.Parser.
func kidOf(tok string) string {
	header, _, ok := strings.Cut(tok, ".")
	if !ok {
		return ""
	}
	raw, err := base64.RawURLEncoding.DecodeString(header)
	if err != nil {
		return ""
	}
	var h struct {
		Kid string `json:"kid"`
	}
	if json.Unmarshal(raw, &h) != nil {
		return ""
	}
	return h.Kid
}

// kidsOf returns the kids of a JSON Web Key Set.
func kidsOf(set []byte) map[string]bool {
	var s struct {
		Keys []struct {
			Kid string `json:"kid"`
		} `json:"keys"`
	}
	kids := map[string]bool{}
	if json.Unmarshal(set, &s) == nil {
		for _, k := range s.Keys {
			kids[k.Kid] = true
		}
	}
	return kids
}

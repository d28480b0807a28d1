package token

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"latchkey/pkg/account"
)

// KeySource reads what the issuing service publishes for the processes
// that verify its tokens without its private key: the only way a process
// that may not read the signing secret (the organizations and users
// functions, the gateway authorizer) learns the public keys, and, in a
// deployment whose issuer is known only once it is deployed, the issuer.
// tablestore.Store implements it.
type KeySource interface {
	// Published returns the JSON Web Key Set of the public keys (nil until
	// one is published) and the issuer identifier the deployment recorded
	// ("" until one is), in one read; account.CodeNotFound when neither
	// has been published.
	Published(ctx context.Context) (jwks []byte, issuer string, err error)
}

// UnknownKidReloadInterval is the least time between two reloads of a
// KeySet caused by a token with an unknown kid. A rotation makes the issuer
// publish a new key before it signs with it, so the first token signed with
// the new key triggers one reload; a flood of forged kids costs at most one
// read of the source per process per interval.
const UnknownKidReloadInterval = 10 * time.Second

// KeySetOptions tune a KeySet. The zero value is usable.
type KeySetOptions struct {
	// Logger; slog.Default() when nil.
	Logger *slog.Logger
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// RefreshInterval is the age after which RefreshIfStale reloads the
	// set; DefaultKeySetRefresh when zero.
	RefreshInterval time.Duration
	// Algorithm is the one algorithm tokens are accepted with, the
	// deployment's; EdDSA when empty. Published keys of another algorithm
	// are ignored.
	Algorithm Algorithm
	// Cache, when not nil, remembers verified tokens across reloads; an
	// entry is honoured only while the current set holds the key that
	// verified its token and accepts its issuer (see Cache).
	Cache *Cache
}

// DefaultKeySetRefresh is the RefreshInterval of a KeySet when none is set.
const DefaultKeySetRefresh = 5 * time.Minute

// KeySet is an account.TokenParser over the key set read from a KeySource:
// a Parser (the configured algorithm only, known kids only) rebuilt from the source every
// refresh interval, and when a token names a kid it does not know. Its
// issuer is the one it was given, or, if none, the one the source records.
type KeySet struct {
	alg      Algorithm
	issuer   string
	src      KeySource
	logger   *slog.Logger
	now      func() time.Time
	interval time.Duration
	cache    *Cache

	state atomic.Pointer[keySetState]
	// mu serialises reloads; Parse never waits on it for a known kid.
	mu             sync.Mutex
	lastUnknownKid time.Time
}

type keySetState struct {
	parser    *Parser
	issuer    string
	fetchedAt time.Time
}

var _ account.TokenParser = (*KeySet)(nil)

// NewKeySet reads the key set from src once and returns a KeySet that
// accepts tokens from issuer signed by its keys; with an empty issuer, from
// the issuer src records. An error reading or decoding the set is
// returned; a set or issuer not yet published is not an error (see reload).
func NewKeySet(ctx context.Context, issuer string, src KeySource, opts KeySetOptions) (*KeySet, error) {
	k := &KeySet{alg: opts.Algorithm, issuer: issuer, src: src, logger: opts.Logger, now: opts.Now, interval: opts.RefreshInterval, cache: opts.Cache}
	if k.alg == "" {
		k.alg = EdDSA
	}
	if k.logger == nil {
		k.logger = slog.Default()
	}
	if k.now == nil {
		k.now = time.Now
	}
	if k.interval <= 0 {
		k.interval = DefaultKeySetRefresh
	}
	if err := k.reload(ctx); err != nil {
		return nil, err
	}
	return k, nil
}

// reload reads the key set. Before the issuer has published one, or, when
// the issuer comes from the source, before the deployment has recorded it,
// no token is valid, which is true: none was issued.
func (k *KeySet) reload(ctx context.Context) error {
	set, recorded, err := k.src.Published(ctx)
	if err != nil && !account.IsCode(err, account.CodeNotFound) {
		return err
	}
	issuer := k.issuer
	if issuer == "" {
		issuer = recorded
	}
	switch {
	case set == nil:
		k.logger.InfoContext(ctx, "no public keys published yet; tokens are refused until the auth function starts")
	case issuer == "":
		k.logger.InfoContext(ctx, "no issuer recorded yet; tokens are refused until the deployment records it")
	}
	if set == nil || issuer == "" {
		k.state.Store(&keySetState{parser: NewParserFor(k.alg, issuer).WithCache(k.cache), issuer: issuer, fetchedAt: k.now()})
		return nil
	}
	parser, err := ParserFromJWKS(k.alg, issuer, set)
	if err != nil {
		return err
	}
	k.state.Store(&keySetState{parser: parser.WithCache(k.cache), issuer: issuer, fetchedAt: k.now()})
	return nil
}

// Issuer returns the issuer whose tokens the set accepts: the one it was
// given, or the one the source recorded at the last reload; "" while the
// source has recorded none.
func (k *KeySet) Issuer() string { return k.state.Load().issuer }

// Refresh reloads the set now, as after the deployment has recorded a new
// issuer. On an error the set in use is kept.
func (k *KeySet) Refresh(ctx context.Context) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.reload(ctx)
}

// RefreshIfStale reloads the key set when it is older than the refresh
// interval, or than UnknownKidReloadInterval while it has no issuer (a
// deployment records it moments after the functions start). A failure
// keeps the keys in use and is logged: verifying with a key set a few
// minutes old is better than refusing every token. A Lambda calls it on the
// request path, because its background goroutines are frozen between
// invocations.
func (k *KeySet) RefreshIfStale(ctx context.Context) {
	st := k.state.Load()
	interval := k.interval
	if st.issuer == "" {
		interval = min(interval, UnknownKidReloadInterval)
	}
	if k.now().Sub(st.fetchedAt) < interval || !k.mu.TryLock() {
		return
	}
	defer k.mu.Unlock()
	if err := k.reload(ctx); err != nil {
		k.logger.WarnContext(ctx, "public key refresh failed; keeping the keys in use", "error", err.Error())
		// Try again after the unknown-kid interval rather than on every request.
		st := *k.state.Load()
		st.fetchedAt = k.now().Add(UnknownKidReloadInterval - k.interval)
		k.state.Store(&st)
	}
}

// Parse implements account.TokenParser. ctx is the request's, so that the
// lines a reload logs carry its request id. The token is decoded once: only
// a token whose kid the current set lacks is parsed again, after a reload.
func (k *KeySet) Parse(ctx context.Context, tok string, now time.Time) (account.TokenClaims, error) {
	return k.parse(ctx, tok, now, func(p *Parser) *Parser { return p })
}

// ParseCredential implements account.TokenParser: Parse, with the issuer
// of the current set as the audience the token must have.
func (k *KeySet) ParseCredential(ctx context.Context, tok string, now time.Time) (account.TokenClaims, error) {
	return k.parse(ctx, tok, now, (*Parser).own)
}

// parse is Parse with the Parser of the current set as use returns it.
func (k *KeySet) parse(ctx context.Context, tok string, now time.Time, use func(*Parser) *Parser) (account.TokenClaims, error) {
	tc, err := use(k.state.Load().parser).parse(tok, now)
	if errors.Is(err, errUnknownKid) && k.mayReloadForUnknownKid() {
		// The reload serves every later request too, so the client that
		// triggered it must not cancel it by going away; it keeps the
		// request's values (the request id) and its own deadline.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		if err := k.reload(rctx); err != nil {
			k.logger.WarnContext(rctx, "public key reload for an unknown kid failed", "error", err.Error())
		}
		cancel()
		k.mu.Unlock()
		tc, err = use(k.state.Load().parser).parse(tok, now)
	}
	if errors.Is(err, errUnknownKid) {
		err = account.ErrTokenInvalid
	}
	return tc, err
}

// mayReloadForUnknownKid takes mu (the caller unlocks) if a reload for an
// unknown kid is due.
func (k *KeySet) mayReloadForUnknownKid() bool {
	k.mu.Lock()
	if k.now().Sub(k.lastUnknownKid) < UnknownKidReloadInterval {
		k.mu.Unlock()
		return false
	}
	k.lastUnknownKid = k.now()
	return true
}

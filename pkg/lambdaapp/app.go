// Package lambdaapp is the App of Latchkey's three HTTP API functions
// (auth, organizations, users): configuration from the environment, the
// secrets, and the keys they make, from which package assembly builds the
// account service and the http.Handler of the function's endpoint group,
// as it does the local server's. Each function's main wires its own
// (functions/*/main.go): FromEnv, then NewSigning (auth) or NewVerifying
// (the others), served through aws-lambda-go-api-proxy's httpadapter.NewV2.
// The two constructors are two entry points so that a binary links only
// its half: the organizations and users functions link no token signer and
// no bootstrap (TestBinary_Links). The events only auth takes besides HTTP
// (CloudFormation custom resources, the bootstrap invocation) are package
// authevents'; the authorizer and the publisher have their own packages,
// authorizerapp and publisherapp, and share only lambdaenv with these.
//
// Which function reads and writes what:
//
//   - auth reads the signing key secret (it alone issues tokens), derives
//     the Ed25519 key, and publishes the public keys (current and, after a
//     rotation, previous) as a JWKS item in the table. It alone reads the
//     bootstrap admin API key secret, and it reads the probe key's (which
//     the canary and the probe use), and makes sure those keys exist
//     (EnsureBootstrapKey, EnsureProbeKey): it is the only function that
//     may write the items that decide which credentials are valid (public
//     keys, API keys and their hash items, token records, revocation
//     entries), and template.yaml denies those writes to the other two
//     roles, since a role that could write the public key item could mint
//     any token.
//   - organizations and users never see the private key or the admin key:
//     they verify tokens with a token.KeySet over the JWKS read from the
//     table, reloaded every refresh interval and whenever a token names a
//     kid they do not know, and API keys, the admin key included, by
//     reading the table.
//   - all three read the cursor key secret, because every function serves a
//     list.
//
// So that the first request after a deploy works whichever function it
// reaches, the template's Bootstrap custom resource invokes auth at deploy
// time (authevents.Handler, then Bootstrap) and the other two functions are created
// only after it has succeeded; auth also does the same work at its own
// start.
//
// Secrets are refreshed on the request path every secrets.DefaultRefreshInterval;
// when one changes, the service and handler are built again (the store and
// the token.KeySet outlive them) and swapped in, so a rotation needs no
// redeploy.
package lambdaapp

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/awslabs/aws-lambda-go-api-proxy/core"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"

	"latchkey/pkg/account"
	"latchkey/pkg/assembly"
	"latchkey/pkg/httpapi"
	"latchkey/pkg/lambdaapp/lambdaenv"
	"latchkey/pkg/logsample"
	"latchkey/pkg/secrets"
	"latchkey/pkg/token"
	"latchkey/pkg/version"
)

// Handler serves an API Gateway HTTP API (payload format 2.0) event: the
// request in, the response out.
type Handler func(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)

// Deps are the clients a function is built from. FromEnv builds them from
// the AWS configuration; tests pass DynamoDB Local or bbolt, and moto or a fake.
type Deps struct {
	// Store persists the domain. Required.
	Store account.Store
	// Keys holds the published JWKS. Required.
	Keys PublicKeyStore
	// Secrets reads Secrets Manager. Required.
	Secrets secrets.Client
	// Logger; slog.Default() when nil.
	Logger *slog.Logger
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// RefreshInterval of secrets and public keys;
	// secrets.DefaultRefreshInterval when zero.
	RefreshInterval time.Duration
}

// App is one function's http.Handler, with its keys kept fresh.
type App struct {
	cfg  Config
	deps Deps
	// published reads the public keys and the issuer from the table: the
	// token parser of the organizations and users functions, and the
	// source of the issuer unless ISSUER configures one. Nil in auth with
	// a configured issuer: it parses with its own keys.
	published *token.KeySet
	// tokens remembers verified tokens for the life of the instance, across
	// key reloads and rebuilds: each parser honours an entry only while it
	// holds the key that verified the token and accepts its issuer.
	tokens *token.Cache
	// successLog samples the request lines of successes, across rebuilds.
	successLog *logsample.Sampler
	// usage holds the instance's usage counts, across rebuilds, until a
	// flush: in the background once the interval has passed, and when
	// Lambda stops the instance (FlushUsage).
	usage *account.UsageTally
	// unusedCursorKey is the cursor key of a function that serves no list
	// (verify): the service requires one, and the function makes and reads
	// no cursor, so a random key that dies with the process stands in for
	// the secret its role may not read.
	unusedCursorKey []byte
	interval        time.Duration
	lambda          Handler
	// build is buildSigning (auth) or buildVerifying (the others), set by
	// the constructor, so that a binary links only the one it calls.
	build func(ctx context.Context, cache *secrets.Cache, prev *built) (*built, error)

	current atomic.Pointer[built]
	mu      sync.Mutex     // serialises rebuilds; guards cache and retryAt
	cache   *secrets.Cache // replaced by Bootstrap, which reads afresh
	retryAt time.Time      // after a failed rebuild, no new attempt before this
}

// built is a service and handler made from one set of secret versions.
type built struct {
	handler  http.Handler
	versions versions
}

// versions are what a built handler was made from: the secret versions,
// and the issuer, which the deployment may record or change while the
// function is warm.
type versions struct{ signing, signingPrevious, admin, probe, cursor, issuer string }

// issuer is ISSUER when it is configured, else the one recorded in the
// table ("" until the deployment has recorded it).
func (a *App) issuer() string {
	if a.cfg.Issuer != "" {
		return a.cfg.Issuer
	}
	return a.published.Issuer()
}

// New builds the function described by cfg, auth with NewSigning and
// the others with NewVerifying: for tests and tools that build any of the
// three. A function's main calls its own constructor.
func New(ctx context.Context, cfg Config, deps Deps) (*App, error) {
	if cfg.Function.SignsTokens() {
		return NewSigning(ctx, cfg, deps)
	}
	return NewVerifying(ctx, cfg, deps)
}

// NewSigning builds the auth function: it reads the secrets, publishes the
// public keys, ensures the bootstrap admin key, and builds the router once.
// Any error here is a failed init.
func NewSigning(ctx context.Context, cfg Config, deps Deps) (*App, error) {
	if !cfg.Function.SignsTokens() || !cfg.Function.WritesCredentials() {
		return nil, fmt.Errorf("lambdaapp: the %s function does not sign tokens; NewVerifying builds it", cfg.Function)
	}
	a, err := newApp(cfg, deps)
	if err != nil {
		return nil, err
	}
	a.build = a.buildSigning
	return a, a.start(ctx)
}

// NewVerifying builds the organizations, users or verify function: it
// reads the cursor key secret (but verify, which needs none and may read
// no secret: Deps.Secrets may be nil) and the published public keys, and
// builds the router once. It never reaches the signing half of the
// package. Any error here is a failed init.
func NewVerifying(ctx context.Context, cfg Config, deps Deps) (*App, error) {
	if cfg.Function.SignsTokens() || cfg.Function.WritesCredentials() {
		return nil, fmt.Errorf("lambdaapp: the %s function signs tokens; NewSigning builds it", cfg.Function)
	}
	a, err := newApp(cfg, deps)
	if err != nil {
		return nil, err
	}
	a.build = a.buildVerifying
	return a, a.start(ctx)
}

func newApp(cfg Config, deps Deps) (*App, error) {
	switch cfg.Function {
	case Auth, Organizations, Users, Verify:
	default:
		return nil, fmt.Errorf("lambdaapp: unknown function %q", cfg.Function)
	}
	if deps.Store == nil || deps.Keys == nil {
		return nil, errors.New("lambdaapp: Store and Keys are required")
	}
	if deps.Secrets == nil && cfg.Function.ListsItems() {
		return nil, fmt.Errorf("lambdaapp: the %s function reads secrets; Secrets is required", cfg.Function)
	}
	if deps.Logger == nil {
		deps.Logger = slog.Default()
	}
	deps.Logger = slog.New(requestIDHandler{deps.Logger.Handler()})
	if deps.Now == nil {
		deps.Now = time.Now
	}
	if cfg.SigningAlgorithm == "" {
		cfg.SigningAlgorithm = token.EdDSA
	}
	a := &App{cfg: cfg, deps: deps, interval: deps.RefreshInterval, tokens: token.NewCache(cfg.TokenCache), successLog: logsample.New(cfg.SuccessLogEvery)}
	cfg.Usage.Logger = deps.Logger
	a.usage = account.NewUsageTally(deps.Store, cfg.Usage, deps.Now)
	if a.interval <= 0 {
		a.interval = secrets.DefaultRefreshInterval
	}
	if deps.Secrets != nil {
		a.cache = a.newCache()
	}
	if !cfg.Function.ListsItems() {
		a.unusedCursorKey = make([]byte, 32)
		rand.Read(a.unusedCursorKey) // never fails (crypto/rand)
	}
	a.lambda = httpadapter.NewV2(a).ProxyWithContext
	return a, nil
}

// start reads the published keys (unless auth has its issuer configured:
// it parses with its own keys) and builds the first handler.
func (a *App) start(ctx context.Context) error {
	if !a.cfg.Function.SignsTokens() || a.cfg.Issuer == "" {
		p, err := token.NewKeySet(ctx, a.cfg.Issuer, a.deps.Keys, token.KeySetOptions{Logger: a.deps.Logger, Now: a.deps.Now, RefreshInterval: a.interval, Algorithm: a.cfg.SigningAlgorithm, Cache: a.tokens})
		if err != nil {
			return fmt.Errorf("read the public keys from the table: %w", err)
		}
		a.published = p
	}
	b, err := a.build(ctx, a.cache, nil)
	if err != nil {
		return err
	}
	a.current.Store(b)
	return nil
}

func (a *App) newCache() *secrets.Cache {
	return secrets.NewCache(a.deps.Secrets, secrets.Options{RefreshInterval: a.interval, Logger: a.deps.Logger, Now: a.deps.Now})
}

// Lambda returns the handler of API Gateway events.
func (a *App) Lambda() Handler { return a.lambda }

// TableName is the table the App's store is over.
func (a *App) TableName() string { return a.cfg.TableName }

// Logger is the App's logger, which adds API Gateway's request id to the
// lines logged with a request's context.
func (a *App) Logger() *slog.Logger { return a.deps.Logger }

// PutFormats puts the formats names (of this release's,
// account.ReleaseFormats) in force from FormatsMargin from now, and every
// other out of force, in the table: the template's Formats custom
// resource, which runs once every alias serves the release, and again,
// with the previous release's names (none before the item), first in a
// rollback (docs/deploying.md, "Formats in force"). Auth only.
func (a *App) PutFormats(ctx context.Context, names []string) (account.Formats, error) {
	if !a.cfg.Function.WritesCredentials() {
		return account.Formats{}, fmt.Errorf("lambdaapp: the %s function cannot record the formats; only auth may write the config item", a.cfg.Function)
	}
	if len(names) == 0 {
		return account.Formats{SetBy: version.Version}, account.PutFormatsOutOfForce(ctx, a.deps.Store, version.Version)
	}
	return account.PutFormats(ctx, a.deps.Store, names, a.deps.Now().Add(account.FormatsMargin), version.Version)
}

// RecordIssuer records issuer in the table, where every function reads it
// with the public keys, and serves with it from the next request on. Other
// instances pick it up at their next refresh of the published keys. Auth
// only; account.CheckIssuer says what an issuer may be.
func (a *App) RecordIssuer(ctx context.Context, issuer string) error {
	if !a.cfg.Function.WritesCredentials() {
		return fmt.Errorf("lambdaapp: the %s function cannot record the issuer; only auth may write the keys", a.cfg.Function)
	}
	if err := account.CheckIssuer(issuer); err != nil {
		return err
	}
	if err := a.deps.Keys.PutIssuer(ctx, issuer); err != nil {
		return fmt.Errorf("record the issuer: %w", err)
	}
	if a.published != nil {
		if err := a.published.Refresh(ctx); err != nil {
			return fmt.Errorf("read the recorded issuer: %w", err)
		}
	}
	return nil
}

// Bootstrap reads the secrets afresh, whatever the cache holds and however
// recently, publishes the public keys, ensures the bootstrap admin key, and
// serves with them from then on. It is what a cold start of auth does, run
// on demand: at deploy time, so that the other functions, which may not
// write these items, find them in place for the first request they serve,
// and after a rotation, so that it takes effect without waiting for the
// next refresh. Auth only.
func (a *App) Bootstrap(ctx context.Context) error {
	if !a.cfg.Function.WritesCredentials() {
		return fmt.Errorf("lambdaapp: the %s function cannot bootstrap; only auth may write the keys", a.cfg.Function)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	cache := a.newCache()
	b, err := a.build(ctx, cache, nil)
	if err != nil {
		return err
	}
	a.cache, a.retryAt = cache, time.Time{}
	a.current.Store(b)
	return nil
}

// GrowCopies grows the verify copies of the key keyID as far as its rate
// calls for, which the store reads itself (tablestore.Store.GrowCopies):
// what the verify URL's and the authorizer's flushes ask of auth, whose
// role alone may write the copies. Auth only; CodeInvalidRequest for an id
// that is not an API key's.
func (a *App) GrowCopies(ctx context.Context, keyID string) error {
	if !a.cfg.Function.WritesCredentials() {
		return fmt.Errorf("lambdaapp: the %s function cannot grow a key's copies; only auth may write them", a.cfg.Function)
	}
	g, ok := a.deps.Store.(interface {
		GrowCopies(ctx context.Context, id string) error
	})
	if !ok {
		return errors.New("lambdaapp: the store keeps no verify copies")
	}
	return g.GrowCopies(ctx, keyID)
}

// ServeHTTP refreshes the keys if they are due, then serves the request with
// the current handler. The refresh runs here because a Lambda's background
// goroutines are frozen between invocations.
// FlushUsage writes the instance's usage counts: main's hook for Lambda's
// SIGTERM (docs/usage.md).
func (a *App) FlushUsage(ctx context.Context) error { return a.usage.Flush(ctx) }

func (a *App) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if a.cfg.OriginSecret != "" && !a.throughEdge(r) {
		a.refuseOutsideEdge(w, r)
		return
	}
	a.refresh(r.Context())
	// A function URL passes HEAD to the function and returns whatever body
	// it is given (the API's routes take GET only); net/http's server
	// drops it, and so do we (RFC 9110 section 9.3.2).
	if r.Method == http.MethodHead {
		w = bodiless{w}
	}
	a.current.Load().handler.ServeHTTP(w, r)
}

// OriginSecretHeader is lambdaenv's, which CloudFront adds.
const OriginSecretHeader = lambdaenv.OriginSecretHeader

// throughEdge reports whether r carries the origin secret, compared in
// constant time.
func (a *App) throughEdge(r *http.Request) bool {
	return subtle.ConstantTimeCompare([]byte(r.Header.Get(OriginSecretHeader)), []byte(a.cfg.OriginSecret)) == 1
}

// refuseOutsideEdge answers a request that did not come through the edge:
// 403 forbidden, as problem+json, before any key is read or credit spent,
// and logs it (without the header's value) for the access log's 403.
func (a *App) refuseOutsideEdge(w http.ResponseWriter, r *http.Request) {
	id := RequestID(r)
	a.deps.Logger.WarnContext(r.Context(), "request refused: not through the edge", "request_id", id,
		"method", r.Method, "path", auditPath(r), "source_ip", SourceIP(r), "origin_secret_sent", r.Header.Get(OriginSecretHeader) != "")
	pr := httpapi.ProblemOf(account.Errorf(account.CodeForbidden, "this endpoint is served through its CloudFront distribution only"))
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(pr.Status)
	json.NewEncoder(w).Encode(map[string]any{ // cannot fail: strings and an int
		"type": "https://latchkey.dev/problems/" + string(pr.Code), "title": pr.Title, "status": pr.Status,
		"detail": pr.Detail, "code": pr.Code, "request_id": id,
	})
}

// auditPath is r's path, cut at httpapi.MaxPathBytes, for a log line.
func auditPath(r *http.Request) string {
	p := r.URL.EscapedPath()
	if len(p) > httpapi.MaxPathBytes {
		p = p[:httpapi.MaxPathBytes]
	}
	return p
}

// bodiless is the response to HEAD: GET's status and headers, no body.
type bodiless struct{ http.ResponseWriter }

func (b bodiless) Write(p []byte) (int, error) { return len(p), nil }

// Unwrap lets http.ResponseController reach the underlying writer.
func (b bodiless) Unwrap() http.ResponseWriter { return b.ResponseWriter }

func (a *App) refresh(ctx context.Context) {
	if a.published != nil {
		a.published.RefreshIfStale(ctx)
	}
	// One rebuild at a time; a concurrent request serves the current handler.
	if !a.mu.TryLock() {
		return
	}
	defer a.mu.Unlock()
	if a.deps.Now().Before(a.retryAt) {
		return
	}
	cur := a.current.Load()
	b, err := a.build(ctx, a.cache, cur)
	if err != nil {
		a.retryAt = a.deps.Now().Add(secrets.RetryAfterFailure)
		a.deps.Logger.WarnContext(ctx, "applying changed secrets failed; keeping the keys in use", "retry_in", secrets.RetryAfterFailure.String(), "error", err.Error())
		return
	}
	if b != cur {
		a.deps.Logger.InfoContext(ctx, "secrets changed; keys reloaded")
		a.current.Store(b)
	}
}

// buildVerifying makes the service and handler of the organizations,
// users or verify function from the cursor key secret in cache (none for
// verify), over the published keys. It returns prev unchanged when neither
// the secret's version nor the issuer differs from prev's, which is the
// case on all but the few requests after a rotation.
func (a *App) buildVerifying(ctx context.Context, cache *secrets.Cache, prev *built) (*built, error) {
	cursorKey := a.unusedCursorKey
	v := versions{issuer: a.issuer()}
	if a.cfg.Function.ListsItems() {
		cursor, err := a.readCursorKey(ctx, cache)
		if err != nil {
			return nil, err
		}
		v.cursor = cursor.Current.ID
		if prev != nil && prev.versions == v {
			return prev, nil
		}
		if cursorKey, err = secrets.CursorKey(cursor.Current.Value); err != nil {
			return nil, err
		}
	} else if prev != nil && prev.versions == v {
		return prev, nil
	}
	parts := a.parts(cursorKey, v.issuer)
	parts.Verifier = a.published
	if a.cfg.Function.Audits() {
		parts.Audit = &httpapi.Audit{SourceIP: SourceIP}
	}
	asm, err := assembly.NewVerifier(parts)
	if err != nil {
		return nil, err
	}
	return &built{handler: asm.Handler(a.cfg.Function.Group()), versions: v}, nil
}

// buildSigning makes auth's service and handler from the secrets in cache,
// as buildVerifying does the others', with the signing key secret and the
// admin and probe key secrets besides. With a nil prev, or when a secret
// changed, it publishes the public keys and ensures the bootstrap admin
// key and the probe key.
func (a *App) buildSigning(ctx context.Context, cache *secrets.Cache, prev *built) (*built, error) {
	// Before the cache reads the signing secret: with RS256, a cold start
	// or a bootstrap (prev nil; each with a fresh cache) first makes it an
	// RSA key.
	if prev == nil && a.cfg.SigningAlgorithm == token.RS256 {
		if err := a.ensureRSASigningKey(ctx); err != nil {
			return nil, err
		}
	}
	others := []secrets.Key{{ID: a.cfg.AdminKeySecret}, {ID: a.cfg.SigningKeySecret, Previous: true}}
	if a.cfg.ProbeKeySecret != "" {
		others = append(others, secrets.Key{ID: a.cfg.ProbeKeySecret})
	}
	cursor, err := a.readCursorKey(ctx, cache, others...)
	if err != nil {
		return nil, err
	}
	admin, err := cache.Get(ctx, a.cfg.AdminKeySecret)
	if err != nil {
		return nil, fmt.Errorf("read the admin key secret: %w", err)
	}
	var probe secrets.Value
	if a.cfg.ProbeKeySecret != "" {
		if probe, err = cache.Get(ctx, a.cfg.ProbeKeySecret); err != nil {
			return nil, fmt.Errorf("read the probe key secret: %w", err)
		}
	}
	signing, err := cache.GetWithPrevious(ctx, a.cfg.SigningKeySecret)
	if err != nil {
		return nil, fmt.Errorf("read the signing key secret: %w", err)
	}
	v := versions{signing.Current.ID, signing.Previous.ID, admin.Current.ID, probe.Current.ID, cursor.Current.ID, a.issuer()}
	if prev != nil && prev.versions == v {
		return prev, nil
	}
	cursorKey, err := secrets.CursorKey(cursor.Current.Value)
	if err != nil {
		return nil, err
	}
	parts := a.parts(cursorKey, v.issuer)
	if parts.SigningKey, parts.PreviousKeys, parts.PreviousSealKeys, err = signingKeys(a.cfg.SigningAlgorithm, signing); err != nil {
		return nil, err
	}
	// The console signs its operators in with tokens: auth serves it.
	parts.Console = a.cfg.Console
	if v.issuer == "" {
		a.deps.Logger.WarnContext(ctx, "no issuer recorded yet; tokens are not issued until the deployment records it (the IssuerConfig custom resource)")
	}
	asm, err := assembly.New(parts)
	if err != nil {
		return nil, err
	}
	// Published before the new signer serves a request, so that the other
	// functions can verify its first token.
	if prev == nil || prev.versions.signing != v.signing || prev.versions.signingPrevious != v.signingPrevious {
		if err := a.deps.Keys.PutPublicKeys(ctx, asm.JWKS, signing.Current.CreatedAt); err != nil {
			return nil, fmt.Errorf("publish the public keys: %w", err)
		}
	}
	if prev == nil || prev.versions.admin != v.admin {
		// Ordered by the secret version's creation time, so that an instance
		// holding the admin key from before a rotation cannot undo it.
		if err := asm.Service.EnsureBootstrapKey(ctx, admin.Current.Value, admin.Current.CreatedAt); err != nil {
			return nil, fmt.Errorf("ensure the bootstrap admin key: %w", err)
		}
	}
	if a.cfg.ProbeKeySecret != "" && (prev == nil || prev.versions.probe != v.probe) {
		// The same way: a rotation of the probe secret retires the old key.
		if err := asm.Service.EnsureProbeKey(ctx, probe.Current.Value, probe.Current.CreatedAt); err != nil {
			return nil, fmt.Errorf("ensure the probe key: %w", err)
		}
	}
	return &built{handler: asm.Handler(a.cfg.Function.Group()), versions: v}, nil
}

// readCursorKey loads the secrets that are due (all of them at a cold
// start): the cursor key's and others, at once, concurrently, so that a
// cold start waits for one round trip to Secrets Manager, not four; the
// Gets that follow answer from the cache. A secret that was never read and
// cannot be fails here, named in the error. It returns the cursor key
// secret.
func (a *App) readCursorKey(ctx context.Context, cache *secrets.Cache, others ...secrets.Key) (secrets.Value, error) {
	if err := cache.Load(ctx, append([]secrets.Key{{ID: a.cfg.CursorKeySecret}}, others...)...); err != nil {
		return secrets.Value{}, fmt.Errorf("read the secrets: %w", err)
	}
	cursor, err := cache.Get(ctx, a.cfg.CursorKeySecret)
	if err != nil {
		return secrets.Value{}, fmt.Errorf("read the cursor key secret: %w", err)
	}
	return cursor, nil
}

// parts are the assembly parts every function builds from: the store, the
// cursor key, the issuer, and what the handler logs with.
func (a *App) parts(cursorKey []byte, issuer string) assembly.Parts {
	return assembly.Parts{
		Store: a.deps.Store, CursorKey: cursorKey, Issuer: issuer,
		Now: a.deps.Now, Logger: a.deps.Logger, RequestID: RequestID, Algorithm: a.cfg.SigningAlgorithm,
		TokenCache: a.tokens, SuccessLog: a.successLog, Usage: a.usage,
		NoInlineRevocation: a.cfg.NoInlineRevocation,
		StatusListTTL:      a.cfg.StatusListTTL,
	}
}

// signingKeys derives the signing key of alg from the current version of
// the signing secret, and the previous version's public key, which is
// accepted too, so that tokens signed before a rotation stay valid until
// they expire (at most account.MaxTokenLifetime). A previous version that
// held a key for the other algorithm is left out: switching algorithms
// ends the tokens signed before, as changing the issuer does. It also
// returns the previous key's seal key, so that answers stored for
// Idempotency-Key before the rotation still replay
// (assembly.Parts.PreviousSealKeys).
func signingKeys(alg token.Algorithm, v secrets.Value) (crypto.Signer, []crypto.PublicKey, [][]byte, error) {
	priv, err := signingKey(alg, v.Current.Value)
	if err != nil {
		return nil, nil, nil, err
	}
	if v.Previous.Value != "" {
		// A previous value that is no key of alg never signed with it: too
		// short, or, with EdDSA, an RS256 deployment's RSA key.
		wasRSA := secrets.IsRSASigningKey(v.Previous.Value)
		if old, err := signingKey(alg, v.Previous.Value); err == nil && (alg == token.RS256 || !wasRSA) &&
			!old.Public().(interface{ Equal(crypto.PublicKey) bool }).Equal(priv.Public()) {
			seal, err := assembly.SealKey(old)
			if err != nil {
				return nil, nil, nil, err
			}
			return priv, []crypto.PublicKey{old.Public()}, [][]byte{seal}, nil
		}
	}
	return priv, nil, nil, nil
}

// signingKey reads the private key of alg from a signing secret string: an
// RSA private key in PEM for RS256, and for EdDSA the Ed25519 key derived
// from the string, whatever it holds (after a switch back from RS256, the
// PEM of an RSA key, as random as any).
func signingKey(alg token.Algorithm, secret string) (crypto.Signer, error) {
	if alg == token.RS256 {
		return secrets.RSASigningKey(secret)
	}
	return secrets.SigningKey(secret)
}

// ensureRSASigningKey puts an RSA key into the signing secret, in an RS256
// deployment whose secret holds something else: the random string the
// template generates, or an EdDSA deployment's. Only auth's role may, and
// only when the template's SigningAlgorithm is RS256.
func (a *App) ensureRSASigningKey(ctx context.Context) error {
	rw, ok := a.deps.Secrets.(secrets.ReadWriter)
	if !ok {
		return errors.New("lambdaapp: SIGNING_ALG is RS256, and the secrets client cannot write the signing secret")
	}
	replaced, err := secrets.EnsureRSASigningKey(ctx, rw, a.cfg.SigningKeySecret)
	if err != nil {
		return fmt.Errorf("put an RSA key into the signing key secret: %w", err)
	}
	if replaced {
		a.deps.Logger.InfoContext(ctx, "the signing key secret now holds a new RSA key (SIGNING_ALG RS256); tokens signed with the previous value are no longer accepted")
	}
	return nil
}

// SourceIP returns the address of the client, as API Gateway or the
// function URL saw it (requestContext.http.sourceIp), which the adapter
// puts in the request context. Empty outside Lambda.
func SourceIP(r *http.Request) string {
	if rc, ok := core.GetAPIGatewayV2ContextFromContext(r.Context()); ok {
		return rc.HTTP.SourceIP
	}
	return ""
}

// RequestID returns API Gateway's request id, which the adapter puts in the
// request context, so that X-Request-Id, our logs and the access log share
// one id. Empty outside Lambda; httpapi then generates one.
func RequestID(r *http.Request) string {
	if rc, ok := core.GetAPIGatewayV2ContextFromContext(r.Context()); ok {
		return rc.RequestID
	}
	return ""
}

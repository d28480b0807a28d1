// Package lambdaapp is the wiring shared by Latchkey's three Lambda
// functions: configuration from the environment, the secrets, the token
// signer or parser, the account service and the http.Handler of the
// function's endpoint group, served through aws-lambda-go-api-proxy.
//
// Which function reads what:
//
//   - auth reads the signing key secret (it alone issues tokens), derives
//     the Ed25519 key, and publishes the public keys (current and, after a
//     rotation, previous) as a JWKS item in the table.
//   - organizations and users never see the private key: they verify tokens
//     with a token.KeySet over the JWKS read from the table, reloaded every
//     refresh interval and whenever a token names a kid they do not know.
//   - all three read the bootstrap admin API key secret, so that whichever
//     starts first makes sure the key exists (EnsureBootstrapKey), and the
//     cursor key secret, because every function serves a list.
//
// Secrets are refreshed on the request path every secrets.DefaultRefreshInterval;
// when one changes, the service and handler are rebuilt and swapped in, so a
// rotation needs no redeploy.
package lambdaapp

import (
	"context"
	"crypto/ed25519"
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
	"latchkey/pkg/httpapi"
	"latchkey/pkg/secrets"
	"latchkey/pkg/token"
)

// Handler is the function each main passes to lambda.Start: an API Gateway
// HTTP API (payload format 2.0) event in, a response out.
type Handler func(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)

// Deps are the clients a function is built from. Main builds them from the
// AWS configuration; tests pass DynamoDB Local or bbolt, and moto or a fake.
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
	cfg      Config
	deps     Deps
	cache    *secrets.Cache
	parser   *token.KeySet // nil in auth, which parses with its own keys
	interval time.Duration

	current atomic.Pointer[built]
	mu      sync.Mutex // serialises rebuilds
	retryAt time.Time  // after a failed rebuild, no new attempt before this
}

// built is a service and handler made from one set of secret versions.
type built struct {
	handler  http.Handler
	versions versions
}

type versions struct{ signing, signingPrevious, admin, cursor string }

// New builds the function described by cfg: it reads the secrets, ensures
// the bootstrap admin key, publishes (auth) or reads (others) the public
// keys, and builds the router once. Any error here is a failed init.
func New(ctx context.Context, cfg Config, deps Deps) (*App, error) {
	if deps.Store == nil || deps.Keys == nil || deps.Secrets == nil {
		return nil, errors.New("lambdaapp: Store, Keys and Secrets are required")
	}
	if deps.Logger == nil {
		deps.Logger = slog.Default()
	}
	deps.Logger = slog.New(requestIDHandler{deps.Logger.Handler()})
	if deps.Now == nil {
		deps.Now = time.Now
	}
	a := &App{cfg: cfg, deps: deps, interval: deps.RefreshInterval}
	if a.interval <= 0 {
		a.interval = secrets.DefaultRefreshInterval
	}
	a.cache = secrets.NewCache(deps.Secrets, secrets.Options{RefreshInterval: a.interval, Logger: deps.Logger, Now: deps.Now})
	if !cfg.Function.SignsTokens() {
		p, err := token.NewKeySet(ctx, cfg.Issuer, deps.Keys, token.KeySetOptions{Logger: deps.Logger, Now: deps.Now, RefreshInterval: a.interval})
		if err != nil {
			return nil, fmt.Errorf("read the public keys from the table: %w", err)
		}
		a.parser = p
	}
	b, err := a.build(ctx, nil)
	if err != nil {
		return nil, err
	}
	a.current.Store(b)
	return a, nil
}

// Lambda returns the handler to pass to lambda.Start.
func (a *App) Lambda() Handler {
	return httpadapter.NewV2(a).ProxyWithContext
}

// ServeHTTP refreshes the keys if they are due, then serves the request with
// the current handler. The refresh runs here because a Lambda's background
// goroutines are frozen between invocations.
func (a *App) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.refresh(r.Context())
	a.current.Load().handler.ServeHTTP(w, r)
}

func (a *App) refresh(ctx context.Context) {
	if a.parser != nil {
		a.parser.RefreshIfStale(ctx)
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
	b, err := a.build(ctx, cur)
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

// build makes the service and handler from the current secrets. It returns
// prev unchanged when no secret version differs from prev's, which is the
// case on all but the few requests after a rotation.
func (a *App) build(ctx context.Context, prev *built) (*built, error) {
	admin, err := a.cache.Get(ctx, a.cfg.AdminKeySecret)
	if err != nil {
		return nil, fmt.Errorf("read the admin key secret: %w", err)
	}
	cursor, err := a.cache.Get(ctx, a.cfg.CursorKeySecret)
	if err != nil {
		return nil, fmt.Errorf("read the cursor key secret: %w", err)
	}
	var signing secrets.Value
	if a.cfg.Function.SignsTokens() {
		if signing, err = a.cache.GetWithPrevious(ctx, a.cfg.SigningKeySecret); err != nil {
			return nil, fmt.Errorf("read the signing key secret: %w", err)
		}
	}
	v := versions{signing.Current.ID, signing.Previous.ID, admin.Current.ID, cursor.Current.ID}
	if prev != nil && prev.versions == v {
		return prev, nil
	}

	cursorKey, err := secrets.CursorKey(cursor.Current.Value)
	if err != nil {
		return nil, err
	}
	opts := account.Options{CursorKey: cursorKey, Now: a.deps.Now, Parser: a.parser}
	var jwks func(context.Context) ([]byte, error)
	if a.cfg.Function.SignsTokens() {
		signer, public, err := signingKeys(a.cfg.Issuer, signing)
		if err != nil {
			return nil, err
		}
		set := token.JWKS(public...)
		// Published before the new signer serves a request, so that the
		// other functions can verify its first token.
		if prev == nil || prev.versions.signing != v.signing || prev.versions.signingPrevious != v.signingPrevious {
			if err := a.deps.Keys.PutPublicKeys(ctx, set, signing.Current.CreatedAt); err != nil {
				return nil, fmt.Errorf("publish the public keys: %w", err)
			}
		}
		opts.Signer = signer
		opts.Parser = token.NewParser(a.cfg.Issuer, public...)
		jwks = func(context.Context) ([]byte, error) { return set, nil }
	}
	svc, err := account.NewService(a.deps.Store, opts)
	if err != nil {
		return nil, err
	}
	if prev == nil || prev.versions.admin != v.admin {
		// Ordered by the secret version's creation time, so that an instance
		// holding the admin key from before a rotation cannot undo it.
		if err := svc.EnsureBootstrapKeyAt(ctx, admin.Current.Value, admin.Current.CreatedAt); err != nil {
			return nil, fmt.Errorf("ensure the bootstrap admin key: %w", err)
		}
	}
	h := httpapi.New(httpapi.Config{Service: svc, JWKS: jwks, Logger: a.deps.Logger, RequestID: RequestID}, a.cfg.Function.Group())
	return &built{handler: h, versions: v}, nil
}

// signingKeys derives the signer from the current version of the signing
// secret, and the public keys to accept: the current one first, then the
// previous one, so that tokens signed before a rotation stay valid until
// they expire (at most account.MaxTokenLifetime).
func signingKeys(issuer string, v secrets.Value) (*token.Signer, []ed25519.PublicKey, error) {
	priv, err := secrets.SigningKey(v.Current.Value)
	if err != nil {
		return nil, nil, err
	}
	signer := token.NewSigner(priv, issuer)
	public := []ed25519.PublicKey{signer.PublicKey()}
	if v.Previous.Value != "" {
		// A previous value too short to be a key was never used to sign.
		if old, err := secrets.SigningKey(v.Previous.Value); err == nil && !old.Equal(priv) {
			public = append(public, old.Public().(ed25519.PublicKey))
		}
	}
	return signer, public, nil
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

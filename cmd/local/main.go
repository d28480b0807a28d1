// Command local serves the whole Latchkey API (every endpoint group, the
// same routes as template.yaml) from one process over the embedded bbolt
// store: no AWS account, no Docker, no network. It also serves, publicly,
// GET /healthz, GET /readyz and GET /openapi.yaml (httpapi.LocalRoutes),
// which no Lambda function does.
//
// Configuration (environment):
//
//	ADDR                 listen address (default 127.0.0.1:8080)
//	DATA_DIR             database and secrets (default ./.data)
//	ADMIN_API_KEY        bootstrap admin key, 32+ characters (default: generated once and printed)
//	ISSUER               the issuer: the base URL clients reach the server at, the iss of its
//	                     tokens and of its OAuth metadata (default http:// + ADDR, with the port
//	                     it listens on, and localhost for an unspecified host)
//	CHECK_DATA_FILE      false starts without reading the data file through first (default true;
//	                     see docs/configuration.md for what the check costs)
//	DYNAMODB_ENDPOINT    use DynamoDB at this endpoint (e.g. DynamoDB Local) instead of the embedded store
//	TABLE_NAME           the DynamoDB table, created if missing (default latchkey)
//	MAX_CONNECTIONS      client connections held open at once (default 256)
//	IDLE_TIMEOUT         how long a keep-alive connection may wait for its next request (default 60s)
//	READ_HEADER_TIMEOUT  how long a client may take to send a request's headers (default 5s)
//	STORE_TIMEOUT        how long one DynamoDB call may take before the request gets 503 (default 3s)
//	TOKEN_CACHE_MAX_ENTRIES, TOKEN_CACHE_MAX_BYTES
//	                     bounds of the verified-token cache (default 32768 and 16 MiB)
//	INLINE_REVOCATION    false issues tokens without the claim irv, revoked and verified as
//	                     before it existed (default true: with the claim, once the formats
//	                     item puts revocations on the key in force; over the embedded store
//	                     the server does at start, over DynamoDB the deployment's step does)
//	STATUS_LIST_TTL      the status lists' ttl in seconds, 1 to 300 (default 10)
//	USAGE_FLUSH_INTERVAL how often the usage counts are written, 1s to 10s (default 5s; and at shutdown)
//	USAGE_RETENTION_MINUTE, USAGE_RETENTION_HOUR, USAGE_RETENTION_DAY
//	                     how long usage buckets are kept (default 48h, 2160h, 17520h)
//	GOGC                 the Go collector's target (default 400 here, not Go's 100: see gcPercent)
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"latchkey"
	"latchkey/pkg/account"
	"latchkey/pkg/assembly"
	"latchkey/pkg/boltstore"
	"latchkey/pkg/console"
	"latchkey/pkg/dynamostore"
	"latchkey/pkg/httpapi"
	"latchkey/pkg/token"
	"latchkey/pkg/version"
)

// gcPercent is the local server's GOGC unless the environment sets one.
// Its live heap is about a megabyte, so at Go's default of 100 the
// collector ran every 4 MB allocated: some 60 times a second under load,
// each time stopping the server and taking a core for a millisecond or
// two. At 400 it runs a quarter as often, for a heap of up to five times
// the live data (16 MB at least): verify served 9 to 14% more requests a
// second under wrk (scripts/load.sh).
const gcPercent = 400

// tuneGC sets the collector's target to gcPercent unless GOGC is set.
func tuneGC(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
}

func main() {
	if err := noArguments(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	tuneGC(os.Getenv)
	// One write per line, as it is logged: a write of a request line
	// costs the kernel about 0.5 us, 1 to 2% of a verify.
	logger := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	if err := run(logger); err != nil {
		logger.Error("latchkey stopped", "error", err.Error())
		os.Exit(1)
	}
}

// noArguments refuses command-line arguments: the server reads its
// settings from the environment only, and a flag it ignored would leave
// it listening and writing where the caller did not ask (-addr, -data).
func noArguments(args []string) error {
	if len(args) == 0 {
		return nil
	}
	return fmt.Errorf("local: unexpected argument %q: the server takes no arguments; set its environment instead, "+
		"e.g. ADDR=127.0.0.1:9090 DATA_DIR=/tmp/lk (the list: go doc ./cmd/local)", args[0])
}

type config struct {
	addr, dataDir, adminKey, issuer string
	dynamoEndpoint, tableName       string

	maxConns                       int
	idleTimeout, readHeaderTimeout time.Duration
	storeTimeout                   time.Duration
	// signingAlg is SIGNING_ALG: EdDSA (the default) or RS256.
	signingAlg token.Algorithm
	tokenCache token.CacheOptions
	// statusListTTL is STATUS_LIST_TTL.
	statusListTTL time.Duration
	// noInlineRevocation is INLINE_REVOCATION=false.
	noInlineRevocation bool
	// skipFileCheck is CHECK_DATA_FILE=false.
	skipFileCheck bool
	// usage is USAGE_FLUSH_INTERVAL and USAGE_RETENTION_*.
	usage account.UsageOptions
}

// fdReserve is the file descriptors the server needs besides its
// connections: standard streams, the listener, the database, the poller.
const fdReserve = 64

func configFromEnv() (config, error) {
	c := config{
		addr:     envOr("ADDR", "127.0.0.1:8080"),
		dataDir:  envOr("DATA_DIR", ".data"),
		adminKey: os.Getenv("ADMIN_API_KEY"),
		issuer:   os.Getenv("ISSUER"),

		dynamoEndpoint: os.Getenv("DYNAMODB_ENDPOINT"),
		tableName:      envOr("TABLE_NAME", "latchkey"),
	}
	if c.adminKey != "" && len(c.adminKey) < account.MinBootstrapKeyLength {
		return c, fmt.Errorf("ADMIN_API_KEY must be at least %d characters", account.MinBootstrapKeyLength)
	}
	var err error
	if c.maxConns, err = envInt("MAX_CONNECTIONS", 256); err != nil {
		return c, err
	}
	if c.idleTimeout, err = envDuration("IDLE_TIMEOUT", 60*time.Second); err != nil {
		return c, err
	}
	if c.readHeaderTimeout, err = envDuration("READ_HEADER_TIMEOUT", 5*time.Second); err != nil {
		return c, err
	}
	// Every connection takes a file descriptor, and over DynamoDB a request
	// may hold a second one to the endpoint. A cap above the limit would let
	// accept fail again, for everyone, which the cap exists to prevent.
	need := uint64(c.maxConns) + fdReserve
	if c.dynamoEndpoint != "" {
		need += uint64(c.maxConns)
	}
	if limit, ok := openFileLimit(); ok && need > limit {
		return c, fmt.Errorf("MAX_CONNECTIONS=%d needs %d file descriptors, over the open-file limit of %d: lower it or raise the limit (ulimit -n)",
			c.maxConns, need, limit)
	}
	if c.storeTimeout, err = dynamostore.ParseTimeout(os.Getenv("STORE_TIMEOUT")); err != nil {
		return c, fmt.Errorf("STORE_TIMEOUT: %w", err)
	}
	if c.signingAlg, err = token.ParseAlgorithm(os.Getenv("SIGNING_ALG")); err != nil {
		return c, fmt.Errorf("SIGNING_ALG: %w", err)
	}
	inline, err := token.ParseInlineRevocation(os.Getenv(token.EnvInlineRevocation))
	if err != nil {
		return c, fmt.Errorf("%s: %w", token.EnvInlineRevocation, err)
	}
	c.noInlineRevocation = !inline
	if c.statusListTTL, err = account.ParseStatusTTL(os.Getenv("STATUS_LIST_TTL")); err != nil {
		return c, fmt.Errorf("STATUS_LIST_TTL: %w", err)
	}
	switch os.Getenv("CHECK_DATA_FILE") {
	case "", "true":
	case "false":
		c.skipFileCheck = true
	default:
		return c, errors.New("CHECK_DATA_FILE must be true or false")
	}
	if c.usage, err = account.UsageOptionsFromEnv(os.Getenv); err != nil {
		return c, err
	}
	c.tokenCache, err = token.CacheOptionsFromEnv(os.Getenv)
	return c, err
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func envInt(name string, def int) (int, error) {
	v := os.Getenv(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 1<<20 {
		return 0, fmt.Errorf("%s must be a whole number from 1 to %d", name, 1<<20)
	}
	return n, nil
}

func envDuration(name string, def time.Duration) (time.Duration, error) {
	v := os.Getenv(name)
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s must be a positive duration such as 30s or 500ms", name)
	}
	return d, nil
}

func run(logger *slog.Logger) error {
	cfg, err := configFromEnv()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	// Listen first: a start that cannot serve (the port is taken) must stop
	// before it creates, and prints, an admin key.
	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return err
	}
	limited := newLimitListener(ln, cfg.maxConns)
	defer limited.Close()
	// Bound, the listener names the port the kernel picked for ADDR=…:0.
	issuer := cfg.issuer
	if issuer == "" {
		issuer = defaultIssuer(cfg.addr, ln.Addr())
	}
	if err := account.CheckIssuer(issuer); err != nil {
		return fmt.Errorf("ISSUER: %w", err)
	}

	dir, err := openDataDir(cfg.dataDir)
	if err != nil {
		return err
	}
	signingKey, err := dir.signingKey(cfg.signingAlg)
	if err != nil {
		return err
	}
	cursorKey, err := dir.cursorKey()
	if err != nil {
		return err
	}
	store, err := openStore(ctx, logger, cfg, dir)
	if err != nil {
		return err
	}
	defer store.Close()
	if cfg.dynamoEndpoint == "" {
		// The data file is this process's alone (bbolt's lock): no earlier
		// release serves from it, so this one's formats are in force now.
		// A table is shared: its formats are put in force by the step
		// after a deployment (docs/deploying.md, "Formats in force").
		if _, err := account.PutFormatsInForce(ctx, store, time.Now(), version.Version); err != nil {
			return fmt.Errorf("record the formats in force: %w", err)
		}
	}

	// The usage counts are flushed every interval, and once more after the
	// last request has been served (serve's shutdown), before the store
	// closes: a clean stop loses none.
	cfg.usage.Logger = logger
	usage := account.NewUsageTally(store, cfg.usage, nil)
	flushCtx, stopFlush := context.WithCancel(context.WithoutCancel(ctx))
	flushed := make(chan struct{})
	go func() { usage.Run(flushCtx, cfg.usage.Every); close(flushed) }()
	defer func() { stopFlush(); <-flushed }()

	asm, err := assembly.New(assembly.Parts{
		Usage: usage,
		Store: store, CursorKey: cursorKey, Issuer: issuer, SigningKey: signingKey, Algorithm: cfg.signingAlg, Logger: logger,
		NoInlineRevocation: cfg.noInlineRevocation,
		StatusListTTL:      cfg.statusListTTL,
		TokenCache:         token.NewCache(cfg.tokenCache),
		// GET /healthz, /readyz and /openapi.yaml: the local server's own.
		Local: &httpapi.Local{Ready: httpapi.StoreReady(store), OpenAPI: latchkey.OpenAPI},
		// The console at /console, as the auth function serves it.
		Console: console.Mount,
	})
	if err != nil {
		return err
	}
	if err := publish(ctx, store, asm.JWKS, issuer); err != nil {
		return err
	}
	storeName := "bbolt:" + filepath.Join(cfg.dataDir, "latchkey.db")
	if cfg.dynamoEndpoint != "" {
		storeName = "dynamodb:" + cfg.dynamoEndpoint + "/" + cfg.tableName
	}
	srv := &http.Server{
		Handler:           asm.Handler(),
		ReadHeaderTimeout: cfg.readHeaderTimeout,
		ReadTimeout:       15 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       cfg.idleTimeout,
		ConnState:         limited.connState,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		// Fits the largest legitimate request (see httpapi.MaxHeaderBytes)
		// instead of net/http's 1 MiB default; beyond it, 431.
		MaxHeaderBytes: httpapi.MaxHeaderBytes,
	}

	// Last before serving, with the listener bound and the store open: after
	// the key is shown, nothing is left that can fail the start.
	if err := bootstrapAdminKey(ctx, asm.Service, dir, cfg.adminKey, os.Stdout); err != nil {
		return fmt.Errorf("bootstrap admin key: %w", err)
	}
	logger.Info("latchkey listening", "release", version.Version, "addr", "http://"+ln.Addr().String(), "issuer", issuer, "store", storeName,
		"max_connections", cfg.maxConns)
	return serve(ctx, logger, srv, limited)
}

// defaultIssuer is http:// and the address the server listens on: ADDR's
// host (localhost when it names no particular one) and the port it got.
func defaultIssuer(addr string, bound net.Addr) string {
	host, _, _ := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "localhost"
	}
	port := ""
	if tcp, ok := bound.(*net.TCPAddr); ok {
		port = strconv.Itoa(tcp.Port)
	}
	return "http://" + net.JoinHostPort(host, port)
}

// openStore opens the embedded store in the data directory, or DynamoDB
// when DYNAMODB_ENDPOINT is set. A data file of an earlier version is
// converted, and the conversion logged.
func openStore(ctx context.Context, logger *slog.Logger, cfg config, dir dataDir) (account.Store, error) {
	if cfg.dynamoEndpoint == "" {
		file := filepath.Join(string(dir), "latchkey.db")
		opts := []boltstore.OpenOption{boltstore.OnMigrated(func(m boltstore.Migration) {
			logger.Warn("converted the data file of an earlier version; the old file is kept",
				"file", m.Path, "old_file", m.Backup, "users", m.Users, "organizations", m.Organizations,
				"members", m.Members, "api_keys", m.APIKeys, "tokens", m.Tokens, "revocations", m.Revocations,
				"events_not_carried_over", m.Events)
		})}
		if cfg.skipFileCheck {
			opts = append(opts, boltstore.SkipFileCheck())
		}
		s, err := boltstore.Open(file, opts...)
		if errors.Is(err, boltstore.ErrInUse) {
			return nil, fmt.Errorf("another instance of the server holds %s: stop it, or give this one another DATA_DIR (%w)", file, err)
		}
		if errors.Is(err, boltstore.ErrDamaged) {
			return nil, fmt.Errorf("%w (to start empty: mv %s %s.damaged)", err, file, file)
		}
		if err != nil {
			return nil, err
		}
		return s, nil
	}
	// Built without the shared AWS configuration: a local endpoint needs no
	// real credentials, and a developer's profile must not redirect it.
	client := dynamodb.New(dynamodb.Options{
		Region:       envOr("AWS_REGION", "us-east-1"),
		BaseEndpoint: aws.String(cfg.dynamoEndpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("local", "local", ""),
	})
	if err := dynamostore.CreateTable(ctx, client, cfg.tableName); err != nil {
		return nil, fmt.Errorf("create table %s at %s: %w", cfg.tableName, cfg.dynamoEndpoint, err)
	}
	return dynamostore.New(client, cfg.tableName, dynamostore.WithTimeout(cfg.storeTimeout)), nil
}

// publisher is a store that holds what the auth function publishes for
// the functions that verify tokens: tablestore.Store.
type publisher interface {
	PutPublicKeys(ctx context.Context, jwks []byte, version time.Time) error
	PutIssuer(ctx context.Context, issuer string) error
}

// publish writes the public key and the issuer into the table, as the auth
// function and the IssuerConfig custom resource do in a deployment, so that
// the Lambda authorizer (or a function run with sam local) over the same
// table verifies this server's tokens. The embedded store has no such item:
// nothing else can read it. The version is now: this server's key is the
// newest, and a restart publishes it again.
func publish(ctx context.Context, store account.Store, jwks []byte, issuer string) error {
	p, ok := store.(publisher)
	if !ok {
		return nil
	}
	if err := p.PutPublicKeys(ctx, jwks, time.Now()); err != nil {
		return fmt.Errorf("publish the public key: %w", err)
	}
	if err := p.PutIssuer(ctx, issuer); err != nil {
		return fmt.Errorf("record the issuer: %w", err)
	}
	return nil
}

// bootstrapAdminKey installs the configured admin key, or, when there is no
// admin key yet, generates one and prints it to out: the only time it is
// ever shown. A generated key is stored only after the data directory
// records it as pending, and that record is removed only after the key has
// been printed; a start that finds the record replaces the unshown key with
// a new one (EnsureBootstrapKey retires every older bootstrap key) and
// prints that. So no failure at any point leaves the user without a key.
func bootstrapAdminKey(ctx context.Context, svc *account.Service, dir dataDir, configured string, out io.Writer) error {
	if configured != "" {
		if err := svc.EnsureBootstrapKey(ctx, configured, time.Time{}); err != nil {
			return err
		}
		return dir.clearAdminKeyPending() // the configured key retired an unshown one
	}
	pending, err := dir.adminKeyPending()
	if err != nil {
		return err
	}
	if !pending {
		exists, err := svc.HasBootstrapKey(ctx)
		if err != nil || exists {
			return err
		}
		if err := dir.markAdminKeyPending(); err != nil {
			return err
		}
	}
	secret := account.NewAPIKeySecret()
	if err := svc.EnsureBootstrapKey(ctx, secret, time.Time{}); err != nil {
		return err
	}
	// Never print a key that does not work (EnsureBootstrapKey keeps a
	// bootstrap key dated later than now, should the clock have gone back).
	if _, err := svc.Authenticate(ctx, secret); err != nil {
		return fmt.Errorf("the generated key does not authenticate: %w", err)
	}
	if _, err := fmt.Fprintf(out, "\nLatchkey admin API key (shown once, store it now):\n\n    %s\n\n"+
		"It holds the grant *:*. Use it as: Authorization: Bearer <key>\n\n", secret); err != nil {
		return fmt.Errorf("print the admin key: %w", err)
	}
	return dir.clearAdminKeyPending()
}

// serve runs the HTTP server until ctx ends, then lets in-flight requests
// finish before returning, so the store is closed only after them.
func serve(ctx context.Context, logger *slog.Logger, srv *http.Server, ln net.Listener) error {
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()

	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	logger.Info("shutting down: waiting for in-flight requests")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return err
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

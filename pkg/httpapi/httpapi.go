// Package httpapi is Latchkey's HTTP interface: the routes, the bearer
// authentication, JSON decoding and encoding, and problem+json errors. Every
// business rule lives in account.Service; handlers decode, call the service
// and encode. One router per endpoint group lets each Lambda function serve
// only its own routes while the local server mounts them all.
package httpapi

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"path"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"latchkey/pkg/account"
	"latchkey/pkg/logsample"
)

// MaxHeaderBytes is the http.Server.MaxHeaderBytes for a server of this
// API: the bytes of request line and headers it reads before answering 431.
// The largest legitimate request carries an access token with the most and
// longest scopes, ancestors, audience, owner id and issuer (7.7 KB) and a query
// string of up to 3.6 KiB (MaxQueryBytes); API Gateway, in front of the
// Lambda functions, refuses more than 10240 bytes of request line and
// header values. 16 KiB holds that with room for header names and what a
// proxy adds; net/http's default would let every connection make the
// server hold 1 MiB.
const MaxHeaderBytes = 16 << 10

// MaxPathBytes is the longest path a request may have, over ten times the
// longest of the API's (a membership, 87 bytes). A longer one names no
// resource and is 404 not_found before any other work on it, with or
// without a credential, so that a request as long as the header limit
// costs no more than a short one.
const MaxPathBytes = 1 << 10

// MaxQueryBytes is the longest raw query string a request may have: the
// longest legitimate one, a list of API keys by organization and owner
// (an owner id of 256 four-byte characters, every byte percent-encoded, 3
// KiB) with a page limit and a 512-byte cursor, is under 3.6 KiB. A longer
// one is 400 invalid_request, after authorization as every query error
// is, before it is parsed. openapi.yaml states it as x-max-query-bytes.
// API Gateway lets through 10240 bytes of request line and headers, so the
// limit is this one behind it too.
const MaxQueryBytes = 4 << 10

// Config holds what the handlers depend on.
type Config struct {
	// Service carries out every operation. Required.
	Service *account.Service
	// JWKS returns the public key set served at GET /v1/auth/jwks (auth group).
	JWKS func(ctx context.Context) ([]byte, error)
	// StatusListTTL is the ttl of the status lists (account.CheckStatusTTL);
	// account.DefaultStatusTTL when zero.
	StatusListTTL time.Duration
	// SigningAlgorithm is the JWS algorithm of the tokens, as the
	// discovery documents name it; "EdDSA" when empty.
	SigningAlgorithm string
	// Logger receives one line per request and the causes of internal
	// errors. Nil means slog.Default().
	Logger *slog.Logger
	// SuccessLog samples the request lines of successes (status below
	// 400): it decides which are written, each with sample_every when
	// fewer than all are. The line of every other status is written. Nil
	// writes every line, as the local server, which has no access log,
	// does.
	SuccessLog *logsample.Sampler
	// RequestID returns the upstream request id (API Gateway's), so that the
	// id in our logs and responses matches the gateway's. Nil, or an empty
	// result, means that one is generated.
	RequestID func(r *http.Request) string
	// Local, when set, adds the routes of GroupLocal (LocalRoutes: health
	// checks and the API description), which only the local server serves.
	Local *Local
	// SealKeys are AES-256 keys (see SealKey) for the answers stored for
	// Idempotency-Key replays: the first seals every answer stored, and an
	// answer opens under any of them (keep the previous key after a
	// rotation, so that answers sealed before it still replay). Without
	// keys, answers are stored as they are. A handler of the auth group,
	// whose answers hold API key secrets and access tokens, needs at least
	// one: New panics without.
	SealKeys [][]byte
	// Mounts are handlers served beside the API's routes, each with the
	// routes of its group (the console): under the same request id,
	// recovery and request line as the API's.
	Mounts []Mount
	// Audit, when set, makes each request line an audit record, for a
	// handler with no access log in front of it (the verify function's
	// URL, which has none): every line is written, whatever SuccessLog
	// says, with the client's address and, for a request no route
	// matched, the path it asked for.
	Audit *Audit
}

// Audit is what the request lines of Config.Audit add.
type Audit struct {
	// SourceIP returns the address of the client that sent r, as the
	// platform in front saw it (a function URL's requestContext.http.sourceIp).
	// Required.
	SourceIP func(r *http.Request) string
}

// Mount is a handler of routes of its own, served by the router of its
// group beside the API's routes (New). A request for one of Routes
// reaches Handler with the route named in the request line; another
// method on one of their paths is 405, as on the API's.
type Mount struct {
	Group   Group
	Routes  []Route // Method and Path of each; Path is a ServeMux pattern
	Handler http.Handler
	// Prefix is the path the mount serves under. Headers, unless nil, sets
	// the headers of the mount's own answers on the 404 and 405 the API
	// answers under Prefix (another method on one of Routes, a path no
	// route takes or not spelled canonically), so that every answer there
	// carries them: the console's security headers.
	Prefix  string
	Headers func(http.Header, *http.Request)
}

// MountFunc builds a Mount over the service a handler serves, logging
// with log: the console's (console.Mount). A program that serves it passes
// it in, so that one that does not links none of it.
type MountFunc func(svc *account.Service, log *slog.Logger) Mount

// server is the state shared by the handlers of one New.
type server struct {
	svc       *account.Service
	jwks      func(ctx context.Context) ([]byte, error)
	alg       string
	log       *slog.Logger
	sampler   *logsample.Sampler
	requestID func(r *http.Request) string
	local     *Local
	sealKeys  [][]byte
	audit     *Audit
	statusTTL time.Duration
	// mounts are the served mounts with Headers, for their 404 and 405.
	mounts []Mount
}

// New returns a handler serving the routes of the named groups, or of every
// group when none is named; those of GroupLocal only when cfg.Local is set.
// The router is built once, here. Requests to a known path with another
// method get 405 with Allow; unknown paths get 404. New panics if
// cfg.Service is nil, or cfg.Local lacks Ready or OpenAPI: those are wiring
// bugs to catch at start-up.
func New(cfg Config, groups ...Group) http.Handler {
	if cfg.Service == nil {
		panic("httpapi: Config.Service is required")
	}
	s := &server{svc: cfg.Service, jwks: cfg.JWKS, alg: cfg.SigningAlgorithm, log: cfg.Logger, sampler: cfg.SuccessLog, requestID: cfg.RequestID, local: cfg.Local, sealKeys: cfg.SealKeys, audit: cfg.Audit}
	if s.audit != nil {
		if s.audit.SourceIP == nil {
			panic("httpapi: Config.Audit.SourceIP is required")
		}
		s.sampler = nil // an audit trail is never sampled
	}
	for _, k := range cfg.SealKeys {
		if len(k) != 32 {
			panic("httpapi: every Config.SealKeys key must be 32 bytes (see SealKey)")
		}
	}
	if s.alg == "" {
		s.alg = "EdDSA"
	}
	s.statusTTL = cfg.StatusListTTL
	if s.statusTTL == 0 {
		s.statusTTL = account.DefaultStatusTTL
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	table := routeTable
	if cfg.Local != nil {
		if cfg.Local.Ready == nil || cfg.Local.OpenAPI == nil {
			panic(errNoLocal.Error())
		}
		table = append(slices.Clone(routeTable), localTable...)
	}
	mux := http.NewServeMux()
	allowed := map[string][]string{} // path -> methods, in table order
	noHead := map[string]bool{}
	var paths []string
	for _, d := range table {
		if !d.in(groups) {
			continue
		}
		if d.TakesIdempotencyKey() && d.auth != authPrincipal {
			panic("httpapi: " + d.Method + " " + d.Path + " takes Idempotency-Key, which is scoped to the calling key, but authenticates none")
		}
		if d.Group == GroupAuth && d.TakesIdempotencyKey() && len(cfg.SealKeys) == 0 {
			panic("httpapi: the auth group stores answers that hold secrets for Idempotency-Key replays; Config.SealKeys is required")
		}
		mux.Handle(d.Method+" "+d.Path, s.route(d))
		noHead[d.Path] = noHead[d.Path] || d.noHead
		if _, ok := allowed[d.Path]; !ok {
			paths = append(paths, d.Path)
		}
		allowed[d.Path] = append(allowed[d.Path], d.Method)
	}
	for _, m := range cfg.Mounts {
		if len(groups) > 0 && !slices.Contains(groups, m.Group) {
			continue
		}
		if m.Headers != nil {
			s.mounts = append(s.mounts, m)
		}
		for _, rt := range m.Routes {
			pattern := rt.Method + " " + rt.Path
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				info(r).route = pattern
				m.Handler.ServeHTTP(w, r)
			})
			mux.Handle(pattern, h)
			if _, ok := allowed[rt.Path]; !ok {
				paths = append(paths, rt.Path)
			}
			allowed[rt.Path] = append(allowed[rt.Path], rt.Method)
		}
	}
	// A pattern without a method is less specific than one with, so these
	// catch only the methods a path does not serve. ServeMux would answer
	// 405 itself, but in text/plain; the API speaks problem+json.
	for _, path := range paths {
		methods := allowed[path]
		if slices.Contains(methods, http.MethodGet) && !noHead[path] {
			methods = append(methods, http.MethodHead) // ServeMux serves HEAD with GET
		}
		allow := strings.Join(methods, ", ")
		if noHead[path] {
			// More specific than GET's pattern for a HEAD.
			mux.Handle(http.MethodHead+" "+path, s.methodNotAllowed(path, allow))
		}
		mux.Handle(path, s.methodNotAllowed(path, allow))
	}
	mux.Handle("/", s.notFound())
	return s.outer(s.dispatch(mux))
}

// reqInfo is the per-request state the outer middleware logs. Handlers fill
// in the route, so that the log line does not depend on ServeMux internals.
type reqInfo struct {
	id    string
	route string
	// refused is the reason of a token found not valid by a request that
	// succeeds all the same (verify, introspection: 200, valid false), so
	// that its line is written as a refusal's, never sampled out.
	refused string
	// w and idHeader are outer's response writer and the value of its
	// X-Request-Id header, here so that a request allocates one struct,
	// not three.
	w        statusWriter
	idHeader [1]string
}

// reqInfoKey is the context key of a request's *reqInfo.
type reqInfoKey struct{}

// RequestID returns the id of the request r, as the X-Request-Id header
// and the request line give it: for a Mount's handler, which records it
// in what it shows and the events it writes.
func RequestID(r *http.Request) string { return info(r).id }

// info returns the info of r, which outer put in its context; a request
// served without outer gets an empty one.
func info(r *http.Request) *reqInfo {
	if ri, ok := r.Context().Value(reqInfoKey{}).(*reqInfo); ok {
		return ri
	}
	return &reqInfo{}
}

// statusWriter records the status for the log line and whether a response
// has begun, so that recovery knows whether it may still write one.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// outer assigns the request id, recovers from panics and logs one line per
// request. The line never holds a header, a query or a body: they may carry
// credentials.
func (s *server) outer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ri := &reqInfo{id: s.newRequestID(r)}
		ri.w.ResponseWriter = w
		sw := &ri.w
		// Straight into the map, with its canonical key: Header.Set
		// allocates a slice (see encode.go's header values).
		ri.idHeader[0] = ri.id
		w.Header()["X-Request-Id"] = ri.idHeader[:]
		r = r.WithContext(context.WithValue(r.Context(), reqInfoKey{}, ri))
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v) // the server's own signal to abort the response
				}
				s.log.ErrorContext(r.Context(), "panic serving request",
					"request_id", ri.id, "route", ri.route, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
				if sw.status == 0 {
					s.writeProblem(sw, r, &account.Error{Code: account.CodeInternal, Message: "an internal error occurred"})
				}
			}
			status := sw.status
			if status == 0 {
				status = http.StatusOK
			}
			// The record goes to the handler as Logger.LogAttrs would send
			// it, without the caller's program counter, which LogAttrs
			// looks up on every call for handlers with AddSource (ours have
			// none): 1.7% of a verify's instructions. duration_ms is in
			// milliseconds, to the microsecond. A success's line may be
			// sampled out; a refusal's or an error's never is.
			success := status < 400 && ri.refused == ""
			if ctx := r.Context(); s.log.Enabled(ctx, slog.LevelInfo) && (!success || s.sampler.Keep()) {
				end := time.Now()
				rec := slog.NewRecord(end, slog.LevelInfo, "request", 0)
				rec.AddAttrs(slog.String("method", r.Method), slog.String("route", ri.route),
					slog.Int("status", status), slog.Float64("duration_ms", float64(end.Sub(start).Microseconds())/1000),
					slog.String("request_id", ri.id))
				if every := s.sampler.Every(); success && every > 1 {
					rec.AddAttrs(slog.Int("sample_every", every))
				}
				if ri.refused != "" {
					rec.AddAttrs(slog.String("refused", ri.refused))
				}
				if s.audit != nil {
					rec.AddAttrs(slog.String("source_ip", s.audit.SourceIP(r)))
					if ri.route == "" {
						rec.AddAttrs(slog.String("path", auditPath(r)))
					}
				}
				s.log.Handler().Handle(ctx, rec)
			}
		}()
		next.ServeHTTP(sw, r)
	})
}

// auditPath is the path of a request no route matched, for its audit line:
// as sent, cut at MaxPathBytes (a longer one names no resource).
func auditPath(r *http.Request) string {
	p := r.URL.EscapedPath()
	if len(p) > MaxPathBytes {
		p = p[:MaxPathBytes]
	}
	return p
}

func (s *server) newRequestID(r *http.Request) string {
	if s.requestID != nil {
		if id := s.requestID(r); id != "" {
			return id
		}
	}
	// 128 random bits from the runtime's per-thread ChaCha8 generator
	// (math/rand/v2), seeded from the system's entropy: an id must be
	// unique and say nothing about other requests, but it is no secret,
	// and crypto/rand takes four times as long (59 ns against 14).
	var id [16]byte
	binary.LittleEndian.PutUint64(id[:8], rand.Uint64())
	binary.LittleEndian.PutUint64(id[8:], rand.Uint64())
	return hex.EncodeToString(id[:])
}

// route wraps a route's handler with its authentication.
func (s *server) route(d routeDef) http.Handler {
	pattern := d.Method + " " + d.Path
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info(r).route = pattern
		if d.auth == authClient {
			if err := d.handler(s, w, r, account.Principal{}); err != nil {
				s.writeOAuthError(w, r, err)
			}
			return
		}
		var p account.Principal
		var credential string
		if d.auth != authPublic {
			var ok bool
			if credential, ok = bearer(r); !ok {
				s.writeError(w, r, errNoCredential)
				return
			}
			if d.auth == authPrincipal {
				var err error
				if p, err = s.svc.Authenticate(r.Context(), credential); err != nil {
					s.writeError(w, r, err)
					return
				}
				setRateLimitHeaders(w.Header(), p.Usage)
				// Authorize before reading the body: a caller without the
				// scope learns nothing about what a valid request looks
				// like. The service checks again, from the same entry of
				// the domain's table; this only moves the 403 ahead of a
				// 400 or 415.
				if err := p.Authorize(d.Op); err != nil {
					s.writeError(w, r, err)
					return
				}
				// The changes the request makes record their events
				// with who made them and the request id.
				p = withEvents(r, p)
			}
		}
		// Like the body, the query is checked after authorization.
		if err := checkQuery(r.URL.RawQuery, d.Query); err != nil {
			s.writeError(w, r, err)
			return
		}
		if d.TakesIdempotencyKey() {
			if keys := r.Header.Values(headerIdempotencyKey); len(keys) > 0 {
				s.serveIdempotent(w, r, d, p, keys)
				return
			}
		}
		var err error
		if d.auth == authBearer {
			err = d.subject(s, w, r, credential)
		} else {
			err = d.handler(s, w, r, p)
		}
		if err != nil {
			s.writeError(w, r, err)
		}
	})
}

var errNoJWKS = errors.New("httpapi: Config.JWKS is nil; the auth group needs it to serve GET /v1/auth/jwks")

var errNoCredential = account.Errorf(account.CodeUnauthorized, "send a credential as Authorization: Bearer <credential>")

// bearer returns the credential of an "Authorization: Bearer <credential>"
// header. The scheme is case-insensitive (RFC 9110, section 11.1).
func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	scheme, credential, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	credential = strings.TrimLeft(credential, " ")
	// Two IndexByte scans (vectorised) rather than ContainsAny, which walks
	// a token of several hundred bytes one byte at a time.
	if credential == "" || strings.IndexByte(credential, ' ') >= 0 || strings.IndexByte(credential, '\t') >= 0 {
		return "", false
	}
	return credential, true
}

var errLongQuery = account.Errorf(account.CodeInvalidRequest, "the query string is longer than %d bytes, which no request of this API needs", MaxQueryBytes)

// checkQuery refuses a query string with a parameter the route does not
// take, with one of its parameters twice or empty, or with anything
// url.ParseQuery would drop without a word (a bad escape, a semicolon, a
// value without a name). Every parameter at fault is named. An empty
// parameter (?limit=, ?types=, ?owner_id) is not one left out: the
// handlers read both as "", which would answer a lookup of nothing with
// the whole list, and a client that sends an unset variable must learn
// that it did.
func checkQuery(raw string, takes []string) error {
	if raw == "" {
		return nil
	}
	if len(raw) > MaxQueryBytes {
		return errLongQuery
	}
	var fields []account.FieldError
	seen := map[string]bool{}
	reported := map[string]bool{}
	for pair := range strings.SplitSeq(raw, "&") {
		if pair == "" {
			continue
		}
		escaped, value, _ := strings.Cut(pair, "=")
		name, err := url.QueryUnescape(escaped)
		if err == nil {
			_, err = url.QueryUnescape(value)
		}
		if err != nil || name == "" || strings.Contains(pair, ";") {
			return account.Errorf(account.CodeInvalidRequest, "the query string is malformed: it must be name=value pairs joined by &, percent-encoded")
		}
		switch {
		case reported[name]:
		case !slices.Contains(takes, name):
			msg := "is not a query parameter of this request, which takes none"
			if len(takes) > 0 {
				msg = "is not a query parameter of this request, which takes " + strings.Join(takes, ", ")
			}
			fields = append(fields, account.FieldError{Field: name, Message: msg})
			reported[name] = true
		case seen[name]:
			fields = append(fields, account.FieldError{Field: name, Message: "appears more than once"})
			reported[name] = true
		case value == "":
			fields = append(fields, account.FieldError{Field: name, Message: "must not be empty; leave the parameter out instead"})
			reported[name] = true
		}
		seen[name] = true
	}
	if len(fields) > 0 {
		return &account.Error{Code: account.CodeInvalidRequest, Message: "the query string is invalid", Fields: fields}
	}
	return nil
}

// dispatch answers 404 for a path that is not in canonical form, before
// the router sees it: ServeMux would answer with a redirect to the cleaned
// path (307, text/html), which a client may follow with its credential to
// a resource it never named.
func (s *server) dispatch(mux *http.ServeMux) http.Handler {
	notFound := s.notFound()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !canonicalPath(r.URL) {
			notFound.ServeHTTP(w, r)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// canonicalPath reports whether u's path is the one spelling of a path:
// absolute; no empty, "." or ".." segment, escaped or not; no trailing
// slash; no escaped slash, which would hide a segment boundary inside a
// segment; at most MaxPathBytes, decoded or as sent. No route's path is
// spelled any other way.
func canonicalPath(u *url.URL) bool {
	p := u.Path
	if len(p) > MaxPathBytes || len(u.RawPath) > MaxPathBytes {
		return false // before the work below, which grows with the length
	}
	if p == "" || p[0] != '/' || path.Clean(p) != p {
		return false
	}
	escaped := u.EscapedPath()
	return !strings.Contains(escaped, "%2F") && !strings.Contains(escaped, "%2f")
}

func (s *server) methodNotAllowed(path, allow string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info(r).route = path
		w.Header().Set("Allow", allow)
		s.mountHeaders(w, r)
		s.writeError(w, r, account.Errorf(account.CodeMethodNotAllowed, "%s is not allowed on this resource; allowed: %s", r.Method, allow))
	})
}

func (s *server) notFound() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mountHeaders(w, r)
		s.writeError(w, r, account.Errorf(account.CodeNotFound, "no such resource; see the API description for the routes"))
	})
}

// mountHeaders sets the headers of the mount whose Prefix r's path is, or
// is under (Mount.Headers).
func (s *server) mountHeaders(w http.ResponseWriter, r *http.Request) {
	for _, m := range s.mounts {
		p := r.URL.Path
		if p == m.Prefix || strings.HasPrefix(p, m.Prefix+"/") {
			m.Headers(w.Header(), r)
		}
	}
}

// Package console is Latchkey's console for the people who run it: pages
// over the same account.Service as the API, server-rendered with
// html/template, for organizations, users, API keys, events and tokens.
//
// An operator signs in with an API key, which is exchanged at once for a
// console session (account.Service.StartSession): a short-lived access
// token with the key's grants, kept in an HttpOnly, SameSite=Strict cookie
// (Secure, except over plain http on a loopback address), and accepted by
// the console alone. The key is not kept, in the browser or here. Every
// change is a POST that http.CrossOriginProtection lets through only from
// the console's own origin; sign-out revokes the token. What the session's
// grants do not allow is neither offered nor served.
//
// The console is served by the local server and the auth function
// (httpapi.Mount, Routes), beside the API.
package console

import (
	"embed"
	"errors"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"latchkey/pkg/account"
	"latchkey/pkg/httpapi"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Path is where the console is served.
const Path = "/console"

// Config holds what the console depends on.
type Config struct {
	// Service carries out every operation. Required.
	Service *account.Service
	// Logger receives the causes of internal errors, with the request id.
	// Nil means slog.Default().
	Logger *slog.Logger
	// Usage answers the usage the key and organization pages chart. Nil
	// means none is counted: the pages say usage is not available.
	Usage UsageSource
}

// console is the state shared by the handlers.
type console struct {
	svc         *account.Service
	log         *slog.Logger
	usageSource UsageSource
	pages       map[string]*template.Template
}

// route is one of the console's routes and what serves it.
type route struct {
	method, path string
	// op is the service operation the route calls, which the session
	// must be allowed (account.Principal.Authorize, as the API's routes
	// ask it) to be served at all; "" for none. A page whose scope the
	// session lacks is not linked from any other.
	op account.Operation
	// public routes need no session: the sign-in and the static files.
	public bool
	serve  func(c *console, w http.ResponseWriter, r *http.Request, s *session)
}

// routes is the one list of the console's routes: Routes and New read it,
// and the template's auth function routes each (pkg/deploytest).
var routes = []route{
	{method: "GET", path: "/console", serve: (*console).home},
	{method: "GET", path: "/console/static/{file}", public: true},
	{method: "GET", path: "/console/sign-in", public: true},
	{method: "POST", path: "/console/sign-in", public: true},
	{method: "POST", path: "/console/sign-out", op: account.OpRevokeToken, serve: (*console).signOut},

	{method: "GET", path: "/console/organizations", op: account.OpListOrganizations, serve: (*console).organizations},
	{method: "POST", path: "/console/organizations", op: account.OpCreateOrganization, serve: (*console).createOrganization},
	{method: "GET", path: "/console/organizations/{id}", op: account.OpGetOrganization, serve: (*console).organization},
	{method: "POST", path: "/console/organizations/{id}", op: account.OpUpdateOrganization, serve: (*console).updateOrganization},
	{method: "GET", path: "/console/organizations/{id}/delete", op: account.OpDeleteOrganization, serve: (*console).confirmDeleteOrganization},
	{method: "POST", path: "/console/organizations/{id}/delete", op: account.OpDeleteOrganization, serve: (*console).deleteOrganization},
	{method: "POST", path: "/console/organizations/{id}/members", op: account.OpAddMember, serve: (*console).addMember},
	{method: "POST", path: "/console/organizations/{id}/members/{user_id}", op: account.OpUpdateMember, serve: (*console).updateMember},
	{method: "POST", path: "/console/organizations/{id}/members/{user_id}/remove", op: account.OpRemoveMember, serve: (*console).removeMember},

	{method: "GET", path: "/console/users", op: account.OpListUsers, serve: (*console).users},
	{method: "POST", path: "/console/users", op: account.OpCreateUser, serve: (*console).createUser},
	{method: "GET", path: "/console/users/{id}", op: account.OpGetUser, serve: (*console).user},
	{method: "POST", path: "/console/users/{id}", op: account.OpUpdateUser, serve: (*console).updateUser},
	{method: "GET", path: "/console/users/{id}/delete", op: account.OpDeleteUser, serve: (*console).confirmDeleteUser},
	{method: "POST", path: "/console/users/{id}/delete", op: account.OpDeleteUser, serve: (*console).deleteUser},

	{method: "GET", path: "/console/api-keys", op: account.OpListAPIKeys, serve: (*console).apiKeys},
	{method: "POST", path: "/console/api-keys", op: account.OpCreateAPIKey, serve: (*console).createAPIKey},
	{method: "GET", path: "/console/api-keys/{id}", op: account.OpGetAPIKey, serve: (*console).apiKey},
	{method: "POST", path: "/console/api-keys/{id}", op: account.OpUpdateAPIKey, serve: (*console).updateAPIKey},
	{method: "POST", path: "/console/api-keys/{id}/rotate", op: account.OpRotateAPIKey, serve: (*console).rotateAPIKey},
	{method: "POST", path: "/console/api-keys/{id}/enabled", op: account.OpUpdateAPIKey, serve: (*console).enableAPIKey},
	{method: "POST", path: "/console/api-keys/{id}/tokens/revoke", op: account.OpRevokeAPIKeyTokens, serve: (*console).revokeAPIKeyTokens},
	{method: "GET", path: "/console/api-keys/{id}/delete", op: account.OpDeleteAPIKey, serve: (*console).confirmDeleteAPIKey},
	{method: "POST", path: "/console/api-keys/{id}/delete", op: account.OpDeleteAPIKey, serve: (*console).deleteAPIKey},

	{method: "GET", path: "/console/events", op: account.OpListEvents, serve: (*console).events},

	{method: "GET", path: "/console/tokens", serve: (*console).tokens},
	{method: "POST", path: "/console/tokens", serve: (*console).verifyToken},
	{method: "POST", path: "/console/tokens/revoke", op: account.OpRevokeToken, serve: (*console).revokeToken},
}

// Routes returns the console's routes, in the group of the auth function,
// which serves it in AWS: a fresh copy on every call.
func Routes() []httpapi.Route {
	out := make([]httpapi.Route, len(routes))
	for i, rt := range routes {
		out[i] = httpapi.Route{Group: httpapi.GroupAuth, Method: rt.method, Path: rt.path}
	}
	return out
}

// Mount returns the console over svc as an httpapi.Mount, its routes and
// handler: an httpapi.MountFunc.
func Mount(svc *account.Service, log *slog.Logger) httpapi.Mount {
	return httpapi.Mount{Group: httpapi.GroupAuth, Routes: Routes(), Handler: New(Config{Service: svc, Logger: log, Usage: serviceUsage{svc}}),
		Prefix: Path, Headers: setHeaders}
}

var _ httpapi.MountFunc = Mount

// New returns the console's handler. It panics if cfg.Service is nil or a
// template does not parse: wiring bugs to catch at start-up.
func New(cfg Config) http.Handler {
	if cfg.Service == nil {
		panic("console: Config.Service is required")
	}
	c := &console{svc: cfg.Service, log: cfg.Logger, usageSource: cfg.Usage, pages: parsePages()}
	if c.log == nil {
		c.log = slog.Default()
	}
	mux := http.NewServeMux()
	static, err := fs.Sub(staticFS, "static")
	if err != nil {
		panic(err)
	}
	files := http.StripPrefix("/console/static/", http.FileServerFS(static))
	for _, rt := range routes {
		var h http.Handler
		switch rt.path {
		case "/console/static/{file}":
			h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Cache-Control", "no-cache")
				files.ServeHTTP(w, r)
			})
		case "/console/sign-in":
			if rt.method == http.MethodGet {
				h = http.HandlerFunc(c.signInPage)
			} else {
				h = http.HandlerFunc(c.signIn)
			}
		default:
			h = c.authenticated(rt)
		}
		mux.Handle(rt.method+" "+rt.path, h)
	}
	// Every change is a POST, which a browser sends cross-origin only with
	// Sec-Fetch-Site or Origin saying so: refused here, before the session
	// is read. GET and HEAD change nothing.
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.render(w, r, http.StatusForbidden, "error", &view{Title: "Request refused", Problem: &httpapi.Problem{
			Status: http.StatusForbidden, Title: "Cross-origin request refused", Code: account.CodeForbidden,
			Detail: "the console takes changes only from its own pages; open the console and try again",
		}})
	}))
	return headers(cop.Handler(mux))
}

// headers sets the security headers of every console response.
func headers(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		setHeaders(w.Header(), r)
		next.ServeHTTP(w, r)
	})
}

// setHeaders sets the console's security headers (OWASP's secure headers)
// in h, for its pages and for the API's 404 and 405 under Path alike:
// nothing is framed, sniffed, cached, sent in a Referer or loaded from
// another origin, and scripts and styles come from the console's own files
// only.
func setHeaders(h http.Header, r *http.Request) {
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "+
		"connect-src 'none'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Embedder-Policy", "require-corp")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Set("X-Permitted-Cross-Domain-Policies", "none")
	h.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=(), payment=(), usb=(), interest-cohort=()")
	h.Set("Cache-Control", "no-store")
	if secureRequest(r) {
		h.Set("Strict-Transport-Security", "max-age=31536000")
	}
}

// secureRequest reports whether r came over https: directly, or through
// API Gateway, which takes https only and says so in X-Forwarded-Proto.
func secureRequest(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

// session is the signed-in operator: the console session's principal and
// its token, which sign-out revokes.
type session struct {
	p     account.Principal
	token string
}

// Can reports whether the session's grants cover scope: what the pages
// offer.
func (s *session) Can(scope string) bool { return s != nil && account.ScopesCover(s.p.Scopes, scope) }

// KeyID is the id of the key the session signed in with.
func (s *session) KeyID() string { return s.p.KeyID }

// Scopes are the session's grants, the key's.
func (s *session) Scopes() []string { return s.p.Scopes }

// cookieFor says how the session cookie is set for the service's issuer:
// Secure, with the __Host- prefix (no subdomain can set or shadow it), at
// an https issuer; without Secure, for the console's path only, at a plain
// http one on a loopback address, where a browser cannot store a Secure
// cookie from a page it was not served over https. ok is false at a plain
// http issuer elsewhere: no session is started there.
func cookieFor(issuer string) (name, path string, secure, ok bool) {
	u, err := url.Parse(issuer)
	if err != nil {
		return "", "", false, false
	}
	switch {
	case u.Scheme == "https":
		return "__Host-latchkey_console", "/", true, true
	case u.Scheme == "http" && loopback(u.Hostname()):
		return "latchkey_console", Path, false, true
	}
	return "", "", false, false
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// sessionCookie returns the session's cookie, or one that removes it when
// token is "".
func (c *console) sessionCookie(token string, expires time.Time) *http.Cookie {
	name, path, secure, _ := cookieFor(c.svc.Issuer())
	ck := &http.Cookie{Name: name, Value: token, Path: path, Secure: secure, HttpOnly: true, SameSite: http.SameSiteStrictMode}
	if token == "" {
		ck.MaxAge = -1
	} else {
		ck.Expires = expires
	}
	return ck
}

// readSession resolves the request's session cookie; a missing, expired,
// revoked or foreign one is CodeUnauthorized.
func (c *console) readSession(r *http.Request) (*session, error) {
	name, _, _, ok := cookieFor(c.svc.Issuer())
	if !ok {
		return nil, errPlainHTTP
	}
	ck, err := r.Cookie(name)
	if err != nil || ck.Value == "" {
		return nil, account.Errorf(account.CodeUnauthorized, "sign in to use the console")
	}
	p, err := c.svc.AuthenticateSession(r.Context(), ck.Value)
	if err != nil {
		return nil, err
	}
	return &session{p: p, token: ck.Value}, nil
}

var errPlainHTTP = account.Errorf(account.CodeForbidden, "the console signs in over https only, or over plain http on a loopback address (localhost); this service's issuer is neither")

// authenticated serves rt to a signed-in session that its operation allows.
// Without a session, or with one that has ended, a GET goes to the sign-in
// page (and back after it), and a POST is refused there too: nothing of
// the page, nor of the change, is served. A session the operation refuses
// (without its scope) gets 403, the page that says so.
func (c *console) authenticated(rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s, err := c.readSession(r)
		if err != nil {
			if account.IsCode(err, account.CodeUnauthorized) {
				http.SetCookie(w, c.sessionCookie("", time.Time{}))
				target := "/console/sign-in"
				if r.Method == http.MethodGet && r.URL.Path != Path {
					target += "?next=" + url.QueryEscape(r.URL.RequestURI())
				}
				http.Redirect(w, r, target, http.StatusSeeOther)
				return
			}
			c.fail(w, r, nil, "error", &view{Title: "Console unavailable"}, err)
			return
		}
		if rt.op != "" {
			if err := s.p.Authorize(rt.op); err != nil {
				c.fail(w, r, s, "error", &view{Title: "Not allowed"}, err)
				return
			}
		}
		if r.Method == http.MethodPost {
			// The changes record their events as the API's do: this key,
			// this session's token, this request id.
			s.p = httpapi.WithEvents(r, s.p)
		}
		rt.serve(c, w, r, s)
	})
}

// safeNext returns next if it is a console page to go back to after the
// sign-in, and the console's home otherwise: never another site's page.
func safeNext(next string) string {
	if strings.HasPrefix(next, "/console/") && !strings.HasPrefix(next, "/console/sign-") &&
		!strings.Contains(next, "//") && !strings.Contains(next, `\`) {
		return next
	}
	return Path
}

// home goes to the first page the session may see.
func (c *console) home(w http.ResponseWriter, r *http.Request, s *session) {
	for _, p := range []struct{ scope, path string }{
		{account.ScopeReadOrganizations, "/console/organizations"},
		{account.ScopeReadUsers, "/console/users"},
		{account.ScopeReadAPIKeys, "/console/api-keys"},
		{account.ScopeReadEvents, "/console/events"},
	} {
		if s.Can(p.scope) {
			http.Redirect(w, r, p.path, http.StatusSeeOther)
			return
		}
	}
	http.Redirect(w, r, "/console/tokens", http.StatusSeeOther)
}

// fail renders page with the problem err is answered with, at its status.
// An internal or unavailable error is logged with the request id; the
// page shows the generic detail and the id.
func (c *console) fail(w http.ResponseWriter, r *http.Request, s *session, page string, v *view, err error) {
	pr := httpapi.ProblemOf(err)
	if pr.Code == account.CodeInternal || pr.Code == account.CodeUnavailable || !isDomain(err) {
		c.log.ErrorContext(r.Context(), "console request failed", "request_id", httpapi.RequestID(r), "code", string(pr.Code), "error", err.Error())
	}
	v.Session, v.Problem = s, &pr
	c.render(w, r, pr.Status, page, v)
}

func isDomain(err error) bool {
	var e *account.Error
	return errors.As(err, &e)
}

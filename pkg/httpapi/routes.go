package httpapi

import (
	"net/http"
	"slices"

	"latchkey/pkg/account"
)

// Group names a set of routes served together: each Lambda function serves
// one group, the local server serves them all.
type Group string

// The endpoint groups.
const (
	GroupAuth          Group = "auth"
	GroupOrganizations Group = "organizations"
	GroupUsers         Group = "users"
	// GroupVerify is GET /v1/auth/verify alone, one of GroupAuth's routes:
	// the verify function serves it, and nothing else, from its function
	// URL (template.yaml VerifyFunctionUrl), so that a verify skips API
	// Gateway's charge (docs/cost.md).
	GroupVerify Group = "verify"
)

// Route describes one operation of the API.
type Route struct {
	Group  Group
	Method string
	// Path is in OpenAPI and API Gateway form, e.g. /v1/users/{id}; it is
	// also a valid net/http ServeMux pattern.
	Path string
	// Op is the service operation the route calls: what it needs of its
	// caller (Scope) is written once, in the domain, for the service and
	// the route alike. Empty where the route wrapper authorizes no caller:
	// verify and the public documents, which have none, and the OAuth
	// endpoints, which authenticate their clients themselves (the service
	// authorizes the operation they call).
	Op account.Operation
	// Query lists the query parameters the route takes, each at most once.
	// Any other is refused with 400 invalid_request naming it, as an unknown
	// body field is: a parameter the server ignores would let a client
	// believe it had filtered (?plan=pro) when it had not.
	Query []string
}

// Scope is the scope an API key or access token needs to call the route,
// its operation's. It is empty for routes whose authorization depends on
// the request: the public JWKS, verify (the token is the subject, not the
// caller), token issuance (the requested scopes must be within the key's
// grants) and revocation (a key may revoke its own tokens; others need
// revoke:tokens).
func (r Route) Scope() string { return r.Op.Scope() }

// auth says how a route authenticates its caller.
type auth int

const (
	// authPrincipal: an API key or access token, resolved to a Principal
	// and authorized for the route's operation (account.Principal.Authorize:
	// its scope, and whether access tokens may call it) before the request
	// is read.
	authPrincipal auth = iota
	// authBearer: the bearer credential is the subject of the request
	// (verify), so any syntactically valid Bearer header is passed on as is,
	// to the route's subject handler.
	authBearer
	// authPublic: no credential at all.
	authPublic
	// authClient: an OAuth 2.0 endpoint, which authenticates its client
	// itself (client_secret_basic, client_secret_post, or a Bearer API key)
	// and answers errors in the form of RFC 6749 section 5.2.
	authClient
)

// handlerFunc serves one route. A returned error is written as problem+json;
// handlers that succeed write their own response.
type handlerFunc func(s *server, w http.ResponseWriter, r *http.Request, p account.Principal) error

// subjectFunc serves an authBearer route, given the bearer credential that
// the route wrapper read, so that the header is parsed once.
type subjectFunc func(s *server, w http.ResponseWriter, r *http.Request, credential string) error

type routeDef struct {
	Route
	auth    auth
	handler handlerFunc
	subject subjectFunc // instead of handler, for authBearer
	// noHead: a GET route that takes no HEAD (405, Allow without it),
	// where ServeMux would serve HEAD with GET: verify, whose answer is a
	// use of the token's key, counted and paid for, and a HEAD would pay
	// for a verdict it never gets.
	noHead bool
}

// routeTable is the single list of routes: Routes exposes it, New builds the
// router from it, and the tests walk it, so none of them can drift.
var routeTable = []routeDef{
	{Route: Route{GroupAuth, http.MethodPost, "/v1/auth/token", account.OpIssueToken, nil}, handler: (*server).issueToken},
	{Route: Route{GroupAuth, http.MethodPost, "/v1/auth/revoke", account.OpRevokeToken, nil}, handler: (*server).revokeToken},
	{Route: Route{GroupAuth, http.MethodGet, pathVerify, "", nil}, auth: authBearer, subject: (*server).verifyToken, noHead: true},
	{Route: Route{GroupAuth, http.MethodGet, "/v1/auth/jwks", "", nil}, auth: authPublic, handler: (*server).serveJWKS},
	// The OAuth endpoints take no query parameter: theirs go in the body.
	{Route: Route{GroupAuth, http.MethodGet, pathStatusLists, "", nil}, auth: authPublic, handler: (*server).serveStatusLists},
	{Route: Route{GroupAuth, http.MethodGet, pathStatusLists + "/{id}", "", nil}, auth: authPublic, handler: (*server).serveStatusList},
	{Route: Route{GroupAuth, http.MethodPost, "/oauth2/token", "", nil}, auth: authClient, handler: (*server).oauthToken},
	{Route: Route{GroupAuth, http.MethodPost, "/oauth2/introspect", "", nil}, auth: authClient, handler: (*server).oauthIntrospect},
	{Route: Route{GroupAuth, http.MethodPost, "/oauth2/revoke", "", nil}, auth: authClient, handler: (*server).oauthRevoke},
	{Route: Route{GroupAuth, http.MethodGet, wellKnownAuthorizationServer, "", nil}, auth: authPublic, handler: (*server).serveMetadata},
	{Route: Route{GroupAuth, http.MethodGet, wellKnownOpenIDConfiguration, "", nil}, auth: authPublic, handler: (*server).serveMetadata},
	{Route: Route{GroupAuth, http.MethodGet, wellKnownJWKS, "", nil}, auth: authPublic, handler: (*server).serveJWKS},
	{Route: Route{GroupAuth, http.MethodPost, "/v1/api-keys", account.OpCreateAPIKey, nil}, handler: (*server).createAPIKey},
	{Route: Route{GroupAuth, http.MethodGet, "/v1/api-keys", account.OpListAPIKeys, listQuery("organization_id", "owner_id")}, handler: (*server).listAPIKeys},
	{Route: Route{GroupAuth, http.MethodGet, "/v1/api-keys/{id}", account.OpGetAPIKey, nil}, handler: (*server).getAPIKey},
	{Route: Route{GroupAuth, http.MethodPatch, "/v1/api-keys/{id}", account.OpUpdateAPIKey, nil}, handler: (*server).updateAPIKey},
	{Route: Route{GroupAuth, http.MethodDelete, "/v1/api-keys/{id}", account.OpDeleteAPIKey, nil}, handler: (*server).deleteAPIKey},
	{Route: Route{GroupAuth, http.MethodPost, "/v1/api-keys/{id}/rotate", account.OpRotateAPIKey, nil}, handler: (*server).rotateAPIKey},
	{Route: Route{GroupAuth, http.MethodGet, "/v1/api-keys/{id}/usage", account.OpAPIKeyUsage, usageQuery}, handler: (*server).apiKeyUsage},
	{Route: Route{GroupAuth, http.MethodGet, "/v1/api-keys/{id}/tokens", account.OpListAPIKeyTokens, listQuery()}, handler: (*server).listAPIKeyTokens},
	{Route: Route{GroupAuth, http.MethodPost, "/v1/api-keys/{id}/tokens/revoke", account.OpRevokeAPIKeyTokens, nil}, handler: (*server).revokeAPIKeyTokens},
	{Route: Route{GroupAuth, http.MethodGet, "/v1/events", account.OpListEvents, listQuery("after", "before", "types")}, handler: (*server).listEvents},

	{Route: Route{GroupOrganizations, http.MethodGet, "/v1/organizations", account.OpListOrganizations, listQuery("slug", "external_id")}, handler: (*server).listOrganizations},
	{Route: Route{GroupOrganizations, http.MethodPost, "/v1/organizations", account.OpCreateOrganization, nil}, handler: (*server).createOrganization},
	{Route: Route{GroupOrganizations, http.MethodGet, "/v1/organizations/{id}", account.OpGetOrganization, nil}, handler: (*server).getOrganization},
	{Route: Route{GroupOrganizations, http.MethodPatch, "/v1/organizations/{id}", account.OpUpdateOrganization, nil}, handler: (*server).updateOrganization},
	{Route: Route{GroupOrganizations, http.MethodDelete, "/v1/organizations/{id}", account.OpDeleteOrganization, nil}, handler: (*server).deleteOrganization},
	{Route: Route{GroupOrganizations, http.MethodGet, "/v1/organizations/{id}/usage", account.OpOrganizationUsage, usageQuery}, handler: (*server).organizationUsage},
	{Route: Route{GroupOrganizations, http.MethodGet, "/v1/organizations/{id}/members", account.OpListMembers, listQuery()}, handler: (*server).listMembers},
	{Route: Route{GroupOrganizations, http.MethodPost, "/v1/organizations/{id}/members", account.OpAddMember, nil}, handler: (*server).addMember},
	{Route: Route{GroupOrganizations, http.MethodGet, "/v1/organizations/{id}/members/{user_id}", account.OpGetMember, nil}, handler: (*server).getMember},
	{Route: Route{GroupOrganizations, http.MethodPatch, "/v1/organizations/{id}/members/{user_id}", account.OpUpdateMember, nil}, handler: (*server).updateMember},
	{Route: Route{GroupOrganizations, http.MethodDelete, "/v1/organizations/{id}/members/{user_id}", account.OpRemoveMember, nil}, handler: (*server).removeMember},

	{Route: Route{GroupUsers, http.MethodGet, "/v1/users", account.OpListUsers, listQuery("email", "external_id")}, handler: (*server).listUsers},
	{Route: Route{GroupUsers, http.MethodPost, "/v1/users", account.OpCreateUser, nil}, handler: (*server).createUser},
	{Route: Route{GroupUsers, http.MethodGet, "/v1/users/{id}", account.OpGetUser, nil}, handler: (*server).getUser},
	{Route: Route{GroupUsers, http.MethodPut, "/v1/users/{id}", account.OpUpdateUser, nil}, handler: (*server).updateUser},
	{Route: Route{GroupUsers, http.MethodPatch, "/v1/users/{id}", account.OpUpdateUser, nil}, handler: (*server).patchUser},
	{Route: Route{GroupUsers, http.MethodDelete, "/v1/users/{id}", account.OpDeleteUser, nil}, handler: (*server).deleteUser},
	{Route: Route{GroupUsers, http.MethodGet, "/v1/users/{id}/organizations", account.OpListUserMemberships, listQuery()}, handler: (*server).listUserOrganizations},
}

// listQuery returns the query parameters of a list: paging, then extra.
// usageQuery is the query of the usage routes.
var usageQuery = []string{"from", "to", "interval"}

func listQuery(extra ...string) []string {
	return append([]string{"limit", "cursor"}, extra...)
}

// Public reports whether the route takes no credential (the key set and
// the authorization server metadata; the local server's own routes).
func (r Route) Public() bool { return r.def().auth == authPublic }

// OAuth reports whether the route is an OAuth 2.0 endpoint: a form body,
// client authentication (an unauthenticated request is 401
// invalid_client), and errors as {"error", "error_description"} (RFC 6749
// section 5.2) instead of problem+json.
func (r Route) OAuth() bool { return r.def().auth == authClient }

// In reports whether a router of group g serves the route: those of g,
// and for GroupVerify, verify, which is GroupAuth's too.
func (r Route) In(g Group) bool { return r.def().in([]Group{g}) }

// in reports whether a router of groups serves d: every route when groups
// is empty, else those of the named groups, and verify for GroupVerify.
func (d routeDef) in(groups []Group) bool {
	if len(groups) == 0 || slices.Contains(groups, d.Group) {
		return true
	}
	return slices.Contains(groups, GroupVerify) && d.auth == authBearer && d.Method == http.MethodGet && d.Path == pathVerify
}

// pathStatusLists is the aggregation endpoint; a list is under it.
const pathStatusLists = "/v1/auth/status-lists"

// pathVerify is the path of verify, the one route of GroupVerify.
const pathVerify = "/v1/auth/verify"

func (r Route) def() routeDef {
	for _, table := range [][]routeDef{routeTable, localTable} {
		for _, d := range table {
			if d.Method == r.Method && d.Path == r.Path {
				return d
			}
		}
	}
	return routeDef{}
}

// Routes returns every route of the API, in a stable order. It is the single
// list that New builds its router from; a fresh copy on every call.
func Routes() []Route {
	out := make([]Route, len(routeTable))
	for i, d := range routeTable {
		out[i] = d.Route
		out[i].Query = slices.Clone(d.Query)
	}
	return out
}

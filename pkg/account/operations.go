package account

import "fmt"

// Operation names a Service operation that a principal calls.
type Operation string

// The operations, each named after its Service method.
const (
	OpIssueToken   Operation = "IssueToken"
	OpRevokeToken  Operation = "RevokeToken"
	OpStartSession Operation = "StartSession"

	OpCreateAPIKey Operation = "CreateAPIKey"
	OpGetAPIKey    Operation = "GetAPIKey"
	OpListAPIKeys  Operation = "ListAPIKeys"
	OpUpdateAPIKey Operation = "UpdateAPIKey"
	OpRotateAPIKey Operation = "RotateAPIKey"
	OpDeleteAPIKey Operation = "DeleteAPIKey"

	OpCreateOrganization Operation = "CreateOrganization"
	OpGetOrganization    Operation = "GetOrganization"
	OpListOrganizations  Operation = "ListOrganizations"
	OpUpdateOrganization Operation = "UpdateOrganization"
	OpDeleteOrganization Operation = "DeleteOrganization"
	OpAddMember          Operation = "AddMember"
	OpListMembers        Operation = "ListMembers"
	OpGetMember          Operation = "GetMember"
	OpUpdateMember       Operation = "UpdateMember"
	OpRemoveMember       Operation = "RemoveMember"

	OpCreateUser          Operation = "CreateUser"
	OpGetUser             Operation = "GetUser"
	OpListUsers           Operation = "ListUsers"
	OpUpdateUser          Operation = "UpdateUser"
	OpDeleteUser          Operation = "DeleteUser"
	OpListUserMemberships Operation = "ListUserMemberships"

	OpListEvents Operation = "ListEvents"
)

// access is what an operation asks of its caller before anything else.
type access struct {
	// scope the caller must hold; "" when what it needs depends on the
	// request, which the operation then checks itself.
	scope string
	// callers says which credentials may call it.
	callers callers
}

// callers says which credentials may call an operation.
type callers int

const (
	// anyCaller: an API key or any access token of it.
	anyCaller callers = iota
	// keyOrSession: an API key, or a console session of it
	// (Principal.Session), which acts with the key's grants; not an
	// access token issued through the API. API key management.
	keyOrSession
	// keyOnly: an API key, and no token at all, a session's included:
	// what makes new credentials from the key itself (token issuance, a
	// session), so that no token outlives or outgrows the key's own
	// sign-in.
	keyOnly
)

// operations is the one place where an operation's scope is written. The
// service checks it first thing (Authorize), whoever calls; httpapi's
// route table names the operation of each route, checks the same entry
// before it reads the request, and reports its scope in Route.Scope, which
// openapi.yaml's x-required-scope must match (TestOpenAPIMatchesRoutes).
var operations = map[Operation]access{
	// The requested scopes must be within the key's grants.
	OpIssueToken: {callers: keyOnly},
	// A key may revoke its own tokens; others' need ScopeRevokeTokens.
	OpRevokeToken: {},
	// A session carries every grant of the key that signs in.
	OpStartSession: {callers: keyOnly},

	OpCreateAPIKey: {ScopeWriteAPIKeys, keyOrSession},
	OpGetAPIKey:    {ScopeReadAPIKeys, keyOrSession},
	OpListAPIKeys:  {ScopeReadAPIKeys, keyOrSession},
	OpUpdateAPIKey: {ScopeWriteAPIKeys, keyOrSession},
	OpRotateAPIKey: {ScopeWriteAPIKeys, keyOrSession},
	OpDeleteAPIKey: {ScopeWriteAPIKeys, keyOrSession},

	OpCreateOrganization: {ScopeWriteOrganizations, anyCaller},
	OpGetOrganization:    {ScopeReadOrganizations, anyCaller},
	OpListOrganizations:  {ScopeReadOrganizations, anyCaller},
	OpUpdateOrganization: {ScopeWriteOrganizations, anyCaller},
	OpDeleteOrganization: {ScopeDeleteOrganizations, anyCaller},
	OpAddMember:          {ScopeWriteOrganizations, anyCaller},
	OpListMembers:        {ScopeReadOrganizations, anyCaller},
	OpGetMember:          {ScopeReadOrganizations, anyCaller},
	OpUpdateMember:       {ScopeWriteOrganizations, anyCaller},
	OpRemoveMember:       {ScopeWriteOrganizations, anyCaller},

	OpCreateUser:          {ScopeWriteUsers, anyCaller},
	OpGetUser:             {ScopeReadUsers, anyCaller},
	OpListUsers:           {ScopeReadUsers, anyCaller},
	OpUpdateUser:          {ScopeWriteUsers, anyCaller},
	OpDeleteUser:          {ScopeDeleteUsers, anyCaller},
	OpListUserMemberships: {ScopeReadUsers, anyCaller},

	OpListEvents: {ScopeReadEvents, anyCaller},
}

// Scope returns the scope the operation needs, or "" when what it needs
// depends on the request (OpIssueToken, OpRevokeToken).
func (op Operation) Scope() string { return operations[op].scope }

// KeyOnly reports whether only an API key may call the operation through
// the API: an access token issued through it may not. A console session
// (Principal.Session) may call those that manage API keys.
func (op Operation) KeyOnly() bool { return operations[op].callers != anyCaller }

// Authorize returns nil if the principal may call op: CodeForbidden for an
// access token on an operation only API keys (and, for key management,
// console sessions) may call, CodeInsufficientScope without the
// operation's scope.
func (p Principal) Authorize(op Operation) error {
	a, ok := operations[op]
	if !ok {
		return Internal(fmt.Errorf("account: unknown operation %q", op))
	}
	switch {
	case a.callers == keyOnly && p.Session:
		return errSessionRefused
	case a.callers != anyCaller:
		return p.RequireKey(a.scope)
	}
	if a.scope == "" {
		return nil
	}
	return p.Require(a.scope)
}

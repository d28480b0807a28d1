package account

import "fmt"

// Operation names a Service operation that a principal calls.
type Operation string

// The operations, each named after its Service method.
const (
	OpIssueToken  Operation = "IssueToken"
	OpRevokeToken Operation = "RevokeToken"

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
	// keyOnly: an access token may not call it, whatever its scopes.
	keyOnly bool
}

// operations is the one place where an operation's scope is written. The
// service checks it first thing (Authorize), whoever calls; httpapi's
// route table names the operation of each route, checks the same entry
// before it reads the request, and reports its scope in Route.Scope, which
// openapi.yaml's x-required-scope must match (TestOpenAPIMatchesRoutes).
var operations = map[Operation]access{
	// The requested scopes must be within the key's grants.
	OpIssueToken: {keyOnly: true},
	// A key may revoke its own tokens; others' need ScopeRevokeTokens.
	OpRevokeToken: {},

	OpCreateAPIKey: {ScopeWriteAPIKeys, true},
	OpGetAPIKey:    {ScopeReadAPIKeys, true},
	OpListAPIKeys:  {ScopeReadAPIKeys, true},
	OpUpdateAPIKey: {ScopeWriteAPIKeys, true},
	OpRotateAPIKey: {ScopeWriteAPIKeys, true},
	OpDeleteAPIKey: {ScopeWriteAPIKeys, true},

	OpCreateOrganization: {ScopeWriteOrganizations, false},
	OpGetOrganization:    {ScopeReadOrganizations, false},
	OpListOrganizations:  {ScopeReadOrganizations, false},
	OpUpdateOrganization: {ScopeWriteOrganizations, false},
	OpDeleteOrganization: {ScopeDeleteOrganizations, false},
	OpAddMember:          {ScopeWriteOrganizations, false},
	OpListMembers:        {ScopeReadOrganizations, false},
	OpGetMember:          {ScopeReadOrganizations, false},
	OpUpdateMember:       {ScopeWriteOrganizations, false},
	OpRemoveMember:       {ScopeWriteOrganizations, false},

	OpCreateUser:          {ScopeWriteUsers, false},
	OpGetUser:             {ScopeReadUsers, false},
	OpListUsers:           {ScopeReadUsers, false},
	OpUpdateUser:          {ScopeWriteUsers, false},
	OpDeleteUser:          {ScopeDeleteUsers, false},
	OpListUserMemberships: {ScopeReadUsers, false},

	OpListEvents: {ScopeReadEvents, false},
}

// Scope returns the scope the operation needs, or "" when what it needs
// depends on the request (OpIssueToken, OpRevokeToken).
func (op Operation) Scope() string { return operations[op].scope }

// KeyOnly reports whether only an API key may call the operation.
func (op Operation) KeyOnly() bool { return operations[op].keyOnly }

// Authorize returns nil if the principal may call op: CodeForbidden for an
// access token on an operation only API keys may call, CodeInsufficientScope
// without the operation's scope.
func (p Principal) Authorize(op Operation) error {
	a, ok := operations[op]
	if !ok {
		return Internal(fmt.Errorf("account: unknown operation %q", op))
	}
	if a.keyOnly {
		return p.RequireKey(a.scope)
	}
	if a.scope == "" {
		return nil
	}
	return p.Require(a.scope)
}

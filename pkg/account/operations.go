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
	// currentSecret: a key's previous secret, during a rotation's grace
	// period, may not call it (CodePreviousSecret). It is set on the
	// operations that create, change, rotate or delete API keys, whichever
	// key they name: with any of them, a leaked old secret could keep a
	// secret of its own (rotating its key with no grace period, or a key
	// below, or creating one) and lock the rightful holder out.
	currentSecret bool
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

	OpCreateAPIKey: {scope: ScopeWriteAPIKeys, keyOnly: true, currentSecret: true},
	OpGetAPIKey:    {scope: ScopeReadAPIKeys, keyOnly: true},
	OpListAPIKeys:  {scope: ScopeReadAPIKeys, keyOnly: true},
	OpUpdateAPIKey: {scope: ScopeWriteAPIKeys, keyOnly: true, currentSecret: true},
	OpRotateAPIKey: {scope: ScopeWriteAPIKeys, keyOnly: true, currentSecret: true},
	OpDeleteAPIKey: {scope: ScopeWriteAPIKeys, keyOnly: true, currentSecret: true},

	OpCreateOrganization: {scope: ScopeWriteOrganizations},
	OpGetOrganization:    {scope: ScopeReadOrganizations},
	OpListOrganizations:  {scope: ScopeReadOrganizations},
	OpUpdateOrganization: {scope: ScopeWriteOrganizations},
	OpDeleteOrganization: {scope: ScopeDeleteOrganizations},
	OpAddMember:          {scope: ScopeWriteOrganizations},
	OpListMembers:        {scope: ScopeReadOrganizations},
	OpGetMember:          {scope: ScopeReadOrganizations},
	OpUpdateMember:       {scope: ScopeWriteOrganizations},
	OpRemoveMember:       {scope: ScopeWriteOrganizations},

	OpCreateUser:          {scope: ScopeWriteUsers},
	OpGetUser:             {scope: ScopeReadUsers},
	OpListUsers:           {scope: ScopeReadUsers},
	OpUpdateUser:          {scope: ScopeWriteUsers},
	OpDeleteUser:          {scope: ScopeDeleteUsers},
	OpListUserMemberships: {scope: ScopeReadUsers},

	OpListEvents: {scope: ScopeReadEvents},
}

// Scope returns the scope the operation needs, or "" when what it needs
// depends on the request (OpIssueToken, OpRevokeToken).
func (op Operation) Scope() string { return operations[op].scope }

// KeyOnly reports whether only an API key may call the operation.
func (op Operation) KeyOnly() bool { return operations[op].keyOnly }

// errPreviousSecret answers a previous secret on an operation that
// manages keys.
var errPreviousSecret = Errorf(CodePreviousSecret, "this is the API key's previous secret, which a rotation replaced: it still authenticates until its grace period ends, but only the current secret creates, changes, rotates or deletes API keys")

// Authorize returns nil if the principal may call op: CodeForbidden for an
// access token on an operation only API keys may call, CodePreviousSecret
// for a key's previous secret on one that manages keys,
// CodeInsufficientScope without the operation's scope.
func (p Principal) Authorize(op Operation) error {
	a, ok := operations[op]
	if !ok {
		return Internal(fmt.Errorf("account: unknown operation %q", op))
	}
	if a.currentSecret && p.PreviousSecret {
		return errPreviousSecret
	}
	if a.keyOnly {
		return p.RequireKey(a.scope)
	}
	if a.scope == "" {
		return nil
	}
	return p.Require(a.scope)
}

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

	OpAPIKeyUsage        Operation = "APIKeyUsage"
	OpListAPIKeyTokens   Operation = "ListAPIKeyTokens"
	OpRevokeAPIKeyTokens Operation = "RevokeAPIKeyTokens"

	OpCreateOrganization Operation = "CreateOrganization"
	OpGetOrganization    Operation = "GetOrganization"
	OpOrganizationUsage  Operation = "OrganizationUsage"
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
	// currentSecret: a key's previous secret, during a rotation's grace
	// period, may not call it (CodePreviousSecret). It is set on the
	// operations that create, change, rotate or delete API keys, whichever
	// key they name, and on a console sign-in, whose session manages keys:
	// with any of them, a leaked old secret could keep a secret of its own
	// (rotating its key with no grace period, or a key below, or creating
	// one) and lock the rightful holder out.
	currentSecret bool
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
	OpStartSession: {callers: keyOnly, currentSecret: true},

	OpCreateAPIKey: {scope: ScopeWriteAPIKeys, callers: keyOrSession, currentSecret: true},
	OpGetAPIKey:    {scope: ScopeReadAPIKeys, callers: keyOrSession},
	OpListAPIKeys:  {scope: ScopeReadAPIKeys, callers: keyOrSession},
	OpUpdateAPIKey: {scope: ScopeWriteAPIKeys, callers: keyOrSession, currentSecret: true},
	OpRotateAPIKey: {scope: ScopeWriteAPIKeys, callers: keyOrSession, currentSecret: true},
	OpDeleteAPIKey: {scope: ScopeWriteAPIKeys, callers: keyOrSession, currentSecret: true},
	// A key's tokens are read as the key is, and revoked all at once with
	// the scope that revokes any one of them; neither is a change of the
	// key's grants or secret, which write:api_keys guards.
	OpListAPIKeyTokens: {scope: ScopeReadAPIKeys, callers: keyOrSession},
	// Usage is read as what it counts is.
	OpAPIKeyUsage:        {scope: ScopeReadAPIKeys, callers: keyOrSession},
	OpRevokeAPIKeyTokens: {scope: ScopeRevokeTokens, callers: keyOrSession, currentSecret: true},

	OpCreateOrganization: {scope: ScopeWriteOrganizations},
	OpGetOrganization:    {scope: ScopeReadOrganizations},
	OpOrganizationUsage:  {scope: ScopeReadOrganizations},
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

// KeyOnly reports whether only an API key may call the operation through
// the API: an access token issued through it may not. A console session
// (Principal.Session) may call those that manage API keys.
func (op Operation) KeyOnly() bool { return operations[op].callers != anyCaller }

// errPreviousSecret answers a previous secret on an operation that
// manages keys.
var errPreviousSecret = Errorf(CodePreviousSecret, "this is the API key's previous secret, which a rotation replaced: it still authenticates until its grace period ends, but only the current secret creates, changes, rotates or deletes API keys, or signs in to the console")

// Authorize returns nil if the principal may call op: CodeForbidden for an
// access token on an operation only API keys (and, for key management,
// console sessions) may call, CodePreviousSecret for a key's previous
// secret on one that manages keys or signs in to the console,
// CodeInsufficientScope without the operation's scope.
func (p Principal) Authorize(op Operation) error {
	a, ok := operations[op]
	if !ok {
		return Internal(fmt.Errorf("account: unknown operation %q", op))
	}
	if a.currentSecret && p.PreviousSecret {
		return errPreviousSecret
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

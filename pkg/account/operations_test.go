package account_test

import (
	"testing"

	"latchkey/pkg/account"
)

// TestPrincipal_Authorize checks the rules the operations table states,
// through the principal an operation's caller is.
func TestPrincipal_Authorize(t *testing.T) {
	key := account.Principal{KeyID: "key_1", Scopes: []string{account.ScopeReadUsers, account.ScopeWriteAPIKeys}}
	tok := key
	tok.TokenID = "tok_1"
	session := tok
	session.Session = true

	for _, tc := range []struct {
		name string
		p    account.Principal
		op   account.Operation
		want account.Code // "" for allowed
	}{
		{"key with the scope", key, account.OpGetUser, ""},
		{"token with the scope", tok, account.OpListUsers, ""},
		{"key without the scope", key, account.OpDeleteUser, account.CodeInsufficientScope},
		{"key on a key-only operation", key, account.OpCreateAPIKey, ""},
		{"token on a key-only operation", tok, account.OpCreateAPIKey, account.CodeForbidden},
		{"token on token issuance", tok, account.OpIssueToken, account.CodeForbidden},
		{"key on token issuance, which needs no fixed scope", key, account.OpIssueToken, ""},
		{"token on revocation, checked by the operation itself", tok, account.OpRevokeToken, ""},
		{"console session on key management", session, account.OpCreateAPIKey, ""},
		{"console session on token issuance", session, account.OpIssueToken, account.CodeForbidden},
		{"console session on a new session", session, account.OpStartSession, account.CodeForbidden},
		{"token on a new session", tok, account.OpStartSession, account.CodeForbidden},
		{"key on a new session", key, account.OpStartSession, ""},
		{"unknown operation", key, account.Operation("Frobnicate"), account.CodeInternal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.p.Authorize(tc.op)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("got %v, want allowed", err)
				}
				return
			}
			wantCode(t, err, tc.want)
			if tc.want == account.CodeInsufficientScope {
				if got := asError(t, err).Scope; got != tc.op.Scope() {
					t.Errorf("error names scope %q, want the operation's %q", got, tc.op.Scope())
				}
			}
		})
	}
	if got := account.OpDeleteUser.Scope(); got != account.ScopeDeleteUsers {
		t.Errorf("OpDeleteUser.Scope() = %q, want %q", got, account.ScopeDeleteUsers)
	}
}

package account_test

import (
	"runtime"
	"strings"
	"testing"

	"latchkey/pkg/account"
)

// allocated returns the bytes f allocates per call, averaged over a few
// calls: a measure of work that grows with the input, which a check of the
// input's size must keep flat.
func allocated(f func()) uint64 {
	const runs = 5
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range runs {
		f()
	}
	runtime.ReadMemStats(&after)
	return (after.TotalAlloc - before.TotalAlloc) / runs
}

// TestService_WorkBoundedByInput sends lists and strings far over their
// limits: each is refused from its count or length, before any work per
// element or per byte. The bound is far below the size of the input, and
// above the few kilobytes that refusing it takes.
func TestService_WorkBoundedByInput(t *testing.T) {
	e := newEnv(t)
	const bound = 16 << 10
	huge := strings.Repeat("a", 1<<20)
	hugeScope, hugeEmail := "read:"+huge, huge+"@example.com"
	scopes := make([]string, 6659) // as many as fit in a 64 KiB body
	for i := range scopes {
		scopes[i] = "read:r" + itoa(int64(i))
	}
	tests := []struct {
		name  string
		field string
		call  func() error
	}{
		{"IssueToken/Scopes", "scopes", func() error {
			_, _, err := e.svc.IssueToken(e.ctx, e.admin, account.TokenRequest{Scopes: scopes})
			return err
		}},
		{"CreateAPIKey/Scopes", "scopes", func() error {
			_, _, err := e.svc.CreateAPIKey(e.ctx, e.admin, account.NewAPIKey{Name: "k", Scopes: scopes})
			return err
		}},
		{"IssueToken/LongScope", "scopes[0]", func() error {
			_, _, err := e.svc.IssueToken(e.ctx, e.admin, account.TokenRequest{Scopes: []string{hugeScope}})
			return err
		}},
		{"ListUsers/Cursor", "cursor", func() error {
			_, err := e.svc.ListUsers(e.ctx, e.admin, account.UserQuery{PageRequest: account.PageRequest{Cursor: huge}})
			return err
		}},
		{"ListUsers/Email", "email", func() error {
			_, err := e.svc.ListUsers(e.ctx, e.admin, account.UserQuery{Email: hugeEmail})
			return err
		}},
		{"CreateUser/Email", "email", func() error {
			_, err := e.svc.CreateUser(e.ctx, e.admin, account.NewUser{Name: "x", Email: hugeEmail})
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantFields(t, tt.call(), tt.field)
			if got := allocated(func() { tt.call() }); got > bound {
				t.Errorf("allocated %d bytes per call, want at most %d: the input is worked on before its size is checked", got, bound)
			}
		})
	}
}

// TestCheckIssuer_Length: an issuer longer than MaxIssuerLength is refused
// at start-up, so that no token the limits allow outgrows what verifiers
// accept (see token.TestSigner_Longest, which signs with the longest).
func TestCheckIssuer_Length(t *testing.T) {
	host := func(n int) string { return "https://" + strings.Repeat("a", n-len("https://")) }
	if err := account.CheckIssuer(host(account.MaxIssuerLength)); err != nil {
		t.Errorf("the longest issuer: %v", err)
	}
	if err := account.CheckIssuer(host(account.MaxIssuerLength + 1)); err == nil {
		t.Error("an issuer over MaxIssuerLength: got nil error")
	}
}

package token

import "fmt"

// EnvInlineRevocation is optional, read where tokens are signed (the
// auth function, the local server): "true" (the default) signs the
// private claim irv on every token, so that its revocation is recorded
// on its key and its verify reads nothing else; "false" leaves it out,
// so that every token is revoked and verified as a release without the
// claim does (account.Options.NoInlineRevocation): the first step of an
// upgrade from that release (docs/deploying.md).
const EnvInlineRevocation = "INLINE_REVOCATION"

// ParseInlineRevocation reads EnvInlineRevocation's value: "true" or
// "false", exactly; empty is true.
func ParseInlineRevocation(s string) (bool, error) {
	switch s {
	case "", "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("token: %q is neither true nor false", s)
}

package console

import (
	"net/http"
	"strings"

	"latchkey/pkg/account"
)

type tokensData struct {
	Token        string
	Verification *account.Verification
	// CanRevoke: the session may revoke the token, its key's own or with
	// revoke:tokens.
	CanRevoke bool
}

// tokens is the page where an operator pastes an access token to see what
// introspection says of it.
func (c *console) tokens(w http.ResponseWriter, r *http.Request, s *session) {
	v := newView(r, s, "Tokens", "tokens")
	v.Data = tokensData{}
	c.render(w, r, http.StatusOK, "tokens", v)
}

// verifyToken says what /oauth2/introspect says of the pasted token to
// the session's key, with the claims of a valid one, and offers to revoke
// it: another tenant's token is not valid to a session bound to an
// organization, and spends none of its key's credits. The page shows no
// reason, as introspection gives none: the reason for another tenant's
// token would tell of its key's state.
func (c *console) verifyToken(w http.ResponseWriter, r *http.Request, s *session) {
	v := newView(r, s, "Tokens", "tokens")
	d := tokensData{}
	err := parseForm(w, r)
	if err == nil {
		d.Token = strings.TrimSpace(r.PostForm.Get("token"))
		if d.Token == "" {
			err = &account.Error{Code: account.CodeInvalidRequest, Message: "the request is invalid",
				Fields: []account.FieldError{{Field: "token", Message: "is required: paste an access token"}}}
		}
	}
	if err == nil {
		var ver account.Verification
		ver, err = c.svc.IntrospectToken(r.Context(), s.p, d.Token)
		d.Verification = &ver
		d.CanRevoke = ver.Valid && (ver.Claims.KeyID == s.KeyID() || s.Can(account.ScopeRevokeTokens))
	}
	v.Data = d
	if err != nil {
		c.fail(w, r, s, "tokens", v, err)
		return
	}
	c.render(w, r, http.StatusOK, "tokens", v)
}

func (c *console) revokeToken(w http.ResponseWriter, r *http.Request, s *session) {
	err := parseForm(w, r)
	if err == nil {
		_, err = c.svc.RevokeToken(r.Context(), s.p, strings.TrimSpace(r.PostForm.Get("token")))
	}
	if err != nil {
		v := newView(r, s, "Tokens", "tokens")
		v.Data = tokensData{}
		c.fail(w, r, s, "tokens", v, err)
		return
	}
	redirect(w, r, "/console/tokens", "revoked")
}

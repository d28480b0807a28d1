package console

import (
	"net/http"
	"net/url"
	"time"

	"latchkey/pkg/account"
)

// maxFormBytes bounds a form's body: the largest, a key's metadata, is
// under 8 KiB.
const maxFormBytes = 64 << 10

// parseForm reads a POST's form, bounded; a body too large or malformed is
// an invalid request.
func parseForm(w http.ResponseWriter, r *http.Request) error {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		return account.Errorf(account.CodeInvalidRequest, "the form could not be read; reload the page and try again")
	}
	return nil
}

// parseEdit reads the form of a page that creates or edits something,
// keeping it on v to show again if the change fails, with its metadata
// field parsed.
func parseEdit(w http.ResponseWriter, r *http.Request, v *view) (url.Values, account.Metadata, error) {
	if err := parseForm(w, r); err != nil {
		return nil, nil, err
	}
	v.Form = r.PostForm
	m, err := parseMetadata(r.PostForm.Get("metadata"))
	return r.PostForm, m, err
}

type signInData struct {
	Next string
}

func (c *console) signInPage(w http.ResponseWriter, r *http.Request) {
	v := newView(r, nil, "Sign in", "")
	v.Data = signInData{Next: safeNext(r.URL.Query().Get("next"))}
	c.render(w, r, http.StatusOK, "sign-in", v)
}

// signIn exchanges the API key of the form for a console session at once:
// the key is read from the form, authenticated, and dropped; the browser
// keeps only the session's token, in a cookie no script can read. The key
// is never shown again, even when it is refused.
func (c *console) signIn(w http.ResponseWriter, r *http.Request) {
	v := newView(r, nil, "Sign in", "")
	if err := parseForm(w, r); err != nil {
		v.Data = signInData{Next: Path}
		c.fail(w, r, nil, "sign-in", v, err)
		return
	}
	next := safeNext(r.PostForm.Get("next"))
	v.Data = signInData{Next: next}
	if _, _, _, ok := cookieFor(c.svc.Issuer()); !ok {
		c.fail(w, r, nil, "sign-in", v, errPlainHTTP)
		return
	}
	key := r.PostForm.Get("api_key")
	if key == "" {
		c.fail(w, r, nil, "sign-in", v, &account.Error{Code: account.CodeInvalidRequest, Message: "the request is invalid",
			Fields: []account.FieldError{{Field: "api_key", Message: "is required: paste an API key"}}})
		return
	}
	p, err := c.svc.Authenticate(r.Context(), key)
	if err != nil {
		c.fail(w, r, nil, "sign-in", v, err)
		return
	}
	token, claims, err := c.svc.StartSession(r.Context(), p)
	if err != nil {
		c.fail(w, r, nil, "sign-in", v, err)
		return
	}
	http.SetCookie(w, c.sessionCookie(token, claims.ExpiresAt))
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// signOut revokes the session's token, so that the cookie, wherever a copy
// of it is, no longer works, and tells the browser to drop it.
func (c *console) signOut(w http.ResponseWriter, r *http.Request, s *session) {
	if _, err := c.svc.RevokeToken(r.Context(), s.p, s.token); err != nil {
		c.fail(w, r, s, "error", &view{Title: "Sign-out failed"}, err)
		return
	}
	http.SetCookie(w, c.sessionCookie("", time.Time{}))
	w.Header().Set("Clear-Site-Data", `"cookies"`)
	redirect(w, r, "/console/sign-in", "signed-out")
}

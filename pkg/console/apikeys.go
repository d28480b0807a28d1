package console

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"latchkey/pkg/account"
	"latchkey/pkg/httpapi"
)

// keyRow is a key as the pages show it, with its state at the service's
// clock.
type keyRow struct {
	account.APIKey
	Now time.Time
}

// Status says whether the key authenticates now, and if not, why.
func (k keyRow) Status() string {
	switch {
	case k.Expired(k.Now):
		return "expired"
	case k.Disabled:
		return "disabled"
	case k.DisabledAbove:
		return "disabled above"
	}
	return "active"
}

// PreviousUntil is when the secret the last rotation replaced stops, zero
// when it has.
func (k keyRow) PreviousUntil() time.Time {
	if k.PreviousActive(k.Now) {
		return k.PreviousExpiresAt
	}
	return time.Time{}
}

type apiKeysData struct {
	List                  page[keyRow]
	OrganizationID, Owner string
	// Scopes are those the create form offers: the ones Latchkey checks
	// that the session holds.
	Scopes []string
	// Expiries are the lifetimes the create form offers.
	Expiries []string
	// Periods and Refills are the rate limit periods and credit refills
	// the create form offers.
	Periods []string
	Refills []string
}

// expiries are the lifetimes the create form offers; "" never expires
// (unless the session's key does).
var expiries = []string{"", "1h", "1d", "7d", "30d", "90d", "365d"}

// periods and refills are what the create form offers for a key's rate
// limit and credits; "" refills never.
var (
	periods = []string{"1s", "1m", "1h", "1d"}
	refills = []string{"", account.RefillDaily, account.RefillMonthly}
)

// parseLimits reads the create form's rate limit and credits: none where
// the field is empty. A number that is not one is the field's problem.
func parseLimits(form url.Values) ([]account.RateLimitRequest, *account.CreditsRequest, error) {
	var problems account.Problems
	number := func(field string) (int64, bool) {
		text := strings.TrimSpace(form.Get(field))
		if text == "" {
			return 0, false
		}
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			problems.Add(field, "must be a whole number")
		}
		return n, true
	}
	var limits []account.RateLimitRequest
	if n, ok := number("limit"); ok {
		limits = []account.RateLimitRequest{{Name: "uses", Limit: n, Period: form.Get("limit_period")}}
	}
	var credits *account.CreditsRequest
	if n, ok := number("credits"); ok {
		credits = &account.CreditsRequest{Remaining: n}
		if interval := form.Get("refill"); interval != "" {
			credits.Refill = &account.CreditRefill{Amount: n, Interval: interval}
		}
	}
	return limits, credits, problems.Err()
}

// apiKeys lists the keys within the session's grants, newest first, of an
// organization and owner when the filter names them, with the form that
// creates one.
func (c *console) apiKeys(w http.ResponseWriter, r *http.Request, s *session) {
	c.apiKeysPage(w, r, s, newView(r, s, "API keys", "api-keys"), http.StatusOK)
}

func (c *console) apiKeysPage(w http.ResponseWriter, r *http.Request, s *session, v *view, status int) {
	q := r.URL.Query()
	d := apiKeysData{OrganizationID: q.Get("organization_id"), Owner: q.Get("owner_id"), Expiries: expiries, Periods: periods, Refills: refills}
	for _, sc := range account.KnownScopes() {
		if s.Can(sc) {
			d.Scopes = append(d.Scopes, sc)
		}
	}
	l, err := c.svc.ListAPIKeys(r.Context(), s.p, account.PageRequest{Cursor: q.Get("cursor")},
		account.APIKeyFilter{OrganizationID: d.OrganizationID, OwnerID: d.Owner})
	keys := listed(v, &status, l, err)
	now := c.svc.Now()
	for _, k := range keys.Items {
		d.List.Items = append(d.List.Items, keyRow{k, now})
	}
	d.List.Next = keys.Next
	v.Data = d
	c.render(w, r, status, "api-keys", v)
}

// secretData is the page that shows a key's secret, once: after it is
// created or rotated.
type secretData struct {
	Key     keyRow
	Secret  string
	Rotated bool
}

func (c *console) createAPIKey(w http.ResponseWriter, r *http.Request, s *session) {
	v := newView(r, s, "API keys", "api-keys")
	k, secret, err := func() (account.APIKey, string, error) {
		f, m, err := parseEdit(w, r, v)
		if err != nil {
			return account.APIKey{}, "", err
		}
		limits, credits, err := parseLimits(f)
		if err != nil {
			return account.APIKey{}, "", err
		}
		scopes := slices.Clone(f["scope"])
		scopes = append(scopes, strings.Fields(f.Get("other_scopes"))...)
		return c.svc.CreateAPIKey(r.Context(), s.p, account.NewAPIKey{
			Name: f.Get("name"), Scopes: scopes, ExpiresIn: f.Get("expires_in"), Metadata: m,
			OrganizationID: strings.TrimSpace(f.Get("organization_id")), OwnerID: f.Get("owner_id"),
			RateLimits: limits, Credits: credits,
		})
	}()
	if err != nil {
		v.Problem = problemView(err)
		c.apiKeysPage(w, r, s, v, v.Problem.Status)
		return
	}
	v = newView(r, s, "New API key", "api-keys")
	v.Data = secretData{Key: keyRow{k, c.svc.Now()}, Secret: secret}
	c.render(w, r, http.StatusCreated, "secret", v)
}

type apiKeyData struct {
	Key keyRow
	// Graces are the grace periods the rotate form offers.
	Graces []string
	// Tokens is a page of the key's live tokens, Cursor the position of
	// that page (empty for the first).
	Tokens page[account.TokenRecord]
	Cursor string
	Usage  usageView
}

var graces = []string{"0s", "1h", "1d", "7d"}

func (c *console) apiKey(w http.ResponseWriter, r *http.Request, s *session) {
	c.apiKeyPage(w, r, s, newView(r, s, "API key", "api-keys"), http.StatusOK)
}

func (c *console) apiKeyPage(w http.ResponseWriter, r *http.Request, s *session, v *view, status int) {
	k, err := c.svc.GetAPIKey(r.Context(), s.p, r.PathValue("id"))
	if err != nil {
		c.fail(w, r, s, "error", &view{Title: "API key", Nav: "api-keys"}, err)
		return
	}
	v.Title = k.Name
	d := apiKeyData{Key: keyRow{k, c.svc.Now()}, Graces: graces, Cursor: r.URL.Query().Get("cursor")}
	l, err := c.svc.ListAPIKeyTokens(r.Context(), s.p, k.ID, account.PageRequest{Cursor: d.Cursor})
	d.Tokens = listed(v, &status, l, err)
	d.Usage = c.usage(r, s, k.ID, false)
	v.Data = d
	c.render(w, r, status, "api-key", v)
}

// revokeAPIKeyTokens revokes every token of the key issued until now, the
// session's own among them when it is the key's: the form asks for a
// confirmation (confirm=yes) first.
func (c *console) revokeAPIKeyTokens(w http.ResponseWriter, r *http.Request, s *session) {
	id := r.PathValue("id")
	err := parseForm(w, r)
	if err == nil && r.PostForm.Get("confirm") != "yes" {
		var confirm account.Problems
		confirm.Add("confirm", "must be checked: every token of the key is revoked, for good")
		err = confirm.Err()
	}
	if err == nil {
		_, err = c.svc.RevokeAPIKeyTokens(r.Context(), s.p, id)
	}
	answer(w, r, s, newView(r, s, "API key", "api-keys"), err, c.apiKeyPage, "/console/api-keys/"+id, "tokens-revoked")
}

// updateAPIKey renames the key or replaces its metadata.
func (c *console) updateAPIKey(w http.ResponseWriter, r *http.Request, s *session) {
	id := r.PathValue("id")
	v := newView(r, s, "API key", "api-keys")
	err := func() error {
		f, m, err := parseEdit(w, r, v)
		if err != nil {
			return err
		}
		name := f.Get("name")
		_, err = c.svc.UpdateAPIKey(r.Context(), s.p, id, account.APIKeyUpdate{Name: &name, Metadata: &m})
		return err
	}()
	answer(w, r, s, v, err, c.apiKeyPage, "/console/api-keys/"+id, "saved")
}

// enableAPIKey disables or enables the key (enabled=false or true).
func (c *console) enableAPIKey(w http.ResponseWriter, r *http.Request, s *session) {
	id := r.PathValue("id")
	err := parseForm(w, r)
	on := r.PostForm.Get("enabled") == "true"
	if err == nil {
		_, err = c.svc.UpdateAPIKey(r.Context(), s.p, id, account.APIKeyUpdate{Enabled: &on})
	}
	done := "disabled"
	if on {
		done = "enabled"
	}
	answer(w, r, s, newView(r, s, "API key", "api-keys"), err, c.apiKeyPage, "/console/api-keys/"+id, done)
}

// rotateAPIKey gives the key a new secret, shown once; the old one works
// for the grace period asked for.
func (c *console) rotateAPIKey(w http.ResponseWriter, r *http.Request, s *session) {
	id := r.PathValue("id")
	v := newView(r, s, "API key", "api-keys")
	err := parseForm(w, r)
	var k account.APIKey
	var secret string
	if err == nil {
		v.Form = r.PostForm
		k, secret, err = c.svc.RotateAPIKey(r.Context(), s.p, id, account.KeyRotationRequest{ExpiresIn: r.PostForm.Get("grace")})
	}
	if err != nil {
		v.Problem = problemView(err)
		c.apiKeyPage(w, r, s, v, v.Problem.Status)
		return
	}
	if k.ID == s.p.KeyID {
		s = c.resume(w, r, secret)
	}
	v = newView(r, s, "Rotated API key", "api-keys")
	v.Data = secretData{Key: keyRow{k, c.svc.Now()}, Secret: secret, Rotated: true}
	c.render(w, r, http.StatusOK, "secret", v)
}

// resume signs in again with secret, the new secret of the session's own
// key, which the rotation has just shown: the rotation ended the session
// (a session lasts while the secret that signed in is its key's current
// one), and its operator, who holds the new secret, goes on. It returns
// the new session, or nil, having removed the cookie, when the sign-in
// failed (the page still shows the secret, once).
func (c *console) resume(w http.ResponseWriter, r *http.Request, secret string) *session {
	p, err := c.svc.Authenticate(r.Context(), secret)
	var token string
	var claims account.TokenClaims
	if err == nil {
		token, claims, err = c.svc.StartSession(r.Context(), p)
	}
	if err != nil {
		if pr := httpapi.ProblemOf(err); pr.Code == account.CodeInternal || pr.Code == account.CodeUnavailable {
			c.log.ErrorContext(r.Context(), "console sign-in after a rotation failed", "request_id", httpapi.RequestID(r), "error", err.Error())
		}
		http.SetCookie(w, c.sessionCookie("", time.Time{}))
		return nil
	}
	http.SetCookie(w, c.sessionCookie(token, claims.ExpiresAt))
	p.Session, p.TokenID = true, claims.ID
	return &session{p: p, token: token}
}

type deleteAPIKeyData struct {
	Key keyRow
	// Below counts the keys below it that the pages read holds (the keys
	// it created, those they created, …): they go with it. Complete says
	// every key within the session's grants was read.
	Below    []account.APIKey
	Complete bool
}

// belowScanPages bounds the pages of keys the delete page reads to count
// what goes with a key.
const belowScanPages = 10

// confirmDeleteAPIKey says what deleting the key takes with it, and asks.
func (c *console) confirmDeleteAPIKey(w http.ResponseWriter, r *http.Request, s *session) {
	k, err := c.svc.GetAPIKey(r.Context(), s.p, r.PathValue("id"))
	if err != nil {
		c.fail(w, r, s, "error", &view{Title: "API key", Nav: "api-keys"}, err)
		return
	}
	d := deleteAPIKeyData{Key: keyRow{k, c.svc.Now()}}
	cursor := ""
	for range belowScanPages {
		l, err := c.svc.ListAPIKeys(r.Context(), s.p, account.PageRequest{Limit: "100", Cursor: cursor}, account.APIKeyFilter{OrganizationID: k.OrganizationID})
		if err != nil {
			break
		}
		for _, b := range l.Items {
			if slices.Contains(b.Ancestors, k.ID) {
				d.Below = append(d.Below, b)
			}
		}
		if !l.HasMore {
			d.Complete = true
			break
		}
		cursor = l.NextCursor
	}
	v := newView(r, s, "Delete "+k.Name, "api-keys")
	v.Data = d
	c.render(w, r, http.StatusOK, "api-key-delete", v)
}

func (c *console) deleteAPIKey(w http.ResponseWriter, r *http.Request, s *session) {
	if err := c.svc.DeleteAPIKey(r.Context(), s.p, r.PathValue("id")); err != nil {
		c.fail(w, r, s, "error", &view{Title: "Delete API key", Nav: "api-keys"}, err)
		return
	}
	redirect(w, r, "/console/api-keys", "deleted")
}

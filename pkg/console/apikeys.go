package console

import (
	"errors"
	"fmt"
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
	// Choices are the organizations and users the filter and the form
	// offer by name.
	Choices choices
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
	d := apiKeysData{OrganizationID: q.Get("organization_id"), Owner: q.Get("owner_id"), Expiries: expiries, Periods: periods, Refills: refills,
		Choices: c.choicesFor(r, s, true, true)}
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
	// OrgName and OwnerName name the key's organization and, when it is
	// a user's id, its owner, where the session can read them.
	OrgName, OwnerName string
	// Limits are the rows of the rate limits form: the key's limits, or
	// those sent, then blank rows up to account.MaxRateLimits.
	Limits []limitRow
	// Periods and Refills are what the limits forms suggest and offer.
	Periods, Refills []string
	// RateLimits are where the key's rate limits stand now.
	RateLimits []rateLimitNow
}

// rateLimitNow is where a rate limit stands: uses left in its window, and
// when the window ends.
type rateLimitNow struct {
	account.LimitState
	ResetsAt time.Time
}

// rateLimitsNow returns states as the pages show them, or, when they could
// not be read, the limits alone with nothing left known (Remaining -1).
func rateLimitsNow(limits []account.RateLimit, states []account.LimitState, err error, now time.Time) []rateLimitNow {
	out := make([]rateLimitNow, len(limits))
	for i, l := range limits {
		out[i] = rateLimitNow{LimitState: account.LimitState{RateLimit: l, Remaining: -1}}
		if err == nil && i < len(states) {
			out[i] = rateLimitNow{LimitState: states[i], ResetsAt: now.Add(states[i].Reset)}
		}
	}
	return out
}

// limitRow is a row of the rate limits form, with its fields' errors.
type limitRow struct {
	Index                              int
	Name, Limit, Period                string
	NameError, LimitError, PeriodError string
}

// limitRows are the rate limits form's rows: as sent when the form is
// shown again, the key's limits otherwise, and blank rows to fill
// account.MaxRateLimits, so that a limit is added or removed without a
// script.
func limitRows(v *view, k account.APIKey) []limitRow {
	rows := make([]limitRow, account.MaxRateLimits)
	for i := range rows {
		row := limitRow{Index: i, Period: "1m"}
		f := fmt.Sprintf("rate_limits[%d]", i)
		switch {
		case v.Form.Get("part") == "rate_limits":
			row.Name, row.Limit, row.Period = v.Form.Get(f+".name"), v.Form.Get(f+".limit"), v.Form.Get(f+".period")
		case i < len(k.RateLimits):
			l := k.RateLimits[i]
			row.Name, row.Limit, row.Period = l.Name, strconv.FormatInt(l.Limit, 10), account.FormatPeriod(l.Period)
		}
		row.NameError, row.LimitError, row.PeriodError = v.FieldError(f+".name"), v.FieldError(f+".limit"), v.FieldError(f+".period")
		rows[i] = row
	}
	return rows
}

// parseRateLimits reads the rate limits form: each row with a name, a
// limit or a period (other than the blank rows' default) is a limit;
// empty rows are none, which removes them. Problems are named by row, as
// the service names them by limit: the service's are renamed to the rows
// they came from (renameRows).
func parseRateLimits(form url.Values) ([]account.RateLimitRequest, []int, error) {
	var problems account.Problems
	limits := []account.RateLimitRequest{}
	var rows []int
	for i := range account.MaxRateLimits {
		f := fmt.Sprintf("rate_limits[%d]", i)
		name, limit := strings.TrimSpace(form.Get(f+".name")), strings.TrimSpace(form.Get(f+".limit"))
		if name == "" && limit == "" {
			continue
		}
		n, err := strconv.ParseInt(limit, 10, 64)
		if err != nil {
			problems.Add(f+".limit", "must be a whole number")
		}
		limits = append(limits, account.RateLimitRequest{Name: name, Limit: n, Period: strings.TrimSpace(form.Get(f + ".period"))})
		rows = append(rows, i)
	}
	return limits, rows, problems.Err()
}

// renameRows renames the service's problems of the i-th limit sent to
// the form's row rows[i].
func renameRows(err error, rows []int) error {
	var e *account.Error
	if !errors.As(err, &e) {
		return err
	}
	for i, f := range e.Fields {
		var n int
		var rest string
		if _, scanErr := fmt.Sscanf(f.Field, "rate_limits[%d]", &n); scanErr != nil || n >= len(rows) {
			continue
		}
		_, rest, _ = strings.Cut(f.Field, "]")
		e.Fields[i].Field = fmt.Sprintf("rate_limits[%d]%s", rows[n], rest)
	}
	return err
}

// parseCredits reads the credits form: none when the count is empty,
// which removes them; refilled to the amount given (the count, when
// empty) each day or month when a refill is chosen.
func parseCredits(form url.Values) (*account.CreditsRequest, error) {
	var problems account.Problems
	number := func(field, text string) int64 {
		n, err := strconv.ParseInt(strings.TrimSpace(text), 10, 64)
		if err != nil {
			problems.Add(field, "must be a whole number")
		}
		return n
	}
	remaining := strings.TrimSpace(form.Get("credits.remaining"))
	if remaining == "" {
		return nil, nil
	}
	c := &account.CreditsRequest{Remaining: number("credits.remaining", remaining)}
	if interval := form.Get("credits.refill.interval"); interval != "" {
		amount := form.Get("credits.refill.amount")
		if strings.TrimSpace(amount) == "" {
			amount = remaining
		}
		c.Refill = &account.CreditRefill{Amount: number("credits.refill.amount", amount), Interval: interval}
	}
	return c, problems.Err()
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
	d.Usage = c.usage(r, s, k, nil)
	d.Limits, d.Periods, d.Refills = limitRows(v, k), periods, refills
	states, err := c.svc.APIKeyRateLimits(r.Context(), s.p, k)
	d.RateLimits = rateLimitsNow(k.RateLimits, states, err, c.svc.Now())
	if k.OrganizationID != "" && s.Can(account.ScopeReadOrganizations) {
		if o, err := c.svc.GetOrganization(r.Context(), s.p, k.OrganizationID); err == nil {
			d.OrgName = o.Name
		}
	}
	if strings.HasPrefix(k.OwnerID, account.PrefixUser) && s.Can(account.ScopeReadUsers) {
		if u, err := c.svc.GetUser(r.Context(), s.p, k.OwnerID); err == nil {
			d.OwnerName = u.Email
		}
	}
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

// updateAPIKey renames the key or replaces its metadata, or, from the
// page's other forms (part), replaces its rate limits or its credits,
// under the API's rules (account.Service.UpdateAPIKey).
func (c *console) updateAPIKey(w http.ResponseWriter, r *http.Request, s *session) {
	id := r.PathValue("id")
	v := newView(r, s, "API key", "api-keys")
	err := func() error {
		if err := parseForm(w, r); err != nil {
			return err
		}
		f := r.PostForm
		v.Form = f
		var update account.APIKeyUpdate
		switch f.Get("part") {
		case "rate_limits":
			limits, rows, err := parseRateLimits(f)
			if err != nil {
				return err
			}
			update.RateLimits = &limits
			_, err = c.svc.UpdateAPIKey(r.Context(), s.p, id, update)
			return renameRows(err, rows)
		case "credits":
			credits, err := parseCredits(f)
			if err != nil {
				return err
			}
			update.SetCredits, update.Credits = true, credits
		default:
			m, err := parseMetadata(f.Get("metadata"))
			if err != nil {
				return err
			}
			name := f.Get("name")
			update.Name, update.Metadata = &name, &m
		}
		_, err := c.svc.UpdateAPIKey(r.Context(), s.p, id, update)
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

package console

import (
	"bytes"
	"fmt"
	"html/template"
	"io/fs"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"latchkey/pkg/account"
	"latchkey/pkg/httpapi"
)

// view is what a page template is given.
type view struct {
	Title string
	// Nav is the section the page belongs to, highlighted in the menu.
	Nav     string
	Session *session
	// Problem is the error the page answers with: its title and detail,
	// and each field named beside that field.
	Problem *httpapi.Problem
	// Notice says what the last change did (after its redirect).
	Notice string
	// Form holds what was sent, shown again when it was refused.
	Form url.Values
	// RequestID is the request's, shown with an error to quote.
	RequestID string
	Data      any
}

// FieldError returns the message of the problem's error on field, "" if
// none: shown beside the field, which it describes (aria-describedby).
func (v *view) FieldError(field string) string {
	if v == nil || v.Problem == nil {
		return ""
	}
	var msgs []string
	for _, f := range v.Problem.Fields {
		if f.Field == field || strings.HasPrefix(f.Field, field+".") {
			msgs = append(msgs, f.Message)
		}
	}
	return strings.Join(msgs, "; ")
}

// Value returns what was sent for field, for a form shown again, or def.
func (v *view) Value(field, def string) string {
	if v != nil && v.Form != nil && v.Form.Has(field) {
		return v.Form.Get(field)
	}
	return def
}

var funcs = template.FuncMap{
	// period is a rate limit's period as the API writes it: 1s, 1m, 1d.
	"period": account.FormatPeriod,
	"time": func(t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		return t.UTC().Format("2006-01-02 15:04:05 UTC")
	},
	"iso": func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"metadata": func(m account.Metadata) string {
		var b strings.Builder
		for _, k := range slices.Sorted(maps.Keys(m)) {
			fmt.Fprintf(&b, "%s=%s\n", k, m[k])
		}
		return b.String()
	},
	"sortedKeys": func(m account.Metadata) []string { return slices.Sorted(maps.Keys(m)) },
	"join":       strings.Join,
	"plans":      func() []string { return account.Plans },
	"userRoles":  func() []string { return account.UserRoles },
	"memberRoles": func() []string {
		return account.MemberRoles
	},
	"eventTypes":     account.EventTypes,
	"sessionMinutes": func() int { return int(account.SessionLifetime.Minutes()) },
	"query": func(base string, kv ...string) string {
		q := url.Values{}
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i+1] != "" {
				q.Set(kv[i], kv[i+1])
			}
		}
		if len(q) == 0 {
			return base
		}
		return base + "?" + q.Encode()
	},
	"contains": slices.Contains[[]string],
	"field": func(v *view, name, label, def string, required bool, hint ...string) formField {
		return formField{V: v, Name: name, Label: label, Default: def, Required: required, Hint: strings.Join(hint, " ")}
	},
}

// formField is a labelled input of a form: its value as sent when the form
// is shown again, and its error beside it.
type formField struct {
	V                          *view
	Name, Label, Default, Hint string
	Required                   bool
}

// parsePages parses each page template with the layout.
func parsePages() map[string]*template.Template {
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		panic(err)
	}
	pages := map[string]*template.Template{}
	for _, n := range names {
		name := strings.TrimSuffix(strings.TrimPrefix(n, "templates/"), ".html")
		if name == "layout" {
			continue
		}
		pages[name] = template.Must(template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", n))
	}
	return pages
}

// render writes page with v at status.
func (c *console) render(w http.ResponseWriter, r *http.Request, status int, page string, v *view) {
	t, ok := c.pages[page]
	if !ok {
		panic("console: no page " + page)
	}
	if v.RequestID == "" {
		v.RequestID = httpapi.RequestID(r)
	}
	var b bytes.Buffer
	if err := t.Execute(&b, v); err != nil {
		c.log.ErrorContext(r.Context(), "console page failed", "request_id", httpapi.RequestID(r), "page", page, "error", err.Error())
		http.Error(w, "the page could not be shown; quote request id "+httpapi.RequestID(r), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(b.Bytes())
}

// notices are what a page says after the change that led to it, by the
// code its redirect carries (?done=…): no text of the client's own.
var notices = map[string]string{
	"created":        "Created.",
	"saved":          "Saved.",
	"deleted":        "Deleted.",
	"member-added":   "Member added.",
	"member-updated": "Role changed.",
	"member-removed": "Member removed.",
	"enabled":        "Key enabled: it and the keys below it authenticate again.",
	"disabled":       "Key disabled: it, the keys below it and their tokens are refused until it is enabled.",
	"signed-out":     "Signed out. The session's token is revoked.",
	"revoked":        "Token revoked.",
	"tokens-revoked": "Every token of the key issued until now is revoked.",
}

// redirect answers a change with a 303 to path, whose page says done.
func redirect(w http.ResponseWriter, r *http.Request, path, done string) {
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	http.Redirect(w, r, path+sep+"done="+url.QueryEscape(done), http.StatusSeeOther)
}

// newView returns a page's view with the notice of its redirect.
func newView(r *http.Request, s *session, title, nav string) *view {
	return &view{Title: title, Nav: nav, Session: s, Notice: notices[r.URL.Query().Get("done")]}
}

// parseMetadata reads metadata as the forms take it: one key=value a line.
func parseMetadata(text string) (account.Metadata, error) {
	m := account.Metadata{}
	for i, line := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return nil, &account.Error{Code: account.CodeInvalidRequest, Message: "the request is invalid",
				Fields: []account.FieldError{{Field: "metadata", Message: fmt.Sprintf("line %d has no '=': write one key=value a line", i+1)}}}
		}
		m[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return m, nil
}

// page is one page of a list with the cursor of the next.
type page[T any] struct {
	Items []T
	Next  string
}

// problemView returns a view's problem from err, or nil.
func problemView(err error) *httpapi.Problem {
	if err == nil {
		return nil
	}
	pr := httpapi.ProblemOf(err)
	return &pr
}

// listed is the page a template shows of what a list returned. A list
// that failed shows empty, with its problem on v unless v shows one
// already (the form's), and *status becomes the problem's.
func listed[T any](v *view, status *int, l account.List[T], err error) page[T] {
	if err != nil && v.Problem == nil {
		v.Problem = problemView(err)
		*status = v.Problem.Status
	}
	return page[T]{Items: l.Items, Next: l.NextCursor}
}

// searchList is a list page's data: a page, and the search that found it.
type searchList[T any] struct {
	List page[T]
	// By is the field searched, Q the value looked for.
	By, Q    string
	Searched bool
}

// searchOf reads a list page's search from its query: q looked for in by,
// one of fields, the first unless by names another.
func searchOf[T any](query url.Values, fields ...string) searchList[T] {
	d := searchList[T]{By: query.Get("by"), Q: query.Get("q")}
	if d.Q != "" {
		d.Searched = true
		if !slices.Contains(fields[1:], d.By) {
			d.By = fields[0]
		}
	}
	return d
}

// pageFunc renders a page, with v's problem and form, at status.
type pageFunc func(w http.ResponseWriter, r *http.Request, s *session, v *view, status int)

// answer ends a form's post: one that failed shows its page again, with
// the problem over the form as it was sent; one that succeeded redirects
// to path, noting done.
func answer(w http.ResponseWriter, r *http.Request, s *session, v *view, err error, again pageFunc, path, done string) {
	if err != nil {
		v.Problem = problemView(err)
		again(w, r, s, v, v.Problem.Status)
		return
	}
	redirect(w, r, path, done)
}

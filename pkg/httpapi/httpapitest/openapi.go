package httpapitest

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"latchkey"
)

type spec struct {
	doc    *openapi3.T
	router routers.Router
	// templates holds a regular expression per path template, to tell an
	// unknown path (404) from a known path with another method (405).
	templates map[string]*regexp.Regexp
}

// pathParam matches a quoted {param} in a path template.
var pathParam = regexp.MustCompile(`\\\{[^/]+?\\\}`)

var (
	specOnce sync.Once
	specVal  *spec
	specErr  error
)

// loadSpec parses openapi.yaml once per test binary: it is the same
// document for every Env.
func loadSpec(tb testing.TB) *spec {
	tb.Helper()
	specOnce.Do(func() {
		// A Status List Token is a compact JWS: its schema is a string.
		openapi3filter.RegisterBodyDecoder("application/statuslist+jwt", openapi3filter.PlainBodyDecoder)
		doc, err := openapi3.NewLoader().LoadFromData(latchkey.OpenAPI)
		if err != nil {
			specErr = err
			return
		}
		if err = doc.Validate(context.Background()); err != nil {
			specErr = err
			return
		}
		// Route on the path alone: test requests go to example.com, Lambda
		// events to the gateway's host. The legacy router needs no
		// dependency beyond kin-openapi itself.
		doc.Servers = nil
		router, err := legacy.NewRouter(doc)
		templates := map[string]*regexp.Regexp{}
		for tmpl := range doc.Paths.Map() {
			templates[tmpl] = regexp.MustCompile("^" + pathParam.ReplaceAllString(regexp.QuoteMeta(tmpl), "[^/]+") + "$")
		}
		specVal, specErr = &spec{doc: doc, router: router, templates: templates}, err
	})
	if specErr != nil {
		tb.Fatalf("openapi.yaml: %v", specErr)
	}
	return specVal
}

// CheckResponse fails tb unless res is a response that openapi.yaml
// describes for its request: a documented status, headers and a body that
// match their schemas. Responses that no operation can describe (404 for an
// unknown path, 405 for a known path with another method) are checked
// against the Problem schema instead. When
// the response is a success, the request too must match the document: a
// request the server accepts must be one the document allows.
func (e *Env) CheckResponse(tb testing.TB, res *Response) {
	tb.Helper()
	CheckResponse(tb, res)
}

// CheckResponse is Env.CheckResponse for a response obtained some other way,
// such as a Lambda function's answer to an API Gateway event: res needs
// Request, StatusCode, Header and Body.
func CheckResponse(tb testing.TB, res *Response) {
	tb.Helper()
	if err := loadSpec(tb).check(res); err != nil {
		tb.Errorf("%s %s -> %d %s\nviolates openapi.yaml: %v", res.Request.Method, res.Request.URL.Path, res.StatusCode, res.Body, err)
	}
}

func (s *spec) check(res *Response) error {
	ctx := context.Background()
	item := s.pathItem(res.Request.URL.Path)
	switch {
	case item == nil:
		if res.StatusCode != http.StatusNotFound {
			return errors.New("the document has no such path, so the status must be 404")
		}
		return s.checkProblem(res)
	// HEAD is GET without the body, unless the path refuses it (verify).
	case item.GetOperation(res.Request.Method) == nil && (res.Request.Method != http.MethodHead || res.StatusCode == http.StatusMethodNotAllowed):
		if res.StatusCode != http.StatusMethodNotAllowed || res.Header.Get("Allow") == "" {
			return errors.New("the path has no such operation, so the status must be 405 with Allow")
		}
		return s.checkProblem(res)
	}
	route, params, err := s.router.FindRoute(res.Request)
	if err != nil {
		return err
	}
	opts := &openapi3filter.Options{
		IncludeResponseStatus: true,
		MultiError:            true,
		AuthenticationFunc:    openapi3filter.NoopAuthenticationFunc,
	}
	in := &openapi3filter.RequestValidationInput{Request: res.Request, PathParams: params, Route: route, Options: opts}
	if res.StatusCode < 300 {
		if err := openapi3filter.ValidateRequest(ctx, in); err != nil {
			return errors.New("the server accepted a request the document does not allow: " + err.Error())
		}
	}
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in,
		Status:                 res.StatusCode,
		Header:                 res.Header,
		Options:                opts,
	}
	out.SetBodyBytes(res.Body)
	if err := openapi3filter.ValidateResponse(ctx, out); err != nil {
		return err
	}
	return checkCommon(res)
}

// pathItem returns the path item whose template matches path, or nil.
func (s *spec) pathItem(path string) *openapi3.PathItem {
	for _, tmpl := range s.doc.Paths.InMatchingOrder() {
		if s.templates[tmpl].MatchString(path) {
			return s.doc.Paths.Value(tmpl)
		}
	}
	return nil
}

// checkProblem checks 404 for an unknown path and 405 for a known path with
// another method: no operation describes them, so the Problem schema and the
// conventions stated in the document's description do.
func (s *spec) checkProblem(res *Response) error {
	if ct := res.Header.Get("Content-Type"); ct != "application/problem+json" {
		return errors.New("content type " + ct + ", want application/problem+json")
	}
	var v any
	if err := json.Unmarshal(res.Body, &v); err != nil {
		return err
	}
	if err := s.doc.Components.Schemas["Problem"].Value.VisitJSON(v, openapi3.EnableJSONSchema2020()); err != nil {
		return err
	}
	return checkCommon(res)
}

// checkCommon checks what the document states for every response.
func checkCommon(res *Response) error {
	if res.Header.Get("X-Request-Id") == "" {
		return errors.New("no X-Request-Id")
	}
	if res.StatusCode >= 400 && strings.HasPrefix(res.Request.URL.Path, "/oauth2/") && res.Header.Get("Content-Type") == "application/json" {
		return checkOAuthError(res)
	}
	if res.StatusCode >= 400 {
		var p struct {
			Code      string `json:"code"`
			Type      string `json:"type"`
			RequestID string `json:"request_id"`
			Status    int    `json:"status"`
		}
		if err := json.Unmarshal(res.Body, &p); err != nil {
			return err
		}
		switch {
		case p.Status != res.StatusCode:
			return errors.New("problem status differs from the HTTP status")
		case p.RequestID != res.Header.Get("X-Request-Id") && res.Header.Get("Idempotent-Replayed") != "true":
			// A replay is the stored answer as it was: its request_id
			// names the request that was carried out.
			return errors.New("problem request_id differs from X-Request-Id")
		case p.Type != "https://latchkey.dev/problems/"+p.Code:
			return errors.New("problem type does not name its code")
		case res.StatusCode == http.StatusUnauthorized && !strings.HasPrefix(res.Header.Get("WWW-Authenticate"), "Bearer"):
			return errors.New("401 without WWW-Authenticate: Bearer")
		}
	}
	return nil
}

// oauthText is the character set RFC 6749 (section 5.2) allows in error
// and error_description.
var oauthText = regexp.MustCompile(`^[\x20-\x21\x23-\x5B\x5D-\x7E]*$`)

// checkOAuthError checks what RFC 6749 section 5.2 requires of an error of
// an OAuth endpoint, beyond its schema: the characters of error and
// error_description, and a 401 that names the scheme.
func checkOAuthError(res *Response) error {
	var e struct {
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	if err := json.Unmarshal(res.Body, &e); err != nil {
		return err
	}
	switch {
	case e.Error == "" || !oauthText.MatchString(e.Error) || !oauthText.MatchString(e.Description):
		return errors.New("error or error_description has characters RFC 6749 section 5.2 does not allow")
	case res.StatusCode == http.StatusUnauthorized && e.Error != "invalid_client":
		return errors.New("401 is for invalid_client only")
	case res.StatusCode == http.StatusUnauthorized && !strings.HasPrefix(res.Header.Get("WWW-Authenticate"), "Basic ") && !strings.HasPrefix(res.Header.Get("WWW-Authenticate"), "Bearer "):
		return errors.New("401 without WWW-Authenticate naming the client's scheme")
	}
	return nil
}

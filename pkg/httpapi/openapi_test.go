package httpapi_test

import (
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"latchkey"
	"latchkey/pkg/httpapi"
)

// TestOpenAPIMatchesRoutes checks that openapi.yaml and Routes, with
// LocalRoutes, describe the same operations, with the same scopes and the
// same query parameters (the router refuses any other), that the document
// marks exactly the public routes as public, the OAuth endpoints as such,
// and exactly the local ones as x-local-only.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	doc := loadOpenAPI(t)
	documented := map[string]*openapi3.Operation{}
	query := map[string][]string{} // operation -> its query parameters
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			documented[method+" "+path] = op
			for _, p := range append(item.Parameters, op.Parameters...) {
				if p.Value.In == openapi3.ParameterInQuery {
					query[method+" "+path] = append(query[method+" "+path], p.Value.Name)
				}
			}
		}
	}
	for _, r := range append(httpapi.Routes(), httpapi.LocalRoutes()...) {
		key := r.Method + " " + r.Path
		op, ok := documented[key]
		if !ok {
			t.Errorf("%s: not in openapi.yaml", key)
			continue
		}
		delete(documented, key)
		got, want := slices.Sorted(slices.Values(query[key])), slices.Sorted(slices.Values(r.Query))
		if !slices.Equal(got, want) {
			t.Errorf("%s: query parameters in openapi.yaml %q, the route takes %q", key, got, want)
		}
		scope, _ := op.Extensions["x-required-scope"].(string)
		if r.Scope() != "" && scope != r.Scope() {
			t.Errorf("%s: x-required-scope %q, want %q", key, scope, r.Scope())
		}
		if r.Scope() == "" && scope == "" {
			t.Errorf("%s: x-required-scope missing: say what authorizes the route", key)
		}
		checkIdempotencyKey(t, key, r, op)
		public := op.Security != nil && len(*op.Security) == 0
		if want := r.Public(); public != want {
			t.Errorf("%s: public in openapi.yaml: %v, want %v", key, public, want)
		}
		// An OAuth endpoint documents client_secret_basic, and its errors
		// in the form of RFC 6749, not as problems.
		if r.OAuth() {
			basic := false
			if op.Security != nil {
				for _, req := range *op.Security {
					_, ok := req["clientBasic"]
					basic = basic || ok
				}
			}
			if !basic {
				t.Errorf("%s: an OAuth endpoint without the clientBasic security scheme", key)
			}
			for status, ref := range op.Responses.Map() {
				// 405 is the router's answer for the path, a problem like
				// any other path's; 429 is the client key's rate limit,
				// the same problem as on every endpoint (RFC 6749 has no
				// error for it).
				if status >= "400" && status != "405" && status != "429" && ref.Value.Content.Get("application/json") == nil {
					t.Errorf("%s: response %s is not the OAuth error JSON", key, status)
				}
			}
		}
		if got, _ := op.Extensions["x-local-only"].(bool); got != (r.Group == httpapi.GroupLocal) {
			t.Errorf("%s: x-local-only %v, want %v", key, got, r.Group == httpapi.GroupLocal)
		}
	}
	for key := range documented {
		t.Errorf("%s: in openapi.yaml but not in Routes() or LocalRoutes()", key)
	}
}

// checkIdempotencyKey checks that the operation documents Idempotency-Key
// exactly when the route takes it: the parameter, the 409 and 422 it may
// answer, and Idempotent-Replayed on its success.
func checkIdempotencyKey(t *testing.T, key string, r httpapi.Route, op *openapi3.Operation) {
	t.Helper()
	var takes bool
	for _, p := range op.Parameters {
		if p.Value.In == openapi3.ParameterInHeader && p.Value.Name == "Idempotency-Key" {
			takes = true
		}
	}
	if takes != r.TakesIdempotencyKey() {
		t.Errorf("%s: Idempotency-Key documented %v, the route takes it %v", key, takes, r.TakesIdempotencyKey())
	}
	if !r.TakesIdempotencyKey() {
		return
	}
	for _, status := range []int{http.StatusConflict, http.StatusUnprocessableEntity} {
		if op.Responses.Status(status) == nil {
			t.Errorf("%s: takes Idempotency-Key but documents no %d", key, status)
		}
	}
	for code, res := range op.Responses.Map() {
		if code[0] == '2' && res.Value.Headers["Idempotent-Replayed"] == nil {
			t.Errorf("%s: %s does not document Idempotent-Replayed", key, code)
		}
	}
}

func loadOpenAPI(tb testing.TB) *openapi3.T {
	tb.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(latchkey.OpenAPI)
	if err != nil {
		tb.Fatal(err)
	}
	return doc
}

// TestOpenAPIDocumentsEveryStatus checks that every status an error code is
// sent with is one some operation documents, with the code in the Problem
// schema, and that every operation documents 405 with Allow: the router
// answers it for a method the path lacks, and OpenAPI has no other place
// for it.
func TestOpenAPIDocumentsEveryStatus(t *testing.T) {
	doc := loadOpenAPI(t)
	documented := map[int]bool{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			for status := range op.Responses.Map() {
				n, _ := strconv.Atoi(status)
				documented[n] = true
			}
			if res := op.Responses.Status(http.StatusMethodNotAllowed); res == nil || res.Value.Headers["Allow"] == nil {
				t.Errorf("%s %s: documents no 405 with Allow", method, path)
			}
		}
	}
	enum := doc.Components.Schemas["Problem"].Value.Properties["code"].Value.Enum
	for code, status := range httpapi.CodeStatuses() {
		if !documented[status] {
			t.Errorf("%s is sent with %d, which no operation documents", code, status)
		}
		if !slices.Contains(enum, any(string(code))) {
			t.Errorf("%s is not in the Problem schema's codes", code)
		}
	}
}

// TestOpenAPITypedLists checks that every array in the document says what
// it holds, and that every list operation answers a named schema whose data
// items are a named schema: a generated client then types each page and its
// items instead of unknown[].
func TestOpenAPITypedLists(t *testing.T) {
	doc := loadOpenAPI(t)
	seen := map[*openapi3.Schema]bool{}
	var walk func(where string, ref *openapi3.SchemaRef)
	walk = func(where string, ref *openapi3.SchemaRef) {
		if ref == nil || ref.Value == nil || seen[ref.Value] {
			return
		}
		s := ref.Value
		seen[s] = true
		if s.Type.Is(openapi3.TypeArray) && s.Items == nil {
			t.Errorf("%s: an array without items", where)
		}
		walk(where+".items", s.Items)
		for name, p := range s.Properties {
			walk(where+"."+name, p)
		}
		for i, list := range []openapi3.SchemaRefs{s.AllOf, s.AnyOf, s.OneOf} {
			for j, sub := range list {
				walk(where+"."+[]string{"allOf", "anyOf", "oneOf"}[i]+"["+strconv.Itoa(j)+"]", sub)
			}
		}
		walk(where+".additionalProperties", s.AdditionalProperties.Schema)
	}
	for name, s := range doc.Components.Schemas {
		walk(name, s)
	}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			for status, res := range op.Responses.Map() {
				for mt, content := range res.Value.Content {
					walk(method+" "+path+" "+status+" "+mt, content.Schema)
				}
			}
			lists := false
			for _, p := range op.Parameters {
				lists = lists || p.Value.Name == "cursor"
			}
			if !lists {
				continue
			}
			page := op.Responses.Status(http.StatusOK).Value.Content.Get("application/json").Schema
			if page.Ref == "" {
				t.Errorf("%s %s: the page is an inline schema, not a named one", method, path)
				continue
			}
			if data := page.Value.Properties["data"]; data == nil || data.Value.Items == nil || data.Value.Items.Ref == "" {
				t.Errorf("%s %s: %s.data does not hold a named schema", method, path, page.Ref)
			}
		}
	}
}

// TestOpenAPIPathIDsAnyString checks that a path parameter accepts a
// malformed id: the server answers 404 for it, as for an unknown one, so a
// pattern in the document would have a validating client or gateway answer
// 422 where the server answers 404.
func TestOpenAPIPathIDsAnyString(t *testing.T) {
	doc := loadOpenAPI(t)
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			for _, p := range append(item.Parameters, op.Parameters...) {
				if p.Value.In != openapi3.ParameterInPath {
					continue
				}
				if err := p.Value.Schema.Value.VisitJSON("usr_malformed", openapi3.EnableJSONSchema2020()); err != nil {
					t.Errorf("%s %s: {%s} refuses a malformed id, which the server answers 404: %v", method, path, p.Value.Name, err)
				}
			}
		}
	}
}

// TestOpenAPIQueryLimit: openapi.yaml and the server agree on the longest
// query string: its x-max-query-bytes, and every "longer than N bytes" it
// says of the query string, are httpapi.MaxQueryBytes.
func TestOpenAPIQueryLimit(t *testing.T) {
	doc := loadOpenAPI(t)
	if got, _ := doc.Info.Extensions["x-max-query-bytes"].(float64); int(got) != httpapi.MaxQueryBytes {
		t.Errorf("x-max-query-bytes %v, want httpapi.MaxQueryBytes (%d)", doc.Info.Extensions["x-max-query-bytes"], httpapi.MaxQueryBytes)
	}
	said := regexp.MustCompile(`query string[^.]*?longer than (\d+) bytes`).FindAllStringSubmatch(strings.Join(strings.Fields(string(latchkey.OpenAPI)), " "), -1)
	if len(said) == 0 {
		t.Fatal("openapi.yaml does not say how long a query string may be")
	}
	for _, m := range said {
		if m[1] != strconv.Itoa(httpapi.MaxQueryBytes) {
			t.Errorf("openapi.yaml: %q; the server's limit is %d", m[0], httpapi.MaxQueryBytes)
		}
	}
}

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
	doc, err := openapi3.NewLoader().LoadFromData(latchkey.OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
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
				if status >= "400" && ref.Value.Content.Get("application/json") == nil {
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

// TestOpenAPIQueryLimit: openapi.yaml and the server agree on the longest
// query string: its x-max-query-bytes, and every "longer than N bytes" it
// says of the query string, are httpapi.MaxQueryBytes.
func TestOpenAPIQueryLimit(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromData(latchkey.OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
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

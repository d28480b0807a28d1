package httpapi_test

import (
	"net/http"
	"slices"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"latchkey"
	"latchkey/pkg/httpapi"
)

// TestOpenAPIMatchesRoutes checks that openapi.yaml and Routes describe the
// same operations, with the same scopes and the same query parameters (the
// router refuses any other), and that the document marks every route but
// the JWKS as needing a bearer credential.
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
	for _, r := range httpapi.Routes() {
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
		if r.Scope != "" && scope != r.Scope {
			t.Errorf("%s: x-required-scope %q, want %q", key, scope, r.Scope)
		}
		if r.Scope == "" && scope == "" {
			t.Errorf("%s: x-required-scope missing: say what authorizes the route", key)
		}
		public := op.Security != nil && len(*op.Security) == 0
		if want := r.Method == http.MethodGet && r.Path == "/v1/auth/jwks"; public != want {
			t.Errorf("%s: public in openapi.yaml: %v, want %v", key, public, want)
		}
	}
	for key := range documented {
		t.Errorf("%s: in openapi.yaml but not in Routes()", key)
	}
}

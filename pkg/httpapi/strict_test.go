package httpapi_test

import (
	"net/http"
	"slices"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"latchkey"
	"latchkey/pkg/httpapi"
)

// TestEmptyIsNotAbsent: an empty string is not a value left out, anywhere.
// Every query parameter of every route, sent empty (?limit=, ?types=) or
// bare (?owner_id), and every string field of every JSON body, sent as "",
// is 400 invalid_request naming it, and changes nothing; openapi.yaml
// allows neither. The service reads "" as "left out": the default
// lifetime, no organization, no filter, the first page. A new route or
// field is covered by being in the table or the document.
func TestEmptyIsNotAbsent(t *testing.T) {
	a := newAPI(t)
	admin := a.AdminKey
	ids := seedAll(t, a)
	doc, err := openapi3.NewLoader().LoadFromData(latchkey.OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range httpapi.Routes() {
		if r.OAuth() {
			continue // form bodies: RFC 6749 section 3.1 has an empty parameter omitted
		}
		for _, name := range r.Query {
			for _, q := range []string{name + "=", name} {
				t.Run(r.Method+" "+r.Path+"?"+q, func(t *testing.T) {
					p := wantProblem(t, a.do(r.Method, routePath(r, ids)+"?"+q, admin, nil), http.StatusBadRequest, "invalid_request")
					wantField(t, p, name)
				})
			}
			param := documentedParameter(doc, r, name)
			if param == nil || param.Schema == nil || param.Schema.Value.VisitJSON("") == nil {
				t.Errorf("%s %s: openapi.yaml lets %s be empty", r.Method, r.Path, name)
			}
		}
		op := doc.Paths.Find(r.Path).GetOperation(r.Method)
		if op.RequestBody == nil || op.RequestBody.Value.Content.Get("application/json") == nil {
			continue
		}
		schema := op.RequestBody.Value.Content.Get("application/json").Schema.Value
		for _, field := range slices.Sorted(func(yield func(string) bool) {
			for name := range schema.Properties {
				if !yield(name) {
					return
				}
			}
		}) {
			prop := schema.Properties[field].Value
			if !takesString(prop) {
				continue
			}
			t.Run(r.Method+" "+r.Path+" "+field, func(t *testing.T) {
				p := wantProblem(t, a.do(r.Method, routePath(r, ids), admin, map[string]any{field: ""}), http.StatusBadRequest, "invalid_request")
				wantField(t, p, field)
			})
			if prop.VisitJSON("") == nil {
				t.Errorf("%s %s: openapi.yaml lets %s be \"\"", r.Method, r.Path, field)
			}
		}
	}
	// Nothing was changed or deleted.
	for _, path := range []string{"/v1/users/" + ids["/v1/users/"], "/v1/organizations/" + ids["/v1/organizations/"], "/v1/api-keys/" + ids["/v1/api-keys/"]} {
		want(t, a.do(http.MethodGet, path, admin, nil), http.StatusOK)
	}
}

// documentedParameter is the query parameter name of r's operation in doc.
func documentedParameter(doc *openapi3.T, r httpapi.Route, name string) *openapi3.Parameter {
	item := doc.Paths.Find(r.Path)
	for _, p := range append(item.Parameters, item.GetOperation(r.Method).Parameters...) {
		if p.Value.In == openapi3.ParameterInQuery && p.Value.Name == name {
			return p.Value
		}
	}
	return nil
}

// takesString reports whether a JSON string is a value of the schema's
// type: a string, or one of the choices of a oneOf or allOf.
func takesString(s *openapi3.Schema) bool {
	if s.Type != nil && s.Type.Is(openapi3.TypeString) {
		return true
	}
	for _, refs := range [][]*openapi3.SchemaRef{s.OneOf, s.AnyOf, s.AllOf} {
		for _, ref := range refs {
			if takesString(ref.Value) {
				return true
			}
		}
	}
	return false
}

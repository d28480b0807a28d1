package httpapi_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/getkin/kin-openapi/openapi3"

	"latchkey"
	"latchkey/pkg/account"
	"latchkey/pkg/authorizer"
	"latchkey/pkg/httpapi"
	"latchkey/pkg/httpapi/httpapitest"
	"latchkey/pkg/token"
)

// TestEmptyIsNotAbsent: an empty string is not a value left out, anywhere.
// Every query parameter of every route, sent empty (?limit=, ?types=) or
// bare (?owner_id), and every string field of every JSON body, sent as "",
// is 400 invalid_request naming it, and changes nothing; openapi.yaml
// allows neither. So is null for every field whose schema does not allow
// it. The service reads "" (and encoding/json null) as "left out": the
// default lifetime, no organization, no filter, the first page. A new
// route or field is covered by being in the table or the document.
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
		// null is no more a field left out than "" is, but where the
		// document says it removes a value (external_id, metadata).
		for field, ref := range schema.Properties {
			if ref.Value.VisitJSON(nil) == nil {
				continue
			}
			t.Run(r.Method+" "+r.Path+" "+field+"=null", func(t *testing.T) {
				p := wantProblem(t, a.do(r.Method, routePath(r, ids), admin, map[string]any{field: nil}), http.StatusBadRequest, "invalid_request")
				wantField(t, p, field)
			})
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

// TestLargestToken: the service never issues a token it then refuses. The
// largest tokens the limits allow, from a key MaxKeyAncestors deep with 32
// scopes of the longest form, bound to an organization, for an audience of
// the longest length, and with an owner id of the longest length, either
// of the character JSON used to escape to six bytes ('<') or of four-byte
// characters (the most bytes a printable character takes), are issued and
// then valid on every path that verifies a token for a resource server:
// GET /v1/auth/verify, POST /oauth2/introspect and the Lambda authorizer's
// verifier. With HTML escaping the first was 8.7 KB, over
// token.MaxTokenBytes, and all three called it invalid.
func TestLargestToken(t *testing.T) {
	a := newAPI(t)
	org := a.CreateOrganization(t, uniqueSlug())
	var scopes []string
	for i := range 32 {
		scopes = append(scopes, fmt.Sprintf("%s:%s%02d", strings.Repeat("a", 32), strings.Repeat("r", 62), i))
	}
	// The longest audience, of '&', which JSON used to escape too.
	audience := "https://a/?" + strings.Repeat("&", account.MaxAudienceLength-len("https://a/?"))
	parent := a.createKey(a.AdminKey, account.ScopeAll)
	for range account.MaxKeyAncestors - 1 {
		parent = a.createKey(parent.secret, account.ScopeAll)
	}
	verifier := authorizer.New(account.NewTokenVerifier(a.Store, token.NewParser(httpapitest.Issuer, a.PublicKey), a.Clock.Now), authorizer.Routes{"GET /orders": {Audience: audience}}, slog.New(slog.DiscardHandler), nil)
	for _, owner := range []string{strings.Repeat("<", account.MaxExternalIDLength), strings.Repeat("😀", account.MaxExternalIDLength)} {
		t.Run(string([]rune(owner)[:1]), func(t *testing.T) {
			res := a.do(http.MethodPost, "/v1/api-keys", parent.secret, map[string]any{
				"name": "largest", "scopes": scopes, "organization_id": org.ID, "owner_id": owner,
			})
			want(t, res, http.StatusCreated)
			secret := res.Map(t)["key"].(string)
			res = a.do(http.MethodPost, "/v1/auth/token", secret, map[string]any{"scopes": scopes, "audience": audience})
			want(t, res, http.StatusCreated)
			tok := res.Map(t)["access_token"].(string)
			t.Logf("%d bytes (token.MaxTokenBytes %d)", len(tok), token.MaxTokenBytes)
			if anc := ancestorsOf(t, tok); len(anc) != account.MaxKeyAncestors {
				t.Fatalf("the token names %d ancestors, want the most, %d", len(anc), account.MaxKeyAncestors)
			}

			if v := a.do(http.MethodGet, "/v1/auth/verify", tok, nil).Map(t); v["valid"] != true || v["owner_id"] != owner {
				t.Errorf("verify: got %v, want valid with the owner", v)
			}
			res = a.form("/oauth2/introspect", client{bearer: a.AdminKey}, url.Values{"token": {tok}})
			want(t, res, http.StatusOK)
			if v := res.Map(t); v["active"] != true {
				t.Errorf("introspect: got %v, want active", v)
			}
			decision, err := verifier.Authorize(t.Context(), events.APIGatewayV2CustomAuthorizerV2Request{
				RouteKey: "GET /orders", Headers: map[string]string{"authorization": "Bearer " + tok},
			})
			if err != nil || !decision.IsAuthorized {
				t.Errorf("authorizer: got %+v, %v, want authorized", decision, err)
			}
		})
	}
}

// ancestorsOf returns the anc claim of a token, unverified.
func ancestorsOf(t *testing.T, tok string) []string {
	t.Helper()
	parts := strings.Split(tok, ".")
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Anc []string `json:"anc"`
	}
	if err := json.Unmarshal(payload, &c); err != nil {
		t.Fatal(err)
	}
	return c.Anc
}

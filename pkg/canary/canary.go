// Package canary is the check a deployment runs against the new versions
// of the verifying functions before CodeDeploy moves any traffic to them
// (template.yaml CanaryHookFunction, DeploymentPreference.Hooks.PreTraffic):
// it asks organizations and users for a list, issues a token, verifies it,
// introspects it, asks the authorizer, revokes it, and asks each again,
// and fails at the first wrong answer. A
// version that answers 5xx, finds every token invalid or ignores a
// revocation never takes a request. Each function is reached as Lambda
// calls it, with the events API Gateway and the function URL send (payload
// 2.0), so the check runs the same way over the handlers in process (the
// tests) and over lambda:InvokeFunction on the versions (the hook).
package canary

import (
	"bytes"
	"compress/zlib"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"latchkey/pkg/account"
)

// HTTPFunction answers an HTTP API or function URL request as the auth and
// verify functions' handlers do.
type HTTPFunction func(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)

// AuthorizerFunction answers an authorizer request as the authorizer's
// handler does.
type AuthorizerFunction func(ctx context.Context, req events.APIGatewayV2CustomAuthorizerV2Request) (events.APIGatewayV2CustomAuthorizerSimpleResponse, error)

// Targets are the versions the check asks.
type Targets struct {
	// Auth issues, verifies, introspects and revokes. Required.
	Auth HTTPFunction
	// Verify is the verify function (function URL); nil when the stack
	// serves none.
	Verify HTTPFunction
	// Authorizer is the Lambda authorizer. Required.
	Authorizer AuthorizerFunction
	// Organizations and Users are each asked for one page with the key,
	// the probe key, which may not list them: the right refusal (403
	// insufficient_scope) says their versions start, read their secret
	// and the key's item, and apply its grant. Nil skips them.
	Organizations, Users HTTPFunction
	// Audience is the audience of the token issued; empty for Latchkey's
	// own, which the authorizer never admits. The authorizer's refusal
	// says something of the revocation only when its rules admitted the
	// token before (a rule for GET /canary, or "*", with this audience).
	Audience string
}

// Scope is the one scope of the check's token, the probe key's one grant
// (account.ProbeScope): it opens nothing of Latchkey's API, whose scopes
// name its resources.
const Scope = account.ProbeScope

// Check runs the check with apiKey, the probe key (account.EnsureProbeKey:
// its grant is Scope alone), and returns nil when every answer was right,
// else a *Failure naming the first wrong one. The token it issues lives 5
// minutes and is revoked even when a step fails; neither it nor apiKey is
// ever in an error.
func Check(ctx context.Context, t Targets, apiKey string) (err error) {
	c := &check{t: t, key: apiKey}
	for _, l := range []struct {
		fn         HTTPFunction
		name, path string
	}{{t.Organizations, "organizations", "/v1/organizations"}, {t.Users, "users", "/v1/users"}} {
		if l.fn == nil {
			continue
		}
		res, err := c.call(ctx, l.fn, c.request(http.MethodGet, l.path, "GET "+l.path, "Bearer "+c.key, "", ""))
		if err != nil {
			return &Failure{"list " + l.name, l.name, err.Error()}
		}
		if f := refused(res, http.StatusForbidden, string(account.CodeInsufficientScope)); f != "" {
			return &Failure{"list " + l.name, l.name, f}
		}
	}
	tok, err := c.issue(ctx)
	if err != nil {
		return err
	}
	revoked := false
	defer func() {
		if !revoked {
			// Best effort: the failure already says what went wrong.
			c.revoke(ctx, tok)
		}
	}()
	if err := c.verifyAll(ctx, tok, true); err != nil {
		return err
	}
	if err := c.revoke(ctx, tok); err != nil {
		return err
	}
	revoked = true
	return c.verifyAll(ctx, tok, false)
}

// Failure is a wrong answer: which step, which function, what it answered
// (a status and a problem's code, or what was wrong in the body).
type Failure struct {
	Step     string
	Function string
	Answer   string
}

func (f *Failure) Error() string {
	return fmt.Sprintf("canary: %s (%s): %s", f.Step, f.Function, f.Answer)
}

type check struct {
	t   Targets
	key string
	n   int
}

// token is what issue returns: the access token and its id.
type token struct{ value, id string }

func (c *check) issue(ctx context.Context) (token, error) {
	const step = "issue a token"
	req := map[string]any{"scopes": []string{Scope}, "expires_in": "5m"}
	if c.t.Audience != "" {
		req["audience"] = c.t.Audience
	}
	b, _ := json.Marshal(req)
	body := string(b)
	res, err := c.call(ctx, c.t.Auth, c.request(http.MethodPost, "/v1/auth/token", "POST /v1/auth/token", "Bearer "+c.key, "application/json", body))
	if err != nil {
		return token{}, &Failure{step, "auth", err.Error()}
	}
	var v struct {
		AccessToken string `json:"access_token"`
		TokenID     string `json:"token_id"`
	}
	if f := decode(res, http.StatusCreated, &v); f != "" {
		return token{}, &Failure{step, "auth", f}
	}
	if v.AccessToken == "" || v.TokenID == "" {
		return token{}, &Failure{step, "auth", "201 without access_token or token_id"}
	}
	return token{v.AccessToken, v.TokenID}, nil
}

func (c *check) revoke(ctx context.Context, tok token) error {
	const step = "revoke the token"
	body, _ := json.Marshal(map[string]string{"token": tok.value})
	res, err := c.call(ctx, c.t.Auth, c.request(http.MethodPost, "/v1/auth/revoke", "POST /v1/auth/revoke", "Bearer "+c.key, "application/json", string(body)))
	if err != nil {
		return &Failure{step, "auth", err.Error()}
	}
	var v struct {
		Revoked bool   `json:"revoked"`
		TokenID string `json:"token_id"`
	}
	if f := decode(res, http.StatusOK, &v); f != "" {
		return &Failure{step, "auth", f}
	}
	if !v.Revoked || v.TokenID != tok.id {
		return &Failure{step, "auth", fmt.Sprintf("revoked %v, token_id %q; want true, %q", v.Revoked, v.TokenID, tok.id)}
	}
	return nil
}

// verifyAll asks every path about tok, which is valid before the
// revocation and invalid (revoked) after it, and stops at the first wrong
// answer.
func (c *check) verifyAll(ctx context.Context, tok token, valid bool) error {
	for _, p := range c.paths(tok, valid) {
		if err := p.ask(ctx); err != nil && !errors.Is(err, errNotApplicable) {
			return err
		}
	}
	return nil
}

// path is one way a relying party learns of a revocation; ask returns nil
// when its answer is the right one, and errNotApplicable when it says
// nothing of this token's revocation.
type path struct {
	name string
	ask  func(ctx context.Context) error
}

// errNotApplicable is a path that says nothing of the token's revocation:
// a token without the status claim (the status-lists format is not in
// force) has no entry in any list; an authorizer that refuses the valid
// token (no rule admits it) refuses the revoked one whatever it knows.
var errNotApplicable = errors.New("not applicable")

// The paths, by name (the probe's log lines and metrics name them).
const (
	PathVerify     = "verify"
	PathVerifyURL  = "verify-url"
	PathIntrospect = "introspect"
	PathAuthorizer = "authorizer"
	PathStatusList = "status-list"
)

// paths are the targets' answers about tok, each checked for valid.
func (c *check) paths(tok token, valid bool) []path {
	when := "before revocation"
	if !valid {
		when = "after revocation"
	}
	verify := func(ctx context.Context, fn HTTPFunction, name, routeKey string) error {
		step := "verify " + when
		res, err := c.call(ctx, fn, c.request(http.MethodGet, "/v1/auth/verify", routeKey, "Bearer "+tok.value, "", ""))
		if err != nil {
			return &Failure{step, name, err.Error()}
		}
		var v struct {
			Valid   bool   `json:"valid"`
			Reason  string `json:"reason"`
			TokenID string `json:"token_id"`
		}
		if f := decode(res, http.StatusOK, &v); f != "" {
			return &Failure{step, name, f}
		}
		if valid && (!v.Valid || v.TokenID != tok.id) {
			return &Failure{step, name, fmt.Sprintf("valid %v (reason %q), token_id %q; want valid, %q", v.Valid, v.Reason, v.TokenID, tok.id)}
		}
		if !valid && (v.Valid || v.Reason != "revoked") {
			return &Failure{step, name, fmt.Sprintf("valid %v, reason %q; want not valid, revoked", v.Valid, v.Reason)}
		}
		return nil
	}
	out := []path{{PathVerify, func(ctx context.Context) error { return verify(ctx, c.t.Auth, "auth", "GET /v1/auth/verify") }}}
	if c.t.Verify != nil {
		// A function URL's events name no route.
		out = append(out, path{PathVerifyURL, func(ctx context.Context) error { return verify(ctx, c.t.Verify, "verify", "$default") }})
	}
	out = append(out, path{PathIntrospect, func(ctx context.Context) error {
		step := "introspect " + when
		form := url.Values{"token": {tok.value}}.Encode()
		res, err := c.call(ctx, c.t.Auth, c.request(http.MethodPost, "/oauth2/introspect", "POST /oauth2/introspect", "Bearer "+c.key, "application/x-www-form-urlencoded", form))
		if err != nil {
			return &Failure{step, "auth", err.Error()}
		}
		var in struct {
			Active bool   `json:"active"`
			JTI    string `json:"jti"`
		}
		if f := decode(res, http.StatusOK, &in); f != "" {
			return &Failure{step, "auth", f}
		}
		if in.Active != valid || (valid && in.JTI != tok.id) {
			return &Failure{step, "auth", fmt.Sprintf("active %v, jti %q; want active %v", in.Active, in.JTI, valid)}
		}
		return nil
	}}, path{PathAuthorizer, func(ctx context.Context) error {
		// The authorizer's rules (AuthorizerRoutes) decide whether a valid
		// token opens a route, so before the revocation only an answer is
		// required (a refusal: not applicable, see Targets.Audience);
		// after it, a refusal.
		step := "ask the authorizer " + when
		c.n++
		areq := events.APIGatewayV2CustomAuthorizerV2Request{
			Version: "2.0", Type: "REQUEST", RouteKey: "GET /canary", RawPath: "/canary",
			Headers:        map[string]string{"authorization": "Bearer " + tok.value},
			RequestContext: events.APIGatewayV2HTTPRequestContext{RequestID: c.requestID(), RouteKey: "GET /canary", Stage: "$default"},
		}
		areq.RequestContext.HTTP.Method, areq.RequestContext.HTTP.Path = http.MethodGet, "/canary"
		decision, err := c.t.Authorizer(ctx, areq)
		if err != nil {
			return &Failure{step, "authorizer", err.Error()}
		}
		if !valid && decision.IsAuthorized {
			return &Failure{step, "authorizer", "authorized a revoked token"}
		}
		if valid && !decision.IsAuthorized {
			return errNotApplicable
		}
		return nil
	}}, path{PathStatusList, func(ctx context.Context) error {
		return c.statusList(ctx, tok, valid, "read the status list "+when)
	}})
	return out
}

// statusList reads the token's entry in the list its status claim names,
// as the auth function serves it, and checks it is VALID before the
// revocation and INVALID after; errNotApplicable when the token has no
// status claim. The probe issued the token and reads its own claim, so it
// does not check the signatures: the verifier module does for a relying
// party.
func (c *check) statusList(ctx context.Context, tok token, valid bool, step string) error {
	var claims struct {
		Status *struct {
			StatusList struct {
				Index *int64 `json:"idx"`
				URI   string `json:"uri"`
			} `json:"status_list"`
		} `json:"status"`
	}
	if err := jwsPayload(tok.value, &claims); err != nil {
		return &Failure{step, "auth", "the token's payload: " + err.Error()}
	}
	if claims.Status == nil {
		return errNotApplicable
	}
	ref := claims.Status.StatusList
	u, err := url.Parse(ref.URI)
	if ref.Index == nil || err != nil || !strings.HasPrefix(u.Path, account.StatusListPath) {
		return &Failure{step, "auth", "the token's status claim names no list of this issuer"}
	}
	req := c.request(http.MethodGet, u.Path, "GET "+account.StatusListPath+"{id}", "", "", "")
	delete(req.Headers, "authorization") // the lists are public
	req.PathParameters = map[string]string{"id": strings.TrimPrefix(u.Path, account.StatusListPath)}
	res, err := c.call(ctx, c.t.Auth, req)
	if err != nil {
		return &Failure{step, "auth", err.Error()}
	}
	if res.StatusCode != http.StatusOK {
		return &Failure{step, "auth", decode(res, http.StatusOK, nil)}
	}
	var list struct {
		StatusList struct {
			Bits int    `json:"bits"`
			Lst  string `json:"lst"`
		} `json:"status_list"`
	}
	body := res.Body
	if res.IsBase64Encoded {
		b, err := base64.StdEncoding.DecodeString(body)
		if err != nil {
			return &Failure{step, "auth", "200 with a body that is not base64"}
		}
		body = string(b)
	}
	if err := jwsPayload(body, &list); err != nil {
		return &Failure{step, "auth", "the Status List Token's payload: " + err.Error()}
	}
	if list.StatusList.Bits != account.StatusBits {
		return &Failure{step, "auth", fmt.Sprintf("bits %d, want %d", list.StatusList.Bits, account.StatusBits)}
	}
	statuses, err := decompress(list.StatusList.Lst)
	if err != nil {
		return &Failure{step, "auth", "lst: " + err.Error()}
	}
	got, want := account.StatusList{Statuses: statuses}.Status(*ref.Index), account.StatusInvalid
	if valid {
		want = account.StatusValid
	}
	if got != want {
		return &Failure{step, "auth", fmt.Sprintf("status %d at idx %d, want %d", got, *ref.Index, want)}
	}
	return nil
}

// jwsPayload decodes the JSON payload of the compact JWS jws into v.
func jwsPayload(jws string, v any) error {
	parts := strings.Split(jws, ".")
	if len(parts) != 3 {
		return errors.New("not a compact JWS")
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return errors.New("not base64url")
	}
	if err := json.Unmarshal(b, v); err != nil {
		return errors.New("not JSON")
	}
	return nil
}

// decompress returns the byte array of lst (draft-ietf-oauth-status-list,
// section 4.1): base64url without padding of a ZLIB stream (RFC 1950),
// of at most the largest list's bytes.
func decompress(lst string) ([]byte, error) {
	z, err := base64.RawURLEncoding.DecodeString(lst)
	if err != nil {
		return nil, errors.New("not base64url")
	}
	r, err := zlib.NewReader(bytes.NewReader(z))
	if err != nil {
		return nil, errors.New("not ZLIB")
	}
	defer r.Close()
	max := int64(account.MaxStatusListSize*account.StatusBits/8 + 1)
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, errors.New("not ZLIB")
	}
	if int64(len(b)) > max {
		return nil, errors.New("larger than the largest list")
	}
	return b, nil
}

// request is an HTTP API (payload 2.0) request as API Gateway sends it.
func (c *check) request(method, path, routeKey, authorization, contentType, body string) events.APIGatewayV2HTTPRequest {
	c.n++
	h := map[string]string{"authorization": authorization, "user-agent": "latchkey-canary"}
	if contentType != "" {
		h["content-type"] = contentType
		h["content-length"] = strconv.Itoa(len(body))
	}
	req := events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: routeKey, RawPath: path, Headers: h, Body: body,
		RequestContext: events.APIGatewayV2HTTPRequestContext{RequestID: c.requestID(), RouteKey: routeKey, Stage: "$default"},
	}
	req.RequestContext.HTTP.Method, req.RequestContext.HTTP.Path, req.RequestContext.HTTP.Protocol = method, path, "HTTP/1.1"
	req.RequestContext.HTTP.UserAgent = "latchkey-canary"
	return req
}

// requestID marks the check's requests in the functions' logs.
func (c *check) requestID() string { return "canary-" + strconv.Itoa(c.n) }

func (c *check) call(ctx context.Context, fn HTTPFunction, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	res, err := fn(ctx, req)
	if err != nil {
		return res, fmt.Errorf("invocation failed: %w", err)
	}
	return res, nil
}

// refused says what was wrong with res unless it is the problem of status
// and code: "" when it is.
func refused(res events.APIGatewayV2HTTPResponse, status int, code string) string {
	var p struct {
		Code string `json:"code"`
	}
	if f := decode(res, status, &p); f != "" {
		return f
	}
	if p.Code != code {
		return fmt.Sprintf("%d %s, want %d %s", res.StatusCode, p.Code, status, code)
	}
	return ""
}

// decode reads res's JSON body into v when its status is want, and
// otherwise says what came: the status and, for a problem, its code (never
// the body of a success, which may hold a token).
func decode(res events.APIGatewayV2HTTPResponse, want int, v any) string {
	body := []byte(res.Body)
	if res.IsBase64Encoded {
		b, err := base64.StdEncoding.DecodeString(res.Body)
		if err != nil {
			return fmt.Sprintf("%d with a body that is not base64", res.StatusCode)
		}
		body = b
	}
	if res.StatusCode != want {
		var p struct {
			Code string `json:"code"`
		}
		json.Unmarshal(body, &p)
		if p.Code != "" {
			return fmt.Sprintf("%d %s, want %d", res.StatusCode, p.Code, want)
		}
		return fmt.Sprintf("%d, want %d", res.StatusCode, want)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Sprintf("%d with a body that is not the expected JSON", res.StatusCode)
	}
	return ""
}

// Package authorizer decides API Gateway HTTP API Lambda authorizer
// requests (payload format 2.0, simple responses) for the routes of APIs
// that Latchkey's users build: a request whose Authorization header carries
// a Latchkey access token that is valid right now (signature with the
// published keys, then the revocation entry and the issuing key, exactly as
// GET /v1/auth/verify checks it) and that meets the route's rule (an
// audience, and a scope) is authorized; anything else is not. A token for
// Latchkey's own API (its audience is its issuer, what a token request
// that names no audience gets) or for the console is refused on every
// route: it is meant for Latchkey, not for the APIs this guards (RFC 9068,
// section 4), and a route without a rule, or a rule without an audience,
// authorizes nothing, so that a token for one API never opens another.
//
// It is the gateway's counterpart of verify: API Gateway's built-in JWT
// authorizer checks tokens offline and so cannot see a revocation, and
// result caching must be off for a revocation to count at once.
package authorizer

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sort"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"latchkey/pkg/account"
	"latchkey/pkg/logsample"
)

// Rule is what a route asks of a token beyond being valid.
type Rule struct {
	// Scope is the scope the token must hold (a grant such as read:* or
	// *:* covers it); "" for none.
	Scope string `json:"scope,omitempty"`
	// Audience is the token's expected aud: the API the route belongs to.
	// Required: ParseRoutes refuses a rule without it, and the authorizer
	// authorizes nothing on a route whose rule has none.
	Audience string `json:"audience"`
}

// Routes maps an API Gateway routeKey ("GET /orders/{id}", "$default") to
// its Rule. The entry "*" applies to every route not listed; without it, a
// route not listed authorizes no token.
type Routes map[string]Rule

// AnyRoute is the Routes entry for the routes not listed.
const AnyRoute = "*"

// ParseRoutes decodes the JSON of Routes (the AUTHORIZER_ROUTES variable),
// refusing unknown fields, malformed scopes and audiences and a rule
// without an audience, so that a typo cannot leave a route open. An empty
// string is no rules: no route authorizes any token.
func ParseRoutes(s string) (Routes, error) {
	if strings.TrimSpace(s) == "" {
		return Routes{}, nil
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	var r Routes
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf(`routes: want a JSON object {"<routeKey>": {"scope": "...", "audience": "..."}}: %w`, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("routes: text after the JSON object")
	}
	keys := make([]string, 0, len(r))
	for k := range r {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		rule := r[k]
		switch {
		case k == "":
			return nil, fmt.Errorf("routes: an empty routeKey")
		case rule.Audience == "":
			return nil, fmt.Errorf("routes: %q: no audience (required)", k)
		case rule.Scope != "" && !account.ValidScope(rule.Scope):
			return nil, fmt.Errorf("routes: %q: scope %q is not <action>:<resource>", k, rule.Scope)
		case !account.ValidAudience(rule.Audience):
			return nil, fmt.Errorf("routes: %q: audience %q is not an absolute URI or an identifier", k, rule.Audience)
		}
	}
	return r, nil
}

// rule returns the rule of routeKey: the zero Rule, which authorizes
// nothing, for a route neither listed nor covered by AnyRoute.
func (r Routes) rule(routeKey string) Rule {
	if rule, ok := r[routeKey]; ok {
		return rule
	}
	return r[AnyRoute]
}

// Verifier checks access tokens; *account.TokenVerifier is one.
type Verifier interface {
	// VerifyFor is account.TokenVerifier.VerifyFor: the route's rule is
	// checked before the use of a limited key is counted.
	VerifyFor(ctx context.Context, token string, accept func(account.TokenClaims) string) (account.Verification, error)
}

// Authorizer decides authorizer requests.
type Authorizer struct {
	verifier Verifier
	routes   Routes
	logger   *slog.Logger
	allowed  *logsample.Sampler
}

// New returns an Authorizer that checks tokens with verifier and routes'
// rules, and logs one line per decision to logger (slog.Default() if nil):
// of every refusal, and of the requests it allows those allowed keeps (all
// when nil). The protected API's access log has every request.
func New(verifier Verifier, routes Routes, logger *slog.Logger, allowed *logsample.Sampler) *Authorizer {
	if logger == nil {
		logger = slog.Default()
	}
	return &Authorizer{verifier: verifier, routes: routes, logger: logger, allowed: allowed}
}

// The reasons a request is refused, as logged (never returned to the
// client, which API Gateway answers 403 whatever the reason).
const (
	reasonNoToken  = "no_bearer_token"
	reasonScope    = "insufficient_scope"
	reasonAudience = "wrong_audience"
	// reasonOwnAudience: a token for Latchkey's own API or its console.
	reasonOwnAudience = "latchkey_audience"
	// reasonNoRule: the route has no rule, or one without an audience.
	reasonNoRule = "no_rule"
)

var denied = events.APIGatewayV2CustomAuthorizerSimpleResponse{IsAuthorized: false}

// Authorize answers one authorizer request. It returns an error only when
// the token cannot be checked (the table cannot be read): API Gateway then
// answers 500, and the request is refused without being mistaken for a bad
// token.
func (a *Authorizer) Authorize(ctx context.Context, req events.APIGatewayV2CustomAuthorizerV2Request) (events.APIGatewayV2CustomAuthorizerSimpleResponse, error) {
	token, ok := bearerToken(req.Headers)
	if !ok {
		a.decided(ctx, req, false, reasonNoToken, account.TokenClaims{})
		return denied, nil
	}
	// The route's rule is checked before the use is counted: a token the
	// route refuses spends no credit.
	rule := a.routes.rule(req.RouteKey)
	v, err := a.verifier.VerifyFor(ctx, token, func(c account.TokenClaims) string {
		switch {
		case c.Audience == c.Issuer || c.Audience == account.ConsoleAudience(c.Issuer):
			return reasonOwnAudience
		case rule.Audience == "":
			return reasonNoRule
		case rule.Scope != "" && !account.ScopesCover(c.Scopes, rule.Scope):
			return reasonScope
		case c.Audience != rule.Audience:
			return reasonAudience
		}
		return ""
	})
	if err != nil {
		a.logger.ErrorContext(ctx, "authorizer: the token could not be checked", "request_id", req.RequestContext.RequestID, "route", req.RouteKey, "error", err.Error())
		return denied, fmt.Errorf("authorizer: the token could not be checked (request %s)", req.RequestContext.RequestID)
	}
	if !v.Valid {
		// Claims are set when the rule refused the token, empty otherwise.
		a.decided(ctx, req, false, v.Reason, v.Claims)
		return denied, nil
	}
	c := v.Claims
	a.decided(ctx, req, true, "", c)
	// Reaches the integration as requestContext.authorizer.lambda.
	context := map[string]any{
		"token_id":  c.ID,
		"key_id":    c.KeyID,
		"client_id": c.KeyID,
		"scope":     strings.Join(c.Scopes, " "),
		"aud":       c.Audience,
	}
	// The tenant and owner the integration authorizes by, as the token's
	// org_id and owner_id claims say them; absent when the key has none.
	if c.OrganizationID != "" {
		context["org_id"] = c.OrganizationID
	}
	if c.OwnerID != "" {
		context["owner_id"] = c.OwnerID
	}
	return events.APIGatewayV2CustomAuthorizerSimpleResponse{IsAuthorized: true, Context: context}, nil
}

// decided logs the line of a decision: never the token, only its ids. A
// refusal's always; an allowed request's when the sampler keeps it, with
// sample_every when it keeps fewer than all.
func (a *Authorizer) decided(ctx context.Context, req events.APIGatewayV2CustomAuthorizerV2Request, authorized bool, reason string, c account.TokenClaims) {
	if authorized && !a.allowed.Keep() {
		return
	}
	attrs := []any{"request_id", req.RequestContext.RequestID, "route", req.RouteKey, "authorized", authorized}
	if every := a.allowed.Every(); authorized && every > 1 {
		attrs = append(attrs, "sample_every", every)
	}
	if reason != "" {
		attrs = append(attrs, "reason", reason)
	}
	if c.ID != "" {
		attrs = append(attrs, "token_id", c.ID, "key_id", c.KeyID)
	}
	a.logger.InfoContext(ctx, "authorizer decision", attrs...)
}

// bearerToken returns the credential of an "Authorization: Bearer <token>"
// header. HTTP API events (payload 2.0) carry header names in lower case;
// the scheme is case-insensitive (RFC 9110, section 11.1).
func bearerToken(headers map[string]string) (string, bool) {
	h := headers["authorization"]
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimLeft(token, " ")
	if token == "" || strings.ContainsAny(token, " \t,") {
		return "", false
	}
	return token, true
}

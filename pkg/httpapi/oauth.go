package httpapi

import (
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"latchkey/pkg/account"
)

// The OAuth 2.0 endpoints are a second wire format over the same service
// methods as /v1/auth/*: IssueToken, VerifyToken and RevokeToken, with the
// client authenticated by Service.AuthenticateClient. What differs is only
// the wire: form bodies (RFC 6749 appendix B), client authentication (RFC
// 6749 section 2.3.1) and errors as {"error", "error_description"} (RFC
// 6749 section 5.2), which OAuth clients read, instead of problem+json.

// OAuth 2.0 error codes (RFC 6749 section 5.2, RFC 7009 section 2.2.1,
// RFC 8707 section 2).
const (
	oauthInvalidRequest          = "invalid_request"
	oauthInvalidClient           = "invalid_client"
	oauthUnauthorizedClient      = "unauthorized_client"
	oauthUnsupportedGrantType    = "unsupported_grant_type"
	oauthInvalidScope            = "invalid_scope"
	oauthInvalidTarget           = "invalid_target"
	oauthUnsupportedTokenType    = "unsupported_token_type"
	oauthServerError             = "server_error"
	oauthTemporarilyUnavailable  = "temporarily_unavailable"
	oauthRateLimited             = "rate_limited"
	grantClientCredentials       = "client_credentials"
	tokenTypeHintAccessToken     = "access_token"
	authMethodClientSecretBasic  = "client_secret_basic"
	authMethodClientSecretPost   = "client_secret_post"
	formContentType              = "application/x-www-form-urlencoded"
	oauthPath                    = "/oauth2/"
	wellKnownAuthorizationServer = "/.well-known/oauth-authorization-server"
	wellKnownOpenIDConfiguration = "/.well-known/openid-configuration"
	wellKnownJWKS                = "/.well-known/jwks.json"
)

// oauthError is an error response of RFC 6749 section 5.2.
type oauthError struct {
	status      int
	code        string
	description string
	// challenge is the WWW-Authenticate header of a 401: the scheme the
	// client tried (section 5.2), Basic when it tried none.
	challenge string
	// cause is an internal failure, logged and never shown.
	cause error
	// usage is, for rate_limited, the key's limits and when to retry.
	usage *account.KeyUsage
}

func (e *oauthError) Error() string { return e.code + ": " + e.description }

func badRequest(code, description string) *oauthError {
	return &oauthError{status: http.StatusBadRequest, code: code, description: description}
}

// errClient is invalid_client for a client that authenticated with scheme
// (Basic unless it sent a Bearer credential).
func errClient(scheme, description string) *oauthError {
	challenge := `Basic realm="latchkey"`
	if scheme == "Bearer" {
		challenge = `Bearer realm="latchkey", error="invalid_token"`
	}
	return &oauthError{status: http.StatusUnauthorized, code: oauthInvalidClient, description: description, challenge: challenge}
}

// oauthErrorBody is the JSON of an error response.
type oauthErrorBody struct {
	Error            string `json:"error"`
	ErrorDescription string `json:"error_description,omitempty"`
}

// writeOAuthError writes err as RFC 6749 section 5.2 JSON. An error that is
// not an *oauthError is a failure of the service: internal or unavailable,
// logged with the request id like any other, and shown only as
// server_error or temporarily_unavailable.
func (s *server) writeOAuthError(w http.ResponseWriter, r *http.Request, err error) {
	var oe *oauthError
	if !errors.As(err, &oe) {
		oe = fromServiceError(err)
	}
	if oe.cause != nil {
		s.log.ErrorContext(r.Context(), "request failed",
			"request_id", info(r).id, "route", info(r).route, "code", oe.code, "error", oe.cause.Error())
	}
	h := w.Header()
	if oe.challenge != "" {
		h.Set("WWW-Authenticate", oe.challenge)
	}
	switch oe.code {
	case oauthTemporarilyUnavailable:
		h.Set("Retry-After", strconv.Itoa(retryAfterSeconds))
	case oauthRateLimited:
		setRateLimitHeaders(h, oe.usage)
	}
	h.Set("Cache-Control", "no-store")
	h.Set("Pragma", "no-cache")
	s.writeJSON(w, r, oe.status, oauthErrorBody{Error: oe.code, ErrorDescription: oauthText(oe.description)})
}

// oauthText keeps an error_description within the characters RFC 6749
// section 5.2 allows (%x20-21 / %x23-5B / %x5D-7E): a domain message may
// quote a value.
func oauthText(s string) string {
	return strings.Map(func(c rune) rune {
		switch {
		case c == '"':
			return '\''
		case c == '\\':
			return '/'
		case c < 0x20 || c > 0x7e:
			return '?'
		}
		return c
	}, s)
}

// fromServiceError turns an error of the service that no endpoint expects
// into server_error or temporarily_unavailable; their causes are logged.
func fromServiceError(err error) *oauthError {
	switch account.ErrorCode(err) {
	case account.CodeRateLimited:
		// RFC 6749 registers no error for a rate limit. rate_limited is
		// the word Latchkey uses for it everywhere (the problem code, the
		// reason of verify), and clients act on the 429 and Retry-After;
		// Auth0's too_many_requests is no more standard than ours.
		var e *account.Error
		errors.As(err, &e)
		return &oauthError{status: http.StatusTooManyRequests, code: oauthRateLimited, description: "the client's API key is over a rate limit; retry after the seconds in Retry-After", usage: e.Usage}
	case account.CodeUnavailable:
		return &oauthError{status: http.StatusServiceUnavailable, code: oauthTemporarilyUnavailable, description: "the service is temporarily unavailable; retry shortly", cause: err}
	case account.CodeConcurrentUpdate:
		// A write that lost to concurrent ones, every try: no failure of
		// the service, so nothing logged at ERROR; RFC 6749 has no
		// conflict code, and this one says to send it again.
		return &oauthError{status: http.StatusServiceUnavailable, code: oauthTemporarilyUnavailable, description: "the change lost to concurrent changes of the same data, and was not made; send the request again"}
	case account.CodeInvalidRequest:
		var e *account.Error
		errors.As(err, &e)
		return badRequest(oauthInvalidRequest, describe(e))
	default:
		return &oauthError{status: http.StatusInternalServerError, code: oauthServerError, description: "an internal error occurred; quote the X-Request-Id header if you report it", cause: err}
	}
}

// describe is the client-safe message of a domain error, with its field
// errors, for an error_description.
func describe(e *account.Error) string {
	if len(e.Fields) == 0 {
		return e.Message
	}
	parts := make([]string, len(e.Fields))
	for i, f := range e.Fields {
		parts[i] = f.Field + " " + f.Message
	}
	return strings.Join(parts, "; ")
}

// readForm reads the request's form body (RFC 6749 appendix B): media type
// application/x-www-form-urlencoded, at most MaxBodyBytes, each parameter
// at most once (section 3.1). A parameter sent without a value is treated
// as omitted (section 3.1), so it is dropped here. Parameters in the query
// string are refused: client credentials must never be in the URI (section
// 2.3.1), and these endpoints take none.
func readForm(w http.ResponseWriter, r *http.Request) (url.Values, error) {
	if r.URL.RawQuery != "" {
		return nil, badRequest(oauthInvalidRequest, "send the parameters in the request body, not in the query string")
	}
	mediaType, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mediaType != formContentType {
		return nil, badRequest(oauthInvalidRequest, "send the parameters as Content-Type: "+formContentType)
	}
	for k, v := range params {
		if k != "charset" || !strings.EqualFold(v, "utf-8") {
			return nil, badRequest(oauthInvalidRequest, "send the parameters as Content-Type: "+formContentType+"; the only parameter allowed is charset=utf-8")
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return nil, badRequest(oauthInvalidRequest, "the request body must be at most "+strconv.Itoa(MaxBodyBytes)+" bytes")
	case err != nil:
		return nil, badRequest(oauthInvalidRequest, "the request body could not be read")
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, badRequest(oauthInvalidRequest, "the request body is not application/x-www-form-urlencoded")
	}
	for name, values := range form {
		if len(values) > 1 {
			return nil, badRequest(oauthInvalidRequest, "the parameter "+name+" appears more than once")
		}
		if values[0] == "" {
			delete(form, name)
		}
	}
	return form, nil
}

// authenticateClient authenticates the client of an OAuth request with
// client_secret_basic (RFC 6749 section 2.3.1: client_id and secret
// form-urlencoded, then HTTP Basic) or client_secret_post (the same two in
// the body), or, where bearer is true (introspection and revocation), with
// Authorization: Bearer <API key>. A client uses one method only (section
// 2.3). Every failure to authenticate is invalid_client, 401.
func (s *server) authenticateClient(r *http.Request, form url.Values, bearerAllowed bool) (account.Principal, error) {
	header := r.Header.Get("Authorization")
	scheme, _, _ := strings.Cut(header, " ")
	postID, postSecret := form.Get("client_id"), form.Get("client_secret")
	switch {
	case header == "":
		if postID == "" || postSecret == "" {
			return account.Principal{}, errClient("", "authenticate the client: HTTP Basic with the API key id and secret (client_secret_basic), or client_id and client_secret in the body (client_secret_post)")
		}
		return s.clientPrincipal(r, "", postID, postSecret)
	case postSecret != "":
		return account.Principal{}, badRequest(oauthInvalidRequest, "use one client authentication method: the Authorization header or client_secret in the body, not both")
	case strings.EqualFold(scheme, "Basic"):
		user, pass, ok := r.BasicAuth()
		if !ok {
			return account.Principal{}, errClient("Basic", "the Basic credentials are malformed")
		}
		id, err1 := url.QueryUnescape(user)
		secret, err2 := url.QueryUnescape(pass)
		if err1 != nil || err2 != nil {
			return account.Principal{}, errClient("Basic", "the Basic credentials must be form-urlencoded (RFC 6749 section 2.3.1)")
		}
		if postID != "" && postID != id {
			return account.Principal{}, badRequest(oauthInvalidRequest, "client_id in the body differs from the one in the Authorization header")
		}
		return s.clientPrincipal(r, "Basic", id, secret)
	case bearerAllowed && strings.EqualFold(scheme, "Bearer"):
		credential, ok := bearer(r)
		if !ok {
			return account.Principal{}, errClient("Bearer", "the Bearer credential is malformed")
		}
		p, err := s.svc.Authenticate(r.Context(), credential)
		if err == nil {
			err = p.RequireKey("")
		}
		if err != nil {
			return account.Principal{}, s.clientError("Bearer", err)
		}
		return p, nil
	default:
		return account.Principal{}, errClient("", "the Authorization scheme must be Basic (client_secret_basic)")
	}
}

func (s *server) clientPrincipal(r *http.Request, scheme, id, secret string) (account.Principal, error) {
	p, err := s.svc.AuthenticateClient(r.Context(), id, secret)
	if err != nil {
		return account.Principal{}, s.clientError(scheme, err)
	}
	return p, nil
}

// clientError is invalid_client for a refused credential, and the service's
// own failure (a store that is down) for anything else.
func (s *server) clientError(scheme string, err error) error {
	switch account.ErrorCode(err) {
	case account.CodeUnauthorized:
		return errClient(scheme, "client authentication failed: unknown client, wrong secret, or an expired or deleted API key")
	case account.CodeForbidden:
		return errClient(scheme, "authenticate with an API key; an access token is not a client credential")
	}
	return err
}

// oauthTokenResponse is the success response of RFC 6749 section 5.1.
type oauthTokenResponse struct {
	AccessToken string `json:"access_token"`
	TokenType   string `json:"token_type"`
	ExpiresIn   int64  `json:"expires_in"`
	Scope       string `json:"scope"`
}

// oauthToken is the token endpoint for the client credentials grant (RFC
// 6749 section 4.4). The client is the API key; the token is the one
// POST /v1/auth/token issues, with the default lifetime.
func (s *server) oauthToken(w http.ResponseWriter, r *http.Request, _ account.Principal) error {
	form, err := readForm(w, r)
	if err != nil {
		return err
	}
	p, err := s.authenticateClient(r, form, false)
	if err != nil {
		return err
	}
	setRateLimitHeaders(w.Header(), p.Usage)
	switch grant := form.Get("grant_type"); grant {
	case grantClientCredentials:
	case "":
		return badRequest(oauthInvalidRequest, "grant_type is required; the only grant type is client_credentials")
	default:
		return badRequest(oauthUnsupportedGrantType, "the only grant type is client_credentials")
	}
	// Without scope, the token carries every grant of the key, as section
	// 3.3 allows a server to define a default.
	scopes := p.Scopes
	if raw, ok := form["scope"]; ok {
		if scopes, err = parseScope(raw[0]); err != nil {
			return err
		}
	}
	audience, err := audienceParam(form)
	if err != nil {
		return err
	}
	token, c, err := s.svc.IssueToken(r.Context(), p, account.TokenRequest{Scopes: scopes, Audience: audience})
	if err != nil {
		return issueError(err)
	}
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Pragma", "no-cache")
	s.writeJSON(w, r, http.StatusOK, oauthTokenResponse{
		AccessToken: token,
		TokenType:   "Bearer",
		ExpiresIn:   secondsUntil(c.ExpiresAt, c.IssuedAt),
		Scope:       strings.Join(c.Scopes, " "),
	})
	return nil
}

// parseScope splits a scope parameter (RFC 6749 section 3.3): scope tokens
// separated by single spaces.
func parseScope(raw string) ([]string, error) {
	scopes := strings.Split(raw, " ")
	for _, s := range scopes {
		if s == "" {
			return nil, badRequest(oauthInvalidScope, "scope must be scope tokens separated by single spaces")
		}
	}
	return scopes, nil
}

// audienceParam returns the audience asked for: audience, or resource (RFC
// 8707), which must be an absolute URI. One of them, or both the same.
func audienceParam(form url.Values) (string, error) {
	audience, resource := form.Get("audience"), form.Get("resource")
	if resource != "" {
		if u, err := url.Parse(resource); err != nil || !u.IsAbs() || u.Fragment != "" || strings.Contains(resource, "#") {
			return "", badRequest(oauthInvalidTarget, "resource must be an absolute URI without a fragment (RFC 8707)")
		}
		if audience != "" && audience != resource {
			return "", badRequest(oauthInvalidRequest, "send audience or resource, not two different values")
		}
		audience = resource
	}
	return audience, nil
}

// issueError maps IssueToken's errors to the token endpoint's.
func issueError(err error) error {
	var e *account.Error
	if !errors.As(err, &e) {
		return err
	}
	switch e.Code {
	case account.CodeInsufficientScope:
		return badRequest(oauthInvalidScope, "the client does not hold the scope "+e.Scope)
	case account.CodeInvalidRequest:
		for _, f := range e.Fields {
			switch {
			case f.Field == "audience":
				return badRequest(oauthInvalidTarget, "audience "+f.Message)
			case f.Field == "scopes" || strings.HasPrefix(f.Field, "scopes["):
				return badRequest(oauthInvalidScope, "scope: "+f.Message)
			}
		}
	}
	return err
}

// introspection is the response of RFC 7662 section 2.2 for an active
// token. An inactive one is exactly {"active": false}.
type introspection struct {
	Active    bool   `json:"active"`
	Scope     string `json:"scope,omitempty"`
	ClientID  string `json:"client_id,omitempty"`
	Subject   string `json:"sub,omitempty"`
	Audience  string `json:"aud,omitempty"`
	Issuer    string `json:"iss,omitempty"`
	ExpiresAt int64  `json:"exp,omitempty"`
	IssuedAt  int64  `json:"iat,omitempty"`
	ID        string `json:"jti,omitempty"`
	TokenType string `json:"token_type,omitempty"`
	// OrgID and OwnerID are the API key's organization and owner, as the
	// token's claims of the same names say them.
	OrgID   string `json:"org_id,omitempty"`
	OwnerID string `json:"owner_id,omitempty"`
}

// oauthIntrospect is token introspection (RFC 7662): VerifyToken in RFC
// 7662's words. The hint is only a hint (section 2.1): there is one kind
// of token to look for.
func (s *server) oauthIntrospect(w http.ResponseWriter, r *http.Request, _ account.Principal) error {
	form, err := readForm(w, r)
	if err != nil {
		return err
	}
	p, err := s.authenticateClient(r, form, true)
	if err != nil {
		return err
	}
	setRateLimitHeaders(w.Header(), p.Usage)
	tok := form.Get("token")
	if tok == "" {
		return badRequest(oauthInvalidRequest, "token is required")
	}
	// Another tenant's token is inactive to a client bound to an
	// organization (RFC 7662 section 2.2).
	v, err := s.svc.IntrospectToken(r.Context(), p, tok)
	if err != nil {
		return err
	}
	// The answer changes the moment the token is revoked.
	w.Header().Set("Cache-Control", "no-store")
	// The RateLimit fields are the client's key's (set above): the token's
	// key is another client's business.
	if !v.Valid {
		info(r).refused = v.Reason
		s.writeJSON(w, r, http.StatusOK, introspection{Active: false})
		return nil
	}
	c := v.Claims
	s.writeJSON(w, r, http.StatusOK, introspection{
		Active:    true,
		Scope:     strings.Join(c.Scopes, " "),
		ClientID:  c.KeyID,
		Subject:   c.KeyID,
		Audience:  c.Audience,
		Issuer:    c.Issuer,
		ExpiresAt: c.ExpiresAt.Unix(),
		IssuedAt:  c.IssuedAt.Unix(),
		ID:        c.ID,
		TokenType: "Bearer",
		OrgID:     c.OrganizationID,
		OwnerID:   c.OwnerID,
	})
	return nil
}

// oauthRevoke is token revocation (RFC 7009): RevokeToken in RFC 7009's
// words. A token the service did not issue, or cannot read, is answered
// 200 like a revoked one (section 2.2), unless the client hinted it is of
// a kind this server does not have (a refresh token): then
// unsupported_token_type.
func (s *server) oauthRevoke(w http.ResponseWriter, r *http.Request, _ account.Principal) error {
	form, err := readForm(w, r)
	if err != nil {
		return err
	}
	p, err := s.authenticateClient(r, form, true)
	if err != nil {
		return err
	}
	setRateLimitHeaders(w.Header(), p.Usage)
	tok := form.Get("token")
	if tok == "" {
		return badRequest(oauthInvalidRequest, "token is required")
	}
	hint := form.Get("token_type_hint")
	_, err = s.svc.RevokeToken(r.Context(), withEvents(r, p), tok)
	switch account.ErrorCode(err) {
	case "":
	case account.CodeInvalidRequest:
		// RevokeToken's only invalid request with a token present: not an
		// access token this service signed.
		if hint != "" && hint != tokenTypeHintAccessToken {
			return badRequest(oauthUnsupportedTokenType, "this server issues access tokens only")
		}
	case account.CodeInsufficientScope:
		return badRequest(oauthUnauthorizedClient, "the token was issued to another client; revoking it needs the scope "+account.ScopeRevokeTokens)
	case account.CodeOutsideOrganization:
		// RFC 7009 section 2.1: a token the client may not revoke is
		// refused, and nothing changes.
		return badRequest(oauthUnauthorizedClient, "the token was issued to a key outside the client's organization")
	case account.CodeForbidden:
		// The one refusal of the rule itself: a client with an owner
		// revokes its owner's tokens only.
		return badRequest(oauthUnauthorizedClient, "the token was issued to a key of another owner than the client's")
	default:
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	return nil
}

// serverMetadata is the authorization server metadata of RFC 8414, and
// only what is true of Latchkey: an authorization server for the client
// credentials grant, with no authorization endpoint, no ID tokens and no
// userinfo. It is served at the OpenID Connect discovery address too,
// because API Gateway's JWT authorizer reads issuer and jwks_uri there
// (docs/standard-clients.md), but it claims none of OpenID Connect.
type serverMetadata struct {
	Issuer                                    string   `json:"issuer"`
	TokenEndpoint                             string   `json:"token_endpoint"`
	JWKSURI                                   string   `json:"jwks_uri"`
	IntrospectionEndpoint                     string   `json:"introspection_endpoint"`
	RevocationEndpoint                        string   `json:"revocation_endpoint"`
	GrantTypesSupported                       []string `json:"grant_types_supported"`
	TokenEndpointAuthMethodsSupported         []string `json:"token_endpoint_auth_methods_supported"`
	IntrospectionEndpointAuthMethodsSupported []string `json:"introspection_endpoint_auth_methods_supported"`
	RevocationEndpointAuthMethodsSupported    []string `json:"revocation_endpoint_auth_methods_supported"`
	ScopesSupported                           []string `json:"scopes_supported"`
	// StatusListAggregationEndpoint lists every live status list
	// (draft-ietf-oauth-status-list, section 9.3).
	StatusListAggregationEndpoint string `json:"status_list_aggregation_endpoint"`
	// ResponseTypesSupported is empty: RFC 8414 requires the member, and
	// without an authorization endpoint there is no response type.
	ResponseTypesSupported []string `json:"response_types_supported"`
}

// metadataMaxAge lets clients and gateways cache the document as long as
// the key set.
const metadataMaxAge = jwksMaxAge

// serveMetadata serves the metadata at both well-known addresses. The
// issuer is the service's; every endpoint is under it, so the document is
// served at the URL it names (RFC 8414 section 3.3).
func (s *server) serveMetadata(w http.ResponseWriter, r *http.Request, _ account.Principal) error {
	issuer := s.svc.Issuer()
	if issuer == "" {
		// A deployment that has not recorded its issuer yet.
		return account.Unavailable(errors.New("httpapi: the service has no issuer yet"))
	}
	methods := []string{authMethodClientSecretBasic, authMethodClientSecretPost}
	w.Header().Set("Cache-Control", metadataMaxAge)
	s.writeJSON(w, r, http.StatusOK, serverMetadata{
		Issuer:                            issuer,
		TokenEndpoint:                     issuer + oauthPath + "token",
		JWKSURI:                           issuer + wellKnownJWKS,
		IntrospectionEndpoint:             issuer + oauthPath + "introspect",
		RevocationEndpoint:                issuer + oauthPath + "revoke",
		GrantTypesSupported:               []string{grantClientCredentials},
		TokenEndpointAuthMethodsSupported: methods,
		IntrospectionEndpointAuthMethodsSupported: methods,
		RevocationEndpointAuthMethodsSupported:    methods,
		ScopesSupported:                           account.KnownScopes(),
		StatusListAggregationEndpoint:             issuer + pathStatusLists,
		ResponseTypesSupported:                    []string{},
	})
	return nil
}

package httpapi

import (
	"net/http"

	"latchkey/pkg/account"
)

type tokenRequest struct {
	Scopes    []string `json:"scopes"`
	ExpiresIn string   `json:"expires_in"`
	Audience  string   `json:"audience"`
}

func (s *server) issueToken(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	var req tokenRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	token, c, err := s.svc.IssueToken(r.Context(), p, account.TokenRequest{Scopes: req.Scopes, ExpiresIn: req.ExpiresIn, Audience: req.Audience})
	if err != nil {
		return err
	}
	// A bearer credential must never sit in a cache (RFC 6749, section 5.1).
	w.Header().Set("Cache-Control", "no-store")
	s.writeJSON(w, r, http.StatusCreated, tokenResponse{
		AccessToken: token,
		TokenType:   "Bearer",
		TokenID:     c.ID,
		Scopes:      c.Scopes,
		Audience:    c.Audience,
		IssuedAt:    timestamp(c.IssuedAt),
		ExpiresAt:   timestamp(c.ExpiresAt),
		ExpiresIn:   secondsUntil(c.ExpiresAt, c.IssuedAt),
	})
	return nil
}

type revokeRequest struct {
	Token string `json:"token"`
}

func (s *server) revokeToken(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	var req revokeRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	rev, err := s.svc.RevokeToken(r.Context(), p, req.Token)
	if err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusOK, revocationResponse{TokenID: rev.TokenID, Revoked: true, RevokedAt: timestamp(rev.RevokedAt)})
	return nil
}

// verifyToken checks the bearer token itself. An invalid token is a
// successful answer (200, valid false), not a failed request: the caller is
// a resource server asking about someone else's credential.
func (s *server) verifyToken(w http.ResponseWriter, r *http.Request, token string) error {
	v, err := s.svc.VerifyToken(r.Context(), token)
	if err != nil {
		return err
	}
	// The answer changes the moment the token is revoked.
	w.Header()["Cache-Control"] = headerNoStore
	setRateLimitHeaders(w.Header(), v.Usage)
	if !v.Valid {
		info(r).refused = v.Reason
		s.writeJSON(w, r, http.StatusOK, verifyInvalidResponse{Valid: false, Reason: v.Reason, limitsState: toLimitsState(v.Usage)})
		return nil
	}
	c := v.Claims
	s.writeJSON(w, r, http.StatusOK, verifyValidResponse{
		Valid:     true,
		TokenID:   c.ID,
		KeyID:     c.KeyID,
		Scopes:    c.Scopes,
		Audience:  c.Audience,
		IssuedAt:  timestamp(c.IssuedAt),
		ExpiresAt: timestamp(c.ExpiresAt),
		ExpiresIn: secondsUntil(c.ExpiresAt, v.CheckedAt),

		OrganizationID: optionalString(c.OrganizationID),
		OwnerID:        optionalString(c.OwnerID),
		limitsState:    toLimitsState(v.Usage),
	})
	return nil
}

// jwksMaxAge lets resource servers cache the key set, while a new signing
// key still reaches them within minutes.
const jwksMaxAge = "public, max-age=300"

func (s *server) serveJWKS(w http.ResponseWriter, r *http.Request, _ account.Principal) error {
	if s.jwks == nil {
		return account.Internal(errNoJWKS)
	}
	set, err := s.jwks(r.Context())
	if err != nil {
		return err // an *account.Error (unavailable) keeps its code; anything else is internal
	}
	w.Header().Set("Content-Type", "application/jwk-set+json")
	w.Header().Set("Cache-Control", jwksMaxAge)
	w.WriteHeader(http.StatusOK)
	w.Write(set)
	return nil
}

type apiKeyRequest struct {
	Name      string        `json:"name"`
	Scopes    []string      `json:"scopes"`
	ExpiresIn string        `json:"expires_in"`
	Metadata  metadataField `json:"metadata"`

	OrganizationID string `json:"organization_id"`
	OwnerID        string `json:"owner_id"`

	RateLimits rateLimitsField `json:"rate_limits"`
	Credits    creditsField    `json:"credits"`
}

// apiKeyPatch uses pointers because an absent field stays as it is.
type apiKeyPatch struct {
	Name     *string       `json:"name"`
	Enabled  *bool         `json:"enabled"`
	Metadata metadataField `json:"metadata"`

	RateLimits rateLimitsField `json:"rate_limits"`
	Credits    creditsField    `json:"credits"`
}

func (s *server) createAPIKey(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	var req apiKeyRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	key, secret, err := s.svc.CreateAPIKey(r.Context(), p, account.NewAPIKey{
		Name: req.Name, Scopes: req.Scopes, ExpiresIn: req.ExpiresIn, Metadata: req.Metadata.Value,
		OrganizationID: req.OrganizationID, OwnerID: req.OwnerID,
		RateLimits: req.RateLimits.Value, Credits: req.Credits.Value,
	})
	if err != nil {
		return err
	}
	out := toAPIKey(key)
	out.Key = secret
	w.Header().Set("Cache-Control", "no-store") // the secret is shown this once
	w.Header().Set("Location", "/v1/api-keys/"+key.ID)
	s.writeJSON(w, r, http.StatusCreated, out)
	return nil
}

func (s *server) listAPIKeys(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	q := r.URL.Query()
	l, err := s.svc.ListAPIKeys(r.Context(), p, pageRequest(r), account.APIKeyFilter{OrganizationID: q.Get("organization_id"), OwnerID: q.Get("owner_id")})
	if err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusOK, toListResponse(l, toAPIKey))
	return nil
}

func (s *server) getAPIKey(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	k, err := s.svc.GetAPIKey(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusOK, toAPIKey(k))
	return nil
}

func (s *server) updateAPIKey(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	var req apiKeyPatch
	if err := decode(w, r, &req); err != nil {
		return err
	}
	update := account.APIKeyUpdate{
		Name: req.Name, Enabled: req.Enabled, Metadata: req.Metadata.update(),
		RateLimits: req.RateLimits.update(), SetCredits: req.Credits.Set, Credits: req.Credits.Value,
	}
	k, err := s.svc.UpdateAPIKey(r.Context(), p, r.PathValue("id"), update)
	if err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusOK, toAPIKey(k))
	return nil
}

type rotateRequest struct {
	ExpiresIn string `json:"expires_in"`
}

func (s *server) rotateAPIKey(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	var req rotateRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	key, secret, err := s.svc.RotateAPIKey(r.Context(), p, r.PathValue("id"), account.KeyRotationRequest{ExpiresIn: req.ExpiresIn})
	if err != nil {
		return err
	}
	out := toAPIKey(key)
	out.Key = secret
	w.Header().Set("Cache-Control", "no-store") // the secret is shown this once
	s.writeJSON(w, r, http.StatusOK, out)
	return nil
}

func (s *server) deleteAPIKey(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	if err := s.svc.DeleteAPIKey(r.Context(), p, r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *server) listAPIKeyTokens(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	l, err := s.svc.ListAPIKeyTokens(r.Context(), p, r.PathValue("id"), pageRequest(r))
	if err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusOK, toListResponse(l, toTokenRecord))
	return nil
}

func (s *server) revokeAPIKeyTokens(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	// The request has no fields: its body is {}, read as strictly as any.
	if err := decode(w, r, &struct{}{}); err != nil {
		return err
	}
	k, err := s.svc.RevokeAPIKeyTokens(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusOK, toAPIKey(k))
	return nil
}

// pageRequest passes the paging parameters to the service as sent: it
// validates them, so that every list behaves the same.
func pageRequest(r *http.Request) account.PageRequest {
	q := r.URL.Query()
	return account.PageRequest{Limit: q.Get("limit"), Cursor: q.Get("cursor")}
}

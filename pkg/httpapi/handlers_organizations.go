package httpapi

import (
	"net/http"

	"latchkey/pkg/account"
)

type organizationRequest struct {
	Name       string         `json:"name"`
	Slug       string         `json:"slug"`
	Plan       string         `json:"plan"`
	ExternalID nullableString `json:"external_id"`
	Metadata   metadataField  `json:"metadata"`

	RateLimits rateLimitsField `json:"rate_limits"`
	Credits    creditsField    `json:"credits"`
}

// organizationPatch uses pointers because an absent field stays as it is.
type organizationPatch struct {
	Name       *string        `json:"name"`
	Plan       *string        `json:"plan"`
	ExternalID nullableString `json:"external_id"`
	Metadata   metadataField  `json:"metadata"`

	RateLimits rateLimitsField `json:"rate_limits"`
	Credits    creditsField    `json:"credits"`
}

type memberRequest struct {
	UserID string `json:"user_id"`
	Role   string `json:"role"`
}

type memberPatch struct {
	Role string `json:"role"`
}

func (s *server) listOrganizations(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	q := r.URL.Query()
	l, err := s.svc.ListOrganizations(r.Context(), p, account.OrganizationQuery{PageRequest: pageRequest(r), Slug: q.Get("slug"), ExternalID: q.Get("external_id")})
	if err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusOK, toListResponse(l, toOrganization))
	return nil
}

func (s *server) createOrganization(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	var req organizationRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	o, err := s.svc.CreateOrganization(r.Context(), p, account.NewOrganization{
		Name: req.Name, Slug: req.Slug, Plan: req.Plan, ExternalID: req.ExternalID.Value, Metadata: req.Metadata.Value,
		RateLimits: req.RateLimits.Value, Credits: req.Credits.Value,
	})
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/v1/organizations/"+o.ID)
	s.writeJSON(w, r, http.StatusCreated, toOrganization(o))
	return nil
}

func (s *server) getOrganization(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	o, err := s.svc.GetOrganization(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusOK, toOrganization(o))
	return nil
}

func (s *server) updateOrganization(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	var req organizationPatch
	if err := decode(w, r, &req); err != nil {
		return err
	}
	o, err := s.svc.UpdateOrganization(r.Context(), p, r.PathValue("id"), account.OrganizationUpdate{
		Name: req.Name, Plan: req.Plan, ExternalID: req.ExternalID.update(), Metadata: req.Metadata.update(),
		RateLimits: req.RateLimits.update(), SetCredits: req.Credits.Set, Credits: req.Credits.Value,
	})
	if err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusOK, toOrganization(o))
	return nil
}

func (s *server) deleteOrganization(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	if err := s.svc.DeleteOrganization(r.Context(), p, r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *server) listMembers(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	l, err := s.svc.ListMembers(r.Context(), p, r.PathValue("id"), pageRequest(r))
	if err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusOK, toListResponse(l, toMembership))
	return nil
}

func (s *server) addMember(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	var req memberRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	m, err := s.svc.AddMember(r.Context(), p, r.PathValue("id"), account.NewMember{UserID: req.UserID, Role: req.Role})
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/v1/organizations/"+m.OrganizationID+"/members/"+m.UserID)
	s.writeJSON(w, r, http.StatusCreated, toMembership(m))
	return nil
}

func (s *server) getMember(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	m, err := s.svc.GetMember(r.Context(), p, r.PathValue("id"), r.PathValue("user_id"))
	if err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusOK, toMembership(m))
	return nil
}

func (s *server) updateMember(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	var req memberPatch
	if err := decode(w, r, &req); err != nil {
		return err
	}
	m, err := s.svc.UpdateMember(r.Context(), p, r.PathValue("id"), r.PathValue("user_id"), req.Role)
	if err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusOK, toMembership(m))
	return nil
}

func (s *server) removeMember(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	if err := s.svc.RemoveMember(r.Context(), p, r.PathValue("id"), r.PathValue("user_id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

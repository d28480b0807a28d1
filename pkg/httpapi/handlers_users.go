package httpapi

import (
	"net/http"

	"latchkey/pkg/account"
)

type userResponse struct {
	ID         string            `json:"id"`
	Email      string            `json:"email"`
	Name       string            `json:"name"`
	Role       string            `json:"role"`
	ExternalID *string           `json:"external_id"`
	Metadata   map[string]string `json:"metadata"`
	CreatedAt  timestamp         `json:"created_at"`
	UpdatedAt  timestamp         `json:"updated_at"`
}

func toUser(u account.User) userResponse {
	return userResponse{u.ID, u.Email, u.Name, u.Role, optionalString(u.ExternalID), metadataResponse(u.Metadata), timestamp(u.CreatedAt), timestamp(u.UpdatedAt)}
}

type userRequest struct {
	Email      string         `json:"email"`
	Name       string         `json:"name"`
	Role       string         `json:"role"`
	ExternalID nullableString `json:"external_id"`
	Metadata   metadataField  `json:"metadata"`
}

// userUpdate holds the fields PUT accepts, each replaced when given; any
// other field, e-mail included, is refused by the strict decoder as
// unknown.
type userUpdate struct {
	Name       *string        `json:"name"`
	Role       *string        `json:"role"`
	ExternalID nullableString `json:"external_id"`
	Metadata   metadataField  `json:"metadata"`
}

// userPatch is what PATCH accepts: PUT's fields and the e-mail address.
type userPatch struct {
	Name       *string        `json:"name"`
	Role       *string        `json:"role"`
	ExternalID nullableString `json:"external_id"`
	Metadata   metadataField  `json:"metadata"`
	Email      *string        `json:"email"`
}

func (s *server) listUsers(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	q := r.URL.Query()
	l, err := s.svc.ListUsers(r.Context(), p, account.UserQuery{PageRequest: pageRequest(r), Email: q.Get("email"), ExternalID: q.Get("external_id")})
	if err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusOK, toListResponse(l, toUser))
	return nil
}

func (s *server) createUser(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	var req userRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	u, err := s.svc.CreateUser(r.Context(), p, account.NewUser{
		Email: req.Email, Name: req.Name, Role: req.Role, ExternalID: req.ExternalID.Value, Metadata: req.Metadata.Value,
	})
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/v1/users/"+u.ID)
	s.writeJSON(w, r, http.StatusCreated, toUser(u))
	return nil
}

func (s *server) getUser(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	u, err := s.svc.GetUser(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusOK, toUser(u))
	return nil
}

// updateUser serves PUT: the given fields are replaced, the others kept.
func (s *server) updateUser(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	var req userUpdate
	if err := decode(w, r, &req); err != nil {
		return err
	}
	return s.changeUser(w, r, p, req.update())
}

// patchUser serves PATCH: as PUT, and the e-mail address too.
func (s *server) patchUser(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	var req userPatch
	if err := decode(w, r, &req); err != nil {
		return err
	}
	u := userUpdate{req.Name, req.Role, req.ExternalID, req.Metadata}.update()
	u.Email = req.Email
	return s.changeUser(w, r, p, u)
}

func (req userUpdate) update() account.UserUpdate {
	return account.UserUpdate{Name: req.Name, Role: req.Role, ExternalID: req.ExternalID.update(), Metadata: req.Metadata.update()}
}

func (s *server) changeUser(w http.ResponseWriter, r *http.Request, p account.Principal, req account.UserUpdate) error {
	u, err := s.svc.UpdateUser(r.Context(), p, r.PathValue("id"), req)
	if err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusOK, toUser(u))
	return nil
}

func (s *server) deleteUser(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	if err := s.svc.DeleteUser(r.Context(), p, r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *server) listUserOrganizations(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	l, err := s.svc.ListUserMemberships(r.Context(), p, r.PathValue("id"), pageRequest(r))
	if err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusOK, toListResponse(l, toUserMembership))
	return nil
}

package httpapi

import (
	"net/http"

	"latchkey/pkg/account"
)

type userRequest struct {
	Email string `json:"email"`
	Name  string `json:"name"`
	Role  string `json:"role"`
}

// userUpdate holds the only field PUT accepts; any other field is refused
// by the strict decoder as unknown.
type userUpdate struct {
	Name string `json:"name"`
}

func (s *server) listUsers(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	l, err := s.svc.ListUsers(r.Context(), p, account.UserQuery{PageRequest: pageRequest(r), Email: r.URL.Query().Get("email")})
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
	u, err := s.svc.CreateUser(r.Context(), p, account.NewUser{Email: req.Email, Name: req.Name, Role: req.Role})
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

func (s *server) updateUser(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	var req userUpdate
	if err := decode(w, r, &req); err != nil {
		return err
	}
	u, err := s.svc.UpdateUser(r.Context(), p, r.PathValue("id"), account.UserUpdate{Name: req.Name})
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
	s.writeJSON(w, r, http.StatusOK, toListResponse(l, toMembership))
	return nil
}

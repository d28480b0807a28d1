package httpapi

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"

	"latchkey/pkg/account"
)

// The status lists (draft-ietf-oauth-status-list): public, since a
// resource server that verifies tokens offline has no credential of
// Latchkey's, and open to every origin, since a list says nothing of whom
// a token belongs to.

// statusListMediaType is the Content-Type of a Status List Token (the
// draft's section 8.1).
const statusListMediaType = "application/statuslist+jwt"

// serveStatusList answers the Status List Token of the list {id}, read
// fresh: an ETag of the token, and 304 to an If-None-Match that names it.
func (s *server) serveStatusList(w http.ResponseWriter, r *http.Request, _ account.Principal) error {
	tok, err := s.svc.StatusListToken(r.Context(), r.PathValue("id"), s.statusTTL)
	if err != nil {
		return err
	}
	sum := sha256.Sum256([]byte(tok))
	etag := `"` + base64.RawURLEncoding.EncodeToString(sum[:16]) + `"`
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Cache-Control", "public, max-age="+strconv.Itoa(int(s.statusTTL.Seconds())))
	h.Set("ETag", etag)
	if etagMatches(r.Header.Get("If-None-Match"), etag) {
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	h.Set("Content-Type", statusListMediaType)
	w.WriteHeader(http.StatusOK)
	w.Write([]byte(tok))
	return nil
}

// etagMatches reports whether the If-None-Match header value names etag
// (RFC 9110, section 13.1.2: a weak comparison, or *).
func etagMatches(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == etag || t == "*" {
			return true
		}
	}
	return false
}

// statusListsResponse is the aggregation endpoint's answer (the draft's
// section 9.3).
type statusListsResponse struct {
	StatusLists []string `json:"status_lists"`
}

// serveStatusLists answers the uris of every live list.
func (s *server) serveStatusLists(w http.ResponseWriter, r *http.Request, _ account.Principal) error {
	uris, err := s.svc.StatusLists(r.Context())
	if err != nil {
		return err
	}
	w.Header().Set("Access-Control-Allow-Origin", "*")
	w.Header().Set("Cache-Control", "public, max-age="+strconv.Itoa(int(s.statusTTL.Seconds())))
	s.writeJSON(w, r, http.StatusOK, statusListsResponse{StatusLists: uris})
	return nil
}

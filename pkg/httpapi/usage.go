package httpapi

import (
	"net/http"
	"time"

	"latchkey/pkg/account"
)

// usageBucket is one bucket of GET /v1/api-keys/{id}/usage and GET
// /v1/organizations/{id}/usage.
type usageBucket struct {
	Start         string           `json:"start"`
	Verifications map[string]int64 `json:"verifications"`
	TokensIssued  int64            `json:"tokens_issued"`
}

func (s *server) apiKeyUsage(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	q, err := usageQueryOf(r)
	if err != nil {
		return err
	}
	b, err := s.svc.APIKeyUsage(r.Context(), p, r.PathValue("id"), q)
	if err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusOK, toUsage(b))
	return nil
}

func (s *server) organizationUsage(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	q, err := usageQueryOf(r)
	if err != nil {
		return err
	}
	b, err := s.svc.OrganizationUsage(r.Context(), p, r.PathValue("id"), q)
	if err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusOK, toUsage(b))
	return nil
}

// usageQueryOf reads from and to (RFC 3339) and interval.
func usageQueryOf(r *http.Request) (account.UsageQuery, error) {
	v := r.URL.Query()
	q := account.UsageQuery{Interval: v.Get("interval")}
	var problems account.Problems
	for _, f := range []struct {
		name string
		to   *time.Time
	}{{"from", &q.From}, {"to", &q.To}} {
		if s := v.Get(f.name); s != "" {
			t, err := time.Parse(time.RFC3339Nano, s)
			if err != nil {
				problems.Add(f.name, "must be an RFC 3339 date-time, e.g. 2026-03-01T10:00:00Z")
			}
			*f.to = t
		}
	}
	if q.Interval == "" && v.Has("interval") {
		problems.Add("interval", "must be minute, hour or day")
	}
	return q, problems.Err()
}

func toUsage(buckets []account.UsageBucket) map[string][]usageBucket {
	out := make([]usageBucket, 0, len(buckets))
	for _, b := range buckets {
		out = append(out, usageBucket{Start: b.Start.UTC().Format(time.RFC3339), Verifications: orEmpty(b.Verifications), TokensIssued: b.TokensIssued})
	}
	return map[string][]usageBucket{"data": out}
}

func orEmpty(m map[string]int64) map[string]int64 {
	if m == nil {
		return map[string]int64{}
	}
	return m
}

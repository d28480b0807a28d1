package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"latchkey/pkg/account"
)

// rateLimitJSON is a rate limit as requests and responses carry it.
type rateLimitJSON struct {
	Name   string `json:"name"`
	Limit  int64  `json:"limit"`
	Period string `json:"period"`
}

type refillJSON struct {
	Amount   int64  `json:"amount"`
	Interval string `json:"interval"`
}

type creditsRequestJSON struct {
	Remaining *int64 `json:"remaining"`
	// Refill is read strictly on its own, so that a member it does not
	// know is named credits.refill.member.
	Refill json.RawMessage `json:"refill"`
}

// creditsJSON is a key's credits as a response shows them.
type creditsJSON struct {
	Remaining int64       `json:"remaining"`
	Refill    *refillJSON `json:"refill"`
}

// rateLimitsField is the "rate_limits" member of a request: Set records
// that the body named it, so that an update tells "leave them" (absent)
// from "remove them" (null, or []).
type rateLimitsField struct {
	Set   bool
	Value []account.RateLimitRequest
}

// UnmarshalJSON takes an array of rate limit objects, or null. Each object
// is read strictly: a member it does not know is refused, by name.
func (f *rateLimitsField) UnmarshalJSON(b []byte) error {
	f.Set, f.Value = true, nil
	if string(b) == "null" {
		return nil
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(b, &raws); err != nil {
		return badBody("rate_limits", "must be an array of rate limits, or null")
	}
	f.Value = []account.RateLimitRequest{}
	for i, raw := range raws {
		var r rateLimitJSON
		if err := strictObject(fmt.Sprintf("rate_limits[%d]", i), raw, &r); err != nil {
			return err
		}
		f.Value = append(f.Value, account.RateLimitRequest{Name: r.Name, Limit: r.Limit, Period: r.Period})
	}
	return nil
}

// update is the field as an account update takes it: nil when the body did
// not name it.
func (f rateLimitsField) update() *[]account.RateLimitRequest {
	if !f.Set {
		return nil
	}
	return &f.Value
}

// creditsField is the "credits" member of a request; Set as for
// rateLimitsField, Value nil for null.
type creditsField struct {
	Set   bool
	Value *account.CreditsRequest
}

// UnmarshalJSON takes a credits object, or null.
func (f *creditsField) UnmarshalJSON(b []byte) error {
	f.Set, f.Value = true, nil
	if string(b) == "null" {
		return nil
	}
	var c creditsRequestJSON
	if err := strictObject("credits", b, &c); err != nil {
		return err
	}
	if c.Remaining == nil {
		return badBody("credits.remaining", "is required")
	}
	f.Value = &account.CreditsRequest{Remaining: *c.Remaining}
	if len(c.Refill) > 0 && string(c.Refill) != "null" {
		var r refillJSON
		if err := strictObject("credits.refill", c.Refill, &r); err != nil {
			return err
		}
		f.Value.Refill = &account.CreditRefill{Amount: r.Amount, Interval: r.Interval}
	}
	return nil
}

// strictObject decodes the JSON object b, the member field of a request,
// into dst, refusing members dst does not have; problems name
// field.member.
func strictObject(field string, b []byte, dst any) error {
	if b = bytes.TrimSpace(b); len(b) == 0 || b[0] != '{' {
		return badBody(field, "must be an object")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	err := dec.Decode(dst)
	if err == nil {
		return nil
	}
	var typ *json.UnmarshalTypeError
	if errors.As(err, &typ) && typ.Field != "" {
		return badBody(field+"."+typ.Field, "must be "+jsonType(typ.Type.Kind())+", not "+typ.Value)
	}
	// encoding/json says an unknown member only in its message.
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return badBody(field+"."+strings.Trim(name, `"`), "is not a field of "+field)
	}
	return badBody(field, "must be an object")
}

func toRateLimits(ls []account.RateLimit) []rateLimitJSON {
	out := make([]rateLimitJSON, 0, len(ls))
	for _, l := range ls {
		out = append(out, rateLimitJSON{Name: l.Name, Limit: l.Limit, Period: account.FormatPeriod(l.Period)})
	}
	return out
}

func toCredits(c *account.Credits) *creditsJSON {
	if c == nil {
		return nil
	}
	out := &creditsJSON{Remaining: c.Remaining}
	if c.Refill != nil {
		out.Refill = &refillJSON{Amount: c.Refill.Amount, Interval: c.Refill.Interval}
	}
	return out
}

// seconds rounds d up to whole seconds: a client that waits that long
// finds the window over.
func seconds(d time.Duration) int64 {
	return int64(math.Ceil(max(d, 0).Seconds()))
}

// setRateLimitHeaders writes the RateLimit-Policy and RateLimit fields of
// draft-ietf-httpapi-ratelimit-headers-10 for the limits a use counted
// against (KeyUsage: the tightest of the key's, the keys' above it and its
// organization's): one policy for each rate limit, named by the limit (q
// the limit, w the period in seconds; r the uses left, t the seconds until
// the window ends), and one named "credits" for the credits the use spent
// (q what the refill period started with, w 86400 for a daily refill and
// none otherwise, a month being no fixed number of seconds; r the credits
// left, t the seconds until the next refill, none without one, as the
// draft's example of a quota with no reset has none). Retry-After for a
// refused use. Nothing for a use that counted against no limit.
func setRateLimitHeaders(h http.Header, u *account.KeyUsage) {
	if u == nil {
		return
	}
	if len(u.Limits) > 0 || u.Credits != nil {
		policy := make([]string, 0, len(u.Limits)+1)
		state := make([]string, 0, len(u.Limits)+1)
		for _, l := range u.Limits {
			name := strconv.Quote(l.Name) // a name is letters, digits, _ and -
			policy = append(policy, fmt.Sprintf("%s;q=%d;w=%d", name, l.Limit, seconds(l.Period)))
			state = append(state, fmt.Sprintf("%s;r=%d;t=%d", name, l.Remaining, seconds(l.Reset)))
		}
		if c := u.Credits; c != nil {
			name := strconv.Quote(account.CreditsPolicy)
			p, st := fmt.Sprintf("%s;q=%d", name, c.Quota), fmt.Sprintf("%s;r=%d", name, c.Remaining)
			if c.Refill == account.RefillDaily {
				p += ";w=86400"
			}
			if c.Refill != "" {
				st += fmt.Sprintf(";t=%d", seconds(c.Reset))
			}
			policy, state = append(policy, p), append(state, st)
		}
		h.Set("RateLimit-Policy", strings.Join(policy, ", "))
		h.Set("RateLimit", strings.Join(state, ", "))
	}
	if u.Refused != "" && u.RetryAfter > 0 {
		h.Set("Retry-After", strconv.FormatInt(max(seconds(u.RetryAfter), 1), 10))
	}
}

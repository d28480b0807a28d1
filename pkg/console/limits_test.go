package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"latchkey/pkg/account"
)

// TestConsole_APIKeyLimits: a key's page edits its rate limits, several,
// added and removed without a script (blank rows, emptied rows), and its
// credits, under the API's own rules, each refusal beside its field.
func TestConsole_APIKeyLimits(t *testing.T) {
	s := newStack(t)
	session := s.signIn(t, s.AdminKey)
	admin := mustAuth(t, s.Env, s.AdminKey)
	path := "/console/api-keys/" + s.key.ID
	key := func() account.APIKey {
		t.Helper()
		k, err := s.Service.GetAPIKey(t.Context(), admin, s.key.ID)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	post := func(form url.Values) response {
		t.Helper()
		return s.send(t, http.MethodPost, path, session, form, sameOrigin)
	}

	t.Run("OK", func(t *testing.T) {
		page := s.send(t, http.MethodGet, path, session, nil, nil)
		if n := strings.Count(page.body, `name="rate_limits[`); n != 3*account.MaxRateLimits {
			t.Errorf("the form has %d rate limit fields, want %d rows of 3", n, account.MaxRateLimits)
		}
		// Rows 0 and 2, row 1 left blank.
		res := post(url.Values{"part": {"rate_limits"},
			"rate_limits[0].name": {"burst"}, "rate_limits[0].limit": {"10"}, "rate_limits[0].period": {"1s"},
			"rate_limits[1].name": {""}, "rate_limits[1].limit": {""}, "rate_limits[1].period": {"1m"},
			"rate_limits[2].name": {"daily"}, "rate_limits[2].limit": {"5000"}, "rate_limits[2].period": {"1d"}})
		if res.StatusCode != http.StatusSeeOther {
			t.Fatalf("save two limits: %d, want 303: %s", res.StatusCode, res.body)
		}
		k := key()
		if len(k.RateLimits) != 2 || k.RateLimits[0] != (account.RateLimit{Name: "burst", Limit: 10, Period: time.Second}) ||
			k.RateLimits[1] != (account.RateLimit{Name: "daily", Limit: 5000, Period: 24 * time.Hour}) {
			t.Errorf("the key's limits: %+v", k.RateLimits)
		}
		page = s.send(t, http.MethodGet, path, session, nil, nil)
		for _, want := range []string{`name="rate_limits[0].name" value="burst"`, `name="rate_limits[1].name" value="daily"`, `name="rate_limits[2].name" value=""`} {
			if !strings.Contains(page.body, want) {
				t.Errorf("the form lacks %s", want)
			}
		}
		res = post(url.Values{"part": {"credits"}, "credits.remaining": {"500"}, "credits.refill.interval": {"monthly"}, "credits.refill.amount": {""}})
		if res.StatusCode != http.StatusSeeOther {
			t.Fatalf("save credits: %d, want 303: %s", res.StatusCode, res.body)
		}
		if c := key().Credits; c == nil || c.Remaining != 500 || c.Refill == nil || *c.Refill != (account.CreditRefill{Amount: 500, Interval: account.RefillMonthly}) {
			t.Errorf("the key's credits: %+v", c)
		}
		// Emptied, both go; the name and metadata stay.
		if res := post(url.Values{"part": {"rate_limits"}, "rate_limits[0].period": {"1s"}}); res.StatusCode != http.StatusSeeOther {
			t.Fatalf("remove the limits: %d", res.StatusCode)
		}
		if res := post(url.Values{"part": {"credits"}, "credits.remaining": {""}}); res.StatusCode != http.StatusSeeOther {
			t.Fatalf("remove the credits: %d", res.StatusCode)
		}
		if k := key(); len(k.RateLimits) != 0 || k.Credits != nil || k.Name != s.key.Name {
			t.Errorf("after removing the limits and credits: %+v, %+v, name %q", k.RateLimits, k.Credits, k.Name)
		}
	})

	t.Run("ErrInvalidRequest", func(t *testing.T) {
		// Row 3's period is beyond the API's bound, row 4's name is row 0's
		// (the API's rules); row 1's limit is no number (the form's).
		res := post(url.Values{"part": {"rate_limits"},
			"rate_limits[0].name": {"a"}, "rate_limits[0].limit": {"10"}, "rate_limits[0].period": {"1s"},
			"rate_limits[3].name": {"b"}, "rate_limits[3].limit": {"10"}, "rate_limits[3].period": {"2d"},
			"rate_limits[4].name": {"a"}, "rate_limits[4].limit": {"10"}, "rate_limits[4].period": {"1m"}})
		if res.StatusCode != http.StatusBadRequest {
			t.Fatalf("invalid limits: %d, want 400: %s", res.StatusCode, res.body)
		}
		for _, want := range []string{
			`<p class="field-error" id="rl-3-period-error">`, `<p class="field-error" id="rl-4-name-error">is the name of another rate limit`,
			// Shown again as sent.
			`name="rate_limits[3].period" value="2d"`,
		} {
			if !strings.Contains(res.body, want) {
				t.Errorf("the refused form lacks %s", want)
			}
		}
		res = post(url.Values{"part": {"rate_limits"}, "rate_limits[1].name": {"a"}, "rate_limits[1].limit": {"ten"}, "rate_limits[1].period": {"1s"}})
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(res.body, `<p class="field-error" id="rl-1-limit-error">must be a whole number`) {
			t.Errorf("a limit that is no number: %d, want 400 beside row 1's limit", res.StatusCode)
		}
		res = post(url.Values{"part": {"credits"}, "credits.remaining": {"-1"}, "credits.refill.interval": {"weekly"}})
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(res.body, `id="credits.remaining-error"`) || !strings.Contains(res.body, "credits.refill.interval") {
			t.Errorf("invalid credits: %d, want 400 naming credits.remaining and credits.refill.interval", res.StatusCode)
		}
		if k := key(); len(k.RateLimits) != 0 || k.Credits != nil {
			t.Errorf("refused forms changed the key: %+v, %+v", k.RateLimits, k.Credits)
		}
	})
}

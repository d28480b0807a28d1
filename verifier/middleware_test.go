package verifier_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"latchkey.dev/verifier"
)

// TestRequire: the middleware's answers, each with the WWW-Authenticate
// of RFC 6750 section 3 and a problem+json body whose code is the reason,
// and the claims it passes on.
func TestRequire(t *testing.T) {
	is := newIssuer(t)
	is.setStatus(1, 7, 1)
	v := is.verifier(verifier.Config{})
	orders := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, ok := verifier.ClaimsFrom(r.Context())
		if !ok {
			t.Error("no claims in the request's context")
			return
		}
		w.Write([]byte(c.TokenID))
	})
	mux := http.NewServeMux()
	mux.Handle("GET /orders", v.Require("read:orders")(orders))
	mux.Handle("DELETE /orders", v.Require("read:orders", "delete:orders")(orders))
	mux.Handle("GET /me", v.Require()(orders))

	noScope := is.claims(0)
	noScope["scope"] = "read:users"
	for _, tc := range []struct {
		name, method, path, auth string
		status                   int
		challenge, code          string
	}{
		{"OK", "GET", "/orders", "Bearer " + is.token(is.claims(0)), 200, "", ""},
		{"SchemeCaseInsensitive", "GET", "/orders", "bearer " + is.token(is.claims(0)), 200, "", ""},
		{"NoScopeNeeded", "GET", "/me", "Bearer " + is.token(noScope), 200, "", ""},
		{"NoHeader", "GET", "/orders", "", 401, `Bearer realm="https://orders.example.com"`, "no_bearer_token"},
		{"Basic", "GET", "/orders", "Basic dXNlcjpwYXNz", 401, `Bearer realm="https://orders.example.com"`, "no_bearer_token"},
		{"BearerEmpty", "GET", "/orders", "Bearer ", 401, `Bearer realm="https://orders.example.com"`, "no_bearer_token"},
		{"Invalid", "GET", "/orders", "Bearer not-a-token", 401, `Bearer realm="https://orders.example.com", error="invalid_token", error_description="invalid"`, "invalid"},
		{"Revoked", "GET", "/orders", "Bearer " + is.token(is.claims(7)), 401, `Bearer realm="https://orders.example.com", error="invalid_token", error_description="revoked"`, "revoked"},
		{"WrongAudience", "GET", "/orders", "Bearer " + is.token(jwt.MapClaims(withClaim(is.claims(0), "aud", "https://billing.example.com"))), 401, `Bearer realm="https://orders.example.com", error="invalid_token", error_description="wrong_audience"`, "wrong_audience"},
		{"InsufficientScope", "GET", "/orders", "Bearer " + is.token(noScope), 403, `Bearer realm="https://orders.example.com", error="insufficient_scope", scope="read:orders"`, "insufficient_scope"},
		{"OneOfTwoScopes", "DELETE", "/orders", "Bearer " + is.token(is.claims(0)), 403, `Bearer realm="https://orders.example.com", error="insufficient_scope", scope="read:orders delete:orders"`, "insufficient_scope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(tc.method, tc.path, nil)
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, req)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d (%s)", rec.Code, tc.status, rec.Body)
			}
			if got := rec.Header().Get("WWW-Authenticate"); got != tc.challenge {
				t.Errorf("WWW-Authenticate %q, want %q", got, tc.challenge)
			}
			if tc.status == 200 {
				if rec.Body.String() != "tok_00000000000000000000000000" {
					t.Errorf("body %q, want the token id from ClaimsFrom", rec.Body)
				}
				return
			}
			wantProblem(t, rec, tc.status, tc.code)
		})
	}

	t.Run("Unavailable", func(t *testing.T) {
		// Fail closed: 503, not 401, so that a client retries rather than
		// asking for a new token.
		is := newIssuer(t)
		v := is.verifier(verifier.Config{})
		is.set(func() { is.down = true })
		req := httptest.NewRequest("GET", "/orders", nil)
		req.Header.Set("Authorization", "Bearer "+is.token(is.claims(0)))
		rec := httptest.NewRecorder()
		v.Require("read:orders")(orders).ServeHTTP(rec, req)
		if rec.Code != 503 || rec.Header().Get("Retry-After") != "1" || rec.Header().Get("WWW-Authenticate") != "" {
			t.Fatalf("got %d, Retry-After %q, WWW-Authenticate %q; want 503, 1, none", rec.Code, rec.Header().Get("Retry-After"), rec.Header().Get("WWW-Authenticate"))
		}
		wantProblem(t, rec, 503, "unavailable")
	})
}

func withClaim(c jwt.MapClaims, k string, v any) jwt.MapClaims {
	c[k] = v
	return c
}

func wantProblem(t *testing.T, rec *httptest.ResponseRecorder, status int, code string) {
	t.Helper()
	if ct := rec.Header().Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("Content-Type %q", ct)
	}
	var p struct {
		Status       int
		Code, Detail string
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil || p.Status != status || p.Code != code || p.Detail == "" {
		t.Errorf("body %s (%v), want problem+json with status %d, code %s and a detail", rec.Body, err, status, code)
	}
	if strings.Contains(rec.Body.String(), "127.0.0.1") {
		t.Errorf("body %s names an internal address", rec.Body)
	}
}

// TestOnline: the online mode asks verify about every token that passes
// the offline checks, so a revocation is refused at once, without waiting
// for the list's ttl; a forged token costs no request; an unreachable
// Latchkey refuses.
func TestOnline(t *testing.T) {
	is := newIssuer(t)
	v := is.verifier(verifier.Config{Online: true})
	ctx := context.Background()
	tok := is.token(is.claims(3))
	if _, err := v.Verify(ctx, tok); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(ctx, tok); err != nil {
		t.Fatal(err)
	}
	if got := is.hitsOf("/v1/auth/verify"); got != 2 {
		t.Fatalf("verify asked %d times for 2 verifications, want 2", got)
	}
	if got := is.hitsOf("/statuslists/1"); got != 0 {
		t.Fatalf("the online mode fetched the status list %d times", got)
	}

	for _, reason := range []string{"revoked", "disabled", "rate_limited", "usage_exceeded"} {
		is.set(func() { is.revoked["tok_00000000000000000000000003"] = reason })
		_, err := v.Verify(ctx, tok)
		wantReason(t, err, reason)
	}

	before := is.hitsOf("/v1/auth/verify")
	_, err := v.Verify(ctx, tamper(t, tok, func(jwt.MapClaims) {}))
	wantReason(t, err, verifier.ReasonInvalid)
	_, err = v.Verify(ctx, is.token(withClaim(is.claims(0), "aud", "https://billing.example.com")))
	wantReason(t, err, verifier.ReasonWrongAudience)
	if got := is.hitsOf("/v1/auth/verify") - before; got != 0 {
		t.Fatalf("a forged token and one for another audience cost %d requests to verify, want 0", got)
	}

	is.set(func() { is.down = true })
	_, err = v.Verify(ctx, is.token(is.claims(4)))
	wantReason(t, err, verifier.ReasonUnavailable)

	t.Run("Limits", func(t *testing.T) {
		is := newIssuer(t)
		other := http.NewServeMux()
		other.HandleFunc("GET /v1/auth/verify", func(w http.ResponseWriter, r *http.Request) {
			var c jwt.MapClaims
			if _, _, err := jwt.NewParser().ParseUnverified(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "), &c); err != nil {
				t.Error(err)
			}
			fmt.Fprintf(w, `{"valid": true, "token_id": %q, "credits": {"remaining": 7}, "rate_limits": [{"name": "minute", "limit": 100, "remaining": 42, "reset": 18}]}`, c["jti"])
		})
		srv := httptest.NewServer(other)
		defer srv.Close()
		v := is.verifier(verifier.Config{Online: true, VerifyURL: srv.URL + "/v1/auth/verify"})
		c, err := v.Verify(ctx, is.token(is.claims(0)))
		if err != nil {
			t.Fatal(err)
		}
		want := verifier.RateLimitState{Name: "minute", Limit: 100, Remaining: 42, Reset: 18 * time.Second}
		if l := c.Limits; l == nil || l.Credits == nil || *l.Credits != 7 || len(l.RateLimits) != 1 || l.RateLimits[0] != want {
			t.Fatalf("Limits: %+v, want 7 credits and %+v", c.Limits, want)
		}
		if c, err := is.verifier(verifier.Config{Online: true}).Verify(ctx, is.token(is.claims(1))); err != nil || c.Limits != nil {
			t.Fatalf("a verification that counted against no limit: Limits %+v, %v; want nil", c.Limits, err)
		}
	})

	t.Run("VerifyURL", func(t *testing.T) {
		is := newIssuer(t)
		other := http.NewServeMux()
		other.HandleFunc("GET /v1/auth/verify", func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte(`{"valid": false, "reason": "revoked"}`))
		})
		srv := httptest.NewServer(other)
		defer srv.Close()
		v := is.verifier(verifier.Config{Online: true, VerifyURL: srv.URL + "/v1/auth/verify"})
		_, err := v.Verify(ctx, is.token(is.claims(0)))
		wantReason(t, err, verifier.ReasonRevoked)
		if got := is.hitsOf("/v1/auth/verify"); got != 0 {
			t.Fatalf("the issuer's verify was asked %d times, want 0: VerifyURL is another", got)
		}
	})
}

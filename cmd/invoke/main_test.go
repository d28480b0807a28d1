package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"latchkey/pkg/lambdaapp"
)

// TestRun_Route: an event answered by its own function prints the response
// and no note; an event of another function's route still prints this
// function's 404, with a line on stderr naming the function that serves it.
// The verify function takes function URL events, which name no route.
func TestRun_Route(t *testing.T) {
	for _, tc := range []struct {
		name       string
		function   lambdaapp.Function
		event      string
		wantStatus int
		wantNote   string // "" for none
	}{
		{"OwnRoute", lambdaapp.Users, "../../events/users-get.json", http.StatusOK, ""},
		{"OtherFunctionsRoute", lambdaapp.Auth, "../../events/users-get.json", http.StatusNotFound,
			`the route "GET /v1/users/{id}" is served by the users function, not auth`},
		{"VerifyURL", lambdaapp.Verify, "../../events/verify-url/valid.json", http.StatusOK, ""},
		// The verify function serves the API's verify event too (the same
		// handler), so no note that it would answer 404.
		{"VerifyAPIEvent", lambdaapp.Verify, "../../events/auth-verify.json", http.StatusOK, ""},
		{"VerifyURLUnknownPath", lambdaapp.Verify, "../../events/verify-url/unknown-path.json", http.StatusNotFound, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if err := run(t.Context(), tc.function, tc.event, &stdout, &stderr); err != nil {
				t.Fatalf("run: %v", err)
			}
			var res struct {
				StatusCode int `json:"statusCode"`
			}
			if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
				t.Fatalf("stdout is not the response: %v\n%s", err, stdout.String())
			}
			if got, want := res.StatusCode, tc.wantStatus; got != want {
				t.Errorf("status: got %d, want %d", got, want)
			}
			note := strings.Contains(stderr.String(), "invoke: ")
			switch {
			case tc.wantNote == "" && note:
				t.Errorf("stderr: got a note for an event of the function's own route:\n%s", stderr.String())
			case tc.wantNote != "" && !strings.Contains(stderr.String(), "invoke: "+tc.wantNote):
				t.Errorf("stderr: got\n%s\nwant a line with %q", stderr.String(), tc.wantNote)
			}
		})
	}
}

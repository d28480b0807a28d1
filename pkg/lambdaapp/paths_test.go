package lambdaapp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"latchkey/pkg/lambdaapp"
	"latchkey/pkg/lambdaapp/replay"
	"latchkey/pkg/mock"
)

// TestApp_NonCanonicalPath: an event whose rawPath is not in canonical form
// gets 404 problem+json from the function, as the local server answers, not
// ServeMux's redirect to the cleaned path. Whatever API Gateway does with
// such a path before it invokes a function, the function does not depend on
// it.
func TestApp_NonCanonicalPath(t *testing.T) {
	e := newEnv(t)
	if err := replay.PublishKeys(context.Background(), e.Keys); err != nil {
		t.Fatal(err)
	}
	app := e.app(t, lambdaapp.Users, mock.NewClock(time.Now()))
	for _, tc := range []struct {
		rawPath string
		status  int
	}{
		{"/v1/users", http.StatusOK}, // the event as recorded
		{"//v1/users", http.StatusNotFound},
		{"/v1/./users", http.StatusNotFound},
		{"/v1/users/", http.StatusNotFound},
		{"/v1/users/../users", http.StatusNotFound},
		{"/v1/users/" + replay.UserID + "/..", http.StatusNotFound},
		{"/v1/users/%2E%2E/users", http.StatusNotFound},
		{"/v1/users%2F" + replay.UserID, http.StatusNotFound},
	} {
		t.Run(tc.rawPath, func(t *testing.T) {
			ev, err := replay.LoadEvent("../../events/users-list.json")
			if err != nil {
				t.Fatal(err)
			}
			ev.RawPath, ev.RequestContext.HTTP.Path = tc.rawPath, tc.rawPath
			res, err := app.Lambda()(context.Background(), ev)
			if err != nil {
				t.Fatal(err)
			}
			if res.StatusCode != tc.status {
				t.Fatalf("got %d %v %s, want %d", res.StatusCode, res.Headers, res.Body, tc.status)
			}
			if tc.status == http.StatusOK {
				return
			}
			if ct := res.Headers["Content-Type"]; ct != "application/problem+json" {
				t.Errorf("Content-Type %q, want application/problem+json", ct)
			}
			if loc := res.Headers["Location"]; loc != "" {
				t.Errorf("Location %q: a non-canonical path is not redirected", loc)
			}
			var p struct {
				Code      string `json:"code"`
				RequestID string `json:"request_id"`
			}
			if err := json.Unmarshal([]byte(res.Body), &p); err != nil || p.Code != "not_found" || p.RequestID != ev.RequestContext.RequestID {
				t.Errorf("body %s: want not_found with API Gateway's request id %s", res.Body, ev.RequestContext.RequestID)
			}
		})
	}
}

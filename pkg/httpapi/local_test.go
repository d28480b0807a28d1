package httpapi_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"latchkey"
	"latchkey/pkg/httpapi"
	"latchkey/pkg/httpapi/httpapitest"
)

// TestLocalRoutes: the local server's health checks and API description,
// public, through the real router over the real store, each response
// checked against openapi.yaml.
func TestLocalRoutes(t *testing.T) {
	env := httpapitest.NewServer(t)
	t.Run("Healthz", func(t *testing.T) {
		res := env.Do(t, http.MethodGet, "/healthz", "", nil)
		env.CheckResponse(t, res)
		if res.StatusCode != http.StatusOK || res.Map(t)["status"] != "ok" {
			t.Fatalf("got %d %s, want 200 {\"status\":\"ok\"}", res.StatusCode, res.Body)
		}
	})
	t.Run("Readyz", func(t *testing.T) {
		res := env.Do(t, http.MethodGet, "/readyz", "", nil)
		env.CheckResponse(t, res)
		if res.StatusCode != http.StatusOK || res.Map(t)["status"] != "ready" {
			t.Fatalf("got %d %s, want 200 {\"status\":\"ready\"}", res.StatusCode, res.Body)
		}
	})
	t.Run("OpenAPI", func(t *testing.T) {
		res := env.Do(t, http.MethodGet, "/openapi.yaml", "", nil)
		env.CheckResponse(t, res)
		if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "application/yaml" || !bytes.Equal(res.Body, latchkey.OpenAPI) {
			t.Fatalf("got %d %s and %d bytes, want 200 application/yaml and openapi.yaml", res.StatusCode, res.Header.Get("Content-Type"), len(res.Body))
		}
	})
	t.Run("OtherMethod", func(t *testing.T) {
		res := env.Do(t, http.MethodPost, "/healthz", "", nil)
		env.CheckResponse(t, res)
		if res.StatusCode != http.StatusMethodNotAllowed || res.Header.Get("Allow") != "GET, HEAD" {
			t.Fatalf("got %d Allow %q, want 405 Allow GET, HEAD", res.StatusCode, res.Header.Get("Allow"))
		}
	})
}

// TestLocalRoutes_NotReady: /readyz answers 503 unavailable when the store
// fails a read, and also, within ReadyTimeout, when it does not answer at
// all, even through a store that does not watch its context.
func TestLocalRoutes_NotReady(t *testing.T) {
	env := httpapitest.NewServer(t)
	release := make(chan struct{})
	defer close(release)
	for name, ready := range map[string]func(context.Context) error{
		"Fails": func(context.Context) error { return errors.New("connection refused") },
		"Hangs": func(context.Context) error { <-release; return nil },
	} {
		t.Run(name, func(t *testing.T) {
			cfg := env.Config
			cfg.Local = &httpapi.Local{Ready: ready, OpenAPI: latchkey.OpenAPI}
			start := time.Now()
			res := env.DoRaw(t, httpapi.New(cfg), http.MethodGet, "/readyz", http.Header{}, nil)
			elapsed := time.Since(start)
			env.CheckResponse(t, res)
			if res.StatusCode != http.StatusServiceUnavailable || res.Map(t)["code"] != "unavailable" || res.Header.Get("Retry-After") == "" {
				t.Fatalf("got %d %s, want 503 unavailable with Retry-After", res.StatusCode, res.Body)
			}
			// A hanging store is released only when the test ends: answering
			// at all shows ReadyTimeout. Only a lower bound is safe on a
			// loaded machine; 30 s stands for "not hanging".
			if name == "Hangs" && elapsed < httpapi.ReadyTimeout || elapsed > 30*time.Second {
				t.Fatalf("answered after %v, want after ReadyTimeout (%v), within 30 s", elapsed, httpapi.ReadyTimeout)
			}
		})
	}
}

// TestLocalRoutes_OnlyLocal: the local routes are not the API's routes, and
// a handler serves them only when it is given Local and serves their group:
// never a Lambda function's, which names its group.
func TestLocalRoutes_OnlyLocal(t *testing.T) {
	env := httpapitest.NewServer(t)
	api := map[string]bool{}
	for _, r := range httpapi.Routes() {
		api[r.Method+" "+r.Path] = true
		if r.Group == httpapi.GroupLocal {
			t.Errorf("%s %s: in Routes() with group %s", r.Method, r.Path, r.Group)
		}
	}
	withoutLocal := env.Config
	withoutLocal.Local = nil
	handlers := map[string]http.Handler{
		"WithoutLocal": httpapi.New(withoutLocal),
		"AuthGroup":    httpapi.New(env.Config, httpapi.GroupAuth),
		"UsersGroup":   httpapi.New(env.Config, httpapi.GroupUsers),
	}
	for _, r := range httpapi.LocalRoutes() {
		if r.Group != httpapi.GroupLocal || api[r.Method+" "+r.Path] {
			t.Errorf("%s %s: group %s, in Routes(): %v", r.Method, r.Path, r.Group, api[r.Method+" "+r.Path])
		}
		for name, h := range handlers {
			if res := env.DoRaw(t, h, r.Method, r.Path, http.Header{}, nil); res.StatusCode != http.StatusNotFound {
				t.Errorf("%s: %s %s: got %d, want 404", name, r.Method, r.Path, res.StatusCode)
			}
		}
	}
}

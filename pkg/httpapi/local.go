package httpapi

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"time"

	"latchkey/pkg/account"
)

// GroupLocal is the group of the routes that the local server alone
// serves: health checks for a container orchestrator and the API
// description. They are not in Routes(), no Lambda function serves them
// and template.yaml routes none of them (pkg/deploytest checks both): on
// AWS, API Gateway and Lambda report health themselves, and a route there
// is a request billed.
const GroupLocal Group = "local"

// ReadyTimeout bounds GET /readyz: a store that has not answered by then
// is not ready (503), whatever its own deadline. It is under a second so
// that the answer comes before a probe with Kubernetes' default timeout
// (1 s) gives up; give the probe 2 s.
const ReadyTimeout = time.Second

// Local is what the local-only routes need. New serves them only when
// Config.Local is set.
type Local struct {
	// Ready returns nil when the store answers a read. Required.
	Ready func(ctx context.Context) error
	// OpenAPI is the API description served at GET /openapi.yaml (the
	// root package's latchkey.OpenAPI). Required.
	OpenAPI []byte
}

// localTable is the list of the local-only routes, as routeTable is of the
// others. Each is public and cheap: no credential, no body, at most one
// store read.
var localTable = []routeDef{
	{Route: Route{GroupLocal, http.MethodGet, "/healthz", "", nil}, auth: authPublic, handler: (*server).healthz},
	{Route: Route{GroupLocal, http.MethodGet, "/readyz", "", nil}, auth: authPublic, handler: (*server).readyz},
	{Route: Route{GroupLocal, http.MethodGet, "/openapi.yaml", "", nil}, auth: authPublic, handler: (*server).openAPI},
}

// LocalRoutes returns the routes the local server serves beside Routes():
// those of GroupLocal, a fresh copy on every call.
func LocalRoutes() []Route {
	out := make([]Route, len(localTable))
	for i, d := range localTable {
		out[i] = d.Route
		out[i].Query = slices.Clone(d.Query)
	}
	return out
}

var errNoLocal = errors.New("httpapi: Config.Local needs Ready and OpenAPI")

// readinessProbeID is a user id that no user has (ids are generated, and
// never this one): looking it up costs the store one read of one key.
const readinessProbeID = "usr_readiness_probe"

// StoreReady returns the Local.Ready of a server over store: the store is
// ready when it answers a read, whatever the answer (here, not found). Any
// other outcome (unavailable, a deadline passed, an error) is not ready.
func StoreReady(store account.Store) func(context.Context) error {
	return func(ctx context.Context) error {
		_, err := store.GetUser(ctx, readinessProbeID)
		if err == nil || account.IsCode(err, account.CodeNotFound) {
			return nil
		}
		return err
	}
}

type status struct {
	Status string `json:"status"`
}

// healthz answers 200 while the process serves HTTP. It reads nothing:
// a liveness probe that failed on a slow store would restart a process
// that is only waiting.
func (s *server) healthz(w http.ResponseWriter, r *http.Request, _ account.Principal) error {
	w.Header().Set("Cache-Control", "no-store")
	s.writeJSON(w, r, http.StatusOK, status{"ok"})
	return nil
}

// readyz answers 200 when the store answers a read within ReadyTimeout,
// and 503 unavailable otherwise. The read runs apart from the request, so
// that the answer keeps to the bound even over a store that does not watch
// its context.
func (s *server) readyz(w http.ResponseWriter, r *http.Request, _ account.Principal) error {
	ctx, cancel := context.WithTimeout(r.Context(), ReadyTimeout)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.local.Ready(ctx) }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		return &account.Error{Code: account.CodeUnavailable, Message: "the store did not answer a read within " + ReadyTimeout.String(), Err: err}
	}
	w.Header().Set("Cache-Control", "no-store")
	s.writeJSON(w, r, http.StatusOK, status{"ready"})
	return nil
}

// openAPI serves the API description, as YAML (RFC 9512).
func (s *server) openAPI(w http.ResponseWriter, r *http.Request, _ account.Principal) error {
	w.Header().Set("Content-Type", "application/yaml")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	w.Write(s.local.OpenAPI)
	return nil
}

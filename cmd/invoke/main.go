// Command invoke runs one API Gateway HTTP API (payload 2.0) event through a
// function's Lambda handler and prints the response, as `sam local invoke -e`
// does, without Docker or AWS:
//
//	go run ./cmd/invoke -function auth -event events/auth-verify.json
//	go run ./cmd/invoke -function verify -event events/verify-url/valid.json
//
// The verify function takes function URL events (events/verify-url/),
// which name no route: a function URL has one function behind it.
//
// The handler is the App's, the one each function's main serves through
// httpadapter.NewV2 (auth's through authevents.Handler, which hands it
// every HTTP API event), over a throwaway embedded store seeded with the fixture the events refer to (see
// pkg/lambdaapp/replay), and secrets held in memory. The function's log
// lines go to stderr; the response, as Lambda would return it, to stdout.
// An event whose route another function serves still gets this function's
// answer (404), with a line on stderr naming the function to invoke instead.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"

	"latchkey/pkg/boltstore"
	"latchkey/pkg/httpapi"
	"latchkey/pkg/lambdaapp"
	"latchkey/pkg/lambdaapp/replay"
)

func main() {
	fn := flag.String("function", "", "the function: auth, organizations, users or verify")
	event := flag.String("event", "", "path of an event file, e.g. events/auth-verify.json")
	flag.Parse()
	if err := run(context.Background(), lambdaapp.Function(*fn), *event, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "invoke:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, fn lambdaapp.Function, eventPath string, stdout, stderr io.Writer) error {
	if eventPath == "" {
		return errors.New("-event is required")
	}
	if !slices.Contains(lambdaapp.Functions(), fn) && fn != lambdaapp.Verify {
		return errors.New("-function must be auth, organizations, users or verify")
	}
	ev, err := replay.LoadEvent(eventPath)
	if err != nil {
		return err
	}
	// In AWS, API Gateway never sends this event to fn: say which function
	// it would, rather than leave a bare 404 to be puzzled over. A function
	// URL's event ($default) goes to the one function behind the URL.
	switch owners := servedBy(ev.RouteKey); {
	case ev.RouteKey == "$default", slices.Contains(owners, fn):
	case len(owners) == 0:
		fmt.Fprintf(stderr, "invoke: no function serves the route %q; %s will answer 404\n", ev.RouteKey, fn)
	default:
		fmt.Fprintf(stderr, "invoke: the route %q is served by the %s function, not %s, which will answer 404; run: go run ./cmd/invoke -function %s -event %s\n",
			ev.RouteKey, owners[0], fn, owners[0], eventPath)
	}
	dir, err := os.MkdirTemp("", "latchkey-invoke-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	store, err := boltstore.Open(filepath.Join(dir, "latchkey.db"))
	if err != nil {
		return err
	}
	defer store.Close()
	keys := &replay.MemoryKeys{}
	if err := replay.Seed(ctx, store); err != nil {
		return err
	}
	if err := replay.PublishKeys(ctx, keys); err != nil {
		return err
	}
	logger := slog.New(slog.NewJSONHandler(stderr, nil)).With("function", string(fn))
	deps := lambdaapp.Deps{Store: store, Keys: keys, Logger: logger}
	if fn.ListsItems() { // verify reads no secret
		deps.Secrets = replay.NewSecrets()
	}
	app, err := lambdaapp.New(ctx, replay.Config(fn, "latchkey"), deps)
	if err != nil {
		return fmt.Errorf("init %s: %w", fn, err)
	}
	res, err := app.Lambda()(ctx, ev)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(res)
}

// servedBy returns the functions whose group serves the route "METHOD
// /path" (an event's routeKey): auth and verify both serve verify's.
func servedBy(routeKey string) []lambdaapp.Function {
	var out []lambdaapp.Function
	for _, r := range httpapi.Routes() {
		if r.Method+" "+r.Path != routeKey {
			continue
		}
		// The API's functions first: the one API Gateway sends the event to.
		for _, fn := range append(lambdaapp.Functions(), lambdaapp.Verify) {
			if r.In(fn.Group()) {
				out = append(out, fn)
			}
		}
	}
	return out
}

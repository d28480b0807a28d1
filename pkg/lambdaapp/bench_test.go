package lambdaapp_test

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"latchkey/pkg/lambdaapp"
	"latchkey/pkg/lambdaapp/lambdaenv"
	"latchkey/pkg/lambdaapp/replay"
	"latchkey/pkg/mock"
)

// BenchmarkWarmLambda: one API Gateway event after another through a warm
// instance's Lambda handler (the adapter, the router, the service, bbolt),
// with the request line logged as Main logs it (NewLogger), to
// io.Discard. AuthVerify is GET /v1/auth/verify in the auth function,
// which parses with its own keys; UsersGet is GET /v1/users/{id} with the
// same token in the users function, which parses with the published key
// set.
func BenchmarkWarmLambda(b *testing.B) {
	for _, bc := range []struct {
		name  string
		fn    lambdaapp.Function
		event string
	}{
		{"AuthVerify", lambdaapp.Auth, "../../events/auth-verify.json"},
		{"UsersGet", lambdaapp.Users, "../../events/users-get.json"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			e := newEnv(b)
			c := mock.NewClock(time.Now())
			deps := lambdaapp.Deps{Store: e.Store, Keys: e.Keys, Secrets: e.Secrets, Now: c.Now,
				Logger: lambdaenv.NewLogger(io.Discard, string(bc.fn))}
			if bc.fn != lambdaapp.Auth { // auth publishes the keys the others read
				if _, err := lambdaapp.New(context.Background(), replay.Config(lambdaapp.Auth, "latchkey"), deps); err != nil {
					b.Fatal(err)
				}
			}
			app, err := lambdaapp.New(context.Background(), replay.Config(bc.fn, "latchkey"), deps)
			if err != nil {
				b.Fatal(err)
			}
			event, err := replay.LoadEvent(bc.event)
			if err != nil {
				b.Fatal(err)
			}
			h := app.Lambda()
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				res, err := h(ctx, event)
				if err != nil || res.StatusCode != http.StatusOK {
					b.Fatalf("got %d %v: %s", res.StatusCode, err, res.Body)
				}
			}
		})
	}
}

// Package authevents is what the auth function serves besides its HTTP
// routes: the CloudFormation custom resource requests of the template's
// Bootstrap and IssuerConfig resources, at deploy time, the direct
// invocation {"action":"bootstrap"}, and the verify URL's and the
// authorizer's requests to grow a busy key's copies. Lambda hands every
// event of a function to its one handler, so Handler tells the kinds apart;
// AfterFailedStart answers CloudFormation while the function cannot start.
// Only auth's main imports it: the other binaries link no CloudFormation
// code (deploytest's TestBinary_Links).
package authevents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/cfn"
	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/smithy-go"

	"latchkey/pkg/account"
	"latchkey/pkg/lambdaapp"
	"latchkey/pkg/lambdaapp/copygrowth"
)

// EventHandler is what auth's main passes to lambda.Start: any event in, as
// JSON, and the value to answer with out.
type EventHandler func(ctx context.Context, event json.RawMessage) (any, error)

// BootstrapAction is the action of the event {"action":"bootstrap"}, which
// makes the auth function run Bootstrap when invoked directly, as an
// operator does after rotating the admin key to make it work at once.
const BootstrapAction = "bootstrap"

// BootstrapResult is auth's answer to {"action":"bootstrap"}.
type BootstrapResult struct {
	Bootstrapped bool `json:"bootstrapped"`
}

// IssuerProperty is the custom resource property that records the issuer:
// the template's IssuerConfig resource sets it to the API's URL (or the
// custom domain's), which only exists once the API does.
const IssuerProperty = "Issuer"

// FormatsProperty is the property of the template's Formats resource: the
// stored formats the release relies on (account.ReleaseFormats, space-
// separated), put in force by its Create or Update, which run once every
// alias serves the release (the resource depends on each alias). An
// Update with fewer, which is what a stack rollback sends first (the
// previous properties, in the reverse order of the update), takes the
// others out of force, and a Delete every format; both wait
// account.FormatsRefresh before they answer, so that no instance relies
// on a format once an alias goes back.
const FormatsProperty = "Formats"

// Handler is the auth function's one handler, for the four kinds of event
// that reach it, told apart by their fields:
//
//   - a CloudFormation custom resource request (RequestType and
//     ResponseURL): app.Bootstrap, after app.RecordIssuer for IssuerConfig,
//     answered by a PUT to the request's pre-signed ResponseURL as
//     CloudFormation requires;
//   - {"action":"bootstrap"}: app.Bootstrap, answered with BootstrapResult;
//   - {"latchkey":"grow-copies","key_id":…} (copygrowth.Request), the
//     verify URL's and the authorizer's asynchronous invocation:
//     growCopies, answered with null; through the alias copygrowth.Alias,
//     every event is taken for one (garbage is ignored);
//   - anything else, an API Gateway HTTP API request (payload 2.0):
//     serveHTTP, the app through httpadapter.NewV2.
func Handler(app *lambdaapp.App, serveHTTP lambdaapp.Handler) EventHandler {
	return func(ctx context.Context, event json.RawMessage) (any, error) {
		if throughGrowAlias(ctx) {
			// Whatever it holds: the alias serves the request to grow a
			// key's copies and nothing else (copygrowth.Alias).
			growCopies(ctx, app, event)
			return nil, nil
		}
		ev, isCustom, err := customResourceEvent(event)
		if err != nil {
			return nil, err
		}
		if _, ok := ev.ResourceProperties[FormatsProperty]; isCustom && ok {
			return answer(ctx, ev, app.TableName(), true, func(ctx context.Context) (map[string]any, error) {
				return formats(ctx, app, ev)
			})
		}
		if isCustom {
			return answer(ctx, ev, app.TableName(), false, func(ctx context.Context) (map[string]any, error) {
				return customResource(ctx, app, ev)
			})
		}
		var fields map[string]json.RawMessage
		if json.Unmarshal(event, &fields) == nil && fields["latchkey"] != nil {
			growCopies(ctx, app, event)
			return nil, nil
		}
		var probe struct {
			Action string `json:"action"`
		}
		if json.Unmarshal(event, &probe) == nil && probe.Action == BootstrapAction {
			if err := app.Bootstrap(ctx); err != nil {
				app.Logger().ErrorContext(ctx, "bootstrap failed", "error", err.Error())
				return nil, err
			}
			return BootstrapResult{Bootstrapped: true}, nil
		}
		var req events.APIGatewayV2HTTPRequest
		if err := json.Unmarshal(event, &req); err != nil {
			return nil, err
		}
		return serveHTTP(ctx, req)
	}
}

// throughGrowAlias reports whether the invocation came through auth's
// alias copygrowth.Alias, as Lambda names it in the invoked ARN.
func throughGrowAlias(ctx context.Context) bool {
	lc, ok := lambdacontext.FromContext(ctx)
	return ok && strings.HasSuffix(lc.InvokedFunctionArn, ":"+copygrowth.Alias)
}

// growCopies serves a copygrowth.Request: app.GrowCopies, which reads the
// key's rate itself, so a request for a quiet key or none changes nothing.
// A request it cannot serve is logged and dropped, never an error: the
// invocation is asynchronous, Lambda would retry it, and the next busy
// flush of its sender asks again.
func growCopies(ctx context.Context, app *lambdaapp.App, event json.RawMessage) {
	var req copygrowth.Request
	if err := json.Unmarshal(event, &req); err != nil || req.Latchkey != copygrowth.Event {
		app.Logger().WarnContext(ctx, "an invocation of an unknown kind, ignored")
		return
	}
	if !account.ValidID(account.PrefixAPIKey, req.KeyID) {
		// Not logged: whatever it is, it is no key's ID.
		app.Logger().WarnContext(ctx, "copies: a request to grow the copies of no key, ignored")
		return
	}
	if err := app.GrowCopies(ctx, req.KeyID); err != nil {
		app.Logger().WarnContext(ctx, "copies: growing a busy key's copies failed", "key_id", req.KeyID, "error", err.Error())
		return
	}
	app.Logger().InfoContext(ctx, "copies: sized to the key's rate", "key_id", req.KeyID)
}

// customResource runs Bootstrap for a Create or Update of the template's
// custom resources (answer never runs it for a Delete): Bootstrap, and
// IssuerConfig, which also records the issuer named by its Issuer property
// (and answers it as the attribute Issuer) before it bootstraps. An error
// becomes the FAILED response's reason, which fails the deploy.
func customResource(ctx context.Context, app *lambdaapp.App, ev cfn.Event) (map[string]any, error) {
	logger := app.Logger()
	var data map[string]any
	if issuer, ok := ev.ResourceProperties[IssuerProperty]; ok {
		s, _ := issuer.(string)
		if err := app.RecordIssuer(ctx, s); err != nil {
			logger.ErrorContext(ctx, "recording the issuer for CloudFormation failed", "request_type", string(ev.RequestType), "error", err.Error())
			return nil, err
		}
		data = map[string]any{IssuerProperty: s}
	}
	if err := app.Bootstrap(ctx); err != nil {
		logger.ErrorContext(ctx, "bootstrap for CloudFormation failed", "request_type", string(ev.RequestType), "error", err.Error())
		return nil, err
	}
	logger.InfoContext(ctx, "bootstrap for CloudFormation done", "request_type", string(ev.RequestType), "resource", ev.LogicalResourceID)
	return data, nil
}

// formats serves the Formats resource (FormatsProperty): the formats it
// names in force, every other out of force (all of them on a Delete).
func formats(ctx context.Context, app *lambdaapp.App, ev cfn.Event) (map[string]any, error) {
	property, _ := ev.ResourceProperties[FormatsProperty].(string)
	var names []string
	if ev.RequestType != cfn.RequestDelete {
		names = strings.Fields(property)
	}
	f, err := app.PutFormats(ctx, names)
	if err != nil {
		app.Logger().ErrorContext(ctx, "recording the formats for CloudFormation failed", "request_type", string(ev.RequestType), "error", err.Error())
		return nil, err
	}
	if slices.ContainsFunc(account.ReleaseFormats, func(n string) bool { return !slices.Contains(names, n) }) {
		// One went out of force, or was not in force: every instance
		// reads the item again within FormatsRefresh.
		select {
		case <-time.After(account.FormatsRefresh + time.Second):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	data := map[string]any{
		"InlineRevocationSince": rfc3339(f.InlineRevocationSince),
		"StatusListsSince":      rfc3339(f.StatusListsSince),
	}
	app.Logger().InfoContext(ctx, "formats recorded for CloudFormation", "request_type", string(ev.RequestType),
		"inline_revocation_since", data["InlineRevocationSince"], "status_lists_since", data["StatusListsSince"])
	return data, nil
}

// rfc3339 is t as RFC 3339, "" for the zero time (a format out of force).
func rfc3339(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Format(time.RFC3339)
}

// responseMargin is the time kept, before the invocation's deadline, to
// PUT the answer to CloudFormation: the work a custom resource request
// starts is cut off this long before the function would time out, so that
// a hung table or Secrets Manager ends in a FAILED response that names
// it, not in a stack that waits for ServiceTimeout.
const responseMargin = 2 * time.Second

// maxReason bounds the reason sent to CloudFormation, which refuses a
// response document over 4,096 bytes and shows the reason in the stack's
// events.
const maxReason = 1024

// customResourceEvent reports whether event is a CloudFormation custom
// resource request, and decodes it.
func customResourceEvent(event json.RawMessage) (cfn.Event, bool, error) {
	var probe struct {
		RequestType string `json:"RequestType"`
		ResponseURL string `json:"ResponseURL"`
	}
	if json.Unmarshal(event, &probe) != nil || probe.RequestType == "" || probe.ResponseURL == "" {
		return cfn.Event{}, false, nil
	}
	var ev cfn.Event
	if err := json.Unmarshal(event, &ev); err != nil {
		return cfn.Event{}, true, err
	}
	return ev, true, nil
}

// physicalID is the custom resource's physical id: the one CloudFormation
// holds, or for a Create the table's name (its Table property, else table)
// and the resource's logical id, stable across the stack's life.
func physicalID(ev cfn.Event, table string) string {
	if ev.RequestType != cfn.RequestCreate {
		return ev.PhysicalResourceID
	}
	if t, ok := ev.ResourceProperties["Table"].(string); ok && t != "" {
		table = t
	}
	if table == "" {
		return ""
	}
	return table + "-" + strings.ToLower(ev.LogicalResourceID)
}

// answer runs work for the custom resource request ev, with a deadline
// that leaves responseMargin to spare, and PUTs its outcome to the
// request's pre-signed ResponseURL as CloudFormation requires: SUCCESS
// with the data, or FAILED with the error as the reason, which
// CloudFormation shows in the stack's events (it names what failed, never
// a secret's value). A Delete runs work only onDelete (the Formats
// resource, whose Delete takes the formats out of force): nothing else of
// this stack's custom resources needs undoing (the table outlives the
// stack, and so does what is in it), so it succeeds whatever state the
// table and the secrets are in. The answer is the empty reason unless the response could
// not be sent; then the error makes Lambda retry the invocation.
func answer(ctx context.Context, ev cfn.Event, table string, onDelete bool, work func(context.Context) (map[string]any, error)) (any, error) {
	return cfn.LambdaWrap(func(ctx context.Context, ev cfn.Event) (string, map[string]any, error) {
		id := physicalID(ev, table)
		if ev.RequestType == cfn.RequestDelete && (!onDelete || work == nil) {
			return id, nil, nil
		}
		if deadline, ok := ctx.Deadline(); ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, deadline.Add(-responseMargin))
			defer cancel()
		}
		data, err := work(ctx)
		if err != nil {
			return id, nil, errors.New(truncate(err.Error(), maxReason))
		}
		return id, data, nil
	})(ctx, ev)
}

// truncate cuts s to at most n bytes, on a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n-len("…")]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "…"
}

// Starter builds auth's handler: the heavy start, which reads the secrets
// and writes the table (lambdaapp.FromEnv and lambdaapp.NewSigning, then
// Handler).
type Starter func(ctx context.Context) (EventHandler, error)

// AfterFailedStart is auth's handler when its start at init failed:
// a table or a secret deleted, a key policy that refuses it, RS256 setup
// denied. Auth serves the template's custom resources, so it does not exit
// as the other functions do, which would leave each CloudFormation request
// unanswered until ServiceTimeout and a stack delete in DELETE_FAILED with
// the cause only in a log group. It answers a Delete at once, without
// starting. Any other event tries the start again, as Lambda would by a new
// init, and is served once it succeeds; until then a Create or Update is
// answered FAILED with the cause as the reason, and any other event fails
// the invocation with it (a function error, which the errors alarms count).
//
// A start refused with AccessDenied while serving a Create or Update is
// tried again with backoff (1, 2, 4, 8, 8... seconds) for as long as the
// invocation's deadline allows: on a stack's first create the role's new
// permissions may not yet have spread through IAM. Any other failure is
// answered at once, since waiting would not mend it.
func AfterFailedStart(start Starter, logger *slog.Logger) EventHandler {
	return afterFailedStart(start, logger, time.Now, sleep)
}

func afterFailedStart(start Starter, logger *slog.Logger, now func() time.Time, sleep func(context.Context, time.Duration) error) EventHandler {
	s := &restarter{start: start, logger: logger, now: now, sleep: sleep}
	return s.invoke
}

// sleep waits d, or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Backoff between starts refused with AccessDenied.
const (
	firstStartBackoff = time.Second
	maxStartBackoff   = 8 * time.Second
)

type restarter struct {
	start  Starter
	logger *slog.Logger
	now    func() time.Time
	sleep  func(context.Context, time.Duration) error
	mu     sync.Mutex
	h      EventHandler // nil until a start succeeds
}

func (s *restarter) invoke(ctx context.Context, event json.RawMessage) (any, error) {
	ev, isCustom, err := customResourceEvent(event)
	if err != nil {
		return nil, err
	}
	if isCustom && ev.RequestType == cfn.RequestDelete {
		return answer(ctx, ev, "", false, nil)
	}
	h, err := s.handler(ctx, isCustom)
	if h != nil {
		return h(ctx, event)
	}
	err = fmt.Errorf("the function could not start: %w", err)
	if isCustom {
		s.logger.ErrorContext(ctx, "custom resource request failed", "request_type", string(ev.RequestType), "resource", ev.LogicalResourceID, "error", err.Error())
		return answer(ctx, ev, "", false, func(context.Context) (map[string]any, error) { return nil, err })
	}
	return nil, err
}

// handler returns the started function's handler, trying the start again
// (one at a time) while it has not succeeded; nil and the error if it
// fails again. For a custom resource request (retry), a start refused with
// AccessDenied is tried again with backoff while the deadline, less
// responseMargin, leaves room for the wait.
func (s *restarter) handler(ctx context.Context, retry bool) (EventHandler, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.h != nil {
		return s.h, nil
	}
	deadline, hasDeadline := ctx.Deadline()
	if hasDeadline {
		var cancel context.CancelFunc
		deadline = deadline.Add(-responseMargin)
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	for wait := firstStartBackoff; ; wait = min(2*wait, maxStartBackoff) {
		h, err := s.start(ctx)
		if err == nil {
			s.logger.InfoContext(ctx, "started after a failed init")
			s.h = h
			return h, nil
		}
		s.logger.ErrorContext(ctx, "start failed again: "+err.Error())
		if !retry || !hasDeadline || !accessDenied(err) || !s.now().Add(wait).Before(deadline) {
			return nil, err
		}
		if serr := s.sleep(ctx, wait); serr != nil {
			return nil, err
		}
	}
}

// accessDenied reports whether err is an AWS service's refusal of the
// caller's permissions (Secrets Manager's AccessDeniedException, KMS's
// KMSAccessDeniedException, DynamoDB's AccessDeniedException), which IAM's
// propagation of a new role's policies can cause for a while.
func accessDenied(err error) bool {
	var api smithy.APIError
	return errors.As(err, &api) && strings.Contains(api.ErrorCode(), "AccessDenied")
}

package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"latchkey/pkg/tablestore"
)

// The bounds of the time one DynamoDB call may take (see WithTimeout). The
// default leaves room for the few calls of a request, one after another,
// within the Lambda functions' 10 s timeout and the local server's 30 s
// write timeout; a healthy call takes milliseconds, and the retries of a
// throttled one less than a fifth of the timeout (retry.go).
const (
	DefaultTimeout = 3 * time.Second
	MinTimeout     = 100 * time.Millisecond
	MaxTimeout     = 5 * time.Second
)

// WithTimeout sets how long one DynamoDB call of the store may take, its
// SDK retries and their backoff included, before the store gives up and
// reports CodeUnavailable: a database that stopped answering (frozen,
// partitioned away) then gets an answer to the client within d, instead of
// a request that hangs until the client or the platform gives up. The
// default is DefaultTimeout; a d that is not positive keeps it. Configured
// values go through ParseTimeout, which enforces MinTimeout and MaxTimeout.
func WithTimeout(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.timeout = d
		}
	}
}

// ParseTimeout reads a configured call timeout (STORE_TIMEOUT) as a Go
// duration such as "3s" or "500ms": DefaultTimeout when v is empty, an error
// when v is not a duration or lies outside MinTimeout..MaxTimeout.
func ParseTimeout(v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return DefaultTimeout, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration such as 3s or 500ms", v)
	}
	if d < MinTimeout || d > MaxTimeout {
		return 0, fmt.Errorf("%v is outside %v..%v", d, MinTimeout, MaxTimeout)
	}
	return d, nil
}

// errNoAnswer is the cause of a call's context when its timeout passed.
var errNoAnswer = errors.New("dynamostore: DynamoDB did not answer in time")

// deadline is SDK middleware, first in the initialize step of every call the
// store makes (New installs it on the store's client), so that it bounds all
// of the call: every attempt, the backoff between them, the reading of the
// answer. It also names the two store failures an operator must tell from a
// bug, each as CodeUnavailable with a cause that says what happened, and
// keeps a caller's own cancellation apart from both.
type deadline struct {
	timeout time.Duration
	table   string
}

func (deadline) ID() string { return "LatchkeyStoreDeadline" }

func (d deadline) add(stack *middleware.Stack) error {
	return stack.Initialize.Add(d, middleware.Before)
}

func (d deadline) HandleInitialize(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
	callCtx, cancel := context.WithTimeoutCause(ctx, d.timeout, errNoAnswer)
	defer cancel()
	out, md, err := next.HandleInitialize(callCtx, in)
	if err == nil {
		return out, md, nil
	}
	op := middleware.GetOperationName(ctx)
	var missing *types.ResourceNotFoundException
	switch {
	case ctx.Err() != nil:
		// The caller gave up first: the client went away, or the Lambda
		// invocation's deadline passed. Not the database's failure, so not
		// CodeUnavailable; the error says so (see storeErr).
		return out, md, fmt.Errorf("dynamostore: %s abandoned by the caller: %w: %w", op, ctx.Err(), err)
	case errors.Is(context.Cause(callCtx), errNoAnswer):
		return out, md, fmt.Errorf("dynamostore: %s on table %s: no answer from DynamoDB within %v: %w: %w", op, d.table, d.timeout, tablestore.ErrUnavailable, err)
	case errors.As(err, &missing):
		// Not a bug of ours: the table was deleted, or a DynamoDB Local in
		// memory was restarted under a running server. Retrying helps once
		// it is back.
		return out, md, fmt.Errorf("dynamostore: %s: table %s does not exist (deleted, or DynamoDB Local restarted in memory): %w: %w", op, d.table, tablestore.ErrUnavailable, err)
	}
	return out, md, err
}

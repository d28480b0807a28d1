// Package dynamostore is the DynamoDB service under the account store: it
// binds a *dynamodb.Client to the single-table logic of pkg/tablestore,
// with a deadline on every call (deadline.go), and creates the table
// (table.go). Everything about the data itself is tablestore's.
package dynamostore

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"latchkey/pkg/tablestore"
)

// config is what the options of New set.
type config struct {
	timeout time.Duration
	store   []tablestore.Option
	// sdkRetryer keeps the client's own retryer: only a test sets it
	// (export_test.go), to measure the store as it was before newRetryer.
	sdkRetryer bool
}

// Option configures the store New returns.
type Option func(*config)

// WithConflictRetries is tablestore.WithConflictRetries.
func WithConflictRetries(n int) Option {
	return func(c *config) { c.store = append(c.store, tablestore.WithConflictRetries(n)) }
}

// WithoutCopyGrowth is tablestore.WithoutCopyGrowth.
func WithoutCopyGrowth() Option {
	return func(c *config) { c.store = append(c.store, tablestore.WithoutCopyGrowth()) }
}

// WithCopyGrowthBy is tablestore.WithCopyGrowthBy.
func WithCopyGrowthBy(grow func(ctx context.Context, keyID string)) Option {
	return func(c *config) { c.store = append(c.store, tablestore.WithCopyGrowthBy(grow)) }
}

// New returns the account store over table. The client is the caller's:
// build it once at cold start and share it. The store calls DynamoDB
// through a copy of it (same HTTP client and connections, same middleware)
// that bounds every call with the timeout of WithTimeout: one place, so
// that no call, present or future, can hang on a database that stopped
// answering. The copy retries with a retryer of its own, sized to that
// timeout (retry.go): MaxAttempts attempts, or the client's RetryMaxAttempts
// if it sets one; its other retry settings do not apply. The event
// feed lags by tablestore.EventLag of that timeout.
func New(client *dynamodb.Client, table string, opts ...Option) *tablestore.Store {
	c := config{timeout: DefaultTimeout}
	for _, o := range opts {
		o(&c)
	}
	bound := deadline{timeout: c.timeout, table: table}
	bounded := dynamodb.New(client.Options(), func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, bound.add)
		if !c.sdkRetryer {
			attempts := MaxAttempts
			if o.RetryMaxAttempts > 0 {
				attempts = o.RetryMaxAttempts // set on purpose: a test's 1
			}
			o.Retryer = newRetryer(c.timeout, attempts)
			o.RetryMaxAttempts = 0 // counted by the retryer, not by a wrapper of the SDK's
		}
	})
	return tablestore.New(Port(bounded, table), append([]tablestore.Option{tablestore.WithEventLag(tablestore.EventLag(c.timeout))}, c.store...)...)
}

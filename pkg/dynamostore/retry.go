package dynamostore

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
)

// MaxAttempts is how many times the store sends one DynamoDB call, the
// first try included, while the answer is one a retry may cure (throttling,
// a 5xx, a broken connection): the SDK's default, which a throttled table
// often lets through on the second or third try.
const MaxAttempts = 3

// The sizing rule of the retries, for a call timeout T (WithTimeout,
// STORE_TIMEOUT): each wait before a retry is random (full jitter) and
// shorter than T/10, so that the MaxAttempts-1 waits of a call add up to
// less than T/5 (600 ms of the default 3 s), and a retry is made only while
// at least T/5 is left before the call's deadline, which is the sooner of T
// and the caller's own (the Lambda invocation's). A throttled table is then
// answered 503 with Retry-After within T/5 and MaxAttempts round trips,
// instead of sleeping out T in the SDK's default backoff (up to 2 s, then up
// to 4 s), and a request of a few calls stays well inside its function's
// timeout.
const (
	backoffShare = 10 // T/backoffShare bounds each wait
	budgetShare  = 5  // T/budgetShare must be left to retry
)

// errNoTimeToRetry ends a call's retries when what is left of its deadline
// cannot hold another wait and attempt. The error that asked for the retry
// stays in the chain, and is mapped as it would be after the last attempt.
var errNoTimeToRetry = errors.New("dynamostore: no time left before the call's deadline to retry")

// budgetRetryer is the SDK's standard retryer (its retryable errors, and its
// retry quota: a client whose recent calls mostly failed stops retrying and
// fails at once, so a throttled table is not sent three calls for each)
// with the attempts, waits and budget of the sizing rule above.
type budgetRetryer struct {
	*retry.Standard
	budget time.Duration
}

func newRetryer(timeout time.Duration, attempts int) budgetRetryer {
	maxBackoff := timeout / backoffShare
	return budgetRetryer{
		Standard: retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts = attempts
			o.MaxBackoff = maxBackoff
			// One bound for every retry, not a doubling one: with two
			// retries the doubling matters less than the cap, and the
			// SDK numbers attempts differently by mode (AWS_NEW_RETRIES_2026).
			o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) {
				if maxBackoff <= 0 {
					return 0, nil
				}
				return rand.N(maxBackoff), nil
			})
		}),
		budget: timeout / budgetShare,
	}
}

// GetRetryToken refuses a retry that could not be made before the call's
// deadline, then asks the SDK's retry quota.
func (r budgetRetryer) GetRetryToken(ctx context.Context, opErr error) (func(error) error, error) {
	if d, ok := ctx.Deadline(); ok && time.Until(d) < r.budget {
		return nil, errNoTimeToRetry
	}
	return r.Standard.GetRetryToken(ctx, opErr)
}

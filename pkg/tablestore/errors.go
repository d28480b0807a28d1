package tablestore

import (
	"context"
	"errors"
	"fmt"

	"latchkey/pkg/account"
)

// ErrUnavailable marks a failure of a Port that a retry later can cure:
// throttling, a 5xx, a connection failure, no answer in time, a table
// that is gone (dynamostore wraps them so). The store reports it as
// CodeUnavailable, with the Port's error as the cause.
var ErrUnavailable = errors.New("the table is unavailable")

// storeErr turns a Port's failure into a domain error: CodeUnavailable
// when a retry later can succeed (ErrUnavailable), CodeInternal otherwise.
// The Port's error is kept as the cause for logs; its message never
// becomes the client-visible message. A call the caller abandoned (its context
// cancelled or past its deadline) keeps the context's error and no code:
// nothing failed in the store, and it must not be reported as if it had.
func storeErr(err error) error {
	if err == nil {
		return nil
	}
	var domain *account.Error
	if errors.As(err, &domain) {
		return err
	}
	if errors.Is(err, ErrUnavailable) {
		return account.Unavailable(err)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return account.Internal(err)
}

// errTransactionConflict marks a write refused only because a transaction
// in progress held one of its items: ReasonConflict as a cancellation
// reason of a transaction, or ErrConflict for a single-item write (an
// UpdateItem racing AddMember's ConditionCheck on the same user, say).
// The SDK retries neither; retryConflicts does.
var errTransactionConflict = ErrConflict

// cancellation maps a CanceledError to a domain error.
// onCheckFailed[i] is the error for a failed condition on item i, in the
// order the items were sent; the first failed condition wins, so callers
// order items by which error should be reported first. A failed condition
// without an entry (or with a nil one) is a bug in the store, internal,
// unless one with an entry failed too.
// For a failed condition it also returns old, the item as it was, when the item
// asked for it (Write.ReturnOld), else nil.
// mapped is nil when err is not a cancellation.
func cancellation(err error, onCheckFailed []error) (old Item, mapped error) {
	var ce *CanceledError
	if !errors.As(err, &ce) {
		return nil, nil
	}
	conflicted, throttled, unexpected := false, false, false
	for i, r := range ce.Reasons {
		switch r {
		case ReasonNone:
		case ReasonConditionFailed:
			if i < len(onCheckFailed) && onCheckFailed[i] != nil {
				return ce.Old[i], onCheckFailed[i]
			}
			// A bug, unless a later condition that can fail failed too
			// (a user created twice: its e-mail is taken).
			unexpected = true
		case ReasonConflict:
			conflicted = true
		case ReasonThrottled:
			throttled = true
		default:
			return nil, account.Internal(err)
		}
	}
	switch {
	case unexpected:
		return nil, account.Internal(err)
	case throttled:
		return nil, account.Unavailable(err)
	case conflicted:
		return nil, fmt.Errorf("%w: %w", errTransactionConflict, err)
	}
	return nil, account.Internal(err)
}

// conditionFailed reports whether a single-item write failed its condition,
// and returns the error, which holds the old item when it was asked for.
func conditionFailed(err error) (*ConditionFailedError, bool) {
	var ccf *ConditionFailedError
	ok := errors.As(err, &ccf)
	return ccf, ok
}

// eventsBusy reports whether err cancelled a transaction only because
// the table throttled writes to its items from first on, which are its
// events: their shard was busy, and the change itself was not refused.
func eventsBusy(err error, first int) bool {
	var ce *CanceledError
	if !errors.As(err, &ce) {
		return false
	}
	busy := false
	for i, r := range ce.Reasons {
		switch r {
		case ReasonNone:
		case ReasonThrottled:
			if i < first {
				return false
			}
			busy = true
		default:
			return false
		}
	}
	return busy
}

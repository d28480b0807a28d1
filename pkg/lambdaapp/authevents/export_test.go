package authevents

import (
	"context"
	"log/slog"
	"time"
)

// AfterFailedStartClock is AfterFailedStart with its clock and its sleep
// given, so that a test of the backoff waits for nothing.
func AfterFailedStartClock(start Starter, logger *slog.Logger, now func() time.Time, sleep func(context.Context, time.Duration) error) EventHandler {
	return afterFailedStart(start, logger, now, sleep)
}

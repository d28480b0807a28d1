// Package logsample decides which log lines of successes are written: one
// in N. Lines of failures are never sampled; the callers ask only for
// successes. On AWS every request is in the API's access log anyway, so a
// function's line of a success adds little but its cost (docs/cost.md);
// the line of a refusal or an error says why, and is always written.
package logsample

import (
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
)

// EnvEvery is the environment variable that sets N (ParseEvery): one line
// of a success in N is logged.
const EnvEvery = "SUCCESS_LOG_EVERY"

// MaxEvery bounds N: a line in a million still shows, over a day of
// traffic, that the function serves successes and how fast.
const MaxEvery = 1_000_000

// Sampler keeps the line of one success in every N: the first, then each
// Nth after it, counted per process (per Lambda execution environment), so
// that the lines kept are spread evenly over time and a client cannot
// choose whether its requests are logged. Safe for concurrent use. A nil
// Sampler keeps every line.
type Sampler struct {
	every uint64
	n     atomic.Uint64
}

// New returns a Sampler that keeps one line in every; every below 2 keeps
// them all.
func New(every int) *Sampler {
	if every < 1 {
		every = 1
	}
	return &Sampler{every: uint64(every)}
}

// Keep reports whether to log the line of the next success.
func (s *Sampler) Keep() bool {
	if s == nil || s.every == 1 {
		return true
	}
	return (s.n.Add(1)-1)%s.every == 0
}

// Every returns N: each line kept stands for N successes, which a kept
// line records (as sample_every) when N is over 1, so that counting lines
// still estimates traffic.
func (s *Sampler) Every() int {
	if s == nil {
		return 1
	}
	return int(s.every)
}

// ParseEvery reads EnvEvery's value: empty is 1 (every line), otherwise a
// whole number from 1 to MaxEvery.
func ParseEvery(v string) (int, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 1, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > MaxEvery {
		return 0, fmt.Errorf("%s: %q is not a whole number from 1 to %d", EnvEvery, v, MaxEvery)
	}
	return n, nil
}

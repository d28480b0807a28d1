package canary

import (
	"context"
	"errors"
	"time"
)

// Bounds are how long after its revocation answered each path may still
// accept the probe's token: every path reads the revocation fresh (the
// token's own item, inline revocation; the status list read fresh), so
// the bound is one answer's time with a cold start in it. docs/operating.md
// states them.
var Bounds = map[string]time.Duration{
	PathVerify:     2 * time.Second,
	PathVerifyURL:  2 * time.Second,
	PathIntrospect: 2 * time.Second,
	PathAuthorizer: 2 * time.Second,
	PathStatusList: 2 * time.Second,
}

// The outcomes of a path.
const (
	// Refused: the path refused the revoked token within its bound.
	Refused = "refused"
	// Slow: it refused it, after its bound.
	Slow = "slow"
	// Failed: it still accepted it at the probe's deadline, or answered
	// wrong.
	Failed = "failed"
	// NotApplicable: the token does not use the path (a token without the
	// status claim has no status list).
	NotApplicable = "not applicable"
)

// PathResult is what one path did after the revocation.
type PathResult struct {
	Path    string
	Outcome string
	// Seen is the time from the revocation's answer to the path's first
	// refusal; zero unless Refused or Slow.
	Seen time.Duration
	// Err is the path's last wrong answer when Failed.
	Err error
}

// Probe issues a token with apiKey (a key whose grant covers Scope),
// checks every path accepts it, revokes it, and asks each path again until
// it refuses the token or wait has passed since the revocation answered.
// It returns each path's result, or a *Failure when the token could not be
// issued, accepted or revoked (then no path was asked after a
// revocation). Like Check, it never puts apiKey or the token in an error.
func Probe(ctx context.Context, t Targets, apiKey string, wait time.Duration) ([]PathResult, error) {
	c := &check{t: t, key: apiKey}
	tok, err := c.issue(ctx)
	if err != nil {
		return nil, err
	}
	before := map[string]bool{}
	for _, p := range c.paths(tok, true) {
		err := p.ask(ctx)
		if err != nil && !errors.Is(err, errNotApplicable) {
			c.revoke(ctx, tok) // best effort, as Check's
			return nil, err
		}
		before[p.name] = err == nil
	}
	if err := c.revoke(ctx, tok); err != nil {
		return nil, err
	}
	revoked := time.Now()
	// Round after round, each path not yet refusing is asked once, so that
	// a path that never refuses does not delay the others' answers.
	paths := c.paths(tok, false)
	out := make([]PathResult, len(paths))
	pending := 0
	for i, p := range paths {
		out[i].Path = p.name
		if !before[p.name] {
			out[i].Outcome = NotApplicable
			continue
		}
		pending++
	}
	for pending > 0 {
		for i, p := range paths {
			if out[i].Outcome != "" {
				continue
			}
			if err := p.ask(ctx); err != nil {
				out[i].Err = err
				continue
			}
			out[i].Seen, out[i].Err, out[i].Outcome = time.Since(revoked), nil, Refused
			if out[i].Seen > Bounds[p.name] {
				out[i].Outcome = Slow
			}
			pending--
		}
		if pending == 0 {
			break
		}
		if time.Since(revoked) >= wait || ctx.Err() != nil {
			for i := range out {
				if out[i].Outcome == "" {
					out[i].Outcome = Failed
				}
			}
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
	return out, nil
}

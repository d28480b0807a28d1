package account

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// maxUseEntries bounds the keys a process remembers the last use of: a
// process that sees more keys than that in a minute forgets some and
// records their uses again, which costs a write each, nothing worse.
const maxUseEntries = 10_000

// keyUses remembers, per key, until when this process need not record
// another use: a key in constant use costs one store write a minute in
// each process that sees it, and the store keeps at most one a minute of
// them (see Store.RecordAPIKeyUse).
type keyUses struct {
	mu   sync.Mutex
	next map[string]time.Time
}

// claim reports whether a use of the key id at now is to be recorded, and
// if so takes the recording on for the next KeyUseResolution, so that
// concurrent requests of the key in this process do not record it too.
func (u *keyUses) claim(id string, now time.Time) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if next, ok := u.next[id]; ok && now.Before(next) {
		return false
	}
	if len(u.next) >= maxUseEntries {
		for k, next := range u.next {
			if !now.Before(next) {
				delete(u.next, k)
			}
		}
		if len(u.next) >= maxUseEntries {
			clear(u.next)
		}
	}
	if u.next == nil {
		u.next = make(map[string]time.Time)
	}
	u.next[id] = now.Add(KeyUseResolution)
	return true
}

// set records that the key id's last use in the store is last: the next
// one to record is a KeyUseResolution later.
func (u *keyUses) set(id string, last time.Time) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if _, ok := u.next[id]; ok {
		u.next[id] = last.Add(KeyUseResolution)
	}
}

// recordUse records that k's secret authenticated a request at now, at
// most once per KeyUseResolution per key in this process. It is part of
// authenticating an API key, not of verifying a token (a token is not the
// key's secret), so verify never pays for it. A failure is logged, not
// returned: the request it belongs to has authenticated, and last use is
// information, not a rule. It is never part of the request's change, so
// the store takes no WriteOptions for it.
func (s *Service) recordUse(ctx context.Context, k APIKey, now time.Time) {
	if !s.uses.claim(k.ID, now) {
		return
	}
	last, err := s.store.RecordAPIKeyUse(ctx, k, now)
	if err != nil {
		s.log.WarnContext(ctx, "the last use of an API key was not recorded", "key_id", k.ID, "error", err.Error())
		return
	}
	s.uses.set(k.ID, last)
}

// discardLogger is the Logger of a Service given none.
var discardLogger = slog.New(slog.DiscardHandler)

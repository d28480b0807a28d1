package account

import (
	"context"
	"time"
)

// revokesToken reports whether the key's TokensRevokedBefore revokes the
// token tokenID: it was issued at or before that time, to the millisecond
// of its ID (a ULID made from the issuing clock). A token whose ID is not
// well formed is revoked by any such time; this service issues none.
func (k APIKey) revokesToken(tokenID string) bool {
	if k.TokensRevokedBefore.IsZero() {
		return false
	}
	issued, ok := IDTime(PrefixToken, tokenID)
	return !ok || !issued.After(k.TokensRevokedBefore)
}

// TokensRevokedBefore returns what the key's TokensRevokedBefore becomes
// with the patch applied to a key that has current: At when the patch
// revokes the key's tokens, unless current is later (a clock behind
// another instance's never lets a revoked token verify again), and
// current otherwise. Every store applies it this way.
func (p APIKeyPatch) TokensRevokedBefore(current time.Time) time.Time {
	if p.RevokeTokens && p.At.After(current) {
		return p.At
	}
	return current
}

// EventType returns the type of the event that records the patch:
// EventAPIKeyTokensRevoked, EventAPIKeyRotated or EventAPIKeyUpdated.
// Every store records a patch under it.
func (p APIKeyPatch) EventType() string {
	switch {
	case p.RevokeTokens:
		return EventAPIKeyTokensRevoked
	case p.Rotate != nil:
		return EventAPIKeyRotated
	}
	return EventAPIKeyUpdated
}

// ListAPIKeyTokens lists the live tokens of the key id, newest first: those
// issued for it that have not expired, and are not revoked, one by one
// (RevokeToken) or all together (RevokeAPIKeyTokens). It returns their
// records, never a token itself. The key must be one the caller may read
// (GetAPIKey): it sees it, and the key's grants are within its own. A
// page may hold fewer than the limit, even none, with more to come: a
// token revoked on its own is left out after the store has read it, as
// ListAPIKeys leaves out keys. The store reads no token issued before
// MaxTokenLifetime ago, nor before the key's TokensRevokedBefore.
// CodeForbidden for an access token caller, CodeInsufficientScope,
// CodeInvalidRequest, CodeNotFound.
func (s *Service) ListAPIKeyTokens(ctx context.Context, p Principal, id string, r PageRequest) (List[TokenRecord], error) {
	if err := p.Authorize(OpListAPIKeyTokens); err != nil {
		return List[TokenRecord]{}, err
	}
	if !ValidID(PrefixAPIKey, id) {
		return List[TokenRecord]{}, ErrAPIKeyNotFound()
	}
	list := "api_key_tokens/" + id
	params, err := s.cursors.params(list, r)
	if err != nil {
		return List[TokenRecord]{}, err
	}
	k, err := s.store.GetAPIKey(ctx, id)
	if err != nil {
		return List[TokenRecord]{}, storeErr(err)
	}
	if err := p.Decide(ActionRead, k); err != nil {
		return List[TokenRecord]{}, err
	}
	now := s.now()
	since := now.Add(-MaxTokenLifetime)
	if k.TokensRevokedBefore.After(since) {
		since = k.TokensRevokedBefore
	}
	page, err := s.store.ListTokens(ctx, id, since, params)
	if err != nil {
		return List[TokenRecord]{}, storeErr(err)
	}
	live := page.Items[:0]
	for _, t := range page.Items {
		if t.RevokedAt.IsZero() && t.ExpiresAt.After(now) && !k.revokesToken(t.ID) {
			live = append(live, t)
		}
	}
	page.Items = live
	return toList(s.cursors, list, page), nil
}

// RevokeAPIKeyTokens revokes every token issued for the key id until now,
// however many, in one write to the key (APIKey.TokensRevokedBefore, which
// every verify reads with the key): from the moment it returns, none of
// them verifies, introspects as active, passes the authorizer or
// authenticates a request. Tokens issued afterwards work. It returns the
// key as changed, and records one event, api_key.tokens_revoked. The
// caller needs ScopeRevokeTokens and may change the key (Principal.Decide:
// it sees it, the key's grants are within its own, and it is not above the
// caller's key); a key may revoke its own tokens, a console session's
// among them; the bootstrap admin key's are revoked by it alone.
// CodeForbidden, CodePreviousSecret, CodeInsufficientScope, CodeNotFound,
// CodeConcurrentUpdate.
func (s *Service) RevokeAPIKeyTokens(ctx context.Context, p Principal, id string) (APIKey, error) {
	if err := p.Authorize(OpRevokeAPIKeyTokens); err != nil {
		return APIKey{}, err
	}
	if !ValidID(PrefixAPIKey, id) {
		return APIKey{}, ErrAPIKeyNotFound()
	}
	k, err := s.store.UpdateAPIKey(ctx, p.Write, id, APIKeyPatch{RevokeTokens: true, At: s.now()}, func(k APIKey) error {
		return p.Decide(ActionRevokeTokens, k)
	})
	if err != nil {
		return APIKey{}, storeErr(err)
	}
	return s.shown(ctx, k)
}

package account

import (
	"context"
	"fmt"
	"time"
)

// MinBootstrapKeyLength is the shortest admin key accepted from configuration.
const MinBootstrapKeyLength = 32

// EnsureBootstrapKey makes secret the bootstrap admin key (grant "*:*"),
// creating its record if needed and deleting any older bootstrap key, so
// that changing the configured key retires the old one. created is when the
// secret was created (the secret version's creation time, in a deployment);
// it becomes the key's CreatedAt and orders bootstrap keys, so that a
// process still holding an older secret, during a rotation, neither retires
// the newer key nor brings its own back once the newer one exists. A zero
// created is taken as now: right for one process whose configured key
// changes only across restarts (the local server), where the key configured
// last is the newest. Safe to call from several processes at once.
// CodeInvalidRequest for a secret unfit to be a key.
func (s *Service) EnsureBootstrapKey(ctx context.Context, secret string, created time.Time) error {
	if len(secret) < MinBootstrapKeyLength {
		return Errorf(CodeInvalidRequest, "the admin API key must be at least %d characters", MinBootstrapKeyLength)
	}
	if looksLikeJWT(secret) {
		// Authenticate would take it for an access token and never find it.
		return Errorf(CodeInvalidRequest, "the admin API key must not have the shape of a JWT (eyJ….….…)")
	}
	hash := HashAPIKey(secret)
	_, err := s.store.GetAPIKeyByHash(ctx, hash)
	if err == nil || !IsCode(err, CodeNotFound) {
		// Present already (the common cold start: one read), or a store failure.
		return err
	}
	if created.IsZero() {
		created = s.now()
	}
	current := APIKey{
		ID:        NewID(PrefixAPIKey, s.now()),
		Name:      "bootstrap admin key",
		Hash:      hash,
		Last4:     last4(secret),
		Scopes:    []string{ScopeAll},
		Bootstrap: true,
		CreatedAt: created,
	}
	keys, err := s.bootstrapKeys(ctx)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if newerBootstrapKey(k, current) {
			// secret has been replaced: the key stays retired.
			return nil
		}
	}
	if err := s.store.CreateAPIKey(ctx, WriteOptions{}, current); err != nil {
		// Another process may have won the race to create the same key.
		_, err = s.store.GetAPIKeyByHash(ctx, hash)
		return err
	}
	// Listed again after the create: of two processes ensuring different
	// keys at once, at least one sees the other's key here (a DynamoDB
	// index lags a little, which narrows the window rather than closing
	// it), and both agree which is newer, so the older key is deleted
	// whichever process sees both.
	if keys, err = s.bootstrapKeys(ctx); err != nil {
		return err
	}
	for _, k := range keys {
		if k.ID == current.ID {
			current = k // as stored, for comparisons other processes make too
			break
		}
	}
	for _, k := range keys {
		if k.ID != current.ID && newerBootstrapKey(k, current) {
			return ignoreNotFound(s.store.DeleteAPIKey(ctx, WriteOptions{}, current.ID, onlyBootstrap))
		}
	}
	// Every other bootstrap key is older: retire it.
	for _, k := range keys {
		if k.ID != current.ID {
			if err := ignoreNotFound(s.store.DeleteAPIKey(ctx, WriteOptions{}, k.ID, onlyBootstrap)); err != nil {
				return err
			}
		}
	}
	return nil
}

// onlyBootstrap lets EnsureBootstrapKey delete bootstrap keys and nothing
// else. A bootstrap key is nobody's ancestor, so deleting one deletes no
// other key: the keys it created stay, as keys of the administrator.
func onlyBootstrap(k APIKey) error {
	if !k.Bootstrap {
		return Internal(fmt.Errorf("account: key %s is not a bootstrap key", k.ID))
	}
	return nil
}

// newerBootstrapKey reports whether a was created after b. Keys of one
// instant are ordered by ID, so that every process agrees on which to keep.
func newerBootstrapKey(a, b APIKey) bool {
	if !a.CreatedAt.Equal(b.CreatedAt) {
		return a.CreatedAt.After(b.CreatedAt)
	}
	return a.ID > b.ID
}

// bootstrapKeys lists every bootstrap key.
func (s *Service) bootstrapKeys(ctx context.Context) ([]APIKey, error) {
	var out []APIKey
	params := ListParams{Limit: MaxPageSize}
	for {
		page, err := s.store.ListAPIKeys(ctx, APIKeyFilter{}, params)
		if err != nil {
			return nil, err
		}
		for _, k := range page.Items {
			if k.Bootstrap {
				out = append(out, k)
			}
		}
		if page.Next == "" {
			return out, nil
		}
		params.After = page.Next
	}
}

// ignoreNotFound treats deleting a key another process deleted first as done.
func ignoreNotFound(err error) error {
	if IsCode(err, CodeNotFound) {
		return nil
	}
	return err
}

// HasBootstrapKey reports whether a bootstrap admin key exists. The local
// server generates and shows a key only when none does.
func (s *Service) HasBootstrapKey(ctx context.Context) (bool, error) {
	keys, err := s.bootstrapKeys(ctx)
	return len(keys) > 0, err
}

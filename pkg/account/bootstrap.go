package account

import (
	"context"
	"fmt"
	"time"
)

// MinBootstrapKeyLength is the shortest admin key accepted from configuration.
const MinBootstrapKeyLength = 32

// The probe key's grant and owner (EnsureProbeKey). ProbeScope is the one
// scope of the token the canary and the probe issue: it opens nothing of
// Latchkey's API, whose scopes name its resources. ProbeOwnerID is the
// probe key's OwnerID, so that it introspects and revokes the tokens of
// its own owner only (Principal.seesToken), and its tokens say whose they
// are (owner_id).
const (
	ProbeScope   = "read:canary"
	ProbeOwnerID = "latchkey-probe"
)

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
	return s.ensureConfiguredKey(ctx, "admin", APIKey{Name: "bootstrap admin key", Scopes: []string{ScopeAll}, Bootstrap: true}, secret, created)
}

// EnsureProbeKey makes secret the probe key, as EnsureBootstrapKey makes
// the admin key, retiring any older probe key: the key the canary and the
// probe issue, check and revoke their tokens with, and nothing else. Its
// one grant is ProbeScope, its owner ProbeOwnerID: it lists and changes no
// key, user or organization, and sees no other owner's token.
// CodeInvalidRequest for a secret unfit to be a key.
func (s *Service) EnsureProbeKey(ctx context.Context, secret string, created time.Time) error {
	return s.ensureConfiguredKey(ctx, "probe", APIKey{Name: "probe key", Scopes: []string{ProbeScope}, OwnerID: ProbeOwnerID, Probe: true}, secret, created)
}

// ensureConfiguredKey makes secret the key like describes (its Name,
// Scopes, OwnerID and kind: Bootstrap or Probe), retiring the older keys
// of its kind. what names the key in errors.
func (s *Service) ensureConfiguredKey(ctx context.Context, what string, like APIKey, secret string, created time.Time) error {
	if len(secret) < MinBootstrapKeyLength {
		return Errorf(CodeInvalidRequest, "the %s API key must be at least %d characters", what, MinBootstrapKeyLength)
	}
	if looksLikeJWT(secret) {
		// Authenticate would take it for an access token and never find it.
		return Errorf(CodeInvalidRequest, "the %s API key must not have the shape of a JWT (eyJ….….…)", what)
	}
	hash := HashAPIKey(secret)
	found, err := s.store.GetAPIKeyByHash(ctx, hash)
	if err == nil && !sameKind(found, like) {
		// Another key's secret (the admin key's, configured as the
		// probe's): it would act with that key's grants.
		return Errorf(CodeInvalidRequest, "the %s API key is the secret of another key", what)
	}
	if err == nil || !IsCode(err, CodeNotFound) {
		// Present already (the common cold start: one read), or a store failure.
		return err
	}
	if created.IsZero() {
		created = s.now()
	}
	current := like
	current.ID, current.Hash, current.Last4, current.CreatedAt = NewID(PrefixAPIKey, s.now()), hash, last4(secret), created
	keys, err := s.configuredKeys(ctx, like)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if newerConfiguredKey(k, current) {
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
	if keys, err = s.configuredKeys(ctx, like); err != nil {
		return err
	}
	for _, k := range keys {
		if k.ID == current.ID {
			current = k // as stored, for comparisons other processes make too
			break
		}
	}
	only := onlyKind(like)
	for _, k := range keys {
		if k.ID != current.ID && newerConfiguredKey(k, current) {
			return ignoreNotFound(s.store.DeleteAPIKey(ctx, WriteOptions{}, current.ID, only))
		}
	}
	// Every other key of the kind is older: retire it.
	for _, k := range keys {
		if k.ID != current.ID {
			if err := ignoreNotFound(s.store.DeleteAPIKey(ctx, WriteOptions{}, k.ID, only)); err != nil {
				return err
			}
		}
	}
	return nil
}

// sameKind reports whether a and b are configured keys of one kind: both
// bootstrap admin keys, or both probe keys.
func sameKind(a, b APIKey) bool {
	return (a.Bootstrap || a.Probe) && a.Bootstrap == b.Bootstrap && a.Probe == b.Probe
}

// onlyKind lets ensureConfiguredKey delete keys of like's kind and nothing
// else. A configured key is nobody's ancestor, so deleting one deletes no
// other key: the keys the admin key created stay, as keys of the
// administrator.
func onlyKind(like APIKey) func(APIKey) error {
	return func(k APIKey) error {
		if !sameKind(k, like) {
			return Internal(fmt.Errorf("account: key %s is not a configured key of the kind it retires", k.ID))
		}
		return nil
	}
}

// newerConfiguredKey reports whether a was created after b. Keys of one
// instant are ordered by ID, so that every process agrees on which to keep.
func newerConfiguredKey(a, b APIKey) bool {
	if !a.CreatedAt.Equal(b.CreatedAt) {
		return a.CreatedAt.After(b.CreatedAt)
	}
	return a.ID > b.ID
}

// configuredKeys lists every key of like's kind.
func (s *Service) configuredKeys(ctx context.Context, like APIKey) ([]APIKey, error) {
	var out []APIKey
	params := ListParams{Limit: MaxPageSize}
	for {
		page, err := s.store.ListAPIKeys(ctx, APIKeyFilter{}, params)
		if err != nil {
			return nil, err
		}
		for _, k := range page.Items {
			if sameKind(k, like) {
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
	keys, err := s.configuredKeys(ctx, APIKey{Bootstrap: true})
	return len(keys) > 0, err
}

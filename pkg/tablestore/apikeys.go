package tablestore

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"time"

	"latchkey/pkg/account"
)

// CreateAPIKey writes the key under its ID and under its hash in one
// transaction. A key with Ancestors goes below its parent in the same
// transaction: a link item in the parent's partition (how a delete finds
// it), and 1 added to the parent's Children, on the condition that the
// parent exists and is not being deleted. A key bound to an organization
// is linked in the organization's KEYORG# partition, on the condition that
// the organization exists and is not being deleted (so that a delete of the
// organization, which flags it first, finds every key of it); a key with
// an owner in the owner's KEYOWNER# partition. A second key with the same
// hash (two processes installing the same bootstrap key at once) fails with
// CodeInternal; the caller re-reads. CodeNotFound if the parent is gone or
// being deleted; account.ErrOrganizationNotFound() for the organization.
// A key with a PreviousHash (one carried over from another store) is
// written under that hash too, as a rotation leaves it.
func (s *Store) CreateAPIKey(ctx context.Context, opts account.WriteOptions, k account.APIKey) error {
	byID, byHash := newAPIKeyItems(k)
	steps := []func() (Write, error){
		func() (Write, error) { return s.put(byID, condAbsent) },
		func() (Write, error) { return s.put(byHash, condAbsent) },
	}
	onCheckFailed := []error{
		account.Internal(errors.New("tablestore: an API key with this ID exists already")),
		account.Internal(errors.New("tablestore: an API key with this hash exists already")),
	}
	if byID.PreviousHash != nil {
		steps = append(steps, func() (Write, error) { return s.put(byID.previousCopy(), condAbsent) })
		onCheckFailed = append(onCheckFailed, account.Internal(errors.New("tablestore: an API key with this previous hash exists already")))
	}
	if n := len(k.Ancestors); n > 0 {
		parent := k.Ancestors[n-1]
		steps = append(steps,
			func() (Write, error) {
				return s.update(apiKeyKey(parent), Update(nil).add("children", 0, 1), condLive)
			},
			func() (Write, error) {
				return s.put(newKeyLinkItem(keyLinkKey(parent, k.ID), k), condAbsent)
			},
		)
		onCheckFailed = append(onCheckFailed, account.ErrAPIKeyNotFound(),
			account.Internal(errors.New("tablestore: the API key is linked below its parent already")))
	}
	if k.OrganizationID != "" {
		steps = append(steps,
			func() (Write, error) { return s.check(orgKey(k.OrganizationID), condLive) },
			func() (Write, error) {
				return s.put(newKeyLinkItem(keyOrgLinkKey(k.OrganizationID, k.ID), k), condAbsent)
			},
		)
		onCheckFailed = append(onCheckFailed, account.ErrOrganizationNotFound(),
			account.Internal(errors.New("tablestore: the API key is linked to its organization already")))
	}
	if k.OwnerID != "" {
		steps = append(steps, func() (Write, error) {
			return s.put(newKeyLinkItem(keyOwnerLinkKey(k.OwnerID, k.ID), k), condAbsent)
		})
		onCheckFailed = append(onCheckFailed, account.Internal(errors.New("tablestore: the API key is linked to its owner already")))
	}
	items, err := build(steps...)
	if err != nil {
		return err
	}
	// Its verify copies: copy 1 on the condition that there is none.
	copies, err := s.copyWrites(byID, nextCopies(nil, k.CreatedAt, true))
	if err != nil {
		return err
	}
	onCheckFailed = append(onCheckFailed, account.Internal(errors.New("tablestore: an API key with this ID has copies already")))
	items = append(items, copies...)
	c := newChange(opts, account.PendingEvent{Type: account.EventAPIKeyCreated, Data: k})
	return s.transact(ctx, c, items, onCheckFailed...)
}

// GetAPIKey reads a key by ID and its last use, strongly consistently, in
// one BatchGetItem, and checks its Ancestors (see checkKey). CodeNotFound.
func (s *Store) GetAPIKey(ctx context.Context, id string) (account.APIKey, error) {
	_, k, err := s.readKeyWithUse(ctx, id)
	return k, err
}

// GetAPIKeyByHash reads the copy of the key stored under its hash, strongly
// consistently: one GetItem on every request authenticated by an API key,
// and a BatchGetItem of its Ancestors for a key that has any (see checkKey).
// CodeNotFound.
func (s *Store) GetAPIKeyByHash(ctx context.Context, hash []byte) (account.APIKey, error) {
	return s.getAPIKey(ctx, keyHashKey(hash))
}

func (s *Store) getAPIKey(ctx context.Context, k key) (account.APIKey, error) {
	_, key, err := s.readLiveKey(ctx, k)
	return key, err
}

// readLiveKey reads the copy of a key at k strongly consistently and checks
// it (see checkKey): the item as read, and the key with DisabledAbove set.
// CodeNotFound if it is not there or not live.
func (s *Store) readLiveKey(ctx context.Context, k key) (apiKeyItem, account.APIKey, error) {
	av, err := s.getRaw(ctx, k)
	if err != nil {
		return apiKeyItem{}, account.APIKey{}, err
	}
	if av == nil {
		return apiKeyItem{}, account.APIKey{}, account.ErrAPIKeyNotFound()
	}
	shared, err := s.keys.decode(k, av)
	if err != nil {
		return apiKeyItem{}, account.APIKey{}, err
	}
	// A clone: the item and the key are the caller's, to change.
	it := shared.clone()
	key, live, err := s.checkKey(ctx, &it, nil)
	if err != nil {
		return apiKeyItem{}, account.APIKey{}, err
	}
	if !live {
		return apiKeyItem{}, account.APIKey{}, account.ErrAPIKeyNotFound()
	}
	return it, key, nil
}

// related holds the items read with a key that decide whether it is live:
// its ancestors' items, by key ID, and its organization's, by its ID.
// Slices, not maps: a verify reads a few items (the key, its ancestors,
// its organization), and a map of items this size costs kilobytes. The
// keys are keyMemo's shared items, which no one modifies: a verify copies
// none of them.
type related struct {
	keys []relatedItem[*apiKeyItem]
	orgs []relatedItem[*orgItem]
}

type relatedItem[T any] struct {
	id   string
	item T
}

// find returns the item of id in items (nil and false if none).
func find[T any](items []relatedItem[T], id string) (T, bool) {
	for _, e := range items {
		if e.id == id {
			return e.item, true
		}
	}
	var zero T
	return zero, false
}

// add decodes one item read (a key's through km) and keeps it if it is a
// key or an organization.
func (r *related) add(km *keyMemo, av Item) error {
	k, err := keyOf(av)
	if err != nil {
		return err
	}
	switch k.SK {
	case sortKey:
		it, err := km.decode(k, av)
		if err != nil {
			return err
		}
		// baseID: a read copy's partition key ends with its number.
		r.keys = append(r.keys, relatedItem[*apiKeyItem]{baseID(k.PK, prefixKey), it})
	case sortOrg:
		it := new(orgItem)
		if err := unmarshal(av, it); err != nil {
			return err
		}
		r.orgs = append(r.orgs, relatedItem[*orgItem]{baseID(k.PK, prefixOrg), it})
	}
	return nil
}

// checkKey reports whether the key it (a copy read strongly consistently)
// is live, and returns it with DisabledAbove, LimitsAbove and
// OrganizationLimits set. A key is
// live when it is not being deleted, and neither is any of its Ancestors,
// each of which still exists, nor its organization, which still exists.
// A delete of a tree too large for one transaction flags only its root
// before it starts (see DeleteAPIKey), and a delete of an organization only the
// organization, so this is how the keys below the one, and of the other,
// are gone from that instant. (The keys above a key bound to an
// organization are bound to it or to none, so its own is the only one to
// read.) have holds items read already; the others are read with one
// strongly consistent BatchGetItem. A key without ancestors or
// organization (the bootstrap key and the keys it created) costs no read.
// The key shares its slices and maps with it, which checkKey does not
// modify.
func (s *Store) checkKey(ctx context.Context, it *apiKeyItem, have *related) (k account.APIKey, live bool, err error) {
	if it.Deleting {
		return account.APIKey{}, false, nil
	}
	var r related
	if have != nil {
		r = *have
	}
	var missing []key
	for _, id := range it.Ancestors {
		if _, ok := find(r.keys, id); !ok {
			missing = append(missing, apiKeyKey(id))
		}
	}
	if _, ok := find(r.orgs, it.OrganizationID); it.OrganizationID != "" && !ok {
		missing = append(missing, orgKey(it.OrganizationID))
	}
	if len(missing) > 0 {
		read, err := s.batchGet(ctx, missing)
		if err != nil {
			return account.APIKey{}, false, err
		}
		// Appended to copies (clipped, an append copies): have is the
		// caller's. A verify reads everything at once, and copies nothing.
		r = related{keys: slices.Clip(r.keys), orgs: slices.Clip(r.orgs)}
		for _, av := range read {
			if err := r.add(&s.keys, av); err != nil {
				return account.APIKey{}, false, err
			}
		}
	}
	var orgLimits *account.KeyLimits
	if it.OrganizationID != "" {
		o, ok := find(r.orgs, it.OrganizationID)
		if !ok || o.Deleting {
			return account.APIKey{}, false, nil
		}
		if len(o.RateLimits) > 0 || o.Credits != nil {
			// Its limits bound k's uses too: on the copy read, they cost
			// no read.
			ls, c := limitsOf(o.RateLimits, o.Credits)
			orgLimits = &account.KeyLimits{KeyID: it.OrganizationID, RateLimits: ls, Credits: c}
		}
	}
	k = it.apiKey()
	k.OrganizationLimits = orgLimits
	for _, id := range it.Ancestors {
		a, ok := find(r.keys, id)
		if !ok || a.Deleting {
			return account.APIKey{}, false, nil
		}
		k.DisabledAbove = k.DisabledAbove || a.Disabled
		if len(a.RateLimits) > 0 || a.Credits != nil {
			// Its limits bound k's uses too: read here, they cost no read.
			ls, c := a.limits()
			k.LimitsAbove = append(k.LimitsAbove, account.KeyLimits{KeyID: id, RateLimits: ls, Credits: c, ExpiresAt: a.ExpiresAt})
		}
	}
	return k, true, nil
}

// errKeyChanged cancels a pass of UpdateAPIKey whose key changed, or went,
// after it was read. The next pass reads it again.
var errKeyChanged = errors.New("tablestore: the API key changed while it was being updated")

// UpdateAPIKey reads the key as GetAPIKey does, calls allow, and writes
// the patched key in one transaction: an UpdateItem of the item under the
// ID that sets only the patched attributes (a concurrent create below the
// key adds to its Children), on condition that it is still the Version
// read and not being deleted, and a Put of the copy under the hash. A
// change made between the read and the write (the condition fails), or
// one in flight (a TransactionConflict that outlasted the retries of
// transact), is a race lost, not a failure: the update starts again from
// the read after a jittered backoff, at most WithConflictRetries times,
// then reports CodeConcurrentUpdate, which a client may simply retry.
// CodeNotFound.
func (s *Store) UpdateAPIKey(ctx context.Context, opts account.WriteOptions, id string, p account.APIKeyPatch, allow func(account.APIKey) error) (account.APIKey, error) {
	for attempt := 0; ; attempt++ {
		k, err := s.updateAPIKey(ctx, opts, id, p, allow)
		if err == nil {
			return k, s.keyStatuses(ctx, k, p)
		}
		if !errors.Is(err, errKeyChanged) && !errors.Is(err, errTransactionConflict) {
			return k, err
		}
		if attempt >= s.conflictRetries {
			return account.APIKey{}, account.ErrConcurrentUpdate("API key")
		}
		if err := backoff(ctx, attempt); err != nil {
			return account.APIKey{}, err
		}
	}
}

// updateAPIKey is one pass of UpdateAPIKey: errKeyChanged if the key
// changed under it.
func (s *Store) updateAPIKey(ctx context.Context, opts account.WriteOptions, id string, p account.APIKeyPatch, allow func(account.APIKey) error) (account.APIKey, error) {
	it, k, first, err := s.readKeyForChange(ctx, id, true)
	if err != nil {
		return account.APIKey{}, err
	}
	if allow != nil {
		if err := allow(k); err != nil {
			return account.APIKey{}, err
		}
	}
	next := it.patched(p)
	// The item under the ID gets every attribute a change can touch, as
	// next has it: the version condition makes that safe, and leaves
	// children alone, which a create below the key may be adding to.
	upd := set("version", next.Version).
		set("name", next.Name).
		set("hash", next.Hash).
		set("last4", next.Last4)
	for _, a := range []struct {
		name string
		set  bool
	}{
		{"metadata", next.Metadata != nil}, {"disabled", next.Disabled}, {"previous_hash", next.PreviousHash != nil}, {"previous_expires_at", next.PreviousHash != nil},
		{"rate_limits", next.RateLimits != nil}, {"credits", next.Credits != nil},
	} {
		if !a.set {
			upd = upd.remove(a.name)
		}
	}
	if next.Metadata != nil {
		upd = upd.set("metadata", next.Metadata)
	}
	if next.Disabled {
		upd = upd.set("disabled", true)
	}
	if next.RateLimits != nil {
		upd = upd.set("rate_limits", next.RateLimits)
	}
	if next.Credits != nil {
		upd = upd.set("credits", next.Credits)
	}
	if next.PreviousHash != nil {
		upd = upd.set("previous_hash", next.PreviousHash).
			set("previous_expires_at", next.PreviousExpiresAt.UTC())
	}
	if next.TokensRevokedBefore != nil {
		upd = upd.set("tokens_revoked_before", next.TokensRevokedBefore.UTC())
	}
	// 0.1.0's "copies since" goes: see copyPlan.entryCopies.
	upd = upd.remove("copies_since")
	steps := []func() (Write, error){
		func() (Write, error) {
			return s.update(apiKeyKey(id), upd, condLive.And(versionIs(it.Version)))
		},
	}
	onCheckFailed := []error{errKeyChanged}
	// The copies need no condition of their own, but for a new secret's,
	// which must not be another key's: the transaction writes them only if
	// the item under the ID is the one read, and a delete removes them all
	// in one transaction with it.
	if p.Rotate != nil {
		steps = append(steps, func() (Write, error) { return s.put(next.hashCopy(), condAbsent) })
		onCheckFailed = append(onCheckFailed, account.Internal(errors.New("tablestore: an API key with this hash exists already")))
	} else {
		steps = append(steps, func() (Write, error) { return s.putAlways(next.hashCopy()) })
	}
	if next.PreviousHash != nil {
		steps = append(steps, func() (Write, error) { return s.putAlways(next.previousCopy()) })
	}
	// The copies that next no longer has: a secret that stopped.
	for _, h := range [][]byte{it.Hash, it.PreviousHash} {
		if h != nil && !bytes.Equal(h, next.Hash) && !bytes.Equal(h, next.PreviousHash) {
			steps = append(steps, func() (Write, error) { return s.del(keyHashKey(h), Cond{}) })
		}
	}
	items, err := build(steps...)
	if err != nil {
		return account.APIKey{}, err
	}
	// Every change rewrites the verify copies, as it does the copy under
	// the hash: the content of next, the revocations of copy 1, on the
	// condition that copy 1 is the one read (firstCopyIs).
	content := next
	if first != nil {
		content.Revoked, content.RevokedOverflowUntil = first.Revoked, first.RevokedOverflowUntil
	}
	at := p.At
	if at.IsZero() {
		at = time.Now()
	}
	copies, err := s.copyWrites(content, s.sizedCopies(ctx, id, nextCopies(first, at, true), at))
	if err != nil {
		return account.APIKey{}, err
	}
	for len(onCheckFailed) < len(items) {
		onCheckFailed = append(onCheckFailed, nil)
	}
	onCheckFailed = append(onCheckFailed, errKeyChanged)
	items = append(items, copies...)
	out := next.apiKey()
	out.DisabledAbove, out.LastUsedAt = k.DisabledAbove, k.LastUsedAt
	if err := s.transact(ctx, newChange(opts, account.PendingEvent{Type: p.EventType(), Data: out}), items, onCheckFailed...); err != nil {
		return account.APIKey{}, err
	}
	return out, nil
}

// patched returns the key item it with p applied and its Version one up. A
// rotation makes the current hash the previous one (or drops it, with no
// grace period) and drops an earlier previous one; any change drops a
// previous hash whose grace period ended by p.At.
func (it apiKeyItem) patched(p account.APIKeyPatch) apiKeyItem {
	next := it
	next.Version++
	if p.Name != nil {
		next.Name = *p.Name
	}
	if p.Metadata != nil {
		next.Metadata = *p.Metadata
		if len(next.Metadata) == 0 {
			next.Metadata = nil
		}
	}
	if p.Disabled != nil {
		next.Disabled = *p.Disabled
	}
	if p.RateLimits != nil {
		next.RateLimits = rateLimitItems(*p.RateLimits)
	}
	if p.Credits != nil {
		next.Credits = newCreditsItem(p.Credits.Credits)
	}
	var current time.Time
	if it.TokensRevokedBefore != nil {
		current = *it.TokensRevokedBefore
	}
	if before := p.TokensRevokedBefore(current); !before.IsZero() {
		before = before.UTC()
		next.TokensRevokedBefore = &before
	}
	if next.PreviousHash != nil && (p.Rotate != nil || !p.At.Before(*next.PreviousExpiresAt)) {
		next.PreviousHash, next.PreviousExpiresAt = nil, nil
	}
	next.CopiesSince = nil // see copyPlan.entryCopies
	if r := p.Rotate; r != nil {
		if !r.PreviousUntil.IsZero() {
			until := r.PreviousUntil.UTC()
			next.PreviousHash, next.PreviousExpiresAt = it.Hash, &until
		}
		next.Hash, next.Last4 = r.Hash, r.Last4
	}
	return next
}

// versionIs is the condition that a key item has version v (see
// apiKeyItem.Version): a key never changed has no version attribute.
func versionIs(v int) Cond {
	if v == 0 {
		return attr("version").NotExists()
	}
	return attr("version").Equal(v)
}

// ListAPIKeys lists keys newest first from the KEYS partition of gsi1,
// leaving out any item outside a KEY# partition (see list) and a key whose
// delete has begun. The keys below it are listed
// until the delete is finished: checking every key's ancestors would cost
// a BatchGetItem per page, and only a delete cut off halfway is seen here.
//
// The keys' last uses are read with one more request, an eventually
// consistent BatchGetItem of the page's KEYUSE# items.
//
// The keys of an organization or an owner are listed from the links in
// its KEYORG# or KEYOWNER# partition (see listLinkedKeys).
func (s *Store) ListAPIKeys(ctx context.Context, f account.APIKeyFilter, p account.ListParams) (account.Page[account.APIKey], error) {
	switch {
	case f.OrganizationID != "":
		return s.listLinkedKeys(ctx, prefixKeyOrg+f.OrganizationID, p, func(k account.APIKey) bool {
			return f.OwnerID == "" || k.OwnerID == f.OwnerID
		})
	case f.OwnerID != "":
		return s.listLinkedKeys(ctx, prefixKeyOwner+f.OwnerID, p, func(account.APIKey) bool { return true })
	}
	page, err := list(ctx, s, listKeys, prefixKey, p, func(it apiKeyItem) (account.APIKey, bool) { return it.apiKey(), !it.Deleting })
	if err != nil {
		return page, err
	}
	return page, s.withLastUses(ctx, page.Items)
}

package tablestore

import (
	"context"
	"errors"
	"time"

	"latchkey/pkg/account"
)

// CreateToken writes the token record, in its key's partition, with one
// PutItem; TTL removes it after the token expires. Token IDs are fresh
// ULIDs, so there is nothing to guard.
func (s *Store) CreateToken(ctx context.Context, opts account.WriteOptions, t account.TokenRecord) error {
	if opts.Commit != nil {
		// With its idempotency record: a transaction of the two.
		it, err := s.put(newTokenItem(t), condAbsent)
		if err != nil {
			return err
		}
		return s.transact(ctx, newChange(opts), []Write{it}, account.Internal(errors.New("tablestore: a token with this ID exists already")))
	}
	it, err := s.putAlways(newTokenItem(t))
	if err != nil {
		return err
	}
	_, err = s.port.Write(ctx, it, false)
	return storeErr(err)
}

// RevokeToken records a revocation where TokenStatus reads it, with the
// event, in one transaction, and returns the first revocation time.
//
// A token that carries the claim (r.Inline) is revoked on its key
// (revokeInline): a key change, made as UpdateAPIKey makes one, on the
// Version read, and retried the same way when another change (a PATCH, a
// rotation, another revocation) came between its read and its write, so
// that neither is lost. A token without it, or of a key that is gone, is
// revoked with its entry and the entry's read copies, as before the claim
// existed (revokeEntry).
func (s *Store) RevokeToken(ctx context.Context, opts account.WriteOptions, r account.Revocation) (time.Time, error) {
	c := newChange(opts, account.PendingEvent{Type: account.EventTokenRevoked, Data: r})
	if !r.Inline {
		return s.revokeEntry(ctx, c, r, nil, true)
	}
	// Four times a PATCH's retries: a mass revocation of one key's tokens
	// is the race this path loses most, and each lost pass costs one
	// strongly consistent read.
	for attempt := 0; ; attempt++ {
		at, err := s.revokeInline(ctx, c, r)
		if !errors.Is(err, errKeyChanged) && !errors.Is(err, errTransactionConflict) {
			return at, err
		}
		if attempt >= 4*s.conflictRetries {
			return time.Time{}, account.ErrConcurrentUpdate("API key")
		}
		if err := backoff(ctx, attempt); err != nil {
			return time.Time{}, err
		}
	}
}

// maxInlineRevocations bounds the revocations, of tokens not yet expired,
// that a key's item holds (apiKeyItem.Revoked): 16 of 58 bytes add 0.9 KB,
// so a key with a few scopes, limits and some metadata stays within the
// 4 KB of one read unit, and the largest key the limits allow takes the 3
// RRU it took without them (TestInlineRevocations_Size).
const maxInlineRevocations = 16

// expiredRevocationMargin is how long after its token's expiry a
// revocation stays on the key: longer than any skew between the clocks of
// the instances (token.ClockSkew).
const expiredRevocationMargin = time.Minute

// revokeInline is one pass of RevokeToken for a token that carries the
// claim: it reads the key's item strongly consistently and writes, on
// condition that it is still the Version read, the item with the
// revocation added and the revocations of expired tokens dropped, and its
// read copies, with the entry (the record of the first revocation time,
// and what ListTokens reads) and the entry's copies (what a verify that
// does not rely on the key reads: the previous release's, and ours until
// the formats item puts revocations on the key in force). A key that holds
// maxInlineRevocations already takes the revocation as an overflow, with
// RevokedOverflowUntil moved to the token's expiry if it is later
// (otherwise the key is only checked to be the Version read, and not
// rewritten). errKeyChanged if the key changed under it.
func (s *Store) revokeInline(ctx context.Context, c change, r account.Revocation) (time.Time, error) {
	k := apiKeyKey(r.KeyID)
	av, err := s.getRaw(ctx, k)
	if err != nil {
		return time.Time{}, err
	}
	if av == nil {
		return s.revokeEntry(ctx, c, r, nil, true)
	}
	it, err := s.keys.decode(k, av)
	if err != nil {
		return time.Time{}, err
	}
	if it.Deleting {
		// Its tokens are refused for that; the entry records the time.
		return s.revokeEntry(ctx, c, r, nil, true)
	}
	if e, ok := it.Revoked[r.TokenID]; ok {
		// Nothing changed: no event, and the idempotency record stays
		// started.
		return time.Unix(0, e.RevokedAt).UTC(), nil
	}
	next, _ := it.withRevocation(r)
	cond := condLive.And(versionIs(it.Version))
	var keyItems []Write
	if next == nil {
		check, err := s.check(k, cond)
		if err != nil {
			return time.Time{}, err
		}
		keyItems = []Write{check}
	} else {
		if keyItems, err = s.inlineKeyItems(k, it, *next); err != nil {
			return time.Time{}, err
		}
	}
	// The entry's copies too, overflow or not: a verify that does not rely
	// on the key (the previous release's, and ours while the formats item
	// does not put revocations on the key in force) reads them.
	at, err := s.revokeEntry(ctx, c, r, keyItems, true)
	if !errors.Is(err, errRevokedOutside) {
		return at, err
	}
	// The entry exists and the key does not hold it: a revocation made by
	// the version before the claim (its verifies read the entry, and ours
	// do not), or one that overflowed. Unless the key's overflow still
	// covers it, the key takes it now, at its first time: the repeat that
	// docs/deploying.md asks for after the upgrade. Nothing else changed:
	// no event, and the idempotency record stays started.
	if it.overflowCovers(r) {
		return at, nil
	}
	first := r
	first.RevokedAt = at
	next, overflow := it.withRevocation(first)
	if next == nil {
		return at, nil // full, and the overflow covers it already
	}
	keyItems, err = s.inlineKeyItems(k, it, *next)
	if err != nil {
		return time.Time{}, err
	}
	if overflow {
		// Full: the entry stays where it is, and the key's overflow moves
		// to cover it; its copies rewritten, which a verify then reads.
		puts, err := s.revocationCopyPuts(newRevocationItem(first))
		if err != nil {
			return time.Time{}, err
		}
		keyItems = append(keyItems, puts...)
	}
	if err := s.transact(ctx, c.withoutCommit(), keyItems, errKeyChanged); err != nil {
		return time.Time{}, err
	}
	return at, nil
}

// errRevokedOutside is revokeEntry's error, with the first revocation
// time, for a token with the claim whose entry exists already.
var errRevokedOutside = errors.New("tablestore: the token is revoked already, outside its key")

// inlineKeyItems returns the writes of the key item next in place of it,
// read at k: the item under the ID on the condition that it is the
// Version read, and its read copies.
func (s *Store) inlineKeyItems(k key, it *apiKeyItem, next apiKeyItem) ([]Write, error) {
	upd := set("version", next.Version)
	if next.Revoked != nil {
		upd = upd.set("revoked", next.Revoked)
	} else {
		upd = upd.remove("revoked")
	}
	if next.RevokedOverflowUntil != nil {
		upd = upd.set("revoked_overflow_until", next.RevokedOverflowUntil.UTC())
	} else {
		upd = upd.remove("revoked_overflow_until")
	}
	if next.RevokedOverflowIssuedBefore != nil {
		upd = upd.set("revoked_overflow_issued_before", next.RevokedOverflowIssuedBefore.UTC())
	} else {
		upd = upd.remove("revoked_overflow_issued_before")
	}
	if next.CopiesSince != nil {
		upd = upd.set("copies_since", next.CopiesSince.UTC())
	}
	u, err := s.update(k, upd, condLive.And(versionIs(it.Version)))
	if err != nil {
		return nil, err
	}
	// The copy under the hash holds no revocations (hashCopy): not
	// written.
	copies, err := s.keyCopyPuts(next)
	if err != nil {
		return nil, err
	}
	return append([]Write{u}, copies...), nil
}

// withRevocation returns the key item it with r's revocation and its
// Version one up, and whether the revocation overflows (it is then the
// entry's copies that a verify reads). The revocations of tokens expired by
// r.RevokedAt are dropped, and so is an overflow that has ended. Nil, with
// overflow, when the key need not change: it is full, and its overflow
// covers the token already (overflowCovers).
func (it apiKeyItem) withRevocation(r account.Revocation) (next *apiKeyItem, overflow bool) {
	// Dropped a while after expiry, not at once: a verifier whose clock is
	// behind this one's still takes the token for live meanwhile.
	gone := r.RevokedAt.Add(-expiredRevocationMargin)
	live := make(map[string]inlineRevocation, len(it.Revoked)+1)
	for id, e := range it.Revoked {
		if e.ExpiresAt > gone.Unix() {
			live[id] = e
		}
	}
	n := it
	n.Version++
	n.Revoked = live
	if n.RevokedOverflowUntil != nil && !n.RevokedOverflowUntil.After(gone) {
		n.RevokedOverflowUntil, n.RevokedOverflowIssuedBefore = nil, nil
	}
	if n.CopiesSince == nil {
		// A key from before read copies gets them now, as with a PATCH.
		since := r.RevokedAt.UTC()
		n.CopiesSince = &since
	}
	if len(live) < maxInlineRevocations {
		live[r.TokenID] = inlineRevocation{RevokedAt: r.RevokedAt.UnixNano(), ExpiresAt: r.ExpiresAt.Unix()}
		return &n, false
	}
	if n.overflowCovers(r) && len(live) == len(it.Revoked) && it.CopiesSince != nil {
		return nil, true
	}
	// An overflow begun without the bound of issuance (a commit before it
	// existed) may hold a token issued after this one: it keeps none.
	if n.RevokedOverflowUntil == nil || n.RevokedOverflowIssuedBefore != nil {
		before := r.ExpiresAt.UTC() // a token whose ID tells no time was issued before its expiry
		if at, ok := account.IDTime(account.PrefixToken, r.TokenID); ok {
			before = at.Add(time.Millisecond).UTC()
		}
		if n.RevokedOverflowIssuedBefore != nil && n.RevokedOverflowIssuedBefore.After(before) {
			before = *n.RevokedOverflowIssuedBefore
		}
		n.RevokedOverflowIssuedBefore = &before
	}
	until := r.ExpiresAt.UTC()
	if n.RevokedOverflowUntil != nil && n.RevokedOverflowUntil.After(until) {
		until = *n.RevokedOverflowUntil
	}
	n.RevokedOverflowUntil = &until
	return &n, true
}

// overflowCovers reports whether the key's overflow holds r's token
// already, if it is revoked outside the item: it lasts to the token's
// expiry, and a verify of the token reads the entry (overflowMayHold).
func (it *apiKeyItem) overflowCovers(r account.Revocation) bool {
	return it.RevokedOverflowUntil != nil && !it.RevokedOverflowUntil.Before(r.ExpiresAt) && it.overflowMayHold(r.TokenID)
}

// revokeEntry writes the revocation entry unless one exists, with its
// read copies (see shards.go) if copies, and keyItems (revokeInline's
// writes of the key), in one transaction: the entry's Put is conditional
// and asks for the old item (ReturnValuesOnConditionCheckFailure), so
// when one exists the first revocation time comes back with the
// cancellation, without a second request. A repeated revocation of a token
// without the claim rewrites the copies of the entry in force, so that one
// made by a version that wrote none reaches every copy.
func (s *Store) revokeEntry(ctx context.Context, c change, r account.Revocation, keyItems []Write, copies bool) (time.Time, error) {
	entry := newRevocationItem(r)
	it, err := s.put(entry, condAbsent)
	if err != nil {
		return time.Time{}, err
	}
	it.ReturnOld = true
	items := append([]Write{it}, keyItems...)
	onCheckFailed := []error{errRevokedAlready}
	if len(keyItems) > 0 {
		onCheckFailed = append(onCheckFailed, errKeyChanged)
	}
	if copies {
		puts, err := s.revocationCopyPuts(entry)
		if err != nil {
			return time.Time{}, err
		}
		items = append(items, puts...)
	}
	// The token's status list entry, INVALID with the revocation: a fresh
	// fetch of the list after the answer shows it.
	flip, err := s.revocationFlip(r)
	if err != nil {
		return time.Time{}, err
	}
	items = append(items, flip...)
	oldItem, err := s.transactReturningOld(ctx, c, items, onCheckFailed...)
	if err == nil {
		return r.RevokedAt, nil
	}
	if !errors.Is(err, errRevokedAlready) {
		return time.Time{}, err
	}
	var old revocationItem
	if oldItem != nil {
		if err := unmarshal(oldItem, &old); err != nil {
			return time.Time{}, err
		}
	} else {
		// An endpoint that does not return the old item: read it.
		found, err := s.getItem(ctx, revocationKey(r.TokenID), &old)
		if err != nil {
			return time.Time{}, err
		}
		if !found {
			return time.Time{}, account.Internal(errors.New("tablestore: revocation entry vanished after a failed condition"))
		}
	}
	if r.Inline {
		// Every entry of a token with the claim was written with its
		// copies (the earlier version's, or an overflow's), or with the
		// key's inline revocation: revokeInline decides whether its key
		// takes it.
		if len(keyItems) > 0 {
			return old.RevokedAt, errRevokedOutside
		}
		return old.RevokedAt, nil
	}
	puts, err := s.revocationCopyPuts(old)
	if err != nil {
		return time.Time{}, err
	}
	// A repeat writes the entry's status again too, in case the first
	// revocation was made by a version that wrote none.
	puts = append(puts, flip...)
	// Nothing changed: no event, and the idempotency record stays started.
	if err := s.transact(ctx, c.withoutCommit(), puts); err != nil {
		return time.Time{}, err
	}
	return old.RevokedAt, nil
}

// errRevokedAlready cancels RevokeToken's transaction when the token has a
// revocation entry.
var errRevokedAlready = errors.New("tablestore: the token is revoked already")

// TokenStatus reads, in one strongly consistent BatchGetItem, read copy n
// (see shards.go) of the issuing key's item, of the items of the ancestors
// and the organization the token names and, for a token without the claim
// (inline false), of its revocation entry, with n one random number for
// all: 1 request and 1 RCU for a token with the claim of a key without
// ancestors or organization (2 RCU without the claim; a TransactGetItems
// would cost twice as much), 1 more RCU per ancestor and for the
// organization. A token with the claim is revoked when its key's item says
// so (apiKeyItem.Revoked); its entry's copy n is read only while the key
// has an overflow that may hold it (overflowMayHold: issued before
// RevokedOverflowUntil and not after the last token revoked that way):
// in the one BatchGetItem when this process's last verify of the key saw
// that overflow (overflowMemo), with a second one when it did not. The key's own
// Ancestors and OrganizationID decide: any the hints left out, and any
// copy that data written before copies existed lacks, are read from the
// items themselves with a second BatchGetItem (checkKey), which a token
// this service issued, of a key created since, never needs.
func (s *Store) TokenStatus(ctx context.Context, tokenID, keyID string, ancestors []string, orgID string, inline bool) (account.TokenStatus, error) {
	return s.tokenStatus(ctx, s.verifyCopy(), tokenID, keyID, ancestors, orgID, inline)
}

// tokenStatus is TokenStatus reading copy n.
func (s *Store) tokenStatus(ctx context.Context, n int, tokenID, keyID string, ancestors []string, orgID string, inline bool) (account.TokenStatus, error) {
	if len(ancestors) > account.MaxKeyAncestors {
		ancestors = nil // a hint, and not one this service wrote
	}
	keys := make([]key, 0, 3+len(ancestors))
	if !inline {
		keys = append(keys, revocationCopyKey(tokenID, n))
	}
	keys = append(keys, apiKeyCopyKey(keyID, n))
	for _, id := range ancestors {
		keys = append(keys, apiKeyCopyKey(id, n))
	}
	if orgID != "" {
		keys = append(keys, orgCopyKey(orgID, n))
	}
	// A token that its key's overflow may hold, as this process last read
	// the key: the entry's copy in this request, not in a second one.
	entryRead := inline && s.overflows.mayHold(keyID, tokenID)
	if entryRead {
		keys = append(keys, revocationCopyKey(tokenID, n))
	}
	read, err := s.batchGet(ctx, keys)
	if err != nil {
		return account.TokenStatus{}, err
	}
	var st account.TokenStatus
	var r related
	if err := s.addStatusRead(&st, read, &r); err != nil {
		return account.TokenStatus{}, err
	}
	it, ok := find(r.keys, keyID)
	if o, read := find(r.orgs, orgID); !ok && read && o.Deleting {
		// Its organization's copy says it is going: so is the key (a
		// key's organization never changes, and its copies go with the
		// organization's delete, which leaves the organization's).
		return st, nil
	}
	var more []key
	switch {
	case inline && !ok && n != 0:
		// A key without copies: its item, where every revocation of a
		// token with the claim is (revokeInline writes the copies).
		more = []key{apiKeyKey(keyID)}
	case inline:
	case n != 0 && st.RevokedAt.IsZero() && (!ok || !it.Deleting && (it.CopiesSince == nil || issuedBefore(tokenID, *it.CopiesSince))):
		// The entry itself when the copy may not be the whole story: a key
		// without copies, or a token issued before its key had them.
		more = []key{revocationKey(tokenID)}
		if !ok {
			more = append(more, apiKeyKey(keyID))
		}
	}
	if len(more) > 0 {
		read, err := s.batchGet(ctx, more)
		if err != nil {
			return account.TokenStatus{}, err
		}
		if err := s.addStatusRead(&st, read, &r); err != nil {
			return account.TokenStatus{}, err
		}
		it, ok = find(r.keys, keyID)
	}
	if !ok {
		return st, nil
	}
	if e, held := it.Revoked[tokenID]; held && !inline && st.RevokedAt.IsZero() {
		// A token with the claim read by its entry: a commit before 0.2.0
		// revoked on the key without the entry's copies.
		st.RevokedAt = time.Unix(0, e.RevokedAt).UTC()
	}
	if inline && !it.Deleting {
		s.overflows.saw(keyID, it)
		if err := s.inlineStatus(ctx, &st, it, tokenID, n, entryRead); err != nil {
			return account.TokenStatus{}, err
		}
	}
	// A clone: the memo's item is shared by every read of the key, and
	// the key returned is the caller's.
	c := it.clone()
	issuer, live, err := s.checkKey(ctx, &c, &r)
	if err != nil {
		return account.TokenStatus{}, err
	}
	if live {
		st.Key = &issuer
	}
	return st, nil
}

// inlineStatus sets st.RevokedAt for the token tokenID, which carries the
// claim, from its key's item it: its inline revocation, or, while an
// overflow may hold it, copy n of its entry, read with a second request
// unless entryRead (st has it then).
func (s *Store) inlineStatus(ctx context.Context, st *account.TokenStatus, it *apiKeyItem, tokenID string, n int, entryRead bool) error {
	if e, ok := it.Revoked[tokenID]; ok {
		st.RevokedAt = time.Unix(0, e.RevokedAt).UTC()
		return nil
	}
	if entryRead || !it.overflowMayHold(tokenID) {
		return nil
	}
	read, err := s.batchGet(ctx, []key{revocationCopyKey(tokenID, n)})
	if err != nil {
		return err
	}
	return s.addStatusRead(st, read, nil)
}

// addStatusRead sorts items read by TokenStatus: a revocation entry into
// st, keys and organizations into r.
func (s *Store) addStatusRead(st *account.TokenStatus, read []Item, r *related) error {
	for _, av := range read {
		k, err := keyOf(av)
		if err != nil {
			return err
		}
		if k.SK == sortRevoked {
			var rev revocationItem
			if err := unmarshal(av, &rev); err != nil {
				return err
			}
			st.RevokedAt = rev.RevokedAt
			continue
		}
		if err := r.add(&s.keys, av); err != nil {
			return err
		}
	}
	return nil
}

// ListTokens reads one page of the key's token records with one strongly
// consistent Query of its partition, newest first, from the sort keys
// TOKEN#<first ID after since> on (so no token issued before since costs
// a read), then their revocation entries with one strongly consistent
// BatchGetItem: about 1 RCU per 4 KB of records (some 25 records) and
// 1 RCU per record on the page.
func (s *Store) ListTokens(ctx context.Context, keyID string, since time.Time, p account.ListParams) (account.Page[account.TokenRecord], error) {
	pk := apiKeyKey(keyID).PK
	low := prefixToken + account.FirstID(account.PrefixToken, since.Add(time.Millisecond))
	// "~" sorts after every ULID character.
	high := prefixToken + account.PrefixToken + "~"
	if p.After != "" {
		high = prefixToken + p.After
	}
	limit := p.PageSize()
	// One more than the page, and one more again for the position itself,
	// which BETWEEN includes.
	want := limit + 2
	q := Query{Partition: pk, Range: Range{Op: OpBetween, Values: []string{low, high}}, Limit: want, Consistent: true}
	var items []tokenItem
	err := s.queryPages(ctx, q, func(page []Item) (bool, error) {
		for _, av := range page {
			var it tokenItem
			if err := unmarshal(av, &it); err != nil {
				return false, err
			}
			if it.SK != high {
				items = append(items, it)
			}
		}
		return len(items) <= limit, nil
	})
	if err != nil {
		return account.Page[account.TokenRecord]{}, err
	}
	var page account.Page[account.TokenRecord]
	if len(items) > limit {
		items = items[:limit]
		page.Next = idFrom(items[limit-1].SK, prefixToken)
	}
	if len(items) == 0 {
		page.Items = []account.TokenRecord{}
		return page, nil
	}
	keys := make([]key, len(items))
	for i, it := range items {
		keys[i] = revocationKey(idFrom(it.SK, prefixToken))
	}
	read, err := s.batchGet(ctx, keys)
	if err != nil {
		return account.Page[account.TokenRecord]{}, err
	}
	revoked := make(map[string]time.Time, len(read))
	for _, av := range read {
		var r revocationItem
		if err := unmarshal(av, &r); err != nil {
			return account.Page[account.TokenRecord]{}, err
		}
		revoked[idFrom(r.PK, prefixToken)] = r.RevokedAt
	}
	page.Items = make([]account.TokenRecord, len(items))
	for i, it := range items {
		t := it.record()
		t.RevokedAt = revoked[t.ID]
		page.Items[i] = t
	}
	return page, nil
}

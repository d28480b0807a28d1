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
// A token that carries the claim (r.Inline) is revoked on its key's
// verify copies (revokeInline), never on the item under the ID, which is
// listed: a revocation writes no index. It reads copy 1 strongly
// consistently (see shards.go), the authority for the revocations on the
// key, and is retried, as UpdateAPIKey is, when another write of the
// copies (a key change, another revocation) came between its read and its
// write. A token without the claim, or of a key that is gone, is revoked
// with its entry and the entry's 15 copies, as before the claim existed.
func (s *Store) RevokeToken(ctx context.Context, opts account.WriteOptions, r account.Revocation) (time.Time, error) {
	c := newChange(opts, account.PendingEvent{Type: account.EventTokenRevoked, Data: r})
	// Four times a PATCH's retries: a mass revocation of one key's tokens
	// is the race this path loses most, and each lost pass costs one
	// strongly consistent read.
	for attempt := 0; ; attempt++ {
		at, err := s.revokeOnKey(ctx, c, r)
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
// that a key's copies hold (apiKeyItem.Revoked): 16 of 58 bytes add 0.9
// KB, so a key with a few scopes, limits and some metadata stays within
// the 4 KB of one read unit, and the largest key the limits allow takes
// the 3 RRU it took without them (TestInlineRevocations_Size).
const maxInlineRevocations = 16

// expiredRevocationMargin is how long after its token's expiry a
// revocation stays on the key: longer than any skew between the clocks of
// the instances (token.ClockSkew).
const expiredRevocationMargin = time.Minute

// readFirstCopy reads copy 1 of the key id strongly consistently and, for
// a key without copies (none from before they existed), its item: base is
// the key item a write of the copies takes its content and revocations
// from (nil if the key is gone), first copy 1 (nil if there is none).
// Both are the memo's, which the caller does not modify.
func (s *Store) readFirstCopy(ctx context.Context, id string) (base, first *apiKeyItem, err error) {
	for _, k := range []key{apiKeyCopyKey(id, 1), apiKeyKey(id)} {
		av, err := s.getRaw(ctx, k)
		if err != nil {
			return nil, nil, err
		}
		if av == nil {
			continue
		}
		it, err := s.keys.decode(k, av)
		if err != nil {
			return nil, nil, err
		}
		if k.PK != apiKeyKey(id).PK {
			first = it
		}
		return it, first, nil
	}
	return nil, nil, nil
}

// revokeOnKey is one pass of RevokeToken: errKeyChanged if copy 1 of the
// key changed under it.
func (s *Store) revokeOnKey(ctx context.Context, c change, r account.Revocation) (time.Time, error) {
	if !r.Inline {
		// The entry and all its copies, whatever the key's N: nothing of
		// the key to read or write.
		return s.revokeEntry(ctx, c, r, nil, maxReadCopies)
	}
	base, first, err := s.readFirstCopy(ctx, r.KeyID)
	if err != nil {
		return time.Time{}, err
	}
	if base == nil || base.Deleting {
		// Its tokens are refused for that; the entry records the time.
		return s.revokeEntry(ctx, c, r, nil, maxReadCopies)
	}
	cs := s.sizedCopies(ctx, r.KeyID, nextCopies(first, r.RevokedAt, false), r.RevokedAt)
	return s.revokeInline(ctx, c, r, base, cs)
}

// revokeInline revokes a token that carries the claim on the copies cs of
// its key, whose copy 1 (or item, for a key without copies) is it: it
// writes the copies with the revocation added and the revocations of
// expired tokens dropped, with the entry (the record of the first
// revocation time, and what ListTokens reads) and the entry's copies that
// cs.entryCopies asks for. A key whose copies hold maxInlineRevocations
// already takes the revocation as an overflow, with RevokedOverflowUntil
// moved to the token's expiry if it is later (otherwise copy 1 is only
// checked, and not rewritten), and the entry's copies 1..N, which a
// verify then reads. errKeyChanged if copy 1 changed under it.
func (s *Store) revokeInline(ctx context.Context, c change, r account.Revocation, it *apiKeyItem, cs copyPlan) (time.Time, error) {
	if e, ok := it.Revoked[r.TokenID]; ok {
		// Nothing changed: no event, and the idempotency record stays
		// started.
		return time.Unix(0, e.RevokedAt).UTC(), nil
	}
	firstKey := apiKeyCopyKey(r.KeyID, 1)
	next, overflow := it.withRevocation(r)
	var keyItems []Write
	var err error
	if next == nil {
		check, err := s.check(firstKey, firstCopyIs(cs.first))
		if err != nil {
			return time.Time{}, err
		}
		keyItems = []Write{check}
	} else if keyItems, err = s.copyWrites(*next, cs); err != nil {
		return time.Time{}, err
	}
	entryCopies := cs.entryCopies(true)
	if overflow {
		entryCopies = cs.entryCopies(false)
	}
	at, err := s.revokeEntry(ctx, c, r, keyItems, entryCopies)
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
	next, overflow = it.withRevocation(first)
	if next == nil {
		return at, nil // full, and the overflow covers it already
	}
	keyItems, err = s.copyWrites(*next, cs)
	if err != nil {
		return time.Time{}, err
	}
	if overflow {
		// Full: the entry stays where it is, and the key's overflow moves
		// to cover it; its copies rewritten, which a verify then reads.
		puts, err := s.revocationCopyPuts(newRevocationItem(first), cs.entryCopies(false))
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

// withRevocation returns the key item it (copy 1, or the item of a key
// without copies) with r's revocation, and whether the revocation
// overflows (it is then the entry's copies that a verify reads). The
// revocations of tokens expired by r.RevokedAt are dropped, and so is an
// overflow that has ended. Nil, with overflow, when the copies need not
// change: they are full, and their overflow covers the token already
// (overflowCovers). The Version stays: a revocation does not change the key.
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
	n.Revoked = live
	if n.RevokedOverflowUntil != nil && !n.RevokedOverflowUntil.After(gone) {
		n.RevokedOverflowUntil, n.RevokedOverflowIssuedBefore = nil, nil
	}
	if len(live) < maxInlineRevocations {
		live[r.TokenID] = inlineRevocation{RevokedAt: r.RevokedAt.UnixNano(), ExpiresAt: r.ExpiresAt.Unix()}
		return &n, false
	}
	if n.overflowCovers(r) && len(live) == len(it.Revoked) && it.ReadCopies > 0 {
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
// read copies 1..entryCopies (see shards.go), and keyItems (revokeInline's
// writes of the key), in one transaction: the entry's Put is conditional
// and asks for the old item (ReturnValuesOnConditionCheckFailure), so
// when one exists the first revocation time comes back with the
// cancellation, without a second request. A repeated revocation of a token
// without the claim rewrites the copies of the entry in force, so that one
// made by a version that wrote none reaches every copy.
func (s *Store) revokeEntry(ctx context.Context, c change, r account.Revocation, keyItems []Write, entryCopies int) (time.Time, error) {
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
	puts, err := s.revocationCopyPuts(entry, entryCopies)
	if err != nil {
		return time.Time{}, err
	}
	items = append(items, puts...)
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
	puts, err = s.revocationCopyPuts(old, entryCopies)
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

// TokenStatus reads, in one strongly consistent BatchGetItem, verify
// copy n (see shards.go) of the issuing key, n at random among the key's
// copies (pickCopy), a copy of each of the ancestors and of the
// organization the token names and, for a token without the claim (inline
// false), copy n of its revocation entry: 1 request and 1 RCU for a token
// with the claim of a key without ancestors or organization (2 RCU
// without the claim; a TransactGetItems would cost twice as much), 1 more
// RCU per ancestor and for the organization. A token with the claim is
// revoked when its key's copy says so (apiKeyItem.Revoked); its entry's
// copy n is read only while the key has an overflow that may hold it
// (overflowMayHold: issued before RevokedOverflowUntil and not after the
// last token revoked that way): in the one BatchGetItem when this
// process's last verify of the key saw that overflow (overflowMemo), with
// a second one when it did not. A copy n that is not there (a reader that
// remembers more copies than the key has since it shrank, or a key
// without copies) sends the read to copy 1, and then to the key's item: a
// second BatchGetItem. The key's own Ancestors and OrganizationID decide:
// any the hints left out, and any copy that is missing, are read from the
// items themselves (checkKey).
func (s *Store) TokenStatus(ctx context.Context, tokenID, keyID string, ancestors []string, orgID string, inline bool) (account.TokenStatus, error) {
	return s.tokenStatus(ctx, s.pickCopy(keyID), tokenID, keyID, ancestors, orgID, inline)
}

// tokenStatus is TokenStatus reading copy n (1 at least) of the key, the
// same or one below each ancestor's number of copies (foldCopy), and n
// modulo readShards of the organization.
func (s *Store) tokenStatus(ctx context.Context, n int, tokenID, keyID string, ancestors []string, orgID string, inline bool) (account.TokenStatus, error) {
	n = max(n, 1)
	if len(ancestors) > account.MaxKeyAncestors {
		ancestors = nil // a hint, and not one this service wrote
	}
	keys := make([]key, 0, 3+len(ancestors))
	if !inline {
		keys = append(keys, revocationCopyKey(tokenID, n))
	}
	keys = append(keys, apiKeyCopyKey(keyID, n))
	for _, id := range ancestors {
		keys = append(keys, apiKeyCopyKey(id, s.foldCopy(id, n)))
	}
	if orgID != "" {
		keys = append(keys, orgCopyKey(orgID, n%readShards))
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
	for _, id := range ancestors {
		if _, ok := find(r.keys, id); !ok {
			s.copies.set(id, 1) // fewer copies than remembered, or none
		}
	}
	it, ok := find(r.keys, keyID)
	if o, read := find(r.orgs, orgID); !ok && read && o.Deleting {
		// Its organization's copy says it is going: so is the key (a
		// key's organization never changes, and its copies go with the
		// organization's delete, which leaves the organization's).
		return st, nil
	}
	if !ok {
		// Copy 1, which a key with copies always has, then the item of a
		// key without; and the entry itself, since copy n of the key
		// decides nothing about copy n of the entry.
		if it, ok, err = s.fallbackCopy(ctx, &st, &r, n, tokenID, keyID, inline); err != nil {
			return account.TokenStatus{}, err
		}
		n = 1
	} else if !inline && st.RevokedAt.IsZero() && !it.Deleting && (it.ReadCopies == 0 || it.EntryCopiesSince == nil || issuedBefore(tokenID, *it.EntryCopiesSince)) {
		// The entry itself when its copy n may not be the whole story: a
		// copy the previous release wrote, or a token issued before the
		// key's entry copies reached n.
		read, err := s.batchGet(ctx, []key{revocationKey(tokenID)})
		if err != nil {
			return account.TokenStatus{}, err
		}
		if err := s.addStatusRead(&st, read, nil); err != nil {
			return account.TokenStatus{}, err
		}
	}
	if !ok {
		s.copies.set(keyID, 1)
		return st, nil
	}
	for _, e := range r.keys {
		s.copiesSeen(e.id, e.item)
	}
	if e, held := it.Revoked[tokenID]; held && !inline && st.RevokedAt.IsZero() {
		// A token with the claim read by its entry: revoked on its key.
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

// fallbackCopy reads, for tokenStatus, what stands for the key's copy n
// that is not there: copy 1 (unless n is 1) and, for a token read by its
// entry, the entry itself, in one BatchGetItem; then, if copy 1 is not
// there either (a key without copies), the key's item.
func (s *Store) fallbackCopy(ctx context.Context, st *account.TokenStatus, r *related, n int, tokenID, keyID string, inline bool) (*apiKeyItem, bool, error) {
	more := []key{apiKeyKey(keyID)}
	if n != 1 {
		more[0] = apiKeyCopyKey(keyID, 1)
	}
	if !inline && st.RevokedAt.IsZero() {
		more = append(more, revocationKey(tokenID))
	}
	read, err := s.batchGet(ctx, more)
	if err != nil {
		return nil, false, err
	}
	if err := s.addStatusRead(st, read, r); err != nil {
		return nil, false, err
	}
	if it, ok := find(r.keys, keyID); ok || n == 1 {
		return it, ok, nil
	}
	read, err = s.batchGet(ctx, []key{apiKeyKey(keyID)})
	if err != nil {
		return nil, false, err
	}
	if err := s.addStatusRead(st, read, r); err != nil {
		return nil, false, err
	}
	it, ok := find(r.keys, keyID)
	return it, ok, nil
}

// inlineStatus sets st.RevokedAt for the token tokenID, which carries the
// claim, from its key's copy it: its inline revocation, or, while an
// overflow may hold it, copy n of its entry (the entry itself for a token
// issued before the entry's copies reached n), read with a second request
// unless entryRead (the first read it, and st has it then).
func (s *Store) inlineStatus(ctx context.Context, st *account.TokenStatus, it *apiKeyItem, tokenID string, n int, entryRead bool) error {
	if e, ok := it.Revoked[tokenID]; ok {
		st.RevokedAt = time.Unix(0, e.RevokedAt).UTC()
		return nil
	}
	if !it.overflowMayHold(tokenID) {
		return nil
	}
	k := revocationCopyKey(tokenID, n)
	if it.ReadCopies == 0 || it.EntryCopiesSince == nil || issuedBefore(tokenID, *it.EntryCopiesSince) {
		// The first request read copy n, which may lack it: the entry.
		k = revocationKey(tokenID)
	} else if entryRead {
		return nil
	}
	read, err := s.batchGet(ctx, []key{k})
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

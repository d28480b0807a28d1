package tablestore

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"latchkey/pkg/account"
)

// Status lists (account/statuslist.go), in two kinds of item:
//
//   - a list's lease item, STATUSLISTS / <list>: next, the indexes leased
//     so far, one ADD per block of account.StatusBlock; the partition lists
//     the live lists (the aggregation endpoint);
//   - its chunk items, STATUS#<list> / <chunk>, statusChunk indexes each,
//     holding only the entries that are not VALID: an attribute r<idx>
//     (INVALID, for good: a revocation, a revoke-all or a delete sets it
//     and nothing removes it) or d<idx> (SUSPENDED: set while the token's
//     key or a key above it is disabled, removed when it is enabled). r
//     wins over d, so a disable or an enable never touches an INVALID
//     entry, and the two never race each other.
//
// Both kinds expire (TTL) with the list, when every token of its window has
// expired. A single revocation sets r<idx> in its own transaction; a change
// of a key writes the entries of its tokens, and of the tokens of the keys
// below it, before it answers (docs/dynamodb.md, "Status lists").

const (
	// statusChunk is how many entries a chunk item covers: a chunk whose
	// every entry is set holds 1,024 attributes of at most 10 bytes, under
	// 11 KB, so that an update of it costs at most 11 WCU (DynamoDB bills
	// a write by the larger of the item before and after). A read of a
	// list costs its chunks' bytes, whatever their number.
	statusChunk = 1024
	// statusWriters is how many UpdateItems of a flip are in flight at
	// once.
	statusWriters = 8
	// maxStatusActions bounds the attributes one UpdateItem sets, so that
	// its expression stays well under DynamoDB's 4 KB.
	maxStatusActions = 100
	flagInvalid      = "r"
	flagSuspended    = "d"
)

// LeaseStatusIndexes adds n to the list's next with one UpdateItem, which
// also sets its TTL, and returns the new next.
func (s *Store) LeaseStatusIndexes(ctx context.Context, id string, n int64, expires time.Time) (int64, error) {
	w, err := s.update(statusLeaseKey(id), Update(nil).add("next", 0, n).set("expire_at", expires.Unix()), Cond{})
	if err != nil {
		return 0, err
	}
	it, err := s.port.Write(ctx, w, true)
	if err != nil {
		return 0, storeErr(err)
	}
	next, ok := it["next"].(N)
	if !ok {
		return 0, account.Internal(errors.New("tablestore: a status list lease without next"))
	}
	return int64(next), nil
}

// GetStatusList reads the list's lease item (its size) with a GetItem and
// its chunk items with a strongly consistent Query of its partition.
func (s *Store) GetStatusList(ctx context.Context, id string) (account.StatusList, error) {
	lease, err := s.getRaw(ctx, statusLeaseKey(id))
	if err != nil {
		return account.StatusList{}, err
	}
	next, ok := lease["next"].(N)
	if !ok {
		return account.StatusList{}, account.ErrStatusListNotFound()
	}
	l := account.StatusList{ID: id, Size: min(int64(next), account.MaxStatusListSize)}
	l.Statuses = make([]byte, (l.Size+3)/4)
	q := Query{Partition: prefixStatus + id, Forward: true, Consistent: true}
	err = s.queryPages(ctx, q, func(items []Item) (bool, error) {
		for _, it := range items {
			for name := range it {
				flag, i, ok := statusAttr(name)
				if !ok || i >= l.Size {
					continue
				}
				shift := uint(i%4) * account.StatusBits
				cur := l.Statuses[i/4] >> shift & 3
				if flag == flagInvalid || cur == account.StatusValid {
					st := byte(account.StatusSuspended)
					if flag == flagInvalid {
						st = account.StatusInvalid
					}
					l.Statuses[i/4] = l.Statuses[i/4]&^(3<<shift) | st<<shift
				}
			}
		}
		return true, nil
	})
	return l, err
}

// statusAttr parses an entry's attribute name, r<idx> or d<idx>.
func statusAttr(name string) (flag string, idx int64, ok bool) {
	if !strings.HasPrefix(name, flagInvalid) && !strings.HasPrefix(name, flagSuspended) {
		return "", 0, false
	}
	i, err := strconv.ParseInt(name[1:], 10, 64)
	return name[:1], i, err == nil && i >= 0
}

// ListStatusLists queries the STATUSLISTS partition and keeps the lists
// that have not retired (TTL deletes an item some time after).
func (s *Store) ListStatusLists(ctx context.Context, now time.Time) ([]string, error) {
	q := Query{Partition: pkStatusLists, Forward: true, Consistent: true}
	var ids []string
	err := s.queryPages(ctx, q, func(items []Item) (bool, error) {
		for _, it := range items {
			sk, _ := it["sk"].(S)
			exp, _ := it["expire_at"].(N)
			if int64(exp) > now.Unix() {
				ids = append(ids, string(sk))
			}
		}
		return true, nil
	})
	return ids, err
}

// statusFlip sets (on) or removes the flag of the entries refs.
type statusFlip struct {
	flag string
	on   bool
	refs []account.StatusRef
}

// statusWrites returns the UpdateItems of f: one per chunk item and
// maxStatusActions entries, each also setting the chunk's TTL.
func (s *Store) statusWrites(f statusFlip) ([]Write, error) {
	refs := slices.Clone(f.refs)
	slices.SortFunc(refs, func(a, b account.StatusRef) int {
		if c := strings.Compare(a.List, b.List); c != 0 {
			return c
		}
		return int(a.Index - b.Index)
	})
	var out []Write
	for len(refs) > 0 {
		first := refs[0]
		chunk := first.Index / statusChunk
		upd := set("expire_at", account.StatusListExpiry(first.List).Unix())
		n := 0
		for n < len(refs) && n < maxStatusActions && refs[n].List == first.List && refs[n].Index/statusChunk == chunk {
			name := f.flag + strconv.FormatInt(refs[n].Index, 10)
			if f.on {
				upd = upd.set(name, 1)
			} else {
				upd = upd.remove(name)
			}
			n++
		}
		w, err := s.update(statusChunkKey(first.List, chunk), upd, Cond{})
		if err != nil {
			return nil, err
		}
		out = append(out, w)
		refs = refs[n:]
	}
	return out, nil
}

// flipStatuses makes the writes of flips, one UpdateItem each,
// statusWriters at a time; the first error, once all have ended.
func (s *Store) flipStatuses(ctx context.Context, flips ...statusFlip) error {
	var ws []Write
	for _, f := range flips {
		more, err := s.statusWrites(f)
		if err != nil {
			return err
		}
		ws = append(ws, more...)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		slots = make(chan struct{}, statusWriters)
	)
	for _, w := range ws {
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			if _, err := s.port.Write(ctx, w, false); err != nil {
				mu.Lock()
				first = cmp.Or(first, storeErr(err))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return first
}

// revocationFlip returns the write that marks r's token INVALID, for the
// revocation's transaction; none for a token without an entry.
func (s *Store) revocationFlip(r account.Revocation) ([]Write, error) {
	if r.Status == nil {
		return nil, nil
	}
	return s.statusWrites(statusFlip{flag: flagInvalid, on: true, refs: []account.StatusRef{*r.Status}})
}

// liveTokenSince is how far back a key's token records are read: no token
// issued before is live.
func liveTokenSince(now time.Time) time.Time {
	return now.Add(-account.MaxTokenLifetime - time.Minute)
}

// keyTokenRefs returns the entries of the tokens of the key id issued
// from since until until (inclusive, by the time of their IDs), with one
// strongly consistent Query of the TOKEN# records in its partition,
// projected to their entries.
func (s *Store) keyTokenRefs(ctx context.Context, id string, since, until time.Time) ([]account.StatusRef, error) {
	low := prefixToken + account.FirstID(account.PrefixToken, since)
	refs, _, err := s.keyTokenRefsFrom(ctx, id, low, until)
	return refs, err
}

// keyTokenRefsFrom is keyTokenRefs from the sort key low on, and also
// returns the sort key of the last record read ("" for none).
func (s *Store) keyTokenRefsFrom(ctx context.Context, id, low string, until time.Time) ([]account.StatusRef, string, error) {
	high := prefixToken + account.FirstID(account.PrefixToken, until.Add(time.Millisecond))
	q := Query{
		Partition: apiKeyKey(id).PK, Range: Range{Op: OpBetween, Values: []string{low, high}},
		Names: []string{"sk", "status_list", "status_idx"}, Forward: true, Consistent: true,
	}
	var refs []account.StatusRef
	var last string
	err := s.queryPages(ctx, q, func(items []Item) (bool, error) {
		for _, it := range items {
			sk, _ := it["sk"].(S)
			last = string(sk)
			list, _ := it["status_list"].(S)
			idx, ok := it["status_idx"].(N)
			if ok && list != "" {
				refs = append(refs, account.StatusRef{List: string(list), Index: int64(idx)})
			}
		}
		return true, nil
	})
	return refs, last, err
}

// invalidateKeyTokens marks INVALID the entries of the tokens of the keys
// ids, their keys deleted: those issued from since on, or, for a key that
// read names, those after the record it names. It returns, per key, the
// last record it read, for a later pass to go on after it.
func (s *Store) invalidateKeyTokens(ctx context.Context, ids []string, since time.Time, read map[string]string) (map[string]string, error) {
	var refs []account.StatusRef
	out := make(map[string]string, len(ids))
	for _, id := range ids {
		low := prefixToken + account.FirstID(account.PrefixToken, since)
		if last := read[id]; last != "" {
			low = max(low, last+"\x00") // after it
		}
		r, last, err := s.keyTokenRefsFrom(ctx, id, low, time.Now().Add(time.Hour))
		if err != nil {
			return nil, err
		}
		out[id] = max(last, read[id])
		refs = append(refs, r...)
	}
	return out, s.flipStatuses(ctx, statusFlip{flag: flagInvalid, on: true, refs: refs})
}

// revokedKeyTokens marks INVALID the entries of the tokens of the key k
// that its TokensRevokedBefore revokes.
func (s *Store) revokedKeyTokens(ctx context.Context, k account.APIKey) error {
	if k.TokensRevokedBefore.IsZero() {
		return nil
	}
	refs, err := s.keyTokenRefs(ctx, k.ID, liveTokenSince(time.Now()), k.TokensRevokedBefore)
	if err != nil {
		return err
	}
	return s.flipStatuses(ctx, statusFlip{flag: flagInvalid, on: true, refs: refs})
}

// suspendedKeyTokens sets the SUSPENDED flag of every live token of the key
// k and of the keys below it as their keys now are: set where the key or
// one above it is disabled, removed elsewhere. It reads the tree (one
// strongly consistent Query per key, and one of its tokens), writes the
// flags, then reads the keys again, and the ancestors of k: if any changed
// meanwhile (another disable or enable, a key created), it starts over, so
// that of two changes racing, the flags the later one wrote are the ones
// that stay.
func (s *Store) suspendedKeyTokens(ctx context.Context, k account.APIKey) error {
	for attempt := 0; ; attempt++ {
		versions := map[string]keyVersion{}
		var on, off []account.StatusRef
		var walk func(id string, pausedAbove bool) error
		walk = func(id string, pausedAbove bool) error {
			n, err := s.readKeyNode(ctx, id)
			if err != nil || n.item == nil || n.item.Deleting {
				return err
			}
			versions[id] = keyVersion{n.item.Version, n.item.Children}
			paused := pausedAbove || n.item.Disabled
			refs, err := s.keyTokenRefs(ctx, id, liveTokenSince(time.Now()), time.Now().Add(time.Hour))
			if err != nil {
				return err
			}
			if paused {
				on = append(on, refs...)
			} else {
				off = append(off, refs...)
			}
			for _, c := range n.children {
				if err := walk(c, paused); err != nil {
					return err
				}
			}
			return nil
		}
		above, err := s.readVersions(ctx, k.Ancestors)
		if err != nil {
			return err
		}
		if err := walk(k.ID, k.DisabledAbove); err != nil {
			return err
		}
		if err := s.flipStatuses(ctx, statusFlip{flagSuspended, true, on}, statusFlip{flagSuspended, false, off}); err != nil {
			return err
		}
		ids := append(slices.Clone(k.Ancestors), mapsKeys(versions)...)
		now, err := s.readVersions(ctx, ids)
		if err != nil {
			return err
		}
		same := true
		for id, v := range now {
			if w, ok := versions[id]; ok && w != v || !ok && above[id] != v {
				same = false
			}
		}
		if same || attempt >= s.conflictRetries {
			return nil
		}
	}
}

// readVersions reads the items of the keys ids with a strongly consistent
// BatchGetItem and returns, per key, its version and children.
func (s *Store) readVersions(ctx context.Context, ids []string) (map[string]keyVersion, error) {
	keys := make([]key, len(ids))
	for i, id := range ids {
		keys[i] = apiKeyKey(id)
	}
	read, err := s.batchGet(ctx, keys)
	if err != nil {
		return nil, err
	}
	out := make(map[string]keyVersion, len(read))
	for _, av := range read {
		var it apiKeyItem
		if err := unmarshal(av, &it); err != nil {
			return nil, err
		}
		out[it.KeyID] = keyVersion{it.Version, it.Children}
	}
	return out, nil
}

// keyVersion is what changes when a key, or the set of keys below it, does.
type keyVersion struct{ version, children int }

func mapsKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// keyStatuses writes what the change p, made, did to the status list
// entries of the tokens of the key k (as p left it) and of the keys below:
// a revoke-all marks its tokens INVALID, a disable or an enable sets their
// SUSPENDED flags again. If the request ends before this is done, the
// change is made but the lists lag behind it: repeating the request (a
// client retries a 5xx) writes them again.
func (s *Store) keyStatuses(ctx context.Context, k account.APIKey, p account.APIKeyPatch) error {
	if p.RevokeTokens {
		if err := s.revokedKeyTokens(ctx, k); err != nil {
			return err
		}
	}
	if p.Disabled != nil {
		return s.suspendedKeyTokens(ctx, k)
	}
	return nil
}

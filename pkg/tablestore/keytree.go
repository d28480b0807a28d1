package tablestore

import (
	"context"
	"errors"
	"strings"
	"time"

	"latchkey/pkg/account"
)

// Deleting an API key deletes every key below it: the keys it created, the
// keys those created, and so on. Each key is up to three items: its item
// under its ID, its copy under its hash, and its link in its parent's
// partition. docs/dynamodb.md ("Deleting a tree of API keys") tells the
// whole story; in short:
//
//   - The tree is walked depth first with one strongly consistent Query per
//     key (its partition holds its item and the links of its children), and
//     a key's items are queued for deletion after those of every key below
//     it, so that any prefix of the queue deletes whole subtrees: a delete
//     cut off anywhere leaves a tree that a retry, starting again from the
//     root, walks completely.
//   - Up to maxTreeKeys keys, root included, everything is one transaction.
//   - Beyond that, the root's two copies are first flagged deleting, in one
//     transaction. From then on the root and every key below it are gone to
//     readers (checkKey: a key is live only if no ancestor is flagged), and
//     no key can be created below the root. Then the queue is deleted
//     maxTreeKeys keys to a transaction, and the root last.
//   - Every transaction deletes a key's item only if its Children count is
//     the one the walk read: a key created below it meanwhile (by a request
//     authenticated a moment before) cancels the transaction, and the delete
//     starts again from the root, which finds the new key. A create after
//     the key's item is gone fails, since it needs the parent.

const (
	// maxKeyItems is the most items that delete one key: its item, its
	// copy under its hash, the copy under its previous hash (see
	// apiKeyItem.PreviousHash), its links in its parent's, organization's
	// and owner's partitions, its last use (KEYUSE#) and its read copies
	// (see shards.go).
	maxKeyItems = 7 + maxReadCopies
	// keyItems is what deleting a key below another takes without a
	// previous secret: its item, its copy, its link, its last use and its
	// read copies.
	keyItems = 4 + maxReadCopies
	// keyEvent is the most items of a key's api_key.deleted event, which
	// goes into the transaction that deletes the key: the event, and its
	// organization's copy for a key bound to one (see events.go).
	keyEvent = 2
	// treeRoom is what a transaction of the queue may hold: room is left
	// for one more key of maxKeyItems with its event and for the
	// idempotency record, so that the last transaction always holds the
	// root, its event and the record.
	treeRoom = maxTransactItems - maxKeyItems - keyEvent - 1
	// maxTreeKeys is how many keys of keyItems (and their events, bound
	// to no organization) one transaction deletes.
	maxTreeKeys = treeRoom/(keyItems+1) + 1
)

// errTreeChanged cancels a pass of DeleteAPIKey whose transaction found a
// key other than the walk read it: a key created below it meanwhile, or a
// key gone (TTL, another delete). The next pass reads the tree again.
var errTreeChanged = errors.New("tablestore: the key tree changed during the delete")

// DeleteAPIKey deletes the key id and every key below it; see above and
// docs/dynamodb.md. allow sees the key as read by the first Query (also a
// key whose delete was cut off, so that calling DeleteAPIKey again finishes
// it). A pass cancelled by a concurrent change is repeated, at most
// WithConflictRetries times, then the store reports CodeConcurrentUpdate.
// CodeNotFound if there is no key id or one of its ancestors is being
// deleted.
func (s *Store) DeleteAPIKey(ctx context.Context, opts account.WriteOptions, id string, allow func(account.APIKey) error) error {
	for attempt := 0; ; attempt++ {
		err := s.deleteKeyTree(ctx, newChange(opts), id, allow)
		if !errors.Is(err, errTreeChanged) {
			return err
		}
		if attempt >= s.conflictRetries {
			return account.ErrConcurrentUpdate("API key")
		}
	}
}

// keyNode is one key of a tree as a strongly consistent Query of its
// partition found it.
type keyNode struct {
	id string
	// item is the key's item under its ID; nil if it is gone (expired and
	// removed by TTL before its links were).
	item *apiKeyItem
	// children are the IDs of the keys linked below it.
	children []string
}

// readKeyNode reads the partition of the key id: its item and its links,
// which sort before its token records (CHILD# < KEY < TOKEN#), read by no
// delete: they expire with their tokens (TTL), and nothing lists the
// tokens of a key that is gone.
func (s *Store) readKeyNode(ctx context.Context, id string) (keyNode, error) {
	q := Query{Partition: apiKeyKey(id).PK, Range: Range{Op: OpLessEqual, Values: []string{sortKey}}, Forward: true, Consistent: true}
	n := keyNode{id: id}
	err := s.queryPages(ctx, q, func(items []Item) (bool, error) {
		for _, av := range items {
			k, err := keyOf(av)
			if err != nil {
				return false, err
			}
			switch {
			case k.SK == sortKey:
				var it apiKeyItem
				if err := unmarshal(av, &it); err != nil {
					return false, err
				}
				n.item = &it
			case strings.HasPrefix(k.SK, prefixChild):
				n.children = append(n.children, idFrom(k.SK, prefixChild))
			}
		}
		return true, nil
	})
	return n, err
}

// treeDelete is one pass of DeleteAPIKey.
type treeDelete struct {
	s    *Store
	root keyNode
	// change is the caller's: its last transaction commits the record.
	change change
	// flagged is set once the root's copies carry deleting.
	flagged bool
	// queue holds, per key, the items that delete it, children first;
	// events their events; items counts both.
	queue  [][]Write
	events []account.PendingEvent
	items  int
	// ids are the keys below the root that the walk found.
	ids []string
}

// event returns the event of deleting the key n.
func (n keyNode) event() []account.PendingEvent {
	if n.item == nil {
		return nil
	}
	return []account.PendingEvent{{Type: account.EventAPIKeyDeleted, Data: n.item.apiKey()}}
}

// eventItems is what the key's api_key.deleted event takes in a
// transaction, counted whether the delete records events or not, so that
// the chunks are the same either way: the event, and its organization's
// copy for a key bound to one (see events.go). At most keyEvent.
func (n keyNode) eventItems() int {
	if n.item != nil && n.item.OrganizationID != "" {
		return keyEvent
	}
	return 1
}

// deleteKeyTree is one pass of DeleteAPIKey: errTreeChanged if the tree
// changed under it.
func (s *Store) deleteKeyTree(ctx context.Context, c change, id string, allow func(account.APIKey) error) error {
	root, err := s.readKeyNode(ctx, id)
	if err != nil {
		return err
	}
	if root.item == nil {
		return account.ErrAPIKeyNotFound()
	}
	// The root's own flag does not matter here: that is a delete to finish.
	it := *root.item
	it.Deleting = false
	_, live, err := s.checkKey(ctx, &it, nil)
	if err != nil {
		return err
	}
	if !live {
		return account.ErrAPIKeyNotFound() // it goes with the ancestor being deleted
	}
	if allow != nil {
		if err := allow(root.item.apiKey()); err != nil {
			return err
		}
	}
	d := &treeDelete{s: s, root: root, change: c, flagged: root.item.Deleting}
	if err := d.walk(ctx, root); err != nil {
		return err
	}
	items, err := d.deletes(root, parentOf(*root.item))
	if err != nil {
		return err
	}
	// The status list entries of the tree's tokens go INVALID before the
	// last transaction (a request cut off in between leaves the key, whose
	// delete a retry finishes, and entries that say what it will do), and
	// again after it for the tokens issued meanwhile.
	ids := append([]string{root.id}, d.ids...)
	start := time.Now()
	read, err := s.invalidateKeyTokens(ctx, ids, liveTokenSince(start), nil)
	if err != nil {
		return err
	}
	if err := d.transact(ctx, d.change, d.queued(items), append(root.event(), d.events...)); err != nil {
		return err
	}
	_, err = s.invalidateKeyTokens(ctx, ids, start.Add(-time.Second), read)
	return err
}

// parentOf returns the ID of the key's parent, or "" if it has none (it was
// created by a bootstrap key, which is nobody's ancestor).
func parentOf(it apiKeyItem) string {
	if n := len(it.Ancestors); n > 0 {
		return it.Ancestors[n-1]
	}
	return ""
}

// walk queues the keys below n, each after the keys below it, and deletes
// the queue whenever it has no room left for one more key (maxKeyItems)
// and the idempotency record, flagging the root first.
func (d *treeDelete) walk(ctx context.Context, n keyNode) error {
	for _, id := range n.children {
		child, err := d.s.readKeyNode(ctx, id)
		if err != nil {
			return err
		}
		d.ids = append(d.ids, id)
		if err := d.walk(ctx, child); err != nil {
			return err
		}
		dels, err := d.deletes(child, n.id)
		if err != nil {
			return err
		}
		d.queue = append(d.queue, dels)
		d.events = append(d.events, child.event()...)
		d.items += len(dels) + child.eventItems()
		if d.items <= treeRoom {
			continue
		}
		// Not the last transaction: the idempotency record goes with the
		// last, which deletes the root (maxTreeKeys leaves it room).
		if !d.flagged {
			if err := d.flag(ctx); err != nil {
				return err
			}
		}
		if err := d.transact(ctx, d.change.withoutCommit(), d.queued(nil), d.events); err != nil {
			return err
		}
		d.queue, d.events, d.items = d.queue[:0], nil, 0
	}
	return nil
}

// deletes returns the items that delete the key n, linked below parent (""
// for none). Its item goes only if its Children count and its Version are
// the ones read (a change meanwhile, such as a new secret, may have added
// a copy that the walk did not see), and for the root only if it is still
// there.
func (d *treeDelete) deletes(n keyNode, parent string) ([]Write, error) {
	var steps []func() (Write, error)
	if n.item != nil {
		cond := attr("children").NotExists()
		if n.item.Children > 0 {
			cond = attr("children").Equal(n.item.Children)
		}
		cond = cond.And(versionIs(n.item.Version))
		if n.id == d.root.id {
			cond = condPresent.And(cond)
		}
		hash := n.item.Hash
		steps = append(steps,
			func() (Write, error) { return d.s.del(apiKeyKey(n.id), cond) },
			func() (Write, error) { return d.s.del(keyHashKey(hash), Cond{}) },
		)
		if previous := n.item.PreviousHash; previous != nil {
			steps = append(steps, func() (Write, error) { return d.s.del(keyHashKey(previous), Cond{}) })
		}
		for _, l := range n.item.linkKeys() {
			steps = append(steps, func() (Write, error) { return d.s.del(l, Cond{}) })
		}
	}
	if parent != "" {
		steps = append(steps, func() (Write, error) { return d.s.del(keyLinkKey(parent, n.id), Cond{}) })
	}
	steps = append(steps, func() (Write, error) { return d.s.del(keyUseKey(n.id), Cond{}) })
	items, err := build(steps...)
	if err != nil {
		return nil, err
	}
	// Tombstones in place of the read copies: a verify of one of the
	// key's tokens still learns in one BatchGetItem that it is gone. A
	// key whose item is gone already has only copies to drop.
	var copies []Write
	if n.item != nil {
		copies, err = d.s.keyTombstones(n.id, time.Now())
	} else {
		copies, err = d.s.dels(keyCopyKeys(n.id))
	}
	return append(items, copies...), err
}

// queued appends the items of the queue to items.
func (d *treeDelete) queued(items []Write) []Write {
	for _, q := range d.queue {
		items = append(items, q...)
	}
	return items
}

// flag sets deleting on every copy of the root, in one transaction: from
// then on the root and every key below it are gone to readers, and no key
// can be created below, nor change, the root. It is conditional on the
// root's version, so that the copies flagged are the copies there are: a
// new secret since the walk makes the delete start over. It is not the
// last transaction of the delete, and records no event.
func (d *treeDelete) flag(ctx context.Context) error {
	set := set("deleting", true)
	steps := []func() (Write, error){
		func() (Write, error) {
			return d.s.update(apiKeyKey(d.root.id), set, condPresent.And(versionIs(d.root.item.Version)))
		},
		func() (Write, error) {
			return d.s.update(keyHashKey(d.root.item.Hash), set, condPresent)
		},
	}
	if d.root.item.PreviousHash != nil {
		// A Put, not an update: the copy may be gone already (TTL, once
		// its grace period has ended); the delete removes it at its end.
		previous := d.root.item.previousCopy()
		previous.Deleting = true
		steps = append(steps, func() (Write, error) { return d.s.putAlways(previous) })
	}
	items, err := build(steps...)
	if err != nil {
		return err
	}
	// The read copies too, so that a verify reading any of them sees it.
	root := *d.root.item
	root.Deleting = true
	copies, err := d.s.keyCopyPuts(root)
	if err != nil {
		return err
	}
	items = append(items, copies...)
	if err := d.s.transact(ctx, d.change.withoutCommit(), items, errTreeChanged, errTreeChanged); err != nil {
		return err
	}
	d.flagged = true
	return nil
}

// transact runs one transaction of the delete, of c with the events of the
// keys it deletes; a failed condition, on any item, is errTreeChanged.
func (d *treeDelete) transact(ctx context.Context, c change, items []Write, events []account.PendingEvent) error {
	onCheckFailed := make([]error, len(items))
	for i := range onCheckFailed {
		onCheckFailed[i] = errTreeChanged
	}
	return d.s.transact(ctx, c.with(events...), items, onCheckFailed...)
}

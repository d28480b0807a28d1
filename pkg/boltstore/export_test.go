package boltstore

import (
	"bytes"

	bolt "go.etcd.io/bbolt"
)

// SetBeforeCommit installs a hook that runs in the transaction of every
// write that commits an idempotency record, after the change and the
// record are written and before the commit: an error it returns is a fault
// between the two, which must leave neither.
func (s *Store) SetBeforeCommit(fn func() error) { s.beforeCommit = fn }

// OrgEventEntries returns how many entries bucketOrgEvents holds for the
// organization orgID.
func (s *Store) OrgEventEntries(orgID string) (int, error) {
	n := 0
	err := s.read(func(tx *bolt.Tx) error {
		prefix := join(orgID, "")
		c := tx.Bucket(bucketOrgEvents).Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			n++
		}
		return nil
	})
	return n, err
}

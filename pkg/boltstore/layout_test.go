package boltstore_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"latchkey/pkg/boltstore"
)

// TestOpen_OldLayout: a file of the embedded store's earlier layout (a
// bucket per entity) is refused with ErrOldLayout naming the file, not
// opened as an empty store; a file with only the empty buckets of that
// layout opens.
func TestOpen_OldLayout(t *testing.T) {
	t.Parallel()
	write := func(t *testing.T, withUser bool) string {
		t.Helper()
		path := filepath.Join(t.TempDir(), "latchkey.db")
		db, err := bolt.Open(path, 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		err = db.Update(func(tx *bolt.Tx) error {
			b, err := tx.CreateBucketIfNotExists([]byte("users"))
			if err != nil || !withUser {
				return err
			}
			return b.Put([]byte("usr_01KF0E7ST00000000000000003"), []byte(`{"email":"ada@example.com"}`))
		})
		if err := errors.Join(err, db.Close()); err != nil {
			t.Fatal(err)
		}
		return path
	}
	t.Run("WithData", func(t *testing.T) {
		path := write(t, true)
		s, err := boltstore.Open(path)
		if err == nil {
			s.Close()
		}
		if !errors.Is(err, boltstore.ErrOldLayout) || !strings.Contains(err.Error(), path) {
			t.Fatalf("Open of a file of the earlier layout: got %v, want ErrOldLayout naming %s", err, path)
		}
		// Refused, and closed: the file is free.
		if _, err := boltstore.Open(path); !errors.Is(err, boltstore.ErrOldLayout) {
			t.Fatalf("second Open: got %v, want ErrOldLayout again (not ErrInUse)", err)
		}
	})
	t.Run("Empty", func(t *testing.T) {
		s, err := boltstore.Open(write(t, false))
		if err != nil {
			t.Fatalf("Open of empty buckets of the earlier layout: %v", err)
		}
		s.Close()
	})
}

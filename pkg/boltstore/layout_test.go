package boltstore_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"latchkey/pkg/boltstore"
)

// TestOpen_OldLayout: a file of the embedded store's earlier layout (a
// bucket per entity) is found read-only, by any of its buckets that holds
// anything, before anything is written to it: one that cannot be
// converted (here a token record that is not JSON) fails with
// ErrOldLayout naming the file, and the file is as it was, byte for byte,
// with no backup and no half-written new file beside it. A file with only
// the empty buckets of that layout opens.
func TestOpen_OldLayout(t *testing.T) {
	t.Parallel()
	write := func(t *testing.T, withToken bool) string {
		t.Helper()
		path := filepath.Join(t.TempDir(), "latchkey.db")
		db, err := bolt.Open(path, 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		err = db.Update(func(tx *bolt.Tx) error {
			if _, err := tx.CreateBucketIfNotExists([]byte("users")); err != nil {
				return err
			}
			b, err := tx.CreateBucketIfNotExists([]byte("tokens"))
			if err != nil || !withToken {
				return err
			}
			return b.Put([]byte("tok_01KF0E7ST00000000000000003"), []byte(`{"id":`))
		})
		if err := errors.Join(err, db.Close()); err != nil {
			t.Fatal(err)
		}
		return path
	}
	t.Run("Unconvertible", func(t *testing.T) {
		path := write(t, true)
		before, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		s, err := boltstore.Open(path)
		if err == nil {
			s.Close()
		}
		if !errors.Is(err, boltstore.ErrOldLayout) || !strings.Contains(err.Error(), path) {
			t.Fatalf("Open of a file of the earlier layout it cannot convert: got %v, want ErrOldLayout naming %s", err, path)
		}
		after, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(before, after) {
			t.Errorf("the file changed (%d bytes, then %d; %v)", len(before), len(after), err)
		}
		for _, other := range []string{path + boltstore.BackupSuffix, path + ".migrating"} {
			if _, err := os.Stat(other); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s: %v, want no such file", other, err)
			}
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

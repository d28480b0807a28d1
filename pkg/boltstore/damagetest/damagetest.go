// Package damagetest damages a bbolt file the ways a disk or a copy does,
// for the tests of boltstore's file check and of the local server's
// refusal of a damaged data file.
package damagetest

import (
	"errors"
	"math/rand/v2"
	"os"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// pageSize is bbolt's page size on the machines the tests run on.
const pageSize = 4096

// Pages overwrites n pages in the middle of the file with random bytes,
// as a failing disk or a stray write would.
func Pages(t testing.TB, path string, n int) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	overwrite(t, path, fi.Size()/2/pageSize*pageSize, n)
}

// CutToHalf cuts the file to half its size, as a copy cut short would.
func CutToHalf(t testing.TB, path string) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, fi.Size()/2); err != nil {
		t.Fatal(err)
	}
}

// UnreadPage adds a bucket the store never reads to the file and
// overwrites its one page with garbage: damage that only a check of every
// page finds.
func UnreadPage(t testing.TB, path string) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	var root uint64
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket([]byte("not the store's"))
		if err != nil {
			return err
		}
		return b.Put([]byte("k"), make([]byte, 2048)) // too big to be inline
	})
	if err == nil {
		err = db.View(func(tx *bolt.Tx) error {
			root = uint64(tx.Bucket([]byte("not the store's")).RootPage())
			return nil
		})
	}
	if err := errors.Join(err, db.Close()); err != nil || root == 0 {
		t.Fatalf("root page %d, %v", root, err)
	}
	overwrite(t, path, int64(root)*pageSize, 1)
}

// overwrite writes n pages of random bytes (the same on every run) at off.
func overwrite(t testing.TB, path string, off int64, n int) {
	t.Helper()
	garbage := make([]byte, n*pageSize)
	rand.NewChaCha8([32]byte{29}).Read(garbage)
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteAt(garbage, off)
	if err := errors.Join(err, f.Close()); err != nil {
		t.Fatal(err)
	}
}

package boltstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"

	"latchkey/pkg/boltstore/oldlayout"
	"latchkey/pkg/tablestore"
)

// BackupSuffix names the copy of a file of the earlier layout that Open
// keeps when it converts it: latchkey.db becomes latchkey.db.pre-table,
// never deleted, and a new latchkey.db holds the data.
const BackupSuffix = ".pre-table"

// ErrOldLayout is the error of Open on a file of the embedded store's
// earlier layout that it could not convert; the file is as it was.
var ErrOldLayout = errors.New("the file holds data in the embedded store's earlier layout and could not be converted; it is unchanged")

// Migration is what Open did with a file of the earlier layout.
type Migration struct {
	Path, Backup string
	oldlayout.Counts
}

// migrate converts the file of the earlier layout at path: it reads the
// old file read-only, writes everything into a new file next to it
// (path.migrating) through the store's own methods, keeps the old file as
// path+BackupSuffix (a hard link, or a copy where the file system has
// none), and renames the new file over path. Until that rename the file
// at path is the old one, untouched: a failure or a crash before it
// leaves the old file to be converted again at the next Open.
func migrate(path string, done func(Migration)) (err error) {
	tmp := path + ".migrating"
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	defer func() {
		if err != nil {
			os.Remove(tmp) // ours, and half-written
			err = fmt.Errorf("%w: %w", ErrOldLayout, err)
		}
	}()
	old, err := openFileWith(path, &bolt.Options{ReadOnly: true})
	if err != nil {
		return err
	}
	defer old.Close()
	t, err := OpenTable(tmp, WithTTL(tablestore.TTLAttribute), WithSweepInterval(0))
	if err != nil {
		return err
	}
	s := tablestore.New(t.Port(), tablestore.WithSerialWrites())
	var counts oldlayout.Counts
	err = old.View(func(tx *bolt.Tx) error {
		var err error
		counts, err = oldlayout.Copy(context.Background(), tx, s, time.Now())
		return err
	})
	if err := errors.Join(err, s.Close()); err != nil {
		return err
	}
	backup := path + BackupSuffix
	if err := keep(path, backup); err != nil {
		return fmt.Errorf("keep the old file as %s: %w", backup, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	syncDir(filepath.Dir(path))
	if done != nil {
		done(Migration{Path: path, Backup: backup, Counts: counts})
	}
	return nil
}

// keep makes backup a second name of the file at path, or a copy of it.
// A backup that is that file already (an earlier conversion cut off
// before its rename) will do.
func keep(path, backup string) error {
	err := os.Link(path, backup)
	if errors.Is(err, fs.ErrExist) {
		a, errA := os.Stat(path)
		b, errB := os.Stat(backup)
		if errA == nil && errB == nil && os.SameFile(a, b) {
			return nil
		}
		return err // something else of that name: not ours to replace
	}
	if err == nil {
		return nil
	}
	src, err := os.Open(path)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(backup, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(dst, src)
	if err = errors.Join(err, dst.Sync(), dst.Close()); err != nil {
		os.Remove(backup)
	}
	return err
}

// syncDir makes a rename in dir durable, where the system can.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}

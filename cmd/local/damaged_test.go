package main_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"latchkey/pkg/account"
	"latchkey/pkg/boltstore"
)

// filledDataDir is a data directory whose latchkey.db holds 2,000 users
// (a file of some megabytes), written through the store.
func filledDataDir(t *testing.T) (dataDir, file string) {
	t.Helper()
	dataDir = filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(dataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	file = filepath.Join(dataDir, "latchkey.db")
	s, err := boltstore.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Go(func() {
			for i := range 250 {
				u := account.User{ID: account.NewID(account.PrefixUser, now), Email: fmt.Sprintf("user-%d-%d@example.com", w, i),
					Name: strings.Repeat("n", 200), Role: "member", CreatedAt: now, UpdatedAt: now}
				if err := s.CreateUser(t.Context(), u); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := errors.Join(<-errs, s.Close()); err != nil {
		t.Fatal(err)
	}
	return dataDir, file
}

// overwriteMiddle writes 16 pages of random bytes over the middle of file.
func overwriteMiddle(t *testing.T, file string) {
	t.Helper()
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	garbage := make([]byte, 16*4096)
	rand.NewChaCha8([32]byte{29}).Read(garbage)
	f, err := os.OpenFile(file, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteAt(garbage, fi.Size()/2/4096*4096)
	if err := errors.Join(err, f.Close()); err != nil {
		t.Fatal(err)
	}
}

// damageUnreadPage adds a bucket the store never reads to the file and
// overwrites its one page with garbage: damage that only the check finds.
func damageUnreadPage(t *testing.T, file string) {
	t.Helper()
	db, err := bolt.Open(file, 0o600, nil)
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
	garbage := make([]byte, 4096)
	rand.NewChaCha8([32]byte{29}).Read(garbage)
	f, err := os.OpenFile(file, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteAt(garbage, int64(root)*4096)
	if err := errors.Join(err, f.Close()); err != nil {
		t.Fatal(err)
	}
}

// TestServer_DamagedDataFile: a latchkey.db with pages overwritten, or cut
// to half its size, stops the server before it serves anything (status
// 1, no admin key printed, never "listening"), with one log line that
// names the file and says what to do. With CHECK_DATA_FILE=false the
// server starts on a file whose damage it does not read at start (the
// check is skipped), but a file cut short is refused all the same.
func TestServer_DamagedDataFile(t *testing.T) {
	t.Parallel()
	truncate := func(t *testing.T, file string) {
		fi, err := os.Stat(file)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(file, fi.Size()/2); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name   string
		damage func(*testing.T, string)
		env    []string
	}{
		{"16PagesOfGarbage", overwriteMiddle, nil},
		{"TruncatedToHalf", truncate, nil},
		{"DamagedPageUnread", damageUnreadPage, nil},
		{"TruncatedToHalfUnchecked", truncate, []string{"CHECK_DATA_FILE=false"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dataDir, file := filledDataDir(t)
			c.damage(t, file)
			stdout, stderr, err := runToExit(t, exec.Command(binary), dataDir, c.env...)
			if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != 1 {
				t.Fatalf("exit: got %v, want status 1\n%s", err, stderr)
			}
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			if len(lines) != 1 || stdout != "" {
				t.Fatalf("stdout %q, log:\n%s\nwant no output and one log line", stdout, stderr)
			}
			for _, want := range []string{`"level":"ERROR"`, file + ": the file is damaged", "restore it from a backup", "mv " + file + " " + file + ".damaged"} {
				if !strings.Contains(lines[0], want) {
					t.Errorf("the log line lacks %q:\n%s", want, lines[0])
				}
			}
		})
	}
	// A damaged page the server reads at start would stop it unchecked
	// too, though with a panic's trace: this one it never reads.
	t.Run("DamagedPageUnreadUnchecked", func(t *testing.T) {
		t.Parallel()
		dataDir, file := filledDataDir(t)
		damageUnreadPage(t, file)
		start(t, dataDir, "CHECK_DATA_FILE=false")
	})
}

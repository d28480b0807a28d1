package main_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"latchkey/pkg/account"
	"latchkey/pkg/boltstore"
	"latchkey/pkg/boltstore/damagetest"
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
				if err := s.CreateUser(t.Context(), account.WriteOptions{}, u); err != nil {
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

// TestServer_DamagedDataFile: a latchkey.db with pages overwritten, or cut
// to half its size, stops the server before it serves anything (status
// 1, no admin key printed, never "listening"), with one log line that
// names the file and says what to do. With CHECK_DATA_FILE=false the
// server starts on a file whose damage it does not read at start (the
// check is skipped), but a file cut short is refused all the same.
func TestServer_DamagedDataFile(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		damage func(testing.TB, string)
		env    []string
	}{
		{"16PagesOfGarbage", func(t testing.TB, file string) { damagetest.Pages(t, file, 16) }, nil},
		{"TruncatedToHalf", damagetest.CutToHalf, nil},
		{"DamagedPageUnread", damagetest.UnreadPage, nil},
		{"TruncatedToHalfUnchecked", damagetest.CutToHalf, []string{"CHECK_DATA_FILE=false"}},
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
		damagetest.UnreadPage(t, file)
		start(t, dataDir, "CHECK_DATA_FILE=false")
	})
}

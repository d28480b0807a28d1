package boltstore_test

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

// filledFile is the path of a closed store file of about a megabyte: 2,000
// users, written as the server writes them.
func filledFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "latchkey.db")
	s := open(t, path)
	now := time.Now().UTC().Truncate(time.Millisecond)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Go(func() {
			for i := range 250 {
				id := account.NewID(account.PrefixUser, now)
				u := account.User{ID: id, Email: fmt.Sprintf("user-%d-%d@example.com", w, i), Name: strings.Repeat("n", 200), Role: "member", CreatedAt: now, UpdatedAt: now}
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
	return path
}

// openInChild opens the store at path in a child process (this test binary
// again) and returns what Open returned there: "ok" or its error. A fault
// in bbolt kills the child, not the test run, and fails the test.
func openInChild(t *testing.T, path string, skipCheck bool) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestOpenChild$")
	cmd.Env = append(os.Environ(), "BOLTSTORE_TEST_OPEN="+path, fmt.Sprintf("BOLTSTORE_TEST_SKIP_CHECK=%t", skipCheck))
	out, err := cmd.CombinedOutput()
	_, got, found := strings.Cut(string(out), "Open returned: ")
	got, _, _ = strings.Cut(got, "\n")
	if err != nil || !found {
		t.Fatalf("Open in a child process did not return (%v):\n%s", err, out)
	}
	return got
}

// TestOpenChild is openInChild's child; it does nothing in a plain run.
func TestOpenChild(t *testing.T) {
	path := os.Getenv("BOLTSTORE_TEST_OPEN")
	if path == "" {
		return
	}
	var opts []boltstore.OpenOption
	if os.Getenv("BOLTSTORE_TEST_SKIP_CHECK") == "true" {
		opts = append(opts, boltstore.SkipFileCheck())
	}
	s, err := boltstore.Open(path, opts...)
	if err != nil {
		fmt.Printf("Open returned: %v\n", err)
		return
	}
	fmt.Println("Open returned: ok")
	s.Close()
}

// TestOpen_RefusesDamagedFile: Open checks the whole file and refuses one
// with damaged pages, or cut short, with ErrDamaged, naming the file and
// what to do; it never crashes. A healthy file opens.
func TestOpen_RefusesDamagedFile(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		damage func(testing.TB, string)
	}{
		{"16PagesOfGarbage", func(t testing.TB, path string) { damagetest.Pages(t, path, 16) }},
		{"TruncatedToHalf", damagetest.CutToHalf},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			path := filledFile(t)
			c.damage(t, path)
			got := openInChild(t, path, false)
			for _, want := range []string{path, boltstore.ErrDamaged.Error()} {
				if !strings.Contains(got, want) {
					t.Errorf("Open: got %q, want an error with %q", got, want)
				}
			}
			// In process too, now that it is known not to crash.
			if s, err := boltstore.Open(path); !errors.Is(err, boltstore.ErrDamaged) {
				if err == nil {
					s.Close()
				}
				t.Errorf("Open: got %v, want ErrDamaged", err)
			}
		})
	}
	t.Run("Healthy", func(t *testing.T) {
		t.Parallel()
		path := filledFile(t)
		s := open(t, path)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	})
}

// TestOpen_SkipFileCheck: with SkipFileCheck, Open does not read the
// pages through, so a damaged page that opening does not read goes
// unnoticed (it would fail a request that reads it). A file cut short is
// refused all the same: that check reads no page.
func TestOpen_SkipFileCheck(t *testing.T) {
	t.Parallel()
	t.Run("DamagedPageUnread", func(t *testing.T) {
		t.Parallel()
		path := filledFile(t)
		damagetest.UnreadPage(t, path)
		if got := openInChild(t, path, false); !strings.Contains(got, boltstore.ErrDamaged.Error()) {
			t.Fatalf("Open: got %q, want ErrDamaged", got)
		}
		if got := openInChild(t, path, true); got != "ok" {
			t.Fatalf("Open with SkipFileCheck: got %q, want ok", got)
		}
	})
	t.Run("TruncatedRefused", func(t *testing.T) {
		t.Parallel()
		path := filledFile(t)
		damagetest.CutToHalf(t, path)
		if got := openInChild(t, path, true); !strings.Contains(got, boltstore.ErrDamaged.Error()) || !strings.Contains(got, "cut short") {
			t.Fatalf("Open with SkipFileCheck: got %q, want ErrDamaged, cut short", got)
		}
	})
}

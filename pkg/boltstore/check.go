package boltstore

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// ErrDamaged is the error of Open on a file that is not as bbolt wrote
// it: cut short, or with pages overwritten. Open reads nothing else of it
// and changes nothing in it.
var ErrDamaged = errors.New("the file is damaged")

// damagedAdvice says what to do with a damaged file: Open cannot repair
// one, and serving from it would answer errors and short lists.
const damagedAdvice = "restore it from a backup, or move it aside to start with an empty store"

// SkipFileCheck has Open skip reading the file through (checkPages),
// which takes time in proportion to the file's size: a damaged page is
// then found only when a request reads it, which fails or stops the
// process. The size check, which costs nothing, is always made.
func SkipFileCheck() OpenOption {
	return func(o *openOptions) { o.skipCheck = true }
}

// damaged is ErrDamaged for the file at path, with what was found.
func damaged(path, found string) error {
	return fmt.Errorf("boltstore: open %s: %w (%s): %s", path, ErrDamaged, found, damagedAdvice)
}

// checkSize refuses a file shorter than the pages its meta page counts.
// bbolt maps the file and trusts that count: a page past the end of a
// file cut short is read from memory no file backs, and the process dies
// of SIGBUS or SIGSEGV, which no recover catches. So this runs before
// anything reads a page other than the meta pages.
func checkSize(tx *bolt.Tx, size int64) error {
	if want := tx.Size(); size < want {
		return fmt.Errorf("it is %d bytes long, and its pages take %d: it was cut short", size, want)
	}
	return nil
}

// checkPages reads every page the file uses with bbolt's consistency
// check: each page reachable once, as the type its parent says, with its
// keys in order; every other page on the free list. A page of garbage
// fails bbolt's assertion that a page names its own id, which the check
// turns into an error. It reads the whole file: see
// docs/configuration.md for what that costs.
func checkPages(tx *bolt.Tx) error {
	readAhead(tx.DB().Path())
	var found []string
	n := 0
	for err := range tx.Check() {
		if n++; len(found) < 3 {
			found = append(found, err.Error())
		}
	}
	if n == 0 {
		return nil
	}
	if n > len(found) {
		found = append(found, fmt.Sprintf("%d more", n-len(found)))
	}
	return errors.New(strings.Join(found, "; "))
}

// isDamagedMeta reports whether err is bbolt's refusal of a file whose
// meta pages are both unreadable.
func isDamagedMeta(err error) bool {
	return errors.Is(err, bolterrors.ErrInvalid) || errors.Is(err, bolterrors.ErrChecksum)
}

// readAhead reads the file at path from end to end, into the system's
// cache. bbolt asks the system to read its map page by page (it advises
// random access), so the check of a file not yet cached read 1 GiB in
// 255,000 separate reads of 4 KiB: 2m44s on the machine of
// docs/configuration.md's figures, instead of seconds. An error here
// only loses the speed.
func readAhead(path string) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = io.CopyBuffer(io.Discard, f, make([]byte, 1<<20))
}

package latchkey_test

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The walk-through of docs/changing.md: the patch it follows, and the
// most production files adding a field to a user may take.
const (
	changingDoc   = "docs/changing.md"
	changingPatch = "docs/changing/phone.patch"
	maxProduction = 5
)

// changingTests are the tests the walk-through runs after applying its
// patch: those of users in each package the patch touches, and the ones it
// adds. docs/changing.md shows each command as it is here.
var changingTests = [][]string{
	{"./pkg/account/", "./pkg/httpapi/", "./pkg/console/", "./pkg/tablestore/", "-run",
		"^(TestService_(CreateUser|GetUser|ListUsers|UpdateUser|DeleteUser|UserPhone)|TestUsers_.*|TestConsole_UserPage|TestUserItem_Phone)$"},
	{"./pkg/boltstore/", "-run", "^TestStore$/^(CreateUser|GetUser|UpdateUser)$"},
}

// TestDocs_Changing keeps docs/changing.md true: its patch touches at most
// maxProduction production files, each of which the page names, and
// applies to a copy of the checkout as it is (the tracked files and the
// untracked ones git does not ignore), which then compiles, tests
// included, and passes the users' tests. A patch that no longer applies means the page is stale:
// make the change again on today's code and replace the patch. The copy
// shares the Go build and module caches; nothing is downloaded
// (GOPROXY=off). It is made in the same directory each time (one per
// checkout), since the build cache keys the module's own packages by their
// directory: the dependencies compiled for the other tests serve it, and a
// second run compiles only what the patch changed. (-trimpath would serve
// any directory, but compiles every dependency once more: 4 minutes of a
// fresh machine's make test.)
func TestDocs_Changing(t *testing.T) {
	doc, err := os.ReadFile(changingDoc)
	if err != nil {
		t.Fatal(err)
	}
	patch, err := filepath.Abs(changingPatch)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(patch)
	if err != nil {
		t.Fatal(err)
	}
	var production []string
	for _, f := range patchedFiles(b) {
		if !testOrDoc(f) {
			production = append(production, f)
			if !bytes.Contains(doc, []byte(f)) {
				t.Errorf("%s does not name %s, which its patch changes", changingDoc, f)
			}
		}
	}
	if len(production) == 0 || len(production) > maxProduction {
		t.Errorf("%s changes %d production files %q, want 1 to %d", changingPatch, len(production), production, maxProduction)
	}
	for _, args := range changingTests {
		if cmd := "go test " + strings.Join(quoteRun(args), " "); !bytes.Contains(doc, []byte(cmd)) {
			t.Errorf("%s does not show the command the test runs: %s", changingDoc, cmd)
		}
	}

	dir := copyCheckout(t)
	start := time.Now()
	// Outside a repository (GIT_CEILING_DIRECTORIES), git apply patches the
	// files below the directory it runs in, and only those.
	run(t, dir, "git apply: the patch no longer applies to today's code, so "+changingDoc+" is stale; make its change again and replace "+changingPatch,
		[]string{"GIT_CEILING_DIRECTORIES=" + filepath.Dir(dir)}, "git", "apply", patch)
	env := []string{"GOFLAGS=-buildvcs=false", "GOPROXY=off", "GOWORK=off"}
	// go vet type-checks every package of the copy and its tests, which a
	// change of a type may break anywhere, and links nothing: go build
	// ./... would link the 11 commands, for 10 to 55 s, and check less.
	run(t, dir, "go vet of the patched copy (it does not compile, or vet finds a mistake)", env, "go", "vet", "./...")
	for _, args := range changingTests {
		out := run(t, dir, "the users' tests on the patched copy", env, "go", append([]string{"test", "-count=1"}, args...)...)
		if bytes.Contains(out, []byte("no tests to run")) {
			t.Errorf("go test %s ran no test in a package:\n%s", strings.Join(args, " "), out)
		}
	}
	t.Logf("applied, built and tested in %s", time.Since(start).Round(100*time.Millisecond))
}

var diffHeader = regexp.MustCompile(`(?m)^diff --git a/(\S+) b/(\S+)$`)

// patchedFiles returns the files a git diff changes, creates or deletes.
func patchedFiles(patch []byte) []string {
	var files []string
	for _, m := range diffHeader.FindAllSubmatch(patch, -1) {
		files = append(files, string(m[2]))
	}
	return files
}

// testOrDoc reports whether a path of the checkout is a test or a page of
// documentation, not production: a _test.go file, a file of a test-only
// package (their directories end in "test": storetest, httpapitest, …), a
// Markdown page.
func testOrDoc(path string) bool {
	if strings.HasSuffix(path, "_test.go") || strings.HasSuffix(path, ".md") {
		return true
	}
	for _, dir := range strings.Split(filepath.ToSlash(filepath.Dir(path)), "/") {
		if strings.HasSuffix(dir, "test") {
			return true
		}
	}
	return false
}

// quoteRun quotes the -run pattern as a shell needs it.
func quoteRun(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if i > 0 && args[i-1] == "-run" {
			a = "'" + a + "'"
		}
		out[i] = a
	}
	return out
}

// copyCheckout copies the files of the checkout that git does not ignore
// into a directory of its own, emptied first, and returns it: the same
// directory for the same checkout (see TestDocs_Changing), removed when
// the test ends.
func copyCheckout(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v (the test copies the checkout's files, which git lists)", err)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("latchkey-changing-%x", sha256.Sum256([]byte(wd)))[:len("latchkey-changing-")+12])
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	for _, f := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		info, err := os.Lstat(f)
		if os.IsNotExist(err) {
			continue // deleted, not yet committed
		}
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if info.Mode()&os.ModeSymlink != 0 {
			target, err := os.Readlink(f)
			if err == nil {
				err = os.Symlink(target, dst)
			}
			if err != nil {
				t.Fatal(err)
			}
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, info.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// run runs a command in dir, with env added to the test's, and returns its
// output; it fails the test with what and the output if the command fails.
func run(t *testing.T, dir, what string, env []string, name string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %s %s: %v\n%s", what, name, strings.Join(args, " "), err, out)
	}
	t.Logf("%s %s: %s", name, strings.Join(args, " "), time.Since(start).Round(100*time.Millisecond))
	return out
}

package latchkey_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDocs_Layout holds docs/layout.md to the tree as it is when the test
// runs: every directory that holds Go files (packages, commands, test-only
// packages, the separate module in tools/) is named on a line of its own,
// and every path the page names exists. At the top, where the page names
// files rather than the directory, each Go file is named instead.
func TestDocs_Layout(t *testing.T) {
	named := layoutPaths(t)
	for _, p := range named {
		if _, err := os.Stat(strings.TrimSuffix(p, "/")); err != nil {
			t.Errorf("docs/layout.md names %s, which does not exist", p)
		}
	}
	isNamed := map[string]bool{}
	for _, p := range named {
		isNamed[p] = true
	}
	for _, dir := range goDirs(t) {
		if dir != "." {
			if !isNamed[dir+"/"] {
				t.Errorf("docs/layout.md does not name %s/, which holds Go files", dir)
			}
			continue
		}
		files, _ := filepath.Glob("*.go")
		for _, f := range files {
			if !isNamed[f] {
				t.Errorf("docs/layout.md does not name %s", f)
			}
		}
	}
}

// layoutPaths returns the paths docs/layout.md's listing names: the first
// word of each line that starts at the margin, and the words after one that
// ends in a comma ("go.mod, go.sum" names two). Lines indented are the
// descriptions' continuations.
func layoutPaths(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("docs/layout.md")
	if err != nil {
		t.Fatal(err)
	}
	_, listing, ok := strings.Cut(string(b), "\n```\n")
	listing, _, ok2 := strings.Cut(listing, "\n```\n")
	if !ok || !ok2 {
		t.Fatal("docs/layout.md has no listing between ``` lines")
	}
	var paths []string
	for _, line := range strings.Split(listing, "\n") {
		if line == "" || line[0] == ' ' {
			continue
		}
		for _, word := range strings.Fields(line) {
			paths = append(paths, strings.TrimSuffix(word, ","))
			if !strings.HasSuffix(word, ",") {
				break
			}
		}
	}
	if len(paths) == 0 {
		t.Fatal("docs/layout.md's listing names no path")
	}
	return paths
}

// goDirs returns every directory of the checkout that holds a .go file,
// as a slash path relative to it, passing over what the go command passes
// over (directories starting with . or _, and testdata) and node_modules.
func goDirs(t *testing.T) []string {
	t.Helper()
	seen := map[string]bool{}
	var dirs []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") ||
				name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		dir := filepath.ToSlash(filepath.Dir(path))
		if strings.HasSuffix(name, ".go") && !seen[dir] {
			seen[dir] = true
			dirs = append(dirs, dir)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) < 10 {
		t.Fatalf("found Go files in %d directories only (%v): is the test running at the checkout's root?", len(dirs), dirs)
	}
	return dirs
}

package latchkey_test

import (
	"os"
	"regexp"
	"strconv"
	"testing"

	"latchkey/pkg/version"
)

// release is one section of CHANGELOG.md: its version and the commit it
// names (empty for the newest, whose commit is named when the next opens).
type release struct {
	version string
	commit  string
}

var (
	releaseHeading = regexp.MustCompile(`(?m)^## \[(\d+)\.(\d+)\.(\d+)\] - \d{4}-\d{2}-\d{2}$`)
	releaseCommit  = regexp.MustCompile("(?m)^Commit: `([0-9a-f]{7,40})`")
)

// changelogReleases returns CHANGELOG.md's releases, newest first, and
// fails the test on a section that is not in order or, below the newest,
// names no commit.
func changelogReleases(t *testing.T) []release {
	t.Helper()
	b, err := os.ReadFile("CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	heads := releaseHeading.FindAllStringSubmatchIndex(s, -1)
	var out []release
	var prev [3]int
	for i, h := range heads {
		var v [3]int
		for j := range v {
			v[j], _ = strconv.Atoi(s[h[2+2*j]:h[3+2*j]])
		}
		if i > 0 && !(v[0] < prev[0] || v[0] == prev[0] && (v[1] < prev[1] || v[1] == prev[1] && v[2] < prev[2])) {
			t.Fatalf("CHANGELOG.md: release %d.%d.%d is listed below %d.%d.%d: newest first", v[0], v[1], v[2], prev[0], prev[1], prev[2])
		}
		prev = v
		end := len(s)
		if i+1 < len(heads) {
			end = heads[i+1][0]
		}
		r := release{version: s[h[2]:h[7]]}
		if m := releaseCommit.FindStringSubmatch(s[h[1]:end]); m != nil {
			r.commit = m[1]
		} else if i > 0 {
			t.Fatalf("CHANGELOG.md: release %s names no commit (a line \"Commit: `<hash>`\")", r.version)
		}
		out = append(out, r)
	}
	if len(out) == 0 {
		t.Fatal("CHANGELOG.md: no release section (## [x.y.z] - yyyy-mm-dd)")
	}
	return out
}

// TestRelease_Changelog: the version every binary prints is the newest
// release of CHANGELOG.md, and every earlier release names its commit.
func TestRelease_Changelog(t *testing.T) {
	releases := changelogReleases(t)
	if got, want := releases[0].version, version.Version; got != want {
		t.Fatalf("CHANGELOG.md's newest release is %s, pkg/version says %s: open its section (or fix the constant)", got, want)
	}
	if len(releases) < 2 {
		t.Fatal("CHANGELOG.md: no previous release, which the mixed-version test builds")
	}
}

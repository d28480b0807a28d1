// Package version is Latchkey's release number, in one place: every
// binary prints it in its first log line, and CHANGELOG.md's newest
// release section names it (TestVersion_Changelog).
package version

// Version is the semantic version of this release. A release that changes
// what is stored or read follows docs/deploying.md's rule for formats.
const Version = "0.2.0"

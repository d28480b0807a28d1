//go:build !unix

package main

// openFileLimit reports no limit where the system has no RLIMIT_NOFILE.
func openFileLimit() (uint64, bool) { return 0, false }

package latchkey_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMakeCheck_NamesWhatSkipped runs make check with a Go command that
// does nothing (GO=true), so that only the Makefile's own logic runs, and
// checks its closing notice: with every variable the skipping tests look
// for set and cfn-lint on PATH, there is none; with one of them unset, the
// notice names it.
func TestMakeCheck_NamesWhatSkipped(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not on PATH")
	}
	// A cfn-lint and a node that are found, and a jose that is installed,
	// so that only the variables decide.
	bin, nodeTools := t.TempDir(), t.TempDir()
	for _, name := range []string{"cfn-lint", "node"} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(nodeTools, "jose"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(nodeTools, "jose", "package.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	vars := []string{
		"LATCHKEY_TEST_DYNAMODB_ENDPOINT",
		"LATCHKEY_TEST_DYNAMODB_JAR",
		"LATCHKEY_TEST_SECRETSMANAGER_ENDPOINT",
		"LATCHKEY_TEST_MOTO_ENDPOINT",
		"LATCHKEY_TEST_CHROMIUM",
		"LATCHKEY_TEST_AXE",
	}
	run := func(t *testing.T, unset string) string {
		t.Helper()
		cmd := exec.Command("make", "-s", "check", "GO=true", "NODE_TOOLS="+nodeTools)
		env := []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
		for _, v := range vars {
			if v != unset {
				env = append(env, v+"=set")
			}
		}
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("make check GO=true: %v\n%s", err, out)
		}
		return string(out)
	}

	t.Run("Nothing skipped", func(t *testing.T) {
		if out := run(t, ""); strings.Contains(out, "Skipped") {
			t.Errorf("every variable set: got notice %q, want none", out)
		}
	})
	for _, v := range vars {
		t.Run(v+" unset", func(t *testing.T) {
			if out := run(t, v); !strings.Contains(out, v+" unset") {
				t.Errorf("got notice %q, want it to name %s", out, v)
			}
		})
	}
}

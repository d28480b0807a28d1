package main

import (
	"strings"
	"testing"
)

// TestNoArguments: a flag is refused, not ignored (the server would listen
// on its default address and write ./.data instead).
func TestNoArguments(t *testing.T) {
	if err := noArguments(nil); err != nil {
		t.Errorf("no arguments: %v", err)
	}
	err := noArguments([]string{"-addr", "127.0.0.1:9"})
	if err == nil || !strings.Contains(err.Error(), `"-addr"`) || !strings.Contains(err.Error(), "ADDR=") {
		t.Errorf("-addr: got %v, want an error naming it and the environment", err)
	}
}

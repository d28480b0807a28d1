package main

import (
	"fmt"
	"os"
	"runtime/debug"
	"strings"
	"testing"
)

// TestTuneGC: the server sets the collector's target to gcPercent, unless
// GOGC is set, which the runtime has already applied.
func TestTuneGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	tuneGC(func(string) string { return "" })
	if got := debug.SetGCPercent(100); got != gcPercent {
		t.Errorf("without GOGC: the target is %d, want %d", got, gcPercent)
	}
	tuneGC(func(name string) string {
		if name == "GOGC" {
			return "150"
		}
		return ""
	})
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("with GOGC set: the target was changed to %d", got)
	}
}

// TestTuneGC_LoadScript: scripts/load.sh runs its ceiling with the
// server's target, so that verify/ceiling compares handlers.
func TestTuneGC_LoadScript(t *testing.T) {
	script, err := os.ReadFile("../../scripts/load.sh")
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf(`gogc="${GOGC:-%d}"`, gcPercent); !strings.Contains(string(script), want) {
		t.Errorf("scripts/load.sh does not set the ceiling's GOGC as the server's: want %s", want)
	}
}

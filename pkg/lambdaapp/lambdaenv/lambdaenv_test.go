package lambdaenv_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"latchkey/pkg/lambdaapp/lambdaenv"
	"latchkey/pkg/version"
)

// TestNewLogger_StartLine: a function's first log line names the function
// and the release, before anything else is logged.
func TestNewLogger_StartLine(t *testing.T) {
	var buf bytes.Buffer
	lambdaenv.NewLogger(&buf, "verify").Info("later")
	first, _, _ := bytes.Cut(buf.Bytes(), []byte("\n"))
	var line struct{ Msg, Function, Release string }
	if err := json.Unmarshal(first, &line); err != nil {
		t.Fatalf("%v: %s", err, buf.Bytes())
	}
	if line.Msg != "start" || line.Function != "verify" || line.Release != version.Version {
		t.Fatalf("first line: got %+v, want start of verify at %s", line, version.Version)
	}
}

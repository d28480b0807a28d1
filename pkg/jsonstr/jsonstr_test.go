package jsonstr_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"latchkey/pkg/jsonstr"
)

// samples has every ASCII byte, invalid UTF-8, U+2028/U+2029 and
// multi-byte runes, alone and between other characters.
func samples() []string {
	out := []string{"", "plain", "\xff", "a\xc3", "\u2028\u2029", "é中😀", "<>&"}
	for c := range 0x80 {
		out = append(out, string(rune(c)), "x"+string(rune(c))+"y")
	}
	// Each of those at every place of a string long enough to be read
	// eight bytes at a time.
	for _, c := range append(out[1:], "\x80", "\xff\xfe") {
		for at := range 17 {
			out = append(out, strings.Repeat("a", at)+c+strings.Repeat("b", 16-at))
		}
	}
	return out
}

// TestAppend: the same bytes as encoding/json with HTML escaping off.
func TestAppend(t *testing.T) {
	for _, s := range samples() {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		want := strings.TrimSuffix(buf.String(), "\n")
		if got := string(jsonstr.Append(nil, s)); got != want {
			t.Errorf("Append(%q) = %s, want %s", s, got, want)
		}
	}
}

// TestAppendSlog: the same bytes as log/slog's JSON handler writes for a
// string attribute.
func TestAppendSlog(t *testing.T) {
	for _, s := range samples() {
		var buf bytes.Buffer
		slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key != "v" {
				return slog.Attr{}
			}
			return a
		}})).Info("", "v", s)
		want := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(buf.String()), `{"v":`), "}")
		if got := string(jsonstr.AppendSlog(nil, s)); got != want {
			t.Errorf("AppendSlog(%q) = %s, want %s", s, got, want)
		}
	}
}

// BenchmarkAppend: a request id, the commonest string of a log line.
func BenchmarkAppend(b *testing.B) {
	buf := make([]byte, 0, 64)
	b.ReportAllocs()
	for b.Loop() {
		buf = jsonstr.Append(buf[:0], "0123456789abcdef0123456789abcdef")
	}
}

package jsonstr_test

import (
	"bytes"
	"encoding/json"
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

// BenchmarkAppend: a token id, the commonest string of a verify response.
func BenchmarkAppend(b *testing.B) {
	buf := make([]byte, 0, 64)
	b.ReportAllocs()
	for b.Loop() {
		buf = jsonstr.Append(buf[:0], "tok_01KF0ED9K00000000000000006")
	}
}

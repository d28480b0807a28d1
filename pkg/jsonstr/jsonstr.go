// Package jsonstr appends a Go string as a JSON string literal, byte for
// byte as encoding/json writes it, for the one response written by hand
// instead of through reflection: verify's (httpapi's appendJSON).
package jsonstr

import (
	"encoding/binary"
	"unicode/utf8"
)

// Append appends s as encoding/json writes it with HTML escaping off:
// quote and backslash escaped, control characters as \b \f \n \r \t or
// \u00XX, invalid UTF-8 as \ufffd, and U+2028 and U+2029 escaped.
func Append(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		// Eight bytes at a time while none needs a second look: most
		// strings written here (ids, routes, scopes) are plain ASCII.
		for i+8 <= len(s) && plain8(binary.LittleEndian.Uint64([]byte(s[i:i+8]))) {
			i += 8
		}
		if i == len(s) {
			break
		}
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c == '\b':
				b = append(b, '\\', 'b')
			case c == '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// plain8 reports whether none of the eight bytes of x is a control
// character, a quote, a backslash or a byte of a multi-byte rune: the
// bytes that Append copies as they are. The tests are the exact
// "has a zero byte" and "has a byte less than n" word tricks (Bit
// Twiddling Hacks), used only as yes or no.
func plain8(x uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	hasZero := func(v uint64) uint64 { return (v - ones) & ^v & highs }
	control := (x - ones*0x20) & ^x & highs
	return (control | hasZero(x^(ones*'"')) | hasZero(x^(ones*'\\')) | x&highs) == 0
}

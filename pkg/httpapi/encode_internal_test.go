package httpapi

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"latchkey/pkg/jsonstr"
)

// encodeJSON is what writeJSON's encoder writes for v.
func encodeJSON(tb testing.TB, v any) []byte {
	tb.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		tb.Fatal(err)
	}
	return b.Bytes()
}

// nastyStrings are strings on every branch of jsonstr.Append.
var nastyStrings = []string{
	"read:users", "", `quote " and backslash \`, "\b\f\n\r\t\x00\x01\x1f\x7f",
	"<html> & 'x'", "é ü 日本 🔑", "\u2028\u2029", "bad \xff\xfe utf-8", "truncated \xe2\x82",
}

// TestAppendJSON: each jsonAppender writes exactly what encoding/json
// writes for it, with every field set, so that a field added to a response
// type but not to its appendJSON fails here.
func TestAppendJSON(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 123456789, time.FixedZone("x", 3600))
	var cases []jsonAppender
	for _, s := range nastyStrings {
		org, owner := s+"o", s
		cases = append(cases,
			verifyValidResponse{Valid: true, TokenID: s, KeyID: s + "k", Scopes: []string{s, "b"}, Audience: s + "a",
				IssuedAt: timestamp(now), ExpiresAt: timestamp(now.Add(time.Hour)), ExpiresIn: 3599,
				OrganizationID: &org, OwnerID: &owner},
			verifyInvalidResponse{Valid: true, Reason: s})
	}
	cases = append(cases,
		verifyValidResponse{Scopes: nil}, verifyValidResponse{Scopes: []string{}, ExpiresIn: -1},
		verifyInvalidResponse{})
	for _, c := range cases {
		if got, want := c.appendJSON(nil), encodeJSON(t, c); !bytes.Equal(got, want) {
			t.Errorf("%#v:\n got %s\nwant %s", c, got, want)
		}
	}
	// Every field of each type is set in the first cases above.
	for _, c := range cases[:2] {
		v := reflect.ValueOf(c)
		for i := range v.NumField() {
			if v.Field(i).IsZero() {
				t.Errorf("%T.%s is not set in the test case", c, v.Type().Field(i).Name)
			}
		}
	}
}

// TestAppendJSONString_Random: random bytes, valid UTF-8 or not, come out
// as encoding/json writes them.
func TestAppendJSONString_Random(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "\"", "\\", "\x00", "\n", "\x7f", "é", "\u2028", "\u2029", "\xff", "\xe2\x80", "🔑", "<"}
	for range 5000 {
		var s string
		for range r.IntN(12) {
			s += alphabet[r.IntN(len(alphabet))]
		}
		want := bytes.TrimSuffix(encodeJSON(t, s), []byte("\n"))
		if got := jsonstr.Append(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("%q: got %s, want %s", s, got, want)
		}
	}
}

// TestTimestamp_AppendText: the hand-written formatter writes what
// AppendFormat writes, for random instants in any zone and the edges.
func TestTimestamp_AppendText(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	times := []time.Time{
		{}, time.Unix(0, 0), time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 11, 22, 23, 30, 0, 999_999, time.FixedZone("plus", 5*3600+1800)),
	}
	for range 5000 {
		times = append(times, time.Unix(r.Int64N(1<<36)-1<<35, r.Int64N(1e9)).In(time.FixedZone("z", r.IntN(86400)-43200)))
	}
	for _, tm := range times {
		want := tm.UTC().AppendFormat(nil, timestampLayout)
		if got := timestamp(tm).appendText(nil); !bytes.Equal(got, want) {
			t.Fatalf("%v: got %s, want %s", tm, got, want)
		}
	}
}

package boltstore

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"latchkey/pkg/account"
)

func keyRecord(tb testing.TB, id string) []byte {
	tb.Helper()
	v, err := encode(toAPIKeyItem(account.APIKey{
		ID: id, Name: "k", Hash: []byte{1, 2, 3}, Last4: "abcd", Scopes: []string{"read:users"},
		Ancestors: []string{"key_parent"}, CreatedAt: time.Unix(1e9, 0).UTC(),
	}))
	if err != nil {
		tb.Fatal(err)
	}
	return v
}

// TestKeyMemo_Decode: the memo gives what decoding gives, every time, and
// a caller that changes the key it got changes no later caller's.
func TestKeyMemo_Decode(t *testing.T) {
	var km keyMemo
	v := keyRecord(t, "key_a")
	want, err := decode[apiKeyItem](v)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		got, err := km.decode([]byte("key_a"), v)
		if err != nil {
			t.Fatal(err)
		}
		if got.ID != want.ID || !slices.Equal(got.Hash, want.Hash) || !slices.Equal(got.Scopes, want.Scopes) ||
			!slices.Equal(got.Ancestors, want.Ancestors) || !got.CreatedAt.Equal(want.CreatedAt) {
			t.Fatalf("decode %d: got %+v, want %+v", i, got, want)
		}
		got.Hash[0], got.Scopes[0], got.Ancestors[0] = 9, "changed", "changed"
	}
	other, err := km.decode([]byte("key_b"), keyRecord(t, "key_b"))
	if err != nil || other.ID != "key_b" {
		t.Fatalf("another record: got %+v, %v", other, err)
	}
	if _, err := km.decode([]byte("key_c"), []byte("{")); !account.IsCode(err, account.CodeInternal) {
		t.Fatalf("a corrupt record: got %v, want an internal error", err)
	}
}

// TestKeyMemo_Changed: a key's record changed under the same id (a
// rename, a disable, a rotation) gives its new decoding at once, and the
// old record, read again, its old one.
func TestKeyMemo_Changed(t *testing.T) {
	var km keyMemo
	id := []byte("key_a")
	before := keyRecord(t, "key_a")
	after, err := encode(toAPIKeyItem(account.APIKey{ID: "key_a", Name: "renamed", Disabled: true, Hash: []byte{4}, CreatedAt: time.Unix(1e9, 0).UTC()}))
	if err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		record   []byte
		name     string
		disabled bool
	}{{before, "k", false}, {after, "renamed", true}, {after, "renamed", true}, {before, "k", false}} {
		got, err := km.decode(id, tc.record)
		if err != nil {
			t.Fatal(err)
		}
		if got.Name != tc.name || got.Disabled != tc.disabled {
			t.Fatalf("read %d: got name %q disabled %v, want %q %v", i, got.Name, got.Disabled, tc.name, tc.disabled)
		}
	}
}

// TestKeyMemo_Bound: the memo never holds more than keyMemoMax records.
func TestKeyMemo_Bound(t *testing.T) {
	var km keyMemo
	for i := range keyMemoMax + 100 {
		if _, err := km.decode(fmt.Appendf(nil, "key_%d", i), keyRecord(t, fmt.Sprintf("key_%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(km.m); n > keyMemoMax {
		t.Fatalf("memo holds %d records, want at most %d", n, keyMemoMax)
	}
}

func BenchmarkKeyDecode(b *testing.B) {
	v := keyRecord(b, "key_01KF0E44M00000000000000001")
	b.Run("JSON", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := decode[apiKeyItem](v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Memo", func(b *testing.B) {
		var km keyMemo
		b.ReportAllocs()
		for b.Loop() {
			if _, err := km.decode([]byte("key_01KF0E44M00000000000000001"), v); err != nil {
				b.Fatal(err)
			}
		}
	})
}

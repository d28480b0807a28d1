package boltstore_test

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"latchkey/pkg/boltstore"
	"latchkey/pkg/tablestore"
)

// TestCodec_RoundTrip: every value of the port comes back as it went in,
// and every truncation of an encoding is an error, not a panic.
func TestCodec_RoundTrip(t *testing.T) {
	it := avMap{
		"s": str("héllo\x00"), "n": num(-15), "big": num(1 << 62), "b": tablestore.B{0, 0xFF},
		"t": tablestore.Bool(true), "f": tablestore.Bool(false),
		"null": tablestore.Null{},
		"l":    tablestore.L{str("x"), tablestore.L{}},
		"m":    tablestore.M{"k": num(7), "e": tablestore.M{}},
		"":     str(""),
	}
	data, err := boltstore.AppendItem(nil, it)
	if err != nil {
		t.Fatal(err)
	}
	got, err := boltstore.DecodeItem(data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, it) {
		t.Errorf("round trip: got %v, want %v", got, it)
	}
	for i := range data {
		if _, err := boltstore.DecodeItem(data[:i]); err == nil {
			t.Errorf("a truncation to %d of %d bytes decoded", i, len(data))
		}
	}
}

// TestCodec_KeyOrder: bbolt keys sort as DynamoDB sorts, by hash key
// then by the range key's bytes, whatever the bytes, and a range key cut
// out of a key is the range key.
func TestCodec_KeyOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte{0x00, 0x01, 0x02, 'a', 0xFE, 0xFF}
	random := func() []byte {
		b := make([]byte, r.IntN(4))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		return b
	}
	type pair struct{ h, r []byte }
	pairs := make([]pair, 400)
	for i := range pairs {
		pairs[i] = pair{random(), random()}
	}
	byRaw := slices.Clone(pairs)
	slices.SortFunc(byRaw, func(a, b pair) int {
		if c := bytes.Compare(a.h, b.h); c != 0 {
			return c
		}
		return bytes.Compare(a.r, b.r)
	})
	byKey := slices.Clone(pairs)
	slices.SortStableFunc(byKey, func(a, b pair) int {
		return bytes.Compare(boltstore.TableKey(a.h, a.r), boltstore.TableKey(b.h, b.r))
	})
	for i := range byRaw {
		if !bytes.Equal(byRaw[i].h, byKey[i].h) || !bytes.Equal(byRaw[i].r, byKey[i].r) {
			t.Fatalf("position %d: raw order has %q/%q, key order %q/%q", i, byRaw[i].h, byRaw[i].r, byKey[i].h, byKey[i].r)
		}
	}
	for _, p := range pairs {
		h, rest, ok := boltstore.CutKeyPart(boltstore.TableKey(p.h, p.r))
		if !ok || !bytes.Equal(h, p.h) {
			t.Fatalf("cut hash of %q/%q: got %q, %v", p.h, p.r, h, ok)
		}
		rk, rest, ok := boltstore.CutKeyPart(rest)
		if !ok || !bytes.Equal(rk, p.r) || len(rest) != 0 {
			t.Fatalf("cut range of %q/%q: got %q, rest %q, %v", p.h, p.r, rk, rest, ok)
		}
	}
}

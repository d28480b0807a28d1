package token_test

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"io"
	"math/rand/v2"
	"testing"

	"latchkey/pkg/account"
	"latchkey/pkg/token"
)

// decompress is what a relying party does with lst.
func decompress(t *testing.T, lst string) []byte {
	t.Helper()
	z, err := base64.RawURLEncoding.DecodeString(lst)
	if err != nil {
		t.Fatal(err)
	}
	r, err := zlib.NewReader(bytes.NewReader(z))
	if err != nil {
		t.Fatalf("not ZLIB (RFC 1950): %v", err)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestStatusList_DraftExample: the draft's example of a list of 2 bits
// (draft-ietf-oauth-status-list, section 4.1) reads as the draft says with
// account.StatusList.Status, and CompressStatusList's lst of its bytes
// decompresses to them.
func TestStatusList_DraftExample(t *testing.T) {
	statuses := decompress(t, "eNo76fITAAPfAgc")
	if !bytes.Equal(statuses, []byte{0xc9, 0x44, 0xf9}) {
		t.Fatalf("the draft's lst: % x", statuses)
	}
	l := account.StatusList{Size: 12, Statuses: statuses}
	for i, want := range []int{1, 2, 0, 3, 0, 1, 0, 1, 1, 2, 3, 3} {
		if got := l.Status(int64(i)); got != want {
			t.Errorf("status[%d] = %d, want %d", i, got, want)
		}
	}
	lst, err := token.CompressStatusList(statuses)
	if err != nil {
		t.Fatal(err)
	}
	if got := decompress(t, lst); !bytes.Equal(got, statuses) {
		t.Errorf("round trip: % x", got)
	}
}

// TestStatusList_Size: the list of 100,000 tokens, 1% of them revoked at
// random, is 25,000 bytes and its lst a few KB (docs/dynamodb.md); a full
// list, MaxStatusListSize entries with none set, is a few hundred bytes.
func TestStatusList_Size(t *testing.T) {
	for _, tc := range []struct {
		name     string
		size     int
		revoked  float64
		maxChars int
	}{
		{"100k, 1% revoked", 100_000, 0.01, 3000},
		{"100k, none revoked", 100_000, 0, 200},
		{"1M (the most), 1% revoked", account.MaxStatusListSize, 0.01, 30000},
	} {
		statuses := make([]byte, (tc.size+3)/4)
		r := rand.New(rand.NewPCG(1, 2))
		for i := range tc.size {
			if r.Float64() < tc.revoked {
				statuses[i/4] |= account.StatusInvalid << (uint(i%4) * 2)
			}
		}
		lst, err := token.CompressStatusList(statuses)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d bytes of statuses, lst %d characters", tc.name, len(statuses), len(lst))
		if len(lst) > tc.maxChars {
			t.Errorf("%s: lst %d characters, want at most %d", tc.name, len(lst), tc.maxChars)
		}
	}
}

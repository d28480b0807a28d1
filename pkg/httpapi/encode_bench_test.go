package httpapi

import (
	"testing"
	"time"
)

func BenchmarkMarshalVerify(b *testing.B) {
	now := time.Now()
	v := verifyValidResponse{Valid: true, TokenID: "tok_01KF0ED9K00000000000000006", KeyID: "key_01KF0E44M00000000000000001",
		Scopes: []string{"read:users"}, IssuedAt: timestamp(now), ExpiresAt: timestamp(now.Add(time.Hour)), ExpiresIn: 3600}
	b.ReportAllocs()
	for b.Loop() {
		buf := getJSONBuffer()
		if err := buf.enc.Encode(v); err != nil {
			b.Fatal(err)
		}
		putJSONBuffer(buf)
	}
}

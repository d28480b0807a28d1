package httpapi

import (
	"testing"
	"time"
)

// BenchmarkMarshalVerify: a valid verify body through encoding/json (what
// every other response takes) and through its appendJSON.
func BenchmarkMarshalVerify(b *testing.B) {
	now := time.Now()
	v := verifyValidResponse{Valid: true, TokenID: "tok_01KF0ED9K00000000000000006", KeyID: "key_01KF0E44M00000000000000001",
		Scopes: []string{"read:users"}, IssuedAt: timestamp(now), ExpiresAt: timestamp(now.Add(time.Hour)), ExpiresIn: 3600}
	b.Run("Encoder", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			buf := getJSONBuffer()
			if err := buf.enc.Encode(v); err != nil {
				b.Fatal(err)
			}
			putJSONBuffer(buf)
		}
	})
	b.Run("Append", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			buf := getJSONBuffer()
			buf.Write(v.appendJSON(buf.AvailableBuffer()))
			putJSONBuffer(buf)
		}
	})
}

package verifier_test

import (
	"context"
	"fmt"
	"testing"

	"latchkey.dev/verifier"
)

// BenchmarkVerify_Offline: a token checked again with a warm cache (key
// set and status list fetched, the token verified before): its exp and
// status, and no request (TestVerify_NoNetworkWhenWarm proves none; this
// fails if one is made).
func BenchmarkVerify_Offline(b *testing.B) {
	is := newIssuer(b)
	v := is.verifier(verifier.Config{})
	ctx := context.Background()
	tok := is.token(is.claims(3))
	if _, err := v.Verify(ctx, tok); err != nil {
		b.Fatal(err)
	}
	before := is.requests()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.Verify(ctx, tok); err != nil {
			b.Fatal(err)
		}
	}
	if n := is.requests() - before; n != 0 {
		b.Fatalf("%d requests with a warm cache", n)
	}
}

// BenchmarkVerify_OfflineFirstSight: a token the Verifier has not seen,
// with the key set and the list cached: its signature is checked (EdDSA).
// A fresh Verifier, warmed with another token, every 1,000 tokens, outside
// the timer.
func BenchmarkVerify_OfflineFirstSight(b *testing.B) {
	is := newIssuer(b)
	ctx := context.Background()
	tokens := make([]string, 1000)
	for i := range tokens {
		c := is.claims(i % 256)
		c["jti"] = fmt.Sprintf("tok_%026d", i) // distinct tokens
		tokens[i] = is.token(c)
	}
	warm := is.token(is.claims(1))
	var v *verifier.Verifier
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if i%len(tokens) == 0 {
			b.StopTimer()
			v = is.verifier(verifier.Config{})
			if _, err := v.Verify(ctx, warm); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		if _, err := v.Verify(ctx, tokens[i%len(tokens)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkVerify_Online: the same token, with the offline checks and one
// request to verify per token (the test issuer's, over loopback: the
// network of a real deployment adds its round trip).
func BenchmarkVerify_Online(b *testing.B) {
	is := newIssuer(b)
	v := is.verifier(verifier.Config{Online: true})
	ctx := context.Background()
	tok := is.token(is.claims(3))
	if _, err := v.Verify(ctx, tok); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.Verify(ctx, tok); err != nil {
			b.Fatal(err)
		}
	}
}

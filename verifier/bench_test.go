package verifier_test

import (
	"context"
	"testing"

	"latchkey.dev/verifier"
)

// BenchmarkVerify_Offline: a token checked with a warm cache (key set and
// status list fetched): signature, claims, status, and no request
// (TestVerify_NoNetworkWhenWarm proves none; this fails if one is made).
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

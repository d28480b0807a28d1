package verifier_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"latchkey.dev/verifier"
)

// wantReason fails t unless err is an *verifier.Error with reason ("" for
// no error).
func wantReason(t *testing.T, err error, reason string) {
	t.Helper()
	if reason == "" {
		if err != nil {
			t.Fatalf("got %v, want accepted", err)
		}
		return
	}
	var e *verifier.Error
	if !errors.As(err, &e) || e.Reason != reason {
		t.Fatalf("got %v, want reason %s", err, reason)
	}
	if !errors.Is(err, &verifier.Error{Reason: reason}) {
		t.Fatalf("errors.Is(%v, the %s sentinel) is false", err, reason)
	}
}

func TestNew(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  verifier.Config
	}{
		{"NoAudience", verifier.Config{Issuer: "https://auth.example.com"}},
		{"NoIssuer", verifier.Config{Audience: audience}},
		{"IssuerNotURL", verifier.Config{Issuer: "auth.example.com", Audience: audience}},
		{"HMAC", verifier.Config{Issuer: "https://auth.example.com", Audience: audience, Algorithms: []string{"HS256"}}},
		{"None", verifier.Config{Issuer: "https://auth.example.com", Audience: audience, Algorithms: []string{"none"}}},
		{"EmptyAlgorithms", verifier.Config{Issuer: "https://auth.example.com", Audience: audience, Algorithms: []string{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := verifier.New(tc.cfg); err == nil {
				t.Fatal("got a Verifier, want an error")
			}
		})
	}
}

func TestVerify_OK(t *testing.T) {
	is := newIssuer(t)
	v := is.verifier(verifier.Config{})
	c, err := v.Verify(context.Background(), is.token(is.claims(5)))
	if err != nil {
		t.Fatal(err)
	}
	if c.TokenID != "tok_00000000000000000000000005" || c.KeyID != "key_01JD3Q5T2H7R9C4M8P1Q6W3E5R" || c.Audience != audience ||
		c.Issuer != is.url() || c.OrganizationID != "org_01JD3Q8B2C3D4E5F6G7H8J9K0M" || c.Status == nil ||
		c.Status.Index != 5 || c.Status.URI != is.listURI(1) || !c.ExpiresAt.Equal(is.clock.Now().Add(time.Hour)) {
		t.Errorf("claims %+v", c)
	}
	if !c.HasScope("read:orders") || c.HasScope("read:users") {
		t.Errorf("scopes %v", c.Scopes)
	}
}

func TestClaims_HasScope(t *testing.T) {
	for _, tc := range []struct {
		scopes []string
		want   string
		has    bool
	}{
		{[]string{"read:orders"}, "read:orders", true},
		{[]string{"*:orders"}, "read:orders", true},
		{[]string{"read:*"}, "read:orders", true},
		{[]string{"*:*"}, "delete:users", true},
		{[]string{"read:orders"}, "write:orders", false},
		{[]string{"read:orders"}, "read:*", false},
		{nil, "read:orders", false},
	} {
		c := verifier.Claims{Scopes: tc.scopes}
		if got := c.HasScope(tc.want); got != tc.has {
			t.Errorf("%v HasScope(%q) = %v, want %v", tc.scopes, tc.want, got, tc.has)
		}
	}
}

// TestVerify_Refusals: each rule of an access token, broken alone, and the
// reason the refusal gives.
func TestVerify_Refusals(t *testing.T) {
	is := newIssuer(t)
	rsaKey := newRSAKey(t, "r1")
	unpublished := newEd25519Key(t, "k-unpublished")
	is.set(func() { is.keys = append(is.keys, rsaKey) })
	is.setStatus(1, 7, 1)
	is.setStatus(1, 8, 2)
	is.setStatus(1, 9, 3)
	now := is.clock.Now()
	with := func(edit func(jwt.MapClaims)) jwt.MapClaims {
		c := is.claims(0)
		edit(c)
		return c
	}
	valid := is.token(is.claims(0))
	for _, tc := range []struct {
		name   string
		token  string
		cfg    verifier.Config
		reason string
	}{
		{"Valid", valid, verifier.Config{}, ""},
		{"ValidRS256", rsaKey.sign(t, "at+jwt", is.claims(0)), verifier.Config{}, ""},
		{"TypMediaType", is.signer.sign(t, "application/at+jwt", is.claims(0)), verifier.Config{}, ""},
		{"NotAToken", "not-a-token", verifier.Config{}, verifier.ReasonInvalid},
		{"Empty", "", verifier.Config{}, verifier.ReasonInvalid},
		{"TamperedPayload", tamper(t, valid, func(c jwt.MapClaims) { c["scope"] = "*:*" }), verifier.Config{}, verifier.ReasonInvalid},
		{"TamperedSignature", valid[:len(valid)-4] + "AAAA", verifier.Config{}, verifier.ReasonInvalid},
		{"UnknownKid", unpublished.sign(t, "at+jwt", is.claims(0)), verifier.Config{}, verifier.ReasonInvalid},
		{"AlgNone", noneToken(t, is.claims(0)), verifier.Config{}, verifier.ReasonInvalid},
		{"AlgHS256WithThePublicKey", hmacWithPublicKey(t, is.signer, is.claims(0)), verifier.Config{}, verifier.ReasonInvalid},
		{"AlgNotAllowed", rsaKey.sign(t, "at+jwt", is.claims(0)), verifier.Config{Algorithms: []string{"EdDSA"}}, verifier.ReasonInvalid},
		{"KidOfAnotherAlg", (&signingKey{kid: rsaKey.kid, alg: jwt.SigningMethodEdDSA, priv: is.signer.priv}).sign(t, "at+jwt", is.claims(0)), verifier.Config{}, verifier.ReasonInvalid},
		{"TypJWT", is.signer.sign(t, "JWT", is.claims(0)), verifier.Config{}, verifier.ReasonInvalid},
		{"TypMissing", is.signer.sign(t, "", is.claims(0)), verifier.Config{}, verifier.ReasonInvalid},
		{"Crit", critToken(t, is.signer, is.claims(0)), verifier.Config{}, verifier.ReasonInvalid},
		{"OtherIssuer", is.token(with(func(c jwt.MapClaims) { c["iss"] = "https://evil.example.com" })), verifier.Config{}, verifier.ReasonInvalid},
		{"NoExp", is.token(with(func(c jwt.MapClaims) { delete(c, "exp") })), verifier.Config{}, verifier.ReasonInvalid},
		{"NoIat", is.token(with(func(c jwt.MapClaims) { delete(c, "iat") })), verifier.Config{}, verifier.ReasonInvalid},
		{"IatInTheFuture", is.token(with(func(c jwt.MapClaims) { c["iat"] = now.Add(time.Minute).Unix() })), verifier.Config{}, verifier.ReasonInvalid},
		{"IatWithinLeeway", is.token(with(func(c jwt.MapClaims) { c["iat"] = now.Add(4 * time.Second).Unix() })), verifier.Config{}, ""},
		{"NbfInTheFuture", is.token(with(func(c jwt.MapClaims) { c["nbf"] = now.Add(time.Minute).Unix() })), verifier.Config{}, verifier.ReasonInvalid},
		{"Expired", is.token(with(func(c jwt.MapClaims) { c["exp"] = now.Add(-time.Minute).Unix() })), verifier.Config{}, verifier.ReasonExpired},
		{"ExpiredWithinLeeway", is.token(with(func(c jwt.MapClaims) { c["exp"] = now.Add(-4 * time.Second).Unix() })), verifier.Config{}, ""},
		{"ExpiredNoLeeway", is.token(with(func(c jwt.MapClaims) { c["exp"] = now.Add(-time.Second).Unix() })), verifier.Config{Leeway: -1}, verifier.ReasonExpired},
		{"ExpiredAndForged", tamper(t, is.token(with(func(c jwt.MapClaims) { c["exp"] = now.Add(-time.Minute).Unix() })), func(c jwt.MapClaims) {}), verifier.Config{}, verifier.ReasonInvalid},
		{"OtherAudience", is.token(with(func(c jwt.MapClaims) { c["aud"] = "https://billing.example.com" })), verifier.Config{}, verifier.ReasonWrongAudience},
		{"LatchkeysOwnAudience", is.token(with(func(c jwt.MapClaims) { c["aud"] = is.url() })), verifier.Config{}, verifier.ReasonWrongAudience},
		{"TwoAudiences", is.token(with(func(c jwt.MapClaims) { c["aud"] = []string{audience, "https://billing.example.com"} })), verifier.Config{}, verifier.ReasonWrongAudience},
		{"NoAudience", is.token(with(func(c jwt.MapClaims) { delete(c, "aud") })), verifier.Config{}, verifier.ReasonWrongAudience},
		{"TooLong", is.token(with(func(c jwt.MapClaims) { c["pad"] = strings.Repeat("x", verifier.MaxTokenBytes) })), verifier.Config{}, verifier.ReasonInvalid},
		{"StatusNotAnObject", is.token(with(func(c jwt.MapClaims) { c["status"] = "valid" })), verifier.Config{}, verifier.ReasonInvalid},
		{"StatusWithoutList", is.token(with(func(c jwt.MapClaims) { c["status"] = map[string]any{} })), verifier.Config{}, verifier.ReasonInvalid},
		{"StatusNoIdx", is.token(with(func(c jwt.MapClaims) { c["status"] = statusClaim(nil, is.listURI(1)) })), verifier.Config{}, verifier.ReasonInvalid},
		{"StatusNegativeIdx", is.token(with(func(c jwt.MapClaims) { c["status"] = statusClaim(-1, is.listURI(1)) })), verifier.Config{}, verifier.ReasonInvalid},
		{"StatusHugeIdx", is.token(with(func(c jwt.MapClaims) { c["status"] = statusClaim(int64(1)<<40, is.listURI(1)) })), verifier.Config{}, verifier.ReasonInvalid},
		{"StatusFractionIdx", is.token(with(func(c jwt.MapClaims) { c["status"] = statusClaim(1.5, is.listURI(1)) })), verifier.Config{}, verifier.ReasonInvalid},
		{"StatusRelativeURI", is.token(with(func(c jwt.MapClaims) { c["status"] = statusClaim(0, "/statuslists/1") })), verifier.Config{}, verifier.ReasonInvalid},
		{"StatusFileURI", is.token(with(func(c jwt.MapClaims) { c["status"] = statusClaim(0, "file:///etc/passwd") })), verifier.Config{}, verifier.ReasonInvalid},
		{"Revoked", is.token(is.claims(7)), verifier.Config{}, verifier.ReasonRevoked},
		{"Suspended", is.token(is.claims(8)), verifier.Config{}, verifier.ReasonDisabled},
		{"ApplicationSpecificStatus", is.token(is.claims(9)), verifier.Config{}, verifier.ReasonInvalid},
		{"IndexBeyondTheList", is.token(is.claims(64 * 4)), verifier.Config{}, verifier.ReasonInvalid},
		{"ListNotFound", is.token(with(func(c jwt.MapClaims) { c["status"] = statusClaim(0, is.listURI(2)) })), verifier.Config{}, verifier.ReasonUnavailable},
		{"NoStatus", is.token(with(func(c jwt.MapClaims) { delete(c, "status") })), verifier.Config{}, ""},
		{"NoStatusRequired", is.token(with(func(c jwt.MapClaims) { delete(c, "status") })), verifier.Config{RequireStatus: true}, verifier.ReasonInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := is.verifier(tc.cfg).Verify(context.Background(), tc.token)
			wantReason(t, err, tc.reason)
		})
	}
}

func statusClaim(idx any, uri string) map[string]any {
	l := map[string]any{"uri": uri}
	if idx != nil {
		l["idx"] = idx
	}
	return map[string]any{"status_list": l}
}

// tamper returns tok with its payload changed by edit and its signature
// kept.
func tamper(t *testing.T, tok string, edit func(jwt.MapClaims)) string {
	t.Helper()
	var c jwt.MapClaims
	if _, _, err := jwt.NewParser().ParseUnverified(tok, &c); err != nil {
		t.Fatal(err)
	}
	edit(c)
	c["tampered"] = true
	parts := strings.Split(tok, ".")
	unsigned, err := jwt.NewWithClaims(jwt.SigningMethodNone, c).SigningString()
	if err != nil {
		t.Fatal(err)
	}
	return parts[0] + "." + strings.Split(unsigned, ".")[1] + "." + parts[2]
}

func noneToken(t *testing.T, c jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.SigningMethodNone, c)
	tok.Header["typ"], tok.Header["kid"] = "at+jwt", "k1"
	s, err := tok.SignedString(jwt.UnsafeAllowNoneSignatureType)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// hmacWithPublicKey is the algorithm confusion attack: HS256 keyed with
// the bytes of the issuer's public key, which anyone can read.
func hmacWithPublicKey(t *testing.T, k *signingKey, c jwt.MapClaims) string {
	t.Helper()
	pub := k.jwk()["x"]
	tok := jwt.NewWithClaims(jwt.SigningMethodHS256, c)
	tok.Header["typ"], tok.Header["kid"] = "at+jwt", k.kid
	s, err := tok.SignedString([]byte(pub))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func critToken(t *testing.T, k *signingKey, c jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(k.alg, c)
	tok.Header["typ"], tok.Header["kid"], tok.Header["crit"] = "at+jwt", k.kid, []string{"exp"}
	s, err := tok.SignedString(k.priv)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestVerify_KeyRollover: a token signed with a key the Verifier has not
// seen makes it fetch the key set again, at most once per
// KeyRefetchInterval, and a key the issuer publishes is then accepted; a
// key it never publishes is not.
func TestVerify_KeyRollover(t *testing.T) {
	is := newIssuer(t)
	v := is.verifier(verifier.Config{})
	ctx := context.Background()
	if _, err := v.Verify(ctx, is.token(is.claims(0))); err != nil {
		t.Fatal(err)
	}
	if got := is.hitsOf("/v1/auth/jwks"); got != 1 {
		t.Fatalf("key set fetched %d times, want 1", got)
	}

	// Rotation: the new key is published, then signs.
	k2 := newEd25519Key(t, "k2")
	is.set(func() { is.keys = append(is.keys, k2); is.signer = k2 })
	if _, err := v.Verify(ctx, is.token(is.claims(0))); err != nil {
		t.Fatalf("a token of the rotated-in key: %v", err)
	}
	if got := is.hitsOf("/v1/auth/jwks"); got != 2 {
		t.Fatalf("key set fetched %d times, want 2", got)
	}

	// Made-up kids, many of them: one fetch per interval.
	forger := newEd25519Key(t, "k-forged")
	for range 20 {
		_, err := v.Verify(ctx, forger.sign(t, "at+jwt", is.claims(0)))
		wantReason(t, err, verifier.ReasonInvalid)
	}
	if got := is.hitsOf("/v1/auth/jwks"); got != 2 {
		t.Fatalf("key set fetched %d times within the interval after a rotation's fetch, want 2", got)
	}
	is.clock.Add(verifier.KeyRefetchInterval)
	for range 20 {
		_, err := v.Verify(ctx, forger.sign(t, "at+jwt", is.claims(0)))
		wantReason(t, err, verifier.ReasonInvalid)
	}
	if got := is.hitsOf("/v1/auth/jwks"); got != 3 {
		t.Fatalf("key set fetched %d times, want 3: one per interval", got)
	}

}

// TestVerify_RetiredKey: a key dropped from the set stops verifying once
// the set is older than KeyRefreshInterval and fetched again, for a token
// verified (and cached) before too.
func TestVerify_RetiredKey(t *testing.T) {
	is := newIssuer(t)
	v := is.verifier(verifier.Config{})
	ctx := context.Background()
	tok := is.token(is.claims(0))
	if _, err := v.Verify(ctx, tok); err != nil {
		t.Fatal(err)
	}
	k2 := newEd25519Key(t, "k2")
	is.set(func() { is.keys = []*signingKey{k2}; is.signer = k2 })
	is.clock.Add(time.Minute)
	if _, err := v.Verify(ctx, tok); err != nil {
		t.Fatalf("k1's token within KeyRefreshInterval of the last fetch: %v", err)
	}
	is.clock.Add(verifier.KeyRefreshInterval)
	_, err := v.Verify(ctx, tok)
	wantReason(t, err, verifier.ReasonInvalid)
}

// TestVerify_CachedTokenExpires: a token verified before is refused once
// its exp has passed, though its signature is not checked again.
func TestVerify_CachedTokenExpires(t *testing.T) {
	is := newIssuer(t)
	v := is.verifier(verifier.Config{})
	ctx := context.Background()
	c := is.claims(0)
	c["exp"] = is.clock.Now().Add(time.Minute).Unix()
	tok := is.token(c)
	if _, err := v.Verify(ctx, tok); err != nil {
		t.Fatal(err)
	}
	got, err := v.Verify(ctx, tok)
	if err != nil {
		t.Fatal(err)
	}
	got.Scopes, got.KeyID = nil, "changed by the caller"
	if again, _ := v.Verify(ctx, tok); again.KeyID != "key_01JD3Q5T2H7R9C4M8P1Q6W3E5R" || len(again.Scopes) != 2 {
		t.Fatalf("a caller's change of the claims reached the cache: %+v", again)
	}
	is.clock.Add(time.Minute + verifier.DefaultLeeway)
	_, err = v.Verify(ctx, tok)
	wantReason(t, err, verifier.ReasonExpired)
}

// TestVerify_NoNetworkWhenWarm: once the key set and the list are cached,
// verifying makes no request, until the list's ttl has passed.
func TestVerify_NoNetworkWhenWarm(t *testing.T) {
	is := newIssuer(t)
	v := is.verifier(verifier.Config{})
	ctx := context.Background()
	tok := is.token(is.claims(3))
	if _, err := v.Verify(ctx, tok); err != nil {
		t.Fatal(err)
	}
	before := is.requests()
	for i := range 1000 {
		if _, err := v.Verify(ctx, is.token(is.claims(i%256))); err != nil {
			t.Fatal(err)
		}
	}
	if got := is.requests() - before; got != 0 {
		t.Fatalf("1000 verifications with a warm cache made %d requests, want 0", got)
	}
	is.clock.Add(10 * time.Second) // the list's ttl
	if _, err := v.Verify(ctx, tok); err != nil {
		t.Fatal(err)
	}
	if got := is.requests() - before; got != 1 {
		t.Fatalf("after ttl: %d requests, want 1 (the list)", got)
	}
}

// TestVerify_ListRevalidation: after ttl the list is asked for again with
// If-None-Match; an unchanged list answers 304 and is kept, a changed one
// (a revocation) is fetched and applied.
func TestVerify_ListRevalidation(t *testing.T) {
	is := newIssuer(t)
	v := is.verifier(verifier.Config{})
	ctx := context.Background()
	tok := is.token(is.claims(3))
	if _, err := v.Verify(ctx, tok); err != nil {
		t.Fatal(err)
	}
	is.clock.Add(10 * time.Second)
	if _, err := v.Verify(ctx, tok); err != nil {
		t.Fatal(err)
	}
	is.set(func() {
		if got := is.conds["/statuslists/1"]; len(got) != 1 || got[0] == "" {
			t.Fatalf("If-None-Match sent: %q, want the ETag once", got)
		}
	})

	// Revoked: the cached list still says VALID until ttl has passed.
	is.setStatus(1, 3, 1)
	is.clock.Add(9 * time.Second)
	if _, err := v.Verify(ctx, tok); err != nil {
		t.Fatalf("within ttl of the last revalidation: %v", err)
	}
	is.clock.Add(time.Second)
	_, err := v.Verify(ctx, tok)
	wantReason(t, err, verifier.ReasonRevoked)
	if got := is.hitsOf("/statuslists/1"); got != 3 {
		t.Fatalf("list requested %d times, want 3", got)
	}

	// Suspended, then valid again: disable and enable.
	is.setStatus(1, 3, 2)
	is.clock.Add(10 * time.Second)
	_, err = v.Verify(ctx, tok)
	wantReason(t, err, verifier.ReasonDisabled)
	is.setStatus(1, 3, 0)
	is.clock.Add(10 * time.Second)
	if _, err := v.Verify(ctx, tok); err != nil {
		t.Fatalf("enabled again: %v", err)
	}
}

// TestVerify_StaleList: the fail-closed policy. While Latchkey cannot be
// reached, a cached list is used until it is StaleLists × ttl old; then
// every token it covers is refused (unavailable), until a fetch succeeds.
// A token whose list was never fetched is refused at once.
func TestVerify_StaleList(t *testing.T) {
	for _, stale := range []int{0, 5} { // 0: DefaultStaleLists
		n := stale
		if n == 0 {
			n = verifier.DefaultStaleLists
		}
		is := newIssuer(t)
		v := is.verifier(verifier.Config{StaleLists: stale})
		ctx := context.Background()
		tok := is.token(is.claims(3))
		if _, err := v.Verify(ctx, tok); err != nil {
			t.Fatal(err)
		}
		is.set(func() { is.down = true })
		ttl := 10 * time.Second
		is.clock.Add(time.Duration(n)*ttl - time.Second)
		if _, err := v.Verify(ctx, tok); err != nil {
			t.Fatalf("StaleLists %d: list %d × ttl − 1 s old, Latchkey down: %v, want the cached copy used", stale, n, err)
		}
		is.clock.Add(time.Second)
		_, err := v.Verify(ctx, tok)
		wantReason(t, err, verifier.ReasonUnavailable)

		// Another list, never fetched: refused at once.
		other := is.token(func() jwt.MapClaims {
			c := is.claims(0)
			c["status"] = statusClaim(0, is.listURI(3))
			return c
		}())
		_, err = v.Verify(ctx, other)
		wantReason(t, err, verifier.ReasonUnavailable)

		// A failed fetch is not tried again on every request: once a
		// second at most.
		before := is.hitsOf("/statuslists/1")
		for range 10 {
			v.Verify(ctx, tok)
		}
		if got := is.hitsOf("/statuslists/1") - before; got != 0 {
			t.Fatalf("10 requests within a second of a failed fetch made %d fetches, want 0", got)
		}

		is.set(func() { is.down = false })
		is.clock.Add(time.Second)
		if _, err := v.Verify(ctx, tok); err != nil {
			t.Fatalf("Latchkey back: %v", err)
		}
	}
}

// TestVerify_ListGone: a list Latchkey answers 404 for (its status lists
// were taken out of force by a rollback since: the previous release may
// have revoked its tokens without flipping their entries) is not used
// from the cache, as a list that cannot be fetched is: its tokens are
// refused at the first fetch that finds it gone, and until it is served
// again.
func TestVerify_ListGone(t *testing.T) {
	is := newIssuer(t)
	v := is.verifier(verifier.Config{})
	ctx := context.Background()
	tok := is.token(is.claims(3))
	if _, err := v.Verify(ctx, tok); err != nil {
		t.Fatal(err)
	}
	statuses := is.statuses["/statuslists/1"]
	is.set(func() { delete(is.statuses, "/statuslists/1") })
	is.clock.Add(9 * time.Second)
	if _, err := v.Verify(ctx, tok); err != nil {
		t.Fatalf("within ttl: %v, want the copy fetched used", err)
	}
	is.clock.Add(time.Second)
	_, err := v.Verify(ctx, tok)
	wantReason(t, err, verifier.ReasonUnavailable)
	is.clock.Add(time.Second)
	_, err = v.Verify(ctx, tok)
	wantReason(t, err, verifier.ReasonUnavailable)
	is.set(func() { is.statuses["/statuslists/1"] = statuses })
	is.clock.Add(time.Second)
	if _, err := v.Verify(ctx, tok); err != nil {
		t.Fatalf("served again: %v", err)
	}
}

// TestVerify_ListTokenRules: a Status List Token that breaks a rule of the
// draft is not used, and the token it would cover is refused
// (unavailable): no statement about its status can be made (section 8.3).
func TestVerify_ListTokenRules(t *testing.T) {
	other := newEd25519Key(t, "k-unpublished")
	for _, tc := range []struct {
		name   string
		edit   func(h map[string]any, c jwt.MapClaims)
		signer *signingKey
		ttl    any
	}{
		{name: "TypJWT", edit: func(h map[string]any, c jwt.MapClaims) { h["typ"] = "JWT" }},
		{name: "TypAccessToken", edit: func(h map[string]any, c jwt.MapClaims) { h["typ"] = "at+jwt" }},
		{name: "SubAnotherList", edit: func(h map[string]any, c jwt.MapClaims) { c["sub"] = strings.TrimSuffix(c["sub"].(string), "1") + "2" }},
		{name: "NoSub", edit: func(h map[string]any, c jwt.MapClaims) { delete(c, "sub") }},
		{name: "NoIat", edit: func(h map[string]any, c jwt.MapClaims) { delete(c, "iat") }},
		{name: "Expired", edit: func(h map[string]any, c jwt.MapClaims) { c["exp"] = c["iat"].(int64) - 60 }},
		{name: "OtherIssuer", edit: func(h map[string]any, c jwt.MapClaims) { c["iss"] = "https://evil.example.com" }},
		{name: "Bits3", edit: func(h map[string]any, c jwt.MapClaims) { c["status_list"].(map[string]any)["bits"] = 3 }},
		{name: "LstNotZlib", edit: func(h map[string]any, c jwt.MapClaims) { c["status_list"].(map[string]any)["lst"] = "AAAA" }},
		{name: "NoStatusList", edit: func(h map[string]any, c jwt.MapClaims) { delete(c, "status_list") }},
		{name: "Crit", edit: func(h map[string]any, c jwt.MapClaims) { h["crit"] = []string{"ttl"} }},
		{name: "TTLZero", ttl: 0},
		{name: "TTLNegative", ttl: -10},
		{name: "UnknownKey", signer: other},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := newIssuer(t)
			is.set(func() {
				is.listToken, is.listSigner = tc.edit, tc.signer
				if tc.ttl != nil {
					is.ttl = tc.ttl
				}
			})
			_, err := is.verifier(verifier.Config{}).Verify(context.Background(), is.token(is.claims(0)))
			wantReason(t, err, verifier.ReasonUnavailable)
		})
	}
	t.Run("NoTTL", func(t *testing.T) {
		// Without ttl, DefaultTTL says when to fetch again.
		is := newIssuer(t)
		is.set(func() { is.ttl = nil })
		v := is.verifier(verifier.Config{DefaultTTL: 30 * time.Second})
		tok := is.token(is.claims(0))
		for _, step := range []time.Duration{0, 29 * time.Second, time.Second} {
			is.clock.Add(step)
			if _, err := v.Verify(context.Background(), tok); err != nil {
				t.Fatal(err)
			}
		}
		if got := is.hitsOf("/statuslists/1"); got != 2 {
			t.Fatalf("list requested %d times over 30 s, want 2", got)
		}
	})
}

// TestVerify_Discovery: the key set is found through the issuer's
// discovery document, which must name that issuer (RFC 8414, section
// 3.3); Config.JWKSURL skips it.
func TestVerify_Discovery(t *testing.T) {
	is := newIssuer(t)
	is.set(func() { is.discovered = "https://evil.example.com" })
	_, err := is.verifier(verifier.Config{}).Verify(context.Background(), is.token(is.claims(0)))
	wantReason(t, err, verifier.ReasonUnavailable)

	v := is.verifier(verifier.Config{JWKSURL: is.url() + "/v1/auth/jwks"})
	if _, err := v.Verify(context.Background(), is.token(is.claims(0))); err != nil {
		t.Fatalf("with JWKSURL: %v", err)
	}

	is.set(func() { is.down = true })
	_, err = is.verifier(verifier.Config{}).Verify(context.Background(), is.token(is.claims(0)))
	wantReason(t, err, verifier.ReasonUnavailable)
}

// TestVerify_Concurrent: many requests at once, while the list's ttl
// passes again and again, share one fetch of the list per ttl, and all
// pass (go test -race checks the caches' locking).
func TestVerify_Concurrent(t *testing.T) {
	is := newIssuer(t)
	v := is.verifier(verifier.Config{})
	ctx := context.Background()
	tokens := make([]string, 64)
	for i := range tokens {
		c := is.claims(i)
		c["exp"] = is.clock.Now().Add(24 * time.Hour).Unix()
		tokens[i] = is.token(c)
	}
	errs := make(chan error, 16*200)
	done := make(chan struct{})
	for g := range 16 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range 200 {
				if _, err := v.Verify(ctx, tokens[(g*200+i)%len(tokens)]); err != nil {
					errs <- err
				}
			}
		}()
	}
	ticks := 0
	for finished := 0; finished < 16; {
		select {
		case <-done:
			finished++
		default:
			if ticks < 30 {
				is.clock.Add(10 * time.Second) // one ttl
				ticks++
			}
			time.Sleep(time.Millisecond)
		}
	}
	close(errs)
	for err := range errs {
		t.Errorf("concurrent verification: %v", err)
	}
	if got := is.hitsOf("/statuslists/1"); got > ticks+1 {
		t.Errorf("the list was fetched %d times over %d ttl periods, want at most one a period", got, ticks)
	}
}

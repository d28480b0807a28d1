package httpapi_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"latchkey/pkg/account"
	"latchkey/pkg/httpapi"
	"latchkey/pkg/httpapi/httpapitest"
)

// doKey sends a request with Idempotency-Key (unless key is empty) and
// checks the response against openapi.yaml.
func (a api) doKey(method, path, credential, key string, body any) *httpapitest.Response {
	a.t.Helper()
	h := http.Header{}
	h.Set("Authorization", "Bearer "+credential)
	if body != nil {
		h.Set("Content-Type", "application/json")
	}
	if key != "" {
		h.Set("Idempotency-Key", key)
	}
	res := a.DoRaw(a.t, a.Handler, method, path, h, body)
	a.CheckResponse(a.t, res)
	return res
}

// wantReplayOf fails the test unless res is the answer first got, replayed.
func wantReplayOf(t testing.TB, res, first *httpapitest.Response) {
	t.Helper()
	if got := res.Header.Get("Idempotent-Replayed"); got != "true" {
		t.Fatalf("%s %s: Idempotent-Replayed %q, want true (status %d %s)", res.Request.Method, res.Request.URL, got, res.StatusCode, res.Body)
	}
	if res.StatusCode != first.StatusCode || !bytes.Equal(res.Body, first.Body) {
		t.Fatalf("replay: got %d %s, want the first answer %d %s", res.StatusCode, res.Body, first.StatusCode, first.Body)
	}
	for _, h := range []string{"Content-Type", "Location", "Cache-Control"} {
		if res.Header.Get(h) != first.Header.Get(h) {
			t.Errorf("replay: %s %q, want the first answer's %q", h, res.Header.Get(h), first.Header.Get(h))
		}
	}
}

// wantCarriedOut fails the test unless res is not a replay.
func wantCarriedOut(t testing.TB, res *httpapitest.Response) {
	t.Helper()
	if got := res.Header.Get("Idempotent-Replayed"); got != "" {
		t.Fatalf("%s %s: Idempotent-Replayed %q on a request carried out", res.Request.Method, res.Request.URL, got)
	}
}

// usersWithEmail counts the users with the e-mail.
func (a api) usersWithEmail(email string) int {
	a.t.Helper()
	var list struct {
		Data []map[string]any `json:"data"`
	}
	res := a.do(http.MethodGet, "/v1/users?email="+email, a.AdminKey, nil)
	want(a.t, res, http.StatusOK)
	res.Decode(a.t, &list)
	return len(list.Data)
}

func TestIdempotencyKey_Replay(t *testing.T) {
	a := newAPI(t)
	t.Run("Create", func(t *testing.T) {
		key, email := unique("create-"), uniqueEmail()
		body := map[string]any{"email": email, "name": "Ada"}
		first := a.doKey(http.MethodPost, "/v1/users", a.AdminKey, key, body)
		want(t, first, http.StatusCreated)
		wantCarriedOut(t, first)
		for range 2 {
			wantReplayOf(t, a.doKey(http.MethodPost, "/v1/users", a.AdminKey, key, body), first)
		}
		if n := a.usersWithEmail(email); n != 1 {
			t.Errorf("users with the e-mail: got %d, want 1", n)
		}
	})
	t.Run("Delete", func(t *testing.T) {
		u := a.CreateUser(t, uniqueEmail())
		key := unique("delete-")
		first := a.doKey(http.MethodDelete, "/v1/users/"+u.ID, a.AdminKey, key, nil)
		want(t, first, http.StatusNoContent)
		// Carried out again, it would be 404.
		wantReplayOf(t, a.doKey(http.MethodDelete, "/v1/users/"+u.ID, a.AdminKey, key, nil), first)
	})
	t.Run("Problem", func(t *testing.T) {
		// A 4xx is an answer like any other: stored and replayed, even
		// once what refused the request has changed.
		u := a.CreateUser(t, uniqueEmail())
		key := unique("taken-")
		body := map[string]any{"email": u.Email, "name": "Dup"}
		first := a.doKey(http.MethodPost, "/v1/users", a.AdminKey, key, body)
		wantProblem(t, first, http.StatusConflict, "email_taken")
		want(t, a.doKey(http.MethodDelete, "/v1/users/"+u.ID, a.AdminKey, "", nil), http.StatusNoContent)
		wantReplayOf(t, a.doKey(http.MethodPost, "/v1/users", a.AdminKey, key, body), first)
		if n := a.usersWithEmail(u.Email); n != 0 {
			t.Errorf("users with the e-mail: got %d, want 0", n)
		}
	})
	t.Run("WithoutKeyCarriedOutAgain", func(t *testing.T) {
		email := uniqueEmail()
		body := map[string]any{"email": email, "name": "Ada"}
		want(t, a.doKey(http.MethodPost, "/v1/users", a.AdminKey, "", body), http.StatusCreated)
		wantProblem(t, a.doKey(http.MethodPost, "/v1/users", a.AdminKey, "", body), http.StatusConflict, "email_taken")
	})
	t.Run("IgnoredOnOtherMethods", func(t *testing.T) {
		u := a.CreateUser(t, uniqueEmail())
		key := unique("put-")
		for _, name := range []string{"One", "Two"} {
			res := a.doKey(http.MethodPut, "/v1/users/"+u.ID, a.AdminKey, key, map[string]any{"name": name})
			want(t, res, http.StatusOK)
			wantCarriedOut(t, res)
			if got := res.Map(t)["name"]; got != name {
				t.Errorf("PUT with Idempotency-Key: name %v, want %s (carried out)", got, name)
			}
		}
	})
}

func TestIdempotencyKey_Reused(t *testing.T) {
	a := newAPI(t)
	key := unique("reused-")
	u := a.do(http.MethodPost, "/v1/users", a.AdminKey, map[string]any{"email": uniqueEmail(), "name": "Other"})
	want(t, u, http.StatusCreated)
	want(t, a.doKey(http.MethodPost, "/v1/users", a.AdminKey, key, map[string]any{"email": uniqueEmail(), "name": "Ada"}), http.StatusCreated)
	for _, tc := range []struct {
		name, method, path string
		body               any
	}{
		{"OtherBody", http.MethodPost, "/v1/users", map[string]any{"email": uniqueEmail(), "name": "Ada"}},
		{"OtherPath", http.MethodPost, "/v1/organizations", map[string]any{"name": "Acme", "slug": uniqueSlug()}},
		{"OtherMethod", http.MethodDelete, "/v1/users/" + u.Map(t)["id"].(string), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantProblem(t, a.doKey(tc.method, tc.path, a.AdminKey, key, tc.body), http.StatusUnprocessableEntity, "idempotency_key_reused")
		})
	}
	// Nothing was carried out.
	want(t, a.do(http.MethodGet, "/v1/users/"+u.Map(t)["id"].(string), a.AdminKey, nil), http.StatusOK)
}

func TestIdempotencyKey_Malformed(t *testing.T) {
	a := newAPI(t)
	for _, tc := range []struct {
		name   string
		values []string
	}{
		{"Empty", []string{""}},
		{"TooLong", []string{strings.Repeat("k", account.MaxIdempotencyKeyLength+1)}},
		{"NotASCII", []string{"clé"}},
		{"ControlCharacter", []string{"a\x01b"}},
		{"Twice", []string{"one", "two"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			email := uniqueEmail()
			h := http.Header{"Authorization": {"Bearer " + a.AdminKey}, "Content-Type": {"application/json"}, "Idempotency-Key": tc.values}
			res := a.DoRaw(t, a.Handler, http.MethodPost, "/v1/users", h, map[string]any{"email": email, "name": "Ada"})
			a.CheckResponse(t, res)
			wantField(t, wantProblem(t, res, http.StatusBadRequest, "invalid_request"), "Idempotency-Key")
			if n := a.usersWithEmail(email); n != 0 {
				t.Errorf("users created: %d, want 0", n)
			}
		})
	}
	t.Run("LongestAccepted", func(t *testing.T) {
		key := "a " + strings.Repeat("~", account.MaxIdempotencyKeyLength-3) + "z"
		want(t, a.doKey(http.MethodPost, "/v1/users", a.AdminKey, key, map[string]any{"email": uniqueEmail(), "name": "Ada"}), http.StatusCreated)
	})
}

func TestIdempotencyKey_ScopedToCallingKey(t *testing.T) {
	a := newAPI(t)
	_, other := a.CreateAPIKey(t, "write:users", "read:users")
	key, email := unique("shared-"), uniqueEmail()
	body := map[string]any{"email": email, "name": "Ada"}
	want(t, a.doKey(http.MethodPost, "/v1/users", a.AdminKey, key, body), http.StatusCreated)
	// Another key's request with the same Idempotency-Key is its own:
	// carried out, and refused for the e-mail, not replayed.
	res := a.doKey(http.MethodPost, "/v1/users", other, key, body)
	wantCarriedOut(t, res)
	wantProblem(t, res, http.StatusConflict, "email_taken")
	// An access token of a key shares its key's records.
	tok, _ := a.IssueToken(t, other, "", "write:users")
	wantReplayOf(t, a.doKey(http.MethodPost, "/v1/users", tok, key, body), res)
}

// faultStore is the real store with faults a test sets, each a function
// field that runs in place of, or before, the real call.
type faultStore struct {
	account.Store
	// createUser, if set, runs before the real CreateUser; an error it
	// returns is CreateUser's, and the real one is not called.
	createUser func(ctx context.Context) error
	// finish, release: if set, they replace the real calls.
	finish  func(ctx context.Context, r account.IdempotencyRecord) error
	release func(ctx context.Context, keyID, key, owner string) error
}

func (f *faultStore) CreateUser(ctx context.Context, opts account.WriteOptions, u account.User) error {
	if f.createUser != nil {
		if err := f.createUser(ctx); err != nil {
			return err
		}
	}
	return f.Store.CreateUser(ctx, opts, u)
}

func (f *faultStore) FinishIdempotency(ctx context.Context, r account.IdempotencyRecord) error {
	if f.finish != nil {
		return f.finish(ctx, r)
	}
	return f.Store.FinishIdempotency(ctx, r)
}

func (f *faultStore) ReleaseIdempotency(ctx context.Context, keyID, key, owner string) error {
	if f.release != nil {
		return f.release(ctx, keyID, key, owner)
	}
	return f.Store.ReleaseIdempotency(ctx, keyID, key, owner)
}

func newFaultAPI(t *testing.T) (api, *faultStore) {
	t.Helper()
	fs := &faultStore{}
	env := httpapitest.NewServerWith(t, func(s account.Store) account.Store { fs.Store = s; return fs })
	return api{Env: env, t: t}, fs
}

func TestIdempotencyKey_InProgress(t *testing.T) {
	a, fs := newFaultAPI(t)
	entered, proceed := make(chan struct{}), make(chan struct{})
	var once sync.Once
	fs.createUser = func(context.Context) error {
		once.Do(func() { close(entered); <-proceed })
		return nil
	}
	key, body := unique("slow-"), map[string]any{"email": uniqueEmail(), "name": "Ada"}
	firstc := make(chan *httpapitest.Response, 1)
	go func() {
		firstc <- a.DoRaw(t, a.Handler, http.MethodPost, "/v1/users", keyHeader(a.AdminKey, key), body)
	}()
	<-entered
	res := a.doKey(http.MethodPost, "/v1/users", a.AdminKey, key, body)
	wantProblem(t, res, http.StatusConflict, "idempotency_in_progress")
	if got := res.Header.Get("Retry-After"); got != "1" {
		t.Errorf("Retry-After: got %q, want 1", got)
	}
	close(proceed)
	first := <-firstc
	a.CheckResponse(t, first)
	want(t, first, http.StatusCreated)
	wantReplayOf(t, a.doKey(http.MethodPost, "/v1/users", a.AdminKey, key, body), first)
}

func keyHeader(credential, key string) http.Header {
	return http.Header{"Authorization": {"Bearer " + credential}, "Content-Type": {"application/json"}, "Idempotency-Key": {key}}
}

func TestIdempotencyKey_ServerErrorRetried(t *testing.T) {
	a, fs := newFaultAPI(t)
	var failed atomic.Bool
	fs.createUser = func(context.Context) error {
		if failed.CompareAndSwap(false, true) {
			return account.Unavailable(errors.New("injected: the table is throttled"))
		}
		return nil
	}
	key, email := unique("retry-"), uniqueEmail()
	body := map[string]any{"email": email, "name": "Ada"}
	wantProblem(t, a.doKey(http.MethodPost, "/v1/users", a.AdminKey, key, body), http.StatusServiceUnavailable, "unavailable")
	second := a.doKey(http.MethodPost, "/v1/users", a.AdminKey, key, body)
	want(t, second, http.StatusCreated)
	wantCarriedOut(t, second)
	wantReplayOf(t, a.doKey(http.MethodPost, "/v1/users", a.AdminKey, key, body), second)
	if n := a.usersWithEmail(email); n != 1 {
		t.Errorf("users with the e-mail: got %d, want 1", n)
	}
}

func TestIdempotencyKey_FirstRequestDied(t *testing.T) {
	// The first request's process stops before it changes anything: its
	// record is neither finished nor released. A retry waits out the
	// lease, then is carried out.
	a, fs := newFaultAPI(t)
	var died atomic.Bool
	fs.createUser = func(context.Context) error {
		if died.CompareAndSwap(false, true) {
			fs.release = func(context.Context, string, string, string) error { return nil }
			return account.Unavailable(errors.New("injected: the process stops here"))
		}
		fs.release = nil
		return nil
	}
	key, email := unique("died-"), uniqueEmail()
	body := map[string]any{"email": email, "name": "Ada"}
	want(t, a.doKey(http.MethodPost, "/v1/users", a.AdminKey, key, body), http.StatusServiceUnavailable)
	wantProblem(t, a.doKey(http.MethodPost, "/v1/users", a.AdminKey, key, body), http.StatusConflict, "idempotency_in_progress")
	a.Clock.Advance(account.IdempotencyLease)
	res := a.doKey(http.MethodPost, "/v1/users", a.AdminKey, key, body)
	want(t, res, http.StatusCreated)
	wantCarriedOut(t, res)
	if n := a.usersWithEmail(email); n != 1 {
		t.Errorf("users with the e-mail: got %d, want 1", n)
	}
}

func TestIdempotencyKey_ResponseLost(t *testing.T) {
	// The change commits with the record, and then the answer cannot be
	// stored (the process stops there). The client of the first request
	// got nothing; its retry must not create a second user.
	a, fs := newFaultAPI(t)
	fs.finish = func(context.Context, account.IdempotencyRecord) error {
		return account.Unavailable(errors.New("injected: the process stops here"))
	}
	key, email := unique("lost-"), uniqueEmail()
	body := map[string]any{"email": email, "name": "Ada"}
	want(t, a.doKey(http.MethodPost, "/v1/users", a.AdminKey, key, body), http.StatusCreated)
	fs.finish = nil
	wantProblem(t, a.doKey(http.MethodPost, "/v1/users", a.AdminKey, key, body), http.StatusConflict, "idempotency_in_progress")
	a.Clock.Advance(account.IdempotencyLease)
	for range 2 {
		wantProblem(t, a.doKey(http.MethodPost, "/v1/users", a.AdminKey, key, body), http.StatusConflict, "idempotency_response_lost")
	}
	if n := a.usersWithEmail(email); n != 1 {
		t.Errorf("users with the e-mail: got %d, want 1", n)
	}
}

// TestIdempotencyKey_Concurrent sends 50 identical creates with one key at
// once: exactly one is carried out; the others wait (409) or get its
// answer.
func TestIdempotencyKey_Concurrent(t *testing.T) {
	a := newAPI(t)
	const n = 50
	key, email := unique("race-"), uniqueEmail()
	body := map[string]any{"email": email, "name": "Racer"}
	res := make([]*httpapitest.Response, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			res[i] = a.DoRaw(t, a.Handler, http.MethodPost, "/v1/users", keyHeader(a.AdminKey, key), body)
		})
	}
	close(start)
	wg.Wait()
	var carried *httpapitest.Response
	replayed, waiting := 0, 0
	for i, r := range res {
		a.CheckResponse(t, r)
		switch {
		case r.StatusCode == http.StatusCreated && r.Header.Get("Idempotent-Replayed") == "":
			if carried != nil {
				t.Fatalf("request %d was carried out too", i)
			}
			carried = r
		case r.StatusCode == http.StatusCreated:
			replayed++
		default:
			wantProblem(t, r, http.StatusConflict, "idempotency_in_progress")
			waiting++
		}
	}
	if carried == nil {
		t.Fatal("no request was carried out")
	}
	for _, r := range res {
		if r.StatusCode == http.StatusCreated && r != carried {
			wantReplayOf(t, r, carried)
		}
	}
	t.Logf("1 carried out, %d replayed, %d told to retry", replayed, waiting)
	if n := a.usersWithEmail(email); n != 1 {
		t.Errorf("users with the e-mail: got %d, want 1", n)
	}
}

// storedAnswer reads the record of the admin key's Idempotency-Key key,
// with a claim that cannot succeed.
func (a api) storedAnswer(key string) account.IdempotencyRecord {
	a.t.Helper()
	p, err := a.Service.Authenticate(context.Background(), a.AdminKey)
	if err != nil {
		a.t.Fatal(err)
	}
	now := a.Clock.Now()
	probe := account.IdempotencyRecord{KeyID: p.KeyID, Key: key, Fingerprint: []byte("probe"), Owner: "probe",
		State: account.IdempotencyStarted, LeaseUntil: now.Add(time.Second), CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	held, claimed, err := a.Store.ClaimIdempotency(context.Background(), probe, now)
	if err != nil || claimed || held.State != account.IdempotencyDone {
		a.t.Fatalf("the record of %q: %+v, claimed %v, %v; want a done record", key, held, claimed, err)
	}
	return held
}

func TestIdempotencyKey_SecretsSealed(t *testing.T) {
	a := newAPI(t)
	t.Run("APIKey", func(t *testing.T) {
		key, body := unique("newkey-"), map[string]any{"name": "ci", "scopes": []string{"read:users"}}
		first := a.doKey(http.MethodPost, "/v1/api-keys", a.AdminKey, key, body)
		want(t, first, http.StatusCreated)
		secret := first.Map(t)["key"].(string)
		rec := a.storedAnswer(key)
		if bytes.Contains(rec.Response, []byte(secret)) || bytes.Contains(rec.Response, []byte(strings.TrimPrefix(secret, account.APIKeyPrefix))) {
			t.Fatal("the stored answer holds the API key secret in clear")
		}
		if bytes.Contains(rec.Response, []byte(`"name"`)) {
			t.Error("the stored answer is not sealed: its JSON is readable")
		}
		replay := a.doKey(http.MethodPost, "/v1/api-keys", a.AdminKey, key, body)
		wantReplayOf(t, replay, first)
		if _, err := a.Service.Authenticate(context.Background(), replay.Map(t)["key"].(string)); err != nil {
			t.Errorf("the replayed secret does not authenticate: %v", err)
		}
	})
	t.Run("AccessToken", func(t *testing.T) {
		key, body := unique("token-"), map[string]any{"scopes": []string{"read:users"}}
		first := a.doKey(http.MethodPost, "/v1/auth/token", a.AdminKey, key, body)
		want(t, first, http.StatusCreated)
		tok := first.Map(t)["access_token"].(string)
		if bytes.Contains(a.storedAnswer(key).Response, []byte(tok)) {
			t.Fatal("the stored answer holds the access token in clear")
		}
		wantReplayOf(t, a.doKey(http.MethodPost, "/v1/auth/token", a.AdminKey, key, body), first)
	})
	t.Run("ForgedNotReplayed", func(t *testing.T) {
		// Another function's role may write the table, but not seal: a
		// record it wrote, in clear or under another key, replays nothing.
		key, body := unique("forged-"), map[string]any{"name": "ci", "scopes": []string{"read:users"}}
		want(t, a.doKey(http.MethodPost, "/v1/api-keys", a.AdminKey, key, body), http.StatusCreated)
		rec := a.storedAnswer(key)
		for name, forged := range map[string][]byte{
			"Clear":      append([]byte{0}, `{"status":201,"header":{"Content-Type":["application/json"]},"body":"eyJrZXkiOiJsa19mb3JnZWQifQ=="}`...),
			"OtherKey":   sealUnder(t, rec, httpapi.SealKey([]byte("not the service's signing key"))),
			"Truncated":  rec.Response[:10],
			"BitFlipped": flip(rec.Response),
		} {
			t.Run(name, func(t *testing.T) {
				r := rec
				r.Response = forged
				if err := a.Store.FinishIdempotency(context.Background(), r); err != nil {
					t.Fatal(err)
				}
				wantProblem(t, a.doKey(http.MethodPost, "/v1/api-keys", a.AdminKey, key, body), http.StatusConflict, "idempotency_response_lost")
			})
		}
	})
}

// sealUnder returns the answer of rec sealed as a handler with seal would
// seal it: the answer a handler with other keys must refuse.
func sealUnder(t *testing.T, rec account.IdempotencyRecord, seal []byte) []byte {
	t.Helper()
	env := httpapitest.NewServer(t)
	cfg := env.Config
	cfg.SealKeys = [][]byte{seal}
	env.Handler = httpapi.New(cfg)
	other := api{Env: env, t: t}
	want(t, other.doKey(http.MethodPost, "/v1/api-keys", env.AdminKey, rec.Key, map[string]any{"name": "forger", "scopes": []string{"read:users"}}), http.StatusCreated)
	return other.storedAnswer(rec.Key).Response
}

func flip(b []byte) []byte {
	out := bytes.Clone(b)
	out[len(out)-1] ^= 1
	return out
}

package account_test

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	"latchkey/pkg/account"
	"latchkey/pkg/teststore"
)

// usageEnv is a service with an organization and a key bound to it, and
// that key's principal.
type usageEnv struct {
	*env
	org account.Organization
	key account.Principal
}

func newUsageEnv(t *testing.T, store account.Store) usageEnv {
	t.Helper()
	e := newEnvOver(t, store)
	o := e.org(t, "acme")
	_, secret, err := e.svc.CreateAPIKey(e.ctx, e.admin, account.NewAPIKey{Name: "acme key", OrganizationID: o.ID, Scopes: []string{"read:api_keys", "read:organizations"}})
	if err != nil {
		t.Fatalf("CreateAPIKey: %v", err)
	}
	return usageEnv{env: e, org: o, key: e.auth(t, secret)}
}

func (u usageEnv) token(t *testing.T, expiresIn string) string {
	t.Helper()
	tok, _, err := u.svc.IssueToken(u.ctx, u.key, account.TokenRequest{Scopes: []string{"read:api_keys"}, ExpiresIn: expiresIn})
	if err != nil {
		t.Fatalf("IssueToken: %v", err)
	}
	return tok
}

func (u usageEnv) verify(t *testing.T, svc *account.Service, tok string, want string) {
	t.Helper()
	v, err := svc.VerifyToken(u.ctx, tok)
	if err != nil {
		t.Fatalf("VerifyToken: %v", err)
	}
	if got := map[bool]string{true: account.OutcomeValid, false: v.Reason}[v.Valid]; got != want {
		t.Fatalf("VerifyToken: got %s, want %s", got, want)
	}
}

// total sums the key's and the organization's hour buckets of the last day.
func (u usageEnv) total(t *testing.T) (key, org account.UsageCounts) {
	t.Helper()
	q := account.UsageQuery{Interval: account.IntervalHour, From: u.clock.Now().Add(-48 * time.Hour), To: u.clock.Now().Add(time.Hour)}
	kb, err := u.svc.APIKeyUsage(u.ctx, u.admin, u.key.KeyID, q)
	if err != nil {
		t.Fatalf("APIKeyUsage: %v", err)
	}
	ob, err := u.svc.OrganizationUsage(u.ctx, u.admin, u.org.ID, q)
	if err != nil {
		t.Fatalf("OrganizationUsage: %v", err)
	}
	for _, b := range kb {
		key.Add(b.UsageCounts)
	}
	for _, b := range ob {
		org.Add(b.UsageCounts)
	}
	return key, org
}

func TestService_Usage(t *testing.T) {
	t.Run("Outcomes", func(t *testing.T) {
		u := newUsageEnv(t, teststore.Open(t))
		tok, short := u.token(t, ""), u.token(t, "1m")
		for range 3 {
			u.verify(t, u.svc, tok, account.OutcomeValid)
		}
		if _, err := u.svc.IntrospectToken(u.ctx, u.admin, tok); err != nil {
			t.Fatal(err)
		}
		u.verify(t, u.svc, "not a token", account.ReasonInvalid) // names no key: not counted
		// Another tenant's introspection learns nothing of the token and
		// counts nothing against its key.
		otherOrg := u.env.org(t, "other-tenant")
		_, otherSecret, err := u.svc.CreateAPIKey(u.ctx, u.admin, account.NewAPIKey{Name: "other", OrganizationID: otherOrg.ID, Scopes: []string{"read:api_keys"}})
		if err != nil {
			t.Fatal(err)
		}
		if v, err := u.svc.IntrospectToken(u.ctx, u.auth(t, otherSecret), tok); err != nil || v.Valid || v.Reason != account.ReasonInvalid {
			t.Fatalf("IntrospectToken by another tenant: got %+v, %v; want invalid", v, err)
		}
		if _, err := u.svc.RevokeToken(u.ctx, u.admin, tok); err != nil {
			t.Fatal(err)
		}
		u.verify(t, u.svc, tok, account.ReasonRevoked)
		u.verify(t, u.svc, tok, account.ReasonRevoked)
		u.clock.Advance(time.Minute)
		u.verify(t, u.svc, short, account.ReasonExpired)
		if err := u.svc.FlushUsage(u.ctx); err != nil {
			t.Fatal(err)
		}
		key, org := u.total(t)
		want := account.UsageCounts{Verifications: map[string]int64{"valid": 4, "revoked": 2, "expired": 1}, TokensIssued: 2}
		if !reflect.DeepEqual(key, want) {
			t.Errorf("key: got %+v, want %+v", key, want)
		}
		want.Keys = map[string]int64{u.key.KeyID: 7}
		if !reflect.DeepEqual(org, want) {
			t.Errorf("organization: got %+v, want %+v", org, want)
		}
		top, err := u.svc.TopKeys(u.ctx, u.admin, u.org.ID, account.UsageQuery{}, 10)
		if err != nil || len(top) != 1 || top[0] != (account.KeyVerifications{KeyID: u.key.KeyID, Verifications: 7}) {
			t.Errorf("TopKeys: got %+v, %v", top, err)
		}
	})
	t.Run("TwoInstancesAndARestart", func(t *testing.T) {
		// Two services on one store verify at once; then one restarts
		// (shuts down, flushing on the way, and a new one takes over).
		u := newUsageEnv(t, teststore.Open(t))
		tok := u.token(t, "")
		other := u.twin(t)
		var wg sync.WaitGroup
		for _, svc := range []*account.Service{u.svc, other} {
			for range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range 25 {
						if _, err := svc.VerifyToken(u.ctx, tok); err != nil {
							t.Error(err)
						}
					}
				}()
			}
		}
		wg.Wait()
		ctx, stop := context.WithCancel(u.ctx)
		done := make(chan struct{})
		go func() { other.UsageTally().Run(ctx, time.Hour); close(done) }()
		stop()
		<-done
		restarted := u.twin(t)
		u.verify(t, restarted, tok, account.OutcomeValid)
		for _, svc := range []*account.Service{u.svc, restarted} {
			if err := svc.FlushUsage(u.ctx); err != nil {
				t.Fatal(err)
			}
		}
		key, org := u.total(t)
		if key.Verifications["valid"] != 201 || org.Verifications["valid"] != 201 || org.Keys[u.key.KeyID] != 201 {
			t.Errorf("got key %+v, organization %+v, want 201 valid each", key, org)
		}
	})
	t.Run("RetriedFlush", func(t *testing.T) {
		// The first flush is made but its answer is lost; the next one
		// retries it, and adds what was counted since, each once.
		lost := &losingStore{Store: teststore.Open(t)}
		u := newUsageEnv(t, lost)
		tok := u.token(t, "")
		u.verify(t, u.svc, tok, account.OutcomeValid)
		lost.lose = 1
		if err := u.svc.FlushUsage(u.ctx); err == nil {
			t.Fatal("FlushUsage: got no error, want the lost answer's")
		}
		u.verify(t, u.svc, tok, account.OutcomeValid)
		if err := u.svc.FlushUsage(u.ctx); err != nil {
			t.Fatal(err)
		}
		if err := u.svc.FlushUsage(u.ctx); err != nil {
			t.Fatal(err)
		}
		key, org := u.total(t)
		if key.Verifications["valid"] != 2 || key.TokensIssued != 1 || org.Verifications["valid"] != 2 {
			t.Errorf("got key %+v, organization %+v, want 2 valid and 1 token", key, org)
		}
	})
	t.Run("NoWritePerVerification", func(t *testing.T) {
		// 200 verifications within the flush interval write nothing; the
		// first after it starts one flush of 6 buckets, in the background.
		counting := &losingStore{Store: teststore.Open(t)}
		e := newUsageEnv(t, counting)
		e.clock.Set(e.clock.Now().Truncate(time.Minute).Add(time.Minute)) // 5 s later is the same minute
		tally := account.NewUsageTally(counting, account.UsageOptions{Every: 5 * time.Second}, e.clock.Now)
		svc := e.twinWith(t, tally)
		tok := e.token(t, "")
		for range 200 {
			e.verify(t, svc, tok, account.OutcomeValid)
		}
		if n, _ := counting.counts(); n != 0 {
			t.Fatalf("flushes within the interval: got %d, want 0", n)
		}
		e.clock.Advance(5 * time.Second)
		e.verify(t, svc, tok, account.OutcomeValid)
		deadline := time.Now().Add(10 * time.Second)
		for {
			if n, deltas := counting.counts(); n == 1 {
				if deltas != 6 {
					t.Errorf("buckets written: got %d, want 6 (3 of the key, 3 of its organization)", deltas)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("no flush 10 s after the interval")
			}
			time.Sleep(10 * time.Millisecond)
		}
		if err := tally.Flush(e.ctx); err != nil {
			t.Fatal(err)
		}
		if key, _ := e.total(t); key.Verifications["valid"] != 201 {
			t.Errorf("got %+v, want 201 valid", key)
		}
	})
	t.Run("TopKeys", func(t *testing.T) {
		u := newUsageEnv(t, teststore.Open(t))
		k2, secret2, err := u.svc.CreateAPIKey(u.ctx, u.admin, account.NewAPIKey{Name: "second", OrganizationID: u.org.ID, Scopes: []string{"read:api_keys"}})
		if err != nil {
			t.Fatal(err)
		}
		tok1 := u.token(t, "")
		tok2, _, err := u.svc.IssueToken(u.ctx, u.auth(t, secret2), account.TokenRequest{Scopes: []string{"read:api_keys"}})
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			u.verify(t, u.svc, tok1, account.OutcomeValid)
		}
		for range 5 {
			u.verify(t, u.svc, tok2, account.OutcomeValid)
		}
		if err := u.svc.FlushUsage(u.ctx); err != nil {
			t.Fatal(err)
		}
		top, err := u.svc.TopKeys(u.ctx, u.admin, u.org.ID, account.UsageQuery{Interval: account.IntervalDay, From: u.clock.Now().Add(-30 * 24 * time.Hour)}, 10)
		want := []account.KeyVerifications{{KeyID: k2.ID, Verifications: 5}, {KeyID: u.key.KeyID, Verifications: 3}}
		if err != nil || !reflect.DeepEqual(top, want) {
			t.Errorf("TopKeys: got %+v, %v; want %+v", top, err, want)
		}
		top, err = u.svc.TopKeys(u.ctx, u.key, u.org.ID, account.UsageQuery{}, 1)
		if err != nil || !reflect.DeepEqual(top, want[:1]) {
			t.Errorf("TopKeys, 1, by the bound key: got %+v, %v; want %+v", top, err, want[:1])
		}
	})
	t.Run("Query", func(t *testing.T) {
		u := newUsageEnv(t, teststore.Open(t))
		now := u.clock.Now()
		_, err := u.svc.APIKeyUsage(u.ctx, u.admin, u.key.KeyID, account.UsageQuery{Interval: account.IntervalMinute, From: now.Add(-1001 * time.Minute), To: now})
		wantCode(t, err, account.CodeTooManyBuckets)
		if _, err := u.svc.APIKeyUsage(u.ctx, u.admin, u.key.KeyID, account.UsageQuery{Interval: account.IntervalMinute, From: now.Add(-999 * time.Minute), To: now}); err != nil {
			t.Errorf("999 minutes: %v", err)
		}
		_, err = u.svc.OrganizationUsage(u.ctx, u.admin, u.org.ID, account.UsageQuery{From: now, To: now.Add(-time.Hour)})
		wantFields(t, err, "from")
		_, err = u.svc.OrganizationUsage(u.ctx, u.admin, u.org.ID, account.UsageQuery{Interval: "week"})
		wantFields(t, err, "interval")
	})
	t.Run("Tenancy", func(t *testing.T) {
		u := newUsageEnv(t, teststore.Open(t))
		if _, err := u.svc.OrganizationUsage(u.ctx, u.key, u.org.ID, account.UsageQuery{}); err != nil {
			t.Errorf("own organization: %v", err)
		}
		if _, err := u.svc.APIKeyUsage(u.ctx, u.key, u.key.KeyID, account.UsageQuery{}); err != nil {
			t.Errorf("own key: %v", err)
		}
		other := u.env.org(t, "other")
		_, err := u.svc.OrganizationUsage(u.ctx, u.key, other.ID, account.UsageQuery{})
		wantCode(t, err, account.CodeNotFound)
		_, err = u.svc.APIKeyUsage(u.ctx, u.key, u.admin.KeyID, account.UsageQuery{})
		wantCode(t, err, account.CodeNotFound)
		reader, _ := u.env.key(t, "", "read:users")
		_, err = u.svc.OrganizationUsage(u.ctx, reader, u.org.ID, account.UsageQuery{})
		wantCode(t, err, account.CodeInsufficientScope)
		_, err = u.svc.APIKeyUsage(u.ctx, reader, u.key.KeyID, account.UsageQuery{})
		wantCode(t, err, account.CodeInsufficientScope)
	})
	// A page that read the key or organization passes it on, unread again
	// (the console): the rule of reading it still holds on what it passes.
	t.Run("TenancyOfWhatWasRead", func(t *testing.T) {
		u := newUsageEnv(t, teststore.Open(t))
		other := u.env.org(t, "other")
		adminKey, err := u.svc.GetAPIKey(u.ctx, u.admin, u.admin.KeyID)
		if err != nil {
			t.Fatal(err)
		}
		_, err = u.svc.OrganizationUsageOf(u.ctx, u.key, other, account.UsageQuery{})
		wantCode(t, err, account.CodeNotFound)
		_, err = u.svc.OrganizationRateLimits(u.ctx, u.key, other)
		wantCode(t, err, account.CodeNotFound)
		_, err = u.svc.APIKeyUsageOf(u.ctx, u.key, adminKey, account.UsageQuery{})
		wantCode(t, err, account.CodeNotFound)
		_, err = u.svc.APIKeyRateLimits(u.ctx, u.key, adminKey)
		wantCode(t, err, account.CodeNotFound)
		reader, _ := u.env.key(t, "", "read:users")
		_, err = u.svc.OrganizationUsageOf(u.ctx, reader, u.org, account.UsageQuery{})
		wantCode(t, err, account.CodeInsufficientScope)
		_, err = u.svc.APIKeyUsageOf(u.ctx, reader, adminKey, account.UsageQuery{})
		wantCode(t, err, account.CodeInsufficientScope)
		if _, err := u.svc.OrganizationUsageOf(u.ctx, u.key, u.org, account.UsageQuery{}); err != nil {
			t.Errorf("own organization: %v", err)
		}
	})
}

// losingStore counts AddUsage calls and their deltas, and makes lose of
// them, then fails them as if their answers were lost.
type losingStore struct {
	account.Store
	mu             sync.Mutex
	lose           int
	flushes, delta int
}

func (s *losingStore) counts() (flushes, deltas int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.flushes, s.delta
}

func (s *losingStore) AddUsage(ctx context.Context, f account.UsageFlush) error {
	err := s.Store.AddUsage(ctx, f)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushes++
	s.delta += len(f.Deltas)
	if err == nil && s.lose > 0 {
		s.lose--
		return account.Unavailable(errors.New("the answer was lost"))
	}
	return err
}

// twinWith is twin counting into tally.
func (e *env) twinWith(t *testing.T, tally *account.UsageTally) *account.Service {
	t.Helper()
	opts := e.opts
	opts.Usage = tally
	svc, err := account.NewService(e.store, opts)
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// twin is another process's service over the same store, with the same
// signing key: a second instance, or the same one restarted.
func (e *env) twin(t *testing.T) *account.Service {
	t.Helper()
	svc, err := account.NewService(e.store, e.opts)
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

package tablestore_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"latchkey/pkg/account"
	"latchkey/pkg/dynamostore"
	"latchkey/pkg/dynamostore/dynamotest"
	"latchkey/pkg/tablestore"
)

func TestParseTimeout(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"", dynamostore.DefaultTimeout, true},
		{"3s", 3 * time.Second, true},
		{" 500ms ", 500 * time.Millisecond, true},
		{"100ms", 100 * time.Millisecond, true},
		{"5s", 5 * time.Second, true},
		{"99ms", 0, false},
		{"6s", 0, false},
		{"0", 0, false},
		{"-1s", 0, false},
		{"3", 0, false},
		{"soon", 0, false},
	} {
		got, err := dynamostore.ParseTimeout(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseTimeout(%q): got %v, %v; want %v, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

// storeCalls returns one call of every method of the store that takes a
// context, on the items of the fixture, so that a test can run them all.
func storeCalls(s *tablestore.Store, user account.User, org account.Organization, key account.APIKey, tok account.TokenRecord) map[string]func(context.Context) error {
	page := account.ListParams{Limit: 20}
	name := "Renamed"
	at := time.Now().UTC()
	other := newUser(at)
	idem := account.IdempotencyRecord{KeyID: key.ID, Key: "deadline", Fingerprint: []byte{1}, Owner: "deadline", State: account.IdempotencyStarted,
		LeaseUntil: at.Add(account.IdempotencyLease), CreatedAt: at, ExpiresAt: at.Add(account.IdempotencyRetention)}
	return map[string]func(context.Context) error{
		"CreateUser": func(ctx context.Context) error { return s.CreateUser(ctx, account.WriteOptions{}, other) },
		"GetUser":    func(ctx context.Context) error { _, err := s.GetUser(ctx, user.ID); return err },
		"LeaseStatusIndexes": func(ctx context.Context) error {
			list := account.StatusListID(at, at, 0)
			_, err := s.LeaseStatusIndexes(ctx, list, account.StatusBlock, account.StatusListExpiry(list))
			return err
		},
		"GetStatusList": func(ctx context.Context) error {
			_, err := s.GetStatusList(ctx, account.StatusListID(at, at, 0))
			if account.ErrorCode(err) == account.CodeNotFound {
				return nil // the lease may not have been made: the read was
			}
			return err
		},
		"ListStatusLists": func(ctx context.Context) error { _, err := s.ListStatusLists(ctx, at); return err },
		"AddUsage": func(ctx context.Context) error {
			hour := at.Truncate(time.Hour)
			return s.AddUsage(ctx, account.UsageFlush{Process: "deadline", Seq: 1, Deltas: []account.UsageDelta{{
				Subject: key.ID, Interval: account.IntervalHour, Start: hour, ExpireAt: hour.Add(account.DefaultUsageRetention.Hour),
				Counts: account.UsageCounts{Verifications: map[string]int64{account.OutcomeValid: 1}},
			}}})
		},
		"ReadUsage": func(ctx context.Context) error {
			_, err := s.ReadUsage(ctx, key.ID, account.IntervalHour, at.Add(-time.Hour), at)
			return err
		},
		"GetUserByEmail": func(ctx context.Context) error { _, err := s.GetUserByEmail(ctx, user.Email); return err },
		"GetUserByExternalID": func(ctx context.Context) error {
			_, err := s.GetUserByExternalID(ctx, "crm-1")
			return err
		},
		"UpdateUser": func(ctx context.Context) error {
			// An e-mail change: the read and the transaction.
			_, err := s.UpdateUser(ctx, account.WriteOptions{}, user.ID, account.UserPatch{Name: &name, Email: &other.Email, UpdatedAt: at})
			return err
		},
		"CreateUserInOrganization": func(ctx context.Context) error {
			u := newUser(at.Add(time.Millisecond))
			return s.CreateUserInOrganization(ctx, account.WriteOptions{}, u, account.Membership{OrganizationID: org.ID, UserID: u.ID, Role: "member", CreatedAt: at, UpdatedAt: at})
		},
		"DeleteUser": func(ctx context.Context) error { return s.DeleteUser(ctx, account.WriteOptions{}, user.ID) },
		"ListUsers":  func(ctx context.Context) error { _, err := s.ListUsers(ctx, page); return err },
		"ListOrganizationUsers": func(ctx context.Context) error {
			_, err := s.ListOrganizationUsers(ctx, org.ID, page)
			return err
		},
		"CreateOrganization": func(ctx context.Context) error { return s.CreateOrganization(ctx, account.WriteOptions{}, newOrg(at)) },
		"GetOrganization":    func(ctx context.Context) error { _, err := s.GetOrganization(ctx, org.ID); return err },
		"GetOrganizationBySlug": func(ctx context.Context) error {
			_, err := s.GetOrganizationBySlug(ctx, org.Slug)
			return err
		},
		"GetOrganizationByExternalID": func(ctx context.Context) error {
			_, err := s.GetOrganizationByExternalID(ctx, "acct-1")
			return err
		},
		"UpdateOrganization": func(ctx context.Context) error {
			_, err := s.UpdateOrganization(ctx, account.WriteOptions{}, org.ID, account.OrganizationPatch{Name: &name, UpdatedAt: at})
			return err
		},
		"DeleteOrganization": func(ctx context.Context) error { return s.DeleteOrganization(ctx, account.WriteOptions{}, org.ID) },
		"ListOrganizations":  func(ctx context.Context) error { _, err := s.ListOrganizations(ctx, page); return err },
		"AddMember": func(ctx context.Context) error {
			return s.AddMember(ctx, account.WriteOptions{}, account.Membership{OrganizationID: org.ID, UserID: other.ID, Role: "member", CreatedAt: at, UpdatedAt: at})
		},
		"GetMember": func(ctx context.Context) error { _, err := s.GetMember(ctx, org.ID, user.ID); return err },
		"UpdateMember": func(ctx context.Context) error {
			_, err := s.UpdateMember(ctx, account.WriteOptions{}, org.ID, user.ID, account.MemberPatch{Role: "admin", UpdatedAt: at})
			return err
		},
		"RemoveMember":        func(ctx context.Context) error { return s.RemoveMember(ctx, account.WriteOptions{}, org.ID, user.ID) },
		"ListMembers":         func(ctx context.Context) error { _, err := s.ListMembers(ctx, org.ID, page); return err },
		"ListUserMemberships": func(ctx context.Context) error { _, err := s.ListUserMemberships(ctx, user.ID, page); return err },
		"CreateAPIKey":        func(ctx context.Context) error { return s.CreateAPIKey(ctx, account.WriteOptions{}, newKey(at)) },
		"GetAPIKey":           func(ctx context.Context) error { _, err := s.GetAPIKey(ctx, key.ID); return err },
		"GetAPIKeyByHash":     func(ctx context.Context) error { _, err := s.GetAPIKeyByHash(ctx, key.Hash); return err },
		"UpdateAPIKey": func(ctx context.Context) error {
			_, err := s.UpdateAPIKey(ctx, account.WriteOptions{}, key.ID, account.APIKeyPatch{Name: &name}, nil)
			return err
		},
		"DeleteAPIKey": func(ctx context.Context) error { return s.DeleteAPIKey(ctx, account.WriteOptions{}, key.ID, nil) },
		"ChangeKeyUsage": func(ctx context.Context) error {
			_, _, err := s.ChangeKeyUsage(ctx, key.ID, 0, account.UsageChange{Steps: []account.CounterStep{{Name: "r:deadline:1000:1", Delta: 1, Min: 1, Max: 10}}})
			return err
		},
		"ChangeKeysUsage": func(ctx context.Context) error {
			step := account.UsageChange{Steps: []account.CounterStep{{Name: "r:deadline:1000:1", Delta: 1, Min: 1, Max: 10}}}
			_, _, err := s.ChangeKeysUsage(ctx, []account.KeyUsageChange{{KeyID: key.ID, UsageChange: step, ReadAfter: true}, {KeyID: "key_above", UsageChange: step}})
			return err
		},
		"KeyUsage": func(ctx context.Context) error {
			_, err := s.KeyUsage(ctx, account.UsageRecord{KeyID: key.ID})
			return err
		},
		"RecordAPIKeyUse": func(ctx context.Context) error {
			_, err := s.RecordAPIKeyUse(ctx, key, at)
			return err
		},
		"ListAPIKeys": func(ctx context.Context) error {
			_, err := s.ListAPIKeys(ctx, account.APIKeyFilter{}, page)
			return err
		},
		"CreateToken": func(ctx context.Context) error { return s.CreateToken(ctx, account.WriteOptions{}, tok) },
		"ListTokens": func(ctx context.Context) error {
			_, err := s.ListTokens(ctx, key.ID, tok.IssuedAt.Add(-time.Hour), page)
			return err
		},
		"RevokeToken": func(ctx context.Context) error {
			_, err := s.RevokeToken(ctx, account.WriteOptions{}, account.Revocation{TokenID: tok.ID, KeyID: key.ID, RevokedAt: at, ExpiresAt: tok.ExpiresAt})
			return err
		},
		"TokenStatus": func(ctx context.Context) error {
			_, err := s.TokenStatus(ctx, tok.ID, key.ID, nil, "", false)
			return err
		},
		"ListEvents": func(ctx context.Context) error {
			_, err := s.ListEvents(ctx, account.EventQuery{After: account.EventIDAt(at.Add(-time.Hour)), Since: at.Add(-account.EventRetention)})
			return err
		},
		"PutPublicKeys": func(ctx context.Context) error { return s.PutPublicKeys(ctx, []byte(`{"keys":[]}`), at) },
		"PutIssuer":     func(ctx context.Context) error { return s.PutIssuer(ctx, "https://auth.example.com") },
		"Published":     func(ctx context.Context) error { _, _, err := s.Published(ctx); return err },
		"Formats":       func(ctx context.Context) error { _, err := s.Formats(ctx); return err },
		"PutFormats":    func(ctx context.Context) error { return s.PutFormats(ctx, account.Formats{SetBy: "test"}) },
		"ClaimIdempotency": func(ctx context.Context) error {
			_, _, err := s.ClaimIdempotency(ctx, idem, at)
			return err
		},
		"FinishIdempotency":  func(ctx context.Context) error { return s.FinishIdempotency(ctx, idem) },
		"ReleaseIdempotency": func(ctx context.Context) error { return s.ReleaseIdempotency(ctx, idem.KeyID, idem.Key, idem.Owner) },
		// Test-only views (export_test.go), which read the table too.
		"UserMembershipSides": func(ctx context.Context) error { _, err := s.UserMembershipSides(ctx, user.ID); return err },
		"OrgMembershipSides":  func(ctx context.Context) error { _, err := s.OrgMembershipSides(ctx, org.ID); return err },
		"APIKeyExpireAt":      func(ctx context.Context) error { _, _, err := s.APIKeyExpireAt(ctx, key.ID, key.Hash); return err },
		"APIKeyItems":         func(ctx context.Context) error { _, err := s.APIKeyItems(ctx, key); return err },
		"VerifyCopies":        func(ctx context.Context) error { _, err := s.VerifyCopies(ctx, key.ID); return err },
		"ForgetUsage":         func(ctx context.Context) error { return s.ForgetUsage(ctx, key.ID) },
		"PutPreviousCopies":   func(ctx context.Context) error { return s.PutPreviousCopies(ctx, key.ID) },
		"DropOverflowBound":   func(ctx context.Context) error { return s.DropOverflowBound(ctx, key.ID) },
		"GrowCopies":          func(ctx context.Context) error { return s.GrowCopies(ctx, key.ID) },
		"PreviousReleaseRevoked": func(ctx context.Context) error {
			_, err := s.PreviousReleaseRevoked(ctx, tok.ID, key.ID, 1)
			return err
		},
		"TokenStatusOfCopy": func(ctx context.Context) error {
			_, err := s.TokenStatusOfCopy(ctx, 1, tok.ID, key.ID, nil, "", false)
			return err
		},
		"PutEvent": func(ctx context.Context) error {
			src := &account.EventSource{Encode: func(account.Event) ([]byte, error) { return []byte(`{}`), nil }}
			return s.PutEvent(ctx, src, account.PendingEvent{Type: account.EventOrganizationUpdated, Data: org}, account.NewEventID(at), at)
		},
		"StoredEvent": func(ctx context.Context) error {
			_, _, err := s.StoredEvent(ctx, account.NewEventID(at), at, org.ID)
			return err
		},
	}
}

// TestDeadline runs a DynamoDB Local of its own, freezes it with SIGSTOP
// (the process lives and its port accepts connections, but nothing answers)
// and proves that every call of the store then ends, within the store's
// timeout, in CodeUnavailable; that a caller who gives up first gets its own
// context's error, not CodeUnavailable; that the store recovers when the
// process is continued; and that a table that disappeared is CodeUnavailable
// naming the table, not an internal error.
func TestDeadline(t *testing.T) {
	p := dynamotest.StartProcess(t)
	client := p.Client()
	table := dynamotest.NewTable(t, client)
	ctx := t.Context()
	now := time.Now().UTC().Truncate(time.Millisecond)
	user, org, key := newUser(now), newOrg(now), newKey(now)
	tok := account.TokenRecord{ID: account.NewID(account.PrefixToken, now), KeyID: key.ID, Scopes: []string{"read:users"}, IssuedAt: now, ExpiresAt: now.Add(time.Hour)}
	// Seeded with the default timeout: a DynamoDB Local just started is
	// slow to answer its first requests.
	seed := dynamostore.New(client, table, dynamostore.WithTimeout(dynamotest.Timeout))
	must(t, seed.CreateUser(ctx, account.WriteOptions{}, user), "CreateUser")
	must(t, seed.CreateOrganization(ctx, account.WriteOptions{}, org), "CreateOrganization")
	must(t, seed.AddMember(ctx, account.WriteOptions{}, account.Membership{OrganizationID: org.ID, UserID: user.ID, Role: "owner", CreatedAt: now, UpdatedAt: now}), "AddMember")
	must(t, seed.CreateAPIKey(ctx, account.WriteOptions{}, key), "CreateAPIKey")
	must(t, seed.CreateToken(ctx, account.WriteOptions{}, tok), "CreateToken")
	must(t, seed.PutPublicKeys(ctx, []byte(`{"keys":[]}`), now), "PutPublicKeys")
	// Read back once the process is continued. No call made while it is
	// frozen names this user: those requests sit in the socket and may
	// still be carried out after SIGCONT (DeleteUser among them), so the
	// seeded user may be gone by then.
	probe := newUser(now)
	must(t, seed.CreateUser(ctx, account.WriteOptions{}, probe), "CreateUser")
	const timeout = 300 * time.Millisecond
	s := dynamostore.New(client, table, dynamostore.WithTimeout(timeout))
	calls := storeCalls(s, user, org, key, tok)

	t.Run("EveryCallCovered", func(t *testing.T) {
		// A method added to the store later must be added to storeCalls.
		ctxType := reflect.TypeFor[context.Context]()
		st := reflect.TypeFor[*tablestore.Store]()
		// Methods that make no call on a store without serial writes
		// (DynamoDB): nothing of theirs can hang here.
		noCall := map[string]bool{"ResumeEvents": true}
		for i := range st.NumMethod() {
			m := st.Method(i)
			if m.Type.NumIn() > 1 && m.Type.In(1) == ctxType && calls[m.Name] == nil && !noCall[m.Name] {
				t.Errorf("storeCalls has no call of %s", m.Name)
			}
		}
	})

	p.Freeze(t)
	thawed := false
	defer func() {
		if !thawed {
			p.Thaw(t)
		}
	}()

	t.Run("Frozen", func(t *testing.T) {
		// All at once: each waits out the timeout on its own connection.
		type result struct {
			elapsed time.Duration
			err     error
		}
		var mu sync.Mutex
		results := map[string]result{}
		var wg sync.WaitGroup
		for name, call := range calls {
			wg.Go(func() {
				start := time.Now()
				err := call(ctx)
				mu.Lock()
				results[name] = result{time.Since(start), err}
				mu.Unlock()
			})
		}
		wg.Wait()
		names := slices.Sorted(func(yield func(string) bool) {
			for n := range results {
				if !yield(n) {
					return
				}
			}
		})
		for _, name := range names {
			r := results[name]
			if !account.IsCode(r.err, account.CodeUnavailable) {
				t.Errorf("%s: got %v, want code unavailable", name, r.err)
				continue
			}
			if !strings.Contains(r.err.Error(), "no answer from DynamoDB within 300ms") {
				t.Errorf("%s: the cause does not say what happened: %v", name, r.err)
			}
			// Not before the timeout; the message above names it as the
			// cause. 30 s stands for "not hanging": a tighter upper bound
			// is one a loaded machine can break.
			if r.elapsed < timeout || r.elapsed > 30*time.Second {
				t.Errorf("%s: answered after %v, want after %v, within 30 s", name, r.elapsed, timeout)
			}
		}
	})

	t.Run("CallerGaveUp", func(t *testing.T) {
		// The client went away (its context cancelled) or the caller's own
		// deadline passed before the store's: the caller's error, never
		// CodeUnavailable, which would read as a store outage. The store's
		// timeout is its longest here, so that the caller's 50 ms comes
		// first however late a loaded machine runs the timers.
		calls := storeCalls(dynamostore.New(client, table, dynamostore.WithTimeout(dynamostore.MaxTimeout)), user, org, key, tok)
		cancelled, cancel := context.WithCancel(ctx)
		time.AfterFunc(50*time.Millisecond, cancel)
		expired, cancel2 := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel2()
		for _, tc := range []struct {
			name string
			ctx  context.Context
			want error
		}{
			{"Cancelled", cancelled, context.Canceled},
			{"CallersDeadline", expired, context.DeadlineExceeded},
		} {
			for _, name := range []string{"GetUser", "CreateUser", "TokenStatus"} {
				err := calls[name](tc.ctx)
				if !errors.Is(err, tc.want) || account.IsCode(err, account.CodeUnavailable) {
					t.Errorf("%s, %s: got %v (code %q), want %v and no code unavailable", tc.name, name, err, account.ErrorCode(err), tc.want)
				}
			}
		}
	})

	p.Thaw(t)
	thawed = true

	t.Run("Thawed", func(t *testing.T) {
		// The continued process first works through what queued up while
		// it was stopped; then the store answers as before.
		deadline := time.Now().Add(30 * time.Second)
		for {
			got, err := s.GetUser(ctx, probe.ID)
			if err == nil {
				if got.ID != probe.ID {
					t.Fatalf("GetUser: got %s, want %s", got.ID, probe.ID)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("GetUser 30 s after SIGCONT: %v", err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	})

	t.Run("TableGone", func(t *testing.T) {
		if _, err := client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(table)}); err != nil {
			t.Fatalf("DeleteTable: %v", err)
		}
		// The default timeout, not the frozen test's 300 ms: the answer is
		// the missing table's, however slow a loaded machine gives it.
		calls := storeCalls(dynamostore.New(client, table, dynamostore.WithTimeout(dynamotest.Timeout)), user, org, key, tok)
		for _, name := range []string{"GetUser", "CreateUser", "ListUsers", "TokenStatus", "CreateToken"} {
			err := calls[name](ctx)
			if !account.IsCode(err, account.CodeUnavailable) {
				t.Errorf("%s: got %v (code %q), want code unavailable", name, err, account.ErrorCode(err))
				continue
			}
			if !strings.Contains(err.Error(), "table "+table+" does not exist") {
				t.Errorf("%s: the cause does not name the missing table: %v", name, err)
			}
		}
	})
}

package tablestore_test

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"latchkey/pkg/account"
	"latchkey/pkg/dynamostore"
	"latchkey/pkg/dynamostore/dynamotest"
	"latchkey/pkg/tablestore"
)

// meter records every DynamoDB call a client makes, with the capacity
// DynamoDB reports for it. It asks for ReturnConsumedCapacity=TOTAL on every
// call that accepts it, so the figures are DynamoDB's own, not estimates.
type meter struct {
	mu    sync.Mutex
	calls []call
}

type call struct {
	op       string
	capacity float64 // read + write capacity units, as DynamoDB reports them
}

// option installs the meter on a client.
func (m *meter) option(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
		return st.Initialize.Add(middleware.InitializeMiddlewareFunc("latchkey-meter",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				askForCapacity(in.Parameters)
				out, md, err := next.HandleInitialize(ctx, in)
				c := call{op: awsmiddleware.GetOperationName(ctx)}
				if err == nil {
					c.capacity = consumed(out.Result)
				}
				m.mu.Lock()
				m.calls = append(m.calls, c)
				m.mu.Unlock()
				return out, md, err
			}), middleware.Before)
	})
}

// measure runs fn and returns the calls it made.
func (m *meter) measure(fn func()) []call {
	m.mu.Lock()
	m.calls = nil
	m.mu.Unlock()
	fn()
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.calls)
}

// askForCapacity sets ReturnConsumedCapacity=TOTAL on any input that has it.
func askForCapacity(params any) {
	v := reflect.ValueOf(params)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return
	}
	f := v.Elem().FieldByName("ReturnConsumedCapacity")
	if f.IsValid() && f.CanSet() && f.Type() == reflect.TypeFor[types.ReturnConsumedCapacity]() {
		f.Set(reflect.ValueOf(types.ReturnConsumedCapacityTotal))
	}
}

// consumed sums the ConsumedCapacity of an output: one value for single-item
// calls, one per table for batches and transactions.
func consumed(result any) float64 {
	v := reflect.ValueOf(result)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return 0
	}
	sum := func(c types.ConsumedCapacity) float64 {
		if c.CapacityUnits != nil {
			return *c.CapacityUnits
		}
		var n float64
		if c.ReadCapacityUnits != nil {
			n += *c.ReadCapacityUnits
		}
		if c.WriteCapacityUnits != nil {
			n += *c.WriteCapacityUnits
		}
		return n
	}
	switch c := v.Elem().FieldByName("ConsumedCapacity"); {
	case !c.IsValid():
		return 0
	case c.Type() == reflect.TypeFor[*types.ConsumedCapacity]():
		if p := c.Interface().(*types.ConsumedCapacity); p != nil {
			return sum(*p)
		}
	case c.Type() == reflect.TypeFor[[]types.ConsumedCapacity]():
		var n float64
		for _, cc := range c.Interface().([]types.ConsumedCapacity) {
			n += sum(cc)
		}
		return n
	}
	return 0
}

// budget is what one store operation may cost, as docs/dynamodb.md states.
type budget struct {
	op string
	// maxCalls is the most DynamoDB requests the operation may make.
	maxCalls int
	// calls, when set, are the exact DynamoDB operations expected (e.g. one
	// TransactWriteItems, not several PutItems).
	calls []string
	// prepare sets up what the operation needs (unmeasured) and returns
	// the operation itself, which is measured.
	prepare func(t *testing.T, f *budgetFixture) func()
}

// budgetFixture holds the items that budgeted operations act on, created
// before measuring.
type budgetFixture struct {
	ctx   context.Context
	s     *tablestore.Store
	now   time.Time
	user  account.User
	loner account.User // a member of nothing
	org   account.Organization
	key   account.APIKey
	tok   account.TokenRecord
	// deep is two keys below key (Ancestors: key, then key's child), with
	// a token, deepTok.
	deep    account.APIKey
	deepTok account.TokenRecord
	extra   int
}

// usageFlush is flush seq of one process: a valid verification and a
// revoked one of f.key, in each bucket of f.key and of f.org.
func (f *budgetFixture) usageFlush(seq int64) account.UsageFlush {
	fl := account.UsageFlush{Process: "budget", Seq: seq}
	for _, iv := range []string{account.IntervalMinute, account.IntervalHour, account.IntervalDay} {
		c := account.UsageCounts{Verifications: map[string]int64{account.OutcomeValid: 1, account.ReasonRevoked: 1}}
		org := c
		org.Keys = map[string]int64{f.key.ID: 2}
		start := f.now.Truncate(time.Hour)
		fl.Deltas = append(fl.Deltas,
			account.UsageDelta{Subject: f.key.ID, Interval: iv, Start: start, Counts: c, ExpireAt: start.Add(48 * time.Hour)},
			account.UsageDelta{Subject: f.org.ID, Interval: iv, Start: start, Counts: org, ExpireAt: start.Add(48 * time.Hour)})
	}
	return fl
}

// twoOwners makes f.user and f.loner the owners of f.org.
func (f *budgetFixture) twoOwners(t *testing.T) {
	_, err := f.s.UpdateMember(f.ctx, account.WriteOptions{}, f.org.ID, f.user.ID, account.MemberPatch{Role: "owner", UpdatedAt: f.tick()})
	must(t, err, "UpdateMember to owner")
	at := f.tick()
	must(t, f.s.AddMember(f.ctx, account.WriteOptions{}, account.Membership{OrganizationID: f.org.ID, UserID: f.loner.ID, Role: "owner", CreatedAt: at, UpdatedAt: at}), "AddMember as owner")
}

func (f *budgetFixture) tick() time.Time {
	f.extra++
	return f.now.Add(time.Duration(f.extra) * time.Millisecond)
}

// revokeOthers revokes, with the claim, n tokens of the fixture's key
// other than f.tok.
func (f *budgetFixture) revokeOthers(t *testing.T, n int) {
	for range n {
		at := f.tick()
		_, err := f.s.RevokeToken(f.ctx, account.WriteOptions{}, account.Revocation{TokenID: account.NewID(account.PrefixToken, at), KeyID: f.key.ID, RevokedAt: at, ExpiresAt: at.Add(time.Hour), Inline: true})
		must(t, err, "RevokeToken")
	}
}

// revokeTok revokes f.tok, a token with the claim.
func (f *budgetFixture) revokeTok(t *testing.T) {
	_, err := f.s.RevokeToken(f.ctx, account.WriteOptions{}, account.Revocation{TokenID: f.tok.ID, KeyID: f.key.ID, RevokedAt: f.tick(), ExpiresAt: f.tok.ExpiresAt, Inline: true})
	must(t, err, "RevokeToken")
}

func must(t *testing.T, err error, op string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", op, err)
	}
}

// usageChange is the change a use of a key with one rate limit of limit a
// second and credits makes: what account asks of the store.
func usageChange(limit int64) account.UsageChange {
	return account.UsageChange{
		Steps: []account.CounterStep{
			{Name: "r:second:1000:1764151200", Start: 0, Delta: 1, Min: 1, Max: limit},
			{Name: "c:s:0", Start: 1000, Delta: -1, Min: 0, Max: account.MaxCredits},
		},
		Remove: []string{"r:second:1000:1764151199"},
	}
}

// creditChange is the change a verification of a key with credits makes,
// start being its credits as set.
func creditChange(start int64) account.UsageChange {
	return account.UsageChange{Steps: []account.CounterStep{{Name: "c:s:0", Start: start, Delta: -1, Min: 0, Max: account.MaxCredits}}}
}

// keysChange is c in the usage record of each of ids: a use of the first
// counted against the keys above it, read back if read is set.
func keysChange(c account.UsageChange, read bool, ids ...string) []account.KeyUsageChange {
	out := make([]account.KeyUsageChange, len(ids))
	for i, id := range ids {
		out[i] = account.KeyUsageChange{KeyID: id, UsageChange: c, ReadAfter: read}
	}
	return out
}

// TestRequestBudgets measures, against DynamoDB Local, the requests and the
// capacity units of every store operation, and fails if one exceeds its
// budget. The table it logs is the one in docs/dynamodb.md.
func TestRequestBudgets(t *testing.T) {
	client := dynamotest.NewClient(t)
	page := account.ListParams{Limit: 20}
	budgets := []budget{
		{"TokenStatus (verify)", 1, []string{"BatchGetItem"}, func(t *testing.T, f *budgetFixture) func() {
			return func() {
				st, err := f.s.TokenStatus(f.ctx, f.tok.ID, f.key.ID, nil, "", false)
				must(t, err, "TokenStatus")
				if st.Key == nil {
					t.Fatal("TokenStatus: key not found")
				}
			}
		}},
		{"TokenStatus (verify, a token with the claim)", 1, []string{"BatchGetItem"}, func(t *testing.T, f *budgetFixture) func() {
			return func() {
				st, err := f.s.TokenStatus(f.ctx, f.tok.ID, f.key.ID, nil, "", true)
				must(t, err, "TokenStatus")
				if st.Key == nil || !st.RevokedAt.IsZero() {
					t.Fatalf("TokenStatus: got %+v, want the key, not revoked", st)
				}
			}
		}},
		{"TokenStatus (verify, a revoked token with the claim)", 1, []string{"BatchGetItem"}, func(t *testing.T, f *budgetFixture) func() {
			f.revokeTok(t)
			return func() {
				st, err := f.s.TokenStatus(f.ctx, f.tok.ID, f.key.ID, nil, "", true)
				must(t, err, "TokenStatus")
				if st.Key == nil || st.RevokedAt.IsZero() {
					t.Fatalf("TokenStatus: got %+v, want the key, revoked", st)
				}
			}
		}},
		{"TokenStatus (verify, a token with the claim, its key's revocations overflowing)", 2, []string{"BatchGetItem", "BatchGetItem"}, func(t *testing.T, f *budgetFixture) func() {
			f.revokeOthers(t, 17)
			return func() {
				st, err := f.s.TokenStatus(f.ctx, f.tok.ID, f.key.ID, nil, "", true)
				must(t, err, "TokenStatus")
				if st.Key == nil || !st.RevokedAt.IsZero() {
					t.Fatalf("TokenStatus: got %+v, want the key, not revoked", st)
				}
			}
		}},
		{"TokenStatus (verify, key with a rate limit and credits)", 1, []string{"BatchGetItem"}, func(t *testing.T, f *budgetFixture) func() {
			limits := []account.RateLimit{{Name: "second", Limit: 100, Period: time.Second}}
			_, err := f.s.UpdateAPIKey(f.ctx, account.WriteOptions{}, f.key.ID, account.APIKeyPatch{RateLimits: &limits, Credits: &account.CreditsChange{Credits: &account.Credits{Remaining: 1000, Set: "s"}}}, nil)
			must(t, err, "UpdateAPIKey")
			return func() {
				st, err := f.s.TokenStatus(f.ctx, f.tok.ID, f.key.ID, nil, "", false)
				must(t, err, "TokenStatus")
				if st.Key == nil || len(st.Key.RateLimits) != 1 {
					t.Fatalf("TokenStatus: got %+v, want the key with its limit", st.Key)
				}
			}
		}},
		{"ChangeKeyUsage (a use: a rate limit and a credit)", 1, []string{"UpdateItem"}, func(t *testing.T, f *budgetFixture) func() {
			return func() {
				_, ok, err := f.s.ChangeKeyUsage(f.ctx, f.key.ID, 0, usageChange(100))
				must(t, err, "ChangeKeyUsage")
				if !ok {
					t.Fatal("ChangeKeyUsage: refused")
				}
			}
		}},
		{"ChangeKeyUsage (refused: the limit reached)", 1, []string{"UpdateItem"}, func(t *testing.T, f *budgetFixture) func() {
			_, _, err := f.s.ChangeKeyUsage(f.ctx, f.key.ID, 0, usageChange(1))
			must(t, err, "ChangeKeyUsage")
			return func() {
				_, ok, err := f.s.ChangeKeyUsage(f.ctx, f.key.ID, 0, usageChange(1))
				must(t, err, "ChangeKeyUsage")
				if ok {
					t.Fatal("ChangeKeyUsage: applied over the limit")
				}
			}
		}},
		{"ChangeKeysUsage (a use below a key with credits: 2 records)", 1, []string{"TransactWriteItems"}, func(t *testing.T, f *budgetFixture) func() {
			return func() {
				_, ok, err := f.s.ChangeKeysUsage(f.ctx, keysChange(creditChange(1000), false, f.deep.ID, f.key.ID))
				must(t, err, "ChangeKeysUsage")
				if !ok {
					t.Fatal("ChangeKeysUsage: refused")
				}
			}
		}},
		{"ChangeKeysUsage (a use below 2 keys with credits: 3 records)", 1, []string{"TransactWriteItems"}, func(t *testing.T, f *budgetFixture) func() {
			return func() {
				_, ok, err := f.s.ChangeKeysUsage(f.ctx, keysChange(creditChange(1000), false, f.deep.ID, f.deep.Ancestors[1], f.key.ID))
				must(t, err, "ChangeKeysUsage")
				if !ok {
					t.Fatal("ChangeKeysUsage: refused")
				}
			}
		}},
		{"ChangeKeysUsage (a use below a key, both with a rate limit and credits: 2 records, read back)", 2, []string{"TransactWriteItems", "BatchGetItem"}, func(t *testing.T, f *budgetFixture) func() {
			return func() {
				got, ok, err := f.s.ChangeKeysUsage(f.ctx, keysChange(usageChange(100), true, f.deep.ID, f.key.ID))
				must(t, err, "ChangeKeysUsage")
				if !ok || len(got) != 2 || got[0]["c:s:0"] != 999 || got[1]["c:s:0"] != 999 {
					t.Fatalf("ChangeKeysUsage: %v, %v; want applied, each record read back", got, ok)
				}
			}
		}},
		{"ChangeKeysUsage (refused: the credits of the key above spent)", 1, []string{"TransactWriteItems"}, func(t *testing.T, f *budgetFixture) func() {
			_, _, err := f.s.ChangeKeyUsage(f.ctx, f.key.ID, 0, creditChange(1))
			must(t, err, "ChangeKeyUsage")
			return func() {
				_, ok, err := f.s.ChangeKeysUsage(f.ctx, keysChange(creditChange(1), false, f.deep.ID, f.key.ID))
				must(t, err, "ChangeKeysUsage")
				if ok {
					t.Fatal("ChangeKeysUsage: applied past the credits")
				}
			}
		}},
		{"TokenStatus (verify, key with 2 ancestors)", 1, []string{"BatchGetItem"}, func(t *testing.T, f *budgetFixture) func() {
			return func() {
				st, err := f.s.TokenStatus(f.ctx, f.deepTok.ID, f.deep.ID, f.deep.Ancestors, "", false)
				must(t, err, "TokenStatus")
				if st.Key == nil {
					t.Fatal("TokenStatus: key not found")
				}
			}
		}},
		{"GetAPIKeyByHash (issuance step 1, every API-key request)", 1, []string{"GetItem"}, func(t *testing.T, f *budgetFixture) func() {
			return func() {
				_, err := f.s.GetAPIKeyByHash(f.ctx, f.key.Hash)
				must(t, err, "GetAPIKeyByHash")
			}
		}},
		{"GetAPIKeyByHash (key with 2 ancestors)", 2, []string{"GetItem", "BatchGetItem"}, func(t *testing.T, f *budgetFixture) func() {
			return func() {
				_, err := f.s.GetAPIKeyByHash(f.ctx, f.deep.Hash)
				must(t, err, "GetAPIKeyByHash")
			}
		}},
		{"CreateToken (issuance step 2)", 1, []string{"PutItem"}, func(t *testing.T, f *budgetFixture) func() {
			return func() {
				at := f.tick()
				must(t, f.s.CreateToken(f.ctx, account.WriteOptions{}, account.TokenRecord{ID: account.NewID(account.PrefixToken, at), KeyID: f.key.ID, Scopes: []string{"read:users"}, IssuedAt: at, ExpiresAt: at.Add(time.Hour)}), "CreateToken")
			}
		}},
		{"RevokeToken", 1, []string{"TransactWriteItems"}, func(t *testing.T, f *budgetFixture) func() {
			return func() {
				_, err := f.s.RevokeToken(f.ctx, account.WriteOptions{}, account.Revocation{TokenID: f.tok.ID, KeyID: f.key.ID, RevokedAt: f.tick(), ExpiresAt: f.tok.ExpiresAt})
				must(t, err, "RevokeToken")
			}
		}},
		{"RevokeToken (a token with the claim)", 2, []string{"GetItem", "TransactWriteItems"}, func(t *testing.T, f *budgetFixture) func() {
			return func() {
				f.revokeTok(t)
			}
		}},
		{"RevokeToken (a token with the claim, its key holding 15)", 2, []string{"GetItem", "TransactWriteItems"}, func(t *testing.T, f *budgetFixture) func() {
			f.revokeOthers(t, 15)
			return func() {
				f.revokeTok(t)
			}
		}},
		{"RevokeToken (a token with the claim, overflowing)", 2, []string{"GetItem", "TransactWriteItems"}, func(t *testing.T, f *budgetFixture) func() {
			f.revokeOthers(t, 16)
			return func() {
				f.revokeTok(t)
			}
		}},
		{"RevokeToken (a token with the claim, again)", 1, []string{"GetItem"}, func(t *testing.T, f *budgetFixture) func() {
			r := account.Revocation{TokenID: f.tok.ID, KeyID: f.key.ID, RevokedAt: f.tick(), ExpiresAt: f.tok.ExpiresAt, Inline: true}
			_, err := f.s.RevokeToken(f.ctx, account.WriteOptions{}, r)
			must(t, err, "first RevokeToken")
			r.RevokedAt = f.tick()
			return func() {
				at, err := f.s.RevokeToken(f.ctx, account.WriteOptions{}, r)
				must(t, err, "RevokeToken")
				if at.Equal(r.RevokedAt) {
					t.Error("RevokeToken again: got the new time, want the first")
				}
			}
		}},
		{"RevokeToken (again)", 2, []string{"TransactWriteItems", "TransactWriteItems"}, func(t *testing.T, f *budgetFixture) func() {
			r := account.Revocation{TokenID: f.tok.ID, KeyID: f.key.ID, RevokedAt: f.tick(), ExpiresAt: f.tok.ExpiresAt}
			_, err := f.s.RevokeToken(f.ctx, account.WriteOptions{}, r)
			must(t, err, "first RevokeToken")
			r.RevokedAt = f.tick()
			return func() {
				at, err := f.s.RevokeToken(f.ctx, account.WriteOptions{}, r)
				must(t, err, "RevokeToken")
				if at.Equal(r.RevokedAt) {
					t.Error("RevokeToken again: got the new time, want the first")
				}
			}
		}},
		{"CreateAPIKey", 1, []string{"TransactWriteItems"}, func(t *testing.T, f *budgetFixture) func() {
			return func() {
				k := f.key
				k.ID, k.Hash = account.NewID(account.PrefixAPIKey, f.tick()), account.HashAPIKey(account.NewAPIKeySecret())
				must(t, f.s.CreateAPIKey(f.ctx, account.WriteOptions{}, k), "CreateAPIKey")
			}
		}},
		{"CreateAPIKey (below a key)", 1, []string{"TransactWriteItems"}, func(t *testing.T, f *budgetFixture) func() {
			return func() {
				k := f.key
				k.ID, k.Hash = account.NewID(account.PrefixAPIKey, f.tick()), account.HashAPIKey(account.NewAPIKeySecret())
				k.CreatedBy, k.Ancestors = f.deep.ID, append(slices.Clip(f.deep.Ancestors), f.deep.ID)
				must(t, f.s.CreateAPIKey(f.ctx, account.WriteOptions{}, k), "CreateAPIKey")
			}
		}},
		{"RecordAPIKeyUse (last use older than a minute)", 1, []string{"UpdateItem"}, func(t *testing.T, f *budgetFixture) func() {
			return func() {
				_, err := f.s.RecordAPIKeyUse(f.ctx, f.key, f.tick())
				must(t, err, "RecordAPIKeyUse")
			}
		}},
		{"RecordAPIKeyUse (used within the minute)", 1, []string{"UpdateItem"}, func(t *testing.T, f *budgetFixture) func() {
			_, err := f.s.RecordAPIKeyUse(f.ctx, f.key, f.tick())
			must(t, err, "RecordAPIKeyUse")
			return func() {
				_, err := f.s.RecordAPIKeyUse(f.ctx, f.key, f.tick())
				must(t, err, "RecordAPIKeyUse")
			}
		}},
		{"AddUsage (a flush: a key of an organization, its 3 buckets and the organization's)", 6, slices.Repeat([]string{"UpdateItem"}, 6), func(t *testing.T, f *budgetFixture) func() {
			return func() {
				must(t, f.s.AddUsage(f.ctx, f.usageFlush(1)), "AddUsage")
			}
		}},
		{"AddUsage (the same flush retried: every write skipped)", 6, slices.Repeat([]string{"UpdateItem"}, 6), func(t *testing.T, f *budgetFixture) func() {
			must(t, f.s.AddUsage(f.ctx, f.usageFlush(1)), "AddUsage")
			return func() {
				must(t, f.s.AddUsage(f.ctx, f.usageFlush(1)), "AddUsage again")
			}
		}},
		{"ReadUsage (a day of an organization's hour buckets)", 1, []string{"Query"}, func(t *testing.T, f *budgetFixture) func() {
			must(t, f.s.AddUsage(f.ctx, f.usageFlush(1)), "AddUsage")
			return func() {
				_, err := f.s.ReadUsage(f.ctx, f.org.ID, account.IntervalHour, f.now.Add(-24*time.Hour), f.now.Add(time.Hour))
				must(t, err, "ReadUsage")
			}
		}},
		{"GetAPIKey", 1, []string{"BatchGetItem"}, func(t *testing.T, f *budgetFixture) func() {
			return func() {
				_, err := f.s.GetAPIKey(f.ctx, f.key.ID)
				must(t, err, "GetAPIKey")
			}
		}},
		// A disable writes its tokens' status list entries too (statuslist.go):
		// a Query of each key of the tree (3 here) and one of its tokens, then
		// the versions read again; the fixture's tokens are older than status
		// lists, so no entry to write.
		{"UpdateAPIKey", 9, []string{"BatchGetItem", "TransactWriteItems", "Query", "Query", "Query", "Query", "Query", "Query", "BatchGetItem"}, func(t *testing.T, f *budgetFixture) func() {
			return func() {
				off, meta := true, account.Metadata{"team": "billing"}
				_, err := f.s.UpdateAPIKey(f.ctx, account.WriteOptions{}, f.key.ID, account.APIKeyPatch{Disabled: &off, Metadata: &meta}, nil)
				must(t, err, "UpdateAPIKey")
			}
		}},
		{"UpdateAPIKey (key with 2 ancestors)", 3, []string{"BatchGetItem", "BatchGetItem", "TransactWriteItems"}, func(t *testing.T, f *budgetFixture) func() {
			return func() {
				name := "renamed"
				_, err := f.s.UpdateAPIKey(f.ctx, account.WriteOptions{}, f.deep.ID, account.APIKeyPatch{Name: &name}, nil)
				must(t, err, "UpdateAPIKey")
			}
		}},
		{"UpdateAPIKey (rotate, with grace)", 2, []string{"BatchGetItem", "TransactWriteItems"}, func(t *testing.T, f *budgetFixture) func() {
			return func() {
				r := &account.KeyRotation{Hash: account.HashAPIKey(account.NewAPIKeySecret()), Last4: "abcd", PreviousUntil: f.now.Add(time.Hour)}
				_, err := f.s.UpdateAPIKey(f.ctx, account.WriteOptions{}, f.key.ID, account.APIKeyPatch{Rotate: r, At: f.tick()}, nil)
				must(t, err, "UpdateAPIKey")
			}
		}},
		{"UpdateAPIKey (rotate again, during the grace)", 2, []string{"BatchGetItem", "TransactWriteItems"}, func(t *testing.T, f *budgetFixture) func() {
			r := &account.KeyRotation{Hash: account.HashAPIKey(account.NewAPIKeySecret()), Last4: "abcd", PreviousUntil: f.now.Add(time.Hour)}
			_, err := f.s.UpdateAPIKey(f.ctx, account.WriteOptions{}, f.key.ID, account.APIKeyPatch{Rotate: r, At: f.tick()}, nil)
			must(t, err, "UpdateAPIKey")
			return func() {
				r := &account.KeyRotation{Hash: account.HashAPIKey(account.NewAPIKeySecret()), Last4: "efgh", PreviousUntil: f.now.Add(time.Hour)}
				_, err := f.s.UpdateAPIKey(f.ctx, account.WriteOptions{}, f.key.ID, account.APIKeyPatch{Rotate: r, At: f.tick()}, nil)
				must(t, err, "UpdateAPIKey")
			}
		}},
		{"TokenStatus (verify, key disabled)", 1, []string{"BatchGetItem"}, func(t *testing.T, f *budgetFixture) func() {
			off := true
			_, err := f.s.UpdateAPIKey(f.ctx, account.WriteOptions{}, f.key.ID, account.APIKeyPatch{Disabled: &off}, nil)
			must(t, err, "UpdateAPIKey")
			return func() {
				st, err := f.s.TokenStatus(f.ctx, f.tok.ID, f.key.ID, nil, "", false)
				must(t, err, "TokenStatus")
				if st.Key == nil || !st.Key.Disabled {
					t.Fatalf("TokenStatus: got %+v, want the key, disabled", st.Key)
				}
			}
		}},
		// And the Query of the tokens the revoke-all revokes, for their entries.
		{"UpdateAPIKey (revoke its tokens)", 3, []string{"BatchGetItem", "TransactWriteItems", "Query"}, func(t *testing.T, f *budgetFixture) func() {
			return func() {
				_, err := f.s.UpdateAPIKey(f.ctx, account.WriteOptions{}, f.key.ID, account.APIKeyPatch{RevokeTokens: true, At: f.tick()}, nil)
				must(t, err, "UpdateAPIKey")
			}
		}},
		{"TokenStatus (verify, the key's tokens revoked)", 1, []string{"BatchGetItem"}, func(t *testing.T, f *budgetFixture) func() {
			_, err := f.s.UpdateAPIKey(f.ctx, account.WriteOptions{}, f.key.ID, account.APIKeyPatch{RevokeTokens: true, At: f.tick()}, nil)
			must(t, err, "UpdateAPIKey")
			return func() {
				st, err := f.s.TokenStatus(f.ctx, f.tok.ID, f.key.ID, nil, "", false)
				must(t, err, "TokenStatus")
				if st.Key == nil || st.Key.TokensRevokedBefore.IsZero() {
					t.Fatalf("TokenStatus: got %+v, want the key, with its tokens revoked", st.Key)
				}
			}
		}},
		{"ListTokens (page of 20)", 2, []string{"Query", "BatchGetItem"}, func(t *testing.T, f *budgetFixture) func() {
			return func() {
				p, err := f.s.ListTokens(f.ctx, f.key.ID, f.now.Add(-24*time.Hour), page)
				must(t, err, "ListTokens")
				if len(p.Items) == 0 {
					t.Fatal("ListTokens: no record, want the fixture's token")
				}
			}
		}},
		{"ListAPIKeys (page of 20)", 2, []string{"Query", "BatchGetItem"}, func(t *testing.T, f *budgetFixture) func() {
			return func() {
				_, err := f.s.ListAPIKeys(f.ctx, account.APIKeyFilter{}, page)
				must(t, err, "ListAPIKeys")
			}
		}},
		{"CreateUser", 1, []string{"TransactWriteItems"}, func(t *testing.T, f *budgetFixture) func() {
			return func() {
				must(t, f.s.CreateUser(f.ctx, account.WriteOptions{}, newUser(f.tick())), "CreateUser")
			}
		}},
		// On a conflict the store reads the holder once: a holder whose
		// delete was cut off is finished (see claim in store.go).
		{"CreateUser (email_taken)", 2, []string{"TransactWriteItems", "GetItem"}, func(t *testing.T, f *budgetFixture) func() {
			return func() {
				u := newUser(f.tick())
				u.Email = f.user.Email
				if err := f.s.CreateUser(f.ctx, account.WriteOptions{}, u); !account.IsCode(err, account.CodeEmailTaken) {
					t.Fatalf("CreateUser: got %v, want email_taken", err)
				}
			}
		}},
		{"GetUser", 1, []string{"GetItem"}, func(t *testing.T, f *budgetFixture) func() {
			return func() {
				_, err := f.s.GetUser(f.ctx, f.user.ID)
				must(t, err, "GetUser")
			}
		}},
		{"GetUserByEmail", 2, []string{"GetItem", "GetItem"}, func(t *testing.T, f *budgetFixture) func() {
			return func() {
				_, err := f.s.GetUserByEmail(f.ctx, f.user.Email)
				must(t, err, "GetUserByEmail")
			}
		}},
		{"UpdateUser", 1, []string{"UpdateItem"}, func(t *testing.T, f *budgetFixture) func() {
			return func() {
				name := "Renamed"
				_, err := f.s.UpdateUser(f.ctx, account.WriteOptions{}, f.user.ID, account.UserPatch{Name: &name, UpdatedAt: f.tick()})
				must(t, err, "UpdateUser")
			}
		}},
		{"CreateUser (with external_id and metadata)", 1, []string{"TransactWriteItems"}, func(t *testing.T, f *budgetFixture) func() {
			return func() {
				u := newUser(f.tick())
				u.ExternalID, u.Metadata = "crm:"+u.ID, account.Metadata{"plan": "pro"}
				must(t, f.s.CreateUser(f.ctx, account.WriteOptions{}, u), "CreateUser")
			}
		}},
		{"GetUserByExternalID", 2, []string{"GetItem", "GetItem"}, func(t *testing.T, f *budgetFixture) func() {
			u := newUser(f.tick())
			u.ExternalID = "crm:" + u.ID
			must(t, f.s.CreateUser(f.ctx, account.WriteOptions{}, u), "CreateUser")
			return func() {
				_, err := f.s.GetUserByExternalID(f.ctx, u.ExternalID)
				must(t, err, "GetUserByExternalID")
			}
		}},
		// A change of e-mail or external id reads the user for the value
		// it frees, then claims and frees in one transaction.
		{"UpdateUser (e-mail and external_id)", 2, []string{"GetItem", "TransactWriteItems"}, func(t *testing.T, f *budgetFixture) func() {
			u := newUser(f.tick())
			u.ExternalID = "crm:" + u.ID
			must(t, f.s.CreateUser(f.ctx, account.WriteOptions{}, u), "CreateUser")
			return func() {
				email, ext := "new."+u.Email, "crm:new "+u.ID
				_, err := f.s.UpdateUser(f.ctx, account.WriteOptions{}, u.ID, account.UserPatch{Email: &email, ExternalID: &ext, UpdatedAt: f.tick()})
				must(t, err, "UpdateUser")
			}
		}},
		{"ListUsers (page of 20)", 1, []string{"Query"}, func(t *testing.T, f *budgetFixture) func() {
			return func() {
				_, err := f.s.ListUsers(f.ctx, page)
				must(t, err, "ListUsers")
			}
		}},
		{"CreateOrganization", 1, []string{"TransactWriteItems"}, func(t *testing.T, f *budgetFixture) func() {
			return func() {
				must(t, f.s.CreateOrganization(f.ctx, account.WriteOptions{}, newOrg(f.tick())), "CreateOrganization")
			}
		}},
		{"CreateOrganization (slug_taken)", 2, []string{"TransactWriteItems", "GetItem"}, func(t *testing.T, f *budgetFixture) func() {
			return func() {
				o := newOrg(f.tick())
				o.Slug = f.org.Slug
				if err := f.s.CreateOrganization(f.ctx, account.WriteOptions{}, o); !account.IsCode(err, account.CodeSlugTaken) {
					t.Fatalf("CreateOrganization: got %v, want slug_taken", err)
				}
			}
		}},
		{"GetOrganization", 1, []string{"GetItem"}, func(t *testing.T, f *budgetFixture) func() {
			return func() {
				_, err := f.s.GetOrganization(f.ctx, f.org.ID)
				must(t, err, "GetOrganization")
			}
		}},
		{"CreateOrganization (with external_id and metadata)", 1, []string{"TransactWriteItems"}, func(t *testing.T, f *budgetFixture) func() {
			return func() {
				o := newOrg(f.tick())
				o.ExternalID, o.Metadata = "acct:"+o.ID, account.Metadata{"region": "eu"}
				must(t, f.s.CreateOrganization(f.ctx, account.WriteOptions{}, o), "CreateOrganization")
			}
		}},
		{"GetOrganizationBySlug", 2, []string{"GetItem", "GetItem"}, func(t *testing.T, f *budgetFixture) func() {
			return func() {
				_, err := f.s.GetOrganizationBySlug(f.ctx, f.org.Slug)
				must(t, err, "GetOrganizationBySlug")
			}
		}},
		{"GetOrganizationByExternalID", 2, []string{"GetItem", "GetItem"}, func(t *testing.T, f *budgetFixture) func() {
			o := newOrg(f.tick())
			o.ExternalID = "acct:" + o.ID
			must(t, f.s.CreateOrganization(f.ctx, account.WriteOptions{}, o), "CreateOrganization")
			return func() {
				_, err := f.s.GetOrganizationByExternalID(f.ctx, o.ExternalID)
				must(t, err, "GetOrganizationByExternalID")
			}
		}},
		{"UpdateOrganization (external_id)", 2, []string{"GetItem", "TransactWriteItems"}, func(t *testing.T, f *budgetFixture) func() {
			return func() {
				ext := "acct:" + f.org.ID
				_, err := f.s.UpdateOrganization(f.ctx, account.WriteOptions{}, f.org.ID, account.OrganizationPatch{ExternalID: &ext, UpdatedAt: f.tick()})
				must(t, err, "UpdateOrganization")
			}
		}},
		{"UpdateOrganization", 1, []string{"UpdateItem"}, func(t *testing.T, f *budgetFixture) func() {
			return func() {
				plan := "enterprise"
				_, err := f.s.UpdateOrganization(f.ctx, account.WriteOptions{}, f.org.ID, account.OrganizationPatch{Plan: &plan, UpdatedAt: f.tick()})
				must(t, err, "UpdateOrganization")
			}
		}},
		{"ListOrganizations (page of 20)", 1, []string{"Query"}, func(t *testing.T, f *budgetFixture) func() {
			return func() {
				_, err := f.s.ListOrganizations(f.ctx, page)
				must(t, err, "ListOrganizations")
			}
		}},
		{"AddMember", 1, []string{"TransactWriteItems"}, func(t *testing.T, f *budgetFixture) func() {
			return func() {
				at := f.tick()
				must(t, f.s.AddMember(f.ctx, account.WriteOptions{}, account.Membership{OrganizationID: f.org.ID, UserID: f.loner.ID, Role: "admin", CreatedAt: at, UpdatedAt: at}), "AddMember")
			}
		}},
		{"AddMember (owner)", 1, []string{"TransactWriteItems"}, func(t *testing.T, f *budgetFixture) func() {
			return func() {
				at := f.tick()
				must(t, f.s.AddMember(f.ctx, account.WriteOptions{}, account.Membership{OrganizationID: f.org.ID, UserID: f.loner.ID, Role: "owner", CreatedAt: at, UpdatedAt: at}), "AddMember")
			}
		}},
		{"GetMember", 1, []string{"GetItem"}, func(t *testing.T, f *budgetFixture) func() {
			return func() {
				_, err := f.s.GetMember(f.ctx, f.org.ID, f.user.ID)
				must(t, err, "GetMember")
			}
		}},
		// A role change reads the membership (is it an owner's?), then
		// writes both sides, and the owner count when the owner role is
		// gained or lost, in one transaction.
		{"UpdateMember (member to admin)", 2, []string{"GetItem", "TransactWriteItems"}, func(t *testing.T, f *budgetFixture) func() {
			return func() {
				_, err := f.s.UpdateMember(f.ctx, account.WriteOptions{}, f.org.ID, f.user.ID, account.MemberPatch{Role: "admin", UpdatedAt: f.tick()})
				must(t, err, "UpdateMember")
			}
		}},
		{"UpdateMember (to owner)", 2, []string{"GetItem", "TransactWriteItems"}, func(t *testing.T, f *budgetFixture) func() {
			return func() {
				_, err := f.s.UpdateMember(f.ctx, account.WriteOptions{}, f.org.ID, f.user.ID, account.MemberPatch{Role: "owner", UpdatedAt: f.tick()})
				must(t, err, "UpdateMember")
			}
		}},
		{"UpdateMember (one of two owners to admin)", 2, []string{"GetItem", "TransactWriteItems"}, func(t *testing.T, f *budgetFixture) func() {
			f.twoOwners(t)
			return func() {
				_, err := f.s.UpdateMember(f.ctx, account.WriteOptions{}, f.org.ID, f.user.ID, account.MemberPatch{Role: "admin", UpdatedAt: f.tick()})
				must(t, err, "UpdateMember")
			}
		}},
		{"UpdateMember (last_owner)", 2, []string{"GetItem", "TransactWriteItems"}, func(t *testing.T, f *budgetFixture) func() {
			_, err := f.s.UpdateMember(f.ctx, account.WriteOptions{}, f.org.ID, f.user.ID, account.MemberPatch{Role: "owner", UpdatedAt: f.tick()})
			must(t, err, "UpdateMember to owner")
			return func() {
				_, err := f.s.UpdateMember(f.ctx, account.WriteOptions{}, f.org.ID, f.user.ID, account.MemberPatch{Role: "admin", UpdatedAt: f.tick()})
				if !account.IsCode(err, account.CodeLastOwner) {
					t.Fatalf("UpdateMember: got %v, want last_owner", err)
				}
			}
		}},
		{"ListMembers (page of 20)", 1, []string{"Query"}, func(t *testing.T, f *budgetFixture) func() {
			return func() {
				_, err := f.s.ListMembers(f.ctx, f.org.ID, page)
				must(t, err, "ListMembers")
			}
		}},
		// The page's organizations, for their names and slugs, in one
		// BatchGetItem whatever the page's size.
		{"ListUserMemberships (page of 20)", 2, []string{"Query", "BatchGetItem"}, func(t *testing.T, f *budgetFixture) func() {
			return func() {
				_, err := f.s.ListUserMemberships(f.ctx, f.user.ID, page)
				must(t, err, "ListUserMemberships")
			}
		}},
		// A key bound to an organization lists its members' users: the
		// members' page, then the page's users in one BatchGetItem.
		{"ListOrganizationUsers (page of 20)", 2, []string{"Query", "BatchGetItem"}, func(t *testing.T, f *budgetFixture) func() {
			return func() {
				page, err := f.s.ListOrganizationUsers(f.ctx, f.org.ID, page)
				must(t, err, "ListOrganizationUsers")
				if len(page.Items) == 0 {
					t.Fatal("ListOrganizationUsers: no user")
				}
			}
		}},
		// A user created by a key bound to an organization joins it in the
		// same transaction.
		{"CreateUserInOrganization", 1, []string{"TransactWriteItems"}, func(t *testing.T, f *budgetFixture) func() {
			return func() {
				at := f.tick()
				u := newUser(at)
				m := account.Membership{OrganizationID: f.org.ID, UserID: u.ID, Role: account.DefaultMemberRole, CreatedAt: at, UpdatedAt: at}
				must(t, f.s.CreateUserInOrganization(f.ctx, account.WriteOptions{}, u, m), "CreateUserInOrganization")
			}
		}},
		{"RemoveMember", 1, []string{"TransactWriteItems"}, func(t *testing.T, f *budgetFixture) func() {
			return func() {
				must(t, f.s.RemoveMember(f.ctx, account.WriteOptions{}, f.org.ID, f.user.ID), "RemoveMember")
			}
		}},
		// An owner's membership comes back from the first transaction's
		// failed condition; the second takes it with the owner count.
		{"RemoveMember (one of two owners)", 2, []string{"TransactWriteItems", "TransactWriteItems"}, func(t *testing.T, f *budgetFixture) func() {
			f.twoOwners(t)
			return func() {
				must(t, f.s.RemoveMember(f.ctx, account.WriteOptions{}, f.org.ID, f.user.ID), "RemoveMember")
			}
		}},
		{"RemoveMember (last_owner)", 2, []string{"TransactWriteItems", "TransactWriteItems"}, func(t *testing.T, f *budgetFixture) func() {
			_, err := f.s.UpdateMember(f.ctx, account.WriteOptions{}, f.org.ID, f.user.ID, account.MemberPatch{Role: "owner", UpdatedAt: f.tick()})
			must(t, err, "UpdateMember to owner")
			return func() {
				if err := f.s.RemoveMember(f.ctx, account.WriteOptions{}, f.org.ID, f.user.ID); !account.IsCode(err, account.CodeLastOwner) {
					t.Fatalf("RemoveMember: got %v, want last_owner", err)
				}
			}
		}},
		// A delete reads each key's token records, for their status list
		// entries, before its last transaction and after it.
		{"DeleteAPIKey (no keys below, 2 ancestors)", 5, []string{"Query", "BatchGetItem", "Query", "TransactWriteItems", "Query"}, func(t *testing.T, f *budgetFixture) func() {
			return func() {
				must(t, f.s.DeleteAPIKey(f.ctx, account.WriteOptions{}, f.deep.ID, nil), "DeleteAPIKey")
			}
		}},
		{"DeleteAPIKey (2 keys below)", 10, []string{"Query", "Query", "Query", "Query", "Query", "Query", "TransactWriteItems", "Query", "Query", "Query"}, func(t *testing.T, f *budgetFixture) func() {
			return func() {
				must(t, f.s.DeleteAPIKey(f.ctx, account.WriteOptions{}, f.key.ID, nil), "DeleteAPIKey")
			}
		}},
		{"DeleteAPIKey (2 keys below, 200 tokens of its own)", 10, []string{"Query", "Query", "Query", "Query", "Query", "Query", "TransactWriteItems", "Query", "Query", "Query"}, func(t *testing.T, f *budgetFixture) func() {
			// Its token records share its partition; the delete's Query
			// stops before them (sk <= KEY), so they cost it nothing.
			for i := range 200 {
				at := f.now.Add(time.Duration(i) * time.Millisecond)
				must(t, f.s.CreateToken(f.ctx, account.WriteOptions{}, account.TokenRecord{ID: account.NewID(account.PrefixToken, at), KeyID: f.key.ID, Scopes: []string{"read:users"}, IssuedAt: at, ExpiresAt: at.Add(time.Hour)}), "CreateToken")
			}
			return func() {
				must(t, f.s.DeleteAPIKey(f.ctx, account.WriteOptions{}, f.key.ID, nil), "DeleteAPIKey")
			}
		}},
		{"DeleteUser (3 memberships)", 3, []string{"UpdateItem", "Query", "TransactWriteItems"}, func(t *testing.T, f *budgetFixture) func() {
			return func() {
				must(t, f.s.DeleteUser(f.ctx, account.WriteOptions{}, f.user.ID), "DeleteUser")
			}
		}},
		{"DeleteUser (3 memberships, owner in 1)", 3, []string{"UpdateItem", "Query", "TransactWriteItems"}, func(t *testing.T, f *budgetFixture) func() {
			f.twoOwners(t)
			return func() {
				must(t, f.s.DeleteUser(f.ctx, account.WriteOptions{}, f.user.ID), "DeleteUser")
			}
		}},
		// The organization's keys, read once more for their tokens' entries.
		{"DeleteOrganization (3 members)", 6, []string{"TransactWriteItems", "GetItem", "Query", "Query", "Query", "TransactWriteItems"}, func(t *testing.T, f *budgetFixture) func() {
			return func() {
				must(t, f.s.DeleteOrganization(f.ctx, account.WriteOptions{}, f.org.ID), "DeleteOrganization")
			}
		}},
		{"DeleteOrganization (3 members, 2 keys)", 11, []string{"TransactWriteItems", "GetItem", "Query", "Query", "Query", "Query", "BatchGetItem", "Query", "TransactWriteItems", "Query", "Query"}, func(t *testing.T, f *budgetFixture) func() {
			f.orgKeys(t)
			return func() {
				must(t, f.s.DeleteOrganization(f.ctx, account.WriteOptions{}, f.org.ID), "DeleteOrganization")
			}
		}},
		{"CreateAPIKey (bound to an organization, with an owner)", 1, []string{"TransactWriteItems"}, func(t *testing.T, f *budgetFixture) func() {
			return func() {
				k := newKey(f.tick())
				k.OrganizationID, k.OwnerID = f.org.ID, "crm:4711"
				must(t, f.s.CreateAPIKey(f.ctx, account.WriteOptions{}, k), "CreateAPIKey")
			}
		}},
		{"GetAPIKeyByHash (key bound to an organization)", 2, []string{"GetItem", "BatchGetItem"}, func(t *testing.T, f *budgetFixture) func() {
			k, _ := f.orgKeys(t)
			return func() {
				_, err := f.s.GetAPIKeyByHash(f.ctx, k.Hash)
				must(t, err, "GetAPIKeyByHash")
			}
		}},
		{"TokenStatus (verify, key bound to an organization)", 1, []string{"BatchGetItem"}, func(t *testing.T, f *budgetFixture) func() {
			k, tok := f.orgKeys(t)
			return func() {
				st, err := f.s.TokenStatus(f.ctx, tok.ID, k.ID, nil, k.OrganizationID, false)
				must(t, err, "TokenStatus")
				if st.Key == nil {
					t.Fatal("TokenStatus: key not found")
				}
			}
		}},
		{"ListAPIKeys (an organization's, page of 20)", 2, []string{"Query", "BatchGetItem"}, func(t *testing.T, f *budgetFixture) func() {
			for range 21 {
				k := newKey(f.tick())
				k.OrganizationID, k.OwnerID = f.org.ID, "crm:4711"
				must(t, f.s.CreateAPIKey(f.ctx, account.WriteOptions{}, k), "CreateAPIKey")
			}
			return func() {
				page, err := f.s.ListAPIKeys(f.ctx, account.APIKeyFilter{OrganizationID: f.org.ID}, page)
				must(t, err, "ListAPIKeys")
				if len(page.Items) != 20 {
					t.Fatalf("ListAPIKeys: %d keys, want 20", len(page.Items))
				}
			}
		}},
		{"Published", 1, []string{"GetItem"}, func(t *testing.T, f *budgetFixture) func() {
			return func() {
				_, _, err := f.s.Published(f.ctx)
				must(t, err, "Published")
			}
		}},
		{"PutPublicKeys", 1, []string{"UpdateItem"}, func(t *testing.T, f *budgetFixture) func() {
			return func() {
				must(t, f.s.PutPublicKeys(f.ctx, []byte(`{"keys":[]}`), f.tick()), "PutPublicKeys")
			}
		}},
		{"PutIssuer", 1, []string{"UpdateItem"}, func(t *testing.T, f *budgetFixture) func() {
			return func() {
				must(t, f.s.PutIssuer(f.ctx, "https://auth.example.com"), "PutIssuer")
			}
		}},
		// Idempotency-Key: what a write with a key adds (docs/dynamodb.md,
		// "Idempotency-Key").
		{"ClaimIdempotency", 1, []string{"PutItem"}, func(t *testing.T, f *budgetFixture) func() {
			return func() {
				_, claimed, err := f.s.ClaimIdempotency(f.ctx, f.idem("claim"), f.now)
				must(t, err, "ClaimIdempotency")
				if !claimed {
					t.Fatal("ClaimIdempotency: not claimed")
				}
			}
		}},
		{"ClaimIdempotency (a replay: the record comes back)", 1, []string{"PutItem"}, func(t *testing.T, f *budgetFixture) func() {
			r := f.idem("replay")
			f.claim(t, r)
			r.State, r.Response = account.IdempotencyDone, make([]byte, 400)
			must(t, f.s.FinishIdempotency(f.ctx, r), "FinishIdempotency")
			again := f.idem("replay")
			return func() {
				held, claimed, err := f.s.ClaimIdempotency(f.ctx, again, f.now)
				must(t, err, "ClaimIdempotency")
				if claimed || held.State != account.IdempotencyDone {
					t.Fatalf("ClaimIdempotency: claimed %v, state %s; want the done record", claimed, held.State)
				}
			}
		}},
		{"CreateUser (with its idempotency record)", 1, []string{"TransactWriteItems"}, func(t *testing.T, f *budgetFixture) func() {
			opts := f.committing(t, "create-user")
			return func() { must(t, f.s.CreateUser(f.ctx, opts, newUser(f.tick())), "CreateUser") }
		}},
		{"CreateToken (with its idempotency record)", 1, []string{"TransactWriteItems"}, func(t *testing.T, f *budgetFixture) func() {
			opts := f.committing(t, "create-token")
			return func() {
				at := f.tick()
				must(t, f.s.CreateToken(f.ctx, opts, account.TokenRecord{ID: account.NewID(account.PrefixToken, at), KeyID: f.key.ID, Scopes: []string{"read:users"}, IssuedAt: at, ExpiresAt: at.Add(time.Hour)}), "CreateToken")
			}
		}},
		{"FinishIdempotency (an answer of 400 bytes)", 1, []string{"PutItem"}, func(t *testing.T, f *budgetFixture) func() {
			r := f.idem("finish")
			f.claim(t, r)
			r.State, r.Response = account.IdempotencyDone, make([]byte, 400)
			return func() { must(t, f.s.FinishIdempotency(f.ctx, r), "FinishIdempotency") }
		}},
		{"ReleaseIdempotency", 1, []string{"DeleteItem"}, func(t *testing.T, f *budgetFixture) func() {
			r := f.idem("release")
			f.claim(t, r)
			return func() { must(t, f.s.ReleaseIdempotency(f.ctx, r.KeyID, r.Key, r.Owner), "ReleaseIdempotency") }
		}},
	}
	// The fixture is written once through the store; each row gets a
	// table of its own holding the same items, as a few batch writes.
	fixture, table := newBudgetFixture(t, client)
	items := dynamotest.Items(t, client, table)
	// The rows run at once, each with a meter and a table of its own;
	// the report keeps their order.
	rows := make([]string, len(budgets))
	t.Run("rows", func(t *testing.T) {
		for i, b := range budgets {
			t.Run(b.op, func(t *testing.T) {
				t.Parallel()
				rows[i] = measureBudget(t, b, fixture, items)
			})
		}
	})
	if !t.Failed() {
		checkDocTable(t, "store", "| store operation | budget | DynamoDB requests | capacity units (DynamoDB Local) |\n|---|---|---|---|\n"+strings.Join(rows, ""))
	}
}

// measureBudget runs b over a copy of fixture and returns its row of the
// report.
func measureBudget(t *testing.T, b budget, fixture *budgetFixture, items []map[string]types.AttributeValue) string {
	var m meter
	f := fixture.copyTo(t, dynamotest.NewClient(t, m.option), items)
	run := b.prepare(t, f)
	calls := m.measure(run)
	var ops []string
	var units float64
	for _, c := range calls {
		ops = append(ops, c.op)
		units += c.capacity
	}
	if len(calls) > b.maxCalls {
		t.Errorf("%s made %d DynamoDB requests %v, budget %d", b.op, len(calls), ops, b.maxCalls)
	}
	if b.calls != nil && !slices.Equal(ops, b.calls) {
		t.Errorf("%s made requests %v, want %v", b.op, ops, b.calls)
	}
	return fmt.Sprintf("| %s | %d | %d (%s) | %g |\n", b.op, b.maxCalls, len(calls), strings.Join(ops, ", "), units)
}

// orgKeys binds two keys to the fixture's organization, one below the
// other, and returns the first with a token of it.
func (f *budgetFixture) orgKeys(t *testing.T) (account.APIKey, account.TokenRecord) {
	t.Helper()
	k := newKey(f.tick())
	k.OrganizationID, k.OwnerID = f.org.ID, "crm:4711"
	must(t, f.s.CreateAPIKey(f.ctx, account.WriteOptions{}, k), "CreateAPIKey")
	child := newKey(f.tick())
	child.OrganizationID, child.CreatedBy, child.Ancestors = f.org.ID, k.ID, []string{k.ID}
	must(t, f.s.CreateAPIKey(f.ctx, account.WriteOptions{}, child), "CreateAPIKey")
	at := f.tick()
	tok := account.TokenRecord{ID: account.NewID(account.PrefixToken, at), KeyID: k.ID, Scopes: []string{"read:users"}, IssuedAt: at, ExpiresAt: at.Add(time.Hour)}
	must(t, f.s.CreateToken(f.ctx, account.WriteOptions{}, tok), "CreateToken")
	return k, tok
}

// newBudgetFixture makes a table holding 25 users, organizations and keys
// (so that list pages are full), a user in 3 organizations and an
// organization with 3 members, a key with two keys below it in a chain, a
// token of the key and of the deepest key, and the public keys. It returns
// the fixture and its table.
func newBudgetFixture(t *testing.T, client *dynamodb.Client) (*budgetFixture, string) {
	t.Helper()
	table := dynamotest.NewTable(t, client)
	f := &budgetFixture{now: time.Now().UTC().Truncate(time.Millisecond)}
	f.use(t, client, table)
	for range 25 {
		must(t, f.s.CreateUser(f.ctx, account.WriteOptions{}, newUser(f.tick())), "CreateUser")
		must(t, f.s.CreateOrganization(f.ctx, account.WriteOptions{}, newOrg(f.tick())), "CreateOrganization")
		must(t, f.s.CreateAPIKey(f.ctx, account.WriteOptions{}, newKey(f.tick())), "CreateAPIKey")
	}
	f.user, f.org, f.key = newUser(f.tick()), newOrg(f.tick()), newKey(f.tick())
	must(t, f.s.CreateUser(f.ctx, account.WriteOptions{}, f.user), "CreateUser")
	f.loner = newUser(f.tick())
	must(t, f.s.CreateUser(f.ctx, account.WriteOptions{}, f.loner), "CreateUser")
	must(t, f.s.CreateOrganization(f.ctx, account.WriteOptions{}, f.org), "CreateOrganization")
	must(t, f.s.CreateAPIKey(f.ctx, account.WriteOptions{}, f.key), "CreateAPIKey")
	for range 2 {
		o, u := newOrg(f.tick()), newUser(f.tick())
		must(t, f.s.CreateOrganization(f.ctx, account.WriteOptions{}, o), "CreateOrganization")
		must(t, f.s.CreateUser(f.ctx, account.WriteOptions{}, u), "CreateUser")
		at := f.tick()
		must(t, f.s.AddMember(f.ctx, account.WriteOptions{}, account.Membership{OrganizationID: o.ID, UserID: f.user.ID, Role: "member", CreatedAt: at, UpdatedAt: at}), "AddMember")
		must(t, f.s.AddMember(f.ctx, account.WriteOptions{}, account.Membership{OrganizationID: f.org.ID, UserID: u.ID, Role: "member", CreatedAt: at, UpdatedAt: at}), "AddMember")
	}
	at := f.tick()
	if err := f.s.AddMember(f.ctx, account.WriteOptions{}, account.Membership{OrganizationID: f.org.ID, UserID: f.user.ID, Role: "member", CreatedAt: at, UpdatedAt: at}); err != nil {
		t.Fatalf("AddMember: %v", err)
	}
	f.tok = account.TokenRecord{ID: account.NewID(account.PrefixToken, at), KeyID: f.key.ID, Scopes: []string{"read:users"}, IssuedAt: at, ExpiresAt: at.Add(time.Hour)}
	must(t, f.s.CreateToken(f.ctx, account.WriteOptions{}, f.tok), "CreateToken")
	f.deep = f.key
	for range 2 {
		parent := f.deep
		f.deep = newKey(f.tick())
		f.deep.CreatedBy, f.deep.Ancestors = parent.ID, append(slices.Clip(parent.Ancestors), parent.ID)
		must(t, f.s.CreateAPIKey(f.ctx, account.WriteOptions{}, f.deep), "CreateAPIKey below a key")
	}
	at = f.tick()
	f.deepTok = account.TokenRecord{ID: account.NewID(account.PrefixToken, at), KeyID: f.deep.ID, Scopes: []string{"read:users"}, IssuedAt: at, ExpiresAt: at.Add(time.Hour)}
	must(t, f.s.CreateToken(f.ctx, account.WriteOptions{}, f.deepTok), "CreateToken")
	must(t, f.s.PutPublicKeys(f.ctx, []byte(`{"keys":[]}`), at), "PutPublicKeys")
	return f, table
}

// use points f at table, for t.
func (f *budgetFixture) use(t *testing.T, client *dynamodb.Client, table string) {
	// A verify reads copy 1 of its items, as 15 in 16 do (see the HTTP
	// budgets).
	f.ctx = t.Context()
	f.s = dynamostore.New(client, table, dynamostore.WithTimeout(dynamotest.Timeout)).ReadCopy(1)
}

// copyTo returns a copy of f over a new table holding items, f's table's
// items, for t: the same state as a fixture of t's own.
func (f *budgetFixture) copyTo(t *testing.T, client *dynamodb.Client, items []map[string]types.AttributeValue) *budgetFixture {
	t.Helper()
	c := *f
	c.use(t, client, dynamotest.NewTableWith(t, client, items))
	return &c
}

func newUser(at time.Time) account.User {
	id := account.NewID(account.PrefixUser, at)
	return account.User{ID: id, Email: strings.ToLower(id) + "@example.com", Name: "Grace Hopper", Role: "member", CreatedAt: at, UpdatedAt: at}
}

func newOrg(at time.Time) account.Organization {
	id := account.NewID(account.PrefixOrganization, at)
	return account.Organization{ID: id, Name: "Harvard Mark I", Slug: "org-" + strings.ToLower(id[len(id)-16:]), Plan: "free", CreatedAt: at, UpdatedAt: at}
}

func newKey(at time.Time) account.APIKey {
	secret := account.NewAPIKeySecret()
	return account.APIKey{
		ID: account.NewID(account.PrefixAPIKey, at), Name: "ci", Hash: account.HashAPIKey(secret),
		Last4: secret[len(secret)-4:], Scopes: []string{"read:users", "write:users"}, CreatedAt: at,
	}
}

// idem returns a started record of the fixture key's Idempotency-Key key,
// for a request of a 32-byte fingerprint, at the fixture's time.
func (f *budgetFixture) idem(key string) account.IdempotencyRecord {
	return account.IdempotencyRecord{
		KeyID: f.key.ID, Key: key, Fingerprint: make([]byte, 32), Owner: "owner-" + key + "-" + f.tick().Format(time.RFC3339Nano),
		State: account.IdempotencyStarted, LeaseUntil: f.now.Add(account.IdempotencyLease),
		CreatedAt: f.now, ExpiresAt: f.now.Add(account.IdempotencyRetention),
	}
}

func (f *budgetFixture) claim(t *testing.T, r account.IdempotencyRecord) {
	t.Helper()
	if _, claimed, err := f.s.ClaimIdempotency(f.ctx, r, f.now); err != nil || !claimed {
		t.Fatalf("ClaimIdempotency: claimed %v, %v", claimed, err)
	}
}

// committing claims key and returns the WriteOptions of store writes that
// commit its record with their change.
func (f *budgetFixture) committing(t *testing.T, key string) account.WriteOptions {
	t.Helper()
	r := f.idem(key)
	f.claim(t, r)
	return account.WriteOptions{Commit: &account.IdempotencyCommit{KeyID: r.KeyID, Key: r.Key, Owner: r.Owner}}
}

package tablestore_test

import (
	"crypto/ed25519"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"latchkey/pkg/account"
	"latchkey/pkg/dynamostore"
	"latchkey/pkg/dynamostore/dynamotest"
)

// TestCreditsBudget measures, on DynamoDB Local, what a verification of a
// key whose credits spread over 10 usage records (5,000 a second, 1,000
// credits) costs: normally one BatchGetItem and one UpdateItem, as with
// one record, and the first time in a process one UpdateItem more, which
// starts record 0 for the previous release (startRecordZero); on its last credits, when the two records a use tries are
// spent, one strongly consistent BatchGetItem of the 8 others and the
// write to one that has credits; once every record is spent, that once
// in a process, then nothing but the verify's own read.
func TestCreditsBudget(t *testing.T) {
	var m meter
	client := dynamotest.NewClient(t, m.option)
	store := dynamostore.New(client, dynamotest.NewTable(t, client), dynamostore.WithTimeout(dynamotest.Timeout)).ReadCopy(1)
	_, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	svc := newServiceSigning(t, store, priv).Service
	admin := account.NewAPIKeySecret()
	if err = svc.EnsureBootstrapKey(t.Context(), admin, time.Time{}); err != nil {
		t.Fatalf("EnsureBootstrapKey: %v", err)
	}
	p, err := svc.Authenticate(t.Context(), admin)
	if err != nil {
		t.Fatalf("Authenticate: %v", err)
	}
	var k account.APIKey
	var secret string
	created := m.measure(func() {
		k, secret, err = svc.CreateAPIKey(t.Context(), p, account.NewAPIKey{
			Name: "fast", Scopes: []string{"read:users"},
			RateLimits: []account.RateLimitRequest{{Name: "second", Limit: 5000, Period: "1s"}},
			Credits:    &account.CreditsRequest{Remaining: 1000},
		})
	})
	if err != nil {
		t.Fatalf("CreateAPIKey: %v", err)
	}
	// Its last request starts record 0 of the credits (startCredits).
	if last := created[len(created)-1]; last.op != "UpdateItem" || last.capacity != 1 {
		t.Errorf("the creation of a key with credits on 10 records: requests %v, want an UpdateItem of 1 WRU last", created)
	}
	t.Logf("the creation of a key with credits on 10 records: %d requests, %+v", len(created), created)
	// The key's requests and verifications run in another process, which
	// did not set the credits (that one started their record 0:
	// startCredits). Its read of the formats item goes with the token's
	// issuance, unmeasured.
	svc = newServiceSigning(t, store, priv).Service
	kp, err := svc.Authenticate(t.Context(), secret)
	if err != nil {
		t.Fatalf("Authenticate: %v", err)
	}
	tok, _, err := svc.IssueToken(t.Context(), kp, account.TokenRequest{Scopes: []string{"read:users"}})
	if err != nil {
		t.Fatalf("IssueToken: %v", err)
	}
	const (
		batch = "BatchGetItem"
		upd   = "UpdateItem"
	)
	var report strings.Builder
	verify := func(what string, valid bool, want ...[]string) float64 {
		t.Helper()
		var v account.Verification
		calls := m.measure(func() {
			var err error
			if v, err = svc.VerifyToken(t.Context(), tok); err != nil {
				t.Fatalf("%s: VerifyToken: %v", what, err)
			}
		})
		if v.Valid != valid {
			t.Fatalf("%s: %+v, want valid %v", what, v, valid)
		}
		var ops []string
		var units float64
		for _, c := range calls {
			ops = append(ops, c.op)
			units += c.capacity
		}
		if !slices.ContainsFunc(want, func(w []string) bool { return slices.Equal(ops, w) }) {
			t.Errorf("%s: DynamoDB requests %v, want one of %v", what, ops, want)
		}
		fmt.Fprintf(&report, "| %s | %d (%s) | %g |\n", what, len(ops), strings.Join(ops, ", "), units)
		return units
	}
	// The capacity DynamoDB Local reports: the verify's read 1 RRU, a
	// write 1 WRU, a failed conditional write 0 (AWS bills 1 WRU), the
	// read of 8 records 8 RRU.
	units := func(what string, got, want float64) {
		t.Helper()
		if got != want {
			t.Errorf("%s: %g capacity units, want %g", what, got, want)
		}
	}
	// The first use in the process starts record 0 (one UpdateItem more)
	// unless it lands there: 1 chance in 10.
	first := verify("the first use in a process", true, []string{batch, upd}, []string{batch, upd, upd})
	if first != 2 && first != 3 {
		t.Errorf("the first use: %g capacity units, want 2 or 3", first)
	}
	units("a use", verify("a use", true, []string{batch, upd}), 2)
	// Every record spent but one, which keeps a credit.
	counter := "c:" + k.Credits.Set + ":0"
	recs := make([]account.UsageRecord, 10)
	for j := range recs {
		recs[j] = account.UsageRecord{KeyID: k.ID, Shard: j}
	}
	usage, err := store.KeyUsage(t.Context(), recs...)
	if err != nil {
		t.Fatal(err)
	}
	for j, counters := range usage {
		left, ok := counters[counter]
		if !ok {
			left = 100
		}
		want := int64(0)
		if j == 4 {
			want = 1
		}
		_, _, err := store.ChangeKeyUsage(t.Context(), k.ID, j, account.UsageChange{Steps: []account.CounterStep{{Name: counter, Start: 100, Delta: want - left, Min: 0, Max: account.MaxCredits}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	verify("the last credit", true, []string{batch, upd}, []string{batch, upd, upd}, []string{batch, upd, upd, batch, upd})
	units("the first refusal", verify("the first use refused, every record spent", false, []string{batch, upd, upd, batch}), 9)
	units("the next refusal", verify("the next use refused in the process", false, []string{batch}), 1)
	t.Logf("a verification of a key with credits on 10 records (DynamoDB Local; it reports 0 for a failed conditional write):\n| use | DynamoDB requests | capacity units |\n|---|---|---|\n%s", report.String())
}

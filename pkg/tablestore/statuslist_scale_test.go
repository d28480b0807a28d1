package tablestore_test

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"latchkey/pkg/account"
	"latchkey/pkg/dynamostore"
	"latchkey/pkg/dynamostore/dynamotest"
	"latchkey/pkg/token"
)

// TestStatusList_KeyWith10000Tokens: a disable, an enable and a revoke-all
// of a key with 10,000 live tokens write every one of their status list
// entries before they answer, within a bounded number of DynamoDB
// requests; it logs the time, the requests and the capacity units of each,
// and of a fetch of the list (docs/dynamodb.md, "Status lists").
func TestStatusList_KeyWith10000Tokens(t *testing.T) {
	const tokens = 10000
	var m meter
	client := dynamotest.NewClient(t, m.option)
	s := dynamostore.New(client, dynamotest.NewTable(t, client), dynamostore.WithTimeout(dynamotest.Timeout))
	ctx := t.Context()
	now := time.Now().UTC().Truncate(time.Millisecond)
	k := newKey(now.Add(-time.Minute))
	must(t, s.CreateAPIKey(ctx, account.WriteOptions{}, k), "CreateAPIKey")
	list := account.StatusListID(now, now, 0)
	end, err := s.LeaseStatusIndexes(ctx, list, tokens, account.StatusListExpiry(list))
	must(t, err, "LeaseStatusIndexes")

	var wg sync.WaitGroup
	errs := make(chan error, tokens)
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < tokens; i += 16 {
				at := now.Add(-time.Duration(tokens-i) * time.Millisecond)
				errs <- s.CreateToken(ctx, account.WriteOptions{}, account.TokenRecord{
					ID: account.NewID(account.PrefixToken, at), KeyID: k.ID, Scopes: []string{"read:users"},
					IssuedAt: at, ExpiresAt: at.Add(time.Hour), Status: &account.StatusRef{List: list, Index: end - tokens + int64(i)},
				})
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		must(t, err, "CreateToken")
	}

	count := func(want int) int {
		t.Helper()
		l, err := s.GetStatusList(ctx, list)
		must(t, err, "GetStatusList")
		n := 0
		for i := range l.Size {
			if l.Status(i) == want {
				n++
			}
		}
		return n
	}
	var report strings.Builder
	step := func(name string, fn func()) {
		t.Helper()
		start := time.Now()
		calls := m.measure(fn)
		took := time.Since(start)
		ops := map[string]int{}
		var units float64
		for _, c := range calls {
			ops[c.op]++
			units += c.capacity
		}
		names := make([]string, 0, len(ops))
		for op, n := range ops {
			names = append(names, fmt.Sprintf("%d %s", n, op))
		}
		sort.Strings(names)
		fmt.Fprintf(&report, "| %s | %s | %d (%s) | %.1f |\n", name, took.Round(time.Millisecond), len(calls), strings.Join(names, ", "), units)
		if len(calls) > 300 {
			t.Errorf("%s: %d requests, want at most 300", name, len(calls))
		}
	}
	disabled, enabled := true, false
	step("disable", func() {
		_, err := s.UpdateAPIKey(ctx, account.WriteOptions{}, k.ID, account.APIKeyPatch{Disabled: &disabled, At: time.Now()}, nil)
		must(t, err, "UpdateAPIKey")
	})
	if n := count(account.StatusSuspended); n != tokens {
		t.Errorf("after the disable: %d SUSPENDED, want %d", n, tokens)
	}
	step("fetch of the list (10,000 SUSPENDED)", func() { count(account.StatusSuspended) })
	step("enable", func() {
		_, err := s.UpdateAPIKey(ctx, account.WriteOptions{}, k.ID, account.APIKeyPatch{Disabled: &enabled, At: time.Now()}, nil)
		must(t, err, "UpdateAPIKey")
	})
	if n := count(account.StatusValid); n != tokens {
		t.Errorf("after the enable: %d VALID, want %d", n, tokens)
	}
	step("revoke-all", func() {
		_, err := s.UpdateAPIKey(ctx, account.WriteOptions{}, k.ID, account.APIKeyPatch{RevokeTokens: true, At: time.Now()}, nil)
		must(t, err, "UpdateAPIKey")
	})
	if n := count(account.StatusInvalid); n != tokens {
		t.Errorf("after the revoke-all: %d INVALID, want %d", n, tokens)
	}
	var lst string
	step("fetch of the list (10,000 INVALID)", func() {
		l, err := s.GetStatusList(ctx, list)
		must(t, err, "GetStatusList")
		lst, err = token.CompressStatusList(l.Statuses)
		must(t, err, "CompressStatusList")
	})
	t.Logf("a key with %d live tokens, on DynamoDB Local:\n| change | time | DynamoDB requests | capacity units |\n|---|---|---|---|\n%slst of the list after the revoke-all: %d characters", tokens, report.String(), len(lst))
}

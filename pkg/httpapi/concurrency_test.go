package httpapi_test

import (
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"latchkey/pkg/httpapi/httpapitest"
)

// TestConcurrentCreateUser sends 50 creates of one e-mail at once: exactly
// one may win.
func TestConcurrentCreateUser(t *testing.T) {
	a := newAPI(t)
	const n = 50
	statuses := make([]int, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			res := a.do(http.MethodPost, "/v1/users", a.AdminKey, map[string]any{"email": "race@example.com", "name": "Racer"})
			statuses[i] = res.StatusCode
			if res.StatusCode == http.StatusConflict {
				wantProblem(t, res, http.StatusConflict, "email_taken")
			}
		})
	}
	close(start)
	wg.Wait()
	count := map[int]int{}
	for _, s := range statuses {
		count[s]++
	}
	if count[http.StatusCreated] != 1 || count[http.StatusConflict] != n-1 {
		t.Fatalf("got statuses %v, want one 201 and %d 409", count, n-1)
	}
	var list struct {
		Data []map[string]any `json:"data"`
	}
	a.do(http.MethodGet, "/v1/users?email=race@example.com", a.AdminKey, nil).Decode(t, &list)
	if len(list.Data) != 1 {
		t.Errorf("users with the e-mail: got %d, want 1", len(list.Data))
	}
}

// TestPagingWhileCreating pages through users while others are created
// between pages: every user that existed when paging began is seen exactly
// once.
func TestPagingWhileCreating(t *testing.T) {
	a := newAPI(t)
	existing := map[string]bool{}
	for range 23 {
		existing[a.CreateUser(t, uniqueEmail()).ID] = true
	}
	seen := map[string]int{}
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatal("paging does not end")
		}
		path := "/v1/users?limit=5"
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		var page struct {
			Data []struct {
				ID string `json:"id"`
			} `json:"data"`
			HasMore    bool    `json:"has_more"`
			NextCursor *string `json:"next_cursor"`
		}
		res := a.do(http.MethodGet, path, a.AdminKey, nil)
		want(t, res, http.StatusOK)
		res.Decode(t, &page)
		if len(page.Data) > 5 {
			t.Fatalf("page of %d, want at most 5", len(page.Data))
		}
		for _, u := range page.Data {
			seen[u.ID]++
		}
		// Created mid-paging: newer than every page, so never part of this walk.
		a.CreateUser(t, uniqueEmail())
		a.CreateUser(t, uniqueEmail())
		if !page.HasMore {
			if page.NextCursor != nil {
				t.Errorf("last page has next_cursor %q", *page.NextCursor)
			}
			break
		}
		if page.NextCursor == nil {
			t.Fatal("has_more without next_cursor")
		}
		cursor = *page.NextCursor
	}
	for id := range existing {
		if seen[id] != 1 {
			t.Errorf("user %s seen %d times, want once", id, seen[id])
		}
	}
	for id, n := range seen {
		if !existing[id] || n != 1 {
			t.Errorf("user %s seen %d times; existed before paging: %v", id, n, existing[id])
		}
	}
}

// TestConcurrentLastOwner: two owners of an organization, each removed or
// demoted by a request sent at the same moment as the other's, round after
// round: one request succeeds, the other is 409 last_owner, and one owner
// remains. make test runs it over bbolt and over DynamoDB Local.
func TestConcurrentLastOwner(t *testing.T) {
	a := newAPI(t)
	for round := range 6 {
		o := a.CreateOrganization(t, uniqueSlug())
		base := "/v1/organizations/" + o.ID + "/members/"
		ids := []string{a.CreateUser(t, uniqueEmail()).ID, a.CreateUser(t, uniqueEmail()).ID}
		for _, id := range ids {
			a.AddMember(t, o.ID, id, "owner")
		}
		statuses := make([]int, 2)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range 2 {
			wg.Go(func() {
				<-start
				var res *httpapitest.Response
				if round%2 == 0 {
					res = a.do(http.MethodDelete, base+ids[1-i], a.AdminKey, nil)
				} else {
					res = a.do(http.MethodPatch, base+ids[1-i], a.AdminKey, map[string]any{"role": "admin"})
				}
				statuses[i] = res.StatusCode
				if res.StatusCode == http.StatusConflict {
					wantProblem(t, res, http.StatusConflict, "last_owner")
				}
			})
		}
		close(start)
		wg.Wait()
		ok := http.StatusNoContent
		if round%2 == 1 {
			ok = http.StatusOK
		}
		if !(statuses[0] == ok && statuses[1] == http.StatusConflict) && !(statuses[1] == ok && statuses[0] == http.StatusConflict) {
			t.Errorf("round %d: got statuses %v, want one %d and one 409", round, statuses, ok)
		}
		var list struct {
			Data []map[string]any `json:"data"`
		}
		a.do(http.MethodGet, "/v1/organizations/"+o.ID+"/members", a.AdminKey, nil).Decode(t, &list)
		owners := 0
		for _, m := range list.Data {
			if m["role"] == "owner" {
				owners++
			}
		}
		if owners != 1 {
			t.Errorf("round %d: %d owners after the race, want 1: %v", round, owners, list.Data)
		}
	}
}

// TestConcurrentRotations sends 20 rotations of one key at once. A
// rotation that loses the race to another is retried inside the request;
// one that loses every try is 409 concurrent_update, which the client may
// send again. None is 503 or logged as an error: a lost optimistic write
// is a conflict, not an outage. Every rotation that answered 200 replaced
// the secret, with no grace period, so exactly one of the secrets they
// returned works at the end: the last one written. make test runs it over
// bbolt and over DynamoDB Local, where it answered 30-45% 503 before.
func TestConcurrentRotations(t *testing.T) {
	a := newAPI(t)
	key := a.createKey(a.AdminKey, "read:users")
	const n = 20
	type answer struct {
		status int
		secret string
	}
	answers := make([]answer, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			res := a.do(http.MethodPost, "/v1/api-keys/"+key.id+"/rotate", a.AdminKey, map[string]any{})
			answers[i].status = res.StatusCode
			switch res.StatusCode {
			case http.StatusOK:
				answers[i].secret, _ = res.Map(t)["key"].(string)
			case http.StatusConflict:
				wantProblem(t, res, http.StatusConflict, "concurrent_update")
			}
		})
	}
	close(start)
	wg.Wait()
	count := map[int]int{}
	working := 0
	for _, ans := range answers {
		count[ans.status]++
		if ans.status != http.StatusOK {
			continue
		}
		switch res := a.do(http.MethodGet, "/v1/users", ans.secret, nil); res.StatusCode {
		case http.StatusOK:
			working++
		case http.StatusUnauthorized:
		default:
			t.Errorf("a returned secret: got %d %s, want 200 or 401", res.StatusCode, res.Body)
		}
	}
	t.Logf("statuses %v", count)
	if count[http.StatusOK]+count[http.StatusConflict] != n || count[http.StatusOK] == 0 {
		t.Errorf("got statuses %v, want only 200 and 409 concurrent_update, at least one 200", count)
	}
	if working != 1 {
		t.Errorf("%d of the %d secrets returned work, want exactly 1", working, count[http.StatusOK])
	}
	want(t, a.do(http.MethodGet, "/v1/users", key.secret, nil), http.StatusUnauthorized) // the secret before them
	for _, line := range a.Logs.Lines() {
		if strings.Contains(line, `"level":"ERROR"`) {
			t.Errorf("logged: %s", line)
		}
	}
}

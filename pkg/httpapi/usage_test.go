package httpapi_test

import (
	"context"
	"net/http"
	"net/url"
	"reflect"
	"testing"
	"time"

	"latchkey/pkg/account"
)

type usageJSON struct {
	Data []struct {
		Start         string           `json:"start"`
		Verifications map[string]int64 `json:"verifications"`
		TokensIssued  int64            `json:"tokens_issued"`
	} `json:"data"`
}

// TestUsage counts verifications through /v1/auth/verify by outcome and
// reads them back from both usage routes, with their validation and
// their tenant and scope rules.
func TestUsage(t *testing.T) {
	a := newAPI(t)
	ctx := context.Background()
	admin, err := a.Service.Authenticate(ctx, a.AdminKey)
	if err != nil {
		t.Fatal(err)
	}
	org := a.CreateOrganization(t, uniqueSlug())
	key, secret, err := a.Service.CreateAPIKey(ctx, admin, account.NewAPIKey{Name: "bound", OrganizationID: org.ID, Scopes: []string{"read:api_keys", "read:organizations"}})
	if err != nil {
		t.Fatal(err)
	}
	tok, _ := a.IssueToken(t, secret, "", "read:api_keys")
	want(t, a.do(http.MethodGet, "/v1/auth/verify", tok, nil), http.StatusOK)
	want(t, a.do(http.MethodGet, "/v1/auth/verify", tok, nil), http.StatusOK)
	want(t, a.do(http.MethodPost, "/v1/auth/revoke", a.AdminKey, map[string]string{"token": tok}), http.StatusOK)
	want(t, a.do(http.MethodGet, "/v1/auth/verify", tok, nil), http.StatusOK)
	if err := a.Service.FlushUsage(ctx); err != nil {
		t.Fatal(err)
	}
	start := a.Clock.Now().UTC().Truncate(time.Minute).Format(time.RFC3339)
	wantUsage := func(path, credential string) {
		t.Helper()
		res := a.do(http.MethodGet, path, credential, nil)
		want(t, res, http.StatusOK)
		var got usageJSON
		res.Decode(t, &got)
		if len(got.Data) != 1 || got.Data[0].Start != start || got.Data[0].TokensIssued != 1 ||
			!reflect.DeepEqual(got.Data[0].Verifications, map[string]int64{"valid": 2, "revoked": 1}) {
			t.Errorf("GET %s: got %+v, want one bucket at %s of 2 valid, 1 revoked, 1 token", path, got, start)
		}
	}
	wantUsage("/v1/api-keys/"+key.ID+"/usage?interval=minute", a.AdminKey)
	wantUsage("/v1/organizations/"+org.ID+"/usage?interval=minute", a.AdminKey)
	wantUsage("/v1/organizations/"+org.ID+"/usage?interval=minute", secret)
	wantUsage("/v1/api-keys/"+key.ID+"/usage?interval=minute", secret)

	t.Run("Empty", func(t *testing.T) {
		res := a.do(http.MethodGet, "/v1/api-keys/"+key.ID+"/usage?from="+url.QueryEscape(a.Clock.Now().Add(-72*time.Hour).Format(time.RFC3339))+"&to="+url.QueryEscape(a.Clock.Now().Add(-48*time.Hour).Format(time.RFC3339)), a.AdminKey, nil)
		want(t, res, http.StatusOK)
		var got usageJSON
		res.Decode(t, &got)
		if got.Data == nil || len(got.Data) != 0 {
			t.Errorf("got %s, want an empty data array", res.Body)
		}
	})
	t.Run("Validation", func(t *testing.T) {
		now := a.Clock.Now()
		path := "/v1/organizations/" + org.ID + "/usage"
		wantProblem(t, a.do(http.MethodGet, path+"?interval=minute&from="+url.QueryEscape(now.Add(-1001*time.Minute).Format(time.RFC3339)), a.AdminKey, nil), http.StatusBadRequest, "too_many_buckets")
		wantProblem(t, a.do(http.MethodGet, path+"?interval=day&from="+url.QueryEscape(now.Add(-1001*24*time.Hour).Format(time.RFC3339)), a.AdminKey, nil), http.StatusBadRequest, "too_many_buckets")
		p := wantProblem(t, a.do(http.MethodGet, path+"?from="+url.QueryEscape(now.Format(time.RFC3339))+"&to="+url.QueryEscape(now.Add(-time.Hour).Format(time.RFC3339)), a.AdminKey, nil), http.StatusBadRequest, "invalid_request")
		wantField(t, p, "from")
		wantField(t, wantProblem(t, a.do(http.MethodGet, path+"?from=yesterday", a.AdminKey, nil), http.StatusBadRequest, "invalid_request"), "from")
		wantField(t, wantProblem(t, a.do(http.MethodGet, path+"?interval=week", a.AdminKey, nil), http.StatusBadRequest, "invalid_request"), "interval")
		wantProblem(t, a.do(http.MethodGet, path+"?limit=5", a.AdminKey, nil), http.StatusBadRequest, "invalid_request")
	})
	t.Run("Tenancy", func(t *testing.T) {
		other := a.CreateOrganization(t, uniqueSlug())
		wantProblem(t, a.do(http.MethodGet, "/v1/organizations/"+other.ID+"/usage", secret, nil), http.StatusNotFound, "not_found")
		adminKey, err := a.Service.Authenticate(ctx, a.AdminKey)
		if err != nil {
			t.Fatal(err)
		}
		wantProblem(t, a.do(http.MethodGet, "/v1/api-keys/"+adminKey.KeyID+"/usage", secret, nil), http.StatusNotFound, "not_found")
		_, users := a.CreateAPIKey(t, "read:users")
		wantProblem(t, a.do(http.MethodGet, "/v1/organizations/"+org.ID+"/usage", users, nil), http.StatusForbidden, "insufficient_scope")
		wantProblem(t, a.do(http.MethodGet, "/v1/api-keys/"+key.ID+"/usage", users, nil), http.StatusForbidden, "insufficient_scope")
		wantProblem(t, a.do(http.MethodGet, "/v1/api-keys/"+key.ID+"/usage", "", nil), http.StatusUnauthorized, "unauthorized")
	})
}

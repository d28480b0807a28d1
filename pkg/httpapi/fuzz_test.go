package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"latchkey/pkg/httpapi/httpapitest"
)

// FuzzDecodeRequest sends arbitrary bodies and content types to every route
// that takes a body. Decoding and validation must never panic and never
// answer 5xx: any input is either accepted or a 4xx problem. An accepted
// body was valid UTF-8, and nothing the server stored holds a U+FFFD the
// client did not send.
func FuzzDecodeRequest(f *testing.F) {
	env := httpapitest.NewServer(f)
	user := env.CreateUser(f, "fuzz@example.com")
	org := env.CreateOrganization(f, "fuzz")
	env.AddMember(f, org.ID, user.ID, "member")
	tok, _ := env.IssueToken(f, env.AdminKey, "", "read:users")
	targets := []struct{ method, path string }{
		{http.MethodPost, "/v1/users"},
		{http.MethodPut, "/v1/users/" + user.ID},
		{http.MethodPost, "/v1/organizations"},
		{http.MethodPatch, "/v1/organizations/" + org.ID},
		{http.MethodPost, "/v1/organizations/" + org.ID + "/members"},
		{http.MethodPatch, "/v1/organizations/" + org.ID + "/members/" + user.ID},
		{http.MethodPost, "/v1/auth/token"},
		{http.MethodPost, "/v1/auth/revoke"},
		{http.MethodPost, "/v1/api-keys"},
	}

	for i, seed := range []string{
		`{"email":"a@example.com","name":"Ada","role":"admin"}`,
		`{"name":"Ada King"}`,
		`{"name":"Acme","slug":"acme","plan":"pro"}`,
		`{"plan":null}`,
		`{"user_id":"` + user.ID + `","role":"owner"}`,
		`{"role":"admin"}`,
		`{"scopes":["read:users","*:*"],"expires_in":"15m"}`,
		`{"token":"` + tok + `"}`,
		`{"name":"k","scopes":["read:users"],"expires_in":"1d"}`,
		`{"name":"\u0000"}`, `{"scopes":[1,2]}`, `{"a":1}`, `{} {}`, `[]`, `null`, `"x"`, `{"name":"x"`, "\xff\xfe",
		`{"expires_in":"99999999999999999999d","scopes":["a:b"]}`,
		"{\"name\":\"Ada\xff\"}", `{"name":"\ud800"}`, `{"name":"\udc00\ud800"}`, `{"name":"\ud83d\ude00"}`,
		"{\"email\":\"fuzz2@example.com\",\"name\":\"\xed\xa0\x80\"}",
	} {
		f.Add(uint8(i), "application/json", []byte(seed))
	}
	f.Add(uint8(0), "application/json; charset=utf-8; x=y", []byte(`{}`))
	f.Add(uint8(0), "text/plain", []byte(`{}`))
	f.Add(uint8(0), "application/json; charset", []byte(`{}`))

	f.Fuzz(func(t *testing.T, target uint8, contentType string, body []byte) {
		tg := targets[int(target)%len(targets)]
		h := http.Header{"Authorization": {"Bearer " + env.AdminKey}, "Content-Type": {contentType}}
		res := env.DoRaw(t, env.Handler, tg.method, tg.path, h, body)
		if res.StatusCode >= 500 {
			t.Fatalf("%s %s %q %q: got %d %s", tg.method, tg.path, contentType, body, res.StatusCode, res.Body)
		}
		if res.StatusCode < 300 {
			if !utf8.Valid(body) {
				t.Fatalf("%s %s %q: accepted a body that is not UTF-8: %d %s", tg.method, tg.path, body, res.StatusCode, res.Body)
			}
			if strings.ContainsRune(string(res.Body), utf8.RuneError) && !strings.ContainsRune(string(body), utf8.RuneError) && !strings.Contains(strings.ToLower(string(body)), `\ufffd`) {
				t.Fatalf("%s %s %q: U+FFFD in the answer that the request did not hold: %s", tg.method, tg.path, body, res.Body)
			}
		}
		if res.StatusCode >= 400 {
			var p struct {
				Code   string `json:"code"`
				Status int    `json:"status"`
			}
			if err := json.Unmarshal(res.Body, &p); err != nil || p.Code == "" || p.Status != res.StatusCode {
				t.Fatalf("%s %s %q: got %d with body %q, want a problem", tg.method, tg.path, body, res.StatusCode, res.Body)
			}
		}
	})
}

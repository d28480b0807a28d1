package main_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"latchkey/pkg/httpapi"
)

// rawResponse is what the server wrote back to bytes sent on a fresh
// connection.
type rawResponse struct {
	status      int
	contentType string
	body        []byte
}

// raw sends request as it is, bytes on a TCP connection, and reads one
// final response (after any 100 Continue): what a client that net/http's
// client would not let us imitate gets back.
func (s *server) raw(t *testing.T, request string) rawResponse {
	t.Helper()
	return s.rawSend(t, request, false)
}

// rawSend is raw; with closeWrite it then shuts its sending side, so that
// the server reads the end of a body that is shorter than announced at once
// instead of waiting for its read timeout.
func (s *server) rawSend(t *testing.T, request string, closeWrite bool) rawResponse {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(conn, request); err != nil {
		t.Fatal(err)
	}
	if closeWrite {
		conn.(*net.TCPConn).CloseWrite()
	}
	br := bufio.NewReader(conn)
	res, err := http.ReadResponse(br, nil)
	for err == nil && res.StatusCode == http.StatusContinue {
		res, err = http.ReadResponse(br, nil)
	}
	if err != nil {
		t.Fatalf("%.60q: reading the response: %v", request, err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return rawResponse{res.StatusCode, res.Header.Get("Content-Type"), body}
}

// TestServer_ProtocolErrors sends requests that break HTTP/1.1 itself to the
// real server over TCP. The ones net/http refuses before any handler runs
// are the only answers that are not problem+json (text/plain, or no body
// at all); README lists the same ones. Every request that reaches the
// handler, however odd, gets problem+json.
func TestServer_ProtocolErrors(t *testing.T) {
	admin := "lk_test_" + strings.Repeat("p", 40)
	s := start(t, t.TempDir(), "ADMIN_API_KEY="+admin)
	auth := "Authorization: Bearer " + admin + "\r\n"

	t.Run("WrittenByNetHTTP", func(t *testing.T) {
		for _, tc := range []struct {
			name, request string
			status        int
		}{
			{"malformed request line", "GET /v1/users\r\nHost: x\r\n\r\n", http.StatusBadRequest},
			{"malformed percent-escape", "GET /v1/users/%zz HTTP/1.1\r\nHost: x\r\n\r\n", http.StatusBadRequest},
			{"malformed HTTP version", "GET /v1/users HTTP/1.x\r\nHost: x\r\n\r\n", http.StatusBadRequest},
			{"missing Host", "GET /v1/users HTTP/1.1\r\n\r\n", http.StatusBadRequest},
			{"malformed Host", "GET /v1/users HTTP/1.1\r\nHost: a/b\r\n\r\n", http.StatusBadRequest},
			{"malformed header line", "GET /v1/users HTTP/1.1\r\nHost: x\r\nno colon\r\n\r\n", http.StatusBadRequest},
			{"control character in a header", "GET /v1/users HTTP/1.1\r\nHost: x\r\nX-A: a\x01b\r\n\r\n", http.StatusBadRequest},
			{"conflicting Content-Length", "POST /v1/users HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n{}", http.StatusBadRequest},
			{"unsupported transfer encoding", "POST /v1/users HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", http.StatusNotImplemented},
			{"HTTP/2 over HTTP/1", "GET /v1/users HTTP/2.0\r\nHost: x\r\n\r\n", http.StatusHTTPVersionNotSupported},
			{"HTTP/0.9", "GET /v1/users HTTP/0.9\r\nHost: x\r\n\r\n", http.StatusHTTPVersionNotSupported},
			{"headers over the limit", "GET /v1/users HTTP/1.1\r\nHost: x\r\nX-Pad: " + strings.Repeat("a", httpapi.MaxHeaderBytes+4096) + "\r\n\r\n", http.StatusRequestHeaderFieldsTooLarge},
			{"unknown expectation", "GET /v1/users HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\n\r\n", http.StatusExpectationFailed},
		} {
			t.Run(tc.name, func(t *testing.T) {
				res := s.raw(t, tc.request)
				if res.status != tc.status {
					t.Fatalf("got %d %q, want %d", res.status, res.body, tc.status)
				}
				if tc.status == http.StatusExpectationFailed { // no body, so no type
					if res.contentType != "" || len(res.body) != 0 {
						t.Errorf("got %q %q, want no body", res.contentType, res.body)
					}
					return
				}
				if res.contentType != "text/plain; charset=utf-8" || len(res.body) == 0 {
					t.Errorf("got %q %q, want net/http's text/plain", res.contentType, res.body)
				}
			})
		}
	})

	t.Run("ReachTheHandler", func(t *testing.T) {
		bigBody := `{"name":"` + strings.Repeat("a", httpapi.MaxBodyBytes) + `"}`
		latin1 := "{\"email\":\"z@example.com\",\"name\":\"Zo\xeb\"}"
		post := func(body string) string {
			return "POST /v1/users HTTP/1.1\r\nHost: x\r\n" + auth + fmt.Sprintf("Content-Type: application/json\r\nContent-Length: %d\r\n\r\n", len(body)) + body
		}
		for _, tc := range []struct {
			name, request string
			status        int
			code          string
			closeWrite    bool
		}{
			{"double slash", "GET //v1/users HTTP/1.1\r\nHost: x\r\n" + auth + "\r\n", http.StatusNotFound, "not_found", false},
			{"dot-dot segment", "GET /v1/users/../api-keys HTTP/1.1\r\nHost: x\r\n" + auth + "\r\n", http.StatusNotFound, "not_found", false},
			{"escaped dot-dot segment", "GET /v1/users/%2e%2e/api-keys HTTP/1.1\r\nHost: x\r\n" + auth + "\r\n", http.StatusNotFound, "not_found", false},
			{"absolute form, double slash", "GET http://x//v1/users HTTP/1.1\r\nHost: x\r\n" + auth + "\r\n", http.StatusNotFound, "not_found", false},
			{"asterisk form", "GET * HTTP/1.1\r\nHost: x\r\n\r\n", http.StatusNotFound, "not_found", false},
			{"HTTP/2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", http.StatusNotFound, "not_found", false},
			{"CONNECT", "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n", http.StatusNotFound, "not_found", false},
			{"unknown method", "BREW /v1/users HTTP/1.1\r\nHost: x\r\n" + auth + "\r\n", http.StatusMethodNotAllowed, "method_not_allowed", false},
			{"lower-case method", "get /v1/users HTTP/1.1\r\nHost: x\r\n" + auth + "\r\n", http.StatusMethodNotAllowed, "method_not_allowed", false},
			{"HTTP/1.0 without Host", "GET /v1/users HTTP/1.0\r\n\r\n", http.StatusUnauthorized, "unauthorized", false},
			{"unknown query parameter", "GET /v1/organizations?plan=x HTTP/1.1\r\nHost: x\r\n" + auth + "\r\n", http.StatusBadRequest, "invalid_request", false},
			{"malformed chunk", "POST /v1/users HTTP/1.1\r\nHost: x\r\n" + auth + "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n", http.StatusBadRequest, "invalid_request", false},
			{"body shorter than its Content-Length", "POST /v1/users HTTP/1.1\r\nHost: x\r\n" + auth + "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{}", http.StatusBadRequest, "invalid_request", true},
			{"body over the limit", post(bigBody), http.StatusRequestEntityTooLarge, "payload_too_large", false},
			{"invalid UTF-8 in the body", post(latin1), http.StatusBadRequest, "invalid_request", false},
			{"100-continue", "POST /v1/users HTTP/1.1\r\nHost: x\r\n" + auth + "Content-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\n[", http.StatusBadRequest, "invalid_request", false},
		} {
			t.Run(tc.name, func(t *testing.T) {
				res := s.rawSend(t, tc.request, tc.closeWrite)
				if res.status != tc.status || res.contentType != "application/problem+json" {
					t.Fatalf("got %d %q %q, want %d problem+json", res.status, res.contentType, res.body, tc.status)
				}
				var p struct{ Code string }
				if err := json.Unmarshal(res.body, &p); err != nil || p.Code != tc.code {
					t.Fatalf("body %q: want code %s", res.body, tc.code)
				}
			})
		}
	})
}

// TestServer_HeaderLimit: the largest legitimate request (an access token
// with the most and longest scopes) is served; headers beyond the limit get
// 431. net/http reads 4096 bytes beyond MaxHeaderBytes before it refuses
// (its "bufio slop"), so that is where the edge lies.
func TestServer_HeaderLimit(t *testing.T) {
	admin := "lk_test_" + strings.Repeat("h", 40)
	s := start(t, t.TempDir(), "ADMIN_API_KEY="+admin)

	var scopes []string
	for i := range 32 { // account's limits: 32 scopes, a 32-character action, a 64-character resource
		scopes = append(scopes, fmt.Sprintf("%c%s:%c%s", 'a'+i%26, strings.Repeat("x", 31), 'a'+i/26, strings.Repeat("y", 63)))
	}
	body, _ := json.Marshal(map[string]any{"scopes": scopes, "expires_in": "24h"})
	status, tok := s.call(t, http.MethodPost, "/v1/auth/token", admin, string(body))
	token, _ := tok["access_token"].(string)
	if status != http.StatusCreated || token == "" {
		t.Fatalf("issue the largest token: got %d %v", status, tok)
	}
	if status, v := s.call(t, http.MethodGet, "/v1/auth/verify", token, ""); status != http.StatusOK || v["valid"] != true {
		t.Fatalf("verify the largest token (%d bytes): got %d %v", len(token), status, v)
	}
	t.Logf("largest access token: %d bytes; MaxHeaderBytes %d", len(token), httpapi.MaxHeaderBytes)

	// A request line and headers of exactly n bytes, with the token.
	request := func(n int) string {
		head := "GET /v1/auth/verify HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + token + "\r\nX-Pad: "
		return head + strings.Repeat("a", n-len(head)-len("\r\n\r\n")) + "\r\n\r\n"
	}
	edge := httpapi.MaxHeaderBytes + 4096
	for _, tc := range []struct {
		size, status int
	}{
		{httpapi.MaxHeaderBytes, http.StatusOK},
		{edge, http.StatusOK},
		{edge + 1, http.StatusRequestHeaderFieldsTooLarge},
		{2 * edge, http.StatusRequestHeaderFieldsTooLarge},
	} {
		if res := s.raw(t, request(tc.size)); res.status != tc.status {
			t.Errorf("%d bytes of request line and headers: got %d %q, want %d", tc.size, res.status, res.body, tc.status)
		}
	}
}

package httpapi

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"latchkey/pkg/account"
)

// Idempotency-Key, as Stripe documents it: a client that sends the header
// with a POST or DELETE under /v1 may send the request again, with the same
// key, as often as it likes; it is carried out once, and every repeat gets
// the first answer, with Idempotent-Replayed: true. The rules (states,
// lease, retention) are account's; this file reads the header, identifies
// the request, stores its answer and replays it.
const (
	headerIdempotencyKey = "Idempotency-Key"
	headerReplayed       = "Idempotent-Replayed"
	// idempotencyRetryAfter is the Retry-After of idempotency_in_progress:
	// most first requests are done well within a second.
	idempotencyRetryAfter = "1"
)

// TakesIdempotencyKey reports whether the route takes Idempotency-Key:
// every POST and DELETE under /v1 but /v1/auth/verify, which changes
// nothing. The rule is the route's method and path alone, so that a route
// added to the table takes the header with no code of its own. Other
// routes ignore the header.
func (r Route) TakesIdempotencyKey() bool {
	return (r.Method == http.MethodPost || r.Method == http.MethodDelete) &&
		strings.HasPrefix(r.Path, "/v1/") && r.Path != "/v1/auth/verify"
}

// SealKey derives, from secret key material, the AES-256 key that seals
// the answers stored for Idempotency-Key (Config.SealKeys), with HKDF-SHA256
// under a label of its own, so that the key says nothing about the material
// nor about any other key derived from it.
func SealKey(material []byte) []byte {
	k, err := hkdf.Key(sha256.New, material, nil, "latchkey idempotency response v1", 32)
	if err != nil {
		panic(err) // only for a length HKDF cannot produce; 32 bytes it can
	}
	return k
}

// The first byte of a stored answer says how the rest is kept.
const (
	storedClear  byte = 0 // the JSON of storedResponse
	storedSealed byte = 1 // a 12-byte nonce, then AES-256-GCM of that JSON
)

// storedResponse is an answer as stored: what a replay writes.
type storedResponse struct {
	Status int         `json:"status"`
	Header http.Header `json:"header"`
	Body   []byte      `json:"body"`
}

// bufferedResponse holds a response until its record is stored.
type bufferedResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (b *bufferedResponse) Header() http.Header { return b.header }

func (b *bufferedResponse) WriteHeader(code int) {
	if b.status == 0 {
		b.status = code
	}
}

func (b *bufferedResponse) Write(p []byte) (int, error) {
	if b.status == 0 {
		b.status = http.StatusOK
	}
	return b.body.Write(p)
}

// send writes the held response to w.
func (b *bufferedResponse) send(w http.ResponseWriter) {
	for k, v := range b.header {
		w.Header()[k] = v
	}
	w.WriteHeader(b.status)
	w.Write(b.body.Bytes())
}

// fingerprint identifies a request: SHA-256 over its method, path, query
// and body, each preceded by its length so that no two requests run
// together. Bodies are compared byte for byte.
func fingerprint(r *http.Request, body []byte) []byte {
	h := sha256.New()
	for _, part := range [][]byte{[]byte(r.Method), []byte(r.URL.EscapedPath()), []byte(r.URL.RawQuery), body} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(part)))
		h.Write(n[:])
		h.Write(part)
	}
	return h.Sum(nil)
}

// serveIdempotent serves a request of route d that carries Idempotency-Key
// (values, as sent): it claims the key for the calling API key, then runs
// the handler with its response held back, stores the response (or
// releases the key after a 5xx that changed nothing) and only then sends
// it; or it replays the answer stored for the key; or it says why it does
// neither (400, 409, 422).
func (s *server) serveIdempotent(w http.ResponseWriter, r *http.Request, d routeDef, p account.Principal, values []string) {
	if len(values) > 1 {
		s.writeError(w, r, &account.Error{Code: account.CodeInvalidRequest, Message: "the request is invalid",
			Fields: []account.FieldError{{Field: headerIdempotencyKey, Message: "appears more than once"}}})
		return
	}
	key := values[0]
	if !account.ValidIdempotencyKey(key) {
		s.writeError(w, r, &account.Error{Code: account.CodeInvalidRequest, Message: "the request is invalid",
			Fields: []account.FieldError{{Field: headerIdempotencyKey, Message: fmt.Sprintf("must be 1 to %d printable ASCII characters", account.MaxIdempotencyKeyLength)}}})
		return
	}
	body, err := readBody(w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	fp := fingerprint(r, body)
	claim, done, err := s.svc.BeginIdempotent(r.Context(), p, key, fp)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if done != nil {
		s.replay(w, r, p.KeyID, key, fp, done.Response)
		return
	}

	// What is stored or released must be, whether or not the client
	// waits for the answer: its retry depends on it.
	bg := context.WithoutCancel(r.Context())
	settled := false
	defer func() {
		if !settled { // the handler panicked; outer answers 500
			if err := claim.Release(bg); err != nil {
				s.logIdempotency(w, r, "releasing the Idempotency-Key after a panic failed", err)
			}
		}
	}()
	held := &bufferedResponse{header: http.Header{}}
	// The request's change commits the claim's record with it.
	p.Write.Commit = claim.Commit()
	if err := d.handler(s, held, r, p); err != nil {
		s.writeError(held, r, err)
	}
	if held.status == 0 {
		held.status = http.StatusOK // what net/http sends for a handler that wrote nothing
	}
	settled = true
	if held.status >= 500 && !claim.Applied() {
		// Nothing was changed: a retry is carried out afresh.
		if err := claim.Release(bg); err != nil {
			s.logIdempotency(w, r, "releasing the Idempotency-Key failed; a retry waits for the lease", err)
		}
	} else if stored, err := s.store(p.KeyID, key, fp, held); err != nil {
		s.logIdempotency(w, r, "encoding the answer for Idempotency-Key failed", err)
	} else if err := claim.Finish(bg, stored); err != nil && !account.IsCode(err, account.CodeIdempotencyInProgress) {
		// The client gets its answer; a retry gets idempotency_response_lost
		// if the request changed something, and is carried out if not.
		s.logIdempotency(w, r, "storing the answer for Idempotency-Key failed", err)
	}
	held.send(w)
}

func (s *server) logIdempotency(w http.ResponseWriter, r *http.Request, msg string, err error) {
	s.log.ErrorContext(r.Context(), msg, "request_id", info(r).id, "route", info(r).route, "error", err.Error())
}

// replay writes the answer stored for a key.
func (s *server) replay(w http.ResponseWriter, r *http.Request, keyID, key string, fp, stored []byte) {
	res, err := s.open(keyID, key, fp, stored)
	if err != nil {
		s.logIdempotency(w, r, "the answer stored for Idempotency-Key cannot be opened", err)
		s.writeError(w, r, account.Errorf(account.CodeIdempotencyResponseLost, "the request with this Idempotency-Key was carried out, but its answer can no longer be replayed; it will not be carried out again: read the resource to learn the outcome"))
		return
	}
	for k, v := range res.Header {
		w.Header()[k] = v
	}
	w.Header().Set(headerReplayed, "true")
	w.WriteHeader(res.Status)
	w.Write(res.Body)
}

// additionalData binds a sealed answer to its record: it opens only as the
// answer to the same key of the same API key for the same request.
func additionalData(keyID, key string, fp []byte) []byte {
	return fmt.Appendf(nil, "%s\x00%s\x00%x", keyID, key, fp)
}

// store encodes a held response for its record: sealed when the handler
// has SealKeys, as JSON otherwise. X-Request-Id is the request's own, not
// part of the answer.
func (s *server) store(keyID, key string, fp []byte, res *bufferedResponse) ([]byte, error) {
	header := res.header.Clone()
	header.Del("X-Request-Id")
	plain, err := json.Marshal(storedResponse{Status: res.status, Header: header, Body: res.body.Bytes()})
	if err != nil {
		return nil, err
	}
	if len(s.sealKeys) == 0 {
		return append([]byte{storedClear}, plain...), nil
	}
	aead, err := newAEAD(s.sealKeys[0])
	if err != nil {
		return nil, err
	}
	out := make([]byte, 1+aead.NonceSize(), 1+aead.NonceSize()+len(plain)+aead.Overhead())
	out[0] = storedSealed
	rand.Read(out[1:]) // never fails (crypto/rand documents it)
	return aead.Seal(out, out[1:], plain, additionalData(keyID, key, fp)), nil
}

// errNotOpened is why a stored answer is not replayed.
var errNotOpened = errors.New("httpapi: the stored answer is not sealed by any of this handler's keys")

// open returns the answer stored for a record. A handler with SealKeys
// opens only what one of them sealed, so that a record written by anyone
// else (another function's role may write the table) replays nothing.
func (s *server) open(keyID, key string, fp, stored []byte) (storedResponse, error) {
	var res storedResponse
	if len(stored) == 0 {
		return res, errors.New("httpapi: empty stored answer")
	}
	plain := stored[1:]
	switch {
	case stored[0] == storedClear && len(s.sealKeys) == 0:
	case stored[0] == storedSealed && len(s.sealKeys) > 0:
		var opened bool
		for _, k := range s.sealKeys {
			aead, err := newAEAD(k)
			if err != nil {
				return res, err
			}
			if len(plain) < aead.NonceSize() {
				break
			}
			if p, err := aead.Open(nil, plain[:aead.NonceSize()], plain[aead.NonceSize():], additionalData(keyID, key, fp)); err == nil {
				plain, opened = p, true
				break
			}
		}
		if !opened {
			return res, errNotOpened
		}
	default:
		return res, fmt.Errorf("httpapi: a stored answer of kind %d, and this handler has %d seal keys", stored[0], len(s.sealKeys))
	}
	if err := json.Unmarshal(plain, &res); err != nil {
		return res, err
	}
	return res, nil
}

func newAEAD(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

package httpapi

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"latchkey/pkg/account"
)

// problemTypeBase prefixes the code to form a problem's type URI.
const problemTypeBase = "https://latchkey.dev/problems/"

// retryAfterSeconds is the Retry-After sent with 503: long enough for a
// throttled table to recover, short enough for an interactive client.
const retryAfterSeconds = 2

// codes maps every error code to its HTTP status and title. It is the one
// place where the two meet.
var codes = map[account.Code]struct {
	status int
	title  string
}{
	account.CodeInvalidRequest:       {http.StatusBadRequest, "Invalid request"},
	account.CodeUnauthorized:         {http.StatusUnauthorized, "Unauthorized"},
	account.CodeInsufficientScope:    {http.StatusForbidden, "Insufficient scope"},
	account.CodeForbidden:            {http.StatusForbidden, "Forbidden"},
	account.CodePreviousSecret:       {http.StatusForbidden, "Previous secret"},
	account.CodeNotFound:             {http.StatusNotFound, "Not found"},
	account.CodeMethodNotAllowed:     {http.StatusMethodNotAllowed, "Method not allowed"},
	account.CodeEmailTaken:           {http.StatusConflict, "E-mail taken"},
	account.CodeSlugTaken:            {http.StatusConflict, "Slug taken"},
	account.CodeExternalIDTaken:      {http.StatusConflict, "External id taken"},
	account.CodeLastOwner:            {http.StatusConflict, "Last owner"},
	account.CodeAlreadyMember:        {http.StatusConflict, "Already a member"},
	account.CodeConcurrentUpdate:     {http.StatusConflict, "Concurrent update"},
	account.CodePayloadTooLarge:      {http.StatusRequestEntityTooLarge, "Payload too large"},
	account.CodeUnsupportedMediaType: {http.StatusUnsupportedMediaType, "Unsupported media type"},
	account.CodeUnavailable:          {http.StatusServiceUnavailable, "Service unavailable"},
	account.CodeRateLimited:          {http.StatusTooManyRequests, "Rate limited"},
	account.CodeInternal:             {http.StatusInternalServerError, "Internal error"},

	account.CodeIdempotencyKeyReused:    {http.StatusUnprocessableEntity, "Idempotency key reused"},
	account.CodeIdempotencyInProgress:   {http.StatusConflict, "Idempotent request in progress"},
	account.CodeIdempotencyResponseLost: {http.StatusConflict, "Idempotent response lost"},

	account.CodeUnknownEventType: {http.StatusBadRequest, "Unknown event type"},
	account.CodeTooManyBuckets:   {http.StatusBadRequest, "Too many buckets"},

	account.CodeOutsideOrganization: {http.StatusForbidden, "Outside the organization"},
}

// problem is an RFC 9457 problem details body.
type problem struct {
	Type      string               `json:"type"`
	Title     string               `json:"title"`
	Status    int                  `json:"status"`
	Detail    string               `json:"detail"`
	Code      account.Code         `json:"code"`
	RequestID string               `json:"request_id"`
	Errors    []account.FieldError `json:"errors,omitempty"`
}

// writeError writes err as problem+json. Errors that are not *account.Error,
// and internal and unavailable ones, are logged with the request id and
// shown to the client only as a generic message. An error that is the
// request's own context ending (the client gone) is logged as that, at
// info level.
func (s *server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var e *account.Error
	if !errors.As(err, &e) {
		e = account.Internal(err)
	}
	if gone := r.Context().Err(); gone != nil && errors.Is(err, gone) {
		// The request's own context ended the work: the client went away
		// or, in Lambda, the invocation's deadline passed. Nothing failed
		// on our side and nobody reads this answer, so it is neither logged
		// as an error nor blamed on the store; the 503 is for the access log.
		s.log.InfoContext(r.Context(), "request abandoned by the client",
			"request_id", info(r).id, "route", info(r).route, "reason", gone.Error())
		s.writeProblem(w, r, account.Unavailable(err))
		return
	}
	switch e.Code {
	case account.CodeInternal, account.CodeUnavailable:
		s.log.ErrorContext(r.Context(), "request failed",
			"request_id", info(r).id, "route", info(r).route, "code", string(e.Code), "error", err.Error())
	}
	s.writeProblem(w, r, e)
}

// Problem is what a client is shown of an error: the problem details of
// the API's answer, without the request id.
type Problem struct {
	Status int
	Title  string
	Detail string
	Code   account.Code
	Fields []account.FieldError
}

// ProblemOf returns the problem details the API answers err with, for a
// front end over the same service (the console): its status and title
// from the one table, and for an internal or unavailable error the
// generic detail, never the cause. Errors that are not *account.Error are
// internal.
func ProblemOf(err error) Problem {
	var e *account.Error
	if !errors.As(err, &e) {
		e = account.Internal(err)
	}
	c, ok := codes[e.Code]
	if !ok {
		e, c = &account.Error{Code: account.CodeInternal}, codes[account.CodeInternal]
	}
	detail := e.Message
	switch e.Code {
	case account.CodeInternal:
		detail = "an internal error occurred; quote the request id if you report it"
	case account.CodeUnavailable:
		detail = "the service is temporarily unavailable; retry shortly"
	}
	return Problem{Status: c.status, Title: c.title, Detail: detail, Code: e.Code, Fields: e.Fields}
}

// writeProblem writes e, with the headers its code calls for. It is the one
// function that writes an error response.
func (s *server) writeProblem(w http.ResponseWriter, r *http.Request, e *account.Error) {
	if _, ok := codes[e.Code]; !ok {
		// A code without a status is a bug in this package: answer as internal.
		s.log.ErrorContext(r.Context(), "error code without an HTTP status", "request_id", info(r).id, "code", string(e.Code))
		e = &account.Error{Code: account.CodeInternal}
	}
	pr := ProblemOf(e)
	switch e.Code {
	case account.CodeUnavailable:
		w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds))
	case account.CodeIdempotencyInProgress:
		w.Header().Set("Retry-After", idempotencyRetryAfter)
	case account.CodeRateLimited:
		setRateLimitHeaders(w.Header(), e.Usage)
	case account.CodeUnauthorized:
		// RFC 6750, section 3: no error attribute when no credential was sent.
		challenge := `Bearer realm="latchkey"`
		if _, sent := bearer(r); sent {
			challenge += `, error="invalid_token"`
		}
		w.Header().Set("WWW-Authenticate", challenge)
	case account.CodeInsufficientScope:
		w.Header().Set("WWW-Authenticate", `Bearer realm="latchkey", error="insufficient_scope", scope="`+quoteSafe(e.Scope)+`"`)
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(pr.Status)
	b := getJSONBuffer()
	defer putJSONBuffer(b)
	b.enc.Encode(problem{ // cannot fail: strings, ints and a slice of them
		Type:      problemTypeBase + string(e.Code),
		Title:     pr.Title,
		Status:    pr.Status,
		Detail:    pr.Detail,
		Code:      e.Code,
		RequestID: info(r).id,
		Errors:    e.Fields,
	})
	w.Write(b.Bytes())
}

// quoteSafe drops the characters that would end a quoted-string early.
// Scopes are well formed by construction; this is defence in depth.
func quoteSafe(s string) string {
	return strings.NewReplacer(`"`, "", `\`, "").Replace(s)
}

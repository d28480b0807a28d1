package account

import (
	"errors"
	"fmt"
)

// Code is a stable, machine-readable error code. Clients switch on it; it
// never changes meaning once published.
type Code string

// The error codes of the API. pkg/httpapi maps each one to an HTTP status.
const (
	CodeInvalidRequest       Code = "invalid_request"
	CodeUnauthorized         Code = "unauthorized"
	CodeInsufficientScope    Code = "insufficient_scope"
	CodeForbidden            Code = "forbidden"
	CodeNotFound             Code = "not_found"
	CodeMethodNotAllowed     Code = "method_not_allowed"
	CodeEmailTaken           Code = "email_taken"
	CodeSlugTaken            Code = "slug_taken"
	CodeAlreadyMember        Code = "already_member"
	CodeExternalIDTaken      Code = "external_id_taken"
	CodeLastOwner            Code = "last_owner"
	CodePayloadTooLarge      Code = "payload_too_large"
	CodeUnsupportedMediaType Code = "unsupported_media_type"
	CodeUnavailable          Code = "unavailable"
	CodeInternal             Code = "internal"
)

// The outcomes of an Idempotency-Key that is not carried out afresh (see
// Service.BeginIdempotent).
const (
	CodeIdempotencyKeyReused    Code = "idempotency_key_reused"
	CodeIdempotencyInProgress   Code = "idempotency_in_progress"
	CodeIdempotencyResponseLost Code = "idempotency_response_lost"
)

// CodePreviousSecret answers a request that presents an API key's previous
// secret, replaced by a rotation and still accepted during its grace
// period, to an operation that creates, changes, rotates or deletes API
// keys: only the current secret manages keys (see Principal.Authorize).
const CodePreviousSecret Code = "previous_secret"

// CodeConcurrentUpdate answers a change that lost, try after try, to
// changes that other requests made to the same object at the same moment
// (ErrConcurrentUpdate). Nothing was changed, and the request may be sent
// again as it was: it is a conflict of the moment, not an outage.
const CodeConcurrentUpdate Code = "concurrent_update"

// CodeUnknownEventType answers GET /v1/events with a type in types that is
// not one of EventTypes, so that a misspelled type is not taken for one
// with no events.
const CodeUnknownEventType Code = "unknown_event_type"

// FieldError names one invalid field of a request and says what is wrong.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// Error is the one application error type. Its Message is safe to show to a
// client; internal failures are wrapped with CodeInternal and a generic message.
type Error struct {
	Code    Code
	Message string
	// Fields lists field problems for CodeInvalidRequest.
	Fields []FieldError
	// Scope is the scope that was missing, for CodeInsufficientScope.
	Scope string
	// Usage is, for CodeRateLimited, the key's limits and when to retry.
	Usage *KeyUsage
	// Err is the underlying cause, for logs only. Never shown to a client.
	Err error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with the given code and a client-safe message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Internal wraps an unexpected failure. The cause is kept for logs; clients
// only ever see the generic message.
func Internal(err error) *Error {
	return &Error{Code: CodeInternal, Message: "an internal error occurred", Err: err}
}

// Unavailable wraps a failure of a dependency that is worth retrying
// (throttling, a 5xx of the database after the SDK's own retries).
func Unavailable(err error) *Error {
	return &Error{Code: CodeUnavailable, Message: "the service is temporarily unavailable, retry shortly", Err: err}
}

// ErrorCode returns the code of err: the code of the first *Error in its
// chain, CodeInternal for any other non-nil error, and "" for nil.
func ErrorCode(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}

// IsCode reports whether err carries the given code.
func IsCode(err error, code Code) bool { return ErrorCode(err) == code }

// The errors of the Store contract, one constructor each. Stores return
// these, and the service too where it answers without a store read (a
// malformed ID is not found), so that a client reads the same code and
// detail whichever store is behind the API; the contract suite checks
// both. Each call returns a new *Error.

// ErrUserNotFound is CodeNotFound for a user.
func ErrUserNotFound() *Error { return notFound("user") }

// ErrOrganizationNotFound is CodeNotFound for an organization.
func ErrOrganizationNotFound() *Error { return notFound("organization") }

// ErrMembershipNotFound is CodeNotFound for a membership.
func ErrMembershipNotFound() *Error { return notFound("membership") }

// ErrAPIKeyNotFound is CodeNotFound for an API key.
func ErrAPIKeyNotFound() *Error { return notFound("API key") }

// ErrPublicKeysNotFound is CodeNotFound for the published public signing
// keys (JWKS), before the first publication.
func ErrPublicKeysNotFound() *Error { return notFound("public signing keys") }

// ErrStatusListNotFound is the CodeNotFound of a status list.
func ErrStatusListNotFound() *Error { return notFound("status list") }

// ErrEmailTaken is CodeEmailTaken: another user has the e-mail.
func ErrEmailTaken() *Error {
	return Errorf(CodeEmailTaken, "another user has this e-mail address")
}

// ErrSlugTaken is CodeSlugTaken: another organization has the slug.
func ErrSlugTaken() *Error {
	return Errorf(CodeSlugTaken, "another organization has this slug")
}

// ErrUserExternalIDTaken is CodeExternalIDTaken: another user has the
// external id.
func ErrUserExternalIDTaken() *Error {
	return Errorf(CodeExternalIDTaken, "another user has this external_id")
}

// ErrOrganizationExternalIDTaken is CodeExternalIDTaken: another
// organization has the external id.
func ErrOrganizationExternalIDTaken() *Error {
	return Errorf(CodeExternalIDTaken, "another organization has this external_id")
}

// ErrLastOwner is CodeLastOwner: the change would leave an organization
// that has an owner without one.
func ErrLastOwner() *Error {
	return Errorf(CodeLastOwner, "this is the organization's last owner: make another member an owner first")
}

// ErrAlreadyMember is CodeAlreadyMember: the membership exists.
func ErrAlreadyMember() *Error {
	return Errorf(CodeAlreadyMember, "the user is a member of the organization already")
}

// ErrConcurrentUpdate is CodeConcurrentUpdate for what (e.g. "API key").
func ErrConcurrentUpdate(what string) *Error {
	return Errorf(CodeConcurrentUpdate, "the %s was changed by other requests at the same moment, and this change was not made; send the request again", what)
}

func notFound(what string) *Error { return Errorf(CodeNotFound, "%s not found", what) }

// invalid builds a CodeInvalidRequest error for one field.
func invalid(field, message string) *Error {
	return &Error{
		Code:    CodeInvalidRequest,
		Message: "the request is invalid",
		Fields:  []FieldError{{Field: field, Message: message}},
	}
}

// Problems collects field errors so that a client learns of all of them at once.
type Problems []FieldError

// Add records a problem with one field.
func (p *Problems) Add(field, message string) { *p = append(*p, FieldError{field, message}) }

// Err returns nil when there are no problems, and a CodeInvalidRequest error otherwise.
func (p Problems) Err() error {
	if len(p) == 0 {
		return nil
	}
	return &Error{Code: CodeInvalidRequest, Message: "the request is invalid", Fields: p}
}

// CodeTooManyBuckets answers a usage request whose range spans more than
// MaxUsageBuckets buckets of its interval.
const CodeTooManyBuckets Code = "too_many_buckets"

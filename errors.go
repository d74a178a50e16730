package switchboard

import (
	"context"
	"errors"
	"fmt"
)

// Code is a frozen error code. Codes are added, never renamed: clients and
// tests match on them.
type Code string

// The frozen error codes (see DESIGN.md).
const (
	CodeInvalidInput             Code = "INVALID_INPUT"
	CodeSchemaViolation          Code = "SCHEMA_VIOLATION"
	CodeNotFound                 Code = "NOT_FOUND"
	CodeToolNotFound             Code = "TOOL_NOT_FOUND"
	CodeToolUnavailable          Code = "TOOL_UNAVAILABLE"
	CodeExemptionViolation       Code = "EXEMPTION_VIOLATION"
	CodeUnauthorized             Code = "UNAUTHORIZED"
	CodeForbidden                Code = "FORBIDDEN"
	CodeOriginRejected           Code = "ORIGIN_REJECTED"
	CodeConflict                 Code = "CONFLICT"
	CodeIdempotencyConflict      Code = "IDEMPOTENCY_CONFLICT"
	CodeSessionGone              Code = "SESSION_GONE"
	CodeTimeout                  Code = "TIMEOUT"
	CodeCancelled                Code = "CANCELLED"
	CodeUserDenied               Code = "USER_DENIED"
	CodeFollowupUnsupported      Code = "FOLLOWUP_UNSUPPORTED"
	CodeFollowupSequenceConflict Code = "FOLLOWUP_SEQUENCE_CONFLICT"
	CodePayloadTooLarge          Code = "PAYLOAD_TOO_LARGE"
	CodeRateLimited              Code = "RATE_LIMITED"
	CodeUpstreamError            Code = "UPSTREAM_ERROR"
	CodeModelError               Code = "MODEL_ERROR"
	CodeInternal                 Code = "INTERNAL"
	CodeUnavailable              Code = "UNAVAILABLE"
	CodeSpecParse                Code = "SPEC_PARSE"
	CodeSpecUnknownType          Code = "SPEC_UNKNOWN_TYPE"
	CodeSpecProps                Code = "SPEC_PROPS"
	CodeSpecAction               Code = "SPEC_ACTION"
	CodeSpecBudget               Code = "SPEC_BUDGET"
	CodeSpecUnsafe               Code = "SPEC_UNSAFE"
	// CodeAgentNotFound: no agent session has that id.
	CodeAgentNotFound Code = "AGENT_NOT_FOUND"
	// CodeLeaseHeld: another agent holds the panel's lease; the error's
	// details name the holder and when the lease expires.
	CodeLeaseHeld Code = "LEASE_HELD"
	// CodeOutcomeUnknown: the call may have run but the daemon lost track
	// of its end. The daemon never re-runs it; the caller reconciles with
	// its idempotency key.
	CodeOutcomeUnknown Code = "OUTCOME_UNKNOWN"
	// CodeBudgetExceeded: a run reached its token or cost ceiling; it
	// ends before the next model call.
	CodeBudgetExceeded Code = "BUDGET_EXCEEDED"
	// CodeQuotaExceeded: an agent or the user it acts for used a daily
	// quota (calls, tokens or cost); it resets at 00:00 UTC, and the
	// error's details say which quota and when (retryAfterMs).
	CodeQuotaExceeded Code = "QUOTA_EXCEEDED"
)

// Codes lists every frozen code in a stable order.
var Codes = []Code{
	CodeInvalidInput, CodeSchemaViolation, CodeNotFound, CodeToolNotFound,
	CodeToolUnavailable, CodeExemptionViolation, CodeUnauthorized, CodeForbidden,
	CodeOriginRejected, CodeConflict, CodeIdempotencyConflict, CodeSessionGone,
	CodeTimeout, CodeCancelled, CodeUserDenied, CodeFollowupUnsupported,
	CodeFollowupSequenceConflict, CodePayloadTooLarge, CodeRateLimited,
	CodeUpstreamError, CodeModelError, CodeInternal, CodeUnavailable,
	CodeSpecParse, CodeSpecUnknownType, CodeSpecProps, CodeSpecAction,
	CodeSpecBudget, CodeSpecUnsafe, CodeAgentNotFound, CodeLeaseHeld,
	CodeOutcomeUnknown, CodeBudgetExceeded, CodeQuotaExceeded,
}

// Error is the error every layer returns when the cause has a frozen code.
// It is also the "error" member of the JSON error envelope.
type Error struct {
	Code    Code   `json:"code"`
	Message string `json:"message"`
	Details any    `json:"details,omitempty"`

	cause error
}

// Errorf returns an *Error with the given code and a formatted message. A
// %w verb in format is honoured: the wrapped error becomes the cause.
func Errorf(code Code, format string, args ...any) *Error {
	err := fmt.Errorf(format, args...)
	return &Error{Code: code, Message: err.Error(), cause: errors.Unwrap(err)}
}

// WithDetails returns a copy of e carrying details.
func (e *Error) WithDetails(details any) *Error {
	c := *e
	c.Details = details
	return &c
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// Unwrap returns the cause, if any.
func (e *Error) Unwrap() error { return e.cause }

// Is makes errors.Is(err, &Error{Code: X}) match on code alone, so the
// sentinels below work with wrapped errors.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Message == "" && t.Code == e.Code
}

// Sentinels for errors.Is; each matches any *Error with the same code.
var (
	ErrNotFound     = &Error{Code: CodeNotFound}
	ErrToolNotFound = &Error{Code: CodeToolNotFound}
	ErrConflict     = &Error{Code: CodeConflict}
)

// CodeOf reports the frozen code of err: the code of the first *Error in its
// chain, CANCELLED or TIMEOUT for context errors, INTERNAL otherwise.
func CodeOf(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	switch {
	case errors.Is(err, context.Canceled):
		return CodeCancelled
	case errors.Is(err, context.DeadlineExceeded):
		return CodeTimeout
	}
	return CodeInternal
}

// AsError converts any error into an *Error, keeping a coded error as it is
// and giving uncoded errors the code CodeOf assigns.
func AsError(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Code: CodeOf(err), Message: err.Error(), cause: err}
}

// ErrorEnvelope is the body of every error response of the HTTP API:
// {"error": {"code", "message", "details"}}.
type ErrorEnvelope struct {
	Error *Error `json:"error"`
}

package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/switchboardhq/switchboard"
)

// statusOf maps a frozen code to its HTTP status. This is the one place
// where domain errors become statuses.
func statusOf(code switchboard.Code) int {
	switch code {
	case switchboard.CodeInvalidInput:
		return http.StatusBadRequest
	case switchboard.CodeSchemaViolation, switchboard.CodeExemptionViolation, switchboard.CodeIdempotencyConflict,
		switchboard.CodeSpecParse, switchboard.CodeSpecUnknownType, switchboard.CodeSpecProps,
		switchboard.CodeSpecAction, switchboard.CodeSpecBudget, switchboard.CodeSpecUnsafe:
		return http.StatusUnprocessableEntity
	case switchboard.CodeNotFound, switchboard.CodeToolNotFound, switchboard.CodeAgentNotFound:
		return http.StatusNotFound
	case switchboard.CodeUnauthorized:
		return http.StatusUnauthorized
	case switchboard.CodeForbidden, switchboard.CodeOriginRejected, switchboard.CodeUserDenied:
		return http.StatusForbidden
	case switchboard.CodeConflict, switchboard.CodeToolUnavailable, switchboard.CodeCancelled,
		switchboard.CodeFollowupUnsupported, switchboard.CodeFollowupSequenceConflict, switchboard.CodeLeaseHeld:
		return http.StatusConflict
	case switchboard.CodeSessionGone:
		return http.StatusGone
	case switchboard.CodeTimeout:
		return http.StatusGatewayTimeout
	case switchboard.CodePayloadTooLarge:
		return http.StatusRequestEntityTooLarge
	case switchboard.CodeRateLimited, switchboard.CodeBudgetExceeded, switchboard.CodeQuotaExceeded:
		return http.StatusTooManyRequests
	case switchboard.CodeUpstreamError, switchboard.CodeModelError, switchboard.CodeOutcomeUnknown:
		return http.StatusBadGateway
	case switchboard.CodeUnavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// writeError renders err as the JSON error envelope. Internal errors are
// logged in full and shown to the client without their details.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	e := switchboard.AsError(err)
	if e.Code == switchboard.CodeInternal {
		s.log.ErrorContext(r.Context(), "internal error", "method", r.Method, "path", r.URL.Path, "err", err)
		if !errors.As(err, new(*switchboard.Error)) {
			e = &switchboard.Error{Code: switchboard.CodeInternal, Message: "internal error; see the daemon log"}
		}
	}
	setRetryAfter(w, e)
	writeJSON(w, statusOf(e.Code), switchboard.ErrorEnvelope{Error: e})
}

// setRetryAfter adds Retry-After (whole seconds, rounded up) to an answer
// whose error says how long to wait (details.retryAfterMs).
func setRetryAfter(w http.ResponseWriter, e *switchboard.Error) {
	if e == nil || (e.Code != switchboard.CodeRateLimited && e.Code != switchboard.CodeQuotaExceeded) {
		return
	}
	d, _ := e.Details.(map[string]any)
	var ms float64
	switch v := d["retryAfterMs"].(type) {
	case int64:
		ms = float64(v)
	case int:
		ms = float64(v)
	case float64:
		ms = v
	}
	if ms > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int((ms+999)/1000)))
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // the client has gone; nothing useful to do
}

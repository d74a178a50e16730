package model

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/switchboardhq/switchboard"
)

// maxErrorBody bounds how much of a provider's error body is quoted.
const maxErrorBody = 512

// apiFailure is what both SDKs' error types tell us.
type apiFailure struct {
	status  int
	message string
	resp    *http.Response
}

// modelError turns a provider failure into MODEL_ERROR with a message a
// person can act on. A context error stays CANCELLED or TIMEOUT: the run was
// stopped, the model did not fail.
func modelError(ctx context.Context, provider, model, baseURL, keyEnv string, af *apiFailure, err error) error {
	if ctx.Err() != nil {
		return switchboard.Errorf(switchboard.CodeOf(ctx.Err()), "%s model %s: %w", provider, model, context.Cause(ctx))
	}
	details := map[string]any{"provider": provider, "model": model}
	if af == nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return switchboard.Errorf(switchboard.CodeModelError, "%s model %s: the stream ended early: %v", provider, model, err).WithDetails(details)
		}
		return switchboard.Errorf(switchboard.CodeModelError, "%s model %s at %s failed: %v", provider, model, baseURL, err).WithDetails(details)
	}
	details["status"] = af.status
	msg := af.message
	if msg == "" {
		msg = bodySnippet(af.resp)
	}
	if msg != "" {
		msg = ": " + msg
	}
	var hint string
	switch {
	case af.status == http.StatusUnauthorized || af.status == http.StatusForbidden:
		if keyEnv != "" {
			hint = fmt.Sprintf("the provider refused the API key from $%s (HTTP %d)", keyEnv, af.status)
		} else {
			hint = fmt.Sprintf("the provider refused the request (HTTP %d); set apiKeyEnv for this model", af.status)
		}
	case af.status == http.StatusTooManyRequests:
		hint = "the provider is rate limiting or out of quota (HTTP 429); try again later"
	case af.status == http.StatusNotFound:
		hint = fmt.Sprintf("model %q or endpoint not found at %s (HTTP 404); check model and baseURL", model, baseURL)
	case af.status >= 500:
		hint = fmt.Sprintf("the provider failed (HTTP %d)", af.status)
	case af.status == 0:
		hint = "the provider reported an error while streaming"
	default:
		hint = fmt.Sprintf("the provider rejected the request (HTTP %d)", af.status)
	}
	return switchboard.Errorf(switchboard.CodeModelError, "%s model %s: %s%s", provider, model, hint, msg).WithDetails(details)
}

// bodySnippet quotes the start of an error response the SDK could not
// parse (a gateway's plain-text 502, say). Both SDKs leave the body
// readable on the error's Response.
func bodySnippet(resp *http.Response) string {
	if resp == nil || resp.Body == nil {
		return ""
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	return strings.TrimSpace(string(b))
}

// missingKey is the error of a configured apiKeyEnv whose variable is unset.
func missingKey(provider, model, env string) error {
	return switchboard.Errorf(switchboard.CodeModelError,
		"%s model %s: the API key variable $%s is not set in the daemon's environment; export it and restart `switchboard serve`", provider, model, env).
		WithDetails(map[string]any{"provider": provider, "model": model})
}

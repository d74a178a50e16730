package broker

import (
	"context"
	"encoding/json"
	"errors"
	"runtime/debug"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/httpbind"
)

// execute runs the binding in the caller's goroutine and gives the slot
// back when it returns. Running inline, as net/http and gRPC run handlers,
// avoids a cross-thread handoff that cost more than the broker's own work
// on a busy machine (see bench/README.md). The HTTP binding honours ctx, so
// its calls end at the deadline; a Go handler must honour ctx too — one that
// does not delays its caller past the deadline. A failure once ctx has ended
// is reported as what ended it (TIMEOUT or CANCELLED); a success is recorded
// as the success it was, since the tool did run.
func (b *Broker) execute(ctx context.Context, c *call, release func()) (result json.RawMessage, err error) {
	defer release()
	defer func() {
		if v := recover(); v != nil {
			b.log.ErrorContext(ctx, "tool binding panicked", "tool", c.tool.Name, "panic", v, "stack", string(debug.Stack()))
			result, err = nil, switchboard.Errorf(switchboard.CodeInternal, "the handler of %s panicked: %v", c.tool.Name, v)
		}
	}()
	result, err = b.run(ctx, c)
	if err != nil && ctx.Err() != nil {
		return nil, ctxError(ctx)
	}
	return result, err
}

// AssertedCall is what an HTTP-binding request's assertion is signed for
// (Options.Assert): the caller, the tool, the invocation and the audience.
type AssertedCall = httpbind.Call

// run dispatches to the tool's binding.
func (b *Broker) run(ctx context.Context, c *call) (json.RawMessage, error) {
	t := c.tool
	if t.Binding != nil && t.Binding.HTTP != nil {
		// The invocation id is the backend's Idempotency-Key: stable for
		// this call, distinct for every other.
		ctx = httpbind.WithCall(httpbind.WithIdempotencyKey(ctx, c.invocationID),
			httpbind.Call{Caller: c.caller, Tool: t.Name, Invocation: c.invocationID})
		return b.http.Call(ctx, t.Binding.HTTP, c.input)
	}
	b.mu.RLock()
	fn := b.funcs[t.Name]
	b.mu.RUnlock()
	if fn == nil {
		if t.Binding != nil && t.Binding.Go {
			return nil, switchboard.Errorf(switchboard.CodeToolUnavailable,
				"tool %s is served by a Go function that is not registered in this process; the app that embeds switchboard registers it at start", t.Name)
		}
		return nil, switchboard.Errorf(switchboard.CodeToolUnavailable,
			"tool %s has no binding, so nothing can execute it; register it again with an http binding or serve it with a Go function", t.Name)
	}
	v, err := fn(ctx, c.input)
	if err != nil {
		return nil, funcError(t.Name, err)
	}
	return marshalResult(t.Name, v)
}

// funcError keeps a coded error from a Go handler as it is (the app chose
// the code, e.g. NOT_FOUND) and reports an uncoded one as UPSTREAM_ERROR:
// the handler plays the part of the app's backend, and INTERNAL is kept
// for switchboard's own faults.
func funcError(tool string, err error) error {
	var e *switchboard.Error
	if errors.As(err, &e) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return switchboard.Errorf(switchboard.CodeUpstreamError, "the handler of %s failed: %w", tool, err)
}

func marshalResult(tool string, v any) (json.RawMessage, error) {
	switch r := v.(type) {
	case nil:
		return json.RawMessage("null"), nil
	case json.RawMessage:
		if !json.Valid(r) {
			return nil, switchboard.Errorf(switchboard.CodeUpstreamError, "the handler of %s returned json.RawMessage that is not valid JSON", tool)
		}
		return r, nil
	}
	out, err := json.Marshal(v)
	if err != nil {
		return nil, switchboard.Errorf(switchboard.CodeUpstreamError, "the result of %s's handler cannot be encoded as JSON: %v", tool, err)
	}
	return out, nil
}

// ctxError explains why ctx ended: the tool's timeout (its cause), the
// caller's own deadline, or the caller cancelling.
func ctxError(ctx context.Context) error {
	cause := context.Cause(ctx)
	var e *switchboard.Error
	switch {
	case errors.As(cause, &e):
		return e
	case errors.Is(cause, context.DeadlineExceeded):
		return switchboard.Errorf(switchboard.CodeTimeout, "the caller's deadline passed before the call finished")
	}
	return switchboard.Errorf(switchboard.CodeCancelled, "the caller cancelled the call")
}

func timeoutError(tool string, d time.Duration) error {
	return switchboard.Errorf(switchboard.CodeTimeout, "%s did not finish within %s (its timeout)", tool, d)
}

// queueError maps a failed acquire: a full queue or a deadline spent
// waiting is RATE_LIMITED (the tool never ran; back off and retry), the
// caller cancelling is CANCELLED.
func (b *Broker) queueError(ctx context.Context, tool string, err error) error {
	var full queueFull
	if errors.As(err, &full) {
		return switchboard.Errorf(switchboard.CodeRateLimited,
			"%s is at its concurrency limit (%d in flight) with %d calls already waiting; retry later", tool, full.limit, full.waiting).
			WithDetails(map[string]any{"limit": full.limit, "waiting": full.waiting})
	}
	cerr := ctxError(ctx)
	if switchboard.CodeOf(cerr) == switchboard.CodeTimeout {
		running, _ := b.limits.load(tool)
		return switchboard.Errorf(switchboard.CodeRateLimited,
			"%s stayed at its concurrency limit (%d in flight) for the whole timeout; the call did not run — retry later", tool, running).
			WithDetails(map[string]any{"running": running})
	}
	return cerr
}

// Load reports how many calls of tool run and wait now (for consoles and
// tests).
func (b *Broker) Load(tool string) (running, waiting int) { return b.limits.load(tool) }

package broker

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"reflect"
	"slices"
	"unicode/utf8"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/schema"
)

// How a tab's answer finishes a browser call. The tab POSTs its answer to
// any replica (the return path, internal/httpapi); that replica's broker
// checks it against the tool's outputSchema and ends the record with a
// compare-and-swap from dispatched, writing the call's ledger entry in the
// same transaction. Then it wakes whoever waits: the dispatching call in
// this process directly, Await's waiters here, and, over the bus, the
// call's owner and the replicas that asked it for the end (ends.go). An answer
// after the call ended (timeout, cancel, the tab gone) is refused with
// CONFLICT and the final state; the same answer again is accepted as it
// is, a different one is IDEMPOTENCY_CONFLICT. Nothing is written twice.

// maxBrowserMessage bounds the error message a tab may report.
const maxBrowserMessage = 2048

// sourceBrowser marks, in an error's details, an outcome the tab reported,
// so a later answer can be told apart: the same one again is idempotent, a
// different one is IDEMPOTENCY_CONFLICT, and one after the broker ended
// the call (timeout, cancel, gone) is CONFLICT with the final state.
const sourceBrowser = "browser"

// Answer is a tab's answer to a browser call, as its return path got it.
type Answer struct {
	// SessionID is the session the tab authenticated as: only the session
	// the call was dispatched to may answer it.
	SessionID string
	// RunID and InvocationID name the call as the request named them
	// (RunID "-" for a call without a run).
	RunID        string
	InvocationID string
	// Result is the tab's BrowserActionResult.
	Result switchboard.BrowserActionResult
	// TooLarge, when positive, says the answer's body was larger than
	// this many bytes and was not read: the call fails PAYLOAD_TOO_LARGE
	// at once, instead of at its timeout.
	TooLarge int64
}

// Complete ends the browser call a tab answered and returns its record as
// stored. Anything the tab may not answer (an unknown id, the wrong run,
// another tab's call) is NOT_FOUND. An answer that breaks the tool's
// outputSchema fails the call with SCHEMA_VIOLATION and returns that error
// too, as does one too large (PAYLOAD_TOO_LARGE); the record is returned
// whenever it holds this answer, which is when the tab's request may
// leave its log.
func (b *Broker) Complete(ctx context.Context, a Answer) (switchboard.Invocation, error) {
	// Who may answer first: a guessed or misdirected answer learns
	// nothing else.
	inv, out, tc, err := b.answered(ctx, a)
	if err != nil {
		return switchboard.Invocation{}, err
	}
	res := a.Result
	if a.TooLarge <= 0 {
		if err := checkAnswer(a.InvocationID, &res); err != nil {
			return switchboard.Invocation{}, err
		}
	}
	var (
		digest string
		e      *switchboard.Error
	)
	if a.TooLarge > 0 {
		digest = "too-large"
		e = switchboard.Errorf(switchboard.CodePayloadTooLarge, "the tab's result for %s is larger than %d bytes", inv.Tool, a.TooLarge).
			WithDetails(map[string]any{"source": sourceBrowser, "digest": digest, "limit": a.TooLarge})
		if inv.Status.Terminal() && inv.Error != nil && inv.Error.Code == switchboard.CodePayloadTooLarge && tabAnswered(inv) {
			return inv, e
		}
	} else {
		digest = digestOf(res)
	}
	if inv.Status.Terminal() {
		return compare(inv, res, digest)
	}
	var result json.RawMessage
	switch {
	case e != nil:
	case !res.OK:
		e = browserError(res.Error, digest)
	case out != nil:
		if err := out.Validate(res.Result); err != nil {
			ve := switchboard.AsError(err)
			details := map[string]any{"source": sourceBrowser, "digest": digest}
			if d, ok := ve.Details.(map[string]any); ok {
				for k, v := range d {
					details[k] = v
				}
			}
			e = switchboard.Errorf(switchboard.CodeSchemaViolation,
				"the tab's result for %s does not match the tool's outputSchema: %s", inv.Tool, ve.Message).WithDetails(details)
			break
		}
		fallthrough
	default:
		result = res.Result
	}
	var rerr error
	if e != nil {
		rerr = e
	}
	rec := b.terminal(inv, result, rerr)
	c := tc.call(inv)
	entry := b.entry(c, rec)
	stored, err := b.store.InvocationFinish(ctx, rec, entry, switchboard.StatusDispatched)
	if err != nil {
		if switchboard.CodeOf(err) == switchboard.CodeConflict && stored.Status.Terminal() {
			return compare(stored, res, digest) // the broker ended it first
		}
		return switchboard.Invocation{}, err
	}
	b.observe(entry)
	if tc != nil {
		tc.done <- stored // buffered: the call's one outcome
	}
	// The call waits here (tc), or on the replica that dispatched it (its
	// owner), which passes the end on to the replicas that asked.
	b.ended(ctx, stored, tc == nil || c.announce)
	return stored, rejection(stored)
}

// checkAnswer checks the shape of a tab's answer: one of a result or an
// error, for this invocation, in this protocol.
func checkAnswer(invID string, res *switchboard.BrowserActionResult) error {
	if res.InvocationID != "" && res.InvocationID != invID {
		return switchboard.Errorf(switchboard.CodeInvalidInput,
			"the body names invocation %q but the URL names %q", res.InvocationID, invID)
	}
	if res.ProtocolVersion != "" && res.ProtocolVersion != switchboard.ProtocolVersion {
		return switchboard.Errorf(switchboard.CodeInvalidInput,
			"protocolVersion %q is not %q; update the browser SDK", res.ProtocolVersion, switchboard.ProtocolVersion)
	}
	if res.OK == (res.Error != nil) {
		return switchboard.Errorf(switchboard.CodeInvalidInput,
			`send {"ok": true, "result": ...} or {"ok": false, "error": {"code", "message"}}`)
	}
	if res.OK && len(bytes.TrimSpace(res.Result)) == 0 {
		res.Result = json.RawMessage("null")
	}
	return nil
}

// answered returns the record a's tab may answer, with the output schema
// to enforce and the waiting call when it waits in this process.
func (b *Broker) answered(ctx context.Context, a Answer) (switchboard.Invocation, *schema.Schema, *tabCall, error) {
	notFound := switchboard.Errorf(switchboard.CodeNotFound,
		"no invocation %q was dispatched to this session in run %q", a.InvocationID, a.RunID)
	var (
		inv switchboard.Invocation
		out *schema.Schema
	)
	tc := b.tabs.get(a.InvocationID)
	if tc != nil {
		inv, out = tc.inv, tc.c.out
	} else {
		var err error
		if inv, err = b.store.InvocationGet(ctx, a.InvocationID); err != nil {
			if switchboard.CodeOf(err) == switchboard.CodeNotFound {
				return inv, nil, nil, notFound
			}
			return inv, nil, nil, err
		}
		// Dispatched by another replica (or already ended here): the
		// schema of the tool as this tab advertised it.
		if inv.SessionID == a.SessionID && !inv.Status.Terminal() && b.browser != nil {
			out = b.browser.Output(ctx, a.SessionID, inv.Tool)
		}
	}
	run := inv.RunID
	if run == "" {
		run = "-"
	}
	if inv.SessionID != a.SessionID || run != a.RunID || inv.Surface == switchboard.SurfaceAPI {
		return switchboard.Invocation{}, nil, nil, notFound
	}
	if !inv.Status.Terminal() && inv.Status != switchboard.StatusDispatched {
		return switchboard.Invocation{}, nil, nil, switchboard.Errorf(switchboard.CodeConflict,
			"invocation %s is %s, not dispatched", inv.ID, inv.Status).WithDetails(finalState(inv))
	}
	return inv, out, tc, nil
}

// call is the call whose ledger entry the answer writes: the waiting one,
// else the one inv records (its caller), as the start-up sweep does.
func (tc *tabCall) call(inv switchboard.Invocation) *call {
	if tc != nil {
		return tc.c
	}
	return recordCall(inv)
}

// compare answers an answer for a call that has already ended.
func compare(stored switchboard.Invocation, res switchboard.BrowserActionResult, digest string) (switchboard.Invocation, error) {
	if !tabAnswered(stored) {
		return switchboard.Invocation{}, switchboard.Errorf(switchboard.CodeConflict,
			"invocation %s already ended as %s; this result was not recorded", stored.ID, stored.Status).WithDetails(finalState(stored))
	}
	same := false
	if stored.Status == switchboard.StatusSucceeded {
		same = res.OK && jsonEqual(stored.Result, res.Result)
	} else if d, ok := stored.Error.Details.(map[string]any); ok {
		same = d["digest"] == digest
	}
	if !same {
		return switchboard.Invocation{}, switchboard.Errorf(switchboard.CodeIdempotencyConflict,
			"a different result was already recorded for invocation %s", stored.ID).WithDetails(finalState(stored))
	}
	return stored, rejection(stored)
}

// rejection is the error to answer the tab with when its own result was
// recorded as a failure of the result itself (schema, size).
func rejection(inv switchboard.Invocation) error {
	if inv.Error != nil && tabAnswered(inv) {
		switch inv.Error.Code {
		case switchboard.CodeSchemaViolation, switchboard.CodePayloadTooLarge:
			return inv.Error
		}
	}
	return nil
}

// tabAnswered says whether a browser call's record holds its tab's answer
// rather than an end the broker (or a sweep) gave it.
func tabAnswered(inv switchboard.Invocation) bool {
	if inv.Status == switchboard.StatusSucceeded {
		return true
	}
	if inv.Error == nil {
		return false
	}
	d, ok := inv.Error.Details.(map[string]any)
	return ok && d["source"] == sourceBrowser
}

// finalState is what a late or conflicting answer is told.
func finalState(inv switchboard.Invocation) map[string]any {
	d := map[string]any{"invocationId": inv.ID, "status": inv.Status}
	if inv.Error != nil {
		d["error"] = map[string]any{"code": inv.Error.Code, "message": inv.Error.Message}
	}
	if !inv.FinishedAt.IsZero() {
		d["finishedAt"] = inv.FinishedAt
	}
	return d
}

// browserError turns the tab's error into a recorded one. Codes outside the
// frozen list become UPSTREAM_ERROR, keeping the tab's code in details.
func browserError(e *switchboard.Error, digest string) *switchboard.Error {
	details := map[string]any{"source": sourceBrowser, "digest": digest}
	code := e.Code
	if !slices.Contains(switchboard.Codes, code) {
		details["browserCode"] = string(code)
		code = switchboard.CodeUpstreamError
	}
	msg := e.Message
	if len(msg) > maxBrowserMessage {
		msg = msg[:maxBrowserMessage]
		for !utf8.ValidString(msg) {
			msg = msg[:len(msg)-1]
		}
	}
	if msg == "" {
		msg = "the tab's handler failed"
	}
	if e.Details != nil {
		details["browserDetails"] = e.Details
	}
	return &switchboard.Error{Code: code, Message: msg, Details: details}
}

// digestOf fingerprints an answer so a retry can be recognized.
func digestOf(res switchboard.BrowserActionResult) string {
	h := sha256.New()
	if res.OK {
		h.Write([]byte("ok\x00"))
		h.Write(compact(res.Result))
	} else if res.Error != nil {
		h.Write([]byte("err\x00" + string(res.Error.Code) + "\x00" + res.Error.Message))
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

func compact(b []byte) []byte {
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return b
	}
	return buf.Bytes()
}

func jsonEqual(a, b []byte) bool {
	if bytes.Equal(compact(a), compact(b)) {
		return true
	}
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

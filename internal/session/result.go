package session

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
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/bus"
	"github.com/switchboardhq/switchboard/internal/schema"
)

// maxBrowserMessage bounds the error message a tab may report.
const maxBrowserMessage = 2048

// sourceBrowser marks, in an error's details, an outcome the tab reported,
// so a later POST can be told apart: the same one again is idempotent, a
// different one is IDEMPOTENCY_CONFLICT, and one after the daemon ended the
// call (timeout, cancel, gone) is CONFLICT with the final state.
const sourceBrowser = "browser"

// Result records the tab's answer to invocation invID of run runID.
// sessionID is the session the caller authenticated as: only the session the
// request was dispatched to may answer, and anything else (unknown ids, the
// wrong run, another tab) is NOT_FOUND. It returns the stored record. A
// result that breaks the tool's outputSchema fails the invocation with
// SCHEMA_VIOLATION and returns that error as well.
func (m *Manager) Result(ctx context.Context, sessionID, runID, invID string, res switchboard.BrowserActionResult) (switchboard.Invocation, error) {
	inv, outp, err := m.owned(ctx, sessionID, runID, invID)
	if err != nil {
		return switchboard.Invocation{}, err
	}
	if res.InvocationID != "" && res.InvocationID != invID {
		return switchboard.Invocation{}, switchboard.Errorf(switchboard.CodeInvalidInput,
			"the body names invocation %q but the URL names %q", res.InvocationID, invID)
	}
	if res.ProtocolVersion != "" && res.ProtocolVersion != switchboard.ProtocolVersion {
		return switchboard.Invocation{}, switchboard.Errorf(switchboard.CodeInvalidInput,
			"protocolVersion %q is not %q; update the browser SDK", res.ProtocolVersion, switchboard.ProtocolVersion)
	}
	if res.OK == (res.Error != nil) {
		return switchboard.Invocation{}, switchboard.Errorf(switchboard.CodeInvalidInput,
			`send {"ok": true, "result": ...} or {"ok": false, "error": {"code", "message"}}`)
	}
	if res.OK && len(bytes.TrimSpace(res.Result)) == 0 {
		res.Result = json.RawMessage("null")
	}
	digest := digestOf(res)
	if inv.Status.Terminal() {
		return m.compare(inv, res, digest)
	}
	rec := terminalRecord(inv, m.opts.Now())
	switch {
	case !res.OK:
		rec.Error = browserError(res.Error, digest)
		rec.Status = switchboard.StatusFor(rec.Error.Code)
	case outp != nil:
		if err := outp.Validate(res.Result); err != nil {
			e := switchboard.AsError(err)
			details := map[string]any{"source": sourceBrowser, "digest": digest}
			if d, ok := e.Details.(map[string]any); ok {
				for k, v := range d {
					details[k] = v
				}
			}
			rec.Status = switchboard.StatusFailed
			rec.Error = switchboard.Errorf(switchboard.CodeSchemaViolation,
				"the tab's result for %s does not match the tool's outputSchema: %s", inv.Tool, e.Message).WithDetails(details)
			break
		}
		fallthrough
	default:
		rec.Status, rec.Result, rec.ResultBytes = switchboard.StatusSucceeded, res.Result, len(res.Result)
	}
	return m.record(ctx, rec, res, digest)
}

// ResultTooLarge fails invocation invID because the tab's result exceeded
// MaxResultBytes, so the caller learns at once instead of at its timeout.
// It returns the PAYLOAD_TOO_LARGE error to answer the tab with.
func (m *Manager) ResultTooLarge(ctx context.Context, sessionID, runID, invID string) error {
	inv, _, err := m.owned(ctx, sessionID, runID, invID)
	if err != nil {
		return err
	}
	e := switchboard.Errorf(switchboard.CodePayloadTooLarge, "the tab's result for %s is larger than %d bytes", inv.Tool, m.opts.MaxResultBytes).
		WithDetails(map[string]any{"source": sourceBrowser, "digest": "too-large", "limit": m.opts.MaxResultBytes})
	if inv.Status.Terminal() {
		if inv.Error != nil && inv.Error.Code == switchboard.CodePayloadTooLarge && fromBrowser(inv) {
			return e
		}
		_, err := m.compare(inv, switchboard.BrowserActionResult{}, "too-large")
		return err
	}
	rec := terminalRecord(inv, m.opts.Now())
	rec.Status, rec.Error = switchboard.StatusFailed, e
	if _, err := m.record(ctx, rec, switchboard.BrowserActionResult{}, "too-large"); err != nil {
		return err
	}
	return e
}

// owned returns the record of invID if sessionID may answer it, with the
// output schema to enforce.
func (m *Manager) owned(ctx context.Context, sessionID, runID, invID string) (switchboard.Invocation, *schema.Schema, error) {
	notFound := switchboard.Errorf(switchboard.CodeNotFound,
		"no invocation %q was dispatched to this session in run %q", invID, runID)
	m.mu.Lock()
	w := m.waiters[invID]
	m.mu.Unlock()
	var (
		inv  switchboard.Invocation
		outp *schema.Schema
	)
	if w != nil {
		inv, outp = w.inv, w.outp
	} else {
		var err error
		if inv, err = m.store.InvocationGet(ctx, invID); err != nil {
			if switchboard.CodeOf(err) == switchboard.CodeNotFound {
				return inv, nil, notFound
			}
			return inv, nil, err
		}
		// No local waiter (it finished, or waits on another replica): take
		// the schema from the tool as this tab advertised it.
		var lt *liveTool
		m.mu.Lock()
		if st := m.sessions[sessionID]; st != nil {
			lt = st.tools[inv.Tool]
		}
		if rt := m.remote[sessionID]; lt == nil && rt != nil {
			lt = rt.tools[inv.Tool]
		}
		m.mu.Unlock()
		if lt == nil && inv.SessionID == sessionID && !inv.Status.Terminal() {
			lt = m.storedTool(ctx, sessionID, inv.Tool) // the tab is held by a replica not heard from
		}
		if lt != nil {
			outp = lt.outp
		}
	}
	if inv.SessionID != sessionID || runPath(inv.RunID) != runID || inv.Surface == switchboard.SurfaceAPI {
		return switchboard.Invocation{}, nil, notFound
	}
	if !inv.Status.Terminal() && inv.Status != switchboard.StatusDispatched {
		return switchboard.Invocation{}, nil, switchboard.Errorf(switchboard.CodeConflict,
			"invocation %s is %s, not dispatched", invID, inv.Status).WithDetails(finalState(inv))
	}
	return inv, outp, nil
}

// storedTool is tool as session id's stored advertisement declares it, or
// nil.
func (m *Manager) storedTool(ctx context.Context, id, tool string) *liveTool {
	s, err := m.store.SessionGet(ctx, id)
	if err != nil {
		return nil
	}
	for _, t := range s.Tools {
		if t.Name == tool {
			if lt, err := m.compile(t); err == nil {
				return lt
			}
		}
	}
	return nil
}

// record writes rec if the invocation is still dispatched — with the
// call's ledger entry, in one transaction — then wakes the waiter and
// drops the request from the tab's log.
func (m *Manager) record(ctx context.Context, rec switchboard.Invocation, res switchboard.BrowserActionResult, digest string) (switchboard.Invocation, error) {
	var t broker.Target
	m.mu.Lock()
	if w := m.waiters[rec.ID]; w != nil {
		t = w.t
	}
	m.mu.Unlock()
	// The outcome and its ledger entry, in one transaction.
	stored, err := m.endCall(ctx, t, rec)
	if err != nil {
		if switchboard.CodeOf(err) == switchboard.CodeConflict && stored.Status.Terminal() {
			return m.compare(stored, res, digest)
		}
		return switchboard.Invocation{}, err
	}
	var payload []byte
	if b, err := json.Marshal(stored); err == nil && len(b) <= bus.MaxPayload {
		payload = b
	}
	// The waiter re-reads the store when the message is lost or empty.
	if err := m.bus.Publish(context.WithoutCancel(ctx), topicDone(stored.ID), payload); err != nil {
		m.log.Warn("publish done", "invocation", stored.ID, "err", err)
	}
	if err := m.bus.Publish(context.WithoutCancel(ctx), topicDispatch(stored.SessionID), encodeDispatch(msgAck, stored.ID, nil)); err != nil {
		m.log.Warn("publish ack", "invocation", stored.ID, "err", err)
	}
	return stored, rejection(stored)
}

// compare answers a POST for an invocation that has already ended.
func (m *Manager) compare(stored switchboard.Invocation, res switchboard.BrowserActionResult, digest string) (switchboard.Invocation, error) {
	if !fromBrowser(stored) {
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
	if inv.Error != nil && fromBrowser(inv) {
		switch inv.Error.Code {
		case switchboard.CodeSchemaViolation, switchboard.CodePayloadTooLarge:
			return inv.Error
		}
	}
	return nil
}

func fromBrowser(inv switchboard.Invocation) bool {
	if inv.Status == switchboard.StatusSucceeded {
		return true
	}
	if inv.Error == nil {
		return false
	}
	d, ok := inv.Error.Details.(map[string]any)
	return ok && d["source"] == sourceBrowser
}

// finalState is what a late or conflicting POST is told.
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

// digestOf fingerprints a posted result so a retry can be recognized.
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

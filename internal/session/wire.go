package session

import (
	"bytes"
	"encoding/json"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/bus"
)

// Bus topics. Dispatch messages go to whoever keeps a state of the
// session (per-call ones to the replica holding its stream when it is
// known, route.go); state messages to the calls delivered to the session (Deliver) and to
// WatchGone. The end of a call travels on the broker's own topics.
func topicDispatch(session string) string { return "session.dispatch." + session }
func topicState(session string) string    { return "session.state." + session }

// Dispatch message kinds: one byte, the invocation id, a newline, then the
// event's JSON (empty for a request sent by reference). The session's own
// messages carry a replica id in place of the invocation id: tools (the
// advertisement stored by that replica changed: reload it), moved (the
// tab's stream attached to that replica: others drop their state of it
// quietly) and end (the session was closed: its stream ends wherever it
// is). An event carries the event's kind in place of the invocation id
// and its JSON as the data: an application event (Send) for the tab,
// queued by the replica that keeps it.
const (
	msgRequest = 'r'
	msgCancel  = 'c'
	msgAck     = 'a'
	msgTools   = 't'
	msgMoved   = 'm'
	msgEnd     = 'x'
	msgEvent   = 'e'
)

func encodeDispatch(kind byte, inv string, data []byte) []byte {
	b := make([]byte, 0, 2+len(inv)+len(data))
	b = append(b, kind)
	b = append(b, inv...)
	b = append(b, '\n')
	return append(b, data...)
}

func decodeDispatch(p []byte) (kind byte, inv string, data []byte, ok bool) {
	if len(p) < 2 {
		return 0, "", nil, false
	}
	i := bytes.IndexByte(p, '\n')
	if i < 1 {
		return 0, "", nil, false
	}
	return p[0], string(p[1:i]), p[i+1:], true
}

// runPath is how a run id appears in the return path's URL; an invocation
// with no run uses "-" so the URL stays well-formed.
func runPath(run string) string {
	if run == "" {
		return "-"
	}
	return run
}

// requestJSON renders the BrowserActionRequest for a dispatched record.
func requestJSON(inv switchboard.Invocation, timeoutMs int) ([]byte, error) {
	input := inv.Input
	if len(input) == 0 {
		input = json.RawMessage(`{}`)
	}
	return json.Marshal(switchboard.BrowserActionRequest{
		ProtocolVersion: switchboard.ProtocolVersion,
		InvocationID:    inv.ID,
		RunID:           runPath(inv.RunID),
		Tool:            inv.Tool,
		Input:           input,
		TimeoutMs:       timeoutMs,
	})
}

// cancelJSON is the data of a browser.action.cancel event.
func cancelJSON(inv string, why *switchboard.Error) []byte {
	b, _ := json.Marshal(struct {
		ProtocolVersion string             `json:"protocolVersion"`
		InvocationID    string             `json:"invocationId"`
		Reason          *switchboard.Error `json:"reason"`
	}{switchboard.ProtocolVersion, inv, why})
	return b
}

// fitsBus reports whether a dispatch message with data can travel by value.
func fitsBus(inv string, data []byte) bool { return 2+len(inv)+len(data) <= bus.MaxPayload }

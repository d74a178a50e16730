package agent

import (
	"sync"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/agui"
)

// emitter writes a run's AG-UI events and remembers what is open, so that
// however the run ends (answer, error, cancel) every message, tool call and
// step is closed before the terminal event: the lifecycle rules hold by
// construction. Tool results arrive from parallel calls, hence the lock.
type emitter struct {
	run *Run
	now func() time.Time

	mu    sync.Mutex
	text  string          // id of the open text message
	tools map[string]bool // open tool calls
	step  string          // open step
}

func newEmitter(r *Run, now func() time.Time) *emitter {
	return &emitter{run: r, now: now, tools: map[string]bool{}}
}

func (e *emitter) emitLocked(ev agui.Event) {
	if b, ok := ev.(interface{ SetTimestamp(time.Time) }); ok {
		b.SetTimestamp(e.now())
	}
	e.run.append(ev)
}

func (e *emitter) emit(ev agui.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.emitLocked(ev)
}

func (e *emitter) startStep(name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.step = name
	e.emitLocked(&agui.StepStarted{StepName: name})
}

func (e *emitter) endStep() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.endStepLocked()
}

func (e *emitter) endStepLocked() {
	if e.step != "" {
		e.emitLocked(&agui.StepFinished{StepName: e.step})
		e.step = ""
	}
}

// textDelta appends to the text message id, opening it first if needed.
func (e *emitter) textDelta(id, delta string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.text != id {
		e.endTextLocked()
		e.text = id
		e.emitLocked(&agui.TextMessageStart{MessageID: id, Role: agui.RoleAssistant})
	}
	e.emitLocked(&agui.TextMessageContent{MessageID: id, Delta: delta})
}

func (e *emitter) endText() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.endTextLocked()
}

func (e *emitter) endTextLocked() {
	if e.text != "" {
		e.emitLocked(&agui.TextMessageEnd{MessageID: e.text})
		e.text = ""
	}
}

// toolStart opens a tool call; the tool's UI hints (renderer, group,
// icon) ride in its metadata so a client can pick how to show the call.
func (e *emitter) toolStart(id, name, parent string, ui *switchboard.UIMeta) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.tools[id] = true
	ev := &agui.ToolCallStart{ToolCallID: id, ToolCallName: name, ParentMessageID: parent}
	if ui != nil {
		ev.Metadata = map[string]any{"switchboard": map[string]any{"ui": ui}}
	}
	e.emitLocked(ev)
}

func (e *emitter) toolArgs(id, delta string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.tools[id] {
		e.emitLocked(&agui.ToolCallArgs{ToolCallID: id, Delta: delta})
	}
}

func (e *emitter) toolEnd(id string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.tools[id] {
		delete(e.tools, id)
		e.emitLocked(&agui.ToolCallEnd{ToolCallID: id})
	}
}

// closeAll ends whatever is open, innermost first.
func (e *emitter) closeAll() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.endTextLocked()
	for id := range e.tools {
		e.emitLocked(&agui.ToolCallEnd{ToolCallID: id})
	}
	clear(e.tools)
	e.endStepLocked()
}

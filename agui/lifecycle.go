package agui

import (
	"fmt"
	"slices"
	"strings"
)

// Checker enforces the AG-UI lifecycle rules of the reference client
// (@ag-ui/client's verifyEvents) on a stream of events:
//
//   - the first event is RUN_STARTED (or RUN_ERROR);
//   - nothing follows RUN_ERROR; only a new RUN_STARTED follows RUN_FINISHED;
//   - RUN_STARTED is refused while a run is active;
//   - TEXT_MESSAGE_CONTENT/END need an open TEXT_MESSAGE_START with the same
//     id, TOOL_CALL_ARGS/END an open TOOL_CALL_START, STEP_FINISHED an open
//     STEP_STARTED; a start whose id is already open is refused;
//   - RUN_FINISHED is refused while a message, tool call or step is open.
//
// The zero value is ready. Tests run every stream switchboard produces
// through it.
type Checker struct {
	seen     int
	active   bool
	finished bool
	errored  bool
	messages map[string]bool
	tools    map[string]bool
	steps    map[string]bool
}

// Check applies ev to the lifecycle and reports the first rule it breaks.
func (c *Checker) Check(ev Event) error {
	t := ev.EventType()
	c.seen++
	if c.messages == nil {
		c.messages, c.tools, c.steps = map[string]bool{}, map[string]bool{}, map[string]bool{}
	}
	if c.errored {
		return fmt.Errorf("cannot send %s: the run has already errored with RUN_ERROR", t)
	}
	if c.seen == 1 && t != TypeRunStarted && t != TypeRunError {
		return fmt.Errorf("first event must be RUN_STARTED, not %s", t)
	}
	if c.finished && t != TypeRunStarted && t != TypeRunError {
		return fmt.Errorf("cannot send %s: the run has already finished with RUN_FINISHED", t)
	}
	switch e := ev.(type) {
	case *RunStarted:
		if c.active {
			return fmt.Errorf("cannot send RUN_STARTED while a run is still active")
		}
		c.active, c.finished = true, false
		clear(c.messages)
		clear(c.tools)
		clear(c.steps)
	case *RunFinished:
		if open := c.open(); open != "" {
			return fmt.Errorf("cannot send RUN_FINISHED while %s", open)
		}
		c.active, c.finished = false, true
	case *RunError:
		c.active, c.errored = false, true
	case *TextMessageStart:
		if c.messages[e.MessageID] {
			return fmt.Errorf("TEXT_MESSAGE_START: a text message with id %q is already in progress", e.MessageID)
		}
		c.messages[e.MessageID] = true
	case *TextMessageContent:
		if !c.messages[e.MessageID] {
			return fmt.Errorf("TEXT_MESSAGE_CONTENT: no active text message with id %q", e.MessageID)
		}
	case *TextMessageEnd:
		if !c.messages[e.MessageID] {
			return fmt.Errorf("TEXT_MESSAGE_END: no active text message with id %q", e.MessageID)
		}
		delete(c.messages, e.MessageID)
	case *ToolCallStart:
		if c.tools[e.ToolCallID] {
			return fmt.Errorf("TOOL_CALL_START: a tool call with id %q is already in progress", e.ToolCallID)
		}
		c.tools[e.ToolCallID] = true
	case *ToolCallArgs:
		if !c.tools[e.ToolCallID] {
			return fmt.Errorf("TOOL_CALL_ARGS: no active tool call with id %q", e.ToolCallID)
		}
	case *ToolCallEnd:
		if !c.tools[e.ToolCallID] {
			return fmt.Errorf("TOOL_CALL_END: no active tool call with id %q", e.ToolCallID)
		}
		delete(c.tools, e.ToolCallID)
	case *StepStarted:
		if c.steps[e.StepName] {
			return fmt.Errorf("STEP_STARTED: step %q is already active", e.StepName)
		}
		c.steps[e.StepName] = true
	case *StepFinished:
		if !c.steps[e.StepName] {
			return fmt.Errorf("STEP_FINISHED: step %q was not started", e.StepName)
		}
		delete(c.steps, e.StepName)
	}
	return nil
}

// open describes what is still open, or "" when nothing is.
func (c *Checker) open() string {
	var parts []string
	for _, x := range []struct {
		what string
		m    map[string]bool
	}{{"text messages are still active", c.messages}, {"tool calls are still active", c.tools}, {"steps are still active", c.steps}} {
		if len(x.m) > 0 {
			ids := make([]string, 0, len(x.m))
			for id := range x.m {
				ids = append(ids, id)
			}
			slices.Sort(ids)
			parts = append(parts, x.what+": "+strings.Join(ids, ", "))
		}
	}
	return strings.Join(parts, "; ")
}

// Done reports whether the stream ended properly: with RUN_FINISHED or
// RUN_ERROR, and nothing open.
func (c *Checker) Done() error {
	switch {
	case c.seen == 0:
		return fmt.Errorf("the stream carried no events")
	case c.active:
		return fmt.Errorf("the stream ended without RUN_FINISHED or RUN_ERROR")
	}
	return nil
}

// CheckAll runs a whole stream through a new Checker.
func CheckAll(evs []Event) error {
	var c Checker
	for i, ev := range evs {
		if err := c.Check(ev); err != nil {
			return fmt.Errorf("event %d: %w", i, err)
		}
	}
	return c.Done()
}

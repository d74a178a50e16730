package agui_test

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard/agui"
	"github.com/switchboardhq/switchboard/internal/aguitest"
)

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

func TestCheckerAcceptsValidStreams(t *testing.T) {
	if err := agui.CheckAll(aguitest.SampleRun()); err != nil {
		t.Fatal(err)
	}
	// A second run may follow a finished one in the same stream.
	two := append(aguitest.SampleRun(), &agui.RunStarted{ThreadID: "chat-1", RunID: "run-2"}, &agui.RunFinished{ThreadID: "chat-1", RunID: "run-2"})
	if err := agui.CheckAll(two); err != nil {
		t.Fatal(err)
	}
	// A run may fail before it starts.
	if err := agui.CheckAll([]agui.Event{&agui.RunError{Message: "no model"}}); err != nil {
		t.Fatal(err)
	}
}

func TestCheckerRejects(t *testing.T) {
	start := &agui.RunStarted{ThreadID: "t", RunID: "r"}
	fin := &agui.RunFinished{ThreadID: "t", RunID: "r"}
	cases := []struct {
		name string
		evs  []agui.Event
		want string
	}{
		{"first not RUN_STARTED", []agui.Event{&agui.TextMessageStart{MessageID: "m"}}, "first event must be RUN_STARTED"},
		{"event after RUN_FINISHED", []agui.Event{start, fin, &agui.Custom{Name: "x"}}, "already finished"},
		{"event after RUN_ERROR", []agui.Event{start, &agui.RunError{Message: "x"}, &agui.RunStarted{ThreadID: "t", RunID: "r2"}}, "already errored"},
		{"RUN_STARTED twice", []agui.Event{start, &agui.RunStarted{ThreadID: "t", RunID: "r2"}}, "still active"},
		{"content without start", []agui.Event{start, &agui.TextMessageContent{MessageID: "m", Delta: "x"}}, "no active text message"},
		{"end without start", []agui.Event{start, &agui.TextMessageEnd{MessageID: "m"}}, "no active text message"},
		{"duplicate message start", []agui.Event{start, &agui.TextMessageStart{MessageID: "m"}, &agui.TextMessageStart{MessageID: "m"}}, "already in progress"},
		{"args without start", []agui.Event{start, &agui.ToolCallArgs{ToolCallID: "c", Delta: "{}"}}, "no active tool call"},
		{"args after end", []agui.Event{start, &agui.ToolCallStart{ToolCallID: "c", ToolCallName: "n"}, &agui.ToolCallEnd{ToolCallID: "c"}, &agui.ToolCallArgs{ToolCallID: "c", Delta: "{}"}}, "no active tool call"},
		{"finish with open message", []agui.Event{start, &agui.TextMessageStart{MessageID: "m"}, fin}, "text messages are still active: m"},
		{"finish with open tool call", []agui.Event{start, &agui.ToolCallStart{ToolCallID: "c", ToolCallName: "n"}, fin}, "tool calls are still active: c"},
		{"finish with open step", []agui.Event{start, &agui.StepStarted{StepName: "s"}, fin}, "steps are still active: s"},
		{"step finished unstarted", []agui.Event{start, &agui.StepFinished{StepName: "s"}}, "was not started"},
		{"stream ends mid-run", []agui.Event{start}, "ended without RUN_FINISHED"},
	}
	for _, c := range cases {
		err := agui.CheckAll(c.evs)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want %q", c.name, err, c.want)
		}
	}
}

package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/agui"
	"github.com/switchboardhq/switchboard/internal/aisdk"
	"github.com/switchboardhq/switchboard/internal/model"
)

// History returns the saved messages of a chat session; a chat with no
// history has an empty array at revision 0, and so has another owner's
// chat (it reads as unknown: ids cannot be probed; CheckOwner tells).
func (rt *Runtime) History(ctx context.Context, chatSessionID, owner string) (switchboard.ChatHistory, error) {
	if rt.history == nil {
		return switchboard.ChatHistory{}, errNoHistory()
	}
	unknown := switchboard.ChatHistory{SessionID: chatSessionID, Messages: json.RawMessage("[]")}
	if err := rt.checkOwner(ctx, chatSessionID, owner, false); err != nil {
		if switchboard.CodeOf(err) == switchboard.CodeNotFound { // another user's: read as an unknown one
			return unknown, nil
		}
		return switchboard.ChatHistory{}, err
	}
	h, err := rt.history.ChatGet(ctx, chatSessionID)
	if switchboard.CodeOf(err) == switchboard.CodeNotFound {
		return unknown, nil
	}
	return h, err
}

// PutHistory replaces a chat session's saved messages (a JSON array: AG-UI
// messages or AI SDK UIMessages), stripping data: URLs longer than
// Options.MaxDataURLBytes.
func (rt *Runtime) PutHistory(ctx context.Context, chatSessionID, owner string, messages json.RawMessage) (switchboard.ChatHistory, error) {
	if rt.history == nil {
		return switchboard.ChatHistory{}, errNoHistory()
	}
	if b := bytes.TrimSpace(messages); len(b) == 0 || b[0] != '[' || !json.Valid(b) {
		return switchboard.ChatHistory{}, switchboard.Errorf(switchboard.CodeInvalidInput, "messages must be a JSON array")
	}
	if err := rt.checkOwner(ctx, chatSessionID, owner, true); err != nil {
		return switchboard.ChatHistory{}, err
	}
	return rt.history.ChatPut(ctx, switchboard.ChatHistory{
		SessionID: chatSessionID, Owner: owner, Messages: StripDataURLs(messages, rt.opts.MaxDataURLBytes), UpdatedAt: rt.now(),
	})
}

// CheckOwner is nil when owner may read chat session chatSessionID (its
// own, an unowned one, or any for the admin's empty owner), NOT_FOUND
// otherwise (UNAVAILABLE without a history store).
func (rt *Runtime) CheckOwner(ctx context.Context, chatSessionID, owner string) error {
	if rt.history == nil {
		return errNoHistory() // as History did for this check: no store, no owners to compare
	}
	return rt.checkOwner(ctx, chatSessionID, owner, false)
}

func errNoHistory() error {
	return switchboard.Errorf(switchboard.CodeUnavailable, "this daemon keeps no chat history (no history store is configured)")
}

// loadHistory reads a runtime-owned conversation: AG-UI messages, or AI SDK
// UIMessages (recognized by their parts) converted to AG-UI messages.
func (rt *Runtime) loadHistory(ctx context.Context, chatSessionID string) ([]agui.Message, error) {
	if rt.history == nil {
		return nil, nil
	}
	h, err := rt.history.ChatGet(ctx, chatSessionID)
	if switchboard.CodeOf(err) == switchboard.CodeNotFound {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return DecodeMessages(h.Messages)
}

// DecodeMessages reads a saved history in either shape.
func DecodeMessages(raw json.RawMessage) ([]agui.Message, error) {
	var probe []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &probe); err != nil {
		return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "saved history is not a JSON array of messages: %v", err)
	}
	if len(probe) > 0 && probe[0]["parts"] != nil {
		var ui []aisdk.UIMessage
		if err := json.Unmarshal(raw, &ui); err != nil {
			return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "saved UI messages: %v", err)
		}
		return aisdk.FromUIMessages(ui), nil
	}
	var ms []agui.Message
	if err := json.Unmarshal(raw, &ms); err != nil {
		return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "saved messages: %v", err)
	}
	return ms, nil
}

func (rt *Runtime) saveHistory(ctx context.Context, run *Run, conv []agui.Message) {
	if rt.history == nil || run.harness.AISDKOwnsHistory {
		return
	}
	b, err := json.Marshal(conv)
	if err == nil {
		_, err = rt.history.ChatPut(ctx, switchboard.ChatHistory{
			SessionID: run.thread, Owner: run.owner, Messages: StripDataURLs(b, rt.opts.MaxDataURLBytes), UpdatedAt: rt.now(),
		})
	}
	if err != nil {
		rt.log.WarnContext(ctx, "save chat history", "chat", run.thread, "run", run.id, "err", err)
	}
}

// StripDataURLs returns doc with every data: URL longer than max bytes
// (and every inline AG-UI data source value longer than max) replaced by a
// short marker, so saved history does not carry screenshots and uploads.
func StripDataURLs(doc json.RawMessage, max int) json.RawMessage {
	if !bytes.Contains(doc, []byte("data")) {
		return doc
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return doc
	}
	changed := false
	var walk func(any) any
	walk = func(x any) any {
		switch t := x.(type) {
		case string:
			if len(t) > max && strings.HasPrefix(t, "data:") {
				changed = true
				return strippedMarker(t)
			}
		case []any:
			for i := range t {
				t[i] = walk(t[i])
			}
		case map[string]any:
			if t["type"] == "data" {
				if s, ok := t["value"].(string); ok && len(s) > max {
					t["value"], changed = "", true
					t["stripped"] = fmt.Sprintf("%d bytes removed from saved history", len(s))
				}
			}
			for k := range t {
				t[k] = walk(t[k])
			}
		}
		return x
	}
	v = walk(v)
	if !changed {
		return doc
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return doc
	}
	return bytes.TrimRight(buf.Bytes(), "\n")
}

// strippedMarker keeps a data: URL's media type and says what was removed.
func strippedMarker(u string) string {
	meta, _, _ := strings.Cut(strings.TrimPrefix(u, "data:"), ",")
	return fmt.Sprintf("data:%s,[%d bytes removed from saved history]", meta, len(u))
}

// toModel translates the conversation for one request: tool names become
// the names the model knows, images go only to vision models, and messages
// the model has no use for (activity, reasoning) are left out.
func toModel(conv []agui.Message, ts *toolset, caps model.Caps) []model.Message {
	out := make([]model.Message, 0, len(conv))
	called := toolNames(conv)
	for _, m := range conv {
		switch m.Role {
		case agui.RoleSystem, agui.RoleDeveloper:
			out = append(out, model.Message{Role: model.RoleSystem, Content: m.Content})
		case agui.RoleUser:
			mm := model.Message{Role: model.RoleUser, Content: m.Content}
			for _, p := range m.Parts {
				if p.Type != "image" || p.Source == nil {
					continue
				}
				if !caps.Vision {
					mm.Content += "\n[an image was attached, but this model cannot see images]"
					continue
				}
				url := p.Source.Value
				if p.Source.Type == "data" {
					url = "data:" + p.Source.MimeType + ";base64," + p.Source.Value
				}
				mm.Images = append(mm.Images, model.Image{URL: url})
			}
			out = append(out, mm)
		case agui.RoleAssistant:
			mm := model.Message{Role: model.RoleAssistant, Content: m.Content}
			for _, tc := range m.ToolCalls {
				mm.ToolCalls = append(mm.ToolCalls, model.ToolCall{ID: tc.ID, Name: ts.toModelName(tc.Function.Name), Args: tc.Function.Arguments})
			}
			if mm.Content == "" && len(mm.ToolCalls) == 0 {
				continue
			}
			out = append(out, mm)
		case agui.RoleTool:
			// Results reach the model as tagged data with their provenance,
			// never as instructions (trust.go).
			content := wrapResult(m.Content, ts.derivedFrom(called[m.ToolCallID]))
			out = append(out, model.Message{Role: model.RoleTool, ToolCallID: m.ToolCallID, Content: content, IsError: m.Error != ""})
		}
	}
	return repairToolPairs(out)
}

// repairToolPairs keeps the conversation acceptable to providers: the
// results of an assistant message's tool calls follow it, a call left
// without a result gets one saying so, and stray results are dropped.
func repairToolPairs(ms []model.Message) []model.Message {
	out := make([]model.Message, 0, len(ms))
	var pending []string // calls of the last assistant message not yet answered
	open := map[string]bool{}
	flush := func() {
		for _, id := range pending {
			if open[id] {
				out = append(out, model.Message{Role: model.RoleTool, ToolCallID: id, Content: "not answered: the call was interrupted", IsError: true})
				delete(open, id)
			}
		}
		pending = nil
	}
	for _, m := range ms {
		if m.Role == model.RoleTool {
			if open[m.ToolCallID] {
				out = append(out, m)
				delete(open, m.ToolCallID)
			}
			continue
		}
		flush()
		out = append(out, m)
		for _, c := range m.ToolCalls {
			pending = append(pending, c.ID)
			open[c.ID] = true
		}
	}
	flush()
	return out
}

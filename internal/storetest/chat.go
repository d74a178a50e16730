package storetest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
)

// testChat checks chat history: NOT_FOUND before the first
// write, creation at revision 1 with its owner, replacement that keeps the
// owner and bumps the revision, JSON kept byte for byte, times at
// microsecond precision, and refusal of bad input.
func testChat(t *testing.T, s switchboard.Store) {
	ctx := context.Background()
	if _, err := s.ChatGet(ctx, "chat-1"); switchboard.CodeOf(err) != switchboard.CodeNotFound {
		t.Fatalf("get before put: %v", err)
	}
	first := json.RawMessage(`[{"id":"u1","role":"user","content":"hi"}]`)
	h, err := s.ChatPut(ctx, switchboard.ChatHistory{SessionID: "chat-1", Owner: "user:alice", Messages: first, UpdatedAt: base})
	if err != nil {
		t.Fatal(err)
	}
	if h.Revision != 1 || h.Owner != "user:alice" || !h.UpdatedAt.Equal(micro(base)) {
		t.Errorf("created %+v", h)
	}
	// Spacing and key order survive: the document is stored as given.
	second := json.RawMessage(`[{"role":"user", "id":"u1","content":"hi"},{"id":"a1","role":"assistant","content":"hello"}]`)
	later := base.Add(time.Second)
	h, err = s.ChatPut(ctx, switchboard.ChatHistory{SessionID: "chat-1", Owner: "user:mallory", Messages: second, UpdatedAt: later})
	if err != nil {
		t.Fatal(err)
	}
	if h.Revision != 2 || h.Owner != "user:alice" {
		t.Errorf("replaced %+v: revision must grow and the owner stay", h)
	}
	got, err := s.ChatGet(ctx, "chat-1")
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Messages) != string(second) || got.Revision != 2 || got.Owner != "user:alice" || !got.UpdatedAt.Equal(micro(later)) {
		t.Errorf("get %+v (%s)", got, got.Messages)
	}
	if _, err := s.ChatGet(ctx, "chat-2"); switchboard.CodeOf(err) != switchboard.CodeNotFound {
		t.Errorf("other chat: %v", err)
	}
	if _, err := s.ChatPut(ctx, switchboard.ChatHistory{SessionID: "chat-1", Messages: json.RawMessage(`[{`)}); switchboard.CodeOf(err) != switchboard.CodeInvalidInput {
		t.Errorf("invalid JSON: %v", err)
	}
	if _, err := s.ChatPut(ctx, switchboard.ChatHistory{Messages: first}); switchboard.CodeOf(err) != switchboard.CodeInvalidInput {
		t.Errorf("no session id: %v", err)
	}
}

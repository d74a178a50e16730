package httpapi_test

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard/internal/model/modeltest"
)

// TestChatIDsCannotBeProbed: another tab asking about a real
// chat (here an AI SDK chat, whose harness differs from the default)
// gets exactly the answer an unknown chat id gets, from the capabilities
// route and from the follow-up route.
func TestChatIDsCannotBeProbed(t *testing.T) {
	e := newAssistant(t, true)
	ctx := context.Background()
	alice, err := e.admin.CreateSession(ctx, "user:alice")
	if err != nil {
		t.Fatal(err)
	}
	bob, err := e.admin.CreateSession(ctx, "user:bob")
	if err != nil {
		t.Fatal(err)
	}
	e.model.Push(modeltest.Turn{Text: "hi"})
	chat := e.post(t, "POST", "/api/v1/agent/chat", alice.SessionToken, `{"id":"chat-alice","messages":[{"id":"u","role":"user","parts":[{"type":"text","text":"hi"}]}]}`)
	io.Copy(io.Discard, chat.Body)
	// The owner sees its chat's harness.
	if h := decodeJSON(t, e.post(t, "GET", "/api/v1/agent/capabilities?session=chat-alice", alice.SessionToken, "")); h["harness"] != "aisdk" {
		t.Fatalf("the owner's capabilities: %v", h)
	}
	ask := func(method, path, body string) (int, string) {
		r := e.post(t, method, path, bob.SessionToken, body)
		b, _ := io.ReadAll(r.Body)
		return r.StatusCode, strings.NewReplacer("chat-alice", "ID", "chat-nobody", "ID").Replace(string(b))
	}
	for _, q := range []struct{ method, path, body string }{
		{"GET", "/api/v1/agent/capabilities?session=%s", ""},
		{"POST", "/api/v1/agent/chat/%s/followup", `{"text":"x","clientSeq":1,"clientNonce":"n"}`},
	} {
		st, real := ask(q.method, strings.Replace(q.path, "%s", "chat-alice", 1), q.body)
		st2, unknown := ask(q.method, strings.Replace(q.path, "%s", "chat-nobody", 1), q.body)
		if st != st2 || real != unknown {
			t.Errorf("%s %s: another tab's chat answers %d %s, an unknown one %d %s", q.method, q.path, st, real, st2, unknown)
		}
		if q.method == "POST" && st != 404 {
			t.Errorf("follow-up to a chat the tab does not own: %d %s, want 404 NOT_FOUND", st, real)
		}
	}
}

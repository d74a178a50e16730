package daemon_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard/agui"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/internal/model"
	"github.com/switchboardhq/switchboard/internal/model/modeltest"
)

// TestRunCancelledOnAnotherReplica: a run streams on replica A; POST
// /runs/{id}/cancel through replica B reaches A (on A's own topic) and
// answers with the run cancelled.
func TestRunCancelledOnAnotherReplica(t *testing.T) {
	t.Parallel()
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	m := modeltest.NewOpenAI(t, modeltest.Turn{Text: "Working on it.", Hold: hold})
	_, urls := pgReplicasWith(t, 2, daemon.Options{
		Models: map[string]model.Config{"default": {Provider: "openai", Model: "scripted", BaseURL: m.BaseURL()}}})
	a, b := urls[0], urls[1]
	body := `{"threadId":"chat-cancel","runId":"run-c1","messages":[{"id":"u-1","role":"user","content":"hi"}],"tools":[],"context":[]}`
	req, _ := http.NewRequest("POST", a+"/api/v1/agui", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer replica-token")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	errText := errors.New("text")
	if err := agui.ReadFrames(resp.Body, func(_ string, data []byte) error {
		if ev, _ := agui.Decode(data); ev != nil {
			if _, ok := ev.(*agui.TextMessageContent); ok {
				return errText
			}
		}
		return nil
	}); !errors.Is(err, errText) {
		t.Fatalf("A's run streamed no text: %v", err)
	}
	creq, _ := http.NewRequest("POST", b+"/api/v1/runs/run-c1/cancel", nil)
	creq.Header.Set("Authorization", "Bearer replica-token")
	cresp, err := http.DefaultClient.Do(creq)
	if err != nil {
		t.Fatal(err)
	}
	defer cresp.Body.Close()
	var got map[string]any
	if err := json.NewDecoder(cresp.Body).Decode(&got); err != nil || cresp.StatusCode != http.StatusOK || got["status"] != "cancelled" {
		t.Fatalf("cancel through B: %d %v %v", cresp.StatusCode, got, err)
	}
}

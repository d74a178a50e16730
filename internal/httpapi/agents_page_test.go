package httpapi

import (
	"fmt"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
)

// RELIABILITY row 28: GET /agents answers a page at a time, and following
// nextCursor visits every session once, in order, even when sessions
// share a start time.
func TestAgentsPaged(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC)
	var list []switchboard.AgentSession // newest first, then by id
	for i := 9; i >= 0; i-- {
		for _, suffix := range []string{"a", "b"} {
			list = append(list, switchboard.AgentSession{ID: fmt.Sprintf("agt_%d%s", i, suffix), StartedAt: at.Add(time.Duration(i) * time.Second)})
		}
	}
	var seen []string
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > len(list) {
			t.Fatal("the cursors do not end")
		}
		items, next, err := agentPage(list, cursor, 3)
		if err != nil {
			t.Fatal(err)
		}
		if len(items) > 3 {
			t.Fatalf("a page of %d, want at most 3", len(items))
		}
		for _, s := range items {
			seen = append(seen, s.ID)
		}
		if next == "" {
			break
		}
		cursor = next
	}
	if len(seen) != len(list) {
		t.Fatalf("visited %d sessions, want %d: %v", len(seen), len(list), seen)
	}
	for i := range list {
		if seen[i] != list[i].ID {
			t.Fatalf("visit %d is %s, want %s", i, seen[i], list[i].ID)
		}
	}
	if items, next, err := agentPage(list[:2], "", 3); err != nil || len(items) != 2 || next != "" {
		t.Fatalf("a short list: %d items, next %q, %v", len(items), next, err)
	}
	if _, _, err := agentPage(list, "not-a-cursor", 3); switchboard.CodeOf(err) != switchboard.CodeInvalidInput {
		t.Fatalf("a bad cursor: %v; want INVALID_INPUT", err)
	}
	for _, v := range []string{"0", "501", "x"} {
		if _, err := pageLimit(v); switchboard.CodeOf(err) != switchboard.CodeInvalidInput {
			t.Fatalf("limit %q: %v; want INVALID_INPUT", v, err)
		}
	}
	if n, err := pageLimit(""); err != nil || n != DefaultAgentPage {
		t.Fatalf("the default limit: %d %v", n, err)
	}
}

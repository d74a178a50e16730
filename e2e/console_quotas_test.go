package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/sqlite"
)

// TestConsoleQuotasInChromium: with daily quotas set, the Agents view
// says which, and lists today's usage of every agent and user against
// its limit, flagging one that is used up; at 390 px the table fits.
func TestConsoleQuotasInChromium(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "sb.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	quota := switchboard.DailyQuota{Agent: switchboard.QuotaUsage{Calls: 2}, User: switchboard.QuotaUsage{Calls: 10, CostMicros: 5_000_000}}
	d, err := daemon.New(ctx, daemon.Options{Store: st, AdminToken: adminToken,
		Governance: daemon.GovernanceOptions{DailyQuota: quota}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close(); st.Close() })
	e := &env{t: t, d: d}
	e.srv = httptestServer(t, d)
	e.admin = client.New(e.srv.URL, adminToken, nil)
	e.browser = startChromium(t, e)

	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"ok":true}`))
	}))
	defer backend.Close()
	tool := switchboard.Tool{Name: "test.ping", Description: "Ping the backend.", Class: switchboard.ClassRead,
		Binding: &switchboard.Binding{HTTP: &switchboard.HTTPBinding{Method: "POST", URL: backend.URL + "/ping"}}}
	if _, err := e.admin.RegisterTools(ctx, switchboard.SourceHost, []switchboard.Tool{tool}); err != nil {
		t.Fatal(err)
	}
	tok, err := e.admin.CreateToken(ctx, client.TokenRequest{Agent: "planner", User: "user:alice", Allow: []string{"test.*"}})
	if err != nil {
		t.Fatal(err)
	}
	agent := client.New(e.srv.URL, tok.Token, nil)
	for i := range 3 { // the third is refused: the agent's quota is 2
		_, err := agent.CallTool(ctx, "test.ping", json.RawMessage(`{}`), client.CallOptions{})
		if i < 2 && err != nil || i == 2 && switchboard.CodeOf(err) != switchboard.CodeQuotaExceeded {
			t.Fatalf("call %d: %v", i+1, err)
		}
	}

	tab, cancel := e.tab(t, e.srv.URL+"/#agents")
	defer cancel()
	do(t, tab, chromedp.EmulateViewport(1440, 900))
	signIn(t, tab)
	row := func(subject string) []string {
		sel := `document.querySelector('#quota-list tr[data-subject="` + subject + `"]')`
		poll(t, tab, `!!`+sel)
		return eval[[]string](t, tab, `[...`+sel+`.cells].map(c => c.textContent)`)
	}
	if got := row("agent:planner"); len(got) != 4 || got[1] != "2 / 2 used up" || got[2] != "0" || got[3] != "$0.00" {
		t.Errorf("the planner's row reads %q", got)
	}
	if got := row("user:alice"); len(got) != 4 || got[1] != "2 / 10" || got[3] != "$0.00 / $5.00" {
		t.Errorf("alice's row reads %q", got)
	}
	if got := text(t, tab, "#quota-count"); !strings.Contains(got, "each agent: 2 calls; each user: 10 calls, $5.00") {
		t.Errorf("the quota line reads %q", got)
	}
	consoleShot(t, tab, "agents-quotas")
	narrowFits(t, tab, "the quota table")
}

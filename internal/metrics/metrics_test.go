package metrics

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/activity"
)

func TestEntriesAndCaps(t *testing.T) {
	t.Parallel()
	m := New(&Options{MaxTools: 2, Tool: func(name string) (string, string, bool) {
		return "read", "browser", name != "gone.tool"
	}})
	call := func(tool, details string) {
		m.Entry(switchboard.ActivityEntry{ID: 1, Verb: activity.VerbToolCall, Target: tool, Details: []byte(details)})
	}
	call("nav.goto", `{"status":"succeeded","surface":"browser","durationMs":12}`)
	call("nav.goto", `{"status":"failed","surface":"browser","durationMs":3,"code":"SESSION_GONE"}`)
	call("gone.tool", `{"status":"succeeded","surface":"api","durationMs":1}`)
	call("gone.tool", `{"status":"failed","surface":"browser","durationMs":2,"code":"SESSION_GONE"}`) // its tab is gone: still a tab's call
	call("third.tool", `{"status":"succeeded","surface":"api","durationMs":1}`)                       // past MaxTools
	m.Entry(switchboard.ActivityEntry{ID: 2, Verb: activity.VerbApprovalDecide, Target: "nav.goto", Details: []byte(`{"decision":"approved","waitMs":4000}`)})
	m.Entry(switchboard.ActivityEntry{ID: 3, Verb: activity.VerbToolCall, Target: "x", Details: []byte(`not json`)})
	m.ModelUsage("gpt-test", 100, 20, 0, 0.5)
	m.RetentionSweep(3, 4)

	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	b, _ := io.ReadAll(rec.Body)
	body := string(b)
	for _, want := range []string{
		`switchboard_calls_total{class="read",outcome="succeeded",surface="browser",tool="nav.goto",transport="browser"} 1`,
		`switchboard_calls_total{class="read",outcome="failed",surface="browser",tool="nav.goto",transport="browser"} 1`,
		`switchboard_calls_total{class="other",outcome="succeeded",surface="api",tool="gone.tool",transport="other"} 1`,
		`switchboard_calls_total{class="other",outcome="failed",surface="browser",tool="gone.tool",transport="browser"} 1`,
		`switchboard_calls_total{class="read",outcome="succeeded",surface="api",tool="other",transport="browser"} 1`,
		`switchboard_call_errors_total{code="SESSION_GONE",surface="browser"} 2`,
		`switchboard_browser_session_gone_total 2`,
		`switchboard_browser_round_trip_seconds_count 3`,
		`switchboard_approvals_total{decision="approved"} 1`,
		`switchboard_approval_wait_seconds_sum{decision="approved"} 4`,
		`switchboard_model_tokens_total{kind="input",model="gpt-test"} 100`,
		`switchboard_model_cost_usd_total{model="gpt-test"} 0.5`,
		`switchboard_retention_deleted_total{kind="invocations"} 4`,
		`switchboard_retention_sweeps_total 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("missing %s", want)
		}
	}
	if strings.Contains(body, `tool="third.tool"`) || strings.Contains(body, `tool="x"`) {
		t.Errorf("a tool past the cap, or an unparsable entry, got a series:\n%s", body)
	}
}

// BenchmarkStoreCommit is what each group commit pays for its two
// observations (bench/README.md, "Metrics").
func BenchmarkStoreCommit(b *testing.B) {
	for range b.N {
		StoreCommit(3, 250*time.Microsecond)
	}
}

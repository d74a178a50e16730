package daemon_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/agui"
	"github.com/switchboardhq/switchboard/internal/bus"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/internal/model"
	"github.com/switchboardhq/switchboard/internal/model/modeltest"
	"github.com/switchboardhq/switchboard/postgres"
)

// pgReplicasWith starts n daemons on one fresh Postgres schema, each with
// its own store and Postgres bus (as n `serve` processes), all given o,
// and returns their base URLs. The admin token is "replica-token".
func pgReplicasWith(t *testing.T, n int, o daemon.Options) ([]*daemon.Daemon, []string) {
	t.Helper()
	return pgReplicasWrapped(t, n, o, nil)
}

// pgReplicasWrapped is pgReplicasWith with each replica's bus passed
// through wrap (if set) before its daemon gets it: a test observes what
// each replica's subscriptions are delivered.
func pgReplicasWrapped(t *testing.T, n int, o daemon.Options, wrap func(i int, b *bus.Postgres) bus.Bus) ([]*daemon.Daemon, []string) {
	t.Helper()
	dsn := os.Getenv("SWITCHBOARD_TEST_POSTGRES")
	if dsn == "" {
		t.Skip("SWITCHBOARD_TEST_POSTGRES is not set")
	}
	schema := pgSchema(t, dsn)
	ctx := context.Background()
	var (
		ds   []*daemon.Daemon
		urls []string
	)
	for i := range n {
		st, err := postgres.Open(ctx, dsn, &postgres.Options{Schema: schema, MaxConns: 8})
		if err != nil {
			t.Fatal(err)
		}
		b, err := bus.OpenPostgres(ctx, dsn, &bus.PostgresOptions{Schema: schema})
		if err != nil {
			t.Fatal(err)
		}
		opts := o
		opts.Store, opts.Bus, opts.AdminToken = st, b, "replica-token"
		if wrap != nil {
			opts.Bus = wrap(i, b)
		}
		if opts.Replicas.Name == "" {
			// Distinct names, as two serve processes have: a start claims
			// (and resolves the work of) earlier starts of its own name.
			opts.Replicas.Name = fmt.Sprintf("replica-%d", i)
		}
		dm, err := daemon.New(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(dm.Handler())
		t.Cleanup(func() { srv.Close(); dm.Close(); b.Close(); st.Close() })
		ds, urls = append(ds, dm), append(urls, srv.URL)
	}
	return ds, urls
}

// TestChatBusyOnEveryReplica: while replica A runs a chat, a start of the
// same chat through replica B is refused with CONFLICT naming A's run, as
// one through A is; once A's run ended, B starts the chat's next run.
func TestChatBusyOnEveryReplica(t *testing.T) {
	t.Parallel()
	hold, release := heldGate(t)
	m := modeltest.NewOpenAI(t, modeltest.Turn{Text: "Working on it.", Hold: hold}, modeltest.Turn{Text: "Next answer."})
	_, urls := pgReplicasWith(t, 2, daemon.Options{Models: scripted(m)})
	a, b := urls[0], urls[1]
	start := func(base, run string) *http.Response {
		t.Helper()
		body := `{"threadId":"chat-busy","runId":"` + run + `","messages":[{"id":"u-` + run + `","role":"user","content":"hi"}],"tools":[],"context":[]}`
		req, _ := http.NewRequest("POST", base+"/api/v1/agui", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer replica-token")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	refused := func(resp *http.Response, where string) {
		t.Helper()
		var env switchboard.ErrorEnvelope
		err := json.NewDecoder(resp.Body).Decode(&env)
		if resp.StatusCode != http.StatusConflict || err != nil || env.Error == nil || env.Error.Code != switchboard.CodeConflict {
			t.Fatalf("a second start of the busy chat through %s: %d %+v %v", where, resp.StatusCode, env.Error, err)
		}
		if d, _ := env.Error.Details.(map[string]any); d["runId"] != "run-1" {
			t.Errorf("the refusal through %s names %v, want run-1: %s", where, env.Error.Details, env.Error.Message)
		}
	}

	first := start(a, "run-1")
	if first.StatusCode != http.StatusOK {
		t.Fatalf("start on A: %d", first.StatusCode)
	}
	awaitText(t, first.Body, "A's run")
	refused(start(b, "run-2"), "B")
	refused(start(a, "run-3"), "A")

	release()
	if _, err := io.Copy(io.Discard, first.Body); err != nil {
		t.Fatal(err)
	}
	// A stores its run's end at once after it; B reads the store.
	for deadline := time.Now().Add(10 * time.Second); ; {
		var r switchboard.RunInfo
		req, _ := http.NewRequest("GET", b+"/api/v1/runs/run-1", nil)
		req.Header.Set("Authorization", "Bearer replica-token")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		err = json.NewDecoder(resp.Body).Decode(&r)
		resp.Body.Close()
		if err == nil && r.Status != switchboard.RunRunning && r.Status != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("B reads run-1 as %q (%v) 10 s after it ended", r.Status, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	next := start(b, "run-4")
	if next.StatusCode != http.StatusOK {
		t.Fatalf("the next start on B after A's run ended: %d", next.StatusCode)
	}
	if _, err := io.Copy(io.Discard, next.Body); err != nil {
		t.Fatal(err)
	}
}

// heldGate is a Hold for a scripted model turn: the turn streams until it
// reaches the hold and waits there until release (idempotent; also at
// the test's end).
func heldGate(t *testing.T) (hold chan struct{}, release func()) {
	hold = make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(hold) }) }
	t.Cleanup(release)
	return hold, release
}

// scripted is the daemon's model configuration for scripted model m.
func scripted(m *modeltest.OpenAI) map[string]model.Config {
	return map[string]model.Config{"default": {Provider: "openai", Model: "scripted", BaseURL: m.BaseURL()}}
}

// awaitText reads an AG-UI stream until its first text, failing the test
// when the stream ends without any (who names the run for the message).
func awaitText(t *testing.T, body io.Reader, who string) {
	t.Helper()
	errText := errors.New("text")
	if err := agui.ReadFrames(body, func(_ string, data []byte) error {
		if ev, _ := agui.Decode(data); ev != nil {
			if _, ok := ev.(*agui.TextMessageContent); ok {
				return errText
			}
		}
		return nil
	}); !errors.Is(err, errText) {
		t.Fatalf("%s streamed no text: %v", who, err)
	}
}

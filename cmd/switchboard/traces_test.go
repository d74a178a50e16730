package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/switchboardhq/switchboard/internal/daemon"
)

// TestServeExportsTraces: serve started with an OTLP endpoint in its
// environment exports a call's execute_tool span over OTLP/HTTP to a
// receiver that decodes it — in the caller's trace (traceparent), with the
// invocation id — flushed when serve exits; the HTTP binding's backend got
// a traceparent of the same trace.
func TestServeExportsTraces(t *testing.T) {
	const trace = "4bf92f3577b34da6a3ce929d0e0e4736"
	var (
		mu    sync.Mutex
		spans []*tracepb.Span
		res   []string
	)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var req coltrace.ExportTraceServiceRequest
		if r.URL.Path != "/v1/traces" || proto.Unmarshal(b, &req) != nil {
			http.Error(w, "not an OTLP/HTTP trace export", http.StatusBadRequest)
			return
		}
		mu.Lock()
		for _, rs := range req.ResourceSpans {
			for _, kv := range rs.GetResource().GetAttributes() {
				res = append(res, kv.Key+"="+kv.GetValue().GetStringValue())
			}
			for _, ss := range rs.ScopeSpans {
				spans = append(spans, ss.Spans...)
			}
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer receiver.Close()
	backendGot := make(chan string, 1)
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		backendGot <- r.Header.Get("Traceparent")
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"ok":true}`))
	}))
	defer backend.Close()
	t.Setenv("OTEL_TRACES_EXPORTER", "otlp")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.URL)

	dir := t.TempDir()
	manifest := filepath.Join(dir, "notes.yaml")
	if err := os.WriteFile(manifest, []byte(fmt.Sprintf(`tools:
  - name: notes.add
    description: Add a note.
    class: mutate
    inputSchema:
      type: object
      properties:
        text: {type: string}
    binding:
      http:
        method: POST
        url: %s/notes
`, backend.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	addr, stop := serveIn(t, data, "--manifest", manifest)
	tok, err := daemon.ReadToken(data)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/api/v1/tools/notes.add/call", strings.NewReader(`{"input":{"text":"SECRET-ARG-3321"}}`))
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Traceparent", "00-"+trace+"-00f067aa0ba902b7-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("call: %s %s", resp.Status, body)
	}
	if tp := <-backendGot; !strings.HasPrefix(tp, "00-"+trace+"-") {
		t.Errorf("the backend got traceparent %q; want trace %s", tp, trace)
	}
	stop() // serve flushes its spans on the way out

	mu.Lock()
	defer mu.Unlock()
	var found bool
	for _, s := range spans {
		if s.Name != "execute_tool notes.add" {
			continue
		}
		found = true
		if got := fmt.Sprintf("%x", s.TraceId); got != trace {
			t.Errorf("execute_tool in trace %s; want the caller's %s", got, trace)
		}
		attrs := map[string]string{}
		for _, kv := range s.Attributes {
			attrs[kv.Key] = kv.GetValue().GetStringValue()
		}
		if attrs["gen_ai.tool.name"] != "notes.add" || !strings.Contains(string(body), `"`+attrs["gen_ai.tool.call.id"]+`"`) || attrs["gen_ai.tool.call.id"] == "" {
			t.Errorf("execute_tool attributes %v; want the tool and the invocation id of %s", attrs, body)
		}
		for k, v := range attrs {
			if strings.Contains(v, "SECRET-ARG") {
				t.Errorf("attribute %s carries the argument: %q", k, v)
			}
		}
	}
	if !found {
		t.Fatalf("no execute_tool notes.add span exported; got %d spans", len(spans))
	}
	if !strings.Contains(strings.Join(res, " "), "service.name=switchboard") {
		t.Errorf("resource %v lacks service.name=switchboard", res)
	}
}

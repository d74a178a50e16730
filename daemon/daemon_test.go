package daemon

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
	"github.com/switchboardhq/switchboard/internal/broker"
	engine "github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/internal/mcpserver"
	"github.com/switchboardhq/switchboard/internal/model"
	"github.com/switchboardhq/switchboard/internal/panel"
	"github.com/switchboardhq/switchboard/internal/telemetry"
	"github.com/switchboardhq/switchboard/panelspec"
	"github.com/switchboardhq/switchboard/sqlite"
)

// The constants are spelled out for go doc; they must stay the engine's.
func TestConstantsAreTheEngines(t *testing.T) {
	strs := [][2]string{
		{TokenFile, engine.TokenFile}, {DBFile, engine.DBFile},
		{BusAuto, engine.BusAuto}, {BusLocal, engine.BusLocal}, {BusPostgres, engine.BusPostgres},
		{DefaultIssuer, engine.DefaultIssuer}, {EventAgentStatus, engine.EventAgentStatus},
	}
	for _, s := range strs {
		if s[0] != s[1] {
			t.Errorf("public %q, engine %q", s[0], s[1])
		}
	}
	durs := [][2]time.Duration{
		{DefaultReplicaHeartbeat, engine.DefaultReplicaHeartbeat}, {DefaultReplicaTimeout, engine.DefaultReplicaTimeout},
		{DefaultRetainInvocations, engine.DefaultRetainInvocations}, {DefaultRetainRuns, engine.DefaultRetainRuns},
		{DefaultRetainSearchExamples, engine.DefaultRetainSearchExamples}, {DefaultRetentionInterval, engine.DefaultRetentionInterval},
	}
	for _, d := range durs {
		if d[0] != d[1] {
			t.Errorf("public %v, engine %v", d[0], d[1])
		}
	}
	want := RateLimit{PerPrincipal: Rate{PerSecond: 20, Burst: 60}, PerTool: Rate{PerSecond: 50, Burst: 100}}
	if got := DefaultRateLimit(); got != want {
		t.Errorf("DefaultRateLimit() = %+v, want the engine's %+v", got, want)
	}
}

type previews struct{}

func (previews) Put(string) string { return "https://preview.example/p/1" }

// Every public option reaches the engine's options, with its value.
func TestOptionsTranslate(t *testing.T) {
	yes, n := true, 4096
	floor := map[switchboard.Class]switchboard.Approval{switchboard.ClassRead: switchboard.ApprovalHITL}
	o := Options{
		AdminToken: "tok", AllowOrigins: []string{"https://app.example"}, AllowHosts: []string{"app.example"},
		Demo: true, DemoKey: "key",
		MCP: MCPOptions{Mode: "deferred", Threshold: 7},
		Models: map[string]ModelConfig{"default": {Provider: "openai", Model: "m", BaseURL: "http://x", APIKeyEnv: "K", MaxTokens: 9,
			Caps: &ModelCaps{Vision: &yes, ContextTokens: &n}, Price: &ModelPrice{InputPerMTok: 1, OutputPerMTok: 2, CachedInputPerMTok: 0.5}}},
		Governance: GovernanceOptions{ApprovalTTL: time.Minute, ApprovalFloor: floor, MaxPendingPerAgent: 3,
			DailyQuota: switchboard.DailyQuota{Agent: switchboard.QuotaUsage{Calls: 5}, User: switchboard.QuotaUsage{CostMicros: 6}},
			RateLimit:  &RateLimit{PerPrincipal: Rate{1, 2}, PerTool: Rate{3, 4}, Users: true}},
		Canvas:           CanvasPolicy{Preset: "open", HITLOnCompose: &yes, AutoPin: &yes, AllowDelete: &yes, AllowCodePreview: &yes},
		Previews:         previews{},
		PreviewOrigin:    "https://preview.example",
		Replicas:         ReplicaOptions{Name: "a", Addr: ":1", Heartbeat: time.Second, Timeout: time.Hour},
		Retention:        RetentionOptions{Invocations: 1, IdempotencyKeys: 2, Runs: 3, SearchExamples: 4, Interval: 5},
		MetricsElsewhere: true, NoSearchLearning: true,
		Assertion: AssertionOptions{Issuer: "https://sb.example", Rotation: time.Hour},
		OAuth:     OAuthOptions{Resource: "https://sb.example/mcp", Issuer: "https://idp.example", UserClaim: "email", Scope: "s"},
	}
	anchor, err := OpenAnchor(t.TempDir(), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { anchor.Close() })
	o.Governance.LedgerAnchor = anchor
	b, err := OpenBus(context.Background(), BusLocal, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	o.Bus = b
	got := o.engine()
	// The handles pass through as they are.
	if got.Governance.LedgerAnchor != anchor.a || got.Bus != b.b {
		t.Fatalf("anchor %p bus %v: want %p %v", got.Governance.LedgerAnchor, got.Bus, anchor.a, b.b)
	}
	got.Governance.LedgerAnchor, got.Bus = nil, nil
	want := engine.Options{
		AdminToken: "tok", AllowOrigins: []string{"https://app.example"}, AllowHosts: []string{"app.example"},
		Demo: true, DemoKey: "key",
		MCP: mcpserver.Options{Mode: mcpserver.ModeDeferred, Threshold: 7},
		Models: map[string]model.Config{"default": {Provider: "openai", Model: "m", BaseURL: "http://x", APIKeyEnv: "K", MaxTokens: 9,
			Caps: &model.CapsConfig{Vision: &yes, ContextTokens: &n}, Price: &model.Price{InputPerMTok: 1, OutputPerMTok: 2, CachedInputPerMTok: 0.5}}},
		Governance: engine.GovernanceOptions{ApprovalTTL: time.Minute, ApprovalFloor: floor, MaxPendingPerAgent: 3,
			DailyQuota: switchboard.DailyQuota{Agent: switchboard.QuotaUsage{Calls: 5}, User: switchboard.QuotaUsage{CostMicros: 6}},
			RateLimit:  &broker.RateLimit{PerPrincipal: broker.Rate{PerSecond: 1, Burst: 2}, PerTool: broker.Rate{PerSecond: 3, Burst: 4}, Users: true}},
		Canvas:           panel.CanvasPolicy{Preset: "open", HITLOnCompose: &yes, AutoPin: &yes, AllowDelete: &yes, AllowCodePreview: &yes},
		Previews:         previews{},
		PreviewOrigin:    "https://preview.example",
		Replicas:         engine.ReplicaOptions{Name: "a", Addr: ":1", Heartbeat: time.Second, Timeout: time.Hour},
		Retention:        engine.RetentionOptions{Invocations: 1, IdempotencyKeys: 2, Runs: 3, SearchExamples: 4, Interval: 5},
		MetricsElsewhere: true, NoSearchLearning: true,
		Assertion: engine.AssertionOptions{Issuer: "https://sb.example", Rotation: time.Hour},
		OAuth:     engine.OAuthOptions{Resource: "https://sb.example/mcp", Issuer: "https://idp.example", UserClaim: "email", Scope: "s"},
	}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b previews) bool { return true })); diff != "" {
		t.Fatalf("engine options (-want +got):\n%s", diff)
	}
	// Unset, the pointers and interfaces stay nil: the engine's defaults.
	zero := Options{}.engine()
	if zero.Bus != nil || zero.Previews != nil || zero.Governance.RateLimit != nil || zero.Governance.LedgerAnchor != nil || zero.Models != nil {
		t.Fatalf("zero options: %+v", zero)
	}
}

// projects is a data adapter an embedder writes against panelspec alone.
type projects struct{ scopes []panelspec.AdapterScope }

func (p *projects) Query(_ context.Context, s panelspec.AdapterScope, _ json.RawMessage) ([]panelspec.Record, error) {
	p.scopes = append(p.scopes, s)
	return []panelspec.Record{{"id": "p1", "name": "Apollo"}}, nil
}

func (p *projects) Mutate(context.Context, panelspec.AdapterScope, panelspec.Mutation) (panelspec.Record, error) {
	return nil, nil
}

func (p *projects) Subscribe(ctx context.Context, _ panelspec.AdapterScope, _ json.RawMessage, _ func()) error {
	<-ctx.Done()
	return nil
}

// A host registers an adapter and a panel with public types only; the
// panel is listed and the adapter answers its data tool through the API.
func TestPanelsThroughPublicTypes(t *testing.T) {
	ctx := context.Background()
	store, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "sb.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	d, err := New(ctx, Options{Store: store, AdminToken: "tok", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	a := &projects{}
	if err := d.RegisterAdapter(ctx, "projects", a, AdapterOptions{Description: "the studio's projects", Ops: []string{panelspec.OpUpdate}}); err != nil {
		t.Fatal(err)
	}
	b := panelspec.NewBuilder(panelspec.OriginHost)
	b.BodyWith(panelspec.BodyProps{Title: "Project settings"},
		b.FormSubmit("project", "save", panelspec.TextField("name", "Name").Required()))
	b.Source("project", panelspec.AdapterSource("projects", json.RawMessage(`{"where": {"id": {"$param": "projectId"}}}`)))
	b.Action("save", panelspec.Mutate("project", panelspec.OpUpdate))
	spec, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	if err := d.RegisterPanel(ctx, Panel{ID: "project.settings", Title: "Project settings",
		Description: "Edit one project's name.", Spec: spec}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(d.Handler())
	t.Cleanup(srv.Close)
	cl := client.New(srv.URL, "tok", nil)

	m, err := cl.ListTools(ctx, client.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range m.Tools {
		names = append(names, tl.Name)
	}
	for _, want := range []string{"data.projects.query", "data.projects.update", "panel.open"} {
		if !slices.Contains(names, want) {
			t.Errorf("catalog lacks %s: %v", want, names)
		}
	}
	resp, err := cl.CallTool(ctx, "data.projects.query", json.RawMessage(`{"query":{}}`), client.CallOptions{})
	if err != nil || resp.Status != switchboard.StatusSucceeded {
		t.Fatalf("query: %+v %v", resp, err)
	}
	if string(resp.Result) != `{"records":[{"id":"p1","name":"Apollo"}]}` {
		t.Fatalf("query result %s", resp.Result)
	}
	if len(a.scopes) != 1 || a.scopes[0].Principal.String() != switchboard.Operator {
		t.Fatalf("adapter scopes %+v: want the admin's", a.scopes)
	}
	pl, err := cl.CallTool(ctx, "panel.list", json.RawMessage(`{}`), client.CallOptions{})
	if err != nil || pl.Status != switchboard.StatusSucceeded {
		t.Fatalf("panel.list: %+v %v", pl, err)
	}
	var listed struct {
		Panels []struct {
			ID string `json:"id"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(pl.Result, &listed); err != nil || len(listed.Panels) != 1 || listed.Panels[0].ID != "project.settings" {
		t.Fatalf("panel.list: %s %v", pl.Result, err)
	}
}

// The telemetry options reach the engine: the webhook's URL and client,
// and a callback that hears the engine's events field for field.
func TestTelemetryTranslates(t *testing.T) {
	var heard []TelemetryEvent
	client := &http.Client{}
	got := TelemetryOptions{Callback: func(e TelemetryEvent) { heard = append(heard, e) },
		WebhookURL: "https://collector.example/events", HTTPClient: client}.engine()
	if got.Webhook == nil || got.Webhook.URL != "https://collector.example/events" || got.Webhook.Client != client || got.Callback == nil {
		t.Fatalf("engine telemetry options: %+v", got)
	}
	cost := 0.5
	got.Callback(telemetry.Event{V: 1, Kind: telemetry.KindModelUsage, Model: "m", InputTokens: 3, CostUSD: &cost, Issues: []string{"X"}})
	want := TelemetryEvent{V: 1, Kind: "model.usage", Model: "m", InputTokens: 3, CostUSD: &cost, Issues: []string{"X"}}
	if len(heard) != 1 || !cmp.Equal(heard[0], want) {
		t.Fatalf("callback heard %+v", heard)
	}
	if zero := (TelemetryOptions{}).engine(); zero.Callback != nil || zero.Webhook != nil {
		t.Fatalf("zero telemetry options: %+v", zero)
	}
}

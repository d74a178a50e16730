package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
	"github.com/switchboardhq/switchboard/internal/panel"
	"github.com/switchboardhq/switchboard/panelspec"
)

// panelsSeam is the daemon's adapter (internal/daemon/mcp.go) over a real
// panel service, set once the env's broker and sessions exist.
type panelsSeam struct{ s *panel.Service }

func (p *panelsSeam) PanelViews(ctx context.Context) ([]PanelView, error) {
	res, err := p.s.List(ctx, "")
	if err != nil {
		return nil, err
	}
	var out []PanelView
	for _, in := range res.Instances {
		out = append(out, PanelView{ID: in.InstanceID, Title: in.Title, Origin: in.Origin})
	}
	return out, nil
}

func (p *panelsSeam) PanelSnapshot(ctx context.Context, id string) (json.RawMessage, error) {
	sn, err := p.s.Snapshot(ctx, id)
	if err != nil {
		return nil, err
	}
	return json.Marshal(sn)
}

// appsEnv is an env whose MCP server serves panels from a real panel
// service, with one tab (alice's) whose renderer is attached. The token
// "scoped" is an agent limited to the host panel "billing.*": it may see
// no composed panel.
func appsEnv(t *testing.T) (*env, *panel.Service, *client.Tab) {
	t.Helper()
	seam := &panelsSeam{}
	e := newEnv(t, Options{Panels: seam, Auth: authFunc(func(r *http.Request) (switchboard.Principal, error) {
		if r.Header.Get("Authorization") == "Bearer scoped" {
			return switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "scoped", PanelScope: switchboard.PanelScope{Panels: []string{"billing.*"}}}, nil
		}
		return adminOnly(r)
	})})
	svc := panel.New(panel.Options{Caller: e.br, Tabs: e.sess, Tools: e.reg})
	t.Cleanup(svc.Close)
	seam.s = svc
	for _, tf := range svc.Tools() {
		e.goTool(tf.Tool, tf.Func)
	}
	tab := e.tab(func(context.Context, switchboard.BrowserActionRequest) (json.RawMessage, error) { return nil, nil }, noop)
	svc.Attach(e.ctx, tab.ID)
	return e, svc, tab
}

// noop is the tab's one browser tool (a tab must advertise one to attach).
var noop = func() switchboard.Tool { t := tool("ui.noop", "ui"); t.ViewStateOnly = true; return t }()

const appsSpec = `{"v": 1, "root": "body", "nodes": {
  "body": {"type": "panel-body", "props": {"title": "Notes"}, "children": ["t"]},
  "t": {"type": "text", "props": {"text": "<b>not bold</b> stays text"}}}}`

// appsClient connects as a client that declares MCP Apps.
func (e *env) appsClient(token string) *mcp.ClientSession {
	caps := &mcp.ClientCapabilities{}
	caps.AddExtension(AppsExtension, map[string]any{"mimeTypes": []string{AppMIMEType}})
	return e.connect(token, &mcp.ClientOptions{Capabilities: caps})
}

// compose composes appsSpec in slot (main when ""): an agent's next draft
// in the same slot replaces the last.
func compose(t *testing.T, cs *mcp.ClientSession, slot ...string) (*mcp.CallToolResult, string) {
	t.Helper()
	args := map[string]any{"spec": json.RawMessage(appsSpec)}
	if len(slot) > 0 {
		args["slot"] = slot[0]
	}
	res := call(t, cs, "panel-compose", args)
	if res.IsError {
		t.Fatalf("compose: %s", text(t, res))
	}
	var v struct{ InstanceID string }
	if err := json.Unmarshal([]byte(text(t, res)), &v); err != nil || v.InstanceID == "" {
		t.Fatalf("compose result %s: %v", text(t, res), err)
	}
	return res, v.InstanceID
}

func TestAppsCapabilityAndToolLinks(t *testing.T) {
	t.Parallel()
	e, svc, _ := appsEnv(t)
	apps := e.appsClient(adminToken)
	ext, ok := apps.InitializeResult().Capabilities.Extensions[AppsExtension].(map[string]any)
	if !ok || !slices.Equal(ext["mimeTypes"].([]any), []any{AppMIMEType}) {
		t.Fatalf("capabilities.extensions: %#v", apps.InitializeResult().Capabilities.Extensions)
	}
	if apps.InitializeResult().Capabilities.Resources == nil {
		t.Fatal("no resources capability")
	}

	uiOf := func(tl *mcp.Tool) (uri string, vis []string) {
		m, _ := tl.Meta[metaUIKey].(map[string]any)
		uri, _ = m["resourceUri"].(string)
		for _, v := range asSlice(m["visibility"]) {
			vis = append(vis, v.(string))
		}
		return uri, vis
	}
	listed, _ := listAll(t, apps)
	tools := byName(listed)
	for _, name := range []string{"panel-open", "panel-compose", "panel-patch", "panel-fill"} {
		if uri, vis := uiOf(tools[name]); uri != PanelViewURI || !slices.Equal(vis, []string{"model", "app"}) {
			t.Errorf("%s: _meta.ui %v %v", name, uri, vis)
		}
	}
	if uri, vis := uiOf(tools["panel-run_action"]); uri != "" || !slices.Equal(vis, []string{"model", "app"}) {
		t.Errorf("panel-run_action: _meta.ui %q %v", uri, vis)
	}
	if uri, vis := uiOf(tools[toolPanelView]); uri != PanelViewURI || !slices.Equal(vis, []string{"app"}) {
		t.Errorf("%s: _meta.ui %q %v", toolPanelView, uri, vis)
	}
	if _, vis := uiOf(tools["ui-noop"]); vis != nil {
		t.Errorf("a tool that is no panel's carries _meta.ui: %v", tools["ui-noop"].Meta)
	}
	// A client that does not speak MCP Apps is not offered the app-only tool.
	plain, _ := listAll(t, e.connect(adminToken, nil))
	if byName(plain)[toolPanelView] != nil {
		t.Error("the app-only tool is listed to a client without the extension")
	}
	// A 2026-07-28 client declares the extension in each request's _meta.
	for _, declare := range []bool{true, false} {
		caps := &mcp.ClientCapabilities{}
		if declare {
			caps.AddExtension(AppsExtension, map[string]any{"mimeTypes": []string{AppMIMEType}})
		}
		c := mcp.NewClient(&mcp.Implementation{Name: "stateless", Version: "1"}, &mcp.ClientOptions{Capabilities: caps})
		cs, err := c.Connect(e.ctx, &mcp.StreamableClientTransport{Endpoint: e.srv.URL + "/mcp", HTTPClient: &http.Client{Transport: bearerTransport{token: adminToken}}},
			&mcp.ClientSessionOptions{ProtocolVersion: statelessRevision})
		if err != nil {
			t.Fatal(err)
		}
		listed, _ := listAll(t, cs)
		if got := byName(listed)[toolPanelView] != nil; got != declare {
			t.Errorf("2026-07-28, extension declared %v: view tool listed %v", declare, got)
		}
		cs.Close()
	}

	t.Run("a host panel's open links its instance's view, which reads like a composed one", func(t *testing.T) {
		spec, issues := panelspec.Validate([]byte(appsSpec), &panelspec.Options{ForceOrigin: panelspec.OriginHost})
		if spec == nil {
			t.Fatal(issues)
		}
		if err := svc.Register(panel.Def{ID: "notes.board", Title: "Notes board", Description: "The team's notes.", Spec: spec}); err != nil {
			t.Fatal(err)
		}
		res := call(t, apps, "panel-open", map[string]any{"panel": "notes.board"})
		var v struct{ InstanceID string }
		if err := json.Unmarshal([]byte(text(t, res)), &v); res.IsError || err != nil {
			t.Fatalf("open: %s", text(t, res))
		}
		if m, _ := res.Meta[metaUIKey].(map[string]any); m["resourceUri"] != panelURIPrefix+v.InstanceID {
			t.Fatalf("open _meta: %#v", res.Meta)
		}
		read, err := apps.ReadResource(e.ctx, &mcp.ReadResourceParams{URI: panelURIPrefix + v.InstanceID})
		if err != nil || read.Contents[0].MIMEType != AppMIMEType {
			t.Fatalf("read: %v", err)
		}
		var sn struct{ Origin, Panel string }
		structured(t, call(t, apps, toolPanelView, map[string]any{"instanceId": v.InstanceID}), &sn)
		if sn.Origin != "host" || sn.Panel != "notes.board" {
			t.Fatalf("snapshot %+v", sn)
		}
	})

	t.Run("a panel tool's result links the instance's view", func(t *testing.T) {
		res, id := compose(t, apps)
		m, _ := res.Meta[metaUIKey].(map[string]any)
		if m["resourceUri"] != panelURIPrefix+id {
			t.Fatalf("result _meta: %#v", res.Meta)
		}
		fill := call(t, apps, "panel-read_state", map[string]any{"instanceId": id})
		if m, _ := fill.Meta[metaUIKey].(map[string]any); m["resourceUri"] != panelURIPrefix+id {
			t.Fatalf("read_state _meta: %#v", fill.Meta)
		}
	})
}

func asSlice(v any) []any { s, _ := v.([]any); return s }

func TestAppsResources(t *testing.T) {
	t.Parallel()
	e, _, _ := appsEnv(t)
	admin := e.appsClient(adminToken)
	_, id := compose(t, admin)
	uri := panelURIPrefix + id

	t.Run("listed with the MIME type and a CSP that allows no origin", func(t *testing.T) {
		res, err := admin.ListResources(e.ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]*mcp.Resource{}
		for _, r := range res.Resources {
			got[r.URI] = r
		}
		for _, u := range []string{PanelViewURI, uri} {
			r := got[u]
			if r == nil || r.MIMEType != AppMIMEType {
				t.Fatalf("%s: %+v", u, r)
			}
			checkCSP(t, r.Meta)
		}
		if got[uri].Title != "Notes" {
			t.Errorf("title %q", got[uri].Title)
		}
		tpl, err := admin.ListResourceTemplates(e.ctx, nil)
		if err != nil || len(tpl.ResourceTemplates) != 1 || tpl.ResourceTemplates[0].URITemplate != panelURIPrefix+"{instanceId}" {
			t.Fatalf("templates %+v %v", tpl, err)
		}
	})

	t.Run("read: self-contained HTML with the renderer and no spec text", func(t *testing.T) {
		for _, u := range []string{PanelViewURI, uri} {
			res, err := admin.ReadResource(e.ctx, &mcp.ReadResourceParams{URI: u})
			if err != nil {
				t.Fatal(err)
			}
			c := res.Contents[0]
			if c.URI != u || c.MIMEType != AppMIMEType || !strings.HasPrefix(c.Text, "<!doctype html>") {
				t.Fatalf("%s: %s %s %.40q", u, c.URI, c.MIMEType, c.Text)
			}
			checkCSP(t, c.Meta)
			for _, want := range []string{"function renderPanel(", `"ui/initialize"`, "switchboard_panel_view"} {
				if !strings.Contains(c.Text, want) {
					t.Errorf("%s lacks %s", u, want)
				}
			}
			// Nothing is loaded from anywhere: no src, href or url() to a
			// network origin, and no module import.
			if m := regexp.MustCompile(`(?i)<(script|link|img|iframe)[^>]+(src|href)=|@import|\bimport\s*\(|^import `).FindString(c.Text); m != "" {
				t.Errorf("%s loads something: %q", u, m)
			}
			if strings.Contains(c.Text, "stays text") {
				t.Errorf("%s carries the spec's text; a view reads it through the host", u)
			}
		}
		res, _ := admin.ReadResource(e.ctx, &mcp.ReadResourceParams{URI: uri})
		if !strings.Contains(res.Contents[0].Text, `{"instanceId":"`+id+`"`) {
			t.Error("the instance's view does not name its instance")
		}
	})

	t.Run("a panel the caller may not see reads as one that does not exist", func(t *testing.T) {
		scoped := e.appsClient("scoped")
		_, unseen := scoped.ReadResource(e.ctx, &mcp.ReadResourceParams{URI: uri})
		missingURI := panelURIPrefix + "pi_000000000000000000000000"
		_, missing := scoped.ReadResource(e.ctx, &mcp.ReadResourceParams{URI: missingURI})
		var a, b *jsonrpc.Error
		if !errors.As(unseen, &a) || !errors.As(missing, &b) {
			t.Fatalf("errors %v / %v", unseen, missing)
		}
		if a.Code != mcp.CodeResourceNotFound || a.Code != b.Code || a.Message != b.Message ||
			strings.ReplaceAll(string(a.Data), id, "X") != strings.ReplaceAll(string(b.Data), "pi_000000000000000000000000", "X") {
			t.Fatalf("unseen %+v, missing %+v", a, b)
		}
		res, err := scoped.ListResources(e.ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res.Resources {
			if r.URI == uri {
				t.Fatal("listed to a caller that may not see it")
			}
		}
		if v := call(t, scoped, toolPanelView, map[string]any{"instanceId": id}); !v.IsError || !strings.HasPrefix(text(t, v), "NOT_FOUND") {
			t.Fatalf("panel view for the scoped agent: %s", text(t, v))
		}
	})

	t.Run("the view reads its instance", func(t *testing.T) {
		res := call(t, admin, toolPanelView, map[string]any{"instanceId": id})
		var sn struct {
			InstanceID string
			Spec       struct{ Root string }
		}
		structured(t, res, &sn)
		if res.IsError || sn.InstanceID != id || sn.Spec.Root != "body" {
			t.Fatalf("%s", text(t, res))
		}
	})
}

func checkCSP(t *testing.T, meta mcp.Meta) {
	t.Helper()
	b, _ := json.Marshal(meta)
	const want = `{"ui":{"csp":{"baseUriDomains":[],"connectDomains":[],"frameDomains":[],"resourceDomains":[]},"prefersBorder":true}}`
	if string(b) != want {
		t.Errorf("_meta %s, want %s", b, want)
	}
}

// A call marked as a view's stays inside its panel: its own instance, its
// panel's tools, arguments of a sane size; anything else is refused.
func TestAppsViewCallsStayInTheirPanel(t *testing.T) {
	t.Parallel()
	e, svc, _ := appsEnv(t)
	cs := e.appsClient(adminToken)
	_, id := compose(t, cs)
	_, other := compose(t, cs, "side")
	viewCall := func(name string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		raw, _ := json.Marshal(args)
		res, err := cs.CallTool(e.ctx, &mcp.CallToolParams{Name: name, Arguments: json.RawMessage(raw), Meta: mcp.Meta{metaView: id}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	for _, c := range []struct {
		name, tool string
		args       map[string]any
		code       string
	}{
		{"another tool", "ui-noop", map[string]any{}, "FORBIDDEN"},
		{"close is not a view's", "panel-close", map[string]any{"instanceId": id}, "FORBIDDEN"},
		{"another instance", "panel-read_state", map[string]any{"instanceId": other}, "FORBIDDEN"},
		{"another instance's view", toolPanelView, map[string]any{"instanceId": other}, "FORBIDDEN"},
		{"oversized", "panel-fill", map[string]any{"instanceId": id, "values": map[string]any{"x": strings.Repeat("a", maxViewArgs)}}, "INVALID_INPUT"},
	} {
		if res := viewCall(c.tool, c.args); !res.IsError || !strings.HasPrefix(text(t, res), c.code+": a panel view may not") {
			t.Errorf("%s: %s", c.name, text(t, res))
		}
	}
	if _, err := svc.Snapshot(e.ctx, other); err != nil {
		t.Fatalf("the refused close closed something: %v", err)
	}
	if res := viewCall("panel-read_state", map[string]any{"instanceId": id}); res.IsError {
		t.Fatalf("the view's own read: %s", text(t, res))
	}
	if res := viewCall(toolPanelView, map[string]any{"instanceId": id}); res.IsError {
		t.Fatalf("the view's own snapshot: %s", text(t, res))
	}
}

package daemon_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/docexport"
	"github.com/switchboardhq/switchboard/internal/panel"
	"github.com/switchboardhq/switchboard/internal/scope"
	"github.com/switchboardhq/switchboard/panelspec"
)

// reportDef is docexport's golden report as a host panel.
func reportDef(t *testing.T) panel.Def {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "docexport", "testdata", "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	raw = bytes.Replace(raw, []byte(`"origin": "agent"`), []byte(`"origin": "host"`), 1)
	spec, issues := panelspec.Validate(raw, nil)
	if spec == nil {
		t.Fatalf("report.json: %+v", issues)
	}
	return panel.Def{ID: "report", Title: "Q3 report", Description: "The quarterly studio report.", Spec: spec}
}

// download GETs a job's file.
func (p *panelDaemon) download(t *testing.T, tok, job string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest("GET", p.srv.URL+"/api/v1/jobs/"+job+"/file", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// export runs document.export as tok and waits for its job.
func (p *panelDaemon) export(t *testing.T, tok string, input map[string]any) switchboard.Job {
	t.Helper()
	code, body := p.call(t, tok, docexport.ToolName, input)
	if code != 200 {
		t.Fatalf("document.export %v: %d %v", input, code, body)
	}
	id := body["result"].(map[string]any)["jobId"].(string)
	j, err := p.d.Jobs.Wait(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// The user exports an open document panel over HTTP: document.export is a
// job-class tool in the catalog, its job's file downloads with its type
// and name, and it is byte for byte the golden file docexport pins, each
// time. Bad input and others' jobs get their codes.
func TestHTTPDocumentExport(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newPanelDaemon(t)
	if err := p.d.RegisterPanel(ctx, reportDef(t)); err != nil {
		t.Fatal(err)
	}
	tool, err := p.d.Registry.Get(ctx, docexport.ToolName)
	if err != nil || tool.Class != switchboard.ClassJob || tool.Surface != switchboard.SurfaceAPI {
		t.Fatalf("catalog entry: %+v %v", tool, err)
	}
	id := p.open(t, mcpToken, "report")

	for _, c := range []struct {
		format, ctype, name string
	}{
		{"pdf", "application/pdf", "q3-studio-report.pdf"},
		{"docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document", "q3-studio-report.docx"},
	} {
		golden, err := os.ReadFile(filepath.Join("..", "docexport", "testdata", "report."+c.format+".golden"))
		if err != nil {
			t.Fatal(err)
		}
		var first []byte
		for range 2 {
			j := p.export(t, mcpToken, map[string]any{"panelId": id, "format": c.format})
			if j.Status != switchboard.JobSucceeded || j.Tool != docexport.ToolName {
				t.Fatalf("%s job: %+v", c.format, j)
			}
			resp, b := p.download(t, mcpToken, j.ID)
			if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != c.ctype ||
				resp.Header.Get("Content-Disposition") != `attachment; filename=`+c.name || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
				t.Fatalf("%s download: %d %v", c.format, resp.StatusCode, resp.Header)
			}
			if !bytes.Equal(b, golden) {
				t.Fatalf("%s download (%d bytes) differs from docexport/testdata/report.%s.golden (%d bytes)", c.format, len(b), c.format, len(golden))
			}
			if first != nil && !bytes.Equal(b, first) {
				t.Fatalf("%s: the second export differs from the first", c.format)
			}
			first = b
			var r docexport.Result
			if err := json.Unmarshal(j.Result, &r); err != nil || r.PanelID != id || r.Node != "report" || r.File.Size != len(b) || len(r.File.SHA256) != 64 {
				t.Fatalf("%s result: %v %+v", c.format, err, r)
			}
		}
	}

	// Bad input: refused before a job starts, or the job fails with the code.
	code, body := p.call(t, mcpToken, docexport.ToolName, map[string]any{"panelId": id, "format": "odt"})
	if code != http.StatusUnprocessableEntity || panelErrCode(body) != "SCHEMA_VIOLATION" {
		t.Fatalf("format odt: %d %v", code, body)
	}
	if j := p.export(t, mcpToken, map[string]any{"panelId": "pi_nope", "format": "pdf"}); j.Status != switchboard.JobFailed || j.Error.Code != switchboard.CodeNotFound {
		t.Fatalf("unknown panel: %+v", j)
	}
	note := p.open(t, mcpToken, "note")
	j := p.export(t, mcpToken, map[string]any{"panelId": note, "format": "pdf"})
	if j.Status != switchboard.JobFailed || j.Error.Code != switchboard.CodeInvalidInput || !strings.Contains(j.Error.Message, "no document") {
		t.Fatalf("a panel without a document: %+v", j)
	}
	// That failed job has no file: 409 with its error; an unknown job 404.
	if resp, b := p.download(t, mcpToken, j.ID); resp.StatusCode != http.StatusConflict || !strings.Contains(string(b), "INVALID_INPUT") {
		t.Fatalf("failed job's file: %d %s", resp.StatusCode, b)
	}
	if resp, _ := p.download(t, mcpToken, "job_nope"); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("unknown job's file: %d", resp.StatusCode)
	}

	// An agent sees only its own jobs' files, and its export is a job call
	// that waits for the user's approval (the job-class floor).
	planner := p.token(scope.TokenRequest{Agent: "planner"})
	user := p.export(t, mcpToken, map[string]any{"panelId": id, "format": "docx"})
	if resp, _ := p.download(t, planner, user.ID); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("an agent downloads the user's export: %d", resp.StatusCode)
	}
	b, _ := json.Marshal(map[string]any{"input": map[string]any{"panelId": id, "format": "pdf"}, "async": true})
	code, body = p.do(t, planner, "POST", "/api/v1/tools/"+docexport.ToolName+"/call", string(b))
	if code != http.StatusAccepted || body["status"] != string(switchboard.StatusAwaitingApproval) {
		t.Fatalf("agent's export: %d %v, want 202 awaiting approval", code, body)
	}
	// The job reads the panel as its caller: an agent limited to other
	// panels finds none to export.
	scoped := switchboard.WithPrincipal(ctx, switchboard.Principal{Kind: switchboard.PrincipalAgent, ID: "scoped",
		PanelScope: switchboard.PanelScope{Panels: []string{"board.*"}}})
	if _, err := docexport.Export(scoped, p.d.Panels, docexport.Input{PanelID: id, Format: docexport.FormatPDF}); switchboard.CodeOf(err) != switchboard.CodeNotFound {
		t.Fatalf("an agent scoped to board.* exports the report: %v", err)
	}
}

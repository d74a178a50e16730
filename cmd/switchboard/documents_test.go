package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
	"github.com/switchboardhq/switchboard/internal/panel"
	"github.com/switchboardhq/switchboard/panelspec"
)

// TestDocumentsExport: `switchboard documents export` starts
// document.export, waits for its job and writes the file whole, named
// after the document, byte for byte the golden file docexport pins; -o -
// writes to stdout; an existing file stays unless --force; a bad format
// is a usage error and a panel without a document fails with its code.
func TestDocumentsExport(t *testing.T) {
	ctx := context.Background()
	d, srv := newTestDaemon(t)
	raw, err := os.ReadFile(filepath.Join("..", "..", "internal", "docexport", "testdata", "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	raw = bytes.Replace(raw, []byte(`"origin": "agent"`), []byte(`"origin": "host"`), 1)
	spec, issues := panelspec.Validate(raw, nil)
	if spec == nil {
		t.Fatalf("report.json: %+v", issues)
	}
	if err := d.RegisterPanel(ctx, panel.Def{ID: "report", Title: "Q3 report", Description: "The quarterly report.", Spec: spec}); err != nil {
		t.Fatal(err)
	}
	tab, err := d.Sessions.Create(ctx, "user:7")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := d.Sessions.Attach(ctx, tab.SessionID, "")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	d.Panels.Attach(ctx, tab.SessionID)
	cl := client.New(srv.URL, testToken, nil)
	open := func(id string) string {
		resp, err := cl.CallTool(ctx, panel.ToolOpen, json.RawMessage(`{"panel": "`+id+`", "sessionId": "`+tab.SessionID+`"}`), client.CallOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var sn panel.Snapshot
		_ = json.Unmarshal(resp.Result, &sn)
		return sn.InstanceID
	}
	id := open("report")
	admin := []string{"--addr", srv.URL, "--token", testToken}
	golden, err := os.ReadFile(filepath.Join("..", "..", "internal", "docexport", "testdata", "report.docx.golden"))
	if err != nil {
		t.Fatal(err)
	}
	pdf, err := os.ReadFile(filepath.Join("..", "..", "internal", "docexport", "testdata", "report.pdf.golden"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	t.Chdir(dir) // the file is written where the command runs
	code, out, errs := run(t, append(admin, "documents", "export", id, "--format", "docx")...)
	if code != 0 || !strings.Contains(out, "wrote q3-studio-report.docx") {
		t.Fatalf("export: %d %q %q", code, out, errs)
	}
	got, err := os.ReadFile(filepath.Join(dir, "q3-studio-report.docx"))
	if err != nil || !bytes.Equal(got, golden) {
		t.Fatalf("the written file (%d bytes, %v) differs from the golden DOCX (%d bytes)", len(got), err, len(golden))
	}
	// Again: the file exists, so it is kept unless --force.
	code, _, errs = run(t, append(admin, "documents", "export", id, "--format", "docx")...)
	if code != 1 || !strings.Contains(errs, "CONFLICT") || !strings.Contains(errs, "--force") {
		t.Fatalf("existing file: %d %q", code, errs)
	}
	if code, _, errs = run(t, append(admin, "documents", "export", id, "--format", "docx", "--force")...); code != 0 {
		t.Fatalf("--force: %d %q", code, errs)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("left behind: %v", entries)
	}

	code, out, errs = run(t, append(admin, "documents", "export", id, "--format", "pdf", "-o", "-")...)
	if code != 0 || out != string(pdf) {
		t.Fatalf("-o -: %d, %d bytes (want the golden PDF's %d) %q", code, len(out), len(pdf), errs)
	}
	code, out, errs = run(t, append(admin, "--json", "documents", "export", id, "--format", "pdf", "-o", "r.pdf")...)
	var meta map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &meta) != nil || meta["path"] != "r.pdf" || meta["contentType"] != "application/pdf" || meta["size"] != float64(len(pdf)) {
		t.Fatalf("--json: %d %q %q", code, out, errs)
	}

	if code, _, errs = run(t, append(admin, "documents", "export", id, "--format", "odt")...); code != 2 || !strings.Contains(errs, "pdf or docx") {
		t.Fatalf("--format odt: %d %q", code, errs)
	}
	code, _, errs = run(t, append(admin, "documents", "export", "pi_nope", "--format", "pdf", "-o", "x.pdf")...)
	if code != 1 || !strings.Contains(errs, string(switchboard.CodeNotFound)) {
		t.Fatalf("unknown panel: %d %q", code, errs)
	}
	if _, err := os.Stat("x.pdf"); !os.IsNotExist(err) {
		t.Fatalf("a failed export wrote x.pdf: %v", err)
	}
}

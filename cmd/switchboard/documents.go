package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
	"github.com/switchboardhq/switchboard/internal/docexport"
)

// newDocuments exports document panels: document.export, its job waited
// for, its file downloaded.
func newDocuments(g *globals) *cobra.Command {
	c := &cobra.Command{Use: "documents", Short: "Export document panels as PDF or DOCX files"}
	var format, out, node string
	var timeout time.Duration
	export := &cobra.Command{
		Use:   "export PANEL_ID",
		Short: "Export an open document panel as a PDF or DOCX file",
		Long: `Export an open panel instance's document (PANEL_ID is its pi_... id, as
panel.list and the workspace digest show it) through document.export: the
call starts a job, this command waits for it and writes the file, named
after the document's title unless -o names it ("-o -" writes to stdout).
The same document always gives the same bytes. The file is written whole
or not at all; an existing file is replaced only with --force.`,
		Example: `  switchboard documents export pi_3f2a... --format pdf
  switchboard documents export pi_3f2a... --format docx -o report.docx
  switchboard documents export pi_3f2a... --format pdf -o - > report.pdf`,
		Args: exactArgs(1, "one PANEL_ID"),
		RunE: func(c *cobra.Command, args []string) error {
			if format != string(docexport.FormatPDF) && format != string(docexport.FormatDOCX) {
				return usageError{fmt.Errorf("--format must be pdf or docx, not %q", format), c.CommandPath()}
			}
			force, _ := c.Flags().GetBool("force")
			return exportDocument(c.Context(), g, docexport.Input{PanelID: args[0], Format: docexport.Format(format), Node: node}, out, force, timeout)
		},
	}
	export.Flags().StringVar(&format, "format", "pdf", "pdf or docx")
	export.Flags().StringVarP(&out, "output", "o", "", "the file to write (default: the document's file name in the current directory; - for stdout)")
	export.Flags().StringVar(&node, "node", "", "the document node, when the panel shows more than one")
	export.Flags().Bool("force", false, "replace the output file if it exists")
	export.Flags().DurationVar(&timeout, "timeout", 2*time.Minute, "how long to wait for the export")
	c.AddCommand(export)
	return c
}

func exportDocument(ctx context.Context, g *globals, in docexport.Input, out string, force bool, timeout time.Duration) error {
	cl, err := g.client()
	if err != nil {
		return err
	}
	input, _ := json.Marshal(in)
	resp, err := cl.CallTool(ctx, docexport.ToolName, input, client.CallOptions{})
	if err != nil {
		return err
	}
	var handle struct {
		JobID string `json:"jobId"`
	}
	if json.Unmarshal(resp.Result, &handle) != nil || handle.JobID == "" {
		return switchboard.Errorf(switchboard.CodeInternal, "%s answered %s without a job (invocation %s)", docexport.ToolName, resp.Status, resp.InvocationID)
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	j, err := cl.WaitJob(wctx, handle.JobID)
	if err != nil {
		fmt.Fprintf(g.stderr, "follow it with: switchboard jobs show %s\n", handle.JobID)
		return err
	}
	if j.Status != switchboard.JobSucceeded {
		if j.Error != nil {
			return j.Error
		}
		return switchboard.Errorf(switchboard.CodeInternal, "job %s ended %s", j.ID, j.Status)
	}
	d, err := cl.JobFile(ctx, j.ID)
	if err != nil {
		return err
	}
	if out == "-" {
		_, err := g.stdout.Write(d.Content)
		return err
	}
	if out == "" {
		out = filepath.Base(d.Name) // the daemon names it; never a path
	}
	if err := writeWhole(out, d.Content, force); err != nil {
		return err
	}
	if g.json {
		var r docexport.Result
		_ = json.Unmarshal(j.Result, &r)
		r.File.Content = nil
		return g.printJSON(map[string]any{"jobId": j.ID, "path": out, "panelId": r.PanelID, "node": r.Node, "format": r.Format,
			"version": r.Version, "name": r.File.Name, "contentType": r.File.ContentType, "size": r.File.Size, "sha256": r.File.SHA256})
	}
	fmt.Fprintf(g.stdout, "wrote %s (%d bytes, %s)\n", out, len(d.Content), d.ContentType)
	return nil
}

// writeWhole writes b to path through a temporary file in the same
// directory and a rename, so a failure leaves no half-written file.
func writeWhole(path string, b []byte, force bool) error {
	if _, err := os.Stat(path); err == nil && !force {
		return switchboard.Errorf(switchboard.CodeConflict, "%s exists; pass --force to replace it or -o to name another file", path)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "write %s: %v", path, err)
	}
	defer os.Remove(tmp.Name()) // after a successful rename there is nothing to remove
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return switchboard.Errorf(switchboard.CodeInternal, "write %s: %v", path, err)
	}
	if err := tmp.Close(); err != nil {
		return switchboard.Errorf(switchboard.CodeInternal, "write %s: %v", path, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return switchboard.Errorf(switchboard.CodeInternal, "write %s: %v", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return switchboard.Errorf(switchboard.CodeInternal, "write %s: %v", path, err)
	}
	return nil
}

package docexport

import (
	"context"
	"encoding/json"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/panel"
)

// ToolName is the export's catalog name (pinned in DESIGN.md).
const ToolName = "document.export"

// Panels reads an open panel instance as the caller may see it
// (*panel.Service).
type Panels interface {
	Snapshot(ctx context.Context, id string) (panel.Snapshot, error)
}

// Input is document.export's input.
type Input struct {
	PanelID string `json:"panelId,omitempty"`
	// InstanceID is the same, under the name the other panel tools use.
	InstanceID string `json:"instanceId,omitempty"`
	Format     Format `json:"format"`
	// Node names the document node when the panel has several.
	Node string `json:"node,omitempty"`
}

// Result is the job's result: what was exported and the file.
type Result struct {
	PanelID string           `json:"panelId"`
	Node    string           `json:"node"`
	Format  Format           `json:"format"`
	Version int              `json:"version"` // the instance version exported
	File    switchboard.File `json:"file"`
}

const inputSchema = `{"type": "object", "properties": {
	"panelId": {"type": "string", "minLength": 1, "maxLength": 200, "description": "the open panel instance (pi_...) that shows the document"},
	"instanceId": {"type": "string", "minLength": 1, "maxLength": 200, "description": "the same, under the name the other panel tools use"},
	"format": {"enum": ["pdf", "docx"]},
	"node": {"type": "string", "maxLength": 64, "description": "the document node, when the panel has more than one"}
}, "required": ["format"], "anyOf": [{"required": ["panelId"]}, {"required": ["instanceId"]}], "additionalProperties": false}`

// Tool is document.export: a job that renders an open panel's document
// node as a PDF or DOCX file. The job's result carries the file (Result);
// GET /api/v1/jobs/{id}/file downloads it.
func Tool(p Panels) panel.ToolFunc {
	return panel.ToolFunc{
		Tool: switchboard.Tool{
			Name: ToolName,
			Description: "Export a document panel (an open panel instance with a document node) as a PDF or DOCX file. " +
				"It runs as a job: the call returns {jobId}; the finished job's result names the file (name, contentType, size, sha256), " +
				"which the user downloads from GET /api/v1/jobs/{jobId}/file or with `switchboard documents export`. " +
				"The same document always gives the same file.",
			Summary:     "Export a document panel as PDF or DOCX (a job; download the file when it finishes)",
			InputSchema: json.RawMessage(inputSchema),
			Surface:     switchboard.SurfaceAPI,
			Class:       switchboard.ClassJob,
			CostClass:   switchboard.CostExpensive,
			UI:          &switchboard.UIMeta{DisplayGroup: "documents", Icon: "file-down"},
		},
		Func: broker.Typed(func(ctx context.Context, in Input) (Result, error) {
			return Export(ctx, p, in)
		}),
	}
}

// Export renders the document of in's panel instance, read as the caller
// may see it (NOT_FOUND outside its tab or panel scope).
func Export(ctx context.Context, p Panels, in Input) (Result, error) {
	id := in.PanelID
	if id == "" {
		id = in.InstanceID
	}
	if in.Format != FormatPDF && in.Format != FormatDOCX {
		return Result{}, switchboard.Errorf(switchboard.CodeInvalidInput, "format %q is not one of pdf, docx", in.Format)
	}
	sn, err := p.Snapshot(ctx, id)
	if err != nil {
		return Result{}, err
	}
	if sn.Spec == nil {
		return Result{}, switchboard.Errorf(switchboard.CodeInvalidInput, "panel instance %s has no spec to export", id)
	}
	doc, node, err := FromSpec(sn.Spec, in.Node)
	if err != nil {
		return Result{}, err
	}
	b, err := Render(ctx, doc, in.Format)
	if err != nil {
		return Result{}, err
	}
	title := doc.Title
	if title == "" {
		title = sn.Title
	}
	return Result{PanelID: sn.InstanceID, Node: node, Format: in.Format, Version: sn.Version,
		File: switchboard.NewFile(FileName(title, sn.Panel, in.Format), in.Format.ContentType(), b)}, nil
}

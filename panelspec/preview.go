package panelspec

import "sort"

// The preview tier (issue 18 item 6): a preview node carries runnable UI an
// agent wrote — HTML with inline CSS and JS — as data. It is the one prop
// in the catalog that may hold markup, because it is never rendered in the
// app: the renderer shows it only in a sandboxed iframe loaded from the
// separate preview origin (package preview), whose CSP forbids every
// network request. Here it is bounded (MaxPreviewCode) and left out of the
// markup check; whether a surface may show it at all is the canvas
// policy's allowCodePreview, decided by the panel service.

// TypePreview is the preview node type.
const TypePreview = "preview"

// MaxPreviewCode bounds a preview node's code in bytes.
const MaxPreviewCode = 64 << 10

// PreviewProps are a preview node's props.
type PreviewProps struct {
	Title  string `json:"title"`
	Code   string `json:"code"`
	Height int    `json:"height,omitempty"`
}

// PreviewNodes lists the ids of spec's preview nodes, sorted.
func PreviewNodes(spec *Spec) []string {
	var out []string
	for id, n := range spec.Nodes {
		if n.Type == TypePreview {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

// isPreviewCode reports whether path is /nodes/{id}/props/code of a
// preview node.
func (r *run) isPreviewCode(path []string) bool {
	if len(path) != 4 || path[0] != "nodes" || path[2] != "props" || path[3] != "code" {
		return false
	}
	i := r.index(path[1])
	return i >= 0 && r.info[i].entry != nil && !r.info[i].unknown && r.info[i].entry.typ == TypePreview
}

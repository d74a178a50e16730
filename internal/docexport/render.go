package docexport

import (
	"context"
	"slices"
	"strings"
	"unicode"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/panelspec"
)

// Format is an export file format.
type Format string

const (
	FormatPDF  Format = "pdf"
	FormatDOCX Format = "docx"
)

// MaxFileBytes bounds an exported file. A validated document stays far
// below it (the spec itself is at most 1 MiB); the bound keeps the job's
// result, which carries the file base64-encoded, under the broker's 4 MiB
// result limit.
const MaxFileBytes = 2 << 20

// ContentType is the file's media type.
func (f Format) ContentType() string {
	if f == FormatDOCX {
		return "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
	}
	return "application/pdf"
}

// Render makes the file of doc in format f.
func Render(ctx context.Context, doc Document, f Format) ([]byte, error) {
	var (
		b   []byte
		err error
	)
	switch f {
	case FormatPDF:
		b, err = PDF(ctx, doc)
	case FormatDOCX:
		b, err = DOCX(ctx, doc)
	default:
		return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "format %q is not one of pdf, docx", f)
	}
	if err != nil {
		return nil, err
	}
	if len(b) > MaxFileBytes {
		return nil, switchboard.Errorf(switchboard.CodePayloadTooLarge, "the %s file is %d bytes, over the limit of %d", f, len(b), MaxFileBytes).
			WithDetails(map[string]any{"limitBytes": MaxFileBytes})
	}
	return b, nil
}

// FromSpec finds the document node of spec to export: node when given,
// else the only document node (the root first). It returns the node's id.
func FromSpec(spec *panelspec.Spec, node string) (Document, string, error) {
	if node != "" {
		n, ok := spec.Nodes[node]
		if !ok || n.Type != panelspec.TypeDocument {
			return Document{}, "", switchboard.Errorf(switchboard.CodeInvalidInput, "the panel has no document node %q", node).
				WithDetails(map[string]any{"documents": documentNodes(spec)})
		}
		d, err := Decode(n.Props)
		return d, node, err
	}
	ids := documentNodes(spec)
	switch len(ids) {
	case 0:
		return Document{}, "", switchboard.Errorf(switchboard.CodeInvalidInput, "the panel shows no document; document.export exports panels with a %q node", panelspec.TypeDocument)
	case 1:
		d, err := Decode(spec.Nodes[ids[0]].Props)
		return d, ids[0], err
	}
	return Document{}, "", switchboard.Errorf(switchboard.CodeInvalidInput, "the panel has %d document nodes (%s); name one with node", len(ids), strings.Join(ids, ", ")).
		WithDetails(map[string]any{"documents": ids})
}

// documentNodes lists the spec's document node ids, the root first, then
// in id order.
func documentNodes(spec *panelspec.Spec) []string {
	var ids []string
	for id, n := range spec.Nodes {
		if n.Type == panelspec.TypeDocument && id != spec.Root {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	if n, ok := spec.Nodes[spec.Root]; ok && n.Type == panelspec.TypeDocument {
		ids = append([]string{spec.Root}, ids...)
	}
	return ids
}

// FileName is the exported file's name: the title (else fallback, else
// "document") reduced to lower-case ASCII letters, digits and dashes, at
// most 80 of them.
func FileName(title, fallback string, f Format) string {
	name := slug(title)
	if name == "" {
		name = slug(fallback)
	}
	if name == "" {
		name = "document"
	}
	return name + "." + string(f)
}

func slug(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if b.Len() >= 80 {
			break
		}
		switch {
		case r < 0x80 && (unicode.IsLetter(r) || unicode.IsDigit(r)):
			b.WriteRune(r)
			dash = false
		case b.Len() > 0 && !dash:
			b.WriteByte('-')
			dash = true
		}
	}
	return strings.Trim(b.String(), "-")
}

// shareWidths divides total among columns: each gets at least its least
// (its longest word), and what is left goes to the columns whose natural
// width (their longest line) is wider than that, in proportion; when
// every column fits, each is stretched in proportion to its natural width.
func shareWidths(least, natural []float64, total float64) []float64 {
	var sumLeast, sumNatural float64
	for i := range least {
		natural[i] = max(natural[i], least[i])
		sumLeast += least[i]
		sumNatural += natural[i]
	}
	w := make([]float64, len(least))
	for i := range least {
		switch {
		case sumNatural <= total:
			w[i] = natural[i] * total / sumNatural
		case sumLeast >= total:
			w[i] = least[i] * total / sumLeast
		default:
			w[i] = least[i] + (total-sumLeast)*(natural[i]-least[i])/(sumNatural-sumLeast)
		}
	}
	return w
}

package activity

import (
	"bytes"
	"context"
	"encoding/json"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/redact"
)

// Change is one changed field of a tool: its old and new value and, for
// schemas, an RFC 7386 merge patch from old to new. For a binding, From
// and To are masked views (bindingView) and Fields names what changed,
// since a rotated credential looks the same masked on both sides.
type Change struct {
	From   any             `json:"from,omitempty"`
	To     any             `json:"to,omitempty"`
	Patch  json.RawMessage `json:"patch,omitempty"`
	Fields []string        `json:"fields,omitempty"`
}

// ToolDiff compares two descriptors of one tool: what an agent relies on
// (description, summary, schemas, class, approval, the declared inverse)
// and where a call goes (the binding, masked: it may hold credentials). A
// nil side is an absent tool.
func ToolDiff(before, after *switchboard.Tool) map[string]Change {
	var b, a switchboard.Tool
	if before != nil {
		b = *before
	}
	if after != nil {
		a = *after
	}
	out := map[string]Change{}
	str := func(field, x, y string) {
		if x != y {
			out[field] = Change{From: x, To: y}
		}
	}
	str("description", b.Description, a.Description)
	str("summary", b.Summary, a.Summary)
	str("class", string(b.Class), string(a.Class))
	str("approval", string(b.Approval), string(a.Approval))
	schema := func(field string, x, y json.RawMessage) {
		if jsonEqual(x, y) {
			return
		}
		c := Change{From: rawOrNil(x), To: rawOrNil(y)}
		if len(x) > 0 && len(y) > 0 {
			if p, err := jsonpatch.CreateMergePatch(x, y); err == nil {
				c.Patch = p
			}
		}
		out[field] = c
	}
	schema("inputSchema", b.InputSchema, a.InputSchema)
	schema("outputSchema", b.OutputSchema, a.OutputSchema)
	bi, _ := json.Marshal(b.Inverse)
	ai, _ := json.Marshal(a.Inverse)
	if !bytes.Equal(bi, ai) || (b.Reversible == nil) != (a.Reversible == nil) || b.Reversible != nil && *b.Reversible != *a.Reversible {
		out["reversal"] = Change{From: map[string]any{"inverse": b.Inverse, "reversible": b.Reversible}, To: map[string]any{"inverse": a.Inverse, "reversible": a.Reversible}}
	}
	if fields := bindingFields(b.Binding, a.Binding); len(fields) > 0 {
		out["binding"] = Change{From: bindingView(b.Binding), To: bindingView(a.Binding), Fields: fields}
	}
	return out
}

func rawOrNil(r json.RawMessage) any {
	if len(bytes.TrimSpace(r)) == 0 {
		return nil
	}
	return r
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(bytes.TrimSpace(a), bytes.TrimSpace(b))
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

// RecordToolChange is the registry's audit hook (registry.Options.Audit):
// a registration or removal that changes what agents were told, or where
// a call goes (the binding), writes one ledger entry whose details carry
// the diff (rug pull). Re-registering an identical
// descriptor writes nothing. The diff is redacted by redactDiff, not by
// Append; the other details (source,
// versions) are switchboard's own and hold no secrets.
func (l *Ledger) RecordToolChange(ctx context.Context, c switchboard.ToolChange) {
	diff := ToolDiff(c.Before, c.After)
	if len(diff) == 0 {
		return
	}
	verb := VerbToolRegister
	if c.After == nil {
		verb = VerbToolUnregister
	}
	details := map[string]any{"source": c.Source, "changes": redactDiff(diff), "new": c.Before == nil}
	if c.After != nil {
		details["version"] = c.After.Version
	}
	if c.Before != nil {
		details["previousVersion"] = c.Before.Version
	}
	d, err := json.Marshal(details)
	if err != nil {
		l.log.ErrorContext(ctx, "encode tool change", "tool", c.Name, "err", err)
		return
	}
	actor := "system"
	if p, ok := switchboard.PrincipalFrom(ctx); ok {
		actor = p.String()
	}
	if err := l.appendRedacted(context.WithoutCancel(ctx), &switchboard.ActivityEntry{Actor: actor, Verb: verb, Target: c.Name, Details: d}); err != nil {
		l.log.ErrorContext(ctx, "append tool change to the ledger", "tool", c.Name, "err", err)
	}
}

// schemaFields are the changes whose values are JSON Schemas.
var schemaFields = map[string]bool{"inputSchema": true, "outputSchema": true}

// maskedFields are the changes whose values ToolDiff masked already; their
// keys are declarations (header names), so only token-looking values left
// are masked on top.
var maskedFields = map[string]bool{"binding": true}

// redactDiff masks secrets in a tool diff. A schema is a declaration: the
// names under its "properties" name fields, so a property called "secret"
// or "password" keeps its {"type": "string"}; only token-looking values
// (a literal key in a "default" or "examples") are masked. A binding was
// masked by bindingView and gets the same value-only pass. Every other
// change is redacted as any ledger detail is.
func redactDiff(diff map[string]Change) map[string]any {
	out := make(map[string]any, len(diff))
	for field, c := range diff {
		if maskedFields[field] {
			raw, err := json.Marshal(c)
			if err != nil {
				raw = json.RawMessage(`"` + redact.Redacted + `"`)
			}
			out[field] = redact.Values(raw)
			continue
		}
		if !schemaFields[field] {
			raw, err := json.Marshal(c)
			if err != nil {
				raw = json.RawMessage(`"` + redact.Redacted + `"`)
			}
			out[field] = redact.JSON(raw)
			continue
		}
		values := func(v any) any {
			if r, ok := v.(json.RawMessage); ok {
				return redact.Values(r)
			}
			return v
		}
		out[field] = Change{From: values(c.From), To: values(c.To), Patch: redact.Values(c.Patch)}
	}
	return out
}

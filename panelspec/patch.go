package panelspec

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/switchboardhq/switchboard"
)

// maxPatchOps bounds one patch; an agent that needs more should compose a
// new panel.
const maxPatchOps = 1000

// Patch applies an RFC 6902 JSON Patch to spec and validates the result
// with opts. It is atomic: if the patch is malformed, does not apply, or
// leaves a spec with any error, it returns spec itself, unchanged, with the
// issues. Issue pointers refer to the patched spec, except for problems with
// the patch document itself, which name the operation in the message.
//
// The origin and version are not patchable (a patch may not turn an agent's
// panel into the host's), and neither is the whole document at once.
func Patch(spec *Spec, patch []byte, opts *Options) (*Spec, []Issue) {
	r := newRun(opts)
	fail := func(code switchboard.Code, msg, suggestion string) (*Spec, []Issue) {
		return spec, []Issue{{Code: code, Severity: SeverityError, Message: msg, Suggestion: suggestion}}
	}
	if spec == nil {
		return fail(switchboard.CodeSpecParse, "no spec to patch", "")
	}
	if len(patch) > r.lim.MaxBytes {
		return fail(switchboard.CodeSpecBudget, fmt.Sprintf("patch is %d bytes, over the limit of %d", len(patch), r.lim.MaxBytes), "")
	}
	if !utf8.Valid(patch) {
		return fail(switchboard.CodeSpecParse, "patch is not valid UTF-8", "")
	}
	// The strict parser first: the patch library reads JSON leniently
	// (duplicate keys, lone surrogates), and a patch value becomes part of
	// the spec.
	pp, pf := parseStrict(string(patch), r.lim.MaxJSONDepth, 1<<30, r.lim.MaxBytes)
	if pf != nil {
		return fail(pf.code, "patch: "+pointerText(pf.pointer)+": "+pf.msg, "")
	}
	defer pp.release()
	ops := pp.root()
	if ops.kind() != kArr {
		return fail(switchboard.CodeSpecParse, "a patch is a JSON array of operations", `[{"op": "replace", "path": "/nodes/title/props/text", "value": "New"}]`)
	}
	if ops.len() > maxPatchOps {
		return fail(switchboard.CodeSpecBudget, fmt.Sprintf("patch has %d operations, over the limit of %d", ops.len(), maxPatchOps), "compose a new panel instead")
	}
	for i := range ops.len() {
		m := ops.at(i)
		kind, _ := m.strProp("op")
		if kind == "test" {
			continue // reads only
		}
		targets := []string{"path"}
		if kind == "move" {
			targets = append(targets, "from") // a move removes its source
		}
		for _, k := range targets {
			switch p, _ := m.strProp(k); p {
			case "":
				if m.get(k).ok() {
					return fail(switchboard.CodeSpecUnsafe, fmt.Sprintf("patch operation %d: the whole spec cannot be replaced by a patch", i), "compose a new panel instead")
				}
			case "/origin", "/v":
				return fail(switchboard.CodeSpecUnsafe, fmt.Sprintf("patch operation %d: %s cannot be patched", i, p), "")
			}
		}
	}
	decoded, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		return fail(switchboard.CodeSpecParse, "patch: "+truncate(err.Error(), 300), "")
	}
	doc, err := json.Marshal(spec)
	if err != nil {
		return fail(switchboard.CodeSpecParse, "encode spec: "+truncate(err.Error(), 300), "")
	}
	out, err := decoded.ApplyWithOptions(doc, &jsonpatch.ApplyOptions{
		AccumulatedCopySizeLimit: int64(r.lim.MaxBytes),
	})
	if err != nil {
		return fail(switchboard.CodeSpecParse, "patch does not apply: "+truncate(err.Error(), 300), "check the paths against the current spec")
	}
	vopts := Options{}
	if opts != nil {
		vopts = *opts
	}
	vopts.ForceOrigin = spec.Origin
	patched, issues := Validate(out, &vopts)
	if HasErrors(issues) {
		return spec, issues
	}
	return patched, issues
}

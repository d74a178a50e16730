package panel

import (
	"encoding/json"
	"strings"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/panelspec"
)

// The seed's source form {source, params}: the ref names a data adapter
// (when one of that name is registered) or else a read tool, and params
// become the adapter's query or the tool's input once their "$scope.*"
// and "$state.*" strings are filled. Everything downstream (loading,
// subscriptions, the data tool a mutate action calls) sees the rich form.

// isRef reports whether src is the seed form.
func isRef(src panelspec.Source) bool { return src.Kind == "" && src.Ref != "" }

// richLocked is src in the rich form without its params filled: what
// kind it resolves to and which adapter or tool it names. Caller holds
// s.mu.
func (s *Service) richLocked(src panelspec.Source) panelspec.Source {
	if !isRef(src) {
		return src
	}
	if s.adapters[src.Ref] != nil {
		return panelspec.Source{Kind: panelspec.SourceAdapter, Adapter: src.Ref, Query: src.Params, Key: src.Key}
	}
	return panelspec.Source{Kind: panelspec.SourceTool, Tool: src.Ref, Input: src.Params, Key: src.Key}
}

// rich is richLocked for callers without s.mu.
func (s *Service) rich(src panelspec.Source) panelspec.Source {
	if !isRef(src) {
		return src
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.richLocked(src)
}

// resolveRef turns a seed-form source into the rich form with its params
// filled from the panel's scope (panel.open's params) and state. A
// "$scope.x" with no x in the scope is INVALID_INPUT (the panel was opened
// without what it needs); a "$state.x" that is absent is null.
func (s *Service) resolveRef(src panelspec.Source, state any, scope map[string]any) (panelspec.Source, error) {
	if !isRef(src) {
		return src, nil
	}
	out := s.rich(src)
	if len(src.Params) == 0 {
		return out, nil
	}
	var doc any
	if err := json.Unmarshal(src.Params, &doc); err != nil {
		return panelspec.Source{}, switchboard.Errorf(switchboard.CodeInvalidInput, "source params: %v", err)
	}
	var missing []string
	var fill func(v any) any
	fill = func(v any) any {
		switch x := v.(type) {
		case string:
			if strings.HasPrefix(x, "$$") {
				return x[1:]
			}
			root, segs, ok := panelspec.ParamRef(x)
			if !ok {
				return x
			}
			var from any = state
			if root == "scope" {
				from = scope
			}
			got, found := walkSegs(from, segs)
			if !found && root == "scope" {
				missing = append(missing, x)
			}
			return got
		case map[string]any:
			for k, e := range x {
				x[k] = fill(e)
			}
		case []any:
			for i, e := range x {
				x[i] = fill(e)
			}
		}
		return v
	}
	doc = fill(doc)
	if len(missing) > 0 {
		return panelspec.Source{}, switchboard.Errorf(switchboard.CodeInvalidInput, "the panel's scope lacks %s (open it with params for them)", strings.Join(missing, ", "))
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return panelspec.Source{}, switchboard.Errorf(switchboard.CodeInvalidInput, "source params: %v", err)
	}
	if out.Kind == panelspec.SourceAdapter {
		out.Query = b
	} else {
		out.Input = b
	}
	return out, nil
}

// scopeParams lists the scope names ("$scope.entityId" → "entityId") the
// seed-form sources of spec use: a registered panel needs them as params.
func scopeParams(spec *panelspec.Spec, seen map[string]bool) {
	var scan func(v any)
	scan = func(v any) {
		switch x := v.(type) {
		case string:
			if root, segs, ok := panelspec.ParamRef(x); ok && root == "scope" && segs[0] != "" {
				seen[segs[0]] = true
			}
		case map[string]any:
			for _, e := range x {
				scan(e)
			}
		case []any:
			for _, e := range x {
				scan(e)
			}
		}
	}
	for _, src := range spec.Sources {
		var v any
		if isRef(src) && len(src.Params) > 0 && json.Unmarshal(src.Params, &v) == nil {
			scan(v)
		}
	}
}

// specState decodes a spec's state (validated JSON).
func specState(spec *panelspec.Spec) any {
	var state any
	if len(spec.State) > 0 {
		_ = json.Unmarshal(spec.State, &state)
	}
	return state
}

package panel

import (
	"bytes"
	"context"
	"encoding/json"
	"sort"
	"strconv"
	"strings"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/scope"
	"github.com/switchboardhq/switchboard/panelspec"
)

// loaded is the outcome of loading some of a spec's sources.
type loaded struct {
	data map[string]json.RawMessage
	errs map[string]*switchboard.Error
}

// load loads the sources of spec that keep says to. It does I/O and must
// be called without s.mu. A source that fails carries its error instead
// of data; the panel still opens (the renderer shows the error in place).
func (s *Service) load(ctx context.Context, spec *panelspec.Spec, params map[string]any, owner switchboard.Principal, session string, keep func(panelspec.Source) bool) loaded {
	out := loaded{data: map[string]json.RawMessage{}, errs: map[string]*switchboard.Error{}}
	ids := make([]string, 0, len(spec.Sources))
	for id, src := range spec.Sources {
		if keep == nil || keep(src) {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	var state any
	if len(spec.State) > 0 {
		_ = json.Unmarshal(spec.State, &state) // validated JSON
	}
	for _, id := range ids {
		src := spec.Sources[id]
		raw, err := s.loadOne(ctx, src, state, params, owner, session)
		if err != nil {
			out.errs[id] = switchboard.AsError(err)
			continue
		}
		out.data[id] = raw
	}
	return out
}

func (s *Service) loadOne(ctx context.Context, src panelspec.Source, state any, params map[string]any, owner switchboard.Principal, session string) (json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, resolveTimeout)
	defer cancel()
	src, err := s.resolveRef(src, state, params)
	if err != nil {
		return nil, err
	}
	switch src.Kind {
	case panelspec.SourceState:
		v, ok := pointerGet(state, src.Path)
		if !ok {
			return json.RawMessage("null"), nil
		}
		return json.Marshal(v)
	case panelspec.SourceTool:
		if s.tools != nil {
			t, err := s.tools.Get(ctx, src.Tool)
			if err != nil {
				return nil, err
			}
			if t.Class != switchboard.ClassRead {
				return nil, switchboard.Errorf(switchboard.CodeForbidden,
					"a panel source must be a read tool; %s is class %s (run it from an action instead)", t.Name, t.Class)
			}
		}
		input, err := substitute(src.Input, params)
		if err != nil {
			return nil, err
		}
		inv, err := s.caller.Call(ctx, broker.CallRequest{Tool: src.Tool, Input: input, SessionID: session, Caller: &owner})
		if err != nil {
			return nil, err
		}
		return inv.Result, nil
	case panelspec.SourceAdapter:
		a, err := s.adapter(src.Adapter)
		if err != nil {
			return nil, err
		}
		// An adapter read skips the broker, so the owner's scope is checked
		// here: an agent denied data.<adapter>.query must not read it
		// through a panel either.
		if name := AdapterToolName(src.Adapter, "query"); !scope.AllowsTool(owner, name, switchboard.ClassRead) {
			return nil, switchboard.Errorf(switchboard.CodeForbidden, "%s may not read %s (outside its scope)", owner, name)
		}
		q, err := substitute(src.Query, params)
		if err != nil {
			return nil, err
		}
		recs, err := a.Query(ctx, Scope{Principal: owner, SessionID: session}, q)
		if err != nil {
			return nil, err
		}
		if recs == nil {
			recs = []Record{}
		}
		return json.Marshal(recs)
	}
	return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "unknown source kind %q", src.Kind)
}

// subscribe watches the adapter sources of in until in closes or its spec
// is replaced; a change reloads them. Called without s.mu.
func (s *Service) subscribe(in *instance, spec *panelspec.Spec, params map[string]any, owner switchboard.Principal) context.CancelFunc {
	ctx, cancel := context.WithCancel(s.base)
	state := specState(spec)
	for id, src := range spec.Sources {
		src, err := s.resolveRef(src, state, params)
		if err != nil || src.Kind != panelspec.SourceAdapter {
			continue
		}
		a, err := s.adapter(src.Adapter)
		if err != nil {
			continue // the load reported it
		}
		q, err := substitute(src.Query, params)
		if err != nil {
			continue
		}
		if err := a.Subscribe(ctx, Scope{Principal: owner, SessionID: in.session}, q, func() { s.invalidate(in) }); err != nil {
			s.log.Warn("panel source subscription failed", "instance", in.id, "source", id, "err", err)
		}
	}
	return cancel
}

// invalidate reloads in's adapter sources soon: a reload already running
// runs once more instead of piling up. It must not block (adapters call it
// from their notification path).
func (s *Service) invalidate(in *instance) {
	s.mu.Lock()
	if in.closed {
		s.mu.Unlock()
		return
	}
	if in.refreshing {
		in.again = true
		s.mu.Unlock()
		return
	}
	in.refreshing = true
	s.mu.Unlock()
	go func() {
		for {
			s.reload(s.base, in, func(src panelspec.Source) bool { return s.rich(src).Kind == panelspec.SourceAdapter })
			s.mu.Lock()
			if !in.again || in.closed {
				in.refreshing = false
				s.mu.Unlock()
				return
			}
			in.again = false
			s.mu.Unlock()
		}
	}()
}

// reload loads the sources of in that keep selects and pushes the result.
func (s *Service) reload(ctx context.Context, in *instance, keep func(panelspec.Source) bool) {
	s.mu.Lock()
	if in.closed {
		s.mu.Unlock()
		return
	}
	spec, params, owner, sv := in.spec, in.params, in.owner, in.specVersion
	s.mu.Unlock()
	l := s.load(ctx, spec, params, owner, in.session, keep)
	if len(l.data)+len(l.errs) == 0 {
		return
	}
	s.mu.Lock()
	if in.closed || in.specVersion != sv { // patched meanwhile; the patch loaded its own
		s.mu.Unlock()
		return
	}
	in.apply(l)
	in.syncValues()
	in.version++
	sn := in.snapshot()
	s.mu.Unlock()
	_ = s.changed(in, EventUpdate, sn) // a stale copy is dropped and logged
}

// apply stores loaded data and errors. Caller holds s.mu.
func (in *instance) apply(l loaded) {
	for k, v := range l.data {
		in.data[k] = v
		delete(in.errs, k)
	}
	for k, e := range l.errs {
		in.errs[k] = e
		delete(in.data, k)
	}
}

// push sends an event to the instance's tab. A tab that is not connected
// misses it; the renderer asks for every snapshot when it (re)mounts.
func (s *Service) push(kind string, sn Snapshot) {
	b, err := json.Marshal(s.withLease(sn))
	if err != nil {
		s.log.Error("encode panel snapshot", "instance", sn.InstanceID, "err", err)
		return
	}
	s.send(sn.SessionID, kind, b)
}

func (s *Service) send(session, kind string, data []byte) {
	ctx, cancel := context.WithTimeout(s.base, resolveTimeout)
	defer cancel()
	if err := s.tabs.SendHere(ctx, session, kind, data); err != nil {
		s.log.Debug("panel event not delivered", "session", session, "kind", kind, "err", err)
	}
}

// recordOf is the record a form binds to: the object itself, or the first
// record of an array.
func recordOf(raw json.RawMessage) any {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil
	}
	if arr, ok := v.([]any); ok {
		if len(arr) == 0 {
			return nil
		}
		return arr[0]
	}
	return v
}

// walk follows a field's dot path ("address.city", "items.0.qty").
func walk(v any, path string) (any, bool) { return walkSegs(v, strings.Split(path, ".")) }

// walkSegs follows path segments through decoded JSON. It reads own
// members only (a map lookup), so prototype keys mean nothing here.
func walkSegs(v any, segs []string) (any, bool) {
	for _, seg := range segs {
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[seg]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// nest turns path → value into a nested object ({"address.city": "x"} →
// {"address": {"city": "x"}}); numeric segments stay object keys.
func nest(values map[string]any) map[string]any {
	out := map[string]any{}
	for p, v := range values {
		segs := strings.Split(p, ".")
		m := out
		for _, seg := range segs[:len(segs)-1] {
			next, ok := m[seg].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[seg] = next
			}
			m = next
		}
		m[segs[len(segs)-1]] = v
	}
	return out
}

// pointerGet resolves an RFC 6901 pointer in a decoded document.
func pointerGet(doc any, ptr string) (any, bool) {
	if ptr == "" {
		return doc, true
	}
	if !strings.HasPrefix(ptr, "/") {
		return nil, false
	}
	v := doc
	for tok := range strings.SplitSeq(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[tok]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// paramRef reports whether v is a {"$param": "name"} placeholder.
func paramRef(v any) (string, bool) {
	m, ok := v.(map[string]any)
	if !ok || len(m) != 1 {
		return "", false
	}
	name, ok := m["$param"].(string)
	return name, ok
}

// substitute replaces every {"$param": "name"} in raw with params[name]:
// JSON values, never text, so a parameter cannot change the shape of a
// query. A missing parameter is INVALID_INPUT.
func substitute(raw json.RawMessage, params map[string]any) (json.RawMessage, error) {
	if len(bytes.TrimSpace(raw)) == 0 || !bytes.Contains(raw, []byte(`"$param"`)) {
		return raw, nil
	}
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "source parameters: %v", err)
	}
	var missing []string
	var fill func(v any) any
	fill = func(v any) any {
		if name, ok := paramRef(v); ok {
			p, ok := params[name]
			if !ok {
				missing = append(missing, name)
			}
			return p
		}
		switch x := v.(type) {
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
		sort.Strings(missing)
		return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "missing panel params: %s", strings.Join(missing, ", "))
	}
	return json.Marshal(doc)
}

// specParams lists the $param names the sources of spec use.
func specParams(spec *panelspec.Spec) []string {
	seen := map[string]bool{}
	var scan func(v any)
	scan = func(v any) {
		if name, ok := paramRef(v); ok {
			seen[name] = true
			return
		}
		switch x := v.(type) {
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
	scopeParams(spec, seen)
	for _, src := range spec.Sources {
		for _, raw := range []json.RawMessage{src.Query, src.Input} {
			var v any
			if len(raw) > 0 && json.Unmarshal(raw, &v) == nil {
				scan(v)
			}
		}
	}
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

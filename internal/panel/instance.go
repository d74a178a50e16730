package panel

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"sort"
	"sync"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/panelspec"
)

// Events pushed to a tab on its session stream.
const (
	EventOpen   = "panel.open"   // data: Snapshot
	EventUpdate = "panel.update" // data: Snapshot (a newer Version replaces an older one)
	EventClose  = "panel.close"  // data: {"instanceId": "..."}
)

// Action statuses (panel.run_action).
const (
	StatusOK              = "ok"
	StatusPendingApproval = "pending_approval"
	StatusRejectedByUser  = "rejected_by_user"
	StatusError           = "error"
)

// tabState is one browser session's panels. Guarded by Service.mu.
type tabState struct {
	id        string
	instances map[string]*instance
	order     []string // instance ids, oldest first
	// host is set once a renderer in the tab asked for its panels: only
	// such tabs are chosen when a call names no session.
	host    bool
	unwatch func()
	// composeFailures counts refused composes in a row per composer: the
	// second one in a row gets the fallback card (one repair round).
	composeFailures map[string]int
}

// closeLocked marks the tab's instances closed and returns what must run
// once s.mu is released: the subscriptions' cancels and the unwatch.
// Caller holds s.mu.
func (t *tabState) closeLocked() func() {
	var cancels []func()
	for _, in := range t.instances {
		in.closed = true
		if in.cancelSubs != nil {
			cancels = append(cancels, in.cancelSubs)
		}
	}
	unwatch := t.unwatch
	return func() {
		for _, c := range cancels {
			c()
		}
		if unwatch != nil {
			unwatch()
		}
	}
}

// instance is one panel open in a tab. Guarded by Service.mu.
type instance struct {
	id, session string
	panelID     string // "" for a composed panel
	title       string
	slot        string
	spec        *panelspec.Spec
	specVersion int
	version     int
	params      map[string]any
	// owner opened or composed the instance. Sources load with its scope,
	// and the actions of an agent-composed panel run as it.
	owner switchboard.Principal
	forms []form
	// pinned: the user (or autoPin) kept this agent panel; an unpinned
	// one is a draft the composer's next compose in its slot replaces.
	pinned bool
	// previews maps preview node ids to their URLs on the preview origin.
	previews map[string]string

	data    map[string]json.RawMessage // source → loaded data
	errs    map[string]*switchboard.Error
	values  map[string]map[string]any  // source → field path → value
	dirty   map[string]map[string]bool // edited by the user, unsaved
	filled  map[string]map[string]bool // filled by an agent, unsaved
	actions map[string]ActionState

	// seq orders the tab's instances in the store; stored is the version
	// of the store's copy this one was last written as or read from (0:
	// not stored yet); wmu serializes its writes (shared.go).
	seq    int64
	stored int64
	wmu    sync.Mutex
	// detached: read from the store for a caller on a replica that does
	// not hold the tab; never changed here. storedLease is its lease.
	detached    bool
	storedLease *Lease

	cancelSubs context.CancelFunc // ends the adapter subscriptions
	refreshing bool
	again      bool
	closed     bool
}

// form is one field-form of an instance's spec.
type form struct {
	node   string
	bind   string
	submit string
	fields []panelspec.FormField
}

// release closes in. Caller holds s.mu (or in is not shared yet).
func (in *instance) release() {
	in.closed = true
	if in.cancelSubs != nil {
		in.cancelSubs()
	}
}

// ActionState is the last outcome of one action of an instance.
type ActionState struct {
	Status       string             `json:"status"`
	InvocationID string             `json:"invocationId,omitempty"`
	Tool         string             `json:"tool,omitempty"`
	Error        *switchboard.Error `json:"error,omitempty"`
}

// Snapshot is an instance as a tab renders it and agents inspect it.
type Snapshot struct {
	InstanceID  string                        `json:"instanceId"`
	SessionID   string                        `json:"sessionId"`
	Panel       string                        `json:"panel,omitempty"`
	Title       string                        `json:"title,omitempty"`
	Origin      string                        `json:"origin"`
	Slot        string                        `json:"slot"`
	Version     int                           `json:"version"`
	SpecVersion int                           `json:"specVersion"`
	Spec        *panelspec.Spec               `json:"spec"`
	Data        map[string]json.RawMessage    `json:"data,omitempty"`
	Errors      map[string]*switchboard.Error `json:"errors,omitempty"`
	Values      map[string]map[string]any     `json:"values"`
	Dirty       map[string][]string           `json:"dirty,omitempty"`
	Filled      map[string][]string           `json:"filled,omitempty"`
	Actions     map[string]ActionState        `json:"actions,omitempty"`
	// ComposedBy is the principal that composed an agent panel
	// ("agent:assistant", "agent:planner"): the renderer names it, so the
	// user sees which agent made what.
	ComposedBy string `json:"composedBy,omitempty"`
	// Lease is the agent editing the panel now, if any (the renderer shows
	// who; see Lease).
	Lease *Lease `json:"lease,omitempty"`
	// Pinned marks an agent panel the user (or the canvas policy's
	// autoPin) kept; an agent panel without it is a draft.
	Pinned bool `json:"pinned,omitempty"`
	// Previews are the URLs of its preview nodes on the sandboxed preview
	// origin, by node id; a preview node without one is not shown.
	Previews map[string]string `json:"previews,omitempty"`
}

// snapshot renders in. Caller holds s.mu. Maps are copied: the snapshot is
// encoded after the lock is released.
func (in *instance) snapshot() Snapshot {
	sn := Snapshot{
		InstanceID: in.id, SessionID: in.session, Panel: in.panelID, Title: in.title, Slot: in.slot,
		Origin: in.spec.Origin, Version: in.version, SpecVersion: in.specVersion, Spec: in.spec,
		Values: map[string]map[string]any{}, Pinned: in.pinned && in.panelID == "",
	}
	if in.spec.Origin == panelspec.OriginAgent && in.owner.ID != "" {
		sn.ComposedBy = in.owner.String()
	}
	if len(in.previews) > 0 {
		sn.Previews = make(map[string]string, len(in.previews))
		for k, v := range in.previews {
			sn.Previews[k] = v
		}
	}
	if len(in.data) > 0 {
		sn.Data = make(map[string]json.RawMessage, len(in.data))
		for k, v := range in.data {
			sn.Data[k] = v
		}
	}
	if len(in.errs) > 0 {
		sn.Errors = make(map[string]*switchboard.Error, len(in.errs))
		for k, v := range in.errs {
			sn.Errors[k] = v
		}
	}
	for src, vals := range in.values {
		m := make(map[string]any, len(vals))
		for p, v := range vals {
			m[p] = v
		}
		sn.Values[src] = m
	}
	sn.Dirty, sn.Filled = pathLists(in.dirty), pathLists(in.filled)
	if len(in.actions) > 0 {
		sn.Actions = make(map[string]ActionState, len(in.actions))
		for k, v := range in.actions {
			sn.Actions[k] = v
		}
	}
	return sn
}

// Summary is an instance as panel.list shows it: without spec and data.
type Summary struct {
	InstanceID string              `json:"instanceId"`
	SessionID  string              `json:"sessionId"`
	Panel      string              `json:"panel,omitempty"`
	Title      string              `json:"title,omitempty"`
	Origin     string              `json:"origin"`
	Slot       string              `json:"slot"`
	Version    int                 `json:"version"`
	Dirty      map[string][]string `json:"dirty,omitempty"`
	Filled     map[string][]string `json:"filled,omitempty"`
	// Unsaved counts the fields edited or filled and not yet saved.
	Unsaved int                    `json:"unsaved"`
	Actions map[string]ActionState `json:"actions,omitempty"`
	// Lease is the agent editing the panel now, if any.
	Lease *Lease `json:"lease,omitempty"`
	// Pinned: an agent panel the user kept (see Snapshot.Pinned).
	Pinned bool `json:"pinned,omitempty"`
}

func (in *instance) summary() Summary {
	sn := in.snapshot()
	n := 0
	for _, l := range sn.Dirty {
		n += len(l)
	}
	for src, l := range sn.Filled {
		for _, p := range l {
			if !in.dirty[src][p] {
				n++
			}
		}
	}
	return Summary{InstanceID: sn.InstanceID, SessionID: sn.SessionID, Panel: sn.Panel, Title: sn.Title,
		Origin: sn.Origin, Slot: sn.Slot, Version: sn.Version, Dirty: sn.Dirty, Filled: sn.Filled, Unsaved: n, Actions: sn.Actions, Pinned: sn.Pinned}
}

func pathLists(m map[string]map[string]bool) map[string][]string {
	var out map[string][]string
	for src, set := range m {
		if len(set) == 0 {
			continue
		}
		if out == nil {
			out = map[string][]string{}
		}
		l := make([]string, 0, len(set))
		for p := range set {
			l = append(l, p)
		}
		sort.Strings(l)
		out[src] = l
	}
	return out
}

// formsOf lists the field-forms of spec in node-id order (Validate has
// checked their props, so decoding cannot fail on a valid spec).
func formsOf(spec *panelspec.Spec) []form {
	ids := make([]string, 0, len(spec.Nodes))
	for id, n := range spec.Nodes {
		if n.Type == panelspec.TypeFieldForm {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	out := make([]form, 0, len(ids))
	for _, id := range ids {
		var p panelspec.FormProps
		if err := json.Unmarshal(spec.Nodes[id].Props, &p); err != nil {
			continue
		}
		out = append(out, form{node: id, bind: p.Bind, submit: p.Submit, fields: p.Fields})
	}
	return out
}

// newInstance builds an instance of spec (already validated) for a tab.
func newInstance(session, panelID, title, slot string, spec *panelspec.Spec, params map[string]any, owner switchboard.Principal) *instance {
	if title == "" {
		title = specTitle(spec)
	}
	return &instance{
		id: "pi_" + randomHex(12), session: session, seq: time.Now().UnixNano(), panelID: panelID, title: title, slot: slot,
		spec: spec, specVersion: 1, version: 1, params: params, owner: owner, forms: formsOf(spec),
		data: map[string]json.RawMessage{}, errs: map[string]*switchboard.Error{},
		values: map[string]map[string]any{}, dirty: map[string]map[string]bool{},
		filled: map[string]map[string]bool{}, actions: map[string]ActionState{},
	}
}

// specTitle is the root panel-body's title, if any.
func specTitle(spec *panelspec.Spec) string {
	n, ok := spec.Nodes[spec.Root]
	if !ok || n.Type != panelspec.TypePanelBody {
		return ""
	}
	var p panelspec.BodyProps
	_ = json.Unmarshal(n.Props, &p)
	return p.Title
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// setPath records one value as pending in set (dirty or filled).
func mark(set map[string]map[string]bool, src, path string) {
	if set[src] == nil {
		set[src] = map[string]bool{}
	}
	set[src][path] = true
}

// pending reports whether a field holds an unsaved edit or fill, which a
// data refresh must not overwrite.
func (in *instance) pending(src, path string) bool {
	return in.dirty[src][path] || in.filled[src][path]
}

// syncValues sets every field without a pending value from its source's
// loaded record. Caller holds s.mu.
func (in *instance) syncValues() {
	for _, f := range in.forms {
		rec := recordOf(in.data[f.bind])
		if in.values[f.bind] == nil {
			in.values[f.bind] = map[string]any{}
		}
		for _, fld := range f.fields {
			if in.pending(f.bind, fld.Path) {
				continue
			}
			if v, ok := walk(rec, fld.Path); ok {
				in.values[f.bind][fld.Path] = v
			} else {
				delete(in.values[f.bind], fld.Path)
			}
		}
	}
}

// clearPending forgets the unsaved marks of src after a save.
func (in *instance) clearPending(src string) {
	delete(in.dirty, src)
	delete(in.filled, src)
}

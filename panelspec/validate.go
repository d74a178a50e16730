package panelspec

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/switchboardhq/switchboard"
)

// Default limits. The node, depth and string budgets are part of the
// contract (DESIGN.md); the byte and nesting limits bound the parser.
const (
	DefaultMaxBytes     = 1 << 20 // whole spec, before parsing
	DefaultMaxNodes     = 200
	DefaultMaxDepth     = 12 // node levels, root is level 1
	DefaultMaxString    = 8 << 10
	DefaultMaxDataURL   = 256 << 10 // a data: image in image.src
	DefaultMaxJSONDepth = 64        // JSON nesting, any value
	DefaultMaxIssues    = 100
)

// Limits bound what Validate accepts. Zero fields take the defaults.
type Limits struct {
	MaxBytes     int
	MaxNodes     int
	MaxDepth     int
	MaxString    int
	MaxDataURL   int
	MaxJSONDepth int
	// MaxIssues caps the issue list; the rest are summarised in one issue.
	MaxIssues int
}

func (l Limits) withDefaults() Limits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.MaxBytes, DefaultMaxBytes)
	def(&l.MaxNodes, DefaultMaxNodes)
	def(&l.MaxDepth, DefaultMaxDepth)
	def(&l.MaxString, DefaultMaxString)
	def(&l.MaxDataURL, DefaultMaxDataURL)
	def(&l.MaxJSONDepth, DefaultMaxJSONDepth)
	def(&l.MaxIssues, DefaultMaxIssues)
	return l
}

// Options configure Validate. A nil *Options means the built-in catalog and
// the default limits.
type Options struct {
	// Catalog holds the node types; nil means the built-in types only.
	Catalog *Catalog
	Limits  Limits
	// ForceOrigin, when set, replaces the spec's origin whatever it says
	// (panel.compose forces OriginAgent so an agent cannot pass its panel
	// off as the host's).
	ForceOrigin string
	// ToolExists, when set, is asked whether a tool named by an action or a
	// source is registered.
	ToolExists func(name string) bool
	// SourceSchema, when set, is asked for the record schema of what a
	// seed-form source names (an adapter or read tool) when the source
	// declares none; nil means unknown.
	SourceSchema func(ref string) json.RawMessage
}

// Validate parses raw as a Panel Spec and checks it. The stages run in this
// order, each adding to one issue list: parse and migrate (SPEC_PARSE, or
// SPEC_BUDGET for input too large or too deep to parse), catalog
// membership (SPEC_UNKNOWN_TYPE, a warning: the node becomes a
// placeholder), props (SPEC_PROPS), action and source resolution
// (SPEC_ACTION), budgets (SPEC_BUDGET) and sanitization (SPEC_UNSAFE).
// Only a parse failure stops early; otherwise every issue is reported at
// once. The spec is returned only when no issue is an error; warnings may
// accompany it.
func Validate(raw []byte, opts *Options) (*Spec, []Issue) {
	r := newRun(opts)
	if !r.parse(raw) {
		return nil, r.finish()
	}
	defer r.parsed.release() // the value tree is pooled; the spec holds none of it
	r.catalogStage()
	r.propsStage()
	r.resolveStage()
	r.budgetStage()
	r.sanitizeStage()
	issues := r.finish()
	if HasErrors(issues) {
		return nil, issues
	}
	return r.spec, issues
}

// nodeInfo is what the stages know about one node.
type nodeInfo struct {
	props   val    // as parsed (before placeholders); absent when none
	entry   *entry // catalog entry (the placeholder's for unknown types)
	broken  bool   // the envelope did not decode
	unknown bool   // turned into a placeholder
}

// index returns the position of node id in ids, or -1.
func (r *run) index(id string) int {
	i := sort.SearchStrings(r.ids, id)
	if i < len(r.ids) && r.ids[i] == id {
		return i
	}
	return -1
}

// run is the state of one Validate call.
type run struct {
	lim    Limits
	cat    *Catalog
	opts   Options
	doc    val     // the whole document, migrated
	parsed *parsed // what the parser recorded about doc
	spec   *Spec
	ids    []string   // node ids, sorted
	info   []nodeInfo // per node, in the order of ids
	issues []Issue
	// childBuf backs the Children slices of the spec's nodes.
	childBuf []string
	// kept backs the raw JSON the spec keeps verbatim (see keep).
	kept []byte
}

func newRun(opts *Options) *run {
	r := &run{}
	if opts != nil {
		r.opts = *opts
	}
	r.lim = r.opts.Limits.withDefaults()
	r.cat = r.opts.Catalog
	if r.cat == nil {
		r.cat = defaultCatalog()
	}
	return r
}

func (r *run) add(code switchboard.Code, nodeID, pointer, msg, suggestion string) {
	r.issues = append(r.issues, Issue{
		Code: code, Severity: SeverityError, NodeID: nodeID, Pointer: pointer,
		Message: msg, Suggestion: suggestion,
	})
}

func (r *run) warn(code switchboard.Code, nodeID, pointer, msg, suggestion string) {
	r.issues = append(r.issues, Issue{
		Code: code, Severity: SeverityWarning, NodeID: nodeID, Pointer: pointer,
		Message: msg, Suggestion: suggestion,
	})
}

// finish drops issues that only restate a more specific one and caps the
// list. A prop that is both "not in the schema" and unsafe (say "style")
// is reported once, as SPEC_UNSAFE; a string that is both over the
// schema's maxLength and over the string budget, once, as SPEC_BUDGET.
func (r *run) finish() []Issue {
	if len(r.issues) == 0 {
		return nil
	}
	strong := map[string]bool{}
	for _, is := range r.issues {
		if is.Code == switchboard.CodeSpecUnsafe || is.Code == switchboard.CodeSpecBudget {
			strong[is.Pointer] = true
		}
	}
	out := r.issues[:0]
	for _, is := range r.issues {
		if (is.Code == switchboard.CodeSpecProps || is.Code == switchboard.CodeSpecParse) && strong[is.Pointer] {
			continue
		}
		out = append(out, is)
	}
	if len(out) > r.lim.MaxIssues {
		more := len(out) - r.lim.MaxIssues + 1
		sev := SeverityWarning
		if HasErrors(out[r.lim.MaxIssues-1:]) {
			sev = SeverityError
		}
		out = append(out[:r.lim.MaxIssues-1], Issue{
			Code: switchboard.CodeSpecBudget, Severity: sev, Pointer: "",
			Message:    fmt.Sprintf("%d more issues not shown", more),
			Suggestion: "fix the issues above and validate again",
		})
	}
	return out
}

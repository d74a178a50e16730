package panelspec

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/switchboardhq/switchboard"
)

// Built-in node types.
const (
	TypePanelBody   = "panel-body"
	TypeStack       = "stack"
	TypeRow         = "row"
	TypeColumn      = "column"
	TypeHeading     = "heading"
	TypeText        = "text"
	TypeFieldForm   = "field-form"
	TypeButton      = "button"
	TypeTable       = "table"
	TypeList        = "list"
	TypeImage       = "image"
	TypeLink        = "link"
	TypeCallout     = "callout"
	TypeTabs        = "tabs"
	TypePlaceholder = "placeholder"
)

// containers may have children; every other built-in type is a leaf.
// Placeholders keep whatever children the unknown node had.
var containers = map[string]bool{
	TypePanelBody: true, TypeStack: true, TypeRow: true, TypeColumn: true,
	TypeTabs: true, TypePlaceholder: true,
}

//go:embed schemas/*.json
var builtinSchemas embed.FS

// Catalog is the set of node types a spec may use, each with the JSON
// Schema of its props. NewCatalog starts with the built-in types; a host
// adds its own with Register. A Catalog is safe for concurrent use, and
// lookups never block: Register publishes a new copy of the type map.
type Catalog struct {
	mu      sync.Mutex // serialises Register
	entries atomic.Pointer[map[string]*entry]
}

// entry is one compiled, immutable catalog type.
type entry struct {
	typ       string
	raw       json.RawMessage
	schema    *jsonschema.Schema
	fast      *fastSchema       // nil: always use schema
	doc       any               // the schema parsed, for suggestions
	propNames []string          // top-level prop names, sorted
	refs      map[string]string // top-level prop → "action" | "source"
	refNames  []string          // the keys of refs, sorted
	urls      map[string]string // top-level prop → "link" | "image"
	children  bool
}

// NewCatalog returns a catalog holding the built-in types.
func NewCatalog() *Catalog {
	c := &Catalog{}
	m := make(map[string]*entry, len(builtins()))
	for k, e := range builtins() {
		m[k] = e
	}
	c.entries.Store(&m)
	return c
}

// defaultCatalog serves Validate calls that name no catalog. It is never
// handed out, so nobody can Register into it.
var defaultCatalog = sync.OnceValue(NewCatalog)

var builtins = sync.OnceValue(func() map[string]*entry {
	files, err := builtinSchemas.ReadDir("schemas")
	if err != nil {
		panic(err)
	}
	m := make(map[string]*entry, len(files))
	for _, f := range files {
		raw, err := builtinSchemas.ReadFile("schemas/" + f.Name())
		if err != nil {
			panic(err)
		}
		typ := strings.TrimSuffix(f.Name(), path.Ext(f.Name()))
		e, err := compileEntry(typ, raw, containers[typ])
		if err != nil {
			panic(fmt.Sprintf("panel: built-in schema %s: %v", typ, err))
		}
		m[typ] = e
	}
	return m
})

var typeName = regexp.MustCompile(`^[a-z][a-z0-9]*([.-][a-z0-9]+)*$`)

// Register adds a host-defined node type whose props must satisfy
// propsSchema (a JSON Schema, draft 2020-12 unless it says otherwise, that
// must describe an object). Custom types may have children. A string prop
// whose schema carries "x-ref": "action" or "source" must name a declared
// action or source; "x-url": true (or "image") marks a URL prop for the
// sanitizer, as do prop names href, src, url and names ending in Url, Href
// or Src. Registering a built-in or already registered type is CONFLICT; a
// bad name or schema is INVALID_INPUT.
func (c *Catalog) Register(typ string, propsSchema json.RawMessage) error {
	if len(typ) > 64 || !typeName.MatchString(typ) {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "register panel type %q: name must match %s", typ, typeName)
	}
	e, err := compileEntry(typ, propsSchema, true)
	if err != nil {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "register panel type %q: %w", typ, err)
	}
	if obj, _ := e.doc.(map[string]any); obj == nil || obj["type"] != "object" {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "register panel type %q: props schema must have \"type\": \"object\"", typ)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	old := *c.entries.Load()
	if _, dup := old[typ]; dup {
		return switchboard.Errorf(switchboard.CodeConflict, "register panel type %q: already in the catalog", typ)
	}
	m := make(map[string]*entry, len(old)+1)
	for k, v := range old {
		m[k] = v
	}
	m[typ] = e
	c.entries.Store(&m)
	return nil
}

// Types lists the catalog's type names, sorted.
func (c *Catalog) Types() []string { return sortedKeys(*c.entries.Load()) }

// Schema returns the props schema of typ as registered.
func (c *Catalog) Schema(typ string) (json.RawMessage, bool) {
	e := c.lookup(typ)
	if e == nil {
		return nil, false
	}
	return e.raw, true
}

func (c *Catalog) lookup(typ string) *entry { return (*c.entries.Load())[typ] }

// noLoader refuses every external $ref: a schema can never make the daemon
// read a file or fetch a URL.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external schema reference %q is not allowed", url)
}

func compileEntry(typ string, raw []byte, children bool) (*entry, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("parse schema: %w", err)
	}
	url := "mem://panel/" + typ + ".json"
	comp := jsonschema.NewCompiler()
	comp.DefaultDraft(jsonschema.Draft2020)
	comp.UseLoader(noLoader{})
	if err := comp.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("add schema: %w", err)
	}
	sch, err := comp.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("compile schema: %w", err)
	}
	// The fast checker and the suggestion lookups read the schema with
	// float64 numbers, like the values the strict parser produces.
	var plain any
	if err := json.Unmarshal(raw, &plain); err != nil {
		return nil, fmt.Errorf("parse schema: %w", err)
	}
	e := &entry{
		typ: typ, raw: append(json.RawMessage(nil), raw...), schema: sch,
		fast: compileFast(plain), doc: plain, children: children,
		refs: map[string]string{}, urls: map[string]string{},
	}
	if obj, ok := plain.(map[string]any); ok {
		props, _ := obj["properties"].(map[string]any)
		for name, sub := range props {
			e.propNames = append(e.propNames, name)
			s, _ := sub.(map[string]any)
			switch ref := s["x-ref"]; ref {
			case nil:
			case "action", "source":
				e.refs[name] = ref.(string)
				e.refNames = append(e.refNames, name)
			default:
				return nil, errors.New(`"x-ref" must be "action" or "source"`)
			}
			switch u := s["x-url"]; u {
			case nil, false:
			case true:
				e.urls[name] = "link"
			case "image":
				e.urls[name] = "image"
			default:
				return nil, errors.New(`"x-url" must be true or "image"`)
			}
		}
		sort.Strings(e.propNames)
		sort.Strings(e.refNames)
	}
	return e, nil
}

// check validates props against the entry's schema: the fast subset check
// first, the full validator for the detailed errors.
func (e *entry) check(props val) error {
	if e.fast != nil && e.fast.valid(props) {
		return nil
	}
	return e.schema.Validate(props.toAny())
}

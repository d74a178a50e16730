package panelspec

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/switchboardhq/switchboard"
)

const chartSchema = `{
	"type": "object",
	"additionalProperties": false,
	"required": ["series"],
	"properties": {
		"series": {"type": "array", "items": {"type": "number"}, "maxItems": 100},
		"title": {"type": "string", "maxLength": 100},
		"detailsUrl": {"type": "string"},
		"onSelect": {"type": "string", "x-ref": "action"}
	}
}`

func TestCatalogBuiltins(t *testing.T) {
	t.Parallel()
	c := NewCatalog()
	want := []string{TypeButton, TypeCallout, TypeChart, TypeColumn, TypeDocument, TypeFieldForm, TypeHeading, TypeImage, TypeLink, TypeList,
		TypeMetric, TypePanelBody, TypePlaceholder, TypePreview, TypeProgress, TypeRow, TypeStack, TypeTable, TypeTabs, TypeText}
	got := c.Types()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("types = %v", got)
	}
	for _, typ := range got {
		raw, ok := c.Schema(typ)
		if !ok || !json.Valid(raw) {
			t.Errorf("%s: no schema", typ)
		}
		// A document's nested lists need $ref, outside the subset: it is
		// checked by jsonschema/v6 alone (one node per panel, so the cost
		// stays small).
		if builtins()[typ].fast == nil && typ != TypeDocument {
			t.Errorf("%s: the built-in schema leaves the fast checker's subset", typ)
		}
	}
	// The pinned prop names clients rely on.
	for typ, props := range map[string][]string{
		TypeHeading: {"level", "text"}, TypeText: {"text"}, TypeLink: {"href", "label"}, TypeImage: {"alt", "src"},
		TypeButton: {"action", "label"}, TypeFieldForm: {"bind", "fields"},
	} {
		e := builtins()[typ]
		for _, p := range props {
			if !contains(e.propNames, p) {
				t.Errorf("%s lacks the pinned prop %q", typ, p)
			}
		}
	}
}

func TestCatalogRegister(t *testing.T) {
	t.Parallel()
	c := NewCatalog()
	if err := c.Register("acme.chart", json.RawMessage(chartSchema)); err != nil {
		t.Fatal(err)
	}
	opts := &Options{Catalog: c}
	ok := mk(`"c":{"type":"acme.chart","props":{"series":[1,2],"title":"Sales","detailsUrl":"/sales","onSelect":"drill"}}`,
		`"sources":{"s":{"kind":"state"}}`, `"actions":{"drill":{"kind":"refresh","source":"s"}}`)
	if spec, issues := Validate([]byte(ok), opts); spec == nil || len(issues) > 0 {
		t.Fatalf("custom node refused:\n%s", dump(issues))
	}
	// The built-in catalog does not know the type: a placeholder, whose
	// props get the conservative checks (onSelect looks like a handler).
	_, issues := Validate([]byte(ok), nil)
	checkIssues(t, issues, []want{w(cUnknown, "/nodes/c/type"), e(cUnsafe, "/nodes/c/props/onSelect")})
	runCases(t, []vcase{
		{name: "custom props", opts: opts, spec: mk(`"c":{"type":"acme.chart","props":{"series":["x"],"titel":"y"}}`),
			want: []want{e(cProps, "/nodes/c/props/series/0"), e(cProps, "/nodes/c/props/titel", `"title"`)}},
		{name: "custom action ref", opts: opts, spec: mk(`"c":{"type":"acme.chart","props":{"series":[],"onSelect":"nope"}}`),
			want: []want{e(cAction, "/nodes/c/props/onSelect")}},
		{name: "custom URL prop by name", opts: opts, spec: mk(`"c":{"type":"acme.chart","props":{"series":[],"detailsUrl":"javascript:alert(1)"}}`),
			want: []want{e(cUnsafe, "/nodes/c/props/detailsUrl")}},
		{name: "custom type suggestion", opts: opts, spec: mk(`"c":{"type":"acme.chrt","props":{"series":[]}}`),
			want: []want{w(cUnknown, "/nodes/c/type", `"acme.chart"`)}},
	})
}

func TestCatalogRegisterRefuses(t *testing.T) {
	t.Parallel()
	c := NewCatalog()
	if err := c.Register("acme.chart", json.RawMessage(chartSchema)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, typ, schema string
		code              switchboard.Code
	}{
		{"again", "acme.chart", chartSchema, switchboard.CodeConflict},
		{"built-in", "heading", chartSchema, switchboard.CodeConflict},
		{"bad name", "Acme Chart", chartSchema, switchboard.CodeInvalidInput},
		{"empty name", "", chartSchema, switchboard.CodeInvalidInput},
		{"not json", "acme.a", `{"type":`, switchboard.CodeInvalidInput},
		{"not a schema", "acme.b", `{"type":"objekt"}`, switchboard.CodeInvalidInput},
		{"not an object schema", "acme.c", `{"type":"string"}`, switchboard.CodeInvalidInput},
		{"external ref", "acme.d", `{"type":"object","properties":{"a":{"$ref":"file:///etc/passwd"}}}`, switchboard.CodeInvalidInput},
		{"remote ref", "acme.e", `{"type":"object","properties":{"a":{"$ref":"http://127.0.0.1:1/s.json"}}}`, switchboard.CodeInvalidInput},
		{"bad x-ref", "acme.f", `{"type":"object","properties":{"a":{"type":"string","x-ref":"url"}}}`, switchboard.CodeInvalidInput},
	} {
		err := c.Register(tc.typ, json.RawMessage(tc.schema))
		if got := switchboard.CodeOf(err); got != tc.code {
			t.Errorf("%s: got %v (%v), want %s", tc.name, got, err, tc.code)
		}
	}
}

func TestCatalogConcurrentRegister(t *testing.T) {
	t.Parallel()
	c := NewCatalog()
	raw := []byte(mk(`"h":{"type":"heading","props":{"text":"x"}}`))
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			if err := c.Register(fmt.Sprintf("acme.t%d", i), json.RawMessage(`{"type":"object"}`)); err != nil {
				t.Error(err)
			}
		})
		wg.Go(func() {
			if spec, issues := Validate(raw, &Options{Catalog: c}); spec == nil {
				t.Error(dump(issues))
			}
		})
	}
	wg.Wait()
	if n := len(c.Types()); n != 20+8 {
		t.Fatalf("%d types after 8 registrations", n)
	}
}

// The fast checker and jsonschema/v6 agree on every built-in schema for a
// set of valid and invalid props; FuzzFastSchema explores further.
func TestFastSchemaAgrees(t *testing.T) {
	t.Parallel()
	samples := []string{
		`{}`, `{"text":"x"}`, `{"text":""}`, `{"text":"x","level":1}`, `{"text":"x","level":1.5}`, `{"text":"x","level":0}`,
		`{"text":"x","level":"2"}`, `{"text":null}`, `{"href":"/a","label":"x"}`, `{"src":"a","alt":""}`, `{"label":"x","action":"a"}`,
		`{"gap":"sm"}`, `{"gap":"xl"}`, `{"width":"1/2"}`, `{"items":[]}`, `{"items":[1]}`, `{"source":"s"}`, `{"ordered":true}`,
		`{"columns":[{"key":"a","label":"A"}],"rows":[{"a":1,"b":null,"c":"x"}]}`, `{"columns":[]}`, `{"columns":[{"key":"a","label":"A"}],"rows":[{"a":{}}]}`,
		`{"labels":["a"],"selected":0}`, `{"labels":[]}`, `{"labels":["a"],"selected":-1}`,
		`{"bind":"s","fields":[{"path":"a","label":"A","kind":"text"}]}`,
		`{"bind":"s","fields":[{"path":"a","label":"A","kind":"select"}]}`,
		`{"bind":"s","fields":[{"path":"a","label":"A","kind":"select","options":[{"value":1,"label":"x"}]}]}`,
		`{"bind":"s","fields":[{"path":"a.0.b","label":"A","kind":"number","step":0}]}`,
		`{"bind":"s","fields":[{"path":"0a","label":"A","kind":"date"}]}`,
		`{"originalType":"x","originalProps":{"a":[1]}}`, `{"text":"x","tone":"info"}`, `{"text":"x","title":"t","tone":"danger"}`,
	}
	for typ, e := range builtins() {
		if e.fast == nil {
			continue // beyond the subset (document's $refs): only jsonschema/v6 runs
		}
		for _, s := range samples {
			ps, fail := parseStrict(s, 64, 100, 1<<20)
			if fail != nil {
				t.Fatal(fail.msg)
			}
			fast := e.fast.valid(ps.root())
			full := e.schema.Validate(ps.root().toAny()) == nil
			if fast != full {
				t.Errorf("%s %s: fast says %v, jsonschema says %v", typ, s, fast, full)
			}
		}
	}
}

package panelspec

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard"
)

// seoSchema is the record schema a registry knows for the seed's site.seo.
const seoSchema = `{"type": "object", "required": ["title"], "properties": {
 "title": {"type": "string", "title": "Title", "maxLength": 60},
 "description": {"type": ["string", "null"], "title": "Meta description", "maxLength": 160},
 "noindex": {"type": "boolean", "title": "Hide from search engines"},
 "score": {"type": "integer", "minimum": 0, "maximum": 100, "readOnly": true},
 "robots": {"enum": ["index", "noindex"]},
 "updated": {"type": "string", "format": "date"},
 "links": {"type": "array"},
 "meta-tags": {"type": "string"}}}`

func seoOpts() *Options {
	return &Options{SourceSchema: func(ref string) json.RawMessage {
		if ref == "site.seo" {
			return json.RawMessage(seoSchema)
		}
		return nil
	}}
}

// TestSeedEnvelopeGolden: the seed documentation's envelope, completed only
// by a node for its dangling child (testdata/seed-envelope.json: "intro"),
// validates as written against a registry that knows site.seo's record
// schema. Its form takes its fields from that schema and its action names
// the source by ref; the validated IR (fields written out, the action's
// source as the key) is testdata/seed_envelope.golden.json.
func TestSeedEnvelopeGolden(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join("testdata", "seed-envelope.json"))
	if err != nil {
		t.Fatal(err)
	}
	spec, issues := Validate(raw, seoOpts())
	if spec == nil || len(issues) > 0 {
		t.Fatalf("the seed's envelope is refused:\n%s", dump(issues))
	}
	got, _ := json.MarshalIndent(spec, "", "  ")
	got = append(got, '\n')
	path := filepath.Join("testdata", "seed_envelope.golden.json")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("validated seed envelope differs from %s:\n%s", path, got)
	}
	if spec.Actions["save"].Source != "seo" {
		t.Errorf("action source %q, want the key seo", spec.Actions["save"].Source)
	}
	var props FormProps
	if err := json.Unmarshal(spec.Nodes["form"].Props, &props); err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, f := range props.Fields {
		paths = append(paths, f.Path+":"+f.Kind)
	}
	// Name order; arrays and names that are not field paths are left out.
	if g := strings.Join(paths, " "); g != "description:text noindex:checkbox robots:select score:number title:text updated:date" {
		t.Errorf("fields from the schema: %s", g)
	}
	if f := props.Fields[4]; f.Label != "Title" || !f.Required || *f.MaxLength != 60 {
		t.Errorf("title field %+v", f)
	}
	if f := props.Fields[3]; !f.ReadOnly || *f.Max != 100 || *f.Step != 1 || f.Label != "score" {
		t.Errorf("score field %+v", f)
	}
	// The validated IR is a spec of its own: it validates with no registry.
	if s, issues := Validate(want, nil); s == nil || len(issues) > 0 {
		t.Errorf("%s does not validate:\n%s", path, dump(issues))
	}
}

func TestFormFieldsFromSource(t *testing.T) {
	t.Parallel()
	raw, _ := os.ReadFile(filepath.Join("testdata", "seed-envelope.json"))
	inline := bytes.Replace(raw, []byte(`"params": {"pageId": "$scope.entityId"}`),
		[]byte(`"params": {"pageId": "$scope.entityId"}, "schema": {"properties": {"title": {"type": "string"}}}`), 1)
	cases := []struct {
		name string
		spec string
		opts *Options
		code switchboard.Code
		msg  string
	}{
		{"no registry, no schema", string(raw), nil, switchboard.CodeSpecProps, `the form has no fields and its source "seo" has no record schema`},
		{"registry without a schema", string(raw), &Options{SourceSchema: func(string) json.RawMessage { return nil }}, switchboard.CodeSpecProps, "has no record schema"},
		{"schema declared on the source", string(inline), nil, "", ""},
		{"schema with nothing to edit", `{"v": 1, "origin": "host", "root": "f", "sources": {"s": {"kind": "state", "path": "/r", "schema": {"properties": {"tags": {"type": "array"}}}}},
			"nodes": {"f": {"type": "field-form", "props": {"bind": "s"}}}}`, nil, switchboard.CodeSpecProps, "no property a form can edit"},
		{"markup in a title", `{"v": 1, "origin": "host", "root": "f", "sources": {"s": {"kind": "state", "path": "/r", "schema": {"properties": {"a": {"type": "string", "title": "<script>x</script>"}}}}},
			"nodes": {"f": {"type": "field-form", "props": {"bind": "s"}}}}`, nil, switchboard.CodeSpecUnsafe, "markup"},
		{"a ref two sources share", `{"v": 1, "origin": "host", "root": "f", "sources": {"a": {"source": "site.seo"}, "b": {"source": "site.seo"}},
			"nodes": {"f": {"type": "button", "props": {"label": "Go", "action": "go"}}},
			"actions": {"go": {"kind": "refresh", "source": "site.seo"}}}`, nil, switchboard.CodeSpecAction, `source ref "site.seo" is the ref of sources "a" and "b"`},
		{"a key still names a source", `{"v": 1, "origin": "host", "root": "f", "sources": {"a": {"source": "site.seo"}},
			"nodes": {"f": {"type": "button", "props": {"label": "Go", "action": "go"}}},
			"actions": {"go": {"kind": "refresh", "source": "a"}}}`, nil, "", ""},
		{"neither key nor ref", `{"v": 1, "origin": "host", "root": "f", "sources": {"a": {"source": "site.seo"}},
			"nodes": {"f": {"type": "button", "props": {"label": "Go", "action": "go"}}},
			"actions": {"go": {"kind": "refresh", "source": "site.sep"}}}`, nil, switchboard.CodeSpecAction, `source "site.sep" is not declared`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spec, issues := Validate([]byte(c.spec), c.opts)
			if c.code == "" {
				if spec == nil || HasErrors(issues) {
					t.Fatalf("refused:\n%s", dump(issues))
				}
				return
			}
			if spec != nil {
				t.Fatalf("accepted, want %s", c.code)
			}
			for _, is := range issues {
				if is.Code == c.code && strings.Contains(is.Message, c.msg) {
					return
				}
			}
			t.Fatalf("want %s %q, got:\n%s", c.code, c.msg, dump(issues))
		})
	}
}

package panelspec

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard"
)

func TestSeedSourceForm(t *testing.T) {
	t.Parallel()
	spec := func(sources, state string) []byte {
		return []byte(`{"v": 1, "origin": "agent", "root": "b", "state": ` + state + `, "sources": ` + sources + `,
		 "nodes": {"b": {"type": "panel-body", "children": ["t"]},
		  "t": {"type": "table", "props": {"source": "s", "columns": [{"key": "a", "label": "A"}]}}}}`)
	}
	exists := func(name string) bool { return name == "site.seo" || name == "data.projects.query" }
	cases := []struct {
		name, sources, state string
		opts                 *Options
		code                 switchboard.Code // "" = valid
		pointer              string
		warn                 bool
	}{
		{name: "the documented envelope", sources: `{"s": {"source": "site.seo", "params": {"pageId": "$scope.entityId"}}}`},
		{name: "a registered tool", sources: `{"s": {"source": "site.seo", "params": {"pageId": "$scope.entityId"}}}`, opts: &Options{ToolExists: exists}},
		{name: "a registered adapter", sources: `{"s": {"source": "projects", "params": {"where": {"id": "$scope.id"}}, "key": "id"}}`, opts: &Options{ToolExists: exists}},
		{name: "no params", sources: `{"s": {"source": "site.seo"}}`},
		{name: "state refs", sources: `{"s": {"source": "site.seo", "params": {"q": "$state.filter.owner", "list": ["$state.filter.tags.0"]}}}`, state: `{"filter": {"owner": "ana", "tags": ["x"]}}`},
		{name: "literal dollars", sources: `{"s": {"source": "site.seo", "params": {"price": "$5", "lit": "$$scope.x", "bare": "$"}}}`},
		{name: "a state ref to nothing warns", sources: `{"s": {"source": "site.seo", "params": {"q": "$state.nope"}}}`, warn: true},
		{name: "unregistered", sources: `{"s": {"source": "site.nope"}}`, opts: &Options{ToolExists: exists}, code: switchboard.CodeSpecAction, pointer: "/sources/s/source"},
		{name: "empty ref", sources: `{"s": {"source": ""}}`, code: switchboard.CodeSpecAction, pointer: "/sources/s/source"},
		{name: "not a name", sources: `{"s": {"source": "Site SEO"}}`, code: switchboard.CodeSpecAction, pointer: "/sources/s/source"},
		{name: "a URL", sources: `{"s": {"source": "https://evil.example/seo"}}`, code: switchboard.CodeSpecAction, pointer: "/sources/s/source"},
		{name: "params not an object", sources: `{"s": {"source": "site.seo", "params": ["x"]}}`, code: switchboard.CodeSpecParse, pointer: "/sources/s/params"},
		{name: "mixed with the kind form", sources: `{"s": {"source": "site.seo", "query": {}}}`, code: switchboard.CodeSpecParse, pointer: "/sources/s/query"},
		{name: "an unknown root", sources: `{"s": {"source": "site.seo", "params": {"p": "$scop.entityId"}}}`, code: switchboard.CodeSpecAction, pointer: "/sources/s/params/p"},
		{name: "an empty segment", sources: `{"s": {"source": "site.seo", "params": {"p": "$scope..x"}}}`, code: switchboard.CodeSpecAction, pointer: "/sources/s/params/p"},
		{name: "a prototype walk", sources: `{"s": {"source": "site.seo", "params": {"p": {"q": "$state.constructor.prototype"}}}}`, code: switchboard.CodeSpecUnsafe, pointer: "/sources/s/params/p/q"},
		{name: "a typo'd key", sources: `{"s": {"source": "site.seo", "parms": {}}}`, code: switchboard.CodeSpecParse, pointer: "/sources/s/parms"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			state := c.state
			if state == "" {
				state = "{}"
			}
			got, issues := Validate(spec(c.sources, state), c.opts)
			if c.code == "" {
				if got == nil {
					t.Fatalf("refused: %v", issues)
				}
				if c.warn != (len(issues) > 0) {
					t.Fatalf("warnings %v", issues)
				}
				if s := got.Sources["s"]; s.Ref == "" || s.Kind != "" {
					t.Fatalf("decoded %+v", s)
				}
				return
			}
			if got != nil {
				t.Fatalf("accepted; want %s at %s", c.code, c.pointer)
			}
			for _, is := range issues {
				if is.Code == c.code && is.Pointer == c.pointer {
					return
				}
			}
			t.Fatalf("want %s at %s, got %v", c.code, c.pointer, issues)
		})
	}
}

// A seed-form spec survives a round trip through the Spec type: the form
// stays as written (no "kind" appears).
func TestSeedSourceRoundTrip(t *testing.T) {
	t.Parallel()
	raw := []byte(`{"v": 1, "origin": "host", "root": "b", "sources": {"seo": {"source": "site.seo", "params": {"pageId": "$scope.entityId"}}},
	 "nodes": {"b": {"type": "panel-body", "children": ["t"]}, "t": {"type": "list", "props": {"source": "seo", "field": "title"}}}}`)
	spec, issues := Validate(raw, nil)
	if spec == nil {
		t.Fatal(issues)
	}
	b, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"seo":{"source":"site.seo","params":{"pageId":"$scope.entityId"}}`) {
		t.Fatalf("re-encoded as %s", b)
	}
	if again, issues := Validate(b, nil); again == nil {
		t.Fatalf("the re-encoded spec is refused: %v", issues)
	}
}

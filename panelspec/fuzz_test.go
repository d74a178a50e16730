package panelspec

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Fuzz targets for every parser (STYLE.md): the spec pipeline, patches, the
// fast schema checker against jsonschema/v6, and the URL check against a
// model of how a browser reads a scheme. Run one with, for example,
//
//	go test ./panel -run '^$' -fuzz FuzzValidate -fuzztime 60s

// addSeeds adds the examples, golden files and hostile corpus.
func addSeeds(f *testing.F) {
	for _, pattern := range []string{"examples/*.json", "testdata/*.golden.json", "testdata/hostile/*.json"} {
		files, _ := filepath.Glob(pattern)
		for _, name := range files {
			raw, err := os.ReadFile(name)
			if err != nil {
				f.Fatal(err)
			}
			if len(raw) < 64<<10 {
				f.Add(raw)
			}
		}
	}
	// The preview tier: runnable code is allowed in a preview's code only;
	// mutations move it into other props and nodes.
	f.Add(previewSpec(`<style>b{color:red}</style><b id=x>0</b><script>x.onclick=()=>x.textContent++</script>`, `, "height": 200`))
	f.Add(previewSpec(`</script><script>top.location="//evil.test"</script>`, `, "srcdoc": "<script>1</script>"`))
	f.Add([]byte(brokenSpec))
	f.Add([]byte(`{"v":0,"origin":"host","root":{"type":"link","props":{"url":"/a","text":"A"}}}`))
}

func FuzzValidate(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, raw []byte) {
		spec, issues := Validate(raw, nil)
		if (spec == nil) != HasErrors(issues) {
			t.Fatalf("spec returned = %v, errors = %v", spec != nil, HasErrors(issues))
		}
		for _, is := range issues {
			if !strings.HasPrefix(string(is.Code), "SPEC_") || is.Message == "" ||
				(is.Severity != SeverityError && is.Severity != SeverityWarning) ||
				(is.Pointer != "" && is.Pointer[0] != '/') {
				t.Fatalf("malformed issue %+v", is)
			}
		}
		_, again := Validate(raw, nil)
		if diff := cmp.Diff(issues, again); diff != "" {
			t.Fatalf("Validate is not deterministic:\n%s", diff)
		}
		if spec == nil {
			return
		}
		// An accepted spec, encoded, is accepted again: what the renderer
		// receives passes the same checks. Placeholders are known types the
		// second time, so only warnings may go away.
		out, err := json.Marshal(spec)
		if err != nil {
			t.Fatalf("accepted spec does not encode: %v", err)
		}
		if s2, issues2 := Validate(out, nil); s2 == nil {
			t.Fatalf("accepted spec refused after encoding:\n%s\n%s", dump(issues2), out)
		}
		if len(spec.Nodes) > DefaultMaxNodes {
			t.Fatalf("accepted %d nodes", len(spec.Nodes))
		}
	})
}

func FuzzPatch(f *testing.F) {
	f.Add([]byte(`[{"op":"replace","path":"/nodes/h/props/text","value":"Hi"}]`))
	f.Add([]byte(`[{"op":"add","path":"/nodes/t","value":{"type":"text","props":{"text":"x"}}},{"op":"add","path":"/nodes/body/children/-","value":"t"}]`))
	f.Add([]byte(`[{"op":"remove","path":"/nodes/l"},{"op":"remove","path":"/nodes/body/children/1"}]`))
	f.Add([]byte(`[{"op":"move","from":"/nodes/h","path":"/nodes/h2"}]`))
	f.Add([]byte(`[{"op":"copy","from":"/nodes/h","path":"/nodes/h3"}]`))
	f.Add([]byte(`[{"op":"replace","path":"/nodes/l/props/href","value":"javascript:alert(1)"}]`))
	f.Add([]byte(`[{"op":"replace","path":"/origin","value":"host"}]`))
	f.Add([]byte(`[{"op":"test","path":"/v","value":1}]`))
	f.Fuzz(func(t *testing.T, patch []byte) {
		base := agentSpec(t)
		before, _ := json.Marshal(base)
		got, issues := Patch(base, patch, nil)
		if HasErrors(issues) {
			if got != base {
				t.Fatal("a failed patch returned a different spec")
			}
			if after, _ := json.Marshal(base); string(after) != string(before) {
				t.Fatal("a failed patch changed the original")
			}
			return
		}
		if got.Origin != base.Origin || got.V != Version {
			t.Fatalf("patch changed origin or version: %s %d", got.Origin, got.V)
		}
		out, _ := json.Marshal(got)
		if s, issues := Validate(out, nil); s == nil {
			t.Fatalf("patched spec does not revalidate:\n%s", dump(issues))
		}
		if after, _ := json.Marshal(base); string(after) != string(before) {
			t.Fatal("a successful patch changed the original")
		}
	})
}

func FuzzFastSchema(f *testing.F) {
	types := sortedKeys(builtins())
	for i := range types {
		f.Add(uint8(i), `{"text":"x","level":2}`)
		f.Add(uint8(i), `{"bind":"s","fields":[{"path":"a.b","label":"A","kind":"select","options":[{"value":1,"label":"x"}]}]}`)
		f.Add(uint8(i), `{"columns":[{"key":"a","label":"A"}],"rows":[{"a":null}]}`)
	}
	f.Fuzz(func(t *testing.T, typ uint8, props string) {
		ps, fail := parseStrict(props, 32, 1000, 1<<20)
		if fail != nil {
			return
		}
		defer ps.release()
		e := builtins()[types[int(typ)%len(types)]]
		if e.fast == nil {
			return // beyond the subset: only jsonschema/v6 runs
		}
		fast := e.fast.valid(ps.root())
		full := e.schema.Validate(ps.root().toAny()) == nil
		if fast != full {
			t.Fatalf("%s %s: fast %v, jsonschema %v", e.typ, props, fast, full)
		}
	})
}

// browserScheme models how a browser reads the scheme of an href set
// through the DOM (WHATWG URL parsing): leading and trailing C0 controls
// and spaces are stripped, tabs and newlines anywhere are removed, and a
// scheme is an ASCII letter followed by letters, digits, '+', '-' or '.',
// then ':'.
func browserScheme(s string) string {
	s = strings.TrimFunc(s, func(r rune) bool { return r <= 0x20 })
	s = strings.NewReplacer("\t", "", "\n", "", "\r", "").Replace(s)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case i > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'):
		case i > 0 && c == ':':
			return strings.ToLower(s[:i])
		default:
			return ""
		}
	}
	return ""
}

func FuzzURL(f *testing.F) {
	for _, s := range []string{"javascript:alert(1)", "java\tscript:x", " JAVASCRIPT:x", "&#106;avascript:x", "%6Aavascript:x",
		"https://a.test/b", "/rel", "mailto:x@y", "data:image/png;base64,AAAA", "data:text/html,x", "\x00javascript:x", "vbscript:x"} {
		f.Add(s)
	}
	allowed := map[string]bool{"": true, "http": true, "https": true, "mailto": true}
	f.Fuzz(func(t *testing.T, s string) {
		if checkURL(s, urlLink) != "" {
			return
		}
		if sc := browserScheme(s); !allowed[sc] {
			t.Fatalf("%q accepted, but a browser reads the scheme %q", s, sc)
		}
		if sc := schemeOf(normalizeURL(s)); !allowed[sc] {
			t.Fatalf("%q accepted with normalized scheme %q", s, sc)
		}
	})
}

// The seed corpora run as plain tests too; this checks they are not empty.
func TestFuzzSeedsPresent(t *testing.T) {
	t.Parallel()
	n := 0
	for _, p := range []string{"examples/*.json", "testdata/*.golden.json", "testdata/hostile/*.json"} {
		files, _ := filepath.Glob(p)
		n += len(files)
	}
	if n < 40 {
		t.Fatalf("only %d seed files", n)
	}
}

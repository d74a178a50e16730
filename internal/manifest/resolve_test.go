package manifest

import (
	"testing"
)

func TestResolve(t *testing.T) {
	t.Parallel()
	m, err := Parse([]byte(`tools:
  - {name: a.rel, description: relative, class: read, binding: {http: {method: GET, url: "/demo/api/x/{id}"}}}
  - {name: a.abs, description: absolute, class: read, binding: {http: {method: GET, url: "http://backend:9000/x"}}}
  - {name: a.net, description: scheme-relative, class: read, binding: {http: {method: GET, url: "//elsewhere/x"}}}
  - {name: a.none, description: no binding, class: read}
`), ".yaml")
	if err != nil {
		t.Fatal(err)
	}
	Resolve(&m, "http://127.0.0.1:7768/")
	want := map[string]string{"a.rel": "http://127.0.0.1:7768/demo/api/x/{id}", "a.abs": "http://backend:9000/x", "a.net": "//elsewhere/x"}
	for _, tool := range m.Tools {
		if tool.Binding == nil {
			continue
		}
		if got := tool.Binding.HTTP.URL; got != want[tool.Name] {
			t.Errorf("%s: url %q, want %q", tool.Name, got, want[tool.Name])
		}
	}
}

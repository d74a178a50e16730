package manifest

import (
	"strings"

	"github.com/switchboardhq/switchboard"
)

// Resolve makes path-only binding URLs absolute against base, the URL of
// the daemon the manifest is registered with (http://127.0.0.1:7768). A
// manifest whose backend is served by the daemon itself (the demo's
// /demo/api/) then follows the daemon's port instead of naming one: a
// daemon on 7768 must not call the backend of another daemon on 7766.
// Absolute URLs are left as they are. The catalog stores the resolved URL,
// so the daemon's registry sees only absolute URLs, as before.
func Resolve(m *switchboard.Manifest, base string) {
	base = strings.TrimRight(base, "/")
	abs := func(h *switchboard.HTTPBinding) *switchboard.HTTPBinding {
		if h == nil || !strings.HasPrefix(h.URL, "/") || strings.HasPrefix(h.URL, "//") {
			return h
		}
		c := *h
		c.URL = base + c.URL
		return &c
	}
	for i := range m.Tools {
		b := m.Tools[i].Binding
		if b == nil || b.HTTP == nil {
			continue
		}
		nb := *b
		nb.HTTP = abs(b.HTTP)
		m.Tools[i].Binding = &nb
	}
	// An adapter's bindings are its data tools' bindings.
	for i := range m.Adapters {
		a := &m.Adapters[i]
		a.Query = abs(a.Query)
		if a.Mutate != nil {
			mut := make(map[string]*switchboard.HTTPBinding, len(a.Mutate))
			for op, h := range a.Mutate {
				mut[op] = abs(h)
			}
			a.Mutate = mut
		}
	}
}

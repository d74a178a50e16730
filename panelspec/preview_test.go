package panelspec

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard"
)

func previewSpec(code string, extra string) []byte {
	b, _ := json.Marshal(code)
	return []byte(`{"v": 1, "origin": "agent", "root": "p", "nodes": {"p": {"type": "preview", "props": {"title": "Demo", "code": ` + string(b) + extra + `}}}}`)
}

// A preview node carries code: markup is allowed in its code prop only,
// and it is bounded.
func TestPreviewNode(t *testing.T) {
	t.Parallel()
	code := `<style>b{color:red}</style><b id=x>hi</b><script>document.getElementById("x").textContent = "js ran"</script>`
	spec, issues := Validate(previewSpec(code, `, "height": 240`), nil)
	if spec == nil || HasErrors(issues) {
		t.Fatalf("a preview node with code is valid: %s", dump(issues))
	}
	if got := PreviewNodes(spec); len(got) != 1 || got[0] != "p" {
		t.Fatalf("PreviewNodes = %v", got)
	}
	for name, tc := range map[string]struct {
		raw  []byte
		code switchboard.Code
		ptr  string
	}{
		"code over the budget":  {previewSpec(strings.Repeat("a", MaxPreviewCode+1), ""), switchboard.CodeSpecBudget, "/nodes/p/props/code"},
		"markup in the title":   {[]byte(`{"v": 1, "root": "p", "nodes": {"p": {"type": "preview", "props": {"title": "<script>x</script>", "code": "x"}}}}`), switchboard.CodeSpecUnsafe, "/nodes/p/props/title"},
		"srcdoc prop":           {previewSpec("x", `, "srcdoc": "<script>top.location='//evil'</script>"`), switchboard.CodeSpecUnsafe, "/nodes/p/props/srcdoc"},
		"a script URL":          {previewSpec("x", `, "src": "javascript:alert(1)"`), switchboard.CodeSpecUnsafe, "/nodes/p/props/src"},
		"height out of range":   {previewSpec("x", `, "height": 100000`), switchboard.CodeSpecProps, "/nodes/p/props/height"},
		"script in a text node": {[]byte(`{"v": 1, "root": "t", "nodes": {"t": {"type": "text", "props": {"text": "<script>alert(1)</script>"}}}}`), switchboard.CodeSpecUnsafe, "/nodes/t/props/text"},
	} {
		t.Run(name, func(t *testing.T) {
			spec, issues := Validate(tc.raw, nil)
			if spec != nil {
				t.Fatalf("accepted: %s", dump(issues))
			}
			for _, is := range issues {
				if is.Code == tc.code && is.Pointer == tc.ptr {
					return
				}
			}
			t.Fatalf("want %s at %s: %s", tc.code, tc.ptr, dump(issues))
		})
	}
}

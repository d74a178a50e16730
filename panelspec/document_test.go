package panelspec

import (
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard"
)

func TestDocument(t *testing.T) {
	t.Parallel()
	deepList := func(n int) string {
		return `{"type":"list","items":[` + strings.Repeat(`{"runs":[{"text":"x"}],"items":[`, n) + `{"runs":[{"text":"leaf"}]}` + strings.Repeat(`]}`, n) + `]}`
	}
	bigTable := `{"type":"table","rows":[` + strings.TrimSuffix(strings.Repeat(`[`+strings.TrimSuffix(strings.Repeat(`"c",`, 20), ",")+`],`, 150), ",") + `]}`
	cases := []struct {
		name, blocks string
		code         switchboard.Code
		pointer      string
	}{
		{name: "every block type", blocks: `{"type":"heading","id":"h","level":1,"text":"Q3 report"},
			{"type":"paragraph","runs":[{"text":"Revenue grew "},{"text":"12%","bold":true},{"text":" — see "},{"text":"the data","href":"https://example.com/q3"}]},
			{"type":"list","ordered":true,"items":[{"runs":[{"text":"one"}],"items":[{"runs":[{"text":"one.a"}]}]},{"runs":[{"text":"two","italic":true}]}]},
			{"type":"table","header":["Region","Revenue"],"rows":[["North",120],["South",95.5]],"caption":"By region"},
			{"type":"image","asset":"asset_chart-q3.png","alt":"Revenue by month"},
			{"type":"callout","tone":"warning","title":"Note","runs":[{"text":"Figures are unaudited."}]},
			{"type":"pageBreak"}`},
		{name: "a list 4 deep", blocks: deepList(3)},
		{name: "an unknown block", blocks: `{"type":"video","src":"x"}`, code: switchboard.CodeSpecProps, pointer: "/nodes/d/props/blocks/0/type"},
		{name: "markup instead of runs", blocks: `{"type":"paragraph","html":"<b>x</b>"}`, code: switchboard.CodeSpecUnsafe, pointer: "/nodes/d/props/blocks/0/html"},
		{name: "an image by URL", blocks: `{"type":"image","asset":"https://evil.example/x.png","alt":"x"}`, code: switchboard.CodeSpecUnsafe, pointer: "/nodes/d/props/blocks/0/asset"},
		{name: "a script link in a run", blocks: `{"type":"paragraph","runs":[{"text":"x","href":"javascript:alert(1)"}]}`, code: switchboard.CodeSpecUnsafe, pointer: "/nodes/d/props/blocks/0/runs/0/href"},
		{name: "a control character", blocks: `{"type":"paragraph","runs":[{"text":"a\u0007b"}]}`, code: switchboard.CodeSpecUnsafe, pointer: "/nodes/d/props/blocks/0/runs/0/text"},
		{name: "a bidi override", blocks: `{"type":"heading","text":"invoice\u202egpj.exe"}`, code: switchboard.CodeSpecUnsafe, pointer: "/nodes/d/props/blocks/0/text"},
		{name: "a list 5 deep", blocks: deepList(4), code: switchboard.CodeSpecBudget, pointer: "/nodes/d/props/blocks/0/items/0/items/0/items/0/items/0/items"},
		{name: "a huge table", blocks: bigTable, code: switchboard.CodeSpecBudget, pointer: "/nodes/d/props/blocks/0/rows"},
		{name: "duplicate block ids", blocks: `{"type":"pageBreak","id":"a"},{"type":"pageBreak","id":"a"}`, code: switchboard.CodeSpecProps, pointer: "/nodes/d/props/blocks/1/id"},
		{name: "a heading level 4", blocks: `{"type":"heading","level":4,"text":"x"}`, code: switchboard.CodeSpecProps, pointer: "/nodes/d/props/blocks/0/level"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			raw := `{"v":1,"origin":"agent","root":"d","nodes":{"d":{"type":"document","props":{"title":"Report","blocks":[` + c.blocks + `]}}}}`
			spec, issues := Validate([]byte(raw), nil)
			if c.code == "" {
				if spec == nil {
					t.Fatalf("refused:\n%s", dump(issues))
				}
				return
			}
			for _, is := range issues {
				if is.Code == c.code && is.Pointer == c.pointer && is.Severity == SeverityError {
					return
				}
			}
			t.Fatalf("want %s at %s; got:\n%s", c.code, c.pointer, dump(issues))
		})
	}
}

package panelspec

import (
	"testing"

	"github.com/switchboardhq/switchboard"
)

func TestChartsAndNumbers(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, node string
		code       switchboard.Code // "" = valid
		pointer    string
	}{
		{name: "bar from inline data", node: `"c":{"type":"chart","props":{"kind":"bar","x":{"key":"m","label":"Month"},"y":{"label":"Revenue","unit":"€"},"series":[{"key":"a","label":"A"},{"key":"b"}],"labels":true,"data":[{"m":"Jan","a":1,"b":null},{"m":"Feb","a":-2.5,"b":3}]}}`},
		{name: "line from a source", node: `"c":{"type":"chart","props":{"kind":"line","source":"s","x":{"key":"m"},"series":[{"key":"a"}]}}`},
		{name: "pie", node: `"c":{"type":"chart","props":{"kind":"pie","x":{"key":"k"},"series":[{"key":"n"}],"data":[{"k":"x","n":1},{"k":"y","n":0}]}}`},
		{name: "metric", node: `"c":{"type":"metric","props":{"label":"Spend","value":12.5,"unit":"€","delta":-3,"deltaLabel":"vs May","goodWhen":"down","precision":1}}`},
		{name: "metric from a source", node: `"c":{"type":"metric","props":{"label":"Spend","source":"s","field":"total"}}`},
		{name: "progress", node: `"c":{"type":"progress","props":{"label":"Release","value":3,"max":4}}`},
		{name: "unknown kind", node: `"c":{"type":"chart","props":{"kind":"radar","x":{"key":"m"},"series":[{"key":"a"}],"data":[]}}`, code: switchboard.CodeSpecProps, pointer: "/nodes/c/props/kind"},
		{name: "no data or source", node: `"c":{"type":"chart","props":{"kind":"bar","x":{"key":"m"},"series":[{"key":"a"}]}}`, code: switchboard.CodeSpecProps, pointer: "/nodes/c/props"},
		{name: "a string as a number", node: `"c":{"type":"chart","props":{"kind":"bar","x":{"key":"m"},"series":[{"key":"a"}],"data":[{"m":"Jan","a":"12"}]}}`, code: switchboard.CodeSpecProps, pointer: "/nodes/c/props/data/0/a"},
		{name: "a boolean as a number", node: `"c":{"type":"chart","props":{"kind":"bar","x":{"key":"m"},"series":[{"key":"a"}],"data":[{"m":"Jan","a":true}]}}`, code: switchboard.CodeSpecProps, pointer: "/nodes/c/props/data/0/a"},
		{name: "nine series", node: `"c":{"type":"chart","props":{"kind":"line","x":{"key":"m"},"series":[{"key":"a"},{"key":"b"},{"key":"c"},{"key":"d"},{"key":"e"},{"key":"f"},{"key":"g"},{"key":"h"},{"key":"i"}],"data":[]}}`, code: switchboard.CodeSpecProps, pointer: "/nodes/c/props/series"},
		{name: "a pie of two series", node: `"c":{"type":"chart","props":{"kind":"pie","x":{"key":"k"},"series":[{"key":"a"},{"key":"b"}],"data":[]}}`, code: switchboard.CodeSpecProps, pointer: "/nodes/c/props/series"},
		{name: "a negative slice", node: `"c":{"type":"chart","props":{"kind":"pie","x":{"key":"k"},"series":[{"key":"n"}],"data":[{"k":"x","n":-1}]}}`, code: switchboard.CodeSpecProps, pointer: "/nodes/c/props/data/0/n"},
		{name: "duplicate series", node: `"c":{"type":"chart","props":{"kind":"bar","x":{"key":"m"},"series":[{"key":"a"},{"key":"a"}],"data":[]}}`, code: switchboard.CodeSpecProps, pointer: "/nodes/c/props/series/1/key"},
		{name: "x is a series", node: `"c":{"type":"chart","props":{"kind":"bar","x":{"key":"a"},"series":[{"key":"a"}],"data":[]}}`, code: switchboard.CodeSpecProps, pointer: "/nodes/c/props/x/key"},
		{name: "y range backwards", node: `"c":{"type":"chart","props":{"kind":"bar","x":{"key":"m"},"y":{"min":5,"max":1},"series":[{"key":"a"}],"data":[]}}`, code: switchboard.CodeSpecProps, pointer: "/nodes/c/props/y/min"},
		{name: "over the point budget", node: `"c":{"type":"chart","props":{"kind":"bar","x":{"key":"m"},"series":[{"key":"a"},{"key":"b"},{"key":"c"}],"data":[` + rows(700) + `]}}`, code: switchboard.CodeSpecBudget, pointer: "/nodes/c/props/data"},
		{name: "markup in a title", node: `"c":{"type":"chart","props":{"kind":"bar","title":"<svg onload=alert(1)>","x":{"key":"m"},"series":[{"key":"a"}],"data":[]}}`, code: switchboard.CodeSpecUnsafe, pointer: "/nodes/c/props/title"},
		{name: "a string metric", node: `"c":{"type":"metric","props":{"label":"Spend","value":"12"}}`, code: switchboard.CodeSpecProps, pointer: "/nodes/c/props/value"},
		{name: "progress over max", node: `"c":{"type":"progress","props":{"label":"Release","value":5,"max":4}}`, code: switchboard.CodeSpecProps, pointer: "/nodes/c/props/value"},
		{name: "negative progress", node: `"c":{"type":"progress","props":{"label":"Release","value":-1}}`, code: switchboard.CodeSpecProps, pointer: "/nodes/c/props/value"},
		{name: "a zero max", node: `"c":{"type":"progress","props":{"label":"Release","value":0,"max":0}}`, code: switchboard.CodeSpecProps, pointer: "/nodes/c/props/max"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			raw := `{"v":1,"origin":"agent","root":"b","sources":{"s":{"kind":"state","path":"/s"}},"state":{"s":{}},"nodes":{"b":{"type":"panel-body","children":["c"]},` + c.node + `}}`
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

func rows(n int) string {
	b := make([]byte, 0, n*24)
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"m":"x","a":1,"b":2,"c":3}`...)
	}
	return string(b)
}

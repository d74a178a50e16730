package panelspec

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/switchboardhq/switchboard"
)

// mk builds a spec whose root "body" (a panel-body) has every node in nodes
// as a child, in id order. nodes is the inside of the nodes object; rest
// adds top-level members (`"actions": {...}`).
func mk(nodes string, rest ...string) string {
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte("{"+nodes+"}"), &m); err != nil {
		panic(fmt.Sprintf("mk: %v in %s", err, nodes))
	}
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	kids, _ := json.Marshal(ids)
	sep := ""
	if nodes != "" {
		sep = ","
	}
	tail := ""
	for _, r := range rest {
		tail += "," + r
	}
	return fmt.Sprintf(`{"v":1,"origin":"agent","root":"body","nodes":{"body":{"type":"panel-body","children":%s}%s%s}%s}`, kids, sep, nodes, tail)
}

// want is one expected issue: code, severity (error unless w), pointer and
// a substring of the suggestion ("" to skip).
type want struct {
	code    switchboard.Code
	pointer string
	sugg    string
	warning bool
}

func e(code switchboard.Code, pointer string, sugg ...string) want {
	return want{code: code, pointer: pointer, sugg: strings.Join(sugg, "")}
}

func w(code switchboard.Code, pointer string, sugg ...string) want {
	return want{code: code, pointer: pointer, sugg: strings.Join(sugg, ""), warning: true}
}

const (
	cParse   = switchboard.CodeSpecParse
	cUnknown = switchboard.CodeSpecUnknownType
	cProps   = switchboard.CodeSpecProps
	cAction  = switchboard.CodeSpecAction
	cBudget  = switchboard.CodeSpecBudget
	cUnsafe  = switchboard.CodeSpecUnsafe
)

// checkIssues asserts that issues are exactly the wanted ones (code,
// severity, pointer), in any order, and that suggestions contain the
// wanted text.
func checkIssues(t *testing.T, issues []Issue, wants []want) {
	t.Helper()
	var got, exp []string
	for _, is := range issues {
		got = append(got, fmt.Sprintf("%s %s %s", is.Code, is.Severity, is.Pointer))
	}
	for _, x := range wants {
		sev := SeverityError
		if x.warning {
			sev = SeverityWarning
		}
		exp = append(exp, fmt.Sprintf("%s %s %s", x.code, sev, x.pointer))
	}
	sort.Strings(got)
	sort.Strings(exp)
	if diff := cmp.Diff(exp, got); diff != "" {
		t.Fatalf("issues (-want +got):\n%s\nall issues:\n%s", diff, dump(issues))
	}
	for _, x := range wants {
		if x.sugg == "" {
			continue
		}
		found := false
		for _, is := range issues {
			if is.Code == x.code && is.Pointer == x.pointer && strings.Contains(is.Suggestion, x.sugg) {
				found = true
			}
		}
		if !found {
			t.Errorf("no %s issue at %s suggests %q:\n%s", x.code, x.pointer, x.sugg, dump(issues))
		}
	}
	for _, is := range issues {
		if is.Message == "" {
			t.Errorf("issue without message: %+v", is)
		}
	}
}

func dump(issues []Issue) string {
	var b strings.Builder
	for _, is := range issues {
		fmt.Fprintf(&b, "  %s %s node=%q %s: %s | %s\n", is.Code, is.Severity, is.NodeID, is.Pointer, is.Message, is.Suggestion)
	}
	return b.String()
}

type vcase struct {
	name string
	spec string
	opts *Options
	want []want
}

func runCases(t *testing.T, cases []vcase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			spec, issues := Validate([]byte(tc.spec), tc.opts)
			checkIssues(t, issues, tc.want)
			if HasErrors(issues) != (spec == nil) {
				t.Fatalf("spec returned = %v with errors = %v", spec != nil, HasErrors(issues))
			}
		})
	}
}

func TestValidateAccepts(t *testing.T) {
	t.Parallel()
	runCases(t, []vcase{
		{name: "minimal", spec: `{"v":1,"origin":"host","root":"b","nodes":{"b":{"type":"panel-body"}}}`},
		{name: "every leaf", spec: mk(`
			"h":{"type":"heading","props":{"text":"Hi","level":1}},
			"t":{"type":"text","props":{"text":"a < b, and <b>bold</b> shows literally","tone":"muted"}},
			"l":{"type":"link","props":{"href":"mailto:a@example.com","label":"Mail"}},
			"l2":{"type":"link","props":{"href":"../relative/path?q=a:b#x","label":"Rel"}},
			"i":{"type":"image","props":{"src":"data:image/png;base64,iVBORw0KGgo=","alt":"dot"}},
			"c":{"type":"callout","props":{"text":"Note","tone":"info"}},
			"li":{"type":"list","props":{"items":["a","b"]}},
			"tb":{"type":"table","props":{"columns":[{"key":"name","label":"Name"},{"key":"site","label":"Site","kind":"link"}],
				"rows":[{"name":"x","site":"https://example.com","class":"3b"}]}}`)},
		{name: "force origin", spec: `{"v":1,"origin":"host","root":"b","nodes":{"b":{"type":"panel-body"}}}`,
			opts: &Options{ForceOrigin: OriginAgent}},
		{name: "orphan is a warning", spec: `{"v":1,"origin":"host","root":"b","nodes":{"b":{"type":"panel-body"},"lost":{"type":"text","props":{"text":"x"}}}}`,
			want: []want{w(cBudget, "/nodes/lost", "add it")}},
		{name: "unknown type is a warning", spec: mk(`"h":{"type":"headng","props":{"text":"x"}}`),
			want: []want{w(cUnknown, "/nodes/h/type", `"heading"`)}},
	})
}

func TestValidateParse(t *testing.T) {
	t.Parallel()
	runCases(t, []vcase{
		{name: "not an object", spec: `[1]`, want: []want{e(cParse, "")}},
		{name: "syntax", spec: `{"v":1,`, want: []want{e(cParse, "")}},
		{name: "trailing data", spec: mk(``) + `{}`, want: []want{e(cParse, "")}},
		{name: "missing version", spec: `{"origin":"host"}`, want: []want{e(cParse, "/v", `"v": 1`)}},
		{name: "future version", spec: `{"v":2}`, want: []want{e(cParse, "/v")}},
		{name: "duplicate key", spec: `{"v":1,"v":1}`, want: []want{e(cParse, "/v")}},
		{name: "case variant key", spec: mk(`"l":{"type":"link","props":{"href":"https://a","HREF":"javascript:x","label":"x"}}`),
			want: []want{e(cParse, "/nodes/l/props/HREF")}},
		{name: "case variant key reversed", spec: `{"Nodes":{},"nodes":{}}`, want: []want{e(cParse, "/nodes")}},
		{name: "NUL suffixed key", spec: mk(`"l":{"type":"link","props":{"href":"https://a","href\u0000":"javascript:x","label":"x"}}`),
			want: []want{e(cParse, "/nodes/l/props/href\x00")}},
		{name: "zero width key", spec: `{"v":1,"nodes\u200b":{}}`, want: []want{e(cParse, "/nodes\u200b")}},
		{name: "number out of range", spec: `{"v":1,"state":{"n":1e400}}`, want: []want{e(cParse, "/state/n")}},
		{name: "unsafe integer", spec: `{"v":1,"state":{"n":9007199254740993}}`, want: []want{e(cParse, "/state/n")}},
		{name: "lone surrogate", spec: `{"v":1,"state":{"s":"\ud800"}}`, want: []want{e(cParse, "/state/s")}},
		{name: "invalid utf8", spec: "{\"v\":1,\"state\":{\"s\":\"\xff\"}}", want: []want{e(cParse, "")}},
		{name: "unknown top key", spec: mk(``, `"acions":{}`), want: []want{e(cParse, "/acions", `"actions"`)}},
		{name: "bad origin", spec: strings.Replace(mk(``), `"agent"`, `"agnet"`, 1), want: []want{e(cParse, "/origin", `"agent"`)}},
		{name: "unknown node key", spec: mk(`"h":{"type":"heading","prop":{"text":"x"}}`),
			want: []want{e(cParse, "/nodes/h/prop", `"props"`), e(cProps, "/nodes/h/props", `add "text"`)}},
		{name: "props not object", spec: mk(`"h":{"type":"heading","props":[1]}`),
			want: []want{e(cParse, "/nodes/h/props"), e(cProps, "/nodes/h/props")}},
		{name: "children not array", spec: mk(`"s":{"type":"stack","children":"x"}`), want: []want{e(cParse, "/nodes/s/children")}},
		{name: "bad node id", spec: mk(`"a/b":{"type":"stack"}`), want: []want{e(cParse, "/nodes/a~1b")}},
		{name: "missing type", spec: mk(`"s":{"props":{}}`), want: []want{e(cParse, "/nodes/s/type")}},
		{name: "destructive not bool", spec: mk(``, `"actions":{"a":{"kind":"refresh","source":"s","destructive":"yes"}}`, `"sources":{"s":{"kind":"state"}}`),
			want: []want{e(cParse, "/actions/a/destructive")}},
		{name: "version 0 without root object", spec: `{"v":0,"root":"x"}`, want: []want{e(cParse, "/root")}},
	})
}

func TestValidateProps(t *testing.T) {
	t.Parallel()
	runCases(t, []vcase{
		{name: "unknown prop", spec: mk(`"h":{"type":"heading","props":{"text":"x","lvl":2}}`),
			want: []want{e(cProps, "/nodes/h/props/lvl", `"level"`)}},
		{name: "missing prop", spec: mk(`"h":{"type":"heading","props":{"level":2}}`),
			want: []want{e(cProps, "/nodes/h/props", `add "text"`)}},
		{name: "missing props", spec: mk(`"b2":{"type":"button"}`),
			want: []want{e(cProps, "/nodes/b2/props", `add "action"`), e(cProps, "/nodes/b2/props", `add "label"`)}},
		{name: "out of range", spec: mk(`"h":{"type":"heading","props":{"text":"x","level":9}}`), want: []want{e(cProps, "/nodes/h/props/level")}},
		{name: "wrong type", spec: mk(`"h":{"type":"heading","props":{"text":5}}`), want: []want{e(cProps, "/nodes/h/props/text")}},
		{name: "enum typo", spec: mk(`"t":{"type":"text","props":{"text":"x","tone":"mutd"}}`),
			want: []want{e(cProps, "/nodes/t/props/tone", `"muted"`)}},
		{name: "enum far off", spec: mk(`"t":{"type":"text","props":{"text":"x","tone":"loud"}}`),
			want: []want{e(cProps, "/nodes/t/props/tone", `use one of "danger", "default"`)}},
		{name: "leaf with children", spec: mk(`"t":{"type":"text","props":{"text":"x"},"children":["u"]},"u":{"type":"text","props":{"text":"y"}}`),
			want: []want{e(cProps, "/nodes/t/children"), e(cBudget, "/nodes/t/children/0")}},
		{name: "tab labels per child", spec: `{"v":1,"origin":"agent","root":"tb","nodes":{"tb":{"type":"tabs","props":{"labels":["A","B"]},"children":["x"]},"x":{"type":"stack"}}}`,
			want: []want{e(cProps, "/nodes/tb/props/labels")}},
		{name: "list needs items or source", spec: mk(`"l":{"type":"list","props":{"ordered":true}}`),
			want: []want{e(cProps, "/nodes/l/props", "items")}},
		{name: "field typo", spec: mk(`"f":{"type":"field-form","props":{"bind":"s","fields":[{"path":"a","lable":"A","kind":"text"}]}}`, `"sources":{"s":{"kind":"state"}}`),
			want: []want{e(cProps, "/nodes/f/props/fields/0/lable", `"label"`), e(cProps, "/nodes/f/props/fields/0", `add "label"`)}},
		{name: "select needs options", spec: mk(`"f":{"type":"field-form","props":{"bind":"s","fields":[{"path":"a","label":"A","kind":"select"}]}}`, `"sources":{"s":{"kind":"state"}}`),
			want: []want{e(cProps, "/nodes/f/props/fields/0", `add "options"`)}},
		{name: "field kind rules", spec: mk(`"f":{"type":"field-form","props":{"bind":"s","fields":[
				{"path":"a","label":"A","kind":"text","options":[{"value":1,"label":"x"}],"min":3},
				{"path":"a","label":"B","kind":"number","min":5,"max":1},
				{"path":"c","label":"C","kind":"select","options":[{"value":"x","label":"X"},{"value":"x","label":"Y"}]}]}}`, `"sources":{"s":{"kind":"state"}}`),
			want: []want{
				e(cProps, "/nodes/f/props/fields/0/options", `kind "select"`), e(cProps, "/nodes/f/props/fields/0/min", `kind "number"`),
				e(cProps, "/nodes/f/props/fields/1/path"), e(cProps, "/nodes/f/props/fields/1/min"),
				e(cProps, "/nodes/f/props/fields/2/options/1/value"),
			}},
		{name: "field path syntax", spec: mk(`"f":{"type":"field-form","props":{"bind":"s","fields":[{"path":"a[0]","label":"A","kind":"text"}]}}`, `"sources":{"s":{"kind":"state"}}`),
			want: []want{e(cProps, "/nodes/f/props/fields/0/path")}},
	})
}

func TestValidateActions(t *testing.T) {
	t.Parallel()
	src := `"sources":{"task":{"kind":"state","path":"/task"},"other":{"kind":"state","path":"/other"}},"state":{"task":{},"other":{}}`
	runCases(t, []vcase{
		{name: "undeclared action", spec: mk(`"b1":{"type":"button","props":{"label":"Go","action":"sav"}}`, `"actions":{"save":{"kind":"refresh","source":"task"}}`, src),
			want: []want{e(cAction, "/nodes/b1/props/action", `"save"`)}},
		{name: "no actions at all", spec: mk(`"b1":{"type":"button","props":{"label":"Go","action":"save"}}`),
			want: []want{e(cAction, "/nodes/b1/props/action", "declare it under /actions")}},
		{name: "action is a URL", spec: mk(`"b1":{"type":"button","props":{"label":"Go","action":"https://evil.test/x"}}`),
			want: []want{e(cAction, "/nodes/b1/props/action")}},
		{name: "bind names no source", spec: mk(`"f":{"type":"field-form","props":{"bind":"tsk","fields":[{"path":"a","label":"A","kind":"text"}]}}`, src),
			want: []want{e(cAction, "/nodes/f/props/bind", `"task"`)}},
		{name: "table source", spec: mk(`"t":{"type":"table","props":{"source":"nope","columns":[{"key":"a","label":"A"}]}}`),
			want: []want{e(cAction, "/nodes/t/props/source", "declare it under /sources")}},
		{name: "mutate checks", spec: mk(``, src, `"actions":{
				"a":{"kind":"mutate","source":"tasks","op":"update"},
				"b":{"kind":"mutate","source":"task"},
				"c":{"kind":"mutate","source":"task","op":"upate"},
				"d":{"kind":"mutate","source":"task","op":"delete"},
				"e":{"kind":"javascript:alert(1)"},
				"f":{"kind":"tool","tool":"https://evil.test/hook"},
				"g":{"kind":"tool","tool":"Not A Tool"},
				"h":{"kind":"refresh"},
				"i":{"kind":"refrsh","source":"task"}}`),
			want: []want{
				e(cAction, "/actions/a/source", `"task"`), e(cAction, "/actions/b/op", `"create"`), e(cAction, "/actions/c/op", `"update"`),
				e(cAction, "/actions/d/destructive", `"destructive": true`), e(cAction, "/actions/e/kind"), e(cAction, "/actions/f/tool"),
				e(cAction, "/actions/g/tool"), e(cAction, "/actions/h/source"), e(cAction, "/actions/i/kind", `"refresh"`),
			}},
		{name: "submit on another source", spec: mk(`"f":{"type":"field-form","props":{"bind":"task","submit":"save","fields":[{"path":"a","label":"A","kind":"text"}]}}`,
			src, `"actions":{"save":{"kind":"mutate","source":"other","op":"update"}}`),
			want: []want{e(cAction, "/nodes/f/props/submit")}},
		{name: "unknown tool", spec: mk(``, `"actions":{"a":{"kind":"tool","tool":"tasks.nope"}}`),
			opts: &Options{ToolExists: func(n string) bool { return n == "tasks.create" }},
			want: []want{e(cAction, "/actions/a/tool")}},
		{name: "source checks", spec: mk(``, `"sources":{"a":{"kind":"state","path":"task"},"b":{"kind":"tool"},"c":{"kind":"adapter"},"d":{"kind":"sql"}}`),
			want: []want{e(cAction, "/sources/a/path", `"/task"`), e(cAction, "/sources/b/tool"), e(cAction, "/sources/c/adapter"), e(cAction, "/sources/d/kind")}},
		{name: "state source on empty state", spec: mk(``, `"sources":{"a":{"kind":"state","path":"/task"}}`),
			want: []want{w(cAction, "/sources/a/path")}},
	})
}

func TestValidateBudgets(t *testing.T) {
	t.Parallel()
	var many []string
	for i := range DefaultMaxNodes {
		many = append(many, fmt.Sprintf(`"n%d":{"type":"text","props":{"text":"x"}}`, i))
	}
	chain := func(depth int) string {
		var nodes []string
		for i := 1; i < depth; i++ {
			nodes = append(nodes, fmt.Sprintf(`"s%d":{"type":"stack","children":["s%d"]}`, i, i+1))
		}
		nodes = append(nodes, fmt.Sprintf(`"s%d":{"type":"stack"}`, depth))
		return `{"v":1,"origin":"agent","root":"s1","nodes":{` + strings.Join(nodes, ",") + `}}`
	}
	runCases(t, []vcase{
		{name: "too many nodes", spec: mk(strings.Join(many, ",")), want: []want{e(cBudget, "/nodes")}},
		{name: "depth 12 is fine", spec: chain(12)},
		{name: "depth 13", spec: chain(13), want: []want{e(cBudget, "/nodes/s13")}},
		{name: "missing child", spec: `{"v":1,"origin":"agent","root":"b","nodes":{"b":{"type":"stack","children":["titel"]},"title":{"type":"stack"}}}`,
			want: []want{e(cBudget, "/nodes/b/children/0", `"title"`), w(cBudget, "/nodes/title")}},
		{name: "own child", spec: `{"v":1,"origin":"agent","root":"b","nodes":{"b":{"type":"stack","children":["x"]},"x":{"type":"stack","children":["x"]}}}`,
			want: []want{e(cBudget, "/nodes/x/children/0")}},
		{name: "root as child", spec: `{"v":1,"origin":"agent","root":"b","nodes":{"b":{"type":"stack","children":["x"]},"x":{"type":"stack","children":["b"]}}}`,
			want: []want{e(cBudget, "/nodes/x/children/0")}},
		{name: "cycle off the tree", spec: `{"v":1,"origin":"agent","root":"b","nodes":{"b":{"type":"stack"},"x":{"type":"stack","children":["y"]},"y":{"type":"stack","children":["x"]}}}`,
			want: []want{e(cBudget, "/nodes/x/children")}},
		{name: "two parents", spec: `{"v":1,"origin":"agent","root":"b","nodes":{"b":{"type":"stack","children":["x","y"]},"x":{"type":"stack","children":["z"]},"y":{"type":"stack","children":["z"]},"z":{"type":"stack"}}}`,
			want: []want{e(cBudget, "/nodes/y/children/0")}},
		{name: "missing root, one candidate", spec: `{"v":1,"origin":"agent","nodes":{"b":{"type":"stack"}}}`,
			want: []want{e(cBudget, "/root", `use "b"`)}},
		{name: "root not a node", spec: `{"v":1,"origin":"agent","root":"bdy","nodes":{"body":{"type":"stack"}}}`,
			want: []want{e(cBudget, "/root", `"body"`)}},
		{name: "long string", spec: mk(`"t":{"type":"text","props":{"text":"` + strings.Repeat("x", DefaultMaxString+1) + `"}}`),
			want: []want{e(cBudget, "/nodes/t/props/text")}},
		{name: "long label is budget, not props", spec: mk(`"h":{"type":"heading","props":{"text":"` + strings.Repeat("x", DefaultMaxString+1) + `"}}`),
			want: []want{e(cBudget, "/nodes/h/props/text")}},
		{name: "long key", spec: mk(`"t":{"type":"text","props":{"text":"x","` + strings.Repeat("k", 300) + `":1}}`),
			want: []want{e(cBudget, "/nodes/t/props/"+strings.Repeat("k", 300))}},
		{name: "big data image is fine", spec: mk(`"i":{"type":"image","props":{"alt":"x","src":"data:image/png;base64,` + strings.Repeat("A", 100_000) + `"}}`)},
		{name: "too big data image", spec: mk(`"i":{"type":"image","props":{"alt":"x","src":"data:image/png;base64,` + strings.Repeat("A", DefaultMaxDataURL) + `"}}`),
			want: []want{e(cBudget, "/nodes/i/props/src")}},
		{name: "bytes", spec: mk(``, `"state":{"s":"`+strings.Repeat("x", 100)+`"}`), opts: &Options{Limits: Limits{MaxBytes: 100}},
			want: []want{e(cBudget, "")}},
		{name: "json depth", spec: `{"v":1,"state":` + strings.Repeat(`[`, 100) + strings.Repeat(`]`, 100) + `}`,
			want: []want{e(cBudget, "/state"+strings.Repeat("/0", DefaultMaxJSONDepth-1))}},
		{name: "issue cap", spec: mk(strings.Join(many[:20], ",") + `,"x":{"type":"text","props":{"text":"x","a":1,"b":2,"c":3,"d":4,"e":5,"f":6}}`),
			opts: &Options{Limits: Limits{MaxIssues: 3}},
			want: []want{e(cProps, "/nodes/x/props/a"), e(cProps, "/nodes/x/props/b"), e(cBudget, "")}},
	})
}

func TestValidateUnsafe(t *testing.T) {
	t.Parallel()
	link := func(href string) string {
		b, _ := json.Marshal(href)
		return mk(`"l":{"type":"link","props":{"label":"x","href":` + string(b) + `}}`)
	}
	img := func(src string) string {
		b, _ := json.Marshal(src)
		return mk(`"i":{"type":"image","props":{"alt":"x","src":` + string(b) + `}}`)
	}
	cases := []vcase{}
	for _, href := range []string{
		"javascript:alert(1)", "java\tscript:alert(1)", "JaVaScRiPt:alert(1)", "&#106;avascript:alert(1)",
		"&#106avascript:alert(1)", "&#x6A;avascript:alert(1)", "%6Aavascript:alert(1)", "&#x25;6Aavascript:alert(1)",
		" \x00javascript:alert(1)", "java\u200bscript:alert(1)", "javascript&colon;alert(1)", "vbscript:msgbox(1)",
		"data:text/html,<script>alert(1)</script>", "data:image/png;base64,AAAA", "file:///etc/passwd", "jav&#x09;ascript:alert(1)",
		"\njavascript:alert(1)", "ja\rvascript:alert(1)", "blob:https://example.com/x",
		"//evil.example/x", "\\\\evil.example/x", "/\\evil.example/x", "https://bank.example@evil.example/",
		"http://user:pass@evil.example/x", "&#x2F;&#x2F;evil.example/x",
	} {
		cases = append(cases, vcase{name: "href " + href, spec: link(href), want: []want{e(cUnsafe, "/nodes/l/props/href")}})
	}
	for _, href := range []string{"https://example.com/a?b=javascript:x", "http://x", "mailto:a@b.c", "/a/b", "./a:b/c", "#top", "?q=1", "https://example.com/@handle", "/a//b"} {
		cases = append(cases, vcase{name: "href ok " + href, spec: link(href)})
	}
	for _, src := range []string{
		"data:image/svg+xml;base64,PHN2Zz48L3N2Zz4=", "data:image/svg+xml,<svg onload=alert(1)>", "data:text/html;base64,PHNjcmlwdD4=",
		"data:image/png,rawbytes", "data:image/png;base64,<script>", "javascript:alert(1)", "mailto:a@b.c",
	} {
		cases = append(cases, vcase{name: "src " + src, spec: img(src), want: []want{e(cUnsafe, "/nodes/i/props/src")}})
	}
	for _, src := range []string{"data:image/png;base64,iVBORw0KGgo=", "data:image/jpeg;base64,/9j/4AAQ", "data:image/gif;base64,R0lGODlh", "data:image/webp;base64,UklGRg==", "https://example.com/a.svg", "img/a.png"} {
		cases = append(cases, vcase{name: "src ok " + src, spec: img(src)})
	}
	cases = append(cases, []vcase{
		{name: "style prop", spec: mk(`"t":{"type":"text","props":{"text":"x","style":"color:red"}}`), want: []want{e(cUnsafe, "/nodes/t/props/style")}},
		{name: "className prop", spec: mk(`"t":{"type":"text","props":{"text":"x","className":"evil"}}`), want: []want{e(cUnsafe, "/nodes/t/props/className")}},
		{name: "event handler prop", spec: mk(`"b1":{"type":"button","props":{"label":"x","action":"a","onClick":"alert(1)"}}`, `"actions":{"a":{"kind":"refresh","source":"s"}}`, `"sources":{"s":{"kind":"state"}}`),
			want: []want{e(cUnsafe, "/nodes/b1/props/onClick")}},
		{name: "innerHTML prop", spec: mk(`"t":{"type":"text","props":{"text":"x","innerHTML":"<b>x</b>"}}`), want: []want{e(cUnsafe, "/nodes/t/props/innerHTML")}},
		{name: "__proto__ in props", spec: mk(`"t":{"type":"text","props":{"text":"x","__proto__":{"polluted":true}}}`), want: []want{e(cUnsafe, "/nodes/t/props/__proto__")}},
		{name: "constructor in state", spec: mk(``, `"state":{"a":{"constructor":{"prototype":{"x":1}}}}`),
			want: []want{e(cUnsafe, "/state/a/constructor"), e(cUnsafe, "/state/a/constructor/prototype")}},
		{name: "__proto__ node id", spec: `{"v":1,"origin":"agent","root":"b","nodes":{"b":{"type":"stack","children":["__proto__"]},"__proto__":{"type":"stack"}}}`,
			want: []want{e(cUnsafe, "/nodes/__proto__")}},
		{name: "prototype path segment", spec: mk(`"f":{"type":"field-form","props":{"bind":"s","fields":[{"path":"__proto__.polluted","label":"A","kind":"text"}]}}`, `"sources":{"s":{"kind":"state"}}`),
			want: []want{e(cUnsafe, "/nodes/f/props/fields/0/path")}},
		{name: "prototype source path", spec: mk(``, `"sources":{"s":{"kind":"state","path":"/a/__proto__"}}`, `"state":{"a":{}}`),
			want: []want{e(cUnsafe, "/sources/s/path")}},
		{name: "script in text", spec: mk(`"t":{"type":"text","props":{"text":"hi <script>alert(1)</script>"}}`), want: []want{e(cUnsafe, "/nodes/t/props/text")}},
		{name: "svg in heading", spec: mk(`"h":{"type":"heading","props":{"text":"<svg/onload=alert(1)>"}}`), want: []want{e(cUnsafe, "/nodes/h/props/text")}},
		{name: "img in list", spec: mk(`"l":{"type":"list","props":{"items":["ok","<img src=x onerror=alert(1)>"]}}`), want: []want{e(cUnsafe, "/nodes/l/props/items/1")}},
		{name: "markup in confirm", spec: mk(``, `"sources":{"s":{"kind":"state"}}`, `"actions":{"a":{"kind":"refresh","source":"s","confirm":"<iframe src=x>"}}`),
			want: []want{e(cUnsafe, "/actions/a/confirm")}},
		{name: "table link cell", spec: mk(`"t":{"type":"table","props":{"columns":[{"key":"n","label":"N","kind":"link","hrefKey":"u"}],"rows":[{"n":"x","u":"https://ok"},{"n":"y","u":"javascript:alert(1)"}]}}`),
			want: []want{e(cUnsafe, "/nodes/t/props/rows/1/u")}},
		{name: "unknown type keeps URL checks", spec: mk(`"x":{"type":"fancy-link","props":{"href":"javascript:alert(1)","nested":{"imageSrc":"data:image/svg+xml;base64,x"}}}`),
			want: []want{w(cUnknown, "/nodes/x/type"), e(cUnsafe, "/nodes/x/props/href"), e(cUnsafe, "/nodes/x/props/nested/imageSrc")}},
	}...)
	runCases(t, cases)
}

// Every frozen SPEC_* code is produced by some case above; this keeps the
// tables honest when codes are added.
func TestEverySpecCodeCovered(t *testing.T) {
	t.Parallel()
	var spec []switchboard.Code
	for _, c := range switchboard.Codes {
		if strings.HasPrefix(string(c), "SPEC_") {
			spec = append(spec, c)
		}
	}
	mine := []switchboard.Code{cParse, cUnknown, cProps, cAction, cBudget, cUnsafe}
	slices.Sort(spec)
	slices.Sort(mine)
	if diff := cmp.Diff(spec, mine); diff != "" {
		t.Fatalf("SPEC codes changed (-frozen +tested):\n%s", diff)
	}
}

// A chain whose nodes each list their child twice once took exponential
// time to walk (found by FuzzValidate).
func TestValidateDuplicateChildrenChain(t *testing.T) {
	t.Parallel()
	var nodes []string
	for i := range 300 {
		nodes = append(nodes, fmt.Sprintf(`"s%d":{"type":"stack","children":["s%d","s%d"]}`, i, i+1, i+1))
	}
	nodes = append(nodes, `"s300":{"type":"stack"}`)
	raw := `{"v":1,"origin":"agent","root":"s0","nodes":{` + strings.Join(nodes, ",") + `}}`
	_, issues := Validate([]byte(raw), &Options{Limits: Limits{MaxNodes: 400, MaxIssues: 1000}})
	dups, depth := 0, 0
	for _, is := range issues {
		switch {
		case strings.Contains(is.Message, "already a child"):
			dups++
		case strings.Contains(is.Message, "depth"):
			depth++
		}
	}
	if dups != 300 || depth != 1 {
		t.Fatalf("%d duplicate-child issues, %d depth issues:\n%.2000s", dups, depth, dump(issues))
	}
}

func TestValidatePlaceholderKeepsData(t *testing.T) {
	t.Parallel()
	spec, issues := Validate([]byte(mk(`"c":{"type":"sparkline","props":{"series":[1,2,3],"title":"Sales"},"children":[]}`)), nil)
	if spec == nil {
		t.Fatalf("spec refused:\n%s", dump(issues))
	}
	n := spec.Nodes["c"]
	if n.Type != TypePlaceholder {
		t.Fatalf("type = %q, want placeholder", n.Type)
	}
	var props struct {
		OriginalType  string          `json:"originalType"`
		OriginalProps json.RawMessage `json:"originalProps"`
	}
	if err := json.Unmarshal(n.Props, &props); err != nil {
		t.Fatal(err)
	}
	if props.OriginalType != "sparkline" || !jsonEqual(props.OriginalProps, `{"series":[1,2,3],"title":"Sales"}`) {
		t.Fatalf("placeholder props = %s", n.Props)
	}
	// The placeholder spec validates again as it is: nothing is lost on a
	// round trip.
	raw, _ := json.Marshal(spec)
	again, issues := Validate(raw, nil)
	if again == nil || len(issues) != 0 {
		t.Fatalf("placeholder spec does not revalidate cleanly:\n%s", dump(issues))
	}
}

func TestValidateDeterministic(t *testing.T) {
	t.Parallel()
	raw := []byte(mk(`"a":{"type":"text","props":{"text":"x","style":"s","b":1,"c":2,"onClick":"x","__proto__":1}},
		"b":{"type":"link","props":{"href":"javascript:x","label":"x","zz":1}},"c":{"type":"nope"}`, `"state":{"x":{"constructor":1,"prototype":2,"__proto__":3}}`))
	_, first := Validate(raw, nil)
	for range 20 {
		_, again := Validate(raw, nil)
		if diff := cmp.Diff(first, again); diff != "" {
			t.Fatalf("issue order changed between runs:\n%s", diff)
		}
	}
}

func TestValidateDoesNotAliasInput(t *testing.T) {
	t.Parallel()
	raw := []byte(mk(`"t":{"type":"text","props":{"text":"hello"}}`))
	spec, _ := Validate(raw, nil)
	for i := range raw {
		raw[i] = ' '
	}
	if !jsonEqual(spec.Nodes["t"].Props, `{"text":"hello"}`) {
		t.Fatalf("props changed with the caller's buffer: %s", spec.Nodes["t"].Props)
	}
}

func jsonEqual(a []byte, b string) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	return cmp.Equal(x, y)
}

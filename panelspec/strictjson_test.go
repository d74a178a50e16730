package panelspec

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/switchboardhq/switchboard"
)

func TestParseStrictAccepts(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		`{}`, `[]`, `"x"`, `0`, `-0`, `1.5e10`, `-123456789012345`, `9007199254740991`, `-9007199254740991`,
		`1e300`, `true`, `false`, `null`, ` {"a" : [1, 2, {"b": null}] } `,
		`"\u00e9\ud83d\ude00\n\t\"\\\/"`, `{"a":1,"b":2,"A_":3}`, `{"é":1,"É_":2}`,
	} {
		ps, fail := parseStrict(in, 64, 1000, 1000)
		if fail != nil {
			t.Errorf("%s: %s", in, fail.msg)
			continue
		}
		// The value means what encoding/json says it means.
		var want any
		if err := json.Unmarshal([]byte(in), &want); err != nil {
			t.Fatal(err)
		}
		if got := ps.root().toAny(); !cmp.Equal(got, want) {
			t.Errorf("%s: parsed %#v, encoding/json %#v", in, got, want)
		}
	}
}

func TestParseStrictRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, pointer string
		code        switchboard.Code
	}{
		{`{"a":1,"a":2}`, "/a", cParse},
		{`{"type":1,"Type":2}`, "/Type", cParse},
		{`{"TYPE":1,"type":2}`, "/type", cParse},
		{`{"Kelvin":1,"\u212aelvin":2}`, "/\u212aelvin", cParse}, // Kelvin sign folds to k
		{`{"a\u0000":1}`, "/a\x00", cParse},
		{`{"a\u200b":1}`, "/a\u200b", cParse},
		{`{"a\u007f":1}`, "/a\x7f", cParse},
		{`{"n":1e400}`, "/n", cParse},
		{`{"n":-1e400}`, "/n", cParse},
		{`[9007199254740992]`, "/0", cParse},
		{`[-9007199254740993]`, "/0", cParse},
		{`["\ud800"]`, "/0", cParse},
		{`["\udc00\ud800"]`, "/0", cParse},
		{`["\ud800\u0041"]`, "/0", cParse},
		{`["a` + "\n" + `"]`, "/0", cParse},
		{`["\x"]`, "/0", cParse},
		{`[01]`, "", cParse},
		{`[1.]`, "/0", cParse},
		{`[.5]`, "/0", cParse},
		{`[+1]`, "/0", cParse},
		{`[1e]`, "/0", cParse},
		{`[NaN]`, "/0", cParse},
		{`[tru]`, "/0", cParse},
		{`{"a" 1}`, "/a", cParse},
		{`{"a":1,}`, "", cParse},
		{`[1,]`, "/1", cParse},
		{`{} {}`, "", cParse},
		{``, "", cParse},
		{`[[[[`, "/0/0/0/0", cParse},
		{strings.Repeat("[", 65) + strings.Repeat("]", 65), "/0" + strings.Repeat("/0", 63), cBudget},
	} {
		_, fail := parseStrict(tc.in, 64, 1000, 1000)
		if fail == nil {
			t.Errorf("%q: accepted", tc.in)
			continue
		}
		if fail.code != tc.code || fail.pointer != tc.pointer {
			t.Errorf("%q: got %s at %q (%s), want %s at %q", tc.in, fail.code, fail.pointer, fail.msg, tc.code, tc.pointer)
		}
	}
}

func TestParseStrictLargeObjectDuplicates(t *testing.T) {
	t.Parallel()
	// Past smallObject members the parser indexes folded keys; duplicates
	// are still found, both exact and case variants, either order.
	var members []string
	for i := range 40 {
		members = append(members, `"k`+string(rune('a'+i%26))+strings.Repeat("x", i/26)+`":1`)
	}
	base := strings.Join(members, ",")
	for _, extra := range []string{`"kb":2`, `"KB":2`, `"kB":2`} {
		if _, fail := parseStrict(`{`+base+`,`+extra+`}`, 64, 1000, 1000); fail == nil {
			t.Errorf("duplicate %s in a large object accepted", extra)
		}
	}
	if _, fail := parseStrict(`{`+base+`,"new":1}`, 64, 1000, 1000); fail != nil {
		t.Errorf("large object refused: %s", fail.msg)
	}
}

func TestParseStrictNodeCap(t *testing.T) {
	t.Parallel()
	var nodes []string
	for i := range 11 {
		nodes = append(nodes, `"n`+strings.Repeat("x", i)+`":{}`)
	}
	in := `{"nodes":{` + strings.Join(nodes, ",") + `}}`
	if _, fail := parseStrict(in, 64, 10, 1000); fail == nil || fail.code != cBudget {
		t.Fatalf("11 nodes with a cap of 10: %+v", fail)
	}
	if _, fail := parseStrict(in, 64, 11, 1000); fail != nil {
		t.Fatalf("11 nodes with a cap of 11: %s", fail.msg)
	}
}

// The parser records prototype keys and long strings while parsing; scan
// finds them by walking. Both must agree, or version 0 specs would be
// checked differently from version 1 specs.
func TestParseRecordsMatchScan(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("y", 30)
	in := `{"__proto__":1,"a":[{"constructor":{"prototype":"` + long + `"}},"data:` + long + `"],"` + long + `":2,"s":"short"}`
	ps, fail := parseStrict(in, 64, 100, 20)
	if fail != nil {
		t.Fatal(fail.msg)
	}
	proto, lv := scan(ps.root(), 20)
	norm := func(p [][]string) []string {
		var out []string
		for _, x := range p {
			out = append(out, ptr(x...))
		}
		sort.Strings(out)
		return out
	}
	if diff := cmp.Diff(norm(ps.proto), norm(proto)); diff != "" {
		t.Errorf("proto paths (-parser +scan):\n%s", diff)
	}
	if len(ps.proto) != 3 {
		t.Errorf("want 3 prototype keys, got %v", norm(ps.proto))
	}
	sortLong := func(l []longValue) []longValue {
		sort.Slice(l, func(i, j int) bool { return ptr(l[i].path...) < ptr(l[j].path...) })
		return l
	}
	if diff := cmp.Diff(sortLong(ps.long), sortLong(lv), cmp.AllowUnexported(longValue{})); diff != "" {
		t.Errorf("long values (-parser +scan):\n%s", diff)
	}
	if len(ps.long) != 3 {
		t.Errorf("want 3 long values, got %+v", ps.long)
	}
}

func TestValueJSONRoundTrip(t *testing.T) {
	t.Parallel()
	in := `{"a":[1,-2.5,1e+300,true,false,null,"x\u003c\"y"],"b":{},"c":[],"d":0.1}`
	ps, fail := parseStrict(in, 64, 100, 1000)
	if fail != nil {
		t.Fatal(fail.msg)
	}
	out := ps.root().appendJSON(nil)
	if !jsonEqual(out, in) {
		t.Fatalf("round trip: %s", out)
	}
	back := fromAny(ps.root().toAny())
	if !jsonEqual(back.appendJSON(nil), in) {
		t.Fatalf("fromAny round trip: %s", back.appendJSON(nil))
	}
}

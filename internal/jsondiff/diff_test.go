package jsondiff

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
)

func TestDiffAppliesWithJSONPatch(t *testing.T) {
	rnd := rand.New(rand.NewPCG(6902, 1))
	var gen func(depth int) any
	gen = func(depth int) any {
		switch k := rnd.IntN(7); {
		case depth > 3 || k == 0:
			return []any{nil, true, 1.5, 42, "x", "a/b~c"}[rnd.IntN(6)]
		case k < 4:
			m := map[string]any{}
			for range rnd.IntN(5) {
				m[[]string{"a", "b", "c/d", "e~f"}[rnd.IntN(4)]] = gen(depth + 1)
			}
			return m
		case k < 6:
			var s []any
			for range rnd.IntN(5) {
				s = append(s, gen(depth+1))
			}
			return s
		default: // a list of records, diffed by id
			var s []any
			for range rnd.IntN(6) {
				s = append(s, map[string]any{"id": []string{"p1", "p2", "p3", "p4"}[rnd.IntN(4)], "v": gen(depth + 1)})
			}
			return s
		}
	}
	for i := range 2000 {
		a, _ := json.Marshal(map[string]any{"v": gen(0)}) // a state is an object
		b, _ := json.Marshal(map[string]any{"v": gen(0)})
		if rnd.IntN(3) == 0 {
			b = a // equal documents diff to nothing
		}
		ops, err := Diff(a, b)
		if err != nil {
			t.Fatal(err)
		}
		if string(a) == string(b) && len(ops) != 0 {
			t.Fatalf("%d: equal documents gave %d ops", i, len(ops))
		}
		pb, _ := json.Marshal(ops)
		if len(ops) == 0 {
			pb = []byte("[]")
		}
		p, err := jsonpatch.DecodePatch(pb)
		if err != nil {
			t.Fatalf("%d: %v: %s", i, err, pb)
		}
		got, err := p.Apply(a)
		if err != nil {
			t.Fatalf("%d: apply %s to %s: %v", i, pb, a, err)
		}
		// (jsonpatch.Equal panics on a null inside an array in v5.9.11.)
		var vg, vb any
		_ = json.Unmarshal(got, &vg)
		_ = json.Unmarshal(b, &vb)
		if !reflect.DeepEqual(vg, vb) {
			t.Fatalf("%d: %s applied to %s gave %s, want %s", i, pb, a, got, b)
		}
	}
}

func TestDiffIsSmallForAFieldChange(t *testing.T) {
	a := `{"workspace":{"contexts":[{"id":"c1","panels":[{"id":"p1","dirty":false}]},{"id":"c2"}],"tokens":120}}`
	b := `{"workspace":{"contexts":[{"id":"c1","panels":[{"id":"p1","dirty":true}]},{"id":"c2"}],"tokens":121}}`
	ops, err := Diff([]byte(a), []byte(b))
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprintf("%d %s %s", len(ops), ops[0].Path, ops[1].Path); got != "2 /workspace/contexts/0/panels/0/dirty /workspace/tokens" {
		t.Fatalf("ops: %+v", ops)
	}
}

package bench

import (
	"fmt"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard/internal/benchkit"
	"github.com/switchboardhq/switchboard/internal/search"
)

// ablations are the settings tried around search.DefaultFields; the
// table they produce is in README.md. One setting must serve both sets: we
// never pick weights per set.
func ablations() []struct {
	name string
	opts search.Options
} {
	d := search.DefaultFields()
	with := func(f func(*search.Fields)) *search.Fields { c := d; f(&c); return &c }
	flat := search.Field{Weight: 1, B: 0.75}
	off := search.Field{}
	return []struct {
		name string
		opts search.Options
	}{
		{"defaults", search.Options{}},
		{"all fields weight 1, b 0.75", search.Options{Fields: &search.Fields{Name: flat, Namespace: flat, Summary: flat, Description: flat, Params: flat, ParamDocs: flat}}},
		{"name+description only, weight 1", search.Options{Fields: &search.Fields{Name: flat, Namespace: flat, Summary: flat, Description: flat, Params: off, ParamDocs: off}}},
		{"defaults, no schema text", search.Options{Fields: with(func(f *search.Fields) { f.Params, f.ParamDocs = off, off })}},
		{"defaults, no param docs", search.Options{Fields: with(func(f *search.Fields) { f.ParamDocs = off })}},
		{"name weight 2", search.Options{Fields: with(func(f *search.Fields) { f.Name.Weight = 2 })}},
		{"name weight 5", search.Options{Fields: with(func(f *search.Fields) { f.Name.Weight = 5 })}},
		{"namespace weight 1", search.Options{Fields: with(func(f *search.Fields) { f.Namespace.Weight = 1 })}},
		{"namespace weight 3", search.Options{Fields: with(func(f *search.Fields) { f.Namespace.Weight = 3 })}},
		{"params weight 0.5", search.Options{Fields: with(func(f *search.Fields) { f.Params.Weight = 0.5 })}},
		{"params weight 2", search.Options{Fields: with(func(f *search.Fields) { f.Params.Weight = 2 })}},
		{"param docs weight 1", search.Options{Fields: with(func(f *search.Fields) { f.ParamDocs.Weight = 1 })}},
		{"param docs weight 0.25", search.Options{Fields: with(func(f *search.Fields) { f.ParamDocs.Weight = 0.25 })}},
		{"description weight 2", search.Options{Fields: with(func(f *search.Fields) { f.Description.Weight = 2 })}},
		{"name b 0.75", search.Options{Fields: with(func(f *search.Fields) { f.Name.B, f.Namespace.B = 0.75, 0.75 })}},
		{"name b 0.25", search.Options{Fields: with(func(f *search.Fields) { f.Name.B, f.Namespace.B = 0.25, 0.25 })}},
		{"description b 0.5", search.Options{Fields: with(func(f *search.Fields) { f.Description.B = 0.5 })}},
		{"description b 0.9", search.Options{Fields: with(func(f *search.Fields) { f.Description.B = 0.9 })}},
		{"k1 0.9", search.Options{K1: 0.9}},
		{"k1 1.5", search.Options{K1: 1.5}},
		{"k1 2.0", search.Options{K1: 2.0}},
	}
}

// TestRetrievalAblation scores every setting of ablations on both sets. It
// takes a few seconds, so it runs only when asked for by name:
// go test ./bench -run TestRetrievalAblation -v
func TestRetrievalAblation(t *testing.T) {
	if !strings.Contains(fmt.Sprint(testRunFlag()), "Ablation") {
		t.Skip("run with -run TestRetrievalAblation")
	}
	sets := loadSets(t)
	var b strings.Builder
	b.WriteString("\n| setting | toolbench R@1 | R@5 | R@10 | MRR | sealtools R@1 | R@5 | R@10 | MRR |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, a := range ablations() {
		fmt.Fprintf(&b, "| %s |", a.name)
		for _, set := range sets {
			x := search.New(&a.opts)
			x.Replace(set.Tools)
			s, err := benchkit.EvaluateRetrieval(set.Queries, benchkit.IndexSearcher(x))
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, " %.1f | %.1f | %.1f | %.1f |", 100*s.R1, 100*s.R5, 100*s.R10, 100*s.MRR)
		}
		b.WriteString("\n")
	}
	t.Log(b.String())
}

package search

import (
	"math"
	"slices"
	"sync"
)

// Neighbours scores learned queries one by one instead of pooling their
// words into the tool's learned field: a search is compared with each
// stored (tool, query) pair as a whole, and only a pair alike enough
// (cosine of IDF-weighted term sets at least Threshold) counts. A search
// unlike every learned query is ranked by the tool's own words alone.
//
// With Scale > 0 the learned field is not scored; a tool whose best pair
// has similarity s ≥ Threshold gains Scale × weight × s × the search's
// best words-only score (weight is the pair's Learned.Weight), so a boost
// is bounded by Scale times that score whatever was learned. With Scale 0
// and Gate set, the learned field is scored only for a search whose best
// pair reaches Threshold; with PerTool too, only the field of a tool whose
// own best pair reaches it. Threshold 0 turns both off.
type Neighbours struct {
	Threshold float64
	Scale     float64
	Gate      bool
	PerTool   bool
}

// on reports whether learned queries are scored as neighbours.
func (n Neighbours) on() bool { return n.Threshold > 0 && (n.Scale > 0 || n.Gate) }

// nbIndex indexes each learned (tool, query) pair as its own entry, for
// similarity to a search. Entries of a tool are replaced together; old
// ones stay as tombstones until they outnumber the live ones. Written
// under the Index's writeMu and mu; read under mu's read lock.
type nbIndex struct {
	an      analyzer
	terms   map[string]int32
	df      []int32   // live entries holding the term, by term id
	post    [][]int32 // entry ids by term id
	entries []nbEntry
	byTool  map[string][]int32
	dead    int
	// idfs is each term's idf over the live entries, computed once an
	// edit is done (refresh) rather than per entry term per search.
	idfs []float64
	// scratch holds per-search dot products by entry: a dense slice is
	// several times cheaper than a map on the search path.
	scratch sync.Pool
}

// nbScratch is one search's dot products and the entries it touched.
type nbScratch struct {
	dot     []float64
	touched []int32
}

type nbEntry struct {
	tool   string
	weight float64
	terms  []int32 // distinct
	alive  bool
}

func newNbIndex(learned map[string][]Learned) *nbIndex {
	nb := &nbIndex{an: analyzer{stems: map[string]string{}}, terms: map[string]int32{}, byTool: map[string][]int32{}}
	for name, ls := range learned {
		nb.put(name, ls)
	}
	nb.refresh()
	return nb
}

// set replaces the entries of tool by ls (none: drops them).
func (nb *nbIndex) set(tool string, ls []Learned) {
	nb.put(tool, ls)
	nb.refresh()
}

// refresh recomputes every term's idf: the live count and document
// frequencies changed.
func (nb *nbIndex) refresh() {
	nb.idfs = slices.Grow(nb.idfs[:0], len(nb.df))[:len(nb.df)]
	for t, df := range nb.df {
		nb.idfs[t] = nb.idf(df)
	}
}

// put is set without the refresh.
func (nb *nbIndex) put(tool string, ls []Learned) {
	for _, e := range nb.byTool[tool] {
		en := &nb.entries[e]
		for _, t := range en.terms {
			nb.df[t]--
		}
		*en = nbEntry{}
		nb.dead++
	}
	delete(nb.byTool, tool)
	var words []string
	for _, l := range ls {
		words = nb.an.terms(words[:0], l.Query, true)
		slices.Sort(words)
		words = slices.Compact(words)
		if len(words) == 0 {
			continue
		}
		id := int32(len(nb.entries))
		en := nbEntry{tool: tool, weight: l.Weight, alive: true, terms: make([]int32, 0, len(words))}
		for _, w := range words {
			t, ok := nb.terms[w]
			if !ok {
				t = int32(len(nb.post))
				nb.terms[w] = t
				nb.post = append(nb.post, nil)
				nb.df = append(nb.df, 0)
			}
			nb.df[t]++
			nb.post[t] = append(nb.post[t], id)
			en.terms = append(en.terms, t)
		}
		nb.entries = append(nb.entries, en)
		nb.byTool[tool] = append(nb.byTool[tool], id)
	}
}

// live is the number of live entries.
func (nb *nbIndex) live() int { return len(nb.entries) - nb.dead }

// needsCompact reports whether tombstones outnumber live entries enough
// that rebuilding pays.
func (nb *nbIndex) needsCompact() bool { return nb.dead >= 1024 && nb.dead >= nb.live() }

// idf is a term's inverse document frequency over the live entries, from
// its df (0 for a term no entry holds: the largest).
func (nb *nbIndex) idf(df int32) float64 {
	n := float64(nb.live())
	return math.Log(1 + (n-float64(df)+0.5)/(float64(df)+0.5))
}

// nbMatch is a tool's best learned entry for one search.
type nbMatch struct {
	tool   string
	sim    float64
	weight float64
}

// similar returns, for each tool with an entry whose similarity to the
// search terms words (distinct) is at least threshold, its best such
// entry by weight × similarity, and the best similarity over all
// entries.
func (nb *nbIndex) similar(words []string, threshold float64) (best float64, out []nbMatch) {
	if nb.live() == 0 || len(words) == 0 {
		return 0, nil
	}
	sc, _ := nb.scratch.Get().(*nbScratch)
	if sc == nil {
		sc = &nbScratch{}
	}
	if len(sc.dot) < len(nb.entries) {
		sc.dot = make([]float64, len(nb.entries)+len(nb.entries)/4)
	}
	dot := sc.dot
	defer func() {
		for _, e := range sc.touched {
			dot[e] = 0
		}
		sc.touched = sc.touched[:0]
		nb.scratch.Put(sc)
	}()
	qNorm := 0.0
	for _, w := range words {
		t, ok := nb.terms[w]
		if !ok || nb.df[t] == 0 {
			idf := nb.idf(0)
			qNorm += idf * idf
			continue
		}
		idf := nb.idfs[t]
		qNorm += idf * idf
		for _, e := range nb.post[t] {
			if nb.entries[e].alive {
				if dot[e] == 0 {
					sc.touched = append(sc.touched, e)
				}
				dot[e] += idf * idf
			}
		}
	}
	qNorm = math.Sqrt(qNorm)
	byTool := map[string]int{}
	ids := sc.touched
	slices.Sort(ids) // discovery order must not decide ties
	for _, e := range ids {
		en := &nb.entries[e]
		eNorm := 0.0
		for _, t := range en.terms {
			idf := nb.idfs[t]
			eNorm += idf * idf
		}
		sim := dot[e] / (qNorm * math.Sqrt(eNorm))
		best = max(best, sim)
		if sim < threshold {
			continue
		}
		m := nbMatch{en.tool, sim, en.weight}
		if i, ok := byTool[en.tool]; !ok {
			byTool[en.tool] = len(out)
			out = append(out, m)
		} else if m.sim*m.weight > out[i].sim*out[i].weight {
			out[i] = m
		}
	}
	return best, out
}

// DefaultNeighbours returns the default: the per-tool gate at 0.2, so a
// tool's learned field (DefaultFields) counts only for a search alike
// one of the requests it learned. Chosen with the field's weight
// (bench/README.md, "Learning from use", round 7).
func DefaultNeighbours() Neighbours { return Neighbours{Threshold: 0.2, Gate: true, PerTool: true} }

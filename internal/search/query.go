package search

import (
	"cmp"
	"container/heap"
	"encoding/base64"
	"encoding/binary"
	"hash/fnv"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/switchboardhq/switchboard"
)

// Paging limits of one search.
const (
	DefaultLimit = 10
	MaxLimit     = 100
	// MaxQueryBytes bounds the query text; a longer one is refused rather
	// than silently cut, which would change its meaning.
	MaxQueryBytes = 4096
)

// Search returns one page of the tools matching q, best first, among those
// for which allow reports true (nil allows all). Ties are broken by name so
// the order is deterministic. An empty query lists every tool by name; a
// query with no indexable word ("the of") matches nothing. allow runs under
// the index's read lock, only for tools that could make the page, and must
// not call the Index.
//
// A cursor continues the query that issued it; one from another query is
// INVALID_INPUT, and one issued before the indexed catalog changed is
// CONFLICT, because positions are no longer comparable: search again.
func (x *Index) Search(q switchboard.SearchQuery, allow func(switchboard.Tool) bool) (switchboard.SearchResult, error) {
	limit, err := checkQuery(q)
	if err != nil {
		return switchboard.SearchResult{}, err
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	c := x.c

	qh := queryHash(q)
	offset := 0
	if q.Cursor != "" {
		cur, err := decodeCursor(q.Cursor)
		switch {
		case err != nil:
			return switchboard.SearchResult{}, err
		case cur.query != qh:
			return switchboard.SearchResult{}, switchboard.Errorf(switchboard.CodeInvalidInput, "cursor belongs to another query")
		case cur.catalog != c.fingerprint:
			return switchboard.SearchResult{}, switchboard.Errorf(switchboard.CodeConflict, "catalog changed since the cursor was issued; search again without a cursor")
		}
		offset = cur.offset
	}

	keep := func(id uint32) bool {
		d := &c.docs[id]
		return d.alive && (q.Surface == "" || d.tool.Surface == q.Surface) &&
			(allow == nil || allow(d.tool))
	}
	// Select one hit past the page to learn whether another page exists.
	top := &topK{k: offset + limit + 1, docs: c.docs}
	switch {
	case strings.TrimSpace(q.Query) == "":
		c.listAll(top, keep)
	case q.Regex:
		if err := c.match(q.Query, top, keep, time.Now); err != nil {
			return switchboard.SearchResult{}, err
		}
	default:
		x.score(c, q.Query, top, keep)
	}
	hits := top.sorted()

	res := switchboard.SearchResult{Items: []switchboard.SearchHit{}}
	for i := offset; i < len(hits) && i < offset+limit; i++ {
		d := &c.docs[hits[i].doc]
		res.Items = append(res.Items, switchboard.SearchHit{
			Name: d.tool.Name, Summary: d.summary, Surface: d.tool.Surface,
			Class: d.tool.Class, Approval: d.tool.Approval, Score: round(hits[i].score),
		})
	}
	if len(hits) > offset+limit {
		res.NextCursor = cursor{offset: offset + limit, query: qh, catalog: c.fingerprint}.encode()
	}
	return res, nil
}

func checkQuery(q switchboard.SearchQuery) (limit int, err error) {
	switch {
	case len(q.Query) > MaxQueryBytes:
		return 0, switchboard.Errorf(switchboard.CodeInvalidInput, "query is longer than %d bytes", MaxQueryBytes)
	case q.Limit < 0:
		return 0, switchboard.Errorf(switchboard.CodeInvalidInput, "limit must not be negative")
	case q.Regex && len(q.Query) > MaxRegexBytes:
		return 0, switchboard.Errorf(switchboard.CodeInvalidInput, "regex is longer than %d bytes", MaxRegexBytes)
	case q.Surface != "" && q.Surface != switchboard.SurfaceAPI && q.Surface != switchboard.SurfaceBrowser:
		return 0, switchboard.Errorf(switchboard.CodeInvalidInput, "unknown surface %q", q.Surface)
	case q.Limit == 0:
		return DefaultLimit, nil
	}
	return min(q.Limit, MaxLimit), nil
}

// listAll offers every kept doc with score 0, so ties order them by name.
func (c *corpus) listAll(top *topK, keep func(uint32) bool) {
	for id := range c.docs {
		if top.admits(0, uint32(id)) && keep(uint32(id)) {
			top.push(0, uint32(id))
		}
	}
}

// accumulator holds per-doc scores of one search; pooled because a dense
// slice over the catalog is the fastest accumulator and too big to
// allocate per query at 100k tools. learned is the learned field's own
// score when the index boosts rather than weighs it (LearnedBoost).
type accumulator struct {
	score   []float64
	learned []float64
	base    []float64 // words-only score, for LearnedGuard's TopK
	touched []uint32
}

// score ranks the docs matching text by BM25F (plus the learned boost, if
// on) and offers them to top.
func (x *Index) score(c *corpus, text string, top *topK, keep func(uint32) bool) {
	words := c.an.terms(nil, text, false)
	if len(words) == 0 {
		return
	}
	// Each distinct term counts once (BM25's k3 = 0): agents write long,
	// multi-part requests that repeat boilerplate ("retrieve ... then
	// retrieve ..."), and weighting repeats measurably hurt retrieval
	// (bench/README.md). Sorted order makes the float sums, and so ties,
	// independent of word order.
	slices.Sort(words)
	words = slices.Compact(words)
	acc, _ := x.accPool.Get().(*accumulator)
	if acc == nil || len(acc.score) < len(c.docs) {
		n := len(c.docs) + len(c.docs)/4
		acc = &accumulator{score: make([]float64, n), learned: make([]float64, n), base: make([]float64, n)}
	}
	boost := x.boost.Scale > 0
	// Learned queries as neighbours: the learned field counts only when
	// gated open; the boost is added once the words-only scores are in.
	skipLearned := false
	var near []nbMatch
	var open map[uint32]bool // PerTool: the docs whose learned field counts
	if x.nb != nil {
		var best float64
		best, near = x.nb.similar(words, x.nbOpts.Threshold)
		skipLearned = x.nbOpts.Scale > 0 || best < x.nbOpts.Threshold
		if x.nbOpts.PerTool && !skipLearned {
			open = make(map[uint32]bool, len(near))
			for _, m := range near {
				if id, ok := c.byNm[m.tool]; ok {
					open[uint32(id)] = true
				}
			}
		}
		if x.nbOpts.Scale == 0 {
			near = nil
		}
	}
	topK := x.guard.TopK > 0 && !skipLearned

	n := float64(len(c.byNm))
	var avg [numFields]float64
	for fi := range numFields {
		avg[fi] = float64(c.fieldLen[fi]) / max(n, 1)
	}
	sat := func(tf float64) float64 { return tf * (x.k1 + 1) / (x.k1 + tf) }
	for _, w := range words {
		tid, ok := c.terms[w]
		if !ok || c.df[tid] == 0 {
			continue
		}
		df := float64(c.df[tid])
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		p := c.post[tid]
		distinct := 1.0 // LearnedGuard's Distinct: the learned field's share
		if x.guard.Distinct && !skipLearned && c.learnedDocs > 0 {
			dfL := 0
			for _, e := range p {
				if e.field == fieldLearned && c.docs[e.doc].alive {
					dfL++
				}
			}
			nl := float64(c.learnedDocs)
			idfL := func(df float64) float64 { return math.Log(1 + (nl-df+0.5)/(df+0.5)) }
			distinct = idfL(float64(dfL)) / idfL(0)
		}
		for j := 0; j < len(p); {
			id := p[j].doc
			d := &c.docs[id]
			tf, tfL, tfB := 0.0, 0.0, 0.0
			for ; j < len(p) && p[j].doc == id; j++ {
				fi := p[j].field
				if fi == fieldLearned && (skipLearned || (open != nil && !open[id])) {
					continue
				}
				if boost && fi == fieldLearned {
					norm := 1.0
					if avg[fi] > 0 {
						norm = 1 - x.boost.B + x.boost.B*float64(d.length[fi])/avg[fi]
					}
					tfL += float64(p[j].tf) / tfUnit / norm
					continue
				}
				norm := 1.0
				if avg[fi] > 0 {
					norm = 1 - x.b[fi] + x.b[fi]*float64(d.length[fi])/avg[fi]
				}
				w := x.weights[fi] * float64(p[j].tf) / tfUnit / norm
				if fi == fieldLearned {
					w *= distinct
				} else {
					tfB += w
				}
				tf += w
			}
			if !d.alive || (tf == 0 && tfL == 0) {
				continue
			}
			if acc.score[id] == 0 && acc.learned[id] == 0 {
				acc.touched = append(acc.touched, id)
			}
			if tf > 0 {
				acc.score[id] += idf * sat(tf)
			}
			if topK && tfB > 0 {
				acc.base[id] += idf * sat(tfB)
			}
			if tfL > 0 {
				acc.learned[id] += idf * sat(tfL)
			}
		}
	}
	if boost {
		x.addBoost(acc)
	}
	if len(near) > 0 {
		x.addNeighbours(c, acc, near)
	}
	if topK {
		x.keepTopK(acc)
	}
	for _, id := range acc.touched {
		s := acc.score[id]
		acc.score[id], acc.learned[id], acc.base[id] = 0, 0, 0
		if s > 0 && top.admits(s, id) && keep(id) {
			top.push(s, id)
		}
	}
	acc.touched = acc.touched[:0]
	// Returned only when clean: if allow panicked, acc still holds scores.
	x.accPool.Put(acc)
}

// addBoost adds each touched doc's bounded learned boost to its base score
// (LearnedBoost).
func (x *Index) addBoost(acc *accumulator) {
	best, floor := 0.0, 0.0
	for _, id := range acc.touched {
		best = max(best, acc.score[id])
	}
	if x.boost.TopN > 0 {
		base := make([]float64, 0, len(acc.touched))
		for _, id := range acc.touched {
			if acc.score[id] > 0 {
				base = append(base, acc.score[id])
			}
		}
		if len(base) > x.boost.TopN {
			slices.SortFunc(base, func(a, b float64) int { return cmp.Compare(b, a) })
			floor = base[x.boost.TopN-1]
		}
	}
	limit := math.Inf(1)
	if x.boost.Cap > 0 && best > 0 {
		limit = x.boost.Cap * best
	}
	for _, id := range acc.touched {
		l := acc.learned[id]
		if l == 0 || (x.boost.TopN > 0 && (acc.score[id] == 0 || acc.score[id] < floor)) {
			continue
		}
		acc.score[id] += min(x.boost.Scale*l, limit)
	}
}

// keepTopK gives every touched doc outside the words-only top TopK its
// words-only score (LearnedGuard): learning may reorder those the
// catalog's own text ranks first, not bring up others. Ties at the TopK-th
// score all stay in.
func (x *Index) keepTopK(acc *accumulator) {
	base := make([]float64, 0, len(acc.touched))
	for _, id := range acc.touched {
		if acc.base[id] > 0 {
			base = append(base, acc.base[id])
		}
	}
	floor := 0.0
	if len(base) > x.guard.TopK {
		slices.SortFunc(base, func(a, b float64) int { return cmp.Compare(b, a) })
		floor = base[x.guard.TopK-1]
	}
	for _, id := range acc.touched {
		if acc.base[id] == 0 || acc.base[id] < floor {
			acc.score[id] = acc.base[id]
		}
	}
}

// addNeighbours adds each near learned query's bounded boost to its
// tool's score (Neighbours).
func (x *Index) addNeighbours(c *corpus, acc *accumulator, near []nbMatch) {
	best := 0.0
	for _, id := range acc.touched {
		best = max(best, acc.score[id])
	}
	if best == 0 {
		best = 1 // no tool matches by its words: the learned pairs alone rank
	}
	for _, m := range near {
		id, ok := c.byNm[m.tool]
		if !ok {
			continue
		}
		if acc.score[id] == 0 && acc.learned[id] == 0 {
			acc.touched = append(acc.touched, uint32(id))
		}
		acc.score[uint32(id)] += x.nbOpts.Scale * m.weight * m.sim * best
	}
}

// round keeps scores readable on the wire; ranking uses the exact value.
func round(s float64) float64 { return math.Round(s*1e4) / 1e4 }

type hit struct {
	score float64
	doc   uint32
}

// topK keeps the k best hits seen, ordered by score descending then name
// ascending, as a min-heap whose root is the worst kept hit.
type topK struct {
	k    int
	docs []doc
	h    []hit
}

func (t *topK) better(a, b hit) bool {
	if a.score != b.score {
		return a.score > b.score
	}
	return t.docs[a.doc].tool.Name < t.docs[b.doc].tool.Name
}

// admits reports whether a hit would be kept; checked before keep so the
// caller's allow function runs only for hits that could make the page.
func (t *topK) admits(score float64, id uint32) bool {
	return len(t.h) < t.k || t.better(hit{score, id}, t.h[0])
}

func (t *topK) push(score float64, id uint32) {
	if len(t.h) < t.k {
		heap.Push(t, hit{score, id})
		return
	}
	t.h[0] = hit{score, id}
	heap.Fix(t, 0)
}

func (t *topK) sorted() []hit {
	slices.SortFunc(t.h, func(a, b hit) int {
		if t.better(a, b) {
			return -1
		}
		return 1
	})
	return t.h
}

// heap.Interface, worst hit first.
func (t *topK) Len() int           { return len(t.h) }
func (t *topK) Less(i, j int) bool { return t.better(t.h[j], t.h[i]) }
func (t *topK) Swap(i, j int)      { t.h[i], t.h[j] = t.h[j], t.h[i] }
func (t *topK) Push(v any)         { t.h = append(t.h, v.(hit)) }
func (t *topK) Pop() any {
	v := t.h[len(t.h)-1]
	t.h = t.h[:len(t.h)-1]
	return v
}

// cursor is the opaque continuation of a search: the offset of the next
// page, the query it belongs to and the catalog it was computed over.
type cursor struct {
	offset  int
	query   uint64
	catalog uint64
}

const cursorVersion = 1

func (c cursor) encode() string {
	b := []byte{cursorVersion}
	b = binary.AppendUvarint(b, uint64(c.offset))
	b = binary.BigEndian.AppendUint64(b, c.query)
	b = binary.BigEndian.AppendUint64(b, c.catalog)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s string) (cursor, error) {
	bad := switchboard.Errorf(switchboard.CodeInvalidInput, "malformed cursor")
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) < 1 || b[0] != cursorVersion {
		return cursor{}, bad
	}
	off, n := binary.Uvarint(b[1:])
	if n <= 0 || len(b) != 1+n+16 || off > math.MaxInt32 {
		return cursor{}, bad
	}
	b = b[1+n:]
	return cursor{
		offset:  int(off),
		query:   binary.BigEndian.Uint64(b),
		catalog: binary.BigEndian.Uint64(b[8:]),
	}, nil
}

// queryHash identifies what a cursor continues: the query text and surface.
// The limit may change from page to page.
func queryHash(q switchboard.SearchQuery) uint64 {
	h := fnv.New64a()
	h.Write([]byte(strings.TrimSpace(q.Query)))
	h.Write([]byte{0})
	if q.Regex {
		h.Write([]byte("regex\x00"))
	}
	h.Write([]byte(q.Surface))
	return h.Sum64()
}

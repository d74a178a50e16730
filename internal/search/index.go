package search

import (
	"hash/fnv"
	"slices"
	"sync"

	"github.com/switchboardhq/switchboard"
)

// Field is the BM25F setting of one indexed field: Weight scales its term
// frequencies (0 ignores the field) and B in [0, 1] is how strongly its
// length is normalised.
type Field struct {
	Weight float64
	B      float64
}

// Fields holds the settings of every indexed field.
type Fields struct {
	Name        Field // the last name segment
	Namespace   Field // the segments before it
	Summary     Field // the declared summary
	Description Field
	Params      Field // input-schema property names, at any depth
	ParamDocs   Field // their descriptions, titles and enum values
	// Learned is the queries callers searched with before they called
	// the tool (Index.SetLearned), each weighed by its own Learned.Weight.
	Learned Field
}

// DefaultK1 is BM25's usual term-frequency saturation.
const DefaultK1 = 1.2

// DefaultFields returns the default field settings. Names and summaries are
// short, deliberate statements of purpose and outweigh prose; parameter
// text helps but is noisier. They were set from that reasoning and then
// checked on the public tool-retrieval sets: nudging any one setting moves
// the scores by about their noise, while dropping the schema fields or the
// weighting costs several points (bench/README.md).
func DefaultFields() Fields {
	return Fields{
		Name:        Field{Weight: 3, B: 0.5},
		Namespace:   Field{Weight: 1.5, B: 0.5},
		Summary:     Field{Weight: 2, B: 0.75},
		Description: Field{Weight: 1, B: 0.75},
		Params:      Field{Weight: 1, B: 0.75},
		ParamDocs:   Field{Weight: 0.5, B: 0.75},
		// Learned queries are requests in the callers' own words, the
		// vocabulary the catalog's prose lacks. Weight and b were chosen
		// by cross-validation inside the public sets' training halves,
		// with the per-tool gate (DefaultNeighbours) and each tool
		// learning its own sentences of a request (bench/README.md,
		// "Learning from use", round 7): the gate keeps the field shut
		// for requests unlike what the tool learned.
		Learned: Field{Weight: 1, B: 0.75},
	}
}

// LearnedBoost scores the learned field apart from BM25F, as a bounded
// addition to the score the other fields give: a tool's boost is Scale
// times the learned field's own BM25 score (length-normalised with B), at
// most Cap times the query's best base score, so learned words can reorder
// tools the catalog's own text already ranks close together but cannot
// lift a tool far above one that matches better. With TopN > 0 only the
// TopN best tools by base score (over the whole catalog) are boosted. When
// no tool's base score is positive the cap does not apply: the learned
// words are then the only signal. Scale 0 turns the boost off.
type LearnedBoost struct {
	Scale float64
	Cap   float64 // 0: no cap
	B     float64
	TopN  int
}

// DefaultLearnedBoost returns the default boost: off. The learned field
// is scored as one more BM25F field (DefaultFields); the boost was measured
// beside it and did no better (bench/README.md, "Learning from use").
func DefaultLearnedBoost() LearnedBoost { return LearnedBoost{} }

// Options configures an Index. A nil *Options, a zero K1, a nil Fields and
// a nil Boost mean the defaults.
type Options struct {
	K1         float64
	Fields     *Fields
	Boost      *LearnedBoost
	Neighbours *Neighbours
	Guard      *LearnedGuard
}

// LearnedGuard limits what the learned field may do to a search. With
// TopK > 0 it counts only for the tools the words-only ranking (BM25F
// without the learned field) puts in its TopK best, so learning reorders
// tools the catalog's own text already found and never brings one up from
// further down. With Distinct, each query term's learned-field frequency
// is scaled by idfL(df)/idfL(0), idfL(df) = ln(1 + (N − df + ½)/(df + ½))
// over the N tools holding learned queries, df of them holding the term:
// words many tools learned (request templates) count little. The zero
// value limits nothing.
type LearnedGuard struct {
	TopK     int
	Distinct bool
}

// DefaultLearnedGuard returns the default guard: none.
func DefaultLearnedGuard() LearnedGuard { return LearnedGuard{} }

// Index is the search index of one catalog. It is safe for concurrent use:
// searches run in parallel with each other and with the slow part of
// Replace; writes are serialised.
type Index struct {
	k1      float64
	weights [numFields]float64
	b       [numFields]float64
	boost   LearnedBoost
	nbOpts  Neighbours
	guard   LearnedGuard

	// writeMu serialises writers, so a writer can build a new corpus
	// without holding mu; mu guards the corpus against readers.
	writeMu sync.Mutex
	mu      sync.RWMutex
	c       *corpus
	// learned holds each tool's learned queries by name, apart from the
	// tools, so a tool's new description keeps them; guarded by writeMu.
	learned map[string][]Learned
	// nb indexes the learned queries one by one when nbOpts is on; written
	// under writeMu and mu, read under mu.
	nb *nbIndex

	accPool sync.Pool // *accumulator, reused across searches
}

// corpus is the indexed content and its statistics.
type corpus struct {
	an      analyzer
	learned map[string][]Learned // the Index's, read by upsert under writeMu
	// learnedField: learned queries are indexed as the learned field (not
	// when they boost as neighbours; they still change the content hash,
	// so cursors go stale when learning changes ranking).
	learnedField bool
	docs         []doc          // by doc id; removed docs stay as tombstones until compaction
	byNm         map[string]int // live doc id by tool name
	terms        map[string]int // term id by term
	post         [][]posting    // postings by term id, ordered by doc id then field
	df           []int          // live documents containing the term, by term id
	dead         int            // tombstones in docs
	// fieldLen sums live field lengths, for BM25's average length.
	fieldLen [numFields]int
	// learnedDocs counts live docs holding learned words (LearnedGuard's
	// Distinct).
	learnedDocs int
	// fingerprint identifies the indexed content: the sum of the live docs'
	// content hashes. It does not depend on insertion order or replica, so
	// a cursor stays valid on any replica holding the same catalog.
	fingerprint uint64
}

// doc is one indexed tool.
type doc struct {
	tool    switchboard.Tool
	summary string
	alive   bool
	hash    uint64
	length  [numFields]uint32
	termIDs []int // distinct terms, for df bookkeeping on removal
}

// posting records that a term occurs in one field of one doc, tf in units
// of 1/tfUnit: a learned query's words count by the query's weight.
type posting struct {
	doc   uint32
	field field
	tf    uint16
}

// tfUnit is one plain occurrence in a posting's fixed-point tf (and in
// field lengths). 16ths are fine enough for weights and leave room for
// 4095 occurrences of a term in one field.
const tfUnit = 16

// New returns an empty index.
func New(opts *Options) *Index {
	x := &Index{k1: DefaultK1, learned: map[string][]Learned{}}
	fields, boost, nbOpts := DefaultFields(), DefaultLearnedBoost(), DefaultNeighbours()
	x.guard = DefaultLearnedGuard()
	if opts != nil {
		if opts.Guard != nil {
			x.guard = LearnedGuard{TopK: max(opts.Guard.TopK, 0), Distinct: opts.Guard.Distinct}
		}
		if opts.Neighbours != nil {
			nbOpts = *opts.Neighbours
		}
		if opts.K1 > 0 {
			x.k1 = opts.K1
		}
		if opts.Fields != nil {
			fields = *opts.Fields
		}
		if opts.Boost != nil {
			boost = *opts.Boost
		}
	}
	x.boost = LearnedBoost{Scale: max(boost.Scale, 0), Cap: max(boost.Cap, 0),
		B: min(max(boost.B, 0), 1), TopN: max(boost.TopN, 0)}
	x.nbOpts = Neighbours{Threshold: min(max(nbOpts.Threshold, 0), 1), Scale: max(nbOpts.Scale, 0), Gate: nbOpts.Gate, PerTool: nbOpts.PerTool}
	if x.nbOpts.on() {
		x.nb = newNbIndex(nil)
	}
	x.c = x.newCorpus(nil)
	for i, f := range []Field{fields.Name, fields.Namespace, fields.Summary,
		fields.Description, fields.Params, fields.ParamDocs, fields.Learned} {
		x.weights[i] = max(f.Weight, 0)
		x.b[i] = min(max(f.B, 0), 1)
	}
	return x
}

// newCorpus indexes tools with the learned queries. When learned queries
// only boost as neighbours, their words are left out of the corpus, so a
// search no learned query is near scores exactly as without learning.
func (x *Index) newCorpus(tools []switchboard.Tool) *corpus {
	c := &corpus{
		an: analyzer{stems: map[string]string{}}, learned: x.learned,
		learnedField: !(x.nbOpts.on() && x.nbOpts.Scale > 0),
		byNm:         make(map[string]int, len(tools)), terms: map[string]int{},
	}
	for _, t := range tools {
		c.upsert(t)
	}
	return c
}

// Replace rebuilds the index from a full catalog snapshot. Names are
// expected to be unique; of duplicates the last wins. Searches keep being
// answered from the previous catalog until the new one is built.
func (x *Index) Replace(tools []switchboard.Tool) {
	x.writeMu.Lock()
	defer x.writeMu.Unlock()
	c := x.newCorpus(tools)
	x.mu.Lock()
	x.c = c
	x.mu.Unlock()
}

// Upsert adds t or replaces the tool of the same name.
func (x *Index) Upsert(t switchboard.Tool) {
	x.writeMu.Lock()
	defer x.writeMu.Unlock()
	x.mu.Lock()
	x.c.upsert(t)
	x.mu.Unlock()
	x.maybeCompact()
}

// Remove drops the tool called name; an unknown name is a no-op.
func (x *Index) Remove(name string) {
	x.writeMu.Lock()
	defer x.writeMu.Unlock()
	x.mu.Lock()
	x.c.remove(name)
	x.mu.Unlock()
	x.maybeCompact()
}

// Len reports how many tools are indexed.
func (x *Index) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.c.byNm)
}

// maybeCompact rebuilds the corpus once tombstones outnumber live docs,
// which keeps memory and scan cost proportional to the catalog while making
// single edits O(terms of one tool). The caller holds writeMu, so reading
// x.c without mu is safe: only writers change it.
func (x *Index) maybeCompact() {
	old := x.c
	if old.dead < 1024 || old.dead < len(old.byNm) {
		return
	}
	live := make([]switchboard.Tool, 0, len(old.byNm))
	for _, d := range old.docs {
		if d.alive {
			live = append(live, d.tool)
		}
	}
	c := x.newCorpus(live)
	x.mu.Lock()
	x.c = c
	x.mu.Unlock()
}

func (c *corpus) upsert(t switchboard.Tool) {
	f := texts(t)
	learned := c.learned[t.Name]
	h := contentHash(t, &f, learned)
	if id, ok := c.byNm[t.Name]; ok {
		if c.docs[id].hash == h {
			// Same indexed content: keep the postings, refresh the stored
			// tool (allow functions may look at fields we do not index).
			c.docs[id].tool = t
			return
		}
		c.removeID(id)
	}
	id := len(c.docs)
	d := doc{tool: t, summary: SummaryOf(t), alive: true, hash: h}
	type key struct {
		term  int
		field field
	}
	tf := map[key]int{}
	var words []string
	add := func(fi field, s string, unit int) {
		words = c.an.terms(words[:0], s, true)
		d.length[fi] += uint32(len(words) * unit)
		for _, w := range words {
			tid, ok := c.terms[w]
			if !ok {
				tid = len(c.post)
				c.terms[w] = tid
				c.post = append(c.post, nil)
				c.df = append(c.df, 0)
			}
			tf[key{tid, fi}] += unit
		}
	}
	for fi := range numFields {
		for _, s := range f[fi] {
			add(fi, s, tfUnit)
		}
		if fi == fieldLearned && c.learnedField {
			for _, l := range learned {
				add(fi, l.Query, l.unit())
			}
		}
		c.fieldLen[fi] += int(d.length[fi])
	}
	keys := make([]key, 0, len(tf))
	for k := range tf {
		keys = append(keys, k)
	}
	// Postings of one doc must be contiguous and in field order per term.
	slices.SortFunc(keys, func(a, b key) int {
		if a.term != b.term {
			return a.term - b.term
		}
		return int(a.field) - int(b.field)
	})
	for i, k := range keys {
		c.post[k.term] = append(c.post[k.term], posting{uint32(id), k.field, uint16(min(tf[k], 1<<16-1))})
		if i == 0 || keys[i-1].term != k.term {
			c.df[k.term]++
			d.termIDs = append(d.termIDs, k.term)
		}
	}
	if d.length[fieldLearned] > 0 {
		c.learnedDocs++
	}
	c.docs = append(c.docs, d)
	c.byNm[t.Name] = id
	c.fingerprint += h
}

func (c *corpus) remove(name string) {
	if id, ok := c.byNm[name]; ok {
		c.removeID(id)
	}
}

// removeID tombstones a doc: its postings stay (searches skip dead docs)
// until compaction, but every statistic is updated now so scores never
// depend on the history of edits.
func (c *corpus) removeID(id int) {
	d := &c.docs[id]
	for _, tid := range d.termIDs {
		c.df[tid]--
	}
	for fi := range numFields {
		c.fieldLen[fi] -= int(d.length[fi])
	}
	if d.length[fieldLearned] > 0 {
		c.learnedDocs--
	}
	c.fingerprint -= d.hash
	delete(c.byNm, d.tool.Name)
	*d = doc{}
	c.dead++
}

// contentHash hashes everything that affects ranking or a hit's content.
func contentHash(t switchboard.Tool, f *[numFields][]string, learned []Learned) uint64 {
	h := fnv.New64a()
	for _, s := range []string{t.Name, t.Summary, string(t.Surface), string(t.Class)} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	for fi := range numFields {
		for _, s := range f[fi] {
			h.Write([]byte(s))
			h.Write([]byte{0})
		}
		h.Write([]byte{1})
	}
	for _, l := range learned {
		h.Write([]byte(l.Query))
		h.Write([]byte{0, byte(l.unit())})
	}
	return h.Sum64()
}

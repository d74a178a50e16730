package search

import (
	"maps"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/redact"
)

// Learned is one query that led callers to a tool, and how much it counts:
// Weight in (0, 1] scales its words' term frequencies in the learned field
// (the registry derives it from how many callers used the query and how
// recently). A weight at or below zero drops the query.
type Learned struct {
	Query  string
	Weight float64
}

// unit is the query's weight in posting tf units, at least one unit.
func (l Learned) unit() int {
	return max(1, min(tfUnit, int(l.Weight*tfUnit+0.5)))
}

// MaxLearned bounds the learned queries indexed per tool; SetLearned keeps
// the first MaxLearned, so callers order them by importance.
const MaxLearned = 32

// SetLearned replaces the learned queries of the tool called name (none:
// forget them). They are kept apart from the tool: an Upsert with a new
// description keeps them, and they apply when a tool of that name is
// indexed later. Remove does not drop them; the registry forgets a deleted
// tool's queries itself.
func (x *Index) SetLearned(name string, ls []Learned) {
	x.writeMu.Lock()
	defer x.writeMu.Unlock()
	ls = cleanLearned(ls)
	if sameUnits(x.learned[name], ls) {
		return // e.g. a periodic reload: recency moved by less than a unit
	}
	if len(ls) == 0 {
		if _, ok := x.learned[name]; !ok {
			return
		}
		delete(x.learned, name)
	} else {
		x.learned[name] = ls
	}
	var nb *nbIndex
	if x.nb != nil && x.nb.needsCompact() {
		nb = newNbIndex(x.learned)
	}
	x.mu.Lock()
	if id, ok := x.c.byNm[name]; ok {
		t := x.c.docs[id].tool
		x.c.upsert(t)
	}
	switch {
	case nb != nil:
		x.nb = nb
	case x.nb != nil:
		x.nb.set(name, x.learned[name])
	}
	x.mu.Unlock()
	x.maybeCompact()
}

// ReplaceLearned replaces every tool's learned queries at once (the
// registry's load at start) and rebuilds the index over the same tools.
func (x *Index) ReplaceLearned(all map[string][]Learned) {
	x.writeMu.Lock()
	defer x.writeMu.Unlock()
	learned := make(map[string][]Learned, len(all))
	for name, ls := range all {
		if ls = cleanLearned(ls); len(ls) > 0 {
			learned[name] = ls
		}
	}
	x.learned = learned
	old := x.c
	live := make([]switchboard.Tool, 0, len(old.byNm))
	for _, d := range old.docs {
		if d.alive {
			live = append(live, d.tool)
		}
	}
	c := x.newCorpus(live)
	var nb *nbIndex
	if x.nb != nil {
		nb = newNbIndex(x.learned)
	}
	x.mu.Lock()
	x.c = c
	if nb != nil {
		x.nb = nb
	}
	x.mu.Unlock()
}

// LearnedOf returns a copy of the learned queries of the tool called name.
func (x *Index) LearnedOf(name string) []Learned {
	x.writeMu.Lock()
	defer x.writeMu.Unlock()
	return append([]Learned(nil), x.learned[name]...)
}

// LearnedTools returns the names of the tools with learned queries.
func (x *Index) LearnedTools() []string {
	x.writeMu.Lock()
	defer x.writeMu.Unlock()
	return slices.Collect(maps.Keys(x.learned))
}

// sameUnits reports whether a and b index identically.
func sameUnits(a, b []Learned) bool {
	return slices.EqualFunc(a, b, func(p, q Learned) bool { return p.Query == q.Query && p.unit() == q.unit() })
}

func cleanLearned(ls []Learned) []Learned {
	out := make([]Learned, 0, min(len(ls), MaxLearned))
	seen := map[string]bool{}
	for _, l := range ls {
		if len(out) == MaxLearned {
			break
		}
		if l.Weight <= 0 || l.Query == "" || seen[l.Query] {
			continue
		}
		seen[l.Query] = true
		out = append(out, Learned{Query: l.Query, Weight: min(l.Weight, 1)})
	}
	return out
}

// MaxLearnedQueryBytes bounds a scrubbed query that is kept.
const MaxLearnedQueryBytes = 512

// What Scrub strips: anything that may identify a person, a record or a
// secret rather than say what the caller wanted done.
var (
	quoted = regexp.MustCompile("\"[^\"]*\"|'[^'\\s][^']*'|`[^`]*`|“[^”]*”")
	// urlLike matches URLs and bare domains or file names ("kick.com",
	// "report.pdf"): a dot between letters.
	urlLike = regexp.MustCompile(`(?i)\b[a-z][a-z0-9+.-]*://\S+|\bwww\.\S+|\b\S+\.[a-z]{2,}\S*`)
	email   = regexp.MustCompile(`\S+@\S+`)
	// filePath matches file paths that urlLike does not (no extension):
	// "/home/bob/notes", "~/notes", "./a/b", "C:\Users\bob", "\\host\share".
	// A path starts after anything but a letter or digit ("(/srv/x)",
	// "dir=/srv/x"); after one it is a word pair ("and/or").
	filePath = regexp.MustCompile(`(?:^|[^\pL\pN_])(?:~|\.{1,2})?/\S+|\b[A-Za-z]:\\\S*|\\\\\S+`)
	// handle matches @mentions and #tags.
	handle = regexp.MustCompile(`[@#]\S+`)
)

// stripValues blanks quoted values, e-mail addresses, URLs, domains,
// file names and paths, @handles and #tags.
func stripValues(q string) string {
	q = quoted.ReplaceAllString(q, " ")
	q = email.ReplaceAllString(q, " ")
	q = urlLike.ReplaceAllString(q, " ")
	q = filePath.ReplaceAllString(q, " ")
	return handle.ReplaceAllString(q, " ")
}

// Scrub returns the part of a search query that may be kept as a learned
// example, or ok false when nothing may: a query holding anything that
// looks like a secret (internal/redact's patterns) is refused whole. From
// the rest it strips quoted values, URLs, domains, file names and paths,
// e-mail addresses, @handles and #tags, and every word holding a digit (numbers,
// dates, ids such as "inv_8f3a" or UUIDs) or longer than 24 characters
// (tokens), then lower-cases and collapses space. What is left must have
// at least one indexable word.
func Scrub(q string) (string, bool) {
	if redact.String(q) != q {
		return "", false
	}
	return scrubWords(stripValues(q))
}

// scrubWords is Scrub after the secret check and stripValues: the word
// filter, lower-casing, and the check that an indexable word is left.
func scrubWords(q string) (string, bool) {
	words := strings.FieldsFunc(q, func(r rune) bool {
		return unicode.IsSpace(r) || (unicode.IsPunct(r) && r != '-' && r != '_' && r != '\'' && r != '.')
	})
	kept := words[:0]
	n := 0
	for _, w := range words {
		w = strings.Trim(w, "-_'.")
		if w == "" || len(w) > 24 || strings.ContainsFunc(w, unicode.IsDigit) {
			continue
		}
		if n+len(w)+1 > MaxLearnedQueryBytes {
			break
		}
		n += len(w) + 1
		kept = append(kept, strings.ToLower(w))
	}
	// One indexable word is enough: stemming the rest would only repeat
	// the answer (this runs on every search while learning is on).
	var an analyzer // no memo: read-only use
	var buf []string
	for _, w := range kept {
		if buf = an.terms(buf[:0], w, false); len(buf) > 0 {
			return strings.Join(kept, " "), true
		}
	}
	return "", false
}

package search

import (
	"regexp"
	"regexp/syntax"
	"time"

	"github.com/switchboardhq/switchboard"
)

// Regex search bounds. Go's regexp is RE2: matching is linear in the text,
// with no backtracking, so no pattern can take exponential time. Linear is
// in the text times the compiled program, though, and a short pattern can
// compile to thousands of instructions ("(?:(?:\w*\s*){30}){30}" is 23
// bytes and 3,600 instructions, about 0.8 s over one 8 KB description): so
// the program's size is bounded, and a scan reads the clock whenever it has
// done regexCheckWork of matching since the last read.
const (
	MaxRegexBytes = 256
	// MaxRegexInsts bounds the compiled program, and so one tool's match:
	// the costliest pattern within it takes about 60 ms over the longest
	// description allowed (8 KB); ordinary patterns compile to under 100.
	MaxRegexInsts = 300
	// regexBudget bounds one scan; a pattern that needs longer is refused
	// rather than answered from part of the catalog.
	regexBudget = 250 * time.Millisecond
	// regexCheckWork is how much matching (bytes of text times program
	// instructions) a scan does between clock reads, besides the tool
	// that crosses it: about 13 ms at the costliest (some 25 ns per
	// instruction and byte), while a cheap pattern reads the clock every
	// few hundred tools (a read a tool cost 60% of a name-only scan).
	regexCheckWork = 512 << 10
)

// Regex scores: a match in the name outranks one in the summary, which
// outranks one only in the description; ties order by name.
const (
	regexName        = 3
	regexSummary     = 2
	regexDescription = 1
)

// compileRegex compiles a user's pattern and returns its program's size,
// or INVALID_INPUT saying why not.
func compileRegex(p string) (*regexp.Regexp, int, error) {
	re, err := regexp.Compile(p)
	if err != nil {
		msg := err.Error()
		if se, ok := err.(*syntax.Error); ok {
			msg = string(se.Code) + ": " + se.Expr
		}
		return nil, 0, switchboard.Errorf(switchboard.CodeInvalidInput, "regex does not compile (%s); the syntax is RE2's (Go regexp): no backreferences or lookaround", msg)
	}
	// Parsed again as regexp.Compile does, to size its program.
	sr, err := syntax.Parse(p, syntax.Perl)
	if err != nil {
		return nil, 0, err
	}
	prog, err := syntax.Compile(sr.Simplify())
	if err != nil {
		return nil, 0, err
	}
	if len(prog.Inst) > MaxRegexInsts {
		return nil, 0, switchboard.Errorf(switchboard.CodeInvalidInput, "regex is too complex: it compiles to %d instructions, the limit is %d; use a narrower pattern (fewer or smaller repetitions)", len(prog.Inst), MaxRegexInsts)
	}
	return re, len(prog.Inst), nil
}

// match offers the kept docs whose name, summary or description pattern
// matches, scored by where it matched. now is the clock (time.Now; a
// test's own).
func (c *corpus) match(pattern string, top *topK, keep func(uint32) bool, now func() time.Time) error {
	re, insts, err := compileRegex(pattern)
	if err != nil {
		return err
	}
	deadline := now().Add(regexBudget)
	work := 0
	for id := range c.docs {
		d := &c.docs[id]
		if !d.alive {
			continue
		}
		// By work done, not by tools: one tool's match may take tens of
		// milliseconds, and checking every few hundred tools let a scan
		// run for minutes.
		if work >= regexCheckWork {
			work = 0
			if now().After(deadline) {
				return switchboard.Errorf(switchboard.CodeInvalidInput, "regex search took longer than %s over this catalog; use a narrower pattern (anchor it, or match names only with ^ns\\.)", regexBudget)
			}
		}
		// At most the three texts are matched: counting all of them
		// only reads the clock sooner.
		work += insts * (len(d.tool.Name) + len(d.summary) + len(d.tool.Description))
		var s float64
		switch {
		case re.MatchString(d.tool.Name):
			s = regexName
		case re.MatchString(d.summary):
			s = regexSummary
		case re.MatchString(d.tool.Description):
			s = regexDescription
		default:
			continue
		}
		if top.admits(s, uint32(id)) && keep(uint32(id)) {
			top.push(s, uint32(id))
		}
	}
	return nil
}

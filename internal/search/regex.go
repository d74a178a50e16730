package search

import (
	"regexp"
	"regexp/syntax"
	"time"

	"github.com/switchboardhq/switchboard"
)

// Regex search bounds. Go's regexp is RE2: matching is linear in the text,
// with no backtracking, so no pattern can take exponential time; what is
// left to bound is the pattern's size (and so its compiled program) and the
// total time of one scan over a very large catalog.
const (
	MaxRegexBytes = 256
	// regexBudget bounds one scan; a pattern that needs longer is refused
	// rather than answered from part of the catalog.
	regexBudget = 250 * time.Millisecond
	// regexCheckEvery is how many tools are matched between clock reads.
	regexCheckEvery = 256
)

// Regex scores: a match in the name outranks one in the summary, which
// outranks one only in the description; ties order by name.
const (
	regexName        = 3
	regexSummary     = 2
	regexDescription = 1
)

// compileRegex compiles a user's pattern, or INVALID_INPUT saying why not.
func compileRegex(p string) (*regexp.Regexp, error) {
	re, err := regexp.Compile(p)
	if err != nil {
		msg := err.Error()
		if se, ok := err.(*syntax.Error); ok {
			msg = string(se.Code) + ": " + se.Expr
		}
		return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "regex does not compile (%s); the syntax is RE2's (Go regexp): no backreferences or lookaround", msg)
	}
	return re, nil
}

// match offers the kept docs whose name, summary or description pattern
// matches, scored by where it matched.
func (c *corpus) match(pattern string, top *topK, keep func(uint32) bool) error {
	re, err := compileRegex(pattern)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(regexBudget)
	for id := range c.docs {
		if id%regexCheckEvery == regexCheckEvery-1 && time.Now().After(deadline) {
			return switchboard.Errorf(switchboard.CodeInvalidInput, "regex search took longer than %s over this catalog; use a narrower pattern (anchor it, or match names only with ^ns\\.)", regexBudget)
		}
		d := &c.docs[id]
		if !d.alive {
			continue
		}
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

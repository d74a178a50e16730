package panelspec

import (
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/switchboardhq/switchboard"
)

// The strict parser. encoding/json accepts duplicate keys (last wins),
// matches field names case-insensitively, replaces invalid UTF-8 and lone
// surrogates silently and recurses without a depth limit. Each of those lets
// one spec mean two things to two readers (the validator and the browser),
// so specs are parsed here instead, into a tree of values (value.go),
// refusing anything ambiguous. Scalars are in strictjson_scalar.go.

// maxSafeInt is 2^53-1: larger integers are not exact in a JavaScript
// number, so the browser would see a different value than the validator.
const maxSafeInt = 1<<53 - 1

// parseFail is the first (and only) error of a parse; parsing stops there.
type parseFail struct {
	code    switchboard.Code
	pointer string
	msg     string
}

type frame struct {
	key   string
	index int
	arr   bool
	open  bool // inside the member or element named by key/index
}

// parsed is what parseStrict returns: the document, and what the parser
// noticed on the way that later stages would otherwise have to walk the
// whole document to find.
type parsed struct {
	d   *doc
	top value
	p   *parser // owner of the document's memory, for release
	// kept is the total length of the objects whose source text the parser
	// kept (in their value's s): /nodes/{id}/props, /state, and the input
	// and query objects of sources and actions. The IR keeps those
	// verbatim; decode copies them into one buffer of this size.
	kept int
	// proto lists the paths of __proto__, constructor and prototype keys.
	proto [][]string
	// long lists strings and keys longer than the parser's longLimit.
	long []longValue
}

// root is the top-level value.
func (ps *parsed) root() val { return val{ps.d, &ps.top} }

type longValue struct {
	path  []string
	n     int
	isKey bool
	data  bool // a string starting with "data:"
}

type parser struct {
	parsed
	// data is the input. Unescaped strings are slices of it, so they cost
	// no allocation of their own.
	data      string
	pos       int
	maxDepth  int
	longLimit int
	// maxMembers caps the member count of the top-level "nodes" object so a
	// spec with a million nodes is refused while parsing, before it costs a
	// million nodes' worth of memory.
	maxMembers int
	stack      []frame
	// tmp collects the elements of the containers being parsed; each
	// container moves its own into the document's arena when it closes, so
	// siblings are contiguous there.
	tmp  []value
	doc  doc
	esc  []byte // unescaped strings, becoming doc.esc
	fail *parseFail
	// freeMaps are cleared folded-key maps for large objects, kept across
	// objects and (through the pool) across parses.
	freeMaps []map[string]string
}

func (p *parser) foldMap() map[string]string {
	if n := len(p.freeMaps); n > 0 {
		m := p.freeMaps[n-1]
		p.freeMaps = p.freeMaps[:n-1]
		return m
	}
	return make(map[string]string, 64)
}

// parseStrict parses data (already known to be valid UTF-8 and within the
// byte limit) as one JSON value. Strings and keys longer than longLimit
// are recorded in parsed.long. The value tree lives in pooled memory: the
// caller must call release once it no longer uses the tree (nothing it
// returns may point into it; strings are fine, they point into data).
func parseStrict(data string, maxDepth, maxMembers, longLimit int) (*parsed, *parseFail) {
	p := parserPool.Get().(*parser)
	p.data, p.maxDepth, p.maxMembers, p.longLimit = data, maxDepth, maxMembers, longLimit
	p.doc.text = data
	// A compact spec has about one value per 14 bytes; beyond a few
	// thousand values the arena grows as needed, so input that fails early
	// (or is mostly one long string) does not reserve memory for nothing.
	if want := min(len(data)/12, 4096); cap(p.doc.vals) < want {
		p.doc.vals = make([]value, 0, want)
	}
	p.ws()
	p.top = p.parseValue()
	if p.fail == nil {
		p.ws()
		if p.pos < len(p.data) {
			p.failf(switchboard.CodeSpecParse, "unexpected %s after the top-level value", p.what())
		}
	}
	if p.fail != nil {
		fail := p.fail
		p.release()
		return nil, fail
	}
	if len(p.esc) > 0 {
		p.doc.esc = string(p.esc)
	}
	p.parsed.p, p.parsed.d = p, &p.doc
	return &p.parsed, nil
}

// release returns the parser and its value memory to the pool.
func (ps *parsed) release() {
	if ps != nil && ps.p != nil {
		ps.p.release()
	}
}

var parserPool = sync.Pool{New: func() any {
	return &parser{stack: make([]frame, 0, 16), tmp: make([]value, 0, 128)}
}}

// maxPooledValues bounds the arena a pooled parser keeps, so one large
// spec does not pin its memory for good.
const maxPooledValues = 1 << 14

func (p *parser) release() {
	maps := p.freeMaps
	if len(maps) > 4 {
		maps = maps[:4]
	}
	for _, m := range maps {
		if len(m) > 0 { // a parse that failed inside a large object
			clear(m)
		}
	}
	vals, tmp, esc := p.doc.vals[:0], p.tmp[:0], p.esc[:0]
	if cap(vals) > maxPooledValues {
		vals = nil
	}
	if cap(tmp) > maxPooledValues {
		tmp = nil
	}
	if cap(esc) > 1<<16 {
		esc = nil
	}
	// Values hold no pointers, so nothing needs clearing for the GC.
	*p = parser{stack: p.stack[:0], tmp: tmp, esc: esc, doc: doc{vals: vals}, freeMaps: maps}
	parserPool.Put(p)
}

// path returns the current position as reference tokens.
func (p *parser) path() []string {
	out := make([]string, 0, len(p.stack))
	for _, f := range p.stack {
		if !f.open {
			break
		}
		if f.arr {
			out = append(out, strconv.Itoa(f.index))
		} else {
			out = append(out, f.key)
		}
	}
	return out
}

func (p *parser) failf(code switchboard.Code, msg string, args ...any) {
	if p.fail != nil {
		return
	}
	if len(args) > 0 {
		msg = fmt.Sprintf(msg, args...)
	}
	p.fail = &parseFail{code: code, pointer: p.pointer(), msg: msg + " (byte " + strconv.Itoa(p.pos) + ")"}
}

// pointer renders the current position as a JSON pointer.
func (p *parser) pointer() string {
	var b strings.Builder
	for _, t := range p.path() {
		b.WriteByte('/')
		b.WriteString(escapePointer(t))
	}
	return b.String()
}

func (p *parser) what() string {
	if p.pos >= len(p.data) {
		return "end of input"
	}
	return strconv.QuoteRune(rune(p.data[p.pos]))
}

func (p *parser) ws() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) parseValue() value {
	if p.pos >= len(p.data) {
		p.failf(switchboard.CodeSpecParse, "unexpected end of input")
		return value{}
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object()
	case c == '[':
		return p.array()
	case c == '"':
		sp, esc := p.str()
		if int(sp.len) > p.longLimit {
			p.long = append(p.long, longValue{path: p.path(), n: int(sp.len), data: strings.HasPrefix(p.text(sp, esc), "data:")})
		}
		return value{kind: kStr, s: sp, sEsc: esc}
	case c == 't':
		p.literal("true")
		return value{kind: kBool, b: true}
	case c == 'f':
		p.literal("false")
		return value{kind: kBool}
	case c == 'n':
		p.literal("null")
		return value{}
	case c == '-' || (c >= '0' && c <= '9'):
		return value{kind: kNum, n: p.number()}
	}
	p.failf(switchboard.CodeSpecParse, "unexpected %s", p.what())
	return value{}
}

func (p *parser) literal(word string) {
	if !strings.HasPrefix(p.data[p.pos:], word) {
		p.failf(switchboard.CodeSpecParse, "invalid literal")
		return
	}
	p.pos += len(word)
}

func (p *parser) enter() bool {
	if len(p.stack) >= p.maxDepth {
		p.failf(switchboard.CodeSpecBudget, "JSON nesting deeper than %d levels", p.maxDepth)
		return false
	}
	return true
}

// collect moves the elements parsed since base into the arena and
// returns their range there.
func (p *parser) collect(base int) span {
	n := len(p.tmp) - base
	off := len(p.doc.vals)
	p.doc.vals = append(p.doc.vals, p.tmp[base:]...)
	p.tmp = p.tmp[:base]
	return span{uint32(off), uint32(n)}
}

// text returns a string the parser produced: a slice of the input, or
// (for strings that had escapes) a copy of the unescaped bytes.
func (p *parser) text(sp span, esc bool) string {
	if esc {
		return string(p.esc[sp.off : sp.off+sp.len])
	}
	return p.data[sp.off : sp.off+sp.len]
}

// smallObject is the member count up to which duplicate keys are found by
// scanning; larger objects index their folded keys.
const smallObject = 16

func (p *parser) object() value {
	if !p.enter() {
		return value{}
	}
	start := p.pos
	p.pos++ // {
	base := len(p.tmp)
	// folded maps case-folded keys to the key first seen, once the object
	// is too large to scan.
	var folded map[string]string
	p.stack = append(p.stack, frame{})
	top := len(p.stack) - 1
	countMembers := len(p.stack) == 2 && p.stack[0].key == "nodes"
	p.ws()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		p.stack = p.stack[:top]
		return value{kind: kObj, s: p.capture(start)}
	}
	for {
		p.ws()
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			p.failf(switchboard.CodeSpecParse, "expected a string key, got %s", p.what())
			return value{}
		}
		ksp, kesc := p.str()
		if p.fail != nil {
			return value{}
		}
		key := p.text(ksp, kesc)
		p.stack[top].key, p.stack[top].open = key, true
		if bad := badKeyRune(key); bad >= 0 {
			p.failf(switchboard.CodeSpecParse, "key %q contains the control or format character %U", key, bad)
			return value{}
		}
		n := len(p.tmp) - base
		if folded == nil && n >= smallObject {
			folded = p.foldMap()
			for i := base; i < len(p.tmp); i++ {
				k := p.text(p.tmp[i].key, p.tmp[i].kEsc)
				folded[foldKey(k)] = k
			}
		}
		if folded != nil {
			fk := foldKey(key)
			if prev, dup := folded[fk]; dup {
				p.dupKey(key, prev)
				return value{}
			}
			folded[fk] = key
		} else {
			for i := base; i < len(p.tmp); i++ {
				if prev := p.text(p.tmp[i].key, p.tmp[i].kEsc); prev == key || strings.EqualFold(prev, key) {
					p.dupKey(key, prev)
					return value{}
				}
			}
		}
		if len(key) > p.longLimit || len(key) > maxKeyBytes {
			p.long = append(p.long, longValue{path: p.path(), n: len(key), isKey: true})
		}
		if (len(key) == 9 || len(key) == 11) && protoKeys[key] {
			p.proto = append(p.proto, p.path())
		}
		p.ws()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			p.failf(switchboard.CodeSpecParse, "expected ':' after key, got %s", p.what())
			return value{}
		}
		p.pos++
		p.ws()
		v := p.parseValue()
		if p.fail != nil {
			return value{}
		}
		v.key, v.kEsc = ksp, kesc
		p.tmp = append(p.tmp, v)
		p.stack[top].open = false
		if countMembers && n+1 > p.maxMembers {
			p.failf(switchboard.CodeSpecBudget, "more than %d nodes", p.maxMembers)
			return value{}
		}
		p.ws()
		if p.pos < len(p.data) && p.data[p.pos] == ',' {
			p.pos++
			continue
		}
		if p.pos < len(p.data) && p.data[p.pos] == '}' {
			p.pos++
			break
		}
		p.failf(switchboard.CodeSpecParse, "expected ',' or '}', got %s", p.what())
		return value{}
	}
	p.stack = p.stack[:top]
	if folded != nil {
		clear(folded)
		p.freeMaps = append(p.freeMaps, folded)
	}
	return value{kind: kObj, c: p.collect(base), s: p.capture(start)}
}

func (p *parser) dupKey(key, prev string) {
	if key == prev {
		p.failf(switchboard.CodeSpecParse, "duplicate key %q", key)
	} else {
		p.failf(switchboard.CodeSpecParse, "key %q differs from key %q only by case", key, prev)
	}
}

// capture returns the range of the source text of a just-parsed object the
// IR keeps verbatim, or an empty range.
func (p *parser) capture(start int) span {
	st := p.stack
	switch {
	case len(st) == 3 && st[0].key == "nodes" && st[2].key == "props" && !st[0].arr && !st[1].arr,
		len(st) == 1 && st[0].key == "state" && !st[0].arr,
		len(st) == 3 && (st[0].key == "sources" || st[0].key == "actions") && !st[0].arr && !st[1].arr &&
			(st[2].key == "input" || st[2].key == "query"):
		p.kept += p.pos - start
		return span{uint32(start), uint32(p.pos - start)}
	}
	return span{}
}

func (p *parser) array() value {
	if !p.enter() {
		return value{}
	}
	p.pos++ // [
	base := len(p.tmp)
	p.stack = append(p.stack, frame{arr: true})
	top := len(p.stack) - 1
	p.ws()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		p.stack = p.stack[:top]
		return value{kind: kArr}
	}
	for {
		p.stack[top].index, p.stack[top].open = len(p.tmp)-base, true
		p.ws()
		v := p.parseValue()
		if p.fail != nil {
			return value{}
		}
		p.tmp = append(p.tmp, v)
		p.stack[top].open = false
		p.ws()
		if p.pos < len(p.data) && p.data[p.pos] == ',' {
			p.pos++
			continue
		}
		if p.pos < len(p.data) && p.data[p.pos] == ']' {
			p.pos++
			break
		}
		p.failf(switchboard.CodeSpecParse, "expected ',' or ']', got %s", p.what())
		return value{}
	}
	p.stack = p.stack[:top]
	return value{kind: kArr, c: p.collect(base)}
}

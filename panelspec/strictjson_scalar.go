package panelspec

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/switchboardhq/switchboard"
)

// Scalars of the strict parser: strings (escapes, surrogates), numbers
// (range and JavaScript precision) and the key checks.

// str parses a string starting at the opening quote. A string without
// escapes is a range of the input; one with escapes is unescaped into
// p.esc and marked so.
func (p *parser) str() (span, bool) {
	p.pos++ // opening quote
	start := p.pos
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		if c == '"' {
			p.pos++
			return span{uint32(start), uint32(p.pos - 1 - start)}, false
		}
		if c == '\\' {
			return p.strSlow(start)
		}
		if c < 0x20 {
			p.failf(switchboard.CodeSpecParse, "unescaped control character in string")
			return span{}, false
		}
		p.pos++
	}
	p.failf(switchboard.CodeSpecParse, "unterminated string")
	return span{}, false
}

func (p *parser) strSlow(start int) (span, bool) {
	off := len(p.esc)
	b := append(p.esc, p.data[start:p.pos]...)
	defer func() { p.esc = b }()
	fail := func(msg string) (span, bool) {
		p.failf(switchboard.CodeSpecParse, msg)
		return span{}, false
	}
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		switch {
		case c == '"':
			p.pos++
			return span{uint32(off), uint32(len(b) - off)}, true
		case c < 0x20:
			return fail("unescaped control character in string")
		case c != '\\':
			b = append(b, c)
			p.pos++
			continue
		}
		p.pos++ // backslash
		if p.pos >= len(p.data) {
			break
		}
		e := p.data[p.pos]
		p.pos++
		switch e {
		case '"', '\\', '/':
			b = append(b, e)
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'u':
			r, ok := p.hex4()
			if !ok {
				return span{}, false
			}
			if utf16.IsSurrogate(r) {
				// Only a high surrogate followed by an escaped low one is a
				// character; anything else would silently become U+FFFD.
				if r >= 0xDC00 || p.pos+1 >= len(p.data) || p.data[p.pos] != '\\' || p.data[p.pos+1] != 'u' {
					return fail("lone UTF-16 surrogate in \\u escape")
				}
				p.pos += 2
				r2, ok := p.hex4()
				if !ok {
					return span{}, false
				}
				r = utf16.DecodeRune(r, r2)
				if r == utf8.RuneError {
					return fail("invalid UTF-16 surrogate pair in \\u escape")
				}
			}
			b = utf8.AppendRune(b, r)
		default:
			p.pos--
			return fail(fmt.Sprintf("invalid escape '\\%c'", e))
		}
	}
	return fail("unterminated string")
}

func (p *parser) hex4() (rune, bool) {
	if p.pos+4 > len(p.data) {
		p.failf(switchboard.CodeSpecParse, "short \\u escape")
		return 0, false
	}
	var r rune
	for _, c := range p.data[p.pos : p.pos+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			p.failf(switchboard.CodeSpecParse, "invalid \\u escape")
			return 0, false
		}
	}
	p.pos += 4
	return r, true
}

func (p *parser) number() float64 {
	start := p.pos
	if p.data[p.pos] == '-' {
		p.pos++
	}
	digits := p.pos
	switch {
	case p.pos < len(p.data) && p.data[p.pos] == '0':
		p.pos++
	case p.pos < len(p.data) && p.data[p.pos] >= '1' && p.data[p.pos] <= '9':
		for p.pos < len(p.data) && p.data[p.pos] >= '0' && p.data[p.pos] <= '9' {
			p.pos++
		}
	default:
		p.failf(switchboard.CodeSpecParse, "invalid number")
		return 0
	}
	intDigits := p.pos - digits
	isInt := true
	if p.pos < len(p.data) && p.data[p.pos] == '.' {
		isInt = false
		p.pos++
		if !p.digits() {
			return 0
		}
	}
	if p.pos < len(p.data) && (p.data[p.pos] == 'e' || p.data[p.pos] == 'E') {
		isInt = false
		p.pos++
		if p.pos < len(p.data) && (p.data[p.pos] == '+' || p.data[p.pos] == '-') {
			p.pos++
		}
		if !p.digits() {
			return 0
		}
	}
	lit := p.data[start:p.pos]
	if isInt && intDigits <= 15 {
		// Fast path: at most 15 digits is always below 2^53.
		var n int64
		for _, c := range lit[len(lit)-intDigits:] {
			n = n*10 + int64(c-'0')
		}
		if lit[0] == '-' {
			if n == 0 {
				return math.Copysign(0, -1)
			}
			n = -n
		}
		return float64(n)
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil || math.IsInf(f, 0) {
		p.pos = start
		p.failf(switchboard.CodeSpecParse, "number %s is out of range", truncate(lit, 40))
		return 0
	}
	if isInt && math.Abs(f) > maxSafeInt {
		p.pos = start
		p.failf(switchboard.CodeSpecParse, "integer %s is beyond ±(2^53-1) and not exact in JavaScript; send it as a string", truncate(lit, 40))
		return 0
	}
	return f
}

func (p *parser) digits() bool {
	n := p.pos
	for p.pos < len(p.data) && p.data[p.pos] >= '0' && p.data[p.pos] <= '9' {
		p.pos++
	}
	if p.pos == n {
		p.failf(switchboard.CodeSpecParse, "invalid number")
		return false
	}
	return true
}

// badKeyRune returns the first control or invisible format character in a
// key, or -1. "href\u0000" or "href\u200b" would otherwise be a second,
// different key that some readers strip back to "href".
func badKeyRune(key string) rune {
	ascii := true
	for i := 0; i < len(key); i++ {
		if c := key[i]; c < 0x20 || c == 0x7f {
			return rune(c)
		} else if c >= utf8.RuneSelf {
			ascii = false
		}
	}
	if ascii {
		return -1
	}
	for _, r := range key {
		if r < 0x20 || (r >= 0x7f && r <= 0x9f) || unicode.Is(unicode.Cf, r) {
			return r
		}
	}
	return -1
}

// foldKey returns the case-folded form of key, consistent with
// strings.EqualFold. ASCII keys without upper case are returned as is.
func foldKey(key string) string {
	ascii, upper := true, false
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c >= utf8.RuneSelf {
			ascii = false
			break
		}
		if c >= 'A' && c <= 'Z' {
			upper = true
		}
	}
	if ascii {
		if !upper {
			return key
		}
		return strings.ToLower(key)
	}
	var b strings.Builder
	for _, r := range key {
		m := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			m = min(m, f)
		}
		b.WriteRune(m)
	}
	return b.String()
}

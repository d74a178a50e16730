package panelspec

import (
	"encoding/json"
	"math"
	"strconv"
)

// doc is a parsed JSON document: the text it was parsed from, the strings
// that had escapes (so are not verbatim slices of the text), and every
// value in one arena. Values hold no pointers, only offsets: the garbage
// collector never scans the arena and writing it needs no write barriers,
// which is most of what keeps validation fast.
type doc struct {
	text string
	esc  string
	vals []value
}

// value is one parsed JSON value. Strings are ranges of doc.text (or of
// doc.esc when sEsc or kEsc is set); children are a range of doc.vals.
// Objects keep their members in source order; lookups scan, which beats
// hashing at the sizes props have.
type value struct {
	n    float64
	s    span // a string's value; for an object the IR keeps, its source text
	key  span // the member name, when this value is an object member
	c    span // array elements or object members, in doc.vals
	kind valueKind
	b    bool
	sEsc bool
	kEsc bool
}

type span struct{ off, len uint32 }

type valueKind uint8

const (
	kNull valueKind = iota
	kBool
	kNum
	kStr
	kObj
	kArr
)

// val is a handle on a value of a doc; the zero val is "absent". Handles
// are only valid while the doc is (see parsed.release).
type val struct {
	d *doc
	v *value
}

func (d *doc) str(sp span, esc bool) string {
	if esc {
		return d.esc[sp.off : sp.off+sp.len]
	}
	return d.text[sp.off : sp.off+sp.len]
}

func (x val) ok() bool          { return x.v != nil }
func (x val) kind() valueKind   { return x.v.kind }
func (x val) isObj() bool       { return x.v != nil && x.v.kind == kObj }
func (x val) isArr() bool       { return x.v != nil && x.v.kind == kArr }
func (x val) isStr() bool       { return x.v != nil && x.v.kind == kStr }
func (x val) num() float64      { return x.v.n }
func (x val) boolean() bool     { return x.v.b }
func (x val) str() string       { return x.d.str(x.v.s, x.v.sEsc) }
func (x val) key() string       { return x.d.str(x.v.key, x.v.kEsc) }
func (x val) len() int          { return int(x.v.c.len) }
func (x val) at(i int) val      { return val{x.d, &x.d.vals[int(x.v.c.off)+i]} }
func (x val) kids() []value     { return x.d.vals[x.v.c.off : x.v.c.off+x.v.c.len] }
func (x val) with(v *value) val { return val{x.d, v} }

// raw returns the source text the parser kept for an object ("" if none).
func (x val) raw() string {
	if x.v.kind != kObj || x.v.s.len == 0 {
		return ""
	}
	return x.str()
}

// get returns the member key of an object, or an absent val.
func (x val) get(key string) val {
	if !x.isObj() {
		return val{}
	}
	kids := x.kids()
	for i := range kids {
		m := &kids[i]
		if int(m.key.len) == len(key) && x.d.str(m.key, m.kEsc) == key {
			return val{x.d, m}
		}
	}
	return val{}
}

// strProp returns the member key as a string, if it is one.
func (x val) strProp(key string) (string, bool) {
	m := x.get(key)
	if !m.isStr() {
		return "", false
	}
	return m.str(), true
}

// numProp returns the member key as a number, if it is one.
func (x val) numProp(key string) (float64, bool) {
	m := x.get(key)
	if !m.ok() || m.v.kind != kNum {
		return 0, false
	}
	return m.v.n, true
}

// keys returns an object's member names in source order.
func (x val) keys() []string {
	out := make([]string, x.len())
	for i := range out {
		out[i] = x.at(i).key()
	}
	return out
}

// scalar returns a scalar as a comparable Go value (nil, bool, float64,
// string); containers return a value no scalar equals.
func (x val) scalar() any {
	switch x.v.kind {
	case kBool:
		return x.v.b
	case kNum:
		return x.v.n
	case kStr:
		return x.str()
	case kNull:
		return nil
	}
	return x.v
}

// toAny converts to the plain Go form encoding/json and jsonschema use.
func (x val) toAny() any {
	switch x.v.kind {
	case kObj:
		m := make(map[string]any, x.len())
		for i := range x.len() {
			c := x.at(i)
			m[c.key()] = c.toAny()
		}
		return m
	case kArr:
		a := make([]any, x.len())
		for i := range a {
			a[i] = x.at(i).toAny()
		}
		return a
	}
	return x.scalar()
}

// appendJSON encodes the value compactly.
func (x val) appendJSON(b []byte) []byte {
	switch x.v.kind {
	case kNull:
		return append(b, "null"...)
	case kBool:
		return strconv.AppendBool(b, x.v.b)
	case kNum:
		if n := x.v.n; n == math.Trunc(n) && math.Abs(n) < 1e15 {
			return strconv.AppendInt(b, int64(n), 10)
		}
		return strconv.AppendFloat(b, x.v.n, 'g', -1, 64)
	case kStr:
		return appendJSONString(b, x.str())
	case kArr:
		b = append(b, '[')
		for i := range x.len() {
			if i > 0 {
				b = append(b, ',')
			}
			b = x.at(i).appendJSON(b)
		}
		return append(b, ']')
	}
	b = append(b, '{')
	for i := range x.len() {
		if i > 0 {
			b = append(b, ',')
		}
		c := x.at(i)
		b = append(appendJSONString(b, c.key()), ':')
		b = c.appendJSON(b)
	}
	return append(b, '}')
}

func appendJSONString(b []byte, s string) []byte {
	q, _ := json.Marshal(s) // cannot fail for a string
	return append(b, q...)
}

// emptyObject stands in for absent props.
var emptyObject = fromAny(map[string]any{})

// fromAny builds a new document holding a plain Go value (used by
// migration, which builds new objects). Object members come out sorted.
func fromAny(x any) val {
	bld := &docBuilder{}
	root := bld.add(x)
	d := &doc{esc: string(bld.esc), vals: bld.vals}
	return val{d, &root}
}

type docBuilder struct {
	esc  []byte
	vals []value
}

func (b *docBuilder) str(s string) span {
	sp := span{uint32(len(b.esc)), uint32(len(s))}
	b.esc = append(b.esc, s...)
	return sp
}

func (b *docBuilder) add(x any) value {
	switch t := x.(type) {
	case map[string]any:
		kids := make([]value, 0, len(t))
		for _, k := range sortedKeys(t) {
			m := b.add(t[k])
			m.key, m.kEsc = b.str(k), true
			kids = append(kids, m)
		}
		return value{kind: kObj, c: b.place(kids)}
	case []any:
		kids := make([]value, len(t))
		for i, e := range t {
			kids[i] = b.add(e)
		}
		return value{kind: kArr, c: b.place(kids)}
	case string:
		return value{kind: kStr, s: b.str(t), sEsc: true}
	case float64:
		return value{kind: kNum, n: t}
	case bool:
		return value{kind: kBool, b: t}
	}
	return value{}
}

// place appends children contiguously and returns their range.
func (b *docBuilder) place(kids []value) span {
	sp := span{uint32(len(b.vals)), uint32(len(kids))}
	b.vals = append(b.vals, kids...)
	return sp
}

// eachString calls f with every string inside v and the path of keys and
// indexes that leads to it from v (the slice is reused between calls).
func (v val) eachString(f func(path []string, s string)) {
	var path []string
	var walk func(v val)
	walk = func(v val) {
		switch v.kind() {
		case kStr:
			f(path, v.str())
		case kObj:
			for i := range v.len() {
				c := v.at(i)
				path = append(path, c.key())
				walk(c)
				path = path[:len(path)-1]
			}
		case kArr:
			for i := range v.len() {
				path = append(path, strconv.Itoa(i))
				walk(v.at(i))
				path = path[:len(path)-1]
			}
		}
	}
	walk(v)
}

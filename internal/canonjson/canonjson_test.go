package canonjson

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestCanonical(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, in, want string }{
		// RFC 8785 §3.2.2.
		{"rfc8785 values",
			`{
  "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}`,
			`{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`},
		// RFC 8785 §3.2.3: names sort by UTF-16 code units (😀, a surrogate
		// pair, before U+FB33).
		{"rfc8785 sorting",
			`{"\u20ac":"Euro Sign","\r":"Carriage Return","\ufb33":"Hebrew Letter Dalet With Dagesh","1":"One","\ud83d\ude00":"Emoji: Grinning Face","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis"}`,
			"{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u0080\":\"Control\",\"ö\":\"Latin Small Letter O With Diaeresis\",\"€\":\"Euro Sign\",\"😀\":\"Emoji: Grinning Face\",\"\ufb33\":\"Hebrew Letter Dalet With Dagesh\"}"},
		{"whitespace and order", ` { "b" : [ 1 , 2 ] , "a" : { "y" : 1, "x" : 2 } } `, `{"a":{"x":2,"y":1},"b":[1,2]}`},
		{"zero as float", `0.0`, `0`},
		{"negative zero float", `-0.0`, `0`},
		{"exponent", `1e2`, `100`},
		{"trailing zeros", `[4.50, 1.0]`, `[4.5,1]`},
		{"big integer kept exact", `9007199254740993`, `9007199254740993`},
		{"html not escaped", `"<a&b>"`, `"<a&b>"`},
		{"escapes minimal", `"\u0041\t\u2028"`, "\"A\\t\u2028\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Canonical([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("Canonical(%s)\n got %s\nwant %s", tc.in, got, tc.want)
			}
		})
	}
}

// Equal values share one form; different values do not.
func TestCanonicalEquality(t *testing.T) {
	t.Parallel()
	same := [][2]string{
		{`{"a":1,"b":2}`, `{"b":2,"a":1}`},
		{`{"n":0}`, `{"n":0.0}`},
		{`{"n":100}`, `{"n":1e2}`},
		{`{"s":"\u00e9"}`, `{"s":"é"}`},
	}
	for _, p := range same {
		a, b := must(t, p[0]), must(t, p[1])
		if !bytes.Equal(a, b) {
			t.Errorf("%s and %s: %s ≠ %s", p[0], p[1], a, b)
		}
	}
	differ := [][2]string{
		{`{"n":0}`, `{"n":1}`},
		{`{"n":9007199254740992}`, `{"n":9007199254740993}`},
		{`{"n":"0"}`, `{"n":0}`},
		{`[1,2]`, `[2,1]`},
		{`{"a":null}`, `{}`},
	}
	for _, p := range differ {
		if a, b := must(t, p[0]), must(t, p[1]); bytes.Equal(a, b) {
			t.Errorf("%s and %s both give %s", p[0], p[1], a)
		}
	}
}

func TestCanonicalRejects(t *testing.T) {
	t.Parallel()
	for _, in := range []string{``, `{`, `{"a":1,"a":2}`, "\"\xff\"", `"\ud800"`, `1 2`} {
		if got, err := Canonical([]byte(in)); err == nil {
			t.Errorf("Canonical(%q) = %s; want an error", in, got)
		}
	}
}

func must(t *testing.T, s string) []byte {
	t.Helper()
	b, err := Canonical([]byte(s))
	if err != nil {
		t.Fatalf("Canonical(%s): %v", s, err)
	}
	return b
}

// FuzzCanonical: the form is a fixed point, it is valid JSON, and it
// denotes the same value as its input (decoded with exact numbers except
// where JCS rounds a fraction or exponent to a double).
func FuzzCanonical(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":[0.0,1e2,-0,"x\u00e9"]}`, `333333333.33333329`, `{"\ud83d\ude00":1,"\ufb33":2}`, `null`, `"\u001f"`, `9007199254740993`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		c, err := Canonical(in)
		if err != nil {
			return
		}
		if !json.Valid(c) {
			t.Fatalf("Canonical(%q) = %q: not valid JSON", in, c)
		}
		cc, err := Canonical(c)
		if err != nil || !bytes.Equal(c, cc) {
			t.Fatalf("not a fixed point: %q → %q → %q (%v)", in, c, cc, err)
		}
		// Equal values give equal bytes: re-encoding the value another way
		// (encoding/json, keys sorted by UTF-8, HTML escaped, floats as
		// float64) must canonicalize to the same form.
		var v any
		if json.Unmarshal(in, &v) != nil {
			return
		}
		other, err := json.Marshal(v)
		if err != nil {
			return
		}
		if !hasBigInt(in) {
			oc, err := Canonical(other)
			if err != nil || !bytes.Equal(oc, c) {
				t.Fatalf("same value, other bytes: %q → %q; re-encoded %q → %q (%v)", in, c, other, oc, err)
			}
		}
	})
}

// hasBigInt reports whether in has an integer literal that float64 cannot
// hold exactly or a -0; there encoding/json's float64 decoding changes
// the value, which the fuzz comparison must not blame on Canonical.
func hasBigInt(in []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(in))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		n, ok := tok.(json.Number)
		if !ok || bytes.ContainsAny([]byte(n), ".eE") {
			continue
		}
		if n[0] == '-' && bytes.Trim([]byte(n[1:]), "0") == nil {
			return true
		}
		if i, err := n.Int64(); err != nil || i > 1<<53 || i < -(1<<53) {
			return true
		}
	}
}

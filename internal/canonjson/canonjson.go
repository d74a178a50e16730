// Package canonjson gives a JSON value one byte form, so that values that
// are equal as JSON fingerprint alike: the idempotency digest of a call
// (broker) and the argument hash an approval is bound to (approval) are
// both taken over it.
//
// The form is RFC 8785 (JCS): no whitespace, object members sorted by the
// UTF-16 code units of their names, strings in their minimal escaping, and
// numbers with a fraction or an exponent in the ECMAScript shortest form of
// the IEEE 754 double they denote (0.0 → 0, 1e2 → 100). One deliberate
// departure: an integer literal (no fraction, no exponent) is kept as
// written, so that 9007199254740993 does not collapse into 2⁵³ — two
// different arguments must never hash alike (the cost: an integer
// -0 stays -0). The work is done by
// jsontext.Value.Canonicalize from github.com/go-json-experiment/json, the
// prototype of encoding/json/v2.
package canonjson

import "github.com/go-json-experiment/json/jsontext"

// Canonical returns the canonical form of the JSON value in b. It fails on
// anything that is not exactly one valid JSON value (invalid UTF-8, a lone
// surrogate escape, a duplicate object member name).
func Canonical(b []byte) ([]byte, error) {
	v := jsontext.Value(append([]byte(nil), b...))
	if err := v.Canonicalize(jsontext.CanonicalizeRawInts(false)); err != nil {
		return nil, err
	}
	return v, nil
}

package bench

import "flag"

// testRunFlag returns the -run pattern, so slow optional tests run only when
// named explicitly.
func testRunFlag() string {
	if f := flag.Lookup("test.run"); f != nil {
		return f.Value.String()
	}
	return ""
}

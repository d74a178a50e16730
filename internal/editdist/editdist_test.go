package editdist

import "testing"

func TestDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"", "abc", 3}, {"list", "list", 0}, {"lst", "list", 1},
		{"titel", "title", 1}, {"tasks.creat", "tasks.create", 1},
		{"kitten", "sitting", 3}, {"ca", "abc", 3}, {"héllo", "hello", 1},
	} {
		if got := Distance(c.a, c.b); got != c.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
		if got := Distance(c.b, c.a); got != c.want {
			t.Errorf("Distance(%q, %q) = %d, want %d (symmetric)", c.b, c.a, got, c.want)
		}
	}
}

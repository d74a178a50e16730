package benchkit

import "testing"

func TestToolName(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"getPowerOutput", "get_power_output"},
		{"already_fine.name", "already_fine.name"},
		{"Foo-Bar Baz.Qux2Go", "foo_bar_baz.qux2_go"},
		{"a..b", "a.x.b"},
		{"__x__", "x"},
		{"ünïcode", "n_code"},
	} {
		got := ToolName(tc.in)
		if got != tc.want || !NameGrammar.MatchString(got) {
			t.Errorf("ToolName(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	taken := map[string]string{"a_b": "aB"}
	if got := uniqueName("a_b", taken); got != "a_b_2" {
		t.Errorf("uniqueName = %q, want a_b_2", got)
	}
}

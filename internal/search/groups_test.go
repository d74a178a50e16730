package search

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/switchboardhq/switchboard"
)

func named(names ...string) []switchboard.Tool {
	out := make([]switchboard.Tool, len(names))
	for i, n := range names {
		out[i] = switchboard.Tool{Name: n}
	}
	return out
}

func TestGroupsNamespacesAndWords(t *testing.T) {
	tools := named(
		"deck.export_pdf", "deck.share", "deck.create_slide",
		"tasks.create", "tasks.list",
		"get_weather_forecast", "current_weather",
		"translate_text",
	)
	groups, other := Groups(tools, 10)
	want := []Group{
		{Key: "deck", Namespace: true, Count: 3, Examples: []string{"deck.create_slide", "deck.export_pdf", "deck.share"}},
		{Key: "tasks", Namespace: true, Count: 2, Examples: []string{"tasks.create", "tasks.list"}},
		{Key: "weather", Count: 2, Examples: []string{"current_weather", "get_weather_forecast"}},
	}
	if !reflect.DeepEqual(groups, want) || other != 1 {
		t.Fatalf("groups = %+v, other %d; want %+v, other 1", groups, other, want)
	}
}

// A group's summary is the words most of its members' names share besides
// its key, in at least two of them, and never a word broad across the
// catalog; its line reads as the listings show it.
func TestGroupsSummaryWords(t *testing.T) {
	var names []string
	for i := range 40 {
		names = append(names, fmt.Sprintf("get_thing%d", i)) // "get": broad
	}
	names = append(names,
		"github.get_issue", "github.create_issue", "github.close_issue",
		"github.list_pulls", "github.merge_pulls", "github.get_release",
		"github.delete_release", "github.star")
	groups, _ := Groups(named(names...), 5)
	var gh *Group
	for i := range groups {
		if groups[i].Key == "github" {
			gh = &groups[i]
		}
	}
	if gh == nil {
		t.Fatalf("no github group: %+v", groups)
	}
	if want := []string{"issue", "pulls", "release"}; !reflect.DeepEqual(gh.Words, want) {
		t.Fatalf("words %v, want %v (by members, then by name; not get, in one member only, or the key)", gh.Words, want)
	}
	line := gh.Line(func(n string) string { return "x:" + n })
	if want := "- github (8 tools about issue, pulls, release): x:github.close_issue, x:github.create_issue, x:github.delete_release, …"; line != want {
		t.Fatalf("line %q, want %q", line, want)
	}
}

// A word in more than an eighth of a large catalog keys no group: "get"
// says nothing of what a tool is for.
func TestGroupsPassOverBroadWords(t *testing.T) {
	var names []string
	for i := range 40 {
		names = append(names, fmt.Sprintf("get_thing%d", i))
	}
	names = append(names, "get_stock_price", "get_stock_history", "get_movie", "find_movie")
	groups, other := Groups(named(names...), 5)
	if len(groups) != 2 || groups[0].Key != "movie" && groups[0].Key != "stock" || other != 40 {
		t.Fatalf("groups = %+v, other %d; want movie and stock, 40 others", groups, other)
	}
	for _, g := range groups {
		if g.Key == "get" {
			t.Fatalf("a word of every tool keyed a group: %+v", g)
		}
	}
}

func TestGroupsBoundedAndOrderFree(t *testing.T) {
	var names []string
	for ns := range 50 {
		for i := range 3 {
			names = append(names, fmt.Sprintf("ns%c%c.tool%d", 'a'+ns/26, 'a'+ns%26, i))
		}
	}
	first, other := Groups(named(names...), 30)
	if len(first) != 30 || other != 60 {
		t.Fatalf("%d groups, %d other; want 30 and 60", len(first), other)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 5 {
		r.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
		again, _ := Groups(named(names...), 30)
		if !reflect.DeepEqual(first, again) {
			t.Fatal("the groups depend on the tools' order")
		}
	}
}

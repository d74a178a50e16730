package search

import (
	"slices"
	"testing"

	"github.com/switchboardhq/switchboard"
)

func TestClauses(t *testing.T) {
	got := Clauses("Get the quote for 2.5 units. Then create an admin!\nFinally: list it; done.")
	want := []string{"Get the quote for 2.5 units.", "Then create an admin!", "Finally: list it;", "done."}
	if !slices.Equal(got, want) {
		t.Fatalf("Clauses = %q, want %q", got, want)
	}
}

// TestScrubClausesValues: a quoted value holding a sentence end is
// stripped before the request is cut, so no piece of it survives, and a
// query Scrub refuses is refused whole.
func TestScrubClausesValues(t *testing.T) {
	got, ok := ScrubClauses(`Send "Hi Bob. My pin is secret stuff" to the team. Then archive it.`)
	if !ok || !slices.Equal(got, []string{"send to the team", "then archive it"}) {
		t.Fatalf("ScrubClauses = %q, %v", got, ok)
	}
	if got, ok := ScrubClauses("List users. Use token sk-ant-abcdefghijklmnopqrstuvwxyz."); ok {
		t.Fatalf("a query with a secret gave %q", got)
	}
}

func TestAttribute(t *testing.T) {
	quote := switchboard.Tool{Name: "insurance.getQuote", Description: "Get an insurance quote for a business."}
	admin := switchboard.Tool{Name: "insurance.createAdministrator", Description: "Create an insurance administrator."}
	clauses := []string{"i run a restaurant", "get an insurance quote for the business", "then create an administrator"}
	got := Attribute(clauses, []switchboard.Tool{quote, admin})
	want := []string{
		"i run a restaurant get an insurance quote for the business", // context stays; the admin's sentence goes
		"i run a restaurant then create an administrator",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Attribute = %q, want %q", got, want)
	}
	// One tool learns everything; a tool no sentence is left for learns
	// everything too.
	if got := Attribute(clauses, []switchboard.Tool{admin}); got[0] != "i run a restaurant get an insurance quote for the business then create an administrator" {
		t.Fatalf("one tool: %q", got)
	}
	other := switchboard.Tool{Name: "weather.get", Description: "Weather."}
	if got := Attribute(clauses[2:], []switchboard.Tool{other, admin}); got[0] != "then create an administrator" {
		t.Fatalf("nothing left: %q", got)
	}
}

// TestAttributeDisjoint: a sentence goes from a tool only when the tool's
// own words miss it and another called tool's match it; endpoints of one
// API keep each other's sentences, which name the API.
func TestAttributeDisjoint(t *testing.T) {
	clips := switchboard.Tool{Name: "kick.get_channel_clips", Description: "Clips of a Kick channel."}
	details := switchboard.Tool{Name: "kick.get_channel_details", Description: "Details of a Kick channel."}
	pdf := switchboard.Tool{Name: "deck.export", Description: "Export a deck as a PDF file."}
	clauses := []string{"i follow a streamer", "show the channel clips", "export the deck as a pdf"}
	got := AttributeDisjoint(clauses, []switchboard.Tool{clips, details, pdf})
	want := []string{
		"i follow a streamer show the channel clips", // the PDF sentence shares no word with the channel tools
		"i follow a streamer show the channel clips", // the clips sentence names the details tool's channel too
		"i follow a streamer export the deck as a pdf",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("AttributeDisjoint = %q, want %q", got, want)
	}
	if got := AttributeDisjoint(clauses, []switchboard.Tool{pdf}); got[0] != "i follow a streamer show the channel clips export the deck as a pdf" {
		t.Fatalf("one tool: %q", got)
	}
}

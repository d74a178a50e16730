package search_test

import (
	"fmt"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/search"
)

func ExampleIndex_Search() {
	x := search.New(nil)
	x.Replace([]switchboard.Tool{
		{Name: "deck.export", Description: "Exports a deck as PDF. Every slide is rendered.",
			Surface: switchboard.SurfaceAPI, Class: switchboard.ClassRead},
		{Name: "deck.create", Summary: "Create a deck.", Description: "Creates an empty deck.",
			Surface: switchboard.SurfaceAPI, Class: switchboard.ClassMutate},
		{Name: "page.scroll", Description: "Scrolls the page.",
			Surface: switchboard.SurfaceBrowser, Class: switchboard.ClassUI},
	})
	res, err := x.Search(switchboard.SearchQuery{Query: "export my slides to pdf"}, nil)
	if err != nil {
		panic(err)
	}
	for _, h := range res.Items {
		fmt.Printf("%s (%s): %s\n", h.Name, h.Class, h.Summary)
	}
	// Output:
	// deck.export (read): Exports a deck as PDF.
}

func ExampleSummaryOf() {
	fmt.Println(search.SummaryOf(switchboard.Tool{
		Description: "Lists invoices, e.g. unpaid ones. Results are paged.",
	}))
	// Output:
	// Lists invoices, e.g. unpaid ones.
}

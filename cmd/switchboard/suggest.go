package main

import "github.com/switchboardhq/switchboard/internal/editdist"

// suggest and orList are the did-you-mean helpers the CLI shares with the
// manifest reader (internal/editdist).
func suggest(word string, candidates []string) []string { return editdist.Suggest(word, candidates) }

func orList(names []string) string { return editdist.OrList(names) }

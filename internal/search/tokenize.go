package search

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/kljensen/snowball/english"
)

// maxTokenBytes bounds one term so hostile input cannot create huge terms;
// longer runs are cut (identifiers that long are rare and still match on
// their first 40 bytes).
const maxTokenBytes = 40

// runeKind classifies a rune for splitting identifiers and prose alike.
type runeKind uint8

const (
	kindSep runeKind = iota
	kindLower
	kindUpper
	kindDigit
)

func kindOf(r rune) runeKind {
	switch {
	case r < utf8.RuneSelf:
		switch {
		case 'a' <= r && r <= 'z':
			return kindLower
		case 'A' <= r && r <= 'Z':
			return kindUpper
		case '0' <= r && r <= '9':
			return kindDigit
		}
		return kindSep
	case unicode.IsUpper(r) || unicode.IsTitle(r):
		return kindUpper
	case unicode.IsLetter(r) || unicode.IsMark(r):
		// Caseless scripts (CJK, Arabic, ...) behave like lower case: they
		// never start a camelCase word.
		return kindLower
	case unicode.IsDigit(r):
		return kindDigit
	}
	return kindSep
}

// splitWords calls emit with each word of s: runs of letters and digits,
// further split at camelCase humps ("getHTTPResponse" → get, HTTP, Response)
// and at letter/digit boundaries ("utf8" → utf, 8). Dots, underscores,
// hyphens, spaces and punctuation all separate, so "deck.export_pdf",
// "deckExportPdf" and "deck-export-pdf" yield the same words.
func splitWords(s string, emit func(word string)) {
	start := -1 // byte offset of the current word, -1 outside a word
	var prev runeKind
	for i, r := range s {
		k := kindOf(r)
		if k == kindSep {
			if start >= 0 {
				emit(s[start:i])
				start = -1
			}
			prev = kindSep
			continue
		}
		if start < 0 {
			start, prev = i, k
			continue
		}
		cut := false
		switch {
		case (prev == kindDigit) != (k == kindDigit):
			cut = true
		case prev == kindLower && k == kindUpper:
			cut = true
		case prev == kindUpper && k == kindLower:
			// "HTTPResponse": the last capital of a run starts the next
			// word, so cut before it unless it is the word's first rune.
			if j := lastRuneStart(s[:i]); j > start {
				emit(s[start:j])
				start = j
			}
		}
		if cut {
			emit(s[start:i])
			start = i
		}
		prev = k
	}
	if start >= 0 {
		emit(s[start:])
	}
}

func lastRuneStart(s string) int {
	_, n := utf8.DecodeLastRuneInString(s)
	return len(s) - n
}

// analyzer turns text into index terms: words lowercased, stop words and
// single characters dropped, English words reduced to their Snowball
// (Porter2) stem. Stems are memoised because Snowball allocates heavily and
// a catalog repeats the same words across thousands of tools.
type analyzer struct {
	stems map[string]string // nil disables memoisation (read-only use)
}

// maxStemCache bounds the memo; past it the memo is dropped and refilled,
// which keeps a long-running daemon's memory flat under catalog churn.
const maxStemCache = 1 << 17

// terms appends the terms of s to dst. It only reads a.stems when write is
// false, so concurrent searches can share it under a read lock.
func (a *analyzer) terms(dst []string, s string, write bool) []string {
	splitWords(s, func(w string) {
		if t, ok := a.term(w, write); ok {
			dst = append(dst, t)
		}
	})
	return dst
}

func (a *analyzer) term(w string, write bool) (string, bool) {
	if t, ok := a.stems[w]; ok {
		return t, t != ""
	}
	t := normalize(w)
	if write && a.stems != nil {
		if len(a.stems) >= maxStemCache {
			clear(a.stems)
		}
		a.stems[strings.Clone(w)] = t
	}
	return t, t != ""
}

// normalize maps one word to its term, or "" when the word is not indexed.
func normalize(w string) string {
	w = strings.ToLower(w)
	if len(w) > maxTokenBytes {
		w = w[:lastRuneStartAtMost(w, maxTokenBytes)]
	}
	if utf8.RuneCountInString(w) < 2 || english.IsStopWord(w) {
		return ""
	}
	if !isASCIILetters(w) {
		// Digits and non-English scripts are kept verbatim: stemming them
		// with English rules would only damage them.
		return w
	}
	return english.Stem(w, true)
}

// lastRuneStartAtMost returns the largest rune boundary ≤ n in s.
func lastRuneStartAtMost(s string, n int) int {
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return n
}

func isASCIILetters(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}

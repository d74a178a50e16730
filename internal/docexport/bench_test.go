package docexport

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// paragraphs is the reported document: 250 paragraphs of n characters of
// words, about 1 MiB at n = 4,000.
func paragraphs(n int) Document {
	word := "lorem ipsum dolor sit amet consectetur "
	text := strings.Repeat(word, n/len(word)+1)[:n]
	doc := Document{Title: "Long"}
	for i := range 250 {
		doc.Blocks = append(doc.Blocks, Block{Type: "paragraph", ID: fmt.Sprint("p", i), Runs: []Run{{Text: text}}})
	}
	return doc
}

// BenchmarkPDFParagraphs measures the PDF of 250 paragraphs at 1k, 2k and
// 4k characters each; the cost per character should stay flat
// (bench/README.md has the numbers).
func BenchmarkPDFParagraphs(b *testing.B) {
	for _, n := range []int{1000, 2000, 4000} {
		doc := paragraphs(n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				if _, err := PDF(context.Background(), doc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestWriteChunks: the chunks put back together are the text, and none
// is longer than the hard limit.
func TestWriteChunks(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "short", strings.Repeat("word ", 100), strings.Repeat("x", 1000), strings.Repeat("é ü ", 300), strings.Repeat("日本語", 200)} {
		parts := writeChunks(s)
		if strings.Join(parts, "") != s {
			t.Fatalf("chunks of %.20q… do not join back", s)
		}
		for _, p := range parts {
			if n := len([]rune(p)); n > writeChunkHard {
				t.Fatalf("a chunk of %d runes", n)
			}
		}
	}
}

// TestPDFScriptCoverage pins what docs/panels.md says the PDF loses: the
// embedded Go fonts cover Latin (with precomposed accents), Greek and
// Cyrillic; every other script, combining marks and emoji print as U+FFFD.
func TestPDFScriptCoverage(t *testing.T) {
	t.Parallel()
	kept := map[string]string{"Latin": "Ærø façade ß œ", "Greek": "Καλημέρα", "Cyrillic": "Привет"}
	lost := map[string]string{
		"Arabic": "مرحبا", "Hebrew": "שלום", "Devanagari": "नमस्ते", "Bengali": "বাংলা", "Tamil": "தமிழ்", "Thai": "สวัสดี",
		"CJK": "中文", "Kana": "かな", "Hangul": "한국어", "Armenian": "Բարեւ", "Georgian": "ქართ", "Ethiopic": "ሰላም",
		"combining acute": "e\u0301", "emoji": "🙂", "symbol emoji": "☃",
	}
	for name, s := range kept {
		if got := pdfText(s); got != s {
			t.Errorf("%s %q prints as %q", name, s, got)
		}
	}
	for name, s := range lost {
		if !strings.ContainsRune(pdfText(s), '\uFFFD') {
			t.Errorf("%s %q prints as written (%q): update docs/panels.md", name, s, pdfText(s))
		}
	}
}

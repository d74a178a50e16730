package docexport

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/panelspec"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// loadDoc validates a panel spec file and returns its root document's
// props, as document.export reads them.
func loadDoc(t testing.TB, name string) Document {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	spec, issues := panelspec.Validate(raw, nil)
	if spec == nil {
		t.Fatalf("%s does not validate: %+v", name, issues)
	}
	doc, _, err := FromSpec(spec, "")
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./docexport -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		out := filepath.Join(t.TempDir(), name)
		_ = os.WriteFile(out, got, 0o644)
		t.Fatalf("%s differs from the golden file (%d bytes, want %d); the new one is at %s; if the change is intended, run go test ./docexport -update", name, len(got), len(want), out)
	}
}

func TestGolden(t *testing.T) {
	doc := loadDoc(t, "report.json")
	for _, f := range []Format{FormatPDF, FormatDOCX} {
		t.Run(string(f), func(t *testing.T) {
			got, err := Render(context.Background(), doc, f)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, "report."+string(f)+".golden", got)
		})
	}
}

// TestSameDocumentSameFile: rendering the same document again, in the
// same process and concurrently, gives the same bytes (fpdf edits the font
// bytes it is handed; each render must get its own).
func TestSameDocumentSameFile(t *testing.T) {
	doc := loadDoc(t, "report.json")
	for _, f := range []Format{FormatPDF, FormatDOCX} {
		first, err := Render(context.Background(), doc, f)
		if err != nil {
			t.Fatal(err)
		}
		outs := make([][]byte, 2)
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i := range outs {
			wg.Go(func() { outs[i], errs[i] = Render(context.Background(), doc, f) })
		}
		wg.Wait()
		for i := range outs {
			if errs[i] != nil || !bytes.Equal(outs[i], first) {
				t.Fatalf("%s render %d differs from the first (%v)", f, i, errs[i])
			}
		}
	}
}

// TestPDFText reads the golden PDF back with poppler's pdftotext: every
// block's text is there, in order, Unicode included.
func TestPDFText(t *testing.T) {
	bin, err := exec.LookPath("pdftotext")
	if err != nil {
		t.Skip("pdftotext (poppler-utils) is not installed")
	}
	out, err := exec.Command(bin, "-layout", filepath.Join("testdata", "report.pdf.golden"), "-").Output()
	if err != nil {
		t.Fatal(err)
	}
	text := string(out)
	inOrder(t, text, "Q3 studio report", "Summary", "Spend fell 6.5% while tasks closed on time rose to 92%", "project board",
		"data.projects.query", "A second line keeps", "tabs.", "Note: Draft", "Warning: Risk", "Success", "Important: Blocked",
		"Projects", "Budgets in USD", "Project", "Owner", "Budget", "Public", "Apollo launch site", "12000", "true",
		"Zoë Łukasiewicz", "Фьорд подкаст", "Κώστας", "-1500",
		"Next steps", "1. Close Ember", "a. final QA", "i. crash reports", "1. deepest level", "b. store listing", "2. Start the Fjord podcast",
		"• Alex", "◦ Apollo", "• Sam", "Page 1 of 3", "Image: Remaining work falls from 20 to 8 days", "asset q3-burndown.png", "Burndown",
		"Page 2 of 3", "Appendix", "Mail us", "the", "board", "Page 3 of 3")
	if n := strings.Count(text, "\f"); n != 3 {
		t.Fatalf("%d pages, want 3 (the page break starts the third)", n)
	}
}

// inOrder fails unless each of want occurs in text after the one before.
func inOrder(t *testing.T, text string, want ...string) {
	t.Helper()
	at := 0
	for _, w := range want {
		i := strings.Index(text[at:], w)
		if i < 0 {
			t.Fatalf("%q not found after offset %d in:\n%s", w, at, text)
		}
		at += i + len(w)
	}
}

// TestDOCXStructure opens the golden DOCX as a reader would: every part is
// well-formed XML, dated Epoch, the text is there in order, links are
// relationships (a relative href stays text), lists have their numbering.
func TestDOCXStructure(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "report.docx.golden"))
	if err != nil {
		t.Fatal(err)
	}
	zr, err := zip.NewReader(bytes.NewReader(raw), int64(len(raw)))
	if err != nil {
		t.Fatal(err)
	}
	parts := map[string]string{}
	var names []string
	for _, f := range zr.File {
		if !f.Modified.Equal(Epoch) {
			t.Errorf("%s is dated %v, want %v", f.Name, f.Modified, Epoch)
		}
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		dec := xml.NewDecoder(bytes.NewReader(b))
		for {
			if _, err := dec.Token(); err == io.EOF {
				break
			} else if err != nil {
				t.Fatalf("%s is not well-formed XML: %v", f.Name, err)
			}
		}
		parts[f.Name] = string(b)
		names = append(names, f.Name)
	}
	want := []string{"[Content_Types].xml", "_rels/.rels", "docProps/core.xml", "word/document.xml", "word/_rels/document.xml.rels",
		"word/styles.xml", "word/numbering.xml", "word/footer1.xml"}
	if !slices.Equal(names, want) {
		t.Fatalf("parts %v, want %v", names, want)
	}
	doc := parts["word/document.xml"]
	var text strings.Builder
	dec := xml.NewDecoder(strings.NewReader(doc))
	inT := false
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		switch el := tok.(type) {
		case xml.StartElement:
			inT = el.Name.Local == "t"
			if el.Name.Local == "p" || el.Name.Local == "tab" || el.Name.Local == "br" {
				text.WriteString("|")
			}
		case xml.EndElement:
			inT = false
		case xml.CharData:
			if inT {
				text.Write(el)
			}
		}
	}
	inOrder(t, text.String(), "Q3 studio report", "Summary", "Spend fell 6.5% while tasks closed on time rose to 92%", "project board",
		"|A second line keeps|tabs.", "Note: Draft", "Warning: Risk", "Success", "Important: Blocked", "Budgets in USD",
		"Project", "Budget", "Apollo launch site", "12000", "Zoë Łukasiewicz", "Фьорд подкаст", "Close Ember", "deepest level",
		"Image: Remaining work falls from 20 to 8 days", "asset q3-burndown.png", "Burndown", "Appendix", "Mail us", "the board")
	for _, w := range []string{`<w:pStyle w:val="Heading1"/>`, `<w:pStyle w:val="Heading3"/>`, `<w:br w:type="page"/>`,
		`<w:tblHeader/>`, `<w:jc w:val="right"/>`, `<w:ilvl w:val="3"/><w:numId w:val="1"/>`, `<w:ilvl w:val="1"/><w:numId w:val="2"/>`} {
		if !strings.Contains(doc, w) {
			t.Errorf("document.xml lacks %s", w)
		}
	}
	rels := parts["word/_rels/document.xml.rels"]
	if !strings.Contains(rels, `Target="https://example.com/board" TargetMode="External"`) || !strings.Contains(rels, `Target="mailto:studio@example.com"`) ||
		strings.Contains(rels, "/projects/board") || strings.Count(rels, "/hyperlink") != 2 {
		t.Errorf("hyperlink relationships: %s", rels)
	}
	num := parts["word/numbering.xml"]
	if !strings.Contains(num, `<w:num w:numId="1"><w:abstractNumId w:val="1"/>`) || !strings.Contains(num, `<w:num w:numId="2"><w:abstractNumId w:val="0"/>`) {
		t.Errorf("numbering: ordered list 1 and bullet list 2 expected: %s", num)
	}
	if !strings.Contains(parts["docProps/core.xml"], "<dc:title>Q3 studio report</dc:title>") {
		t.Errorf("core properties: %s", parts["docProps/core.xml"])
	}
}

func TestFromSpec(t *testing.T) {
	spec := &panelspec.Spec{Root: "stack", Nodes: map[string]panelspec.Node{
		"stack": {Type: "stack", Children: []string{"b", "a"}},
		"a":     {Type: panelspec.TypeDocument, Props: json.RawMessage(`{"title": "A", "blocks": []}`)},
		"b":     {Type: panelspec.TypeDocument, Props: json.RawMessage(`{"title": "B", "blocks": []}`)},
		"t":     {Type: "text", Props: json.RawMessage(`{"text": "x"}`)},
	}}
	_, _, err := FromSpec(spec, "")
	if switchboard.CodeOf(err) != switchboard.CodeInvalidInput || !strings.Contains(err.Error(), "a, b") {
		t.Fatalf("two documents, no node: %v", err)
	}
	if d, id, err := FromSpec(spec, "b"); err != nil || id != "b" || d.Title != "B" {
		t.Fatalf("node b: %v %q %+v", err, id, d)
	}
	if _, _, err := FromSpec(spec, "t"); switchboard.CodeOf(err) != switchboard.CodeInvalidInput {
		t.Fatalf("a text node is not a document: %v", err)
	}
	delete(spec.Nodes, "a")
	if d, id, err := FromSpec(spec, ""); err != nil || id != "b" || d.Title != "B" {
		t.Fatalf("the only document: %v %q", err, id)
	}
	delete(spec.Nodes, "b")
	if _, _, err := FromSpec(spec, ""); switchboard.CodeOf(err) != switchboard.CodeInvalidInput {
		t.Fatalf("no document: %v", err)
	}
}

func TestFileName(t *testing.T) {
	for _, c := range []struct{ title, fallback, want string }{
		{"Q3 studio report", "", "q3-studio-report.pdf"},
		{"  ../../etc/passwd\r\n", "", "etc-passwd.pdf"},
		{"Фьорд", "report.panel", "report-panel.pdf"},
		{"", "", "document.pdf"},
		{strings.Repeat("a", 300), "", strings.Repeat("a", 80) + ".pdf"},
	} {
		if got := FileName(c.title, c.fallback, FormatPDF); got != c.want {
			t.Errorf("FileName(%q, %q) = %q, want %q", c.title, c.fallback, got, c.want)
		}
	}
}

// TestCancelled: a cancelled export stops between blocks with the
// context's cause and no file.
func TestCancelled(t *testing.T) {
	doc := loadDoc(t, "report.json")
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(switchboard.Errorf(switchboard.CodeCancelled, "job cancelled"))
	for _, f := range []Format{FormatPDF, FormatDOCX} {
		b, err := Render(ctx, doc, f)
		if switchboard.CodeOf(err) != switchboard.CodeCancelled || b != nil {
			t.Fatalf("%s: %v, %d bytes", f, err, len(b))
		}
	}
}

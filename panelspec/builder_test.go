package panelspec

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/switchboardhq/switchboard"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden.json from the builder's output")

// builderCases build the same panels the curated examples describe, the Go
// way. Each golden file is the compiled IR; the test checks that it still
// validates, so a golden file cannot silently hold an invalid spec.
var builderCases = map[string]func() *Builder{
	"task_form": func() *Builder {
		b := NewBuilder(OriginHost)
		b.BodyWith(BodyProps{Title: "Edit task"},
			b.Heading("Tasks", 2),
			b.FormSubmit("task", "save",
				TextField("title", "Title").Required().Length(1, 200).Placeholder("What needs doing?"),
				SelectField("priority", "Priority", Opt("low", "Low"), Opt("high", "High")).Required(),
				NumberField("estimate", "Estimate (days)").Range(0, 90).Step(0.5),
				DateField("due", "Due date"),
				CheckboxField("done", "Done"),
				TextField("notes", "Notes").Multiline().Help("Visible to the team."),
			),
			b.Row(b.Button("Delete", "delete")),
		)
		b.Source("task", StateSource("/task"))
		b.State("task", map[string]any{"title": "Write the release notes", "priority": "high"})
		b.Action("save", Mutate("task", OpUpdate))
		b.Action("delete", Mutate("task", OpDelete))
		return b
	},
	"table_view": func() *Builder {
		b := NewBuilder(OriginHost)
		b.BodyWith(BodyProps{Title: "Open tasks"},
			b.Table("tasks",
				Column{Key: "title", Label: "Task", Kind: "link", HrefKey: "url"},
				Column{Key: "due", Label: "Due", Kind: "date"}),
			b.Add(RowProps{Justify: "end"},
				b.Add(ButtonProps{Label: "Refresh", Action: "reload", Variant: "secondary"}),
				b.Link("/help/tasks", "How tasks work")),
		)
		b.Source("tasks", AdapterSource("sql", json.RawMessage(`{"table":"tasks"}`)))
		b.Action("reload", Refresh("tasks"))
		return b
	},
	"dashboard": func() *Builder {
		b := NewBuilder(OriginAgent)
		summary := b.Row(
			b.Column("1/2", b.Heading("Progress", 3), b.List("12 done", "5 in progress")),
			b.Column("1/2", b.Image("https://example.com/burndown.png", "Burndown chart")),
		)
		notes := b.Stack(b.Form("note", TextField("text", "Note").Multiline()))
		b.BodyWith(BodyProps{Title: "Week at a glance"},
			b.Callout("warning", "3 tasks are overdue."),
			b.Tabs(Tab{"Summary", summary}, Tab{"Notes", notes}),
			b.Text("Composed by the assistant."),
			b.Button("Export", "export"),
		)
		b.Source("note", StateSource("/note")).State("note", map[string]any{"text": ""})
		b.Action("export", CallTool("tasks.export", json.RawMessage(`{"format":"csv"}`)))
		return b
	},
}

func TestBuilderGolden(t *testing.T) {
	for name, build := range builderCases {
		t.Run(name, func(t *testing.T) {
			spec, err := build().Build()
			if err != nil {
				var se *switchboard.Error
				errors.As(err, &se)
				t.Fatalf("build: %v\n%+v", err, se.Details)
			}
			got, err := json.MarshalIndent(spec, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			path := filepath.Join("testdata", name+".golden.json")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("builder output differs from %s (run with -update if the change is intended):\n%s", path, got)
			}
			if s, issues := Validate(want, nil); s == nil || len(issues) > 0 {
				t.Errorf("%s does not validate:\n%s", path, dump(issues))
			}
		})
	}
}

func TestBuilderErrors(t *testing.T) {
	t.Parallel()
	b := NewBuilder(OriginAgent)
	b.Body(b.Button("Go", "missing"))
	_, err := b.Build()
	var se *switchboard.Error
	if !errors.As(err, &se) || se.Code != switchboard.CodeSpecAction {
		t.Fatalf("undeclared action: %v", err)
	}
	if issues, ok := se.Details.([]Issue); !ok || len(issues) != 1 || issues[0].Pointer != "/nodes/button1/props/action" {
		t.Fatalf("details = %#v", se.Details)
	}

	b = NewBuilder(OriginAgent)
	b.AddID("x", TextProps{Text: "a"})
	b.AddID("x", TextProps{Text: "b"})
	b.Root("x")
	if _, err := b.Build(); switchboard.CodeOf(err) != switchboard.CodeInvalidInput {
		t.Fatalf("duplicate id: %v", err)
	}

	b = NewBuilder(OriginAgent)
	b.Custom("x", "text", map[string]any{"text": func() {}})
	b.Root("x")
	if _, err := b.Build(); switchboard.CodeOf(err) != switchboard.CodeInvalidInput {
		t.Fatalf("unencodable props: %v", err)
	}
}

func TestBuilderMintedIDsAvoidExplicitOnes(t *testing.T) {
	t.Parallel()
	b := NewBuilder(OriginHost)
	b.AddID("text1", TextProps{Text: "explicit"})
	id := b.Text("minted")
	if id == "text1" {
		t.Fatal("minted id reused an explicit one")
	}
}

func TestBuilderCustomType(t *testing.T) {
	t.Parallel()
	c := NewCatalog()
	if err := c.Register("acme.chart", json.RawMessage(chartSchema)); err != nil {
		t.Fatal(err)
	}
	b := NewBuilder(OriginHost)
	b.Body(b.Custom("chart", "acme.chart", map[string]any{"series": []float64{1, 2, 3}}))
	if _, err := b.BuildWith(&Options{Catalog: c}); err != nil {
		t.Fatal(err)
	}
}

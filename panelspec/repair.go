package panelspec

import (
	"fmt"
	"io"
	"strings"
)

// Agents get one repair round: a rejected spec comes back with RepairHint's
// text, and if the corrected spec fails again the user sees FallbackCard
// instead of a broken panel.

const (
	maxHintIssues = 30
	maxHintLine   = 300
	maxCardItems  = 5
)

// RepairHint renders issues as one compact instruction a model can act on:
// every issue on one line with its code, pointer, node, message and
// suggestion, errors first. It is "" when there is nothing to repair.
func RepairHint(issues []Issue) string {
	if len(issues) == 0 {
		return ""
	}
	var errs, warns []Issue
	for _, is := range issues {
		if is.Severity == SeverityError {
			errs = append(errs, is)
		} else {
			warns = append(warns, is)
		}
	}
	var b strings.Builder
	if len(errs) > 0 {
		fmt.Fprintf(&b, "The panel spec was rejected with %d error(s). Fix every one and send the whole corrected spec again; this is the only repair round.\n", len(errs))
	} else {
		fmt.Fprintf(&b, "The panel spec was accepted with %d warning(s); fix them if you send it again.\n", len(warns))
	}
	n := 0
	for _, list := range [][]Issue{errs, warns} {
		for _, is := range list {
			if n == maxHintIssues {
				fmt.Fprintf(&b, "... and %d more\n", len(issues)-n)
				return b.String()
			}
			n++
			line := fmt.Sprintf("%d. %s %s", n, is.Code, pointerText(is.Pointer))
			if is.NodeID != "" {
				line += fmt.Sprintf(" (node %s)", is.NodeID)
			}
			if is.Severity == SeverityWarning {
				line += " [warning]"
			}
			line += ": " + is.Message
			if is.Suggestion != "" {
				line += " — " + is.Suggestion
			}
			b.WriteString(truncate(line, maxHintLine))
			b.WriteByte('\n')
		}
	}
	return b.String()
}

func pointerText(p string) string {
	if p == "" {
		return "(whole spec)"
	}
	return p
}

// FallbackCard is the valid spec shown when an agent's spec still fails
// after its repair round: a panel titled title with a warning callout and
// the first few problems (code and location only, never the rejected
// content, which may be hostile).
func FallbackCard(title string, issues []Issue) *Spec {
	title = plain(title, 200)
	if title == "" {
		title = "Panel unavailable"
	}
	b := NewBuilder(OriginAgent)
	kids := []string{b.AddID("notice", CalloutProps{
		Tone: "warning", Title: "This panel could not be shown",
		Text: fmt.Sprintf("The assistant's panel had %s that could not be repaired. Ask it to try a simpler panel.", plural(countErrors(issues), "problem")),
	})}
	var items []string
	for _, is := range issues {
		if is.Severity != SeverityError {
			continue
		}
		if len(items) == maxCardItems {
			items = append(items, fmt.Sprintf("and %d more", countErrors(issues)-maxCardItems))
			break
		}
		items = append(items, plain(string(is.Code)+" at "+pointerText(is.Pointer), 200))
	}
	if len(items) > 0 {
		kids = append(kids, b.AddID("problems", ListProps{Items: items}))
	}
	b.AddID("body", BodyProps{Title: title}, kids...)
	b.Root("body")
	spec, err := b.Build()
	if err != nil {
		// Only the details can fail validation; a card without them cannot.
		b := NewBuilder(OriginAgent)
		b.BodyWith(BodyProps{Title: "Panel unavailable"}, b.Callout("warning", "This panel could not be shown."))
		spec, _ = b.Build()
	}
	return spec
}

// plain makes s safe to show in a fallback card: no angle brackets (so no
// tag can form), no control characters, bounded length.
func plain(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r == '<' || r == '>' || r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	return truncate(strings.TrimSpace(s), n)
}

func countErrors(issues []Issue) int {
	n := 0
	for _, is := range issues {
		if is.Severity == SeverityError {
			n++
		}
	}
	return n
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// FormatIssues writes issues for a person: grouped by node (spec-level
// issues first), each with its severity, code, pointer, message and
// suggestion, then a count. It is what `switchboard spec validate` prints.
func FormatIssues(w io.Writer, issues []Issue) error {
	if len(issues) == 0 {
		_, err := fmt.Fprintln(w, "spec is valid")
		return err
	}
	groups := map[string][]Issue{}
	var order []string // spec-level issues first, then nodes as found
	for _, is := range issues {
		if _, seen := groups[is.NodeID]; !seen && is.NodeID != "" {
			order = append(order, is.NodeID)
		}
		groups[is.NodeID] = append(groups[is.NodeID], is)
	}
	if len(groups[""]) > 0 {
		order = append([]string{""}, order...)
	}
	var b strings.Builder
	for i, id := range order {
		if i > 0 {
			b.WriteByte('\n')
		}
		if id == "" {
			b.WriteString("spec\n")
		} else {
			fmt.Fprintf(&b, "node %q\n", id)
		}
		for _, is := range groups[id] {
			fmt.Fprintf(&b, "  %-7s %-17s %s\n", is.Severity, is.Code, pointerText(is.Pointer))
			fmt.Fprintf(&b, "          %s\n", is.Message)
			if is.Suggestion != "" {
				fmt.Fprintf(&b, "          %s\n", is.Suggestion)
			}
		}
	}
	nerr := countErrors(issues)
	fmt.Fprintf(&b, "\n%s, %s\n", plural(nerr, "error"), plural(len(issues)-nerr, "warning"))
	_, err := io.WriteString(w, b.String())
	return err
}

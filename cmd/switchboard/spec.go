package main

import (
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/panelspec"
)

func newSpec(g *globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "spec",
		Short: "Work with Panel Spec IR documents",
	}
	c.AddCommand(newSpecValidate(g))
	return c
}

// specResult is what `spec validate --json` prints.
type specResult struct {
	Valid  bool              `json:"valid"`
	Issues []panelspec.Issue `json:"issues"`
}

func newSpecValidate(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "validate FILE",
		Short: "Validate a panel spec and print its issues",
		Long: `Runs the validation pipeline every panel passes before it renders (parse and
migrate, catalog membership, props, actions, budgets, sanitization) against the
built-in catalog, and prints every issue grouped by node with its code, JSON
pointer and the nearest valid alternative. FILE may be - for stdin.

Runs locally; no daemon is needed. Exits 1 when the spec has errors (warnings
alone exit 0). With --json, prints {"valid", "issues"} instead.`,
		Example: `  switchboard spec validate panel.json
  cat panel.json | switchboard spec validate - --json`,
		Args: exactArgs(1, "one FILE (or - for stdin)"),
		RunE: func(c *cobra.Command, args []string) error {
			raw, err := readSpec(g, args[0])
			if err != nil {
				return err
			}
			_, issues := panelspec.Validate(raw, nil)
			if g.json {
				if issues == nil {
					issues = []panelspec.Issue{}
				}
				if err := g.printJSON(specResult{Valid: !panelspec.HasErrors(issues), Issues: issues}); err != nil {
					return err
				}
			} else if err := panelspec.FormatIssues(g.stdout, issues); err != nil {
				return err
			}
			if e := panelspec.IssuesError(issues); e != nil {
				// The issues are on stdout already; the error line only
				// carries the code for scripts, not the whole list again.
				return &switchboard.Error{Code: e.Code, Message: e.Message}
			}
			return nil
		},
	}
}

// readSpec reads FILE, or stdin for "-", bounded a little above the
// validator's own byte limit so that limit reports an oversize spec.
func readSpec(g *globals, name string) ([]byte, error) {
	var r io.Reader
	if name == "-" {
		r = g.stdin
	} else {
		f, err := os.Open(name)
		if err != nil {
			return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "read spec: %w", err)
		}
		defer f.Close()
		r = f
	}
	raw, err := io.ReadAll(io.LimitReader(r, panelspec.DefaultMaxBytes+1))
	if err != nil {
		return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "read spec %s: %w", name, err)
	}
	return raw, nil
}

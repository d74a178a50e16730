package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/switchboardhq/switchboard"
)

// deleteOutcome is one name's line of `tools delete --json`.
type deleteOutcome struct {
	Name    string             `json:"name"`
	Deleted bool               `json:"deleted"`
	Source  switchboard.Source `json:"source,omitempty"` // the declaration deleted
	// Now is the source whose declaration took over, if one did.
	Now   switchboard.Source `json:"now,omitempty"`
	Error *switchboard.Error `json:"error,omitempty"`
}

func newToolsDelete(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "delete NAME...",
		Short: "Unregister tools: each name's effective declaration is deleted",
		Long: `Unregister tools. For each NAME the declaration in effect is deleted; if
another source also declares the tool (say core under host), that declaration
takes over and the tool stays in the catalog, which is said. Every name is
tried and reported; the exit code is 1, with the first failure's code, if any
name could not be deleted.`,
		Example: `  switchboard tools delete tasks.create
  switchboard tools delete pets.add_pet pets.delete_pet --json`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError{fmt.Errorf("%s expects one or more tool NAMEs", c.CommandPath()), c.CommandPath()}
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			ctx := c.Context()
			var out []deleteOutcome
			var first *switchboard.Error
			var failed []string
			for _, name := range args {
				o := deleteOutcome{Name: name}
				before, err := cl.GetTool(ctx, name)
				if err == nil {
					err = cl.DeleteTool(ctx, name)
				}
				if err != nil {
					o.Error = switchboard.AsError(suggestTool(ctx, cl, name, err))
					if first == nil {
						first = o.Error
					}
					failed = append(failed, name)
					if !g.json {
						fmt.Fprintf(g.stderr, "%s: %s: %s\n", name, o.Error.Code, o.Error.Message)
					}
					out = append(out, o)
					continue
				}
				o.Deleted, o.Source = true, before.Origin.Source
				if after, err := cl.GetTool(ctx, name); err == nil {
					o.Now = after.Origin.Source
				}
				if !g.json {
					if o.Now != "" {
						fmt.Fprintf(g.stdout, "deleted the %s declaration of %s; its %s declaration is now in effect\n", o.Source, name, o.Now)
					} else {
						fmt.Fprintf(g.stdout, "deleted %s\n", name)
					}
				}
				out = append(out, o)
			}
			if g.json {
				if err := g.printJSON(out); err != nil {
					return err
				}
			}
			if first != nil {
				return switchboard.Errorf(first.Code, "%d of %s not deleted: %s", len(failed), count(len(args), "tool", "tools"), strings.Join(failed, ", "))
			}
			return nil
		},
	}
}

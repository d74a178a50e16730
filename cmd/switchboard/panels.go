package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

// newPanels lists and removes host panels (GET and DELETE
// /api/v1/panels). An app declares them with POST /api/v1/panels or in the
// manifest it registers with 'tools register'.
func newPanels(g *globals) *cobra.Command {
	list := newPanelsList(g)
	c := &cobra.Command{
		Use:   "panels",
		Short: "List and remove the host panels agents can open",
		Long: `Host panels are the forms and views an app offers agents (panel.open,
panel.fill). An app declares them with POST /api/v1/panels or in the manifest
it registers with 'switchboard tools register' (see docs/panels.md); a Go host
registers them in code.

With no subcommand, 'switchboard panels' lists them.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) > 0 {
				return unknownSubcommand(c, args[0])
			}
			return list.RunE(c, nil)
		},
	}
	c.AddCommand(list, newPanelsDelete(g))
	return c
}

func newPanelsList(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Short:   "List the host panels: id, title, scope, context kinds",
		Example: "  switchboard panels list\n  switchboard panels list --json",
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			items, err := cl.Panels(c.Context())
			if err != nil {
				return err
			}
			if g.json {
				return g.printJSON(items)
			}
			tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tTITLE\tSCOPE\tCONTEXTS")
			for _, p := range items {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.ID, clip(p.Title, 40), orDash(clip(p.Scope, 40)), orDash(strings.Join(p.ContextKinds, ",")))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			fmt.Fprintln(g.stderr, count(len(items), "panel", "panels"))
			return nil
		},
	}
}

func newPanelsDelete(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:     "delete ID",
		Short:   "Remove a declared host panel (open instances keep their spec)",
		Example: "  switchboard panels delete project.settings",
		Args:    exactArgs(1, "one panel ID"),
		RunE: func(c *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			if err := cl.DeletePanel(c.Context(), args[0]); err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "deleted panel %s\n", args[0])
			return nil
		},
	}
}

package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

// newToolsLearned is `switchboard tools learned NAME [--forget]`: what a
// tool learned from use (docs/search.md, "Learning from use").
func newToolsLearned(g *globals) *cobra.Command {
	var forget bool
	c := &cobra.Command{
		Use:   "learned NAME",
		Short: "Show (or --forget) the queries a tool learned from use",
		Example: `  switchboard tools learned deck.export
  switchboard tools learned deck.export --json
  switchboard tools learned deck.export --forget`,
		Args: exactArgs(1, "one tool NAME"),
		RunE: func(c *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			if forget {
				n, err := cl.ForgetToolLearned(c.Context(), args[0])
				if err != nil {
					return suggestTool(c.Context(), cl, args[0], err)
				}
				if g.json {
					return g.printJSON(map[string]int{"forgotten": n})
				}
				fmt.Fprintf(g.stdout, "%s forgot %s\n", args[0], count(n, "learned example", "learned examples"))
				return nil
			}
			l, err := cl.ToolLearned(c.Context(), args[0])
			if err != nil {
				return suggestTool(c.Context(), cl, args[0], err)
			}
			if g.json {
				return g.printJSON(l)
			}
			if !l.Enabled {
				fmt.Fprintln(g.stderr, "learning is off (serve --search-learn=false): these are kept but not used")
			}
			tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "QUERY\tCALLERS\tLAST USED")
			for _, q := range l.Queries {
				fmt.Fprintf(tw, "%s\t%d\t%s\n", clip(q.Query, 70), q.Callers, q.LastUsed.Format("2006-01-02 15:04"))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			fmt.Fprintln(g.stderr, count(len(l.Queries), "learned query", "learned queries"))
			return nil
		},
	}
	c.Flags().BoolVar(&forget, "forget", false, "delete everything this tool learned")
	return c
}

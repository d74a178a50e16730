package main

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
)

func newApprovals(g *globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "approvals",
		Short: "List, approve and deny agents' calls that wait for the user",
		Long: `An agent's call of a tool that needs approval waits, recorded as
awaiting_approval, until the user approves or denies it here, over the HTTP API
or in the app's approval card. Each approval binds to that one call (tool,
arguments, tool version), is good once, and expires (a denial with reason
"expired"). Only the user's token may decide; an agent token gets FORBIDDEN.`,
	}
	c.AddCommand(newApprovalsList(g), newApprovalsDecide(g, true), newApprovalsDecide(g, false))
	return c
}

func newApprovalsList(g *globals) *cobra.Command {
	var q client.ApprovalQuery
	var quiet bool
	c := &cobra.Command{
		Use:   "list",
		Short: "List approvals (pending unless --status says otherwise)",
		Example: `  switchboard approvals list
  switchboard approvals list --status all --agent agent:planner
  switchboard approvals list --json
  switchboard approvals approve $(switchboard approvals list --quiet)   # approve every pending call`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			items, err := cl.Approvals(c.Context(), q)
			if err != nil {
				return err
			}
			if g.json {
				return g.printJSON(items)
			}
			if quiet { // ids only, for $(...) in scripts and the README
				for _, a := range items {
					fmt.Fprintln(g.stdout, a.ID)
				}
				return nil
			}
			tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tSTATUS\tAGENT\tTOOL\tINPUT\tEXPIRES")
			for _, a := range items {
				// Only a pending approval can still expire: a decided one
				// showing "in 9m" (or "expired" later) reads as undecided.
				expires := "-"
				if a.Status == switchboard.ApprovalPending {
					expires = until(a.ExpiresAt)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", a.ID, a.Status, a.Agent, a.Tool, clip(string(a.Input), 50), expires)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			fmt.Fprintln(g.stderr, count(len(items), "approval", "approvals"))
			return nil
		},
	}
	c.Flags().StringVar(&q.Status, "status", "", "pending (default), approved, denied, expired, cancelled or all")
	c.Flags().StringVar(&q.Agent, "agent", "", "only this agent's (e.g. agent:planner)")
	c.Flags().IntVar(&q.Limit, "limit", 0, "at most this many")
	c.Flags().BoolVarP(&quiet, "quiet", "q", false, "print only the IDs, one a line")
	return c
}

func until(t time.Time) string {
	d := time.Until(t).Round(time.Second)
	if d <= 0 {
		return "expired"
	}
	return "in " + d.String()
}

func newApprovalsDecide(g *globals, approve bool) *cobra.Command {
	verb, short := "deny", "Deny a waiting call: it ends denied with USER_DENIED and does not run"
	if approve {
		verb, short = "approve", "Approve a waiting call: it runs now"
	}
	var reason string
	c := &cobra.Command{
		Use:     verb + " ID...",
		Short:   short,
		Example: fmt.Sprintf("  switchboard approvals %s apr_3f2a...", verb),
		Args: func(c *cobra.Command, args []string) error {
			if len(args) == 0 { // also what $(approvals list -q) gives when nothing waits
				return usageError{fmt.Errorf("%s expects one or more approval IDs; 'switchboard approvals list' shows the pending ones", c.CommandPath()), c.CommandPath()}
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			// In order, stopping at the first refusal: what was decided
			// before it stays decided and has been printed.
			for _, id := range args {
				a, err := cl.Decide(c.Context(), id, client.Decision{Approve: approve, Reason: reason, Channel: "cli"})
				if err != nil {
					return err
				}
				if g.json {
					if err := g.printJSON(a); err != nil {
						return err
					}
					continue
				}
				fmt.Fprintf(g.stdout, "%s %s: %s by %s (invocation %s)\n", a.ID, a.Status, a.Tool, a.Agent, a.InvocationID)
			}
			return nil
		},
	}
	c.Flags().StringVar(&reason, "reason", "", "why (recorded in the ledger and told to the agent)")
	return c
}

package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
)

// newAgents lists, shows and interrupts the agent sessions at work
// (docs/agents.md).
func newAgents(g *globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "agents",
		Short: "List the agents at work, show one, or interrupt one",
		Long: `Every actor that acts on the daemon is an agent session: the built-in
assistant's runs (chat), agents connected with an agent token over MCP or HTTP
(external), job tools' work (background) and agents a host registers itself.
A session moves idle → running → waiting_approval → done | cancelled.

Interrupting one resolves its work to a definite state: a run is cancelled,
the approval its call waits on is cancelled and the call ends CANCELLED, a
job is cancelled through its own cancel. An unknown id is AGENT_NOT_FOUND;
interrupting a session that already ended is CONFLICT.`,
	}
	c.AddCommand(newAgentsList(g), newAgentsShow(g), newAgentsInterrupt(g))
	return c
}

func newAgentsList(g *globals) *cobra.Command {
	var q client.AgentQuery
	var quiet bool
	c := &cobra.Command{
		Use:   "list",
		Short: "List agent sessions, newest first (finished ones too, unless --active)",
		Example: `  switchboard agents list
  switchboard agents list --active --kind external
  switchboard agents list --status waiting_approval --json`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			items, err := cl.Agents(c.Context(), q)
			if err != nil {
				return err
			}
			if g.json {
				return g.printJSON(items)
			}
			if quiet {
				for _, a := range items {
					fmt.Fprintln(g.stdout, a.ID)
				}
				return nil
			}
			tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tKIND\tSTATUS\tLABEL\tTRANSPORT\tTASK\tSEEN")
			for _, a := range items {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", a.ID, a.Kind, a.Status, clip(a.Label, 30), a.Transport, clip(a.Task, 40), ago(a.LastSeen, time.Now()))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			fmt.Fprintln(g.stderr, count(len(items), "agent session", "agent sessions"))
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&q.Kind, "kind", "", "only chat, voice, background or external sessions")
	f.StringVar(&q.Status, "status", "", "only idle, running, waiting_approval, done or cancelled sessions")
	f.StringVar(&q.Session, "session", "", "only the agents bound to this browser session (tab)")
	f.BoolVar(&q.Active, "active", false, "leave out finished sessions")
	f.BoolVarP(&quiet, "quiet", "q", false, "print only the IDs, one a line")
	return c
}

func newAgentsShow(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:     "show ID",
		Short:   "Show one agent session: kind, status, task, scope and what it is bound to",
		Example: `  switchboard agents show agt_3f2a...`,
		Args:    exactArgs(1, "one agent session ID"),
		RunE: func(c *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			a, err := cl.Agent(c.Context(), args[0])
			if err != nil {
				return err
			}
			if g.json {
				return g.printJSON(a)
			}
			return printAgent(g.stdout, a)
		},
	}
}

func newAgentsInterrupt(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "interrupt ID",
		Short: "Stop an agent's work: its run, waiting approval, running calls or job are cancelled",
		Example: `  switchboard agents interrupt agt_3f2a...
  switchboard agents list -q --active --kind external | xargs -n1 switchboard agents interrupt`,
		Args: exactArgs(1, "one agent session ID"),
		RunE: func(c *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			a, err := cl.InterruptAgent(c.Context(), args[0])
			if err != nil {
				return err
			}
			if g.json {
				return g.printJSON(a)
			}
			fmt.Fprintf(g.stdout, "%s %s: %s\n", a.ID, a.Status, a.Reason)
			return nil
		},
	}
}

// printAgent writes one session as aligned "field: value" lines, leaving
// out what it does not have.
func printAgent(w io.Writer, a switchboard.AgentSession) error {
	tw := tabwriter.NewWriter(w, 0, 4, 1, ' ', 0)
	line := func(k, v string) {
		if v != "" {
			fmt.Fprintf(tw, "%s:\t%s\n", k, v)
		}
	}
	line("id", a.ID)
	line("kind", string(a.Kind))
	line("label", a.Label)
	line("principal", a.Principal)
	line("status", string(a.Status))
	line("reason", a.Reason)
	line("task", a.Task)
	line("transport", a.Transport)
	line("session", a.SessionID)
	line("run", a.RunID)
	line("job", a.JobID)
	if s := a.Scope; s != nil {
		line("allow", fmt.Sprint(s.Allow))
		if len(s.Deny) > 0 {
			line("deny", fmt.Sprint(s.Deny))
		}
	}
	line("started", a.StartedAt.Format(time.RFC3339))
	line("last seen", ago(a.LastSeen, time.Now()))
	if !a.EndedAt.IsZero() {
		line("ended", a.EndedAt.Format(time.RFC3339))
	}
	return tw.Flush()
}

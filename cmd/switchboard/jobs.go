package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

// newInvocation shows one invocation record: what `tools call --async`
// points at.
func newInvocation(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:     "invocation ID",
		Short:   "Show one invocation record (status, timing, result or error)",
		Example: `  switchboard invocation 3f2a9c...`,
		Args:    exactArgs(1, "one invocation ID"),
		RunE: func(c *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			inv, err := cl.GetInvocation(c.Context(), args[0])
			if err != nil {
				return err
			}
			return g.printJSON(inv)
		},
	}
}

// newJobs shows and cancels long-running job tools' jobs.
func newJobs(g *globals) *cobra.Command {
	c := &cobra.Command{Use: "jobs", Short: "Show or cancel the jobs that job tools start"}
	show := &cobra.Command{
		Use:     "show ID",
		Short:   "Show a job's status, progress and result",
		Example: `  switchboard jobs show job_3f2a...`,
		Args:    exactArgs(1, "one job ID"),
		RunE: func(c *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			j, err := cl.Job(c.Context(), args[0])
			if err != nil {
				return err
			}
			if g.json {
				return g.printJSON(j)
			}
			fmt.Fprintf(g.stdout, "%s  %s  %s  %3.0f%%  %s\n", j.ID, j.Tool, j.Status, 100*j.Progress, j.Message)
			if j.Error != nil {
				fmt.Fprintf(g.stdout, "error: %s: %s\n", j.Error.Code, j.Error.Message)
			}
			if len(j.Result) > 0 {
				fmt.Fprintf(g.stdout, "result: %s\n", j.Result)
			}
			return nil
		},
	}
	cancel := &cobra.Command{
		Use:     "cancel ID",
		Short:   "Cancel a running job",
		Example: `  switchboard jobs cancel job_3f2a...`,
		Args:    exactArgs(1, "one job ID"),
		RunE: func(c *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			j, err := cl.CancelJob(c.Context(), args[0])
			if err != nil {
				return err
			}
			if g.json {
				return g.printJSON(j)
			}
			fmt.Fprintf(g.stdout, "%s %s\n", j.ID, j.Status)
			return nil
		},
	}
	c.AddCommand(show, cancel)
	return c
}

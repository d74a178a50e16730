package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
)

func newActivity(g *globals) *cobra.Command {
	var (
		q      client.ActivityQuery
		follow bool
	)
	c := &cobra.Command{
		Use:   "activity",
		Short: "Show the activity ledger: every call, approval, catalog change and session",
		Long: `The ledger is append-only and hash-chained: every tool call (with its
outcome), approval decision, catalog change (with a diff), session and job end
is one entry. Without --after it shows the newest entries; --follow then keeps
printing new ones as they happen. Secrets are redacted before anything is
written. 'switchboard activity verify' checks the chain; 'switchboard activity
reverse ID' undoes a call whose tool declares an inverse.`,
		Example: `  switchboard activity
  switchboard activity --actor agent:planner --since 1h
  switchboard activity --verb approval.decide --json
  switchboard activity --follow`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			page, err := cl.Activity(c.Context(), q)
			if err != nil {
				return err
			}
			if !follow {
				if g.json {
					return g.printJSON(page)
				}
				return printEntries(g.stdout, page.Items, true)
			}
			header := true
			show := func(es []switchboard.ActivityEntry) error {
				if g.json {
					enc := json.NewEncoder(g.stdout)
					for _, e := range es {
						if err := enc.Encode(e); err != nil {
							return err
						}
					}
					return nil
				}
				err := printEntries(g.stdout, es, header)
				header = false
				return err
			}
			if err := show(page.Items); err != nil {
				return err
			}
			q.After = page.NextCursor
			if q.After == "" {
				q.After = "0"
			}
			return cl.FollowActivity(c.Context(), q, func(e switchboard.ActivityEntry) error {
				return show([]switchboard.ActivityEntry{e})
			})
		},
	}
	f := c.Flags()
	f.StringVar(&q.Actor, "actor", "", "only entries by this actor (user:admin, agent:NAME, system)")
	f.StringVar(&q.Verb, "verb", "", "only this verb (tool.call, approval.decide, tool.register, session.open, job.finish, ...)")
	f.StringVar(&q.Since, "since", "", "only entries since an RFC 3339 time or a duration ago (1h)")
	f.StringVar(&q.After, "after", "", "entries after this entry id (a page's nextCursor), oldest first")
	f.IntVar(&q.Limit, "limit", 0, "at most this many entries (default 100)")
	f.BoolVarP(&follow, "follow", "f", false, "keep printing new entries as they are written")
	c.AddCommand(newActivityVerify(g), newActivityReverse(g))
	return c
}

// printEntries renders entries as a table; details are one compact line.
func printEntries(w io.Writer, es []switchboard.ActivityEntry, header bool) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if header {
		fmt.Fprintln(tw, "ID\tTIME\tACTOR\tVERB\tTARGET\tDETAILS")
	}
	for _, e := range es {
		d := string(e.Details)
		if len(e.Reversal) > 0 {
			d = "reverses " + string(e.Reversal) + " " + d
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", e.ID, e.Ts.Local().Format("2006-01-02 15:04:05"), e.Actor, e.Verb, e.Target, clip(d, 90))
	}
	return tw.Flush()
}

func newActivityVerify(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "verify",
		Short: "Recompute the ledger's hash chain: any edit, insertion or deletion made in the database shows",
		Long: `Recompute the ledger's hash chain. Each entry's hash covers its content
and the previous entry's hash, so an entry edited, inserted or deleted directly
in the database (behind the daemon's back) breaks the chain at that entry. The
exit code is 1 and the entry is named when the chain is broken.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			r, err := cl.VerifyActivity(c.Context())
			if err != nil {
				return err
			}
			if g.json {
				if err := g.printJSON(r); err != nil {
					return err
				}
			} else if r.OK {
				fmt.Fprintf(g.stdout, "ok: %s, chain intact up to entry %d (%.16s…)\n", count(r.Entries, "entry", "entries"), r.HeadID, r.Head)
			}
			if !r.OK {
				return switchboard.Errorf(switchboard.CodeConflict, "the ledger does not verify at entry %d: %s", r.BadID, r.Problem).
					WithDetails(map[string]any{"badId": r.BadID})
			}
			return nil
		},
	}
}

func newActivityReverse(g *globals) *cobra.Command {
	var async bool
	c := &cobra.Command{
		Use:   "reverse ID",
		Short: "Undo the call recorded by entry ID by running its tool's declared inverse",
		Long: `Run the inverse that the entry's tool declares as a fresh call, through
the broker like any call (an agent's reversal waits for approval). The new
call's ledger entry links back to entry ID. Entries of tools without an
inverse, or declared reversible: false, cannot be reversed (CONFLICT).
Reversing an entry twice replays the first reversal.`,
		Args: exactArgs(1, "one activity entry ID"),
		RunE: func(c *cobra.Command, args []string) error {
			id, err := strconv.ParseInt(args[0], 10, 64)
			if err != nil {
				return usageError{fmt.Errorf("entry ID must be a number, not %q", args[0]), c.CommandPath()}
			}
			cl, err := g.client()
			if err != nil {
				return err
			}
			resp, err := cl.Reverse(c.Context(), id, async)
			if g.json && resp.InvocationID != "" {
				if perr := g.printJSON(resp); perr != nil {
					return perr
				}
			}
			if err != nil {
				return err
			}
			if !g.json {
				fmt.Fprintf(g.stdout, "reversed entry %d: invocation %s %s\n", id, resp.InvocationID, resp.Status)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&async, "async", false, "return once the reversal is recorded, without waiting for it")
	return c
}

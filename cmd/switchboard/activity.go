package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
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
	c.AddCommand(newActivityVerify(g), newActivityCheckpoint(g), newActivityReverse(g))
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
	var checkpoint string
	c := &cobra.Command{
		Use:   "verify",
		Short: "Recompute the ledger's hash chain and check it against its checkpoints: any edit, insertion or deletion shows",
		Long: `Recompute the ledger's hash chain. Each entry's hash covers its content
and the previous entry's hash, so an entry edited, inserted or deleted directly
in the database (behind the daemon's back) breaks the chain at that entry.
The chain alone cannot show that its last entries were deleted, so the ledger
must also reach the daemon's head checkpoint (kept in the data root, outside
the database) with the same hash there; with --checkpoint it must also reach a
checkpoint you exported earlier with 'switchboard activity checkpoint'. The
exit code is 1 and the entry (or the missing range) is named when the ledger
does not verify. A start that found entries missing recorded a ledger.rollback
entry; verify lists those as warnings.`,
		Example: `  switchboard activity verify
  switchboard activity checkpoint > ledger-2026-12-01.json    # keep it off this machine
  switchboard activity verify --checkpoint ledger-2026-12-01.json`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			var raw []byte
			if checkpoint != "" {
				var err error
				if raw, err = os.ReadFile(checkpoint); err != nil {
					return usageError{fmt.Errorf("--checkpoint: %w", err), c.CommandPath()}
				}
			}
			cl, err := g.client()
			if err != nil {
				return err
			}
			r, err := cl.VerifyActivityCheckpoint(c.Context(), raw)
			if err != nil {
				return err
			}
			if g.json {
				if err := g.printJSON(r); err != nil {
					return err
				}
			} else {
				for _, gap := range r.Gaps {
					what := "entries"
					if m := gap.Missing; m != nil {
						what = fmt.Sprintf("entries %d–%d", m.From, m.To)
					}
					fmt.Fprintf(g.stderr, "warning: entry %d records that %s named by the daemon's checkpoint were missing at start (%s)\n", gap.Entry, what, gap.Cause)
				}
				if r.VouchedBy != "" {
					fmt.Fprintf(g.stderr, "note: the replica that answered holds another ledger.key; replica %s says it signed %s (its answer carried a tag under the cluster's admin token: docs/deploy.md, \"The ledger\")\n", r.VouchedBy, checkpoint)
				}
				if r.OK {
					against := "the daemon's checkpoint"
					if checkpoint != "" {
						against += " and " + checkpoint
					}
					fmt.Fprintf(g.stdout, "ok: %s, chain intact up to entry %d (%.16s…), consistent with %s\n", count(r.Entries, "entry", "entries"), r.HeadID, r.Head, against)
				}
			}
			if !r.OK {
				details := map[string]any{"badId": r.BadID}
				if r.Missing != nil {
					details["missing"] = r.Missing
				}
				at := ""
				if r.BadID > 0 {
					at = fmt.Sprintf(" at entry %d", r.BadID)
				}
				return switchboard.Errorf(switchboard.CodeConflict, "the ledger does not verify%s: %s", at, r.Problem).
					WithDetails(details)
			}
			return nil
		},
	}
	c.Flags().StringVar(&checkpoint, "checkpoint", "", "also check the ledger against this checkpoint file (from 'switchboard activity checkpoint')")
	return c
}

func newActivityCheckpoint(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "checkpoint",
		Short: "Print a signed checkpoint of the ledger's head, to keep where the daemon cannot reach it",
		Long: `The daemon verifies the ledger and prints a checkpoint of its head entry:
{seq, hash, ts, durability, boot, mac}, signed with the key in the data root.
Because each hash covers the one before, the checkpoint vouches for every entry
up to seq. Keep it somewhere an attacker with the database and the data root
cannot change (another machine, a ticket, a commit), and later run
'switchboard activity verify --checkpoint FILE': a ledger cut back or rewritten
below seq fails. A ledger that does not verify gets no checkpoint (exit 1).`,
		Example: `  switchboard activity checkpoint > ledger-$(date +%F).json`,
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			cp, err := cl.ActivityCheckpoint(c.Context())
			if err != nil {
				return err
			}
			return json.NewEncoder(g.stdout).Encode(cp)
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

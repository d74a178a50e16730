package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
)

// newSessions shows and ends the open browser tabs (GET and DELETE
// /api/v1/sessions). Without a subcommand it lists them.
func newSessions(g *globals) *cobra.Command {
	list := newSessionsList(g)
	c := &cobra.Command{
		Use:   "sessions",
		Short: "List, show and end the open browser tabs (sessions)",
		Long: `Each browser tab running the SDK is a session: it advertises browser tools
and reports what it shows (its contexts). A tab is offered for calls while its
stream is connected; when the stream drops, calls that name it wait for it at
most the reconnect window, and the session is kept for the keep window so a
reload resumes it (see docs/browser.md).

With no subcommand, 'switchboard sessions' lists the tabs.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) > 0 {
				return unknownSubcommand(c, args[0])
			}
			return list.RunE(c, nil)
		},
	}
	c.AddCommand(list, newSessionsShow(g), newSessionsEnd(g))
	return c
}

func newSessionsList(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the open tabs: state, user, tools, contexts",
		Example: `  switchboard sessions list
  switchboard sessions list --json`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			items, err := cl.Sessions(c.Context())
			if err != nil {
				return err
			}
			if g.json {
				return g.printJSON(items)
			}
			now := time.Now()
			tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tSTATE\tUSER\tTOOLS\tCONTEXTS\tPENDING\tLAST SEEN")
			for _, s := range items {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%s\n", s.ID, s.State, orDash(s.User),
					clip(strings.Join(toolNames(s.Tools), ","), 40), len(s.Contexts), s.Pending, seen(s, now))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			fmt.Fprintln(g.stderr, count(len(items), "session", "sessions"))
			return nil
		},
	}
}

func newSessionsShow(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "show ID",
		Short: "Show one session: its state, times, tools and contexts",
		Example: `  switchboard sessions show ses_3f2a...
  switchboard sessions show ses_3f2a... --json`,
		Args: exactArgs(1, "one session ID; 'switchboard sessions list' shows them"),
		RunE: func(c *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			s, err := cl.Session(c.Context(), args[0])
			if err != nil {
				return suggestSession(c.Context(), cl, args[0], err)
			}
			if g.json {
				return g.printJSON(s)
			}
			printSession(g.stdout, s, time.Now())
			return nil
		},
	}
}

func newSessionsEnd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:     "end ID...",
		Short:   "End sessions for good: the tab's stream ends, its calls fail with SESSION_GONE, its token stops working",
		Example: `  switchboard sessions end ses_3f2a...`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError{fmt.Errorf("%s expects one or more session IDs; 'switchboard sessions list' shows them", c.CommandPath()), c.CommandPath()}
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			// In order, stopping at the first refusal; what ended before it
			// has been printed.
			for _, id := range args {
				if err := cl.CloseSession(c.Context(), id); err != nil {
					return suggestSession(c.Context(), cl, id, err)
				}
				if g.json {
					if err := g.printJSON(map[string]string{"id": id, "state": string(switchboard.TabClosed)}); err != nil {
						return err
					}
					continue
				}
				fmt.Fprintf(g.stdout, "%s ended\n", id)
			}
			return nil
		},
	}
}

// printSession writes one session for people.
func printSession(w io.Writer, s switchboard.SessionInfo, now time.Time) {
	fmt.Fprintf(w, "%s  %s\n", s.ID, s.State)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "user\t%s\n", orDash(s.User))
	fmt.Fprintf(tw, "created\t%s\n", stamp(s.CreatedAt, now))
	if !s.LastSeen.IsZero() {
		fmt.Fprintf(tw, "last seen\t%s\n", seen(s, now))
	}
	if !s.ExpiresAt.IsZero() {
		fmt.Fprintf(tw, "kept until\t%s (unless the tab reconnects)\n", stamp(s.ExpiresAt, now))
	}
	if !s.ClosedAt.IsZero() {
		fmt.Fprintf(tw, "closed\t%s\n", stamp(s.ClosedAt, now))
	}
	if s.Replica != "" {
		fmt.Fprintf(tw, "stream on\treplica %s\n", s.Replica)
	}
	fmt.Fprintf(tw, "pending calls\t%d\n", s.Pending)
	_ = tw.Flush()
	fmt.Fprintf(w, "\n%s:\n", count(len(s.Tools), "tool", "tools"))
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, t := range s.Tools {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", t.Name, t.Class, clip(cmp.Or(t.Summary, t.Description), 60))
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "\n%s:\n", count(len(s.Contexts), "context", "contexts"))
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, x := range s.Contexts {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", x.ID, x.Kind, x.Attention, clip(x.Label, 40), count(len(x.Panels), "panel", "panels"))
	}
	_ = tw.Flush()
}

// suggestSession adds "did you mean ID?" to a NOT_FOUND for a session id,
// with the nearest ids of the open tabs. Any other error, or a failure to
// list, leaves err as it is.
func suggestSession(ctx context.Context, cl *client.Client, id string, err error) error {
	var e *switchboard.Error
	if !errors.As(err, &e) || e.Code != switchboard.CodeNotFound {
		return err
	}
	items, lerr := cl.Sessions(ctx)
	if lerr != nil {
		return err
	}
	ids := make([]string, len(items))
	for i, s := range items {
		ids[i] = s.ID
	}
	s := suggest(id, ids)
	if len(s) == 0 {
		return err
	}
	return &switchboard.Error{Code: e.Code, Message: e.Message + "; did you mean " + orList(s) + "?", Details: e.Details}
}

func toolNames(ts []switchboard.Tool) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Name
	}
	return out
}

// seen says when a tab was last heard from: "now" while connected.
func seen(s switchboard.SessionInfo, now time.Time) string {
	if s.Connected {
		return "now"
	}
	if s.LastSeen.IsZero() {
		return "-"
	}
	return ago(s.LastSeen, now)
}

// ago says how long before now t was, to the second; "-" for no time.
func ago(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t).Round(time.Second)
	if d <= 0 {
		return "now"
	}
	return d.String() + " ago"
}

// stamp is a time with how far it is from now.
func stamp(t, now time.Time) string {
	d := t.Sub(now).Round(time.Second)
	rel := ago(t, now)
	if d > 0 {
		rel = "in " + d.String()
	}
	return t.Local().Format(time.DateTime) + " (" + rel + ")"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

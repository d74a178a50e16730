package main

import (
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
	"github.com/switchboardhq/switchboard/internal/manifest"
)

func newTools(g *globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "tools",
		Short: "List, search, describe, register and delete tools in the catalog",
	}
	c.AddCommand(newToolsList(g), newToolsSearch(g), newToolsDescribe(g), newToolsRegister(g), newToolsDelete(g), newToolsLearned(g))
	return c
}

func newToolsList(g *globals) *cobra.Command {
	var surface, session string
	c := &cobra.Command{
		Use:   "list",
		Short: "List the catalog",
		Example: `  switchboard tools list
  switchboard tools list --surface api --json
  switchboard tools list --session 3f2a...   # only that tab's live browser tools`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			m, err := cl.ListTools(c.Context(), client.ListOptions{Surface: switchboard.Surface(surface), SessionID: session})
			if err != nil {
				return err
			}
			if g.json {
				return g.printJSON(m)
			}
			tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			// An open tab's tool names its tab: it is live only while the tab is.
			live := slices.ContainsFunc(m.Tools, func(t switchboard.Tool) bool { return tabOf(t) != "" })
			if live {
				fmt.Fprintln(tw, "NAME\tSURFACE\tCLASS\tAPPROVAL\tSESSION\tSUMMARY")
			} else {
				fmt.Fprintln(tw, "NAME\tSURFACE\tCLASS\tAPPROVAL\tSUMMARY")
			}
			for _, t := range m.Tools {
				if live {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", t.Name, t.Surface, t.Class, t.Approval, or(tabOf(t), "-"), clip(t.Summary, 70))
					continue
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", t.Name, t.Surface, t.Class, t.Approval, clip(t.Summary, 70))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			fmt.Fprintln(g.stderr, count(len(m.Tools), "tool", "tools"))
			return nil
		},
	}
	c.Flags().StringVar(&surface, "surface", "", "only api or browser tools")
	c.Flags().StringVar(&session, "session", "", "list only this session's live browser tools (default: every open tab's)")
	return c
}

func newToolsSearch(g *globals) *cobra.Command {
	var q switchboard.SearchQuery
	c := &cobra.Command{
		Use:   "search QUERY",
		Short: "Search the catalog (BM25 over names, descriptions and parameters)",
		Example: `  switchboard tools search "create a task"
  switchboard tools search invoice --limit 5 --json
  switchboard tools search invoice --cursor <nextCursor from the previous page>
  switchboard tools search --regex '^billing\.invoice\.'`,
		Args: exactArgs(1, "one QUERY (quote several words)"),
		RunE: func(c *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			q.Query = args[0]
			res, err := cl.SearchTools(c.Context(), q)
			if err != nil {
				return err
			}
			if g.json {
				return g.printJSON(res)
			}
			tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tSURFACE\tCLASS\tSCORE\tSUMMARY")
			for _, h := range res.Items {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%.2f\t%s\n", h.Name, h.Surface, h.Class, h.Score, clip(h.Summary, 70))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if len(res.OpenTab) > 0 {
				fmt.Fprintln(g.stdout, "\nin open tabs:")
				tw = tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "NAME\tSESSION\tCLASS\tSCORE\tSUMMARY")
				for _, h := range res.OpenTab {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%.2f\t%s\n", h.Name, h.SessionID, h.Class, h.Score, clip(h.Summary, 70))
				}
				if err := tw.Flush(); err != nil {
					return err
				}
			}
			if len(res.Items) == 0 && len(res.OpenTab) == 0 {
				fmt.Fprintln(g.stderr, "no matching tools")
			}
			if res.NextCursor != "" {
				fmt.Fprintf(g.stderr, "more: --cursor %s\n", res.NextCursor)
			}
			return nil
		},
	}
	c.Flags().IntVar(&q.Limit, "limit", 10, "results per page (1-100)")
	c.Flags().StringVar(&q.Cursor, "cursor", "", "continue from a previous page")
	c.Flags().BoolVar(&q.Regex, "regex", false, `QUERY is an RE2 pattern matched against names, summaries and descriptions (e.g. '^deck\.', '(?i)invoice')`)
	c.Flags().StringVar((*string)(&q.Surface), "surface", "", "only api or browser tools")
	return c
}

func newToolsDescribe(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:     "describe NAME",
		Short:   "Show a tool's full descriptor, with its schemas",
		Example: `  switchboard tools describe tasks.create`,
		Args:    exactArgs(1, "one tool NAME"),
		RunE: func(c *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			t, err := cl.GetTool(c.Context(), args[0])
			if err != nil {
				return suggestTool(c.Context(), cl, args[0], err)
			}
			return g.printJSON(t)
		},
	}
}

func newToolsRegister(g *globals) *cobra.Command {
	var source string
	c := &cobra.Command{
		Use:   "register FILE",
		Short: "Register or replace the tools, data adapters and panels of a manifest file (YAML or JSON), all or nothing",
		Example: `  switchboard tools register tools.yaml
  switchboard tools register tools.json --source plugin`,
		Args: exactArgs(1, "one manifest FILE"),
		RunE: func(c *cobra.Command, args []string) error {
			m, err := manifest.Load(args[0])
			if err != nil {
				return err
			}
			cl, err := g.client()
			if err != nil {
				return err
			}
			// Path-only binding URLs name the daemon's own server: the one
			// this command registers with.
			manifest.Resolve(&m, cl.BaseURL())
			var tools []switchboard.Tool
			if len(m.Panels)+len(m.Adapters) > 0 {
				tools, err = cl.RegisterManifest(c.Context(), switchboard.Source(source), m)
			} else {
				tools, err = cl.RegisterTools(c.Context(), switchboard.Source(source), m.Tools)
			}
			if err != nil {
				return err
			}
			if g.json {
				return g.printJSON(switchboard.Manifest{ProtocolVersion: switchboard.ProtocolVersion, Tools: tools})
			}
			for _, t := range tools {
				note := ""
				if len(t.Origin.Overrides) > 0 {
					note = fmt.Sprintf(" (overrides %s)", joinSources(t.Origin.Overrides))
				}
				fmt.Fprintf(g.stdout, "registered %s [%s, %s]%s\n", t.Name, t.Surface, t.Class, note)
			}
			for _, a := range m.Adapters {
				fmt.Fprintf(g.stdout, "registered adapter %s\n", a.Name)
			}
			for _, p := range m.Panels {
				fmt.Fprintf(g.stdout, "registered panel %s\n", p.ID)
			}
			return nil
		},
	}
	c.Flags().StringVar(&source, "source", "host", "declaring source: core, host, scoped or plugin (later ones override earlier by name)")
	return c
}

func joinSources(ss []switchboard.Source) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = string(s)
	}
	return strings.Join(parts, ", ")
}

func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// tabOf names the open tab a live browser tool came from ("" for the catalog's).
func tabOf(t switchboard.Tool) string {
	if t.Origin == nil {
		return ""
	}
	return t.Origin.SessionID
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

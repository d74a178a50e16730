package main

import (
	"cmp"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
)

func newToken(g *globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "token",
		Short: "Mint, list and revoke agents' scoped tokens",
		Long: `An agent token lets an agent (an MCP client, a script) call tools as
agent:NAME, within its scope: --allow globs (default: every tool) minus --deny
globs over tool names, where * matches any run of characters. Scopes apply to
calls and to listings and search: an agent never sees a tool it cannot call.
--panel and --slot limit it further to some panels and page slots: the panel
tools show it nothing else and refuse to act anywhere else.
--user names the person the agent acts for (user:alice): its approvals go to
that user, and every backend call says "agent:NAME for user:alice". Without
--user the agent acts for the operator (user:admin).
The secret is printed once and stored only as a hash.`,
	}
	c.AddCommand(newTokenCreate(g), newTokenList(g), newTokenRevoke(g))
	return c
}

func newTokenCreate(g *globals) *cobra.Command {
	var agent, user string
	var allow, deny, panels, slots []string
	c := &cobra.Command{
		Use:   "create",
		Short: "Mint a token for an agent (the secret is shown once)",
		Example: `  switchboard token create --agent planner --allow 'tasks.*' --deny '*.delete'
  switchboard token create --agent planner --user user:alice --allow 'tasks.*'
  SWITCHBOARD_TOKEN=$(switchboard token create --agent ci --allow 'deploy.*' --json | jq -r .token)
  # a concierge that may open and fill the booking panels in the sidebar, and run nothing
  switchboard token create --agent concierge --allow 'panel.list' --allow 'panel.read_state' \
    --allow 'panel.open' --allow 'panel.fill' --panel 'booking.*' --slot sidebar`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if agent == "" {
				return usageError{fmt.Errorf("--agent NAME is required"), c.CommandPath()}
			}
			cl, err := g.client()
			if err != nil {
				return err
			}
			t, err := cl.CreateToken(c.Context(), client.TokenRequest{Agent: agent, User: user, Allow: allow, Deny: deny, Panels: panels, Slots: slots})
			if err != nil {
				return err
			}
			if g.json {
				return g.printJSON(t)
			}
			fmt.Fprintf(g.stdout, "%s\n", t.Token)
			fmt.Fprintf(g.stderr, "token %s for agent:%s acting for %s (allow %s, deny %s, panels %s, slots %s); the secret above is shown only now\n",
				t.ID, t.Agent, actsFor(t.AgentToken), globs(t.Allow, "*"), globs(t.Deny, "nothing"), globs(t.Panels, "*"), globs(t.Slots, "*"))
			return nil
		},
	}
	c.Flags().StringVar(&agent, "agent", "", "the agent's name (its principal is agent:NAME)")
	c.Flags().StringVar(&user, "user", "", "the person the agent acts for (user:ID; default the operator, user:admin)")
	c.Flags().StringArrayVar(&allow, "allow", nil, "tool-name glob the agent may use (repeatable; default all)")
	c.Flags().StringArrayVar(&deny, "deny", nil, "tool-name glob the agent may not use (repeatable; wins over --allow)")
	c.Flags().StringArrayVar(&panels, "panel", nil, "panel-id glob the agent may work on (repeatable; default all; its own composed panels always)")
	c.Flags().StringArrayVar(&slots, "slot", nil, "page-slot glob the agent may show and edit panels in (repeatable; default all)")
	return c
}

// actsFor says whom a token's agent acts for, and that a token without a
// user acts for the operator.
func actsFor(t switchboard.AgentToken) string {
	if t.User == "" {
		return cmp.Or(t.ActsFor, switchboard.Operator) + " (operator)"
	}
	return t.User
}

func globs(g []string, none string) string {
	if len(g) == 0 {
		return none
	}
	return strings.Join(g, ",")
}

func newTokenList(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List agent tokens (never their secrets)",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			ts, err := cl.Tokens(c.Context())
			if err != nil {
				return err
			}
			if g.json {
				return g.printJSON(ts)
			}
			tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tAGENT\tACTS FOR\tALLOW\tDENY\tPANELS\tSLOTS\tCREATED\tREVOKED")
			for _, t := range ts {
				revoked := "-"
				if !t.RevokedAt.IsZero() {
					revoked = t.RevokedAt.Local().Format("2006-01-02 15:04")
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, t.Agent, actsFor(t), globs(t.Allow, "*"), globs(t.Deny, "-"),
					globs(t.Panels, "*"), globs(t.Slots, "*"),
					t.CreatedAt.Local().Format("2006-01-02 15:04"), revoked)
			}
			return tw.Flush()
		},
	}
}

func newTokenRevoke(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "revoke ID",
		Short: "Revoke a token: its next request is refused (401)",
		Args:  exactArgs(1, "one token ID (see 'switchboard token list')"),
		RunE: func(c *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			t, err := cl.RevokeToken(c.Context(), args[0])
			if err != nil {
				return err
			}
			if g.json {
				return g.printJSON(t)
			}
			fmt.Fprintf(g.stdout, "revoked %s (agent:%s)\n", t.ID, t.Agent)
			return nil
		},
	}
}

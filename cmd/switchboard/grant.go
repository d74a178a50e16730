package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

func newGrant(g *globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "grant",
		Short: "List and revoke users' OAuth grants to MCP clients",
		Long: `A grant is one user's approval of one MCP client on switchboard's own
authorization server (serve without --oauth-issuer; docs/oauth.md). The
client acts as agent:oauth-CLIENT for that user while the grant lives;
revoking it stops the client's next call on every replica.`,
	}
	c.AddCommand(newGrantList(g), newGrantRevoke(g))
	return c
}

func newGrantList(g *globals) *cobra.Command {
	var user string
	c := &cobra.Command{
		Use:   "list",
		Short: "List grants, newest first (revoked ones too)",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			gs, err := cl.OAuthGrants(c.Context(), user)
			if err != nil {
				return err
			}
			if g.json {
				return g.printJSON(gs)
			}
			tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tUSER\tCLIENT\tAGENT\tREDIRECT HOST\tSCOPES\tCREATED\tREVOKED")
			for _, gr := range gs {
				revoked := "-"
				if !gr.RevokedAt.IsZero() {
					revoked = gr.RevokedAt.Local().Format("2006-01-02 15:04")
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", gr.ID, gr.User, gr.ClientName, gr.Agent, gr.RedirectHost,
					strings.Join(gr.Scopes, " "), gr.CreatedAt.Local().Format("2006-01-02 15:04"), revoked)
			}
			return tw.Flush()
		},
	}
	c.Flags().StringVar(&user, "user", "", "only this user's grants (user:ID)")
	return c
}

func newGrantRevoke(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "revoke ID",
		Short: "Revoke a grant: the client's next call is refused (401)",
		Args:  exactArgs(1, "one grant ID (see 'switchboard grant list')"),
		RunE: func(c *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			gr, err := cl.RevokeOAuthGrant(c.Context(), args[0])
			if err != nil {
				return err
			}
			if g.json {
				return g.printJSON(gr)
			}
			fmt.Fprintf(g.stdout, "revoked %s (%s for %s)\n", gr.ID, gr.Agent, gr.User)
			return nil
		},
	}
}

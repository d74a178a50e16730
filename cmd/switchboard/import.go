package main

import (
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/openapi"
)

// maxOpenAPIBytes bounds an OpenAPI document read from disk.
const maxOpenAPIBytes = 32 << 20

func newToolsImport(g *globals) *cobra.Command {
	var (
		opts    openapi.Options
		headers []string
		source  string
		dryRun  bool
	)
	c := &cobra.Command{
		Use:   "import-openapi FILE",
		Short: "Import every operation of an OpenAPI 3 (or Swagger 2.0) document as an api tool",
		Long: `Import every operation of an OpenAPI document (YAML or JSON) as an api tool
with an HTTP binding to --base-url, and print what was imported, what was
skipped and why. Names are NAMESPACE.VERB from the first tag (or
--namespace) and the operationId; GET and HEAD are class read, the rest
mutate, and DELETE asks for approval. See docs/api-tools.md for the rules.

Credentials never go in the catalog in plain text: --header NAME=env:VAR
makes every call read VAR from the daemon's environment.`,
		Example: `  switchboard tools import-openapi petstore.yaml --base-url http://127.0.0.1:8080/api/v3
  switchboard tools import-openapi api.json --base-url https://api.example.com --namespace shop --dry-run
  switchboard tools import-openapi api.yaml --base-url http://127.0.0.1:8080 --header X-Api-Key=env:SHOP_API_KEY`,
		Args: exactArgs(1, "one OpenAPI FILE"),
		RunE: func(c *cobra.Command, args []string) error {
			var err error
			if opts.Headers, err = parseHeaders(headers); err != nil {
				return usageError{err, c.CommandPath()}
			}
			st, err := os.Stat(args[0])
			if err != nil {
				return switchboard.Errorf(switchboard.CodeInvalidInput, "read OpenAPI document: %v", err)
			}
			if st.Size() > maxOpenAPIBytes {
				return switchboard.Errorf(switchboard.CodePayloadTooLarge, "%s is %d bytes; the limit is %d", args[0], st.Size(), maxOpenAPIBytes)
			}
			data, err := os.ReadFile(args[0])
			if err != nil {
				return switchboard.Errorf(switchboard.CodeInvalidInput, "read OpenAPI document: %v", err)
			}
			res, err := openapi.Import(c.Context(), data, opts)
			if err != nil {
				return err
			}
			registered := false
			if !dryRun && len(res.Tools) > 0 {
				cl, err := g.client()
				if err != nil {
					return err
				}
				if res.Tools, err = cl.RegisterTools(c.Context(), switchboard.Source(source), res.Tools); err != nil {
					return err
				}
				registered = true
			}
			if g.json {
				return g.printJSON(struct {
					*openapi.Result
					Registered bool `json:"registered"`
				}{res, registered})
			}
			printImport(g, res, registered)
			if len(res.Tools) == 0 {
				return switchboard.Errorf(switchboard.CodeInvalidInput, "no operation of %s could be imported (see the reasons above)", args[0])
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&opts.BaseURL, "base-url", "", "where the API is served, e.g. http://127.0.0.1:8080/api (default: the document's first server, if absolute)")
	f.StringVar(&opts.Namespace, "namespace", "", "namespace of every tool (default: each operation's first tag)")
	f.StringArrayVar(&headers, "header", nil, "header for every call: NAME=env:VAR (read from the daemon's environment) or NAME=VALUE (repeatable)")
	f.StringVar(&source, "source", "host", "declaring source: core, host, scoped or plugin")
	f.BoolVar(&dryRun, "dry-run", false, "print what would be imported without registering anything")
	return c
}

// parseHeaders reads NAME=env:VAR and NAME=VALUE.
func parseHeaders(specs []string) (map[string]switchboard.HeaderValue, error) {
	if len(specs) == 0 {
		return nil, nil
	}
	out := map[string]switchboard.HeaderValue{}
	for _, s := range specs {
		name, val, ok := strings.Cut(s, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" || val == "" {
			return nil, fmt.Errorf("--header %q: use NAME=env:VAR or NAME=VALUE", s)
		}
		if env, isEnv := strings.CutPrefix(val, "env:"); isEnv {
			out[name] = switchboard.HeaderValue{Env: env}
		} else {
			out[name] = switchboard.HeaderValue{Value: val}
		}
	}
	return out, nil
}

func printImport(g *globals, res *openapi.Result, registered bool) {
	verb := "Would import"
	if registered {
		verb = "Imported"
	}
	fmt.Fprintf(g.stdout, "%s %s from %q %s (base URL %s):\n", verb, count(len(res.Tools), "tool", "tools"), res.Title, res.Version, res.BaseURL)
	tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
	for _, t := range res.Tools {
		h := t.Binding.HTTP
		path := strings.TrimPrefix(h.URL, res.BaseURL)
		path, _, _ = strings.Cut(path, "?")
		note := ""
		if t.Approval == switchboard.ApprovalHITL {
			note = "approval: hitl"
		}
		fmt.Fprintf(tw, "  %s\t%s %s\t%s\t%s\n", t.Name, h.Method, path, t.Class, note)
	}
	tw.Flush()
	if len(res.Skipped) > 0 {
		fmt.Fprintf(g.stdout, "Skipped %s:\n", count(len(res.Skipped), "operation", "operations"))
		for _, s := range res.Skipped {
			id := ""
			if s.OperationID != "" {
				id = " (" + s.OperationID + ")"
			}
			fmt.Fprintf(g.stdout, "  %s %s%s: %s\n", s.Method, s.Path, id, s.Reason)
		}
	}
	if len(res.Notes) > 0 {
		fmt.Fprintln(g.stdout, "Notes:")
		for _, n := range res.Notes {
			if n.Tool != "" {
				fmt.Fprintf(g.stdout, "  %s: %s\n", n.Tool, n.Message)
			} else {
				fmt.Fprintf(g.stdout, "  %s\n", n.Message)
			}
		}
	}
}

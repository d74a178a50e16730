package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
	"github.com/switchboardhq/switchboard/internal/daemon"
)

// globals are the flags every command shares.
type globals struct {
	addr, token, data string
	config            string // --config: serve reads all of it, client commands addr and data
	addrSet, dataSet  bool   // --addr, --data given on the command line
	configRead        bool
	loginUser         string // set when a command uses the sign-in of 'switchboard login'
	json              bool
	stdin             io.Reader
	stdout, stderr    io.Writer
}

// Run executes the CLI with args and returns the process exit code: 0 on
// success, 1 on a failure (its code printed), 2 on a usage error.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	g := &globals{stdin: stdin, stdout: stdout, stderr: stderr}
	root := newRoot(g)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	var usage usageError
	if !errors.As(err, &usage) && (strings.HasPrefix(err.Error(), "unknown command ") || strings.HasPrefix(err.Error(), "unknown flag")) {
		usage = usageError{err, "switchboard"}
	}
	if usage.error != nil {
		fmt.Fprintf(stderr, "error: %v\nRun '%s --help' for usage.\n", usage.error, usage.cmd)
		return 2
	}
	e := switchboard.AsError(err)
	if g.json {
		enc := json.NewEncoder(stderr)
		enc.SetIndent("", "  ")
		_ = enc.Encode(switchboard.ErrorEnvelope{Error: e})
	} else {
		fmt.Fprintf(stderr, "error: %s: %s\n", e.Code, e.Message)
		switch {
		case e.Code == switchboard.CodeForbidden && g.loginUser != "":
			fmt.Fprintf(stderr, "(signed in as %s: pass --token, or run 'switchboard logout', to act as the operator)\n", g.loginUser)
		case e.Code == switchboard.CodeUnauthorized && g.loginUser != "":
			fmt.Fprintf(stderr, "(the sign-in of %s was refused: run 'switchboard login' again, or 'switchboard logout')\n", g.loginUser)
		}
	}
	return 1
}

type usageError struct {
	error
	cmd string
}

func newRoot(g *globals) *cobra.Command {
	root := &cobra.Command{
		Use:   "switchboard",
		Short: "Make a web app agent-ready: one catalog of tools for the API, the CLI, MCP and the assistant",
		Long: `switchboard sits beside a web app. Every capability is declared once as a tool
in one searchable catalog and is reachable the same way from the HTTP API, this
CLI, MCP and the built-in assistant.

Start the daemon with 'switchboard serve'; every other command talks to it.
The daemon address comes from --addr or $SWITCHBOARD_ADDR (default 127.0.0.1:7766).
The token is the first of: --token, $SWITCHBOARD_TOKEN, the sign-in of
'switchboard login' for that address (<data>/login.json: commands act as that
person; 'switchboard logout' forgets it), <data>/admin.token (the operator). With
--config FILE (the file serve reads) the address and data root come from the
file unless a flag or variable gives them.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError{flagSuggestion(err, c.Flags()), c.CommandPath()}
	})
	root.DisableSuggestions = true // rejectUnknownSubcommands suggests, for every level alike
	root.PersistentPreRun = func(c *cobra.Command, _ []string) {
		g.addrSet, g.dataSet = c.Flags().Changed("addr"), c.Flags().Changed("data")
	}
	pf := root.PersistentFlags()
	pf.StringVar(&g.addr, "addr", envOr("SWITCHBOARD_ADDR", client.DefaultAddr), "daemon address (host:port) [$SWITCHBOARD_ADDR]")
	pf.StringVar(&g.token, "token", os.Getenv("SWITCHBOARD_TOKEN"), "bearer token [$SWITCHBOARD_TOKEN; default: the sign-in of 'switchboard login', else <data>/admin.token]")
	hideDefault(pf, "token") // a secret: --help must not print it
	pf.StringVar(&g.data, "data", "", "data root [$SWITCHBOARD_DATA; default: ~/.local/share/switchboard]")
	pf.StringVar(&g.config, "config", "", "YAML config file: serve reads all of it, client commands the daemon address and data root (flags and environment win)")
	pf.BoolVar(&g.json, "json", false, "print machine-readable JSON instead of tables")
	tools := newTools(g)
	tools.AddCommand(newToolsCall(g), newToolsImport(g))
	root.AddCommand(newServe(g), tools, newRun(g))
	root.AddCommand(newMCP(g))
	root.AddCommand(newSpec(g))
	root.AddCommand(newApprovals(g), newActivity(g), newToken(g), newGrant(g))
	root.AddCommand(newLogin(g), newLogout(g))
	root.AddCommand(newInvocation(g), newJobs(g), newAgents(g), newDocuments(g), newTasks(g))
	root.AddCommand(newSessions(g), newPanels(g))
	root.AddCommand(newVersion(g), newBackup(g), newRestore(g), newDoctor(g))
	rejectUnknownSubcommands(root)
	return root
}

// hideDefault keeps a flag whose default is read from the environment
// from showing that value in --help: for a secret (the token, a store URL
// with its password) the help text would print it to the terminal, into
// a pasted bug report or a CI log. The flag's value is unchanged.
func hideDefault(fs *pflag.FlagSet, name string) {
	fs.Lookup(name).DefValue = ""
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// client returns a client for the configured daemon: with --token or
// $SWITCHBOARD_TOKEN, that token; else the person signed in with
// 'switchboard login' to this daemon, if any; else the admin token in the
// data root.
func (g *globals) client() (*client.Client, error) {
	if err := g.readClientConfig(); err != nil {
		return nil, err
	}
	if g.token == "" {
		tok, err := g.loginToken(context.Background())
		if err != nil {
			return nil, err
		}
		if tok != "" {
			return client.New(g.addr, tok, nil), nil
		}
	}
	tok, err := g.resolveToken()
	if err != nil {
		return nil, err
	}
	return client.New(g.addr, tok, nil), nil
}

// resolveToken finds the daemon token as client commands do: --token,
// $SWITCHBOARD_TOKEN, else the token file in the data root. The --config
// file is read first, since it may name the data root.
func (g *globals) resolveToken() (string, error) {
	if err := g.readClientConfig(); err != nil {
		return "", err
	}
	if g.token != "" {
		return g.token, nil
	}
	dir, err := daemon.DataDir(g.data)
	if err != nil {
		return "", err
	}
	tok, err := daemon.ReadToken(dir)
	if err != nil {
		return "", switchboard.Errorf(switchboard.CodeUnauthorized,
			"no token: pass --token, set SWITCHBOARD_TOKEN, or start the daemon once so it writes %s/%s", dir, daemon.TokenFile)
	}
	return tok, nil
}

// readClientConfig takes the daemon address and the data root from the
// --config file, the one serve reads, unless a flag or the environment
// gives them: a client pointed at the file reaches the daemon it describes.
func (g *globals) readClientConfig() error {
	if g.config == "" || g.configRead {
		return nil
	}
	g.configRead = true
	b, err := os.ReadFile(g.config)
	if err != nil {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "read config: %v", err)
	}
	var cfg serveConfig
	if err := decodeConfig(g.config, b, &cfg); err != nil {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "%v", err)
	}
	if cfg.Addr != "" && !g.addrSet && os.Getenv("SWITCHBOARD_ADDR") == "" {
		g.addr = cfg.Addr
	}
	if cfg.Data != "" && !g.dataSet && os.Getenv("SWITCHBOARD_DATA") == "" {
		g.data = cfg.Data
	}
	return nil
}

// printJSON writes v indented; used for --json and for describe.
func (g *globals) printJSON(v any) error {
	enc := json.NewEncoder(g.stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// count says n things in English: "1 tool", "2 tools", "0 tools". many is
// the plural; most nouns the CLI counts take an s, but not all ("entries").
func count[N ~int | ~int64](n N, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// exactArgs is cobra.ExactArgs with a usage error that names what is missing.
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) != n {
			return usageError{fmt.Errorf("%s expects %s", c.CommandPath(), what), c.CommandPath()}
		}
		return nil
	}
}

// rejectUnknownSubcommands makes a group command (tools, approvals, ...)
// given an unknown subcommand fail as a usage error; cobra would print the
// group's help and exit 0, so a typo would look like success.
func rejectUnknownSubcommands(c *cobra.Command) {
	for _, sub := range c.Commands() {
		rejectUnknownSubcommands(sub)
	}
	if !c.HasSubCommands() || c.Runnable() {
		return
	}
	c.Args = cobra.ArbitraryArgs
	c.RunE = func(c *cobra.Command, args []string) error {
		if len(args) == 0 {
			return c.Help()
		}
		return unknownSubcommand(c, args[0])
	}
}

// unknownSubcommand is the usage error for a word that names none of c's
// subcommands, with the nearest names.
func unknownSubcommand(c *cobra.Command, word string) error {
	var names []string
	for _, sub := range c.Commands() {
		if sub.IsAvailableCommand() {
			names = append(names, sub.Name())
			names = append(names, sub.Aliases...)
		}
	}
	msg := fmt.Sprintf("unknown command %q for %q", word, c.CommandPath())
	if s := suggest(word, names); len(s) > 0 {
		msg += "; did you mean " + orList(s) + "?"
	}
	return usageError{errors.New(msg), c.CommandPath()}
}

// flagSuggestion adds the nearest flag names of fs to an unknown-flag
// error of pflag ("unknown flag: --titel"); other errors pass unchanged.
func flagSuggestion(err error, fs *pflag.FlagSet) error {
	name, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok {
		return err
	}
	var names []string
	fs.VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			names = append(names, f.Name)
		}
	})
	s := suggest(name, names)
	if len(s) == 0 {
		return err
	}
	for i := range s {
		s[i] = "--" + s[i]
	}
	return fmt.Errorf("%w; did you mean %s?", err, orList(s))
}

// suggestTool adds "did you mean NAME?" to a TOOL_NOT_FOUND error for name,
// with the nearest names the daemon lists (browser tools too, since a
// mistyped name may be either). Any other error, or a failure to list,
// leaves err as it is.
func suggestTool(ctx context.Context, cl *client.Client, name string, err error) error {
	var e *switchboard.Error
	if !errors.As(err, &e) || e.Code != switchboard.CodeToolNotFound {
		return err
	}
	m, lerr := cl.ListTools(ctx, client.ListOptions{})
	if lerr != nil {
		return err
	}
	names := make([]string, len(m.Tools))
	for i, t := range m.Tools {
		names[i] = t.Name
	}
	s := suggest(name, names)
	if len(s) == 0 {
		return err
	}
	return &switchboard.Error{Code: e.Code, Message: e.Message + "; did you mean " + orList(s) + "?", Details: e.Details}
}

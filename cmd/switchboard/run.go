package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
)

const runLong = `Every api tool is also a command: a tool named NAMESPACE.VERB runs as
'switchboard run NAMESPACE VERB --field value ...', and a deeper name such as
media.album.rename as 'switchboard run media album rename' (or give the dotted
name as one word). The flags come from the tool's input schema, fetched from
the daemon when the command runs:

  string            --title "Ship it"
  integer, number   --priority 2
  boolean           --done, --done=false
  array of scalars  --tag a --tag b, or --tag a,b (a value starting with [ is JSON)
  object, other     --filter '{"state":"open"}' (JSON)

Field names become kebab-case flags (projectId → --project-id; the exact
name works too). Fields named like a global flag (addr, token, data, config,
json, help, input) get the prefix arg- (--arg-data). --input JSON gives a base
object that flags then override, for anything flags cannot express.

  switchboard run                       lists namespaces
  switchboard run NAMESPACE             lists its tools
  switchboard run NAMESPACE VERB --help shows the tool's flags`

func newRun(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "run [NAMESPACE [VERB]] [--field value ...]",
		Short: "Call api tools as commands whose flags come from their input schemas",
		Long:  runLong,
		Example: `  switchboard run
  switchboard run tasks
  switchboard run tasks create --help
  switchboard run tasks create --project-id p1 --title "Ship it" --tag urgent --tag q3`,
		// Flags depend on the tool, known only once the daemon is asked, so
		// this command parses its own arguments.
		DisableFlagParsing: true,
		RunE:               func(c *cobra.Command, args []string) error { return runGenerated(c, g, args) },
	}
}

// reservedFlags are flag names a tool field cannot take.
var reservedFlags = map[string]bool{"addr": true, "token": true, "data": true, "config": true, "json": true, "help": true, "h": true, "input": true}

// runArgs is the command line split into the tool path and the rest.
type runArgs struct {
	words []string // path words, before the first tool flag
	rest  []string // tool flags and their values
	input string   // --input
	help  bool
}

// splitRunArgs pulls out the global flags (anywhere) and the path words
// (before the first other flag), leaving tool flags in rest.
func splitRunArgs(g *globals, args []string) (runArgs, error) {
	var ra runArgs
	flagsStarted := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			ra.rest = append(ra.rest, args[i:]...)
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			if flagsStarted {
				ra.rest = append(ra.rest, a)
			} else {
				ra.words = append(ra.words, a)
			}
			continue
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		takeValue := func() (string, error) {
			if hasVal {
				return val, nil
			}
			if i+1 >= len(args) {
				return "", fmt.Errorf("flag --%s needs a value", name)
			}
			i++
			return args[i], nil
		}
		var err error
		switch name {
		case "addr":
			g.addr, err = takeValue()
			g.addrSet = true
		case "token":
			g.token, err = takeValue()
		case "data":
			g.data, err = takeValue()
			g.dataSet = true
		case "config":
			g.config, err = takeValue()
		case "input":
			ra.input, err = takeValue()
		case "json":
			g.json = !hasVal || val == "true" || val == "1"
		case "h", "help":
			ra.help = true
		default:
			flagsStarted = true
			ra.rest = append(ra.rest, a)
		}
		if err != nil {
			return ra, err
		}
	}
	return ra, nil
}

func runGenerated(c *cobra.Command, g *globals, args []string) error {
	ra, err := splitRunArgs(g, args)
	if err != nil {
		return usageError{err, "switchboard run"}
	}
	if ra.help && len(ra.words) == 0 {
		return c.Help()
	}
	cl, err := g.client()
	if err != nil {
		return err
	}
	var segs []string
	for _, w := range ra.words {
		segs = append(segs, strings.Split(w, ".")...)
	}
	if len(segs) < 2 {
		return listRunnable(c, g, cl, segs)
	}
	// The longest dotted prefix of the words that names a tool wins.
	for k := len(segs); k >= 2; k-- {
		t, err := cl.GetTool(c.Context(), strings.Join(segs[:k], "."))
		if switchboard.CodeOf(err) == switchboard.CodeToolNotFound {
			continue
		}
		if err != nil {
			return err
		}
		if k < len(segs) {
			return usageError{fmt.Errorf("unexpected argument %q after tool %s (fields are flags: --name value)", segs[k], t.Name), "switchboard run " + strings.Join(segs[:k], " ")}
		}
		return runTool(c, g, cl, t, ra)
	}
	return listRunnable(c, g, cl, segs)
}

// listRunnable prints the namespaces (no words) or the tools under a
// prefix; an unknown prefix is TOOL_NOT_FOUND.
func listRunnable(c *cobra.Command, g *globals, cl *client.Client, segs []string) error {
	m, err := cl.ListTools(c.Context(), client.ListOptions{Surface: switchboard.SurfaceAPI})
	if err != nil {
		return err
	}
	prefix := strings.Join(segs, ".")
	if len(segs) == 0 {
		counts := map[string]int{}
		for _, t := range m.Tools {
			ns, _, _ := strings.Cut(t.Name, ".")
			counts[ns]++
		}
		names := make([]string, 0, len(counts))
		for ns := range counts {
			names = append(names, ns)
		}
		slices.Sort(names)
		if g.json {
			return g.printJSON(map[string]any{"namespaces": names})
		}
		tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAMESPACE\tTOOLS")
		for _, ns := range names {
			fmt.Fprintf(tw, "%s\t%d\n", ns, counts[ns])
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintln(g.stderr, "run 'switchboard run NAMESPACE' to list its tools")
		return nil
	}
	var under []switchboard.Tool
	for _, t := range m.Tools {
		if strings.HasPrefix(t.Name, prefix+".") {
			under = append(under, t)
		}
	}
	if len(under) == 0 {
		msg := fmt.Sprintf("no api tool or namespace %q; run 'switchboard run' to list namespaces", prefix)
		var names []string // the tools and every namespace above them
		for _, t := range m.Tools {
			for n := t.Name; n != ""; n, _, _ = cutLast(n) {
				names = append(names, n)
			}
		}
		if s := suggest(prefix, names); len(s) > 0 {
			msg = fmt.Sprintf("no api tool or namespace %q; did you mean %s?", prefix, orList(s))
		}
		return switchboard.Errorf(switchboard.CodeToolNotFound, "%s", msg)
	}
	if g.json {
		return g.printJSON(switchboard.Manifest{ProtocolVersion: switchboard.ProtocolVersion, Tools: under})
	}
	tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "COMMAND\tCLASS\tSUMMARY")
	for _, t := range under {
		fmt.Fprintf(tw, "switchboard run %s\t%s\t%s\n", strings.ReplaceAll(t.Name, ".", " "), t.Class, clip(t.Summary, 60))
	}
	return tw.Flush()
}

// runTool parses the tool's flags, builds the input and calls it.
func runTool(c *cobra.Command, g *globals, cl *client.Client, t switchboard.Tool, ra runArgs) error {
	cmdPath := "switchboard run " + strings.ReplaceAll(t.Name, ".", " ")
	if t.Surface == switchboard.SurfaceBrowser {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "%s is a browser tool; call it with 'switchboard tools call %s --session ID'", t.Name, t.Name)
	}
	fs, fields, err := schemaFlags(cmdPath, t.InputSchema)
	if err != nil {
		return err
	}
	if ra.help {
		printToolHelp(g, cmdPath, t, fs, fields)
		return nil
	}
	if err := fs.Parse(ra.rest); err != nil {
		return usageError{flagSuggestion(err, fs), cmdPath}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q (fields are flags: --name value)", fs.Arg(0)), cmdPath}
	}
	input := map[string]json.RawMessage{}
	if ra.input != "" {
		base, err := readInput(g, ra.input)
		if err != nil {
			return usageError{err, cmdPath}
		}
		_ = json.Unmarshal(base, &input) // readInput checked it is an object
	}
	for _, f := range fields {
		if f.value.set {
			input[f.name] = f.value.json()
		}
	}
	var missing []string
	for _, f := range fields {
		if _, ok := input[f.name]; f.required && !ok {
			missing = append(missing, "--"+f.flag)
		}
	}
	if len(missing) > 0 {
		return usageError{fmt.Errorf("missing required flag(s): %s", strings.Join(missing, ", ")), cmdPath}
	}
	b, err := json.Marshal(input)
	if err != nil {
		return err
	}
	return callAndPrint(c, g, t.Name, b, client.CallOptions{}, client.CallExtra{})
}

// printToolHelp shows what a generated command does and its flags.
func printToolHelp(g *globals, cmdPath string, t switchboard.Tool, fs *pflag.FlagSet, fields []*schemaField) {
	w := g.stdout
	fmt.Fprintf(w, "Usage: %s [flags]\n\n%s\n\n", cmdPath, t.Description)
	fmt.Fprintf(w, "Tool: %s · class %s · approval %s\n\n", t.Name, t.Class, t.Approval)
	if len(fields) > 0 {
		fmt.Fprintf(w, "Flags (from the input schema):\n%s", fs.FlagUsages())
	}
	fmt.Fprintf(w, "\nGlobal flags:\n      --input JSON   base input object; flags override its fields (JSON, @FILE or -)\n      --json         print the whole response as JSON\n      --addr, --token, --data, --config as for every command\n")
}

// cutLast splits a dotted name at its last dot: a.b.c → a.b, c.
func cutLast(name string) (before, after string, found bool) {
	i := strings.LastIndexByte(name, '.')
	if i < 0 {
		return "", name, false
	}
	return name[:i], name[i+1:], true
}

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
)

func newToolsCall(g *globals) *cobra.Command {
	var input string
	var o client.CallOptions
	var x client.CallExtra
	c := &cobra.Command{
		Use:   "call NAME",
		Short: "Call a tool through the daemon's broker and print its result",
		Long: `Call a tool through the daemon's broker: the input is validated against the
tool's inputSchema, the call is recorded and written to the ledger, and the
result is printed as JSON. On failure the error code is printed and the exit
code is 1; --json prints the whole response, with its invocation id.`,
		Example: `  switchboard tools call tasks.create --input '{"projectId":"p1","title":"Ship it"}'
  switchboard tools call tasks.create --input @task.json
  echo '{"projectId":"p1"}' | switchboard tools call tasks.list --input -
  switchboard tools call view.scroll --session 3f2a... --input '{"to":"top"}'
  switchboard tools call tasks.delete --input '{"taskId":"t1"}' --async   # returns while it awaits approval
  switchboard tools call tasks.create --input @task.json --idempotency-key 7d1c   # a retry replays, never re-runs
  switchboard tools call finance.read --task task_3f2a...   # a call for a task assigned to this agent`,
		Args: exactArgs(1, "one tool NAME"),
		RunE: func(c *cobra.Command, args []string) error {
			in, err := readInput(g, input)
			if err != nil {
				return usageError{err, c.CommandPath()}
			}
			return callAndPrint(c, g, args[0], in, o, x)
		},
	}
	c.Flags().BoolVar(&x.Async, "async", false, "return as soon as the call is recorded (e.g. awaiting approval); follow it with 'switchboard invocation ID'")
	c.Flags().StringVar(&x.IdempotencyKey, "idempotency-key", "", "a key that makes a retry of the same call replay its first answer")
	c.Flags().StringVar(&x.Task, "task", "", "the task assigned to this agent that the call is made for (its envelope and budget apply)")
	c.Flags().StringVar(&input, "input", "{}", "the input object: JSON, @FILE to read a file, or - to read stdin")
	c.Flags().StringVar(&o.SessionID, "session", "", "the browser session that runs a browser tool")
	c.Flags().StringVar(&o.RunID, "run", "", "the run this call belongs to")
	return c
}

// readInput resolves --input: literal JSON, @file, or - for stdin. It must
// be a JSON object.
func readInput(g *globals, spec string) (json.RawMessage, error) {
	var b []byte
	switch {
	case spec == "-":
		var err error
		if b, err = io.ReadAll(io.LimitReader(g.stdin, 64<<20)); err != nil {
			return nil, fmt.Errorf("read --input from stdin: %w", err)
		}
	case strings.HasPrefix(spec, "@"):
		var err error
		if b, err = os.ReadFile(spec[1:]); err != nil {
			return nil, fmt.Errorf("read --input file: %w", err)
		}
	default:
		b = []byte(spec)
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return json.RawMessage(`{}`), nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil {
		return nil, fmt.Errorf("--input must be a JSON object, like '{\"title\":\"x\"}': %v", err)
	}
	return b, nil
}

// callAndPrint calls a tool and prints the outcome: the result as indented
// JSON (or the whole response with --json). A failure prints its details to
// stderr and returns the error, which Run prints with its code.
func callAndPrint(c *cobra.Command, g *globals, name string, input json.RawMessage, o client.CallOptions, x client.CallExtra) error {
	cl, err := g.client()
	if err != nil {
		return err
	}
	// A blocking call is sent async and then followed, so that a call that
	// waits for approval can say so while it waits instead of hanging
	// silently; the outcome printed is the same.
	blocking := !x.Async
	x.Async = true
	resp, err := cl.CallToolWith(c.Context(), name, input, o, x)
	if err == nil && resp.InvocationID != "" && !resp.Status.Terminal() {
		resp, err = latest(c, cl, resp)
	}
	if err == nil && blocking && resp.InvocationID != "" && !resp.Status.Terminal() {
		if resp.Status == switchboard.StatusAwaitingApproval {
			waitingNote(c, g, cl, name, resp.InvocationID)
		}
		resp, err = follow(c, cl, resp)
	}
	if resp.InvocationID == "" {
		err = suggestTool(c.Context(), cl, name, err) // refused before it was recorded: maybe a typo
	}
	if g.json && resp.InvocationID != "" {
		if perr := g.printJSON(resp); perr != nil {
			return perr
		}
	}
	if err != nil {
		e := switchboard.AsError(err)
		if !g.json {
			if e.Details != nil {
				d, _ := json.Marshal(e.Details)
				fmt.Fprintf(g.stderr, "details: %s\n", d)
			}
			if resp.InvocationID != "" {
				fmt.Fprintf(g.stderr, "invocation: %s (%s)\n", resp.InvocationID, resp.Status)
			}
		}
		return err
	}
	if g.json {
		return nil
	}
	if !resp.Status.Terminal() {
		fmt.Fprintf(g.stderr, "invocation %s is %s; follow it with: switchboard invocation %s\n", resp.InvocationID, resp.Status, resp.InvocationID)
		return g.printJSON(resp)
	}
	// Indent the raw result: decoding into any would round large integers.
	var buf bytes.Buffer
	if len(resp.Result) == 0 || json.Indent(&buf, resp.Result, "", "  ") != nil {
		buf.Reset()
		buf.Write(resp.Result)
	}
	buf.WriteByte('\n')
	_, err = g.stdout.Write(buf.Bytes())
	return err
}

// Pauses between reads of a call that is followed to its end: short at
// first (most approvals are quick), growing to followMaxPause.
const (
	followFirstPause = 250 * time.Millisecond
	followMaxPause   = 3 * time.Second
)

// waitingNote says on stderr that the call waits for approval, for whom,
// and where it can be decided. An agent token may read its own approval
// requests; when it cannot, the note names the invocation instead.
func waitingNote(c *cobra.Command, g *globals, cl *client.Client, tool, invocation string) {
	ref := "invocation " + invocation
	var expires string
	// Any status: a decision made while this looks must not hide which
	// approval the call waited on.
	if as, err := cl.Approvals(c.Context(), client.ApprovalQuery{Invocation: invocation, Status: "all", Limit: 1}); err == nil && len(as) > 0 {
		ref = "approval " + as[0].ID
		if !as[0].ExpiresAt.IsZero() {
			expires = ", until " + as[0].ExpiresAt.Local().Format("15:04:05") + " when it expires"
		}
	}
	fmt.Fprintf(g.stderr, "%s waits for approval (%s): waiting for the user to approve or deny it%s — in the console (%s/#approvals), the app's approval card, or `switchboard approvals approve|deny` with the admin token\n",
		tool, ref, expires, cl.BaseURL())
}

// follow re-reads a recorded call until it ends (or ctx does) and returns
// it as a blocking call would have answered.
func follow(c *cobra.Command, cl *client.Client, resp switchboard.CallResponse) (switchboard.CallResponse, error) {
	pause := followFirstPause
	t := time.NewTimer(pause)
	defer t.Stop()
	for {
		select {
		case <-c.Context().Done():
			return resp, c.Context().Err()
		case <-t.C:
		}
		inv, err := cl.GetInvocation(c.Context(), resp.InvocationID)
		if err != nil {
			return resp, err
		}
		if inv.Status.Terminal() {
			resp = switchboard.CallResponse{InvocationID: inv.ID, Status: inv.Status, Result: inv.Result, Error: inv.Error}
			if inv.Error != nil {
				return resp, inv.Error
			}
			return resp, nil
		}
		pause = min(pause*2, followMaxPause)
		t.Reset(pause)
	}
}

// latest re-reads an asynchronous call's record: the 202 says what the call
// was when it was recorded ("dispatched"), and a fast call has often
// finished by the time the answer is printed. A finished call then prints
// as a waited-for one would (its result, or its error and exit 1).
func latest(c *cobra.Command, cl *client.Client, resp switchboard.CallResponse) (switchboard.CallResponse, error) {
	inv, err := cl.GetInvocation(c.Context(), resp.InvocationID)
	if err != nil || inv.Status == resp.Status {
		return resp, nil // the 202 stands: the call is recorded either way
	}
	resp = switchboard.CallResponse{InvocationID: inv.ID, Status: inv.Status, Result: inv.Result, Error: inv.Error}
	if inv.Error != nil {
		return resp, inv.Error
	}
	return resp, nil
}

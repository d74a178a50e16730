package main

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
)

// newTasks delegates, lists, shows, cancels and resumes tasks
// (docs/tasks.md).
func newTasks(g *globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "tasks",
		Short: "Delegate work to the assistant, and list, show, cancel or resume it",
		Long: `A task is work handed to the built-in assistant: a goal, the projects it
spans, and a permission envelope (tool globs it may call, a budget of calls,
tokens and dollars, a deadline). It moves submitted → working ⇄
input_required (a call waits for approval) → completed | failed | cancelled.
A tool outside the envelope is TOOL_NOT_FOUND to the assistant; a spent budget
ends the task with BUDGET_EXCEEDED, a passed deadline with TIMEOUT. An agent
token's tasks are its user's, narrowed to the token's scope.

With --assignee agent:NAME the task goes to another agent acting for the same
user: it lists it with 'tasks list --assignee me', makes its calls for it with
'tools call NAME --task ID' (the envelope and budget apply) and ends it with
'tasks complete ID RESULT' or 'tasks fail ID MESSAGE'.`,
	}
	c.AddCommand(newTasksCreate(g), newTasksList(g), newTasksShow(g), newTasksAction(g, "cancel"), newTasksAction(g, "resume"),
		newTasksEnd(g, "complete"), newTasksEnd(g, "fail"))
	return c
}

func newTasksCreate(g *globals) *cobra.Command {
	var (
		req      client.TaskRequest
		deadline string
		projects []string
	)
	c := &cobra.Command{
		Use:   "create GOAL",
		Short: "Delegate a task to the assistant",
		Example: `  switchboard tasks create "Prepare the Q3 board pack" --project finance=read --project design=write \
    --deny 'design.delete*' --max-calls 200 --max-cost 2 --deadline 2026-12-11T17:00:00Z
  switchboard tasks create "Reconcile the Q3 invoices" --assignee agent:bookkeeper --allow 'finance.*' --max-calls 50`,
		Args: exactArgs(1, "the goal, in quotes"),
		RunE: func(c *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			req.Goal = args[0]
			for _, p := range projects {
				ps, err := projectFlag(p)
				if err != nil {
					return usageError{err, c.CommandPath()}
				}
				req.Envelope.Projects = append(req.Envelope.Projects, ps)
			}
			if deadline != "" {
				d, err := time.Parse(time.RFC3339, deadline)
				if err != nil {
					return usageError{fmt.Errorf("--deadline %q: use RFC 3339, such as 2026-12-11T17:00:00Z", deadline), c.CommandPath()}
				}
				req.Envelope.Deadline = d
			}
			t, err := cl.CreateTask(c.Context(), req)
			if err != nil {
				return err
			}
			if g.json {
				return g.printJSON(t)
			}
			fmt.Fprintf(g.stdout, "%s %s\n", t.ID, t.Status)
			for _, n := range t.Narrowed {
				fmt.Fprintf(g.stdout, "narrowed: %s\n", n)
			}
			return nil
		},
	}
	fl := c.Flags()
	fl.StringArrayVar(&projects, "project", nil, "a project the task spans, as NAME=read or NAME=write (its NAME.* tools), or NAME (write, within --allow) (repeatable)")
	fl.StringVar(&req.Assignee, "assignee", "", "who works on it: the built-in assistant (default), or agent:NAME, an agent acting for the same user")
	fl.StringArrayVar(&req.Envelope.Allow, "allow", nil, "a tool glob the task may call (repeatable; none: what you may call)")
	fl.StringArrayVar(&req.Envelope.Deny, "deny", nil, "a tool glob the task may not call (repeatable)")
	fl.IntVar(&req.Envelope.MaxCalls, "max-calls", 0, "at most this many tool calls (0: no budget)")
	fl.Int64Var(&req.Envelope.MaxTokens, "max-tokens", 0, "at most this many model tokens (0: the daemon's run ceiling)")
	fl.Float64Var(&req.Envelope.MaxCost, "max-cost", 0, "at most this many US dollars of model use (0: the daemon's run ceiling)")
	fl.StringVar(&deadline, "deadline", "", "stop the task with TIMEOUT at this time (RFC 3339)")
	return c
}

func newTasksList(g *globals) *cobra.Command {
	var (
		status   []string
		limit    int
		assignee string
	)
	c := &cobra.Command{
		Use:     "list",
		Short:   "List your tasks, newest first (the admin token: everyone's)",
		Example: "  switchboard tasks list\n  switchboard tasks list --status working --status input_required",
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			var st []switchboard.TaskStatus
			for _, s := range status {
				st = append(st, switchboard.TaskStatus(s))
			}
			list := cl.Tasks
			switch assignee {
			case "":
			case "me":
				list = cl.AssignedTasks
			default:
				return usageError{fmt.Errorf("--assignee takes only me (the tasks assigned to this agent), not %q", assignee), c.CommandPath()}
			}
			ts, err := list(c.Context(), limit, st...)
			if err != nil {
				return err
			}
			if g.json {
				return g.printJSON(ts)
			}
			tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tSTATUS\tOWNER\tCALLS\tCREATED\tGOAL")
			for _, t := range ts {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", t.ID, t.Status, t.Owner, t.Usage.Calls,
					t.CreatedAt.Local().Format("2006-01-02 15:04"), clip(oneLine(t.Goal), 60))
			}
			return tw.Flush()
		},
	}
	c.Flags().StringArrayVar(&status, "status", nil, "only tasks in this status (repeatable)")
	c.Flags().IntVar(&limit, "limit", 0, "at most this many (default 100)")
	c.Flags().StringVar(&assignee, "assignee", "", "me: the tasks assigned to this agent (an agent token)")
	return c
}

func newTasksShow(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:     "show ID",
		Short:   "Show a task: status, envelope, usage, steps and artifacts",
		Example: "  switchboard tasks show task_3f2a...",
		Args:    exactArgs(1, "one task ID"),
		RunE: func(c *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			t, err := cl.Task(c.Context(), args[0])
			if err != nil {
				return err
			}
			if g.json {
				return g.printJSON(t)
			}
			printTask(g, t)
			return nil
		},
	}
}

// newTasksAction is tasks cancel and tasks resume.
func newTasksAction(g *globals, verb string) *cobra.Command {
	short := "Stop a task: its run is cancelled, calls waiting for approval with it"
	if verb == "resume" {
		short = "Start a stopped task again from its completed steps (within what is left of its budget)"
	}
	return &cobra.Command{
		Use:     verb + " ID",
		Short:   short,
		Example: "  switchboard tasks " + verb + " task_3f2a...",
		Args:    exactArgs(1, "one task ID"),
		RunE: func(c *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			act := cl.CancelTask
			if verb == "resume" {
				act = cl.ResumeTask
			}
			t, err := act(c.Context(), args[0])
			if err != nil {
				return err
			}
			if g.json {
				return g.printJSON(t)
			}
			fmt.Fprintf(g.stdout, "%s %s\n", t.ID, t.Status)
			return nil
		},
	}
}

// newTasksEnd is tasks complete and tasks fail: the assigned agent ends
// its task.
func newTasksEnd(g *globals, verb string) *cobra.Command {
	var code string
	c := &cobra.Command{
		Use:     verb + " ID RESULT",
		Short:   "End a task assigned to this agent: completed with its result",
		Example: "  switchboard tasks complete task_3f2a... 'The invoices reconcile; 2 corrections filed.'",
		Args:    exactArgs(2, "the task ID and the result"),
		RunE: func(c *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			var t switchboard.Task
			if verb == "complete" {
				t, err = cl.CompleteTask(c.Context(), args[0], args[1])
			} else {
				t, err = cl.FailTask(c.Context(), args[0], switchboard.Code(code), args[1])
			}
			if err != nil {
				return err
			}
			if g.json {
				return g.printJSON(t)
			}
			fmt.Fprintf(g.stdout, "%s %s\n", t.ID, t.Status)
			return nil
		},
	}
	if verb == "fail" {
		c.Use, c.Short = "fail ID MESSAGE", "End a task assigned to this agent: failed, saying why"
		c.Example = "  switchboard tasks fail task_3f2a... 'The ledger export is locked' --code UNAVAILABLE"
		c.Args = exactArgs(2, "the task ID and why it failed")
		c.Flags().StringVar(&code, "code", "", "an error code (default UPSTREAM_ERROR)")
	}
	return c
}

// projectFlag is one --project: NAME, NAME=read or NAME=write.
func projectFlag(v string) (switchboard.ProjectScope, error) {
	name, access, scoped := strings.Cut(v, "=")
	p := switchboard.ProjectScope{Name: name, Access: switchboard.ProjectAccess(access)}
	if name == "" || scoped && p.Access != switchboard.ProjectRead && p.Access != switchboard.ProjectWrite {
		return p, fmt.Errorf("--project %q: use NAME, NAME=read or NAME=write", v)
	}
	return p, nil
}

func printTask(g *globals, t switchboard.Task) {
	w := g.stdout
	fmt.Fprintf(w, "%s  %s\nowner: %s (created by %s), assignee: %s\ngoal: %s\n", t.ID, t.Status, t.Owner, t.Creator, t.Assignee, t.Goal)
	if len(t.Projects) > 0 {
		fmt.Fprintf(w, "projects: %s\n", strings.Join(t.Projects, ", "))
	}
	e := t.Envelope
	for _, p := range e.Projects {
		fmt.Fprintf(w, "project %s: %s %s\n", p.Name, p.Access, strings.Join(p.Globs(), " "))
	}
	// No allow globs means the owner's own scope, not nothing: "allow []"
	// read as a task that may call nothing.
	allow := "[" + strings.Join(e.Allow, " ") + "]"
	if len(e.Allow) == 0 {
		allow = "(what the owner may call)"
	}
	fmt.Fprintf(w, "envelope: allow %s deny [%s] maxCalls %s maxTokens %s maxCost %s", allow, strings.Join(e.Deny, " "),
		budget(e.MaxCalls), budget(e.MaxTokens), budget(e.MaxCost))
	if !e.Deadline.IsZero() {
		fmt.Fprintf(w, " deadline %s", e.Deadline.Format(time.RFC3339))
	}
	fmt.Fprintf(w, "\nusage: %d calls, %d tokens, $%.4f\n", t.Usage.Calls, t.Usage.Tokens, t.Usage.Cost)
	for _, n := range t.Narrowed {
		fmt.Fprintf(w, "narrowed: %s\n", n)
	}
	if t.Error != nil {
		fmt.Fprintf(w, "error: %s: %s\n", t.Error.Code, t.Error.Message)
	}
	for i, s := range t.Steps {
		fmt.Fprintf(w, "step %d: %s %s %s %s", i+1, s.Kind, s.Tool, s.Status, s.InvocationID)
		if r := s.Remote; r != nil {
			fmt.Fprintf(w, "task %s at %s", r.TaskID, r.Peer)
		}
		fmt.Fprintln(w)
	}
	for _, a := range t.Artifacts {
		fmt.Fprintf(w, "artifact %s (%s): %s\n", a.ID, a.Name, clip(oneLine(a.Text), 400))
	}
}

// budget is one of a task's budgets as shown: zero is no budget (the daemon
// has already narrowed it to any run ceiling of its own), which "0" would
// read as a budget of nothing.
func budget[T int | int64 | float64](v T) string {
	if v == 0 {
		return "unlimited"
	}
	return fmt.Sprint(v)
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }

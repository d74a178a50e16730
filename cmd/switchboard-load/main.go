// Command switchboard-load is the load-and-fault driver: it starts a real
// `switchboard serve` (SQLite, or Postgres with --store), hosts a tiny
// backend that counts executions, runs N calls — each with its own
// Idempotency-Key — at concurrency C, optionally SIGKILLs and restarts the
// daemon K times while they run, and retries every call with its key
// until it has a definite answer. Then it audits what the daemon kept:
// every answered call's invocation record must be terminal and have
// exactly one tool.call ledger entry, and the ledger must verify. It
// prints succeeded / outcome-unknown / failed / stuck / backend executions
// / duplicates / lost and the ledger's verdict, and exits 1 when anything
// is stuck or lost or ran twice or the ledger does not verify. See
// bench/README.md.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
)

// Config is one run of the driver.
type Config struct {
	Bin         string        // the switchboard binary
	Store       string        // a postgres:// URL, or empty for SQLite in a temporary data root
	Calls       int           // N
	Concurrency int           // C
	Kills       int           // K: SIGKILLs (each followed by a restart) spread over the run
	Work        time.Duration // how long the backend takes per execution
	Deadline    time.Duration // a call without a definite answer by then is stuck
	Log         *os.File      // where the daemon's output goes (nil: discarded)
}

// Report is what a run found. Lost counts every call the daemon answered
// whose trace is not whole: answered succeeded yet the backend never ran
// it, or its invocation record is missing or not terminal (NotTerminal),
// or its tool.call ledger entry is missing (NoEntry). DoubleEntries are
// invocations with more than one tool.call entry.
type Report struct {
	Succeeded, OutcomeUnknown, Failed, Stuck int
	Executions, Duplicates, Lost             int
	NotTerminal, NoEntry, DoubleEntries      int
	// LedgerOK is activity verify's verdict after the run; LedgerProblem
	// says why not.
	LedgerOK      bool
	LedgerProblem string
	Kills         int
	Elapsed       time.Duration
}

// OK reports whether nothing was stuck, lost or run twice and the ledger
// verifies.
func (r Report) OK() bool {
	return r.Stuck == 0 && r.Lost == 0 && r.Duplicates == 0 && r.DoubleEntries == 0 && r.LedgerOK
}

func (r Report) String() string {
	ledger := "ledger ok"
	if !r.LedgerOK {
		ledger = "ledger BROKEN: " + r.LedgerProblem
	}
	return fmt.Sprintf("succeeded %d  outcome-unknown %d  failed %d  stuck %d  backend executions %d  duplicates %d  lost %d (not terminal %d, no tool.call entry %d)  doubled entries %d  %s  (kills %d, %s)",
		r.Succeeded, r.OutcomeUnknown, r.Failed, r.Stuck, r.Executions, r.Duplicates, r.Lost, r.NotTerminal, r.NoEntry,
		r.DoubleEntries, ledger, r.Kills, r.Elapsed.Round(time.Millisecond))
}

func main() {
	var c Config
	flag.StringVar(&c.Bin, "bin", "switchboard", "the switchboard binary to run")
	flag.StringVar(&c.Store, "store", "", "postgres:// URL (default: SQLite in a temporary data root)")
	flag.IntVar(&c.Calls, "n", 1000, "calls")
	flag.IntVar(&c.Concurrency, "c", 16, "concurrent callers")
	flag.IntVar(&c.Kills, "kills", 2, "SIGKILLs of the daemon during the run (each followed by a restart)")
	flag.DurationVar(&c.Work, "work", 20*time.Millisecond, "backend time per execution")
	flag.DurationVar(&c.Deadline, "deadline", 2*time.Minute, "a call without a definite answer by then is stuck")
	verbose := flag.Bool("v", false, "show the daemon's log")
	flag.Parse()
	if *verbose {
		c.Log = os.Stderr
	}
	r, err := Run(context.Background(), c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "switchboard-load:", err)
		os.Exit(2)
	}
	fmt.Println(r)
	if !r.OK() {
		os.Exit(1)
	}
}

// backend counts executions per call id.
type backend struct {
	work time.Duration
	mu   sync.Mutex
	runs map[string]int
}

func (b *backend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Call string `json:"call"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Call == "" {
		http.Error(w, "want {call}", http.StatusBadRequest)
		return
	}
	b.mu.Lock()
	b.runs[in.Call]++
	b.mu.Unlock()
	time.Sleep(b.work) // the window a kill can hit
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"call":%q}`, in.Call)
}

// daemon is the switchboard process under test.
type daemon struct {
	cfg   Config
	addr  string
	data  string
	token string
	mu    sync.Mutex
	cmd   *exec.Cmd
}

func (d *daemon) start(ctx context.Context) error {
	args := []string{"serve", "--addr", d.addr, "--data", d.data, "--token", d.token, "--log-level", "warn"}
	if d.cfg.Store != "" {
		args = append(args, "--store", d.cfg.Store)
	}
	cmd := exec.Command(d.cfg.Bin, args...)
	if d.cfg.Log != nil {
		cmd.Stdout, cmd.Stderr = d.cfg.Log, d.cfg.Log
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	d.mu.Lock()
	d.cmd = cmd
	d.mu.Unlock()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		resp, err := http.Get("http://" + d.addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
	}
	return errors.New("the daemon did not become healthy within 30s")
}

func (d *daemon) kill() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cmd != nil && d.cmd.Process != nil {
		_ = d.cmd.Process.Kill() // SIGKILL: no shutdown path runs
		_ = d.cmd.Wait()
		d.cmd = nil
	}
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// Run runs the driver once.
func Run(ctx context.Context, cfg Config) (Report, error) {
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 1
	}
	if cfg.Deadline <= 0 {
		cfg.Deadline = 2 * time.Minute
	}
	be := &backend{work: cfg.Work, runs: map[string]int{}}
	bln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return Report{}, err
	}
	bsrv := &http.Server{Handler: be}
	go bsrv.Serve(bln)
	defer bsrv.Close()

	data, err := os.MkdirTemp("", "switchboard-load-")
	if err != nil {
		return Report{}, err
	}
	defer os.RemoveAll(data)
	addr, err := freeAddr()
	if err != nil {
		return Report{}, err
	}
	d := &daemon{cfg: cfg, addr: addr, data: filepath.Join(data, "data"), token: "load-driver-token"}
	if err := d.start(ctx); err != nil {
		return Report{}, err
	}
	defer d.kill()
	c := client.New(addr, d.token, nil)
	tool := switchboard.Tool{Name: "load.exec", Description: "Run one execution of the load driver's backend.", Class: switchboard.ClassMutate,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"call":{"type":"string"}},"required":["call"]}`),
		Binding:     &switchboard.Binding{HTTP: &switchboard.HTTPBinding{Method: "POST", URL: "http://" + bln.Addr().String() + "/exec", TimeoutMs: 10_000}}}
	if _, err := c.RegisterTools(ctx, switchboard.SourceHost, []switchboard.Tool{tool}); err != nil {
		return Report{}, fmt.Errorf("register the load tool: %w", err)
	}

	start := time.Now()
	outcome := make([]string, cfg.Calls) // succeeded, unknown, failed, or "" (stuck)
	invocation := make([]string, cfg.Calls)
	var done atomic.Int64
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range cfg.Concurrency {
		wg.Go(func() {
			for i := range jobs {
				outcome[i], invocation[i] = call(ctx, c, i, start.Add(cfg.Deadline))
				done.Add(1)
			}
		})
	}
	// The killer: K kills spread evenly over the calls.
	var kills atomic.Int32
	killerDone := make(chan error, 1)
	go func() {
		for k := 1; k <= cfg.Kills; k++ {
			at := int64(cfg.Calls * k / (cfg.Kills + 1))
			for done.Load() < at && time.Since(start) < cfg.Deadline {
				time.Sleep(5 * time.Millisecond)
			}
			d.kill()
			kills.Add(1)
			if err := d.start(ctx); err != nil {
				killerDone <- fmt.Errorf("restart %d: %w", k, err)
				return
			}
		}
		killerDone <- nil
	}()
	for i := range cfg.Calls {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	if err := <-killerDone; err != nil {
		return Report{}, err
	}

	r := Report{Kills: int(kills.Load()), Elapsed: time.Since(start)}
	entries, err := toolCallEntries(ctx, c)
	if err != nil {
		return r, err
	}
	for i, o := range outcome {
		if o == "" {
			continue // stuck: counted below
		}
		if !recorded(ctx, c, invocation[i]) {
			r.NotTerminal++
			r.Lost++
			continue
		}
		switch entries[invocation[i]] {
		case 0:
			r.NoEntry++
			r.Lost++
		case 1:
		default:
			r.DoubleEntries++
		}
	}
	v, err := c.VerifyActivity(ctx)
	if err != nil {
		return r, fmt.Errorf("verify the ledger: %w", err)
	}
	r.LedgerOK, r.LedgerProblem = v.OK, v.Problem
	if v.OK && len(v.Gaps) > 0 { // a start found entries missing: not a crash this driver makes
		r.LedgerOK, r.LedgerProblem = false, fmt.Sprintf("%d ledger.rollback entries (the first is entry %d, %s)", len(v.Gaps), v.Gaps[0].Entry, v.Gaps[0].Cause)
	}
	be.mu.Lock()
	defer be.mu.Unlock()
	for i, o := range outcome {
		n := be.runs[callID(i)]
		r.Executions += n
		if n > 1 {
			r.Duplicates++
		}
		switch o {
		case "succeeded":
			r.Succeeded++
			if n == 0 {
				r.Lost++ // answered succeeded, yet the backend never ran it
			}
		case "unknown":
			r.OutcomeUnknown++
		case "failed":
			r.Failed++
		default:
			r.Stuck++
		}
	}
	return r, nil
}

func callID(i int) string { return fmt.Sprintf("call-%06d", i) }

// recorded reports whether invocation id is stored in a terminal state.
func recorded(ctx context.Context, c *client.Client, id string) bool {
	if id == "" {
		return false
	}
	inv, err := c.GetInvocation(ctx, id)
	return err == nil && inv.Status.Terminal()
}

// toolCallEntries counts the ledger's tool.call entries per invocation,
// paging the whole ledger.
func toolCallEntries(ctx context.Context, c *client.Client) (map[string]int, error) {
	n := map[string]int{}
	for q := (client.ActivityQuery{After: "0", Verb: "tool.call", Limit: 1000}); ; {
		page, err := c.Activity(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("read the ledger: %w", err)
		}
		for _, e := range page.Items {
			var d struct {
				InvocationID string `json:"invocationId"`
			}
			if json.Unmarshal(e.Details, &d) == nil && d.InvocationID != "" {
				n[d.InvocationID]++
			}
		}
		if len(page.Items) == 0 || page.NextCursor == "" {
			return n, nil
		}
		q.After = page.NextCursor
	}
}

// call makes call i, retrying with its key until a definite answer:
// succeeded, OUTCOME_UNKNOWN, or another failure the daemon recorded; it
// returns the answer and the invocation's id. Connection errors (the
// daemon is down), UNAVAILABLE and CONFLICT (still in flight) are retried.
func call(ctx context.Context, c *client.Client, i int, deadline time.Time) (string, string) {
	input := json.RawMessage(fmt.Sprintf(`{"call":%q}`, callID(i)))
	key := "load-" + callID(i)
	wait := 10 * time.Millisecond
	for time.Now().Before(deadline) {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		resp, err := c.CallToolWith(cctx, "load.exec", input, client.CallOptions{}, client.CallExtra{IdempotencyKey: key})
		cancel()
		switch code := switchboard.CodeOf(err); {
		case err == nil && resp.Status == switchboard.StatusSucceeded:
			return "succeeded", resp.InvocationID
		case code == switchboard.CodeOutcomeUnknown:
			return "unknown", resp.InvocationID
		case code == "" || code == switchboard.CodeUnavailable || code == switchboard.CodeConflict ||
			code == switchboard.CodeRateLimited || strings.Contains(err.Error(), "connection"):
			// not a definite answer yet
		default:
			if resp.InvocationID != "" {
				return "failed", resp.InvocationID
			}
		}
		time.Sleep(wait)
		wait = min(2*wait, 500*time.Millisecond)
	}
	return "", ""
}

package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
)

// TestREADMEWalkthrough runs every shell command of README.md's ```sh
// blocks, in order, as a newcomer would from a fresh clone: the binary
// built with the README's own `go build`, a fresh HOME (so the data root is
// a new ~/.local/share/switchboard), one bash whose variables carry from
// command to command (TOKEN, AGENT). A command fails the test when it exits
// non-zero or when its output (stdout and stderr, runs of white space
// folded to one space) lacks a `#> text` line written under it.
//
// Where the test cannot do literally what the README says, it does the
// nearest thing and says so here:
//   - the daemon listens on a free port, not 127.0.0.1:7766 (the machine
//     may be running another daemon or test); "127.0.0.1:7766" is replaced
//     by that address in the commands and in the copy of
//     testdata/openapi/petstore3.yaml the commands read, and
//     SWITCHBOARD_ADDR points the CLI at it (examples/manifests/tasks.yaml
//     is copied as it is: its path-only URLs follow the daemon's address);
//   - `go run ./cmd/switchboard serve ...` starts the built binary in the
//     background with the same arguments and environment (a later serve
//     command would replace it, as Ctrl-C and a new start would);
//   - `go test ./...` is not run (it is the suite running this test), nor
//     `claude mcp add` (a third-party program; the MCP transport has tests
//     of its own);
//   - the comment "open the demo app ... in a browser" opens the demo URL
//     that serve printed in headless Chromium and waits until the tab is
//     connected and advertises nav.goto; the test then also checks that
//     nav.goto moved the page (body data-page "media"). Without Chromium
//     the rest of that block is skipped, and logged.
func TestREADMEWalkthrough(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs the whole walkthrough")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("the walkthrough is shell; bash not found")
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("the walkthrough uses curl; not found")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	steps := parseWalkthrough(string(readme))
	if len(steps) < 10 {
		t.Fatalf("found only %d commands in the README's sh blocks; is the parser broken?", len(steps))
	}

	work := t.TempDir()
	addr := freeAddr(t)
	w := &walk{t: t, root: root, work: work, addr: addr, env: walkEnv(work, addr)}
	for _, f := range []string{"examples/manifests/tasks.yaml", "testdata/openapi/petstore3.yaml"} {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		w.write(f, strings.ReplaceAll(string(b), "127.0.0.1:7766", addr))
	}
	w.startShell()
	t.Cleanup(w.stopDaemon)

	browserBlock := -1 // the block whose remaining commands need the tab
	for _, s := range steps {
		cmd := strings.ReplaceAll(s.cmd, "127.0.0.1:7766", addr)
		switch {
		case s.browser:
			if !w.openDemo() {
				browserBlock = s.block
			}
			continue
		case s.block == browserBlock:
			t.Logf("skipped without Chromium: %s", cmd)
			continue
		case strings.HasPrefix(cmd, "go test"), strings.HasPrefix(cmd, "claude "):
			t.Logf("not run (see the test's doc comment): %s", cmd)
			continue
		case strings.Contains(cmd, "./cmd/switchboard serve") || strings.Contains(cmd, "./switchboard serve"):
			// "go build ... && ... ./switchboard serve": the daemon, built
			// first (serve builds when the binary is not there yet).
			if i := strings.LastIndex(cmd, "&&"); i >= 0 {
				cmd = strings.TrimSpace(cmd[i+2:])
			}
			w.serve(cmd)
		case strings.HasPrefix(cmd, "go build -o switchboard ./cmd/switchboard"):
			w.build(cmd)
		default:
			w.run(cmd)
		}
		if w.out != "" {
			got := fold(w.out)
			for _, want := range s.want {
				if !strings.Contains(got, fold(want)) {
					t.Fatalf("README line %d: %s\nprinted:\n%s\nwant it to contain %q", s.line, cmd, w.out, want)
				}
			}
		}
	}
	if w.tab != nil {
		page, err := chromedp.Run(w.tab, chromedp.Evaluate[string](`document.body.dataset.page`))
		if err != nil || page != "media" {
			t.Fatalf("after the README's nav.goto the demo tab shows page %q (%v), want media", page, err)
		}
	}
}

// step is one command of the README, with the output it promises.
type step struct {
	line    int
	block   int
	cmd     string
	want    []string // `#> ` lines under it
	browser bool     // the "open ... in a browser" instruction
}

// parseWalkthrough returns the commands of every ```sh block in order.
// Lines ending in a backslash continue; `#> text` lines are expectations of
// the command above; other comment lines are prose, except the one that
// says to open the demo in a browser.
func parseWalkthrough(md string) []step {
	var steps []step
	in, block := false, 0
	var cur *step
	lines := strings.Split(md, "\n")
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		switch {
		case l == "```sh":
			in, cur = true, nil
			block++
			continue
		case strings.HasPrefix(l, "```"):
			in = false
			continue
		case !in || l == "":
			continue
		case strings.HasPrefix(l, "#>"):
			if cur != nil {
				cur.want = append(cur.want, strings.TrimSpace(strings.TrimPrefix(l, "#>")))
			}
			continue
		case strings.HasPrefix(l, "#"):
			if strings.Contains(l, "in a browser") {
				steps = append(steps, step{line: i + 1, block: block, browser: true})
				cur = nil
			}
			continue
		}
		s := step{line: i + 1, block: block}
		for strings.HasSuffix(l, `\`) && i+1 < len(lines) {
			s.cmd += strings.TrimSuffix(l, `\`) + " "
			i++
			l = strings.TrimSpace(lines[i])
		}
		s.cmd += l
		steps = append(steps, s)
		cur = &steps[len(steps)-1]
	}
	return steps
}

var space = regexp.MustCompile(`\s+`)

func fold(s string) string { return space.ReplaceAllString(s, " ") }

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// walkEnv is the newcomer's environment: a fresh HOME, nothing of
// switchboard's set but the address.
func walkEnv(work, addr string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "SWITCHBOARD_") || k == "HOME" || k == "XDG_DATA_HOME" || k == "TASKS_API_KEY" {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "HOME="+filepath.Join(work, "home"), "SWITCHBOARD_ADDR="+addr)
}

// walk is the state of one run through the README.
type walk struct {
	t                *testing.T
	root, work, addr string
	env              []string
	out              string // the last command's stdout and stderr

	sh    *exec.Cmd
	shIn  io.WriteCloser
	shOut *bufio.Reader
	n     int

	daemon *exec.Cmd
	log    *syncBuffer

	tab context.Context
}

func (w *walk) write(rel, body string) {
	p := filepath.Join(w.work, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		w.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		w.t.Fatal(err)
	}
}

func (w *walk) startShell() {
	w.sh = exec.Command("bash", "--noprofile", "--norc")
	w.sh.Dir, w.sh.Env = w.work, w.env
	var err error
	if w.shIn, err = w.sh.StdinPipe(); err != nil {
		w.t.Fatal(err)
	}
	out, err := w.sh.StdoutPipe()
	if err != nil {
		w.t.Fatal(err)
	}
	w.shOut = bufio.NewReader(out)
	if err := w.sh.Start(); err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() {
		w.shIn.Close()
		_ = w.sh.Wait()
	})
}

// run runs cmd in the shared shell and fails unless it exits 0.
func (w *walk) run(cmd string) {
	w.t.Helper()
	w.n++
	dir := filepath.Join(w.work, ".steps", fmt.Sprint(w.n))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		w.t.Fatal(err)
	}
	o, e, rc := filepath.Join(dir, "out"), filepath.Join(dir, "err"), filepath.Join(dir, "rc")
	// A group, not a subshell: assignments (TOKEN=..., AGENT=...) persist.
	fmt.Fprintf(w.shIn, "{ %s\n} >%q 2>%q </dev/null; echo $? >%q; echo __step_done__\n", cmd, o, e, rc)
	done := make(chan error, 1)
	go func() {
		for {
			l, err := w.shOut.ReadString('\n')
			if err != nil || strings.TrimSpace(l) == "__step_done__" {
				done <- err
				return
			}
		}
	}()
	select {
	case err := <-done:
		if err != nil {
			w.t.Fatalf("the shell ended running %s: %v", cmd, err)
		}
	case <-time.After(2 * time.Minute):
		w.t.Fatalf("%s did not finish in 2 minutes", cmd)
	}
	ob, _ := os.ReadFile(o)
	eb, _ := os.ReadFile(e)
	rb, _ := os.ReadFile(rc)
	w.out = string(ob) + string(eb)
	if code := strings.TrimSpace(string(rb)); code != "0" {
		w.t.Fatalf("%s exited %s:\n%s", cmd, code, w.out)
	}
}

// build is the README's `go build -o switchboard ./cmd/switchboard`, run in
// the clone with the binary written where the commands run.
func (w *walk) build(cmd string) {
	w.t.Helper()
	args := strings.Fields(strings.SplitN(cmd, "#", 2)[0]) // a trailing comment is not arguments
	args[3] = filepath.Join(w.work, "switchboard")
	c := exec.Command(args[0], args[1:]...)
	c.Dir = w.root
	out, err := c.CombinedOutput()
	if err != nil {
		w.t.Fatalf("%s: %v\n%s", cmd, err, out)
	}
	w.out = string(out)
}

// serve starts the daemon as cmd says: leading VAR=value words are its
// environment, the words after "serve" its arguments.
func (w *walk) serve(cmd string) {
	w.t.Helper()
	w.stopDaemon()
	if _, err := os.Stat(filepath.Join(w.work, "switchboard")); err != nil {
		w.build("go build -o switchboard ./cmd/switchboard")
	}
	env := slices.Clone(w.env)
	fields := strings.Fields(strings.SplitN(cmd, "#", 2)[0])
	for len(fields) > 0 && strings.Contains(fields[0], "=") {
		env = append(env, fields[0])
		fields = fields[1:]
	}
	i := slices.Index(fields, "serve")
	w.log = &syncBuffer{}
	w.daemon = exec.Command(filepath.Join(w.work, "switchboard"), fields[i:]...)
	w.daemon.Dir, w.daemon.Env = w.work, env
	w.daemon.Stdout, w.daemon.Stderr = w.log, w.log
	if err := w.daemon.Start(); err != nil {
		w.t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := http.Get("http://" + w.addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("%s: the daemon did not answer /healthz within a minute:\n%s", cmd, w.log.String())
		}
		time.Sleep(50 * time.Millisecond) // waiting for a separate process to listen
	}
	w.out = w.log.String()
}

func (w *walk) stopDaemon() {
	if w.daemon == nil {
		return
	}
	_ = w.daemon.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = w.daemon.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = w.daemon.Process.Kill()
		<-done
	}
	if w.t.Failed() {
		w.t.Logf("daemon log:\n%s", w.log.String())
	}
	w.daemon = nil
}

var demoURL = regexp.MustCompile(`demo app at (http://\S+)`)

// openDemo opens the demo URL that serve printed in headless Chromium and
// waits until the tab advertises nav.goto. It reports false when there is
// no Chromium.
func (w *walk) openDemo() bool {
	w.t.Helper()
	const chromium = "/usr/bin/chromium"
	if _, err := os.Stat(chromium); err != nil {
		w.t.Logf("no %s: the browser steps are skipped (apt-get install chromium)", chromium)
		return false
	}
	m := demoURL.FindStringSubmatch(w.log.String())
	if m == nil {
		w.t.Fatalf("the README says to open the demo app, but serve printed no demo URL:\n%s", w.log.String())
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromium), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(w.t.TempDir()),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.Flag("disable-background-networking", true))
	tab, cancelTab := chromedp.NewContext(actx)
	w.t.Cleanup(func() { cancelTab(); cancelAlloc() })
	// The first Run allocates the tab and must get tab itself: a derived
	// context's cancel would close it.
	if _, err := chromedp.Run(tab, chromedp.Navigate(m[1])); err != nil {
		w.t.Fatalf("open %s: %v", m[1], err)
	}
	ctx, cancel := context.WithTimeout(tab, time.Minute)
	defer cancel()
	id, err := chromedp.Run(ctx, chromedp.Poll[string](`document.body.dataset.status === "open" && document.body.dataset.session`,
		chromedp.WithPollingInterval(20*time.Millisecond)))
	if err != nil {
		w.t.Fatalf("open %s: %v", m[1], err)
	}
	token, err := os.ReadFile(filepath.Join(w.work, "home", ".local", "share", "switchboard", "admin.token"))
	if err != nil {
		w.t.Fatal(err)
	}
	cl := client.New("http://"+w.addr, strings.TrimSpace(string(token)), nil)
	for {
		tools, err := cl.SessionTools(ctx, id)
		if slices.ContainsFunc(tools, func(x switchboard.Tool) bool { return x.Name == "nav.goto" }) {
			break
		}
		if ctx.Err() != nil {
			w.t.Fatalf("the demo tab %s never advertised nav.goto (%v)", id, err)
		}
		time.Sleep(20 * time.Millisecond) // the tab advertises asynchronously
	}
	w.tab = tab
	return true
}

// syncBuffer collects a child's output while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
)

// TestReplicaScaling is issue 16's benchmark, on real processes as
// deploy/cluster_test.go runs them: the switchboard binary built once,
// three `switchboard serve` replicas on one Postgres schema, round-robin
// reverse proxies in front. It measures
//
//   - api-tool throughput through the HTTP API with 1, 2 and 3 replicas
//     behind the proxy (an HTTP-bound mutate tool whose backend is an
//     in-process Go HTTP server answering at once), the sides interleaved;
//   - a browser action with the tab's stream on replica A, called through
//     A (same replica) and through B (cross replica: dispatch and result
//     travel the Postgres bus);
//   - the CPU each process used per call (each replica, this process: the
//     callers, the proxy and the backend; and every postgres process),
//     each side run alone, to name the bottleneck.
//
// Opt in: it runs only when -run names it, with SWITCHBOARD_TEST_POSTGRES:
//
//	SWITCHBOARD_TEST_POSTGRES=postgres://postgres@127.0.0.1:5432/test?sslmode=disable \
//	  go test -count=1 ./bench -run 'TestReplicaScaling$' -v -timeout 30m
//
// SWITCHBOARD_BENCH_N and SWITCHBOARD_BENCH_ROUNDS size it as for
// TestCallPath.
func TestReplicaScaling(t *testing.T) {
	if !strings.Contains(testRunFlag(), "TestReplicaScaling") {
		t.Skip("opt-in benchmark: name it in -run")
	}
	dsn := os.Getenv("SWITCHBOARD_TEST_POSTGRES")
	if dsn == "" {
		t.Skip("set SWITCHBOARD_TEST_POSTGRES=postgres://postgres@127.0.0.1:5432/test?sslmode=disable")
	}
	t.Logf("machine: %d CPUs, %s; %s", numCPU(), cpuModel(), loadAverage())
	durabilities := []string{"process", "power"}
	if d := os.Getenv("SWITCHBOARD_BENCH_DURABILITY"); d != "" {
		durabilities = strings.Split(d, ",")
	}
	for _, durability := range durabilities {
		t.Run(durability, func(t *testing.T) { replicaScaling(t, dsn, durability) })
	}
}

// replicaScaling is TestReplicaScaling at one durability, which every
// replica is started with (the store's default would otherwise keep the
// Postgres server's synchronous_commit, whatever the table says). With
// SWITCHBOARD_BENCH_BASELINE naming a switchboard binary built from an
// earlier commit, a second set of replicas runs it on a schema of its
// own, and the api sides are "before" and "after" side by side in one
// run, interleaved.
func replicaScaling(t *testing.T, dsn, durability string) {
	c := startReplicas(t, dsn, 3, switchboardBinary(t), durability)
	sets := []struct {
		name string
		c    *replicaSet
	}{{"", c}}
	if bin := os.Getenv("SWITCHBOARD_BENCH_BASELINE"); bin != "" {
		sets = []struct {
			name string
			c    *replicaSet
		}{{"before: ", startReplicas(t, dsn, 3, bin, durability)}, {"after: ", c}}
	}

	t.Run("api", func(t *testing.T) {
		backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"id":"t1","echo":`))
			w.Write(body)
			w.Write([]byte(`}`))
		}))
		defer backend.Close()
		ctx := context.Background()
		var sides []side
		var owners []*replicaSet // the replica set of each side
		for _, set := range sets {
			c := set.c
			if _, err := c.direct(0).RegisterTools(ctx, switchboard.SourceHost, []switchboard.Tool{{
				Name: "tasks.create", Description: "Create a task.", Class: switchboard.ClassMutate,
				InputSchema: brokerInputSchema,
				Binding: &switchboard.Binding{HTTP: &switchboard.HTTPBinding{
					Method: "POST", URL: backend.URL + "/api/projects/{projectId}/tasks",
				}},
			}}); err != nil {
				t.Fatal(err)
			}
			for i := range c.reps { // the catalog change reaches every replica over the bus
				waitFor(t, fmt.Sprintf("replica %d resolves tasks.create", i), func() error {
					_, err := c.direct(i).CallTool(ctx, "tasks.create", brokerInput, client.CallOptions{})
					return err
				})
			}
		}
		// Sides by replica count, before and after next to each other.
		for n := 1; n <= len(c.reps); n++ {
			for _, set := range sets {
				lb := set.c.proxy(t, n)
				sides = append(sides, side{fmt.Sprintf("%s%d replica(s) behind the proxy", set.name, n), func(ctx context.Context) error {
					resp, err := lb.CallTool(ctx, "tasks.create", brokerInput, client.CallOptions{})
					if err == nil && resp.Status != switchboard.StatusSucceeded {
						err = fmt.Errorf("status %s", resp.Status)
					}
					return err
				}})
				owners = append(owners, set.c)
			}
		}
		// SWITCHBOARD_BENCH_INFLIGHT (comma-separated) replaces the loads:
		// e.g. 21,64 puts one replica at a third of the load three share.
		loads := []int{64, 128}
		if v := os.Getenv("SWITCHBOARD_BENCH_INFLIGHT"); v != "" {
			loads = nil
			for _, f := range strings.Split(v, ",") {
				n, err := strconv.Atoi(strings.TrimSpace(f))
				if err != nil || n < 1 {
					t.Fatalf("SWITCHBOARD_BENCH_INFLIGHT=%q: want in-flight counts like 21,64", v)
				}
				loads = append(loads, n)
			}
		}
		for _, inflight := range loads {
			n, rounds := benchSize(3000, inflight)
			cmp := runComparison(t, n, inflight, rounds, min(n, 300), sides...)
			t.Logf("api at %d in flight, %d calls a side × %d rounds; %s", inflight, n, rounds, loadAverage())
			for s := range sides {
				t.Logf("replicas-row: %s | api tool (HTTP backend in process) | %s | %d | %s | %s | %s× |", durability, sides[s].name, inflight,
					fmtRate(cmp.perSec(s)), fmtMMM(cmp.p50(s), 0), fmtMMM(cmp.ratio(s, func(p, b sideRound) float64 { return p.perSec / b.perSec }), 2))
			}
			for s := range sides {
				t.Logf("replicas-cpu: %s api %s at %d in flight: %s", durability, sides[s].name, inflight, owners[s].cpuPerCall(t, n, inflight, sides[s]))
			}
		}
	})

	t.Run("browser", func(t *testing.T) {
		ctx := context.Background()
		a, b := c.direct(0), c.direct(1)
		cred, err := a.CreateSession(ctx, "bench")
		if err != nil {
			t.Fatal(err)
		}
		tab := a.Tab(cred) // the tab's stream and its results stay on replica A
		if _, err := tab.Advertise(ctx, []switchboard.Tool{navBench}); err != nil {
			t.Fatal(err)
		}
		sctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = tab.Serve(sctx, func(_ context.Context, req switchboard.BrowserActionRequest) (json.RawMessage, error) {
				var in struct{ Page string }
				_ = json.Unmarshal(req.Input, &in)
				return json.RawMessage(`{"page":"` + in.Page + `","url":"/demo/` + in.Page + `","title":"Media library"}`), nil
			})
		}()
		defer func() { cancel(); <-done }()
		call := func(cl *client.Client) func(context.Context) error {
			return func(ctx context.Context) error {
				resp, err := cl.CallTool(ctx, "nav.goto", bridgeInput, client.CallOptions{SessionID: cred.SessionID})
				if err == nil && resp.Status != switchboard.StatusSucceeded {
					err = fmt.Errorf("status %s", resp.Status)
				}
				return err
			}
		}
		for name, cl := range map[string]*client.Client{"A": a, "B": b} { // the tab attaches, and B hears of it, asynchronously
			waitFor(t, "a browser action through replica "+name, func() error { return call(cl)(ctx) })
		}
		sides := []side{
			{"same replica (call through A, tab on A)", call(a)},
			{"cross replica (call through B, tab on A)", call(b)},
		}
		for _, inflight := range []int{1, 64} {
			n, rounds := benchSize(map[int]int{1: 1000, 64: 3000}[inflight], inflight)
			cmp := runComparison(t, n, inflight, rounds, min(n, 300), sides...)
			t.Logf("browser at %d in flight, %d calls a side × %d rounds; %s", inflight, n, rounds, loadAverage())
			for s := range sides {
				t.Logf("replicas-browser-row: | %s | %d | %s | %s | %s× | %s | %s× |", sides[s].name, inflight,
					fmtMMM(cmp.p50(s), 0), fmtMMM(cmp.p99(s), 0), fmtMMM(cmp.p50Ratio(s), 2),
					fmtRate(cmp.perSec(s)), fmtMMM(cmp.slowdown(s), 2))
			}
			for s := range sides {
				t.Logf("replicas-cpu: browser %s at %d in flight: %s", sides[s].name, inflight, c.cpuPerCall(t, n, inflight, sides[s]))
			}
		}
	})
}

// replicaSet is n serve processes on one schema.
type replicaSet struct {
	dsn    string // the replicas' (schema, application_name)
	admin  string // the test database's, for pg_stat_* reads
	schema string
	reps   []*benchReplica
	hc     *http.Client
}

type benchReplica struct {
	addr string
	cmd  *exec.Cmd
	out  *lockedBuffer
}

// switchboardBinary builds cmd/switchboard into a directory removed when
// t ends.
func switchboardBinary(t *testing.T) string {
	bin := filepath.Join(t.TempDir(), "switchboard")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/switchboardhq/switchboard/cmd/switchboard").CombinedOutput()
	if err != nil {
		t.Fatalf("build switchboard: %v\n%s", err, out)
	}
	return bin
}

const replicaToken = "bench-replicas-admin-token"

// startReplicas runs n replicas of bin with durability on a fresh schema
// and waits until each is ready; they stop (SIGTERM) and the schema is
// dropped when t ends.
func startReplicas(t *testing.T, dsn string, n int, bin, durability string) *replicaSet {
	ctx := context.Background()
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	schema := "sbbench_replicas_" + hex.EncodeToString(b)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `CREATE SCHEMA `+pgx.Identifier{schema}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	q.Set("application_name", schema) // names the replicas' backends in pg_stat_activity
	u.RawQuery = q.Encode()
	c := &replicaSet{dsn: u.String(), admin: dsn, schema: schema, hc: bridgeHTTPClient()}
	t.Cleanup(func() {
		for i, r := range c.reps {
			if r.cmd == nil {
				continue
			}
			_ = r.cmd.Process.Signal(os.Interrupt)
			_ = r.cmd.Wait()
			if t.Failed() {
				t.Logf("replica %d log:\n%s", i, r.out.String())
			}
		}
		if conn, err := pgx.Connect(ctx, dsn); err == nil {
			_, _ = conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`)
			conn.Close(ctx)
		}
	})
	// Every port is drawn while the others are still held: a port closed
	// before the next is drawn can be drawn again, and two replicas given
	// one address leave one serving for both (seen: a replica that never
	// got a call while another took the traffic of two).
	lns := make([]net.Listener, n)
	for i := range lns {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[i] = ln
	}
	for _, ln := range lns {
		ln.Close()
	}
	for i := range n {
		r := &benchReplica{addr: lns[i].Addr().String(), out: &lockedBuffer{}}
		r.cmd = exec.Command(bin, "serve", "--addr", r.addr, "--data", t.TempDir(), "--token", replicaToken,
			"--store", c.dsn, "--durability", durability, "--log-level", "warn")
		r.cmd.Stdout, r.cmd.Stderr = r.out, r.out
		if err := r.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		c.reps = append(c.reps, r)
	}
	for i, r := range c.reps {
		waitFor(t, fmt.Sprintf("replica %d ready", i), func() error {
			resp, err := http.Get("http://" + r.addr + "/readyz")
			if err != nil {
				return err
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("readyz %d", resp.StatusCode)
			}
			return nil
		})
	}
	return c
}

// direct is an admin client of replica i alone.
func (c *replicaSet) direct(i int) *client.Client {
	return client.New("http://"+c.reps[i].addr, replicaToken, &client.Options{HTTPClient: c.hc})
}

// proxy is an admin client through a round-robin reverse proxy over the
// first n replicas (the load balancer of deploy/cluster_test.go).
func (c *replicaSet) proxy(t *testing.T, n int) *client.Client {
	var next atomic.Uint64
	tr := bridgeHTTPClient().Transport
	srv := httptest.NewServer(&httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(&url.URL{Scheme: "http", Host: c.reps[int(next.Add(1)-1)%n].addr})
		},
		Transport:     tr,
		FlushInterval: -1,
	})
	t.Cleanup(srv.Close)
	return client.New(srv.URL, replicaToken, &client.Options{HTTPClient: c.hc})
}

// cpuPerCall runs s alone for n calls and reports what each process used
// per call: CPU of every replica, of this process (callers, proxy,
// backend), of the replicas' Postgres backends (store pools and bus
// listeners, found by application_name), and of every other postgres
// process (the server's own and other clients': the machine is shared);
// and the machine's idle share while it ran.
func (c *replicaSet) cpuPerCall(t *testing.T, n, inflight int, s side) string {
	ctx := context.Background()
	db, err := pgx.Connect(ctx, c.admin)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(ctx)
	pids := map[string][]int{"bench process": {os.Getpid()}}
	names := []string{}
	for i, r := range c.reps {
		name := fmt.Sprintf("replica %d", i)
		pids[name] = []int{r.cmd.Process.Pid}
		names = append(names, name)
	}
	// The replicas' backends, as they are now (pools keep their
	// connections), and the rest of the postgres processes.
	ours := map[int]bool{}
	rows, err := db.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE split_part(application_name, ' ', 1) = $1`, c.schema)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var pid int
		if err := rows.Scan(&pid); err != nil {
			t.Fatal(err)
		}
		ours[pid] = true
		pids["postgres: the replicas' backends"] = append(pids["postgres: the replicas' backends"], pid)
	}
	rows.Close()
	for _, pid := range postgresPIDs() {
		if !ours[pid] {
			pids["postgres: other processes"] = append(pids["postgres: other processes"], pid)
		}
	}
	names = append(names, "bench process", "postgres: the replicas' backends", "postgres: other processes")
	before := map[int]time.Duration{}
	for _, ps := range pids {
		for _, pid := range ps {
			before[pid] = cpuOf([]int{pid})
		}
	}
	commits0 := c.commits(t)
	var vol0, invol0 int64
	for _, r := range c.reps {
		v, i := ctxSwitches(r.cmd.Process.Pid)
		vol0, invol0 = vol0+v, invol0+i
	}
	busy0, idle0 := machineTicks()
	waits := c.sampleWaits(t)
	stopPerf := c.perfRecord(t, fmt.Sprintf("%s-%d", s.name, inflight))
	_, wall, err := runBlock(ctx, n, inflight, s.call)
	stopPerf()
	if err != nil {
		t.Fatalf("%s: %v", s.name, err)
	}
	busy1, idle1 := machineTicks()
	topWaits := waits()
	commits1 := c.commits(t)
	var vol1, invol1 int64
	for _, r := range c.reps {
		v, i := ctxSwitches(r.cmd.Process.Pid)
		vol1, invol1 = vol1+v, invol1+i
	}
	// A process that exited meanwhile (another client's backend) counts
	// nothing, rather than minus what it had used before.
	used := map[string]time.Duration{}
	for name, ps := range pids {
		for _, pid := range ps {
			if d := cpuOf([]int{pid}) - before[pid]; d > 0 {
				used[name] += d
			}
		}
	}
	var b strings.Builder
	var total time.Duration
	fmt.Fprintf(&b, "%.0f calls/s alone; CPU µs a call:", float64(n)/wall.Seconds())
	for _, name := range names {
		d := used[name]
		if name != "postgres: other processes" {
			total += d
		}
		fmt.Fprintf(&b, " %s %.0f (%.0f%% of a core);", name, us(d)/float64(n), 100*d.Seconds()/wall.Seconds())
	}
	fmt.Fprintf(&b, " ours in all %.0f (%.2f cores); machine idle %.0f%%; busy backends' waits: %s", us(total)/float64(n), total.Seconds()/wall.Seconds(),
		100*float64(idle1-idle0)/float64(max(1, busy1-busy0+idle1-idle0)), topWaits)
	var txs, writes float64
	for i := range commits1 {
		txs += commits1[i].txs - commits0[i].txs
		writes += commits1[i].writes - commits0[i].writes
	}
	fmt.Fprintf(&b, "; store commits a call %.2f, writes a commit %.2f", txs/float64(n), writes/max(txs, 1))
	fmt.Fprintf(&b, "; the replicas' context switches a call: %.1f voluntary, %.2f preempted", float64(vol1-vol0)/float64(n), float64(invol1-invol0)/float64(n))
	return b.String()
}

// perfRecord samples the replicas' CPU with perf(1) while a block runs,
// when SWITCHBOARD_BENCH_PERF names a directory: `perf report -i` on the
// files shows where a replica's CPU a call goes with 1, 2 or 3 of them.
func (c *replicaSet) perfRecord(t *testing.T, name string) func() {
	dir := os.Getenv("SWITCHBOARD_BENCH_PERF")
	if dir == "" {
		return func() {}
	}
	var pids []string
	for _, r := range c.reps {
		pids = append(pids, strconv.Itoa(r.cmd.Process.Pid))
	}
	file := filepath.Join(dir, strings.NewReplacer(" ", "_", "(", "", ")", "", ",", "").Replace(name)+".data")
	cmd := exec.Command("perf", "record", "-F", "999", "-g", "-o", file, "-p", strings.Join(pids, ","))
	if err := cmd.Start(); err != nil {
		t.Fatalf("perf record: %v", err)
	}
	time.Sleep(300 * time.Millisecond) // attached before the block starts
	return func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	}
}

// commitCount is a replica's store commits so far and the writes they held
// (switchboard_store_commit_batch_size's count and sum).
type commitCount struct{ txs, writes float64 }

// commits reads every replica's commit counts from its /metrics: with more
// replicas each gathers fewer writes into a commit, which is where the
// CPU a call grows if group commit is the cause.
func (c *replicaSet) commits(t *testing.T) []commitCount {
	out := make([]commitCount, len(c.reps))
	for i, r := range c.reps {
		req, _ := http.NewRequest("GET", "http://"+r.addr+"/metrics", nil)
		req.Header.Set("Authorization", "Bearer "+replicaToken)
		resp, err := c.hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("metrics of replica %d: %d %v", i, resp.StatusCode, err)
		}
		for line := range strings.Lines(string(body)) {
			name, val, ok := strings.Cut(strings.TrimSpace(line), " ")
			if !ok {
				continue
			}
			v, err := strconv.ParseFloat(val, 64)
			if err != nil {
				continue
			}
			switch name {
			case "switchboard_store_commit_batch_size_count":
				out[i].txs = v
			case "switchboard_store_commit_batch_size_sum":
				out[i].writes = v
			}
		}
	}
	return out
}

// waitSampleInterval is how often sampleWaits reads pg_stat_activity.
const waitSampleInterval = 500 * time.Millisecond

// sampleWaits reads the wait events of the replicas' active backends every
// waitSampleInterval until the returned function is called, which stops
// it and names the commonest, each as a share of the busy backend samples
// ("CPU" for an active backend waiting on nothing).
func (c *replicaSet) sampleWaits(t *testing.T) func() string {
	ctx, cancel := context.WithCancel(context.Background())
	db, err := pgx.Connect(ctx, c.admin)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	total := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(waitSampleInterval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			rows, err := db.Query(ctx, `SELECT coalesce(wait_event_type || '/' || wait_event, 'CPU') FROM pg_stat_activity
				WHERE split_part(application_name, ' ', 1) = $1 AND state = 'active'`, c.schema)
			if err != nil {
				return
			}
			for rows.Next() {
				var w string
				if rows.Scan(&w) == nil {
					counts[w]++
					total++
				}
			}
			rows.Close()
		}
	}()
	return func() string {
		cancel()
		<-done
		db.Close(context.Background())
		type kv struct {
			k string
			n int
		}
		var all []kv
		for k, n := range counts {
			all = append(all, kv{k, n})
		}
		sort.Slice(all, func(i, j int) bool { return all[i].n > all[j].n || all[i].n == all[j].n && all[i].k < all[j].k })
		var parts []string
		for i, x := range all {
			if i == 4 {
				break
			}
			parts = append(parts, fmt.Sprintf("%s %.0f%%", x.k, 100*float64(x.n)/float64(total)))
		}
		return fmt.Sprintf("%d samples, %s", total, strings.Join(parts, ", "))
	}
}

// machineTicks is the machine's busy and idle CPU ticks so far (/proc/stat).
func machineTicks() (busy, idle int64) {
	b, _ := os.ReadFile("/proc/stat")
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	for i, v := range f[1:] {
		x, _ := strconv.ParseInt(v, 10, 64)
		if i == 3 || i == 4 { // idle, iowait
			idle += x
		} else if i < 8 { // user nice system irq softirq steal
			busy += x
		}
	}
	return busy, idle
}

// postgresPIDs lists the processes named postgres (the server and its
// backends, other clients' included: the machine is shared).
func postgresPIDs() []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if comm, err := os.ReadFile(filepath.Join("/proc", e.Name(), "comm")); err == nil && strings.TrimSpace(string(comm)) == "postgres" {
			pids = append(pids, pid)
		}
	}
	return pids
}

// cpuOf is the user+system CPU time the processes used so far
// (/proc/pid/stat, clock ticks of 10 ms); an exited one counts 0.
func cpuOf(pids []int) time.Duration {
	var ticks int64
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:]) // fields from the 3rd on
		if len(f) < 13 {
			continue
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		ticks += u + st
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}

// ctxSwitches sums the voluntary and involuntary (preempted) context
// switches of every thread of process pid: preemptions grow when more
// processes are runnable than there are cores.
func ctxSwitches(pid int) (vol, invol int64) {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", pid))
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for line := range strings.Lines(string(b)) {
			k, v, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			switch k {
			case "voluntary_ctxt_switches":
				vol += n
			case "nonvoluntary_ctxt_switches":
				invol += n
			}
		}
	}
	return vol, invol
}

func numCPU() int {
	b, _ := os.ReadFile("/proc/cpuinfo")
	return max(1, strings.Count(string(b), "processor\t:"))
}

func cpuModel() string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "model name") {
			if _, v, ok := strings.Cut(l, ":"); ok {
				return strings.TrimSpace(v)
			}
		}
	}
	return "unknown CPU"
}

// waitFor retries f until it succeeds, for at most a minute.
func waitFor(t *testing.T, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// lockedBuffer collects a process's output.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

package deploy_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboardhq/switchboard"

	"github.com/switchboardhq/switchboard/client"
)

// The compose topology (deploy/compose.yaml) as plain processes: the real
// switchboard binary, built once, run as 2–3 `serve` replicas on the real
// Postgres (a fresh schema per test), with a round-robin reverse proxy in
// front as the load balancer.

const dsnEnv = "SWITCHBOARD_TEST_POSTGRES"

// bin is the switchboard binary TestMain built ("" without Postgres).
var bin string

func TestMain(m *testing.M) {
	flag.Parse()
	if os.Getenv(dsnEnv) == "" || testing.Short() {
		os.Exit(m.Run()) // every test skips, saying why
	}
	dir, err := os.MkdirTemp("", "sb-replicas-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "switchboard")
	build := exec.Command("go", "build", "-o", bin, "github.com/switchboardhq/switchboard/cmd/switchboard")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build switchboard:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

const token = "replica-test-admin-token"

// Short heartbeats so a killed replica is taken over within seconds; the
// timeout leaves room for a loaded CI machine, where a live replica's
// beat may come late.
const (
	heartbeat = "200ms"
	timeout   = "3s"
)

// replica is one serve process.
type replica struct {
	addr string
	data string
	cmd  *exec.Cmd
	out  *syncBuffer
	up   atomic.Bool // the load balancer sends it traffic
}

// cluster is n replicas on one schema behind a round-robin proxy.
type cluster struct {
	t     *testing.T
	store string
	args  []string // more serve flags for every replica
	reps  []*replica
	proxy *httptest.Server
	next  atomic.Uint64
}

// newCluster starts n replicas and the proxy, or skips without Postgres.
// args are more serve flags for every replica.
func newCluster(t *testing.T, n int, args ...string) *cluster {
	t.Helper()
	dsn := os.Getenv(dsnEnv)
	if dsn == "" || bin == "" {
		t.Skipf("multi-replica tests run real `switchboard serve` processes on Postgres; set %s=postgres://postgres@127.0.0.1:5432/test?sslmode=disable", dsnEnv)
	}
	c := &cluster{t: t, store: schemaDSN(t, dsn), args: args}
	for range n {
		c.reps = append(c.reps, &replica{data: t.TempDir(), out: &syncBuffer{}})
	}
	for i := range c.reps {
		c.start(i)
	}
	c.proxy = httptest.NewServer(&httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(&url.URL{Scheme: "http", Host: c.pick().addr})
		},
		FlushInterval: -1, // streams (SSE) pass through at once
	})
	t.Cleanup(func() {
		c.proxy.Close()
		for _, r := range c.reps {
			c.stop(r)
		}
		if t.Failed() {
			for i, r := range c.reps {
				t.Logf("replica %d (%s) log:\n%s", i, r.addr, r.out.String())
			}
		}
	})
	return c
}

// pick is the next live replica, round robin: a load balancer whose
// health check has dropped the dead ones.
func (c *cluster) pick() *replica {
	for range len(c.reps) {
		r := c.reps[int(c.next.Add(1)-1)%len(c.reps)]
		if r.up.Load() {
			return r
		}
	}
	return c.reps[0]
}

// start runs replica i and waits until it is ready.
func (c *cluster) start(i int) {
	t := c.t
	r := c.reps[i]
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r.addr = ln.Addr().String()
	ln.Close()
	args := append([]string{"serve", "--addr", r.addr, "--data", r.data, "--token", token, "--store", c.store,
		"--log-level", "warn", "--replica-heartbeat", heartbeat, "--replica-timeout", timeout}, c.args...)
	r.cmd = exec.Command(bin, args...)
	r.cmd.Stdout, r.cmd.Stderr = r.out, r.out
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get("http://" + r.addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica %d did not become ready in 60 s:\n%s", i, r.out.String())
		}
	}
	r.up.Store(true)
}

// kill SIGKILLs replica i: no shutdown path runs.
func (c *cluster) kill(i int) {
	r := c.reps[i]
	r.up.Store(false)
	_ = r.cmd.Process.Kill()
	_ = r.cmd.Wait()
	r.cmd = nil
}

// stop ends a replica gracefully (SIGTERM), as the test's cleanup.
func (c *cluster) stop(r *replica) {
	if r.cmd == nil {
		return
	}
	r.up.Store(false)
	_ = r.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = r.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = r.cmd.Process.Kill()
		<-done
	}
	r.cmd = nil
}

// register registers tools through the load balancer and waits until
// every replica's catalog has the one named seen (at once over the bus;
// within registry.DefaultRefreshInterval through the store otherwise).
func (c *cluster) register(tools []switchboard.Tool, seen string) {
	c.t.Helper()
	ctx := context.Background()
	if _, err := c.lb().RegisterTools(ctx, switchboard.SourceHost, tools); err != nil {
		c.t.Fatal(err)
	}
	for i := range c.reps {
		eventually(c.t, 30*time.Second, fmt.Sprintf("replica %d sees the tools", i), func() (bool, string) {
			_, err := c.at(i).GetTool(ctx, seen)
			return err == nil, fmt.Sprint(err)
		})
	}
}

// lb is an admin client through the load balancer.
func (c *cluster) lb() *client.Client { return client.New(c.proxy.URL, token, nil) }

// at is an admin client of replica i alone.
func (c *cluster) at(i int) *client.Client { return client.New("http://"+c.reps[i].addr, token, nil) }

// schemaDSN is dsn confined to a fresh schema, dropped when the test ends.
func schemaDSN(t *testing.T, dsn string) string {
	ctx := context.Background()
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	schema := "sbreplicas_" + hex.EncodeToString(b)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE SCHEMA `+pgx.Identifier{schema}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if c, err := pgx.Connect(ctx, dsn); err == nil {
			_, _ = c.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`)
			c.Close(ctx)
		}
	})
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	// Every connection of the test's replicas says which test it is, so a
	// test can end them all (pg_terminate_backend) without touching
	// anyone else's.
	q.Set("application_name", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// syncBuffer collects a process's output.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
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

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, within time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s; last: %s", what, within, state)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
